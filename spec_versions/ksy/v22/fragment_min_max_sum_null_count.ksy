meta:
  id: fragment_min_max_sum_null_count
  title: "Fragment min/max/sum/null count"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Fragment min/max/sum/null count (fragment.md), TileDB format version 22. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/fragment.md"
params:
  - id: field_num
    type: u4
    doc: "entries of the index space"
  - id: field_types
    type: u1[]
    doc: "Datatype of each field of the index space, in index order"
seq:
  - id: fields
    repeat: expr
    type: "fields(_root.field_types[_index])"
    repeat-expr: "_root.field_num"
    doc: "one entry per index of the index space"
types:
  fields:
    params:
      - id: datatype
        type: u1
        doc: "Datatype of this entry's field"
    seq:
      - id: min_size
        type: u8
        doc: "bytes of min"
      - id: min
        size: min_size
        doc: "fragment minimum (empty if none)"
      - id: max_size
        type: u8
        doc: "bytes of max"
      - id: max
        size: max_size
        doc: "fragment maximum (empty if none)"
      - id: sum
        type:
          switch-on: datatype
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
        doc: "fragment sum (int64, uint64 or f64 as the tile sums)"
      - id: null_count
        type: u8
        doc: "fragment null count"
