meta:
  id: array_schema
  title: "Array schema (1.x)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Array schema (1.x) (prev1.md §3.2), TileDB 1.0 (before format version 1). The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
seq:
  - id: version
    type: s4
    repeat: expr
    repeat-expr: 3
    doc: "library version that wrote the schema (1.1 still writes 1,0,0)"
  - id: array_type
    type: u1
    enum: array_type
    valid:
      in-enum: true
    doc: "0 dense, 1 sparse"
  - id: tile_order
    type: u1
    enum: legacy_layout
    valid:
      in-enum: true
    doc: "order of the space tiles"
  - id: cell_order
    type: u1
    enum: legacy_layout
    valid:
      in-enum: true
    doc: "order of the cells in a tile"
  - id: capacity
    type: u8
    doc: "cells per sparse data tile"
  - id: coords_compressor
    type: u1
    enum: legacy_compressor
    valid:
      in-enum: true
    doc: "compressor of the coordinate tiles"
  - id: coords_compression_level
    type: s4
    doc: "its level"
  - id: offsets_compressor
    type: u1
    enum: legacy_compressor
    valid:
      in-enum: true
    doc: "compressor of every var attribute's offsets tiles"
  - id: offsets_compression_level
    type: s4
    doc: "its level"
  - id: domain_type
    type: u1
    enum: legacy_datatype
    valid:
      in-enum: true
    doc: "datatype of every dimension"
  - id: dim_num
    type: u4
    doc: "number of dimensions"
  - id: dimensions
    repeat: expr
    repeat-expr: dim_num
    type: dimension1x
    doc: "the dimensions"
  - id: attribute_num
    type: u4
    doc: "number of attributes"
  - id: attributes
    repeat: expr
    repeat-expr: attribute_num
    type: attribute1x
    doc: "the attributes"
types:
  attribute1x:
    seq:
      - id: name_len
        type: u4
        doc: "bytes of name"
      - id: name
        type: str
        encoding: UTF-8
        size: name_len
        doc: "attribute name"
      - id: type
        type: u1
        enum: legacy_datatype
        valid:
          in-enum: true
        doc: "datatype of the values"
      - id: compressor
        type: u1
        enum: legacy_compressor
        valid:
          in-enum: true
        doc: "compressor of the attribute's tiles"
      - id: compression_level
        type: s4
        doc: "its level (-1: the codec's default)"
      - id: cell_val_num
        type: u4
        doc: "values per cell; 4294967295 = var-sized"
  dimension1x:
    seq:
      - id: name_len
        type: u4
        doc: "bytes of name"
      - id: name
        type: str
        encoding: UTF-8
        size: name_len
        doc: "dimension name"
      - id: domain
        size: "2 * ((_parent.domain_type.to_i == 4 or _parent.domain_type.to_i == 5 or _parent.domain_type.to_i == 6) ? 1 : (_parent.domain_type.to_i == 7 or _parent.domain_type.to_i == 8) ? 2 : (_parent.domain_type.to_i == 0 or _parent.domain_type.to_i == 2 or _parent.domain_type.to_i == 9) ? 4 : 8)"
        doc: "lower and upper bound, in the domain type"
      - id: tile_extent
        size: "(_parent.domain_type.to_i == 4 or _parent.domain_type.to_i == 5 or _parent.domain_type.to_i == 6) ? 1 : (_parent.domain_type.to_i == 7 or _parent.domain_type.to_i == 8) ? 2 : (_parent.domain_type.to_i == 0 or _parent.domain_type.to_i == 2 or _parent.domain_type.to_i == 9) ? 4 : 8"
        doc: "space tile extent in the domain type (absent if null)"
enums:
  array_type:
    0: dense
    1: sparse
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
  legacy_layout:
    0: row_major
    1: col_major
    2: global_order
    3: unordered
