meta:
  id: fragment_metadata
  title: "Fragment metadata (1.x)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Fragment metadata (1.x) (prev1.md §3.3), TileDB 1.3 (before format version 1). The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
params:
  - id: attribute_num
    type: u4
    doc: "attributes of the array schema"
  - id: dim_num
    type: u4
    doc: "dimensions of the array schema"
  - id: coords_type
    type: u1
    doc: "the coordinates' datatype (1.x domain_type, 0.x the last of types)"
seq:
  - id: version
    type: s4
    repeat: expr
    repeat-expr: 3
    doc: "library version (1.2+)"
  - id: non_empty_domain_size
    type: u8
    doc: "0 or 2·dim_num values"
  - id: non_empty_domain
    size: non_empty_domain_size
    doc: "lo/hi pairs in the coordinates type (the write's subarray)"
  - id: mbrs
    type: mbrs
    doc: "MBRs (sparse only)"
  - id: bounding_coords
    type: bounding_coords
    doc: "bounding coordinates"
  - id: tile_offsets
    repeat: expr
    type: tile_offsets
    repeat-expr: "_root.attribute_num + 1"
    doc: "per attribute, then coordinates: where each tile starts in its file (0.x: compressed fields only)"
  - id: tile_var_offsets
    repeat: expr
    type: tile_var_offsets
    repeat-expr: "_root.attribute_num"
    doc: "per attribute: where each var tile starts in <attr>_var.tdb"
  - id: tile_var_sizes
    repeat: expr
    type: tile_var_sizes
    repeat-expr: "_root.attribute_num"
    doc: "per attribute: uncompressed bytes of each var tile"
  - id: last_tile_cell_num
    type: u8
    doc: "cells in the last tile"
  - id: file_sizes
    type: u8
    repeat: expr
    repeat-expr: "_root.attribute_num + 1"
    doc: "bytes of each data file (1.2+)"
  - id: file_var_sizes
    type: u8
    repeat: expr
    repeat-expr: "_root.attribute_num"
    doc: "bytes of each var data file (1.2+)"
types:
  bounding_coords:
    seq:
      - id: num
        type: u8
        doc: "number of boxes"
      - id: data
        repeat: expr
        type: "typed_value(_root.coords_type)"
        repeat-expr: "num * 2 * _root.dim_num"
        doc: "first and last coordinates of each tile"
  mbrs:
    seq:
      - id: num
        type: u8
        doc: "number of boxes"
      - id: data
        repeat: expr
        type: "typed_value(_root.coords_type)"
        repeat-expr: "num * 2 * _root.dim_num"
        doc: "lo/hi per dimension of each sparse tile"
  tile_offsets:
    seq:
      - id: num
        type: u8
        doc: "number of values"
      - id: data
        type: u8
        repeat: expr
        repeat-expr: num
        doc: "file offset of each tile"
  tile_var_offsets:
    seq:
      - id: num
        type: u8
        doc: "number of values"
      - id: data
        type: u8
        repeat: expr
        repeat-expr: num
        doc: "file offset of each var tile"
  tile_var_sizes:
    seq:
      - id: num
        type: u8
        doc: "number of values"
      - id: data
        type: u8
        repeat: expr
        repeat-expr: num
        doc: "uncompressed bytes of each var tile"
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
