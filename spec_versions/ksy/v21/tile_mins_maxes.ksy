meta:
  id: tile_mins_maxes
  title: "Tile mins/maxes (also v23 tile global-order bounds)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Tile mins/maxes (also v23 tile global-order bounds) (fragment.md), TileDB format version 21. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/fragment.md"
params:
  - id: field_type
    type: u1
    doc: "Datatype of the field this tile belongs to"
  - id: field_var
    type: bool
    doc: "whether the field is var-sized"
seq:
  - id: fixed_size
    type: u8
    doc: "bytes of fixed (not a count)"
  - id: var_size
    type: u8
    doc: "bytes of var"
  - id: fixed
    size: fixed_size
    type: run_tile_min_max_fixed
    doc: "one value per tile (var fields: u64 offsets into var)"
  - id: var
    size: var_size
    doc: "the var-sized values, concatenated"
types:
  field_value:
    doc: "one value, typed by the field of the tile (the root's params)"
    seq:
      - id: value
        type:
          switch-on: "_root.field_var ? 255 : _root.field_type"
          cases:
            "0": s4
            "1": s8
            "2": f4
            "3": f8
            "4": u1
            "5": s1
            "6": u1
            "7": s2
            "8": u2
            "9": u4
            "10": u8
            "11": u1
            "12": u1
            "13": u2
            "14": u4
            "15": u2
            "16": u4
            "17": u1
            "18": s8
            "19": s8
            "20": s8
            "21": s8
            "22": s8
            "23": s8
            "24": s8
            "25": s8
            "26": s8
            "27": s8
            "28": s8
            "29": s8
            "30": s8
            "31": s8
            "32": s8
            "33": s8
            "34": s8
            "35": s8
            "36": s8
            "37": s8
            "38": s8
            "39": s8
            "40": u1
            "41": u1
            "42": u1
            "43": u1
            "255": u8
  run_tile_min_max_fixed:
    doc: "the fixed of tile_min_max, to the end of its bound"
    seq:
      - id: items
        type: field_value
        repeat: eos
