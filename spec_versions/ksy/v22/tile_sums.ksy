meta:
  id: tile_sums
  title: "Tile sums"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Tile sums (fragment.md), TileDB format version 22. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/fragment.md"
params:
  - id: field_type
    type: u1
    doc: "Datatype of the field this tile belongs to"
  - id: field_var
    type: bool
    doc: "whether the field is var-sized"
seq:
  - id: num
    type: u8
    doc: "number of values"
  - id: data
    repeat: expr
    repeat-expr: num
    type: field_sum
    doc: "one 8-byte sum per tile"
types:
  field_sum:
    doc: "one value, typed by the field of the tile (the root's params)"
    seq:
      - id: value
        type:
          switch-on: "_root.field_var ? 255 : _root.field_type"
          cases:
            "0": s8
            "1": s8
            "2": f8
            "3": f8
            "4": u8
            "5": s8
            "6": u8
            "7": s8
            "8": u8
            "9": u8
            "10": u8
            "11": u8
            "12": u8
            "13": u8
            "14": u8
            "15": u8
            "16": u8
            "17": u8
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
            "40": u8
            "41": u8
            "42": u8
            "43": u8
            "255": u8
