meta:
  id: array_schema
  title: "Array schema (0.x)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Array schema (0.x) (prev1.md §2.1), TileDB 0.x (before format version 1)."
seq:
  - id: array_name_len
    type: s4
    doc: "bytes of array_name"
  - id: array_name
    type: str
    encoding: UTF-8
    size: array_name_len
    doc: "absolute path of the array folder when it was created"
  - id: dense
    type: u1
    doc: "1 dense, 0 sparse"
  - id: tile_order
    type: s1
    doc: "0 row-major, 1 column-major"
  - id: cell_order
    type: s1
    doc: "0 row-major, 1 column-major"
  - id: capacity
    type: s8
    doc: "cells per sparse data tile"
  - id: attribute_num
    type: s4
    doc: "N attributes"
  - id: attributes
    repeat: expr
    repeat-expr: attribute_num
    type: attributes
    doc: "attribute names"
  - id: dim_num
    type: s4
    doc: "D dimensions"
  - id: dimensions
    repeat: expr
    repeat-expr: dim_num
    type: attributes
    doc: "dimension names"
  - id: domain_size
    type: s4
    doc: "bytes of the domain: 2·D values"
  - id: domain
    size: domain_size
    doc: "lo/hi per dimension in the coordinates type"
  - id: tile_extents_size
    type: s4
    doc: "bytes of the tile extents: 0 (no space tiles) or D values"
  - id: tile_extents
    size: tile_extents_size
    doc: "space tile extent per dimension"
  - id: types
    repeat: expr
    repeat-expr: "(attribute_num + 1)"
    type: u1
    enum: legacy_datatype
    valid:
      in-enum: true
    doc: "per attribute, then the coordinates type"
  - id: cell_val_num
    repeat: expr
    repeat-expr: attribute_num
    type: s4
    doc: "values per cell; 2147483647 = var-sized"
  - id: compression
    repeat: expr
    repeat-expr: "(attribute_num + 1)"
    type: u1
    enum: legacy_compressor
    valid:
      in-enum: true
    doc: "per attribute, then the coordinates compressor"
types:
  attributes:
    seq:
      - id: name_len
        type: s4
        doc: "bytes of name"
      - id: name
        type: str
        encoding: UTF-8
        size: name_len
        doc: "the name"
enums:
  legacy_compressor:
    0: no_compression
    1: gzip
    2: zstd
    3: lz4
    4: blosc
    5: blosc_lz4
    6: blosc_lz4hc
    7: blosc_snappy
    8: blosc_zlib
    9: blosc_zstd
    10: rle
    11: bzip2
    12: double_delta
  legacy_datatype:
    0: int32
    1: int64
    2: float32
    3: float64
    4: char
    5: int8
    6: uint8
    7: int16
    8: uint16
    9: uint32
    10: uint64
