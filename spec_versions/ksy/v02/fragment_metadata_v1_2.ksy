meta:
  id: fragment_metadata_v1_2
  title: "Fragment metadata v1-2"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Fragment metadata v1-2 (fragment.md), TileDB format version 2. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
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
  - id: version
    type: u4
    valid:
      eq: 2
    doc: "1 or 2"
  - id: non_empty_domain_size
    type: u8
    doc: "bytes of the domain (0 = null)"
  - id: non_empty_domain
    size: non_empty_domain_size
    type: run_legacy_fragment_metadata_non_empty_domain
    doc: "lo, hi per dimension, of the domain type"
  - id: mbr_num
    type: u8
    doc: "number of MBRs (one per sparse tile)"
  - id: mbrs
    repeat: expr
    type: nd_rectangle
    repeat-expr: mbr_num
    doc: "[lo, hi] per dimension of each tile"
  - id: bounding_coords_num
    type: u8
    doc: "number of bounding coords"
  - id: bounding_coords
    repeat: expr
    repeat-expr: bounding_coords_num
    type: coords_pair
    doc: "first and last coordinate of each tile (ignored by TileDB)"
  - id: tile_offsets
    repeat: expr
    type: tile_offsets
    repeat-expr: "_root.num_attributes + 1"
    doc: "per attribute, then coords: offset of each tile in its file"
  - id: tile_var_offsets
    repeat: expr
    type: tile_offsets
    repeat-expr: "_root.num_attributes"
    doc: "per attribute: offset of each tile in its _var file"
  - id: tile_var_sizes
    repeat: expr
    type: tile_offsets
    repeat-expr: "_root.num_attributes"
    doc: "per attribute: unfiltered size of each var tile"
  - id: last_tile_cell_num
    type: u8
    doc: "cells in the last tile"
  - id: file_sizes
    type: u8
    repeat: expr
    repeat-expr: "_root.num_attributes + 1"
    doc: "per attribute, then coords"
  - id: file_var_sizes
    type: u8
    repeat: expr
    repeat-expr: "_root.num_attributes"
    doc: "per attribute"
types:
  coords_pair:
    doc: "first and last coordinate of a tile"
    seq:
      - id: first
        type: "typed_value(_root.dim_types[0])"
        repeat: expr
        repeat-expr: "_root.num_dims"
        doc: "the first coordinate"
      - id: last
        type: "typed_value(_root.dim_types[0])"
        repeat: expr
        repeat-expr: "_root.num_dims"
        doc: "the last coordinate"
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
  run_legacy_fragment_metadata_non_empty_domain:
    doc: "the non_empty_domain of legacy_fragment_metadata, to the end of its bound"
    seq:
      - id: items
        type: "typed_value(_root.dim_types[0])"
        repeat: eos
  tile_offsets:
    seq:
      - id: num
        type: u8
        doc: "number of values"
      - id: data
        type: u8
        repeat: expr
        repeat-expr: num
        doc: "one u64 per tile"
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
