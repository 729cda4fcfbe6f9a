meta:
  id: consolidated_fragment_metadata
  title: "Consolidated fragment metadata (.meta)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Consolidated fragment metadata (.meta) (consolidated_fragment_metadata_file.md), TileDB format version 5. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/consolidated_fragment_metadata_file.md"
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
  - id: fragment_num
    type: u4
    doc: "number of fragments (u32)"
  - id: fragments
    repeat: expr
    repeat-expr: fragment_num
    type: fragments
    doc: "one entry per fragment"
  - id: footers
    type: footer_payload
    repeat: expr
    repeat-expr: fragment_num
    doc: "each fragment's footer, following its own version (no footer length)"
types:
  footer_payload:
    seq:
      - id: version
        type: u4
        valid:
          eq: 5
        doc: "format version of the fragment (governs the footer and every section)"
      - id: dense
        type: u1
        doc: "1 = dense fragment"
      - id: null_non_empty_domain
        type: u1
        doc: "1 = no non-empty domain (the writer still writes zeros)"
      - id: non_empty_domain
        type: "nd_range(_root.dim_types[_index], _root.dim_var[_index])"
        repeat: expr
        repeat-expr: "_root.num_dims"
        doc: "[lo, hi] per dimension (v3-4: 2*D values of the domain type)"
      - id: sparse_tile_num
        type: u8
        doc: "number of sparse data tiles (R-tree leaves)"
      - id: last_tile_cell_num
        type: u8
        doc: "cells in the last tile"
      - id: file_sizes
        type: u8
        repeat: expr
        repeat-expr: "_root.num_attributes + 1 + _root.num_dims"
        doc: "size of each field's data file"
      - id: file_var_sizes
        type: u8
        repeat: expr
        repeat-expr: "_root.num_attributes + 1 + _root.num_dims"
        doc: "size of each field's _var file"
      - id: rtree_offset
        type: u8
        doc: "file offset of the R-tree tile"
      - id: tile_offsets_offsets
        type: u8
        repeat: expr
        repeat-expr: "_root.num_attributes + 1 + _root.num_dims"
        doc: "file offset of each field's tile offsets tile"
      - id: tile_var_offsets_offsets
        type: u8
        repeat: expr
        repeat-expr: "_root.num_attributes + 1 + _root.num_dims"
        doc: "file offset of each field's var offsets tile"
      - id: tile_var_sizes_offsets
        type: u8
        repeat: expr
        repeat-expr: "_root.num_attributes + 1 + _root.num_dims"
        doc: "file offset of each field's var sizes tile"
  fragments:
    seq:
      - id: name_len
        type: u8
        doc: "bytes of name"
      - id: name
        type: str
        encoding: UTF-8
        size: name_len
        doc: "fragment name (v9+ .meta) or absolute URI (before)"
      - id: footer_offset
        type: u8
        doc: "offset of its footer within this payload"
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
