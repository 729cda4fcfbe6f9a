meta:
  id: r_tree
  title: R-tree
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "R-tree (fragment.md), TileDB format version 17. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/fragment.md"
params:
  - id: num_attributes
    type: u4
    doc: "attributes of the array schema"
  - id: num_dims
    type: u4
    doc: "dimensions of the array schema"
  - id: dim_types
    type: u1[]
    doc: "Datatype of each dimension"
  - id: dim_var
    type: bool[]
    doc: "whether each dimension is var-sized"
seq:
  - id: fanout
    type: u4
    doc: "maximum children per node (TileDB writes 10)"
  - id: level_num
    type: u4
    doc: "number of levels (0 for dense fragments)"
  - id: levels
    repeat: expr
    repeat-expr: level_num
    type: levels
    doc: "levels, root first, leaves last"
types:
  levels:
    seq:
      - id: mbr_num
        type: u8
        doc: "MBRs on this level"
      - id: mbrs
        type: nd_rectangle
        repeat: expr
        repeat-expr: mbr_num
        doc: "numpy structured array (fixed dims: one [lo, hi] field per dimension) or, with a var dimension, a list of NDRectangles"
  nd_range:
    doc: "the range of one dimension: [lo, hi] in its datatype, or (var-sized) sizes then bytes"
    params:
      - id: datatype
        type: u1
        doc: "the dimension's Datatype"
      - id: is_var
        type: bool
        doc: "the dimension is var-sized"
    seq:
      - id: range_size
        type: u8
        if: is_var
        doc: "bytes of start and end"
      - id: start_size
        type: u8
        if: is_var
        doc: "bytes of start"
      - id: start
        type: "typed_value(datatype)"
        if: "not is_var"
        doc: "low bound"
      - id: end
        type: "typed_value(datatype)"
        if: "not is_var"
        doc: "high bound"
      - id: start_var
        size: start_size
        if: is_var
        doc: "low bound (bytes)"
      - id: end_var
        size: "range_size - start_size"
        if: is_var
        doc: "high bound (bytes)"
  nd_rectangle:
    doc: "one range per dimension"
    seq:
      - id: ranges
        type: "nd_range(_root.dim_types[_index], _root.dim_var[_index])"
        repeat: expr
        repeat-expr: "_root.num_dims"
  typed_value:
    doc: "one value of a Datatype (datetimes and times as their int64)"
    params:
      - id: datatype
        type: u1
        doc: "Datatype enum value"
    seq:
      - id: value
        type:
          switch-on: datatype
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
