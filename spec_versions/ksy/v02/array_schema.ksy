meta:
  id: array_schema
  title: "Array schema"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Array schema (array_schema.md), TileDB format version 2. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/array_schema.md"
seq:
  - id: version
    type: u4
    valid:
      eq: 2
    doc: "format version of the schema (governs every field below)"
  - id: array_type
    type: u1
    enum: array_type
    valid:
      in-enum: true
    doc: "dense or sparse"
  - id: tile_order
    type: u1
    enum: layout
    valid:
      in-enum: true
    doc: "tile order (row- or col-major)"
  - id: cell_order
    type: u1
    enum: layout
    valid:
      in-enum: true
    doc: "cell order"
  - id: capacity
    type: u8
    doc: "cells per sparse data tile"
  - id: coords_filters
    type: filter_pipeline
    doc: "coordinate filters (default of every dimension)"
  - id: cell_var_offsets_filters
    type: filter_pipeline
    doc: "filters of var-sized offsets tiles"
  - id: domain
    type: domain
    doc: "the array's domain"
  - id: attribute_num
    type: u4
    doc: "number of attributes"
  - id: attributes
    repeat: expr
    repeat-expr: attribute_num
    type: attribute
    doc: "the attributes, in order"
types:
  attribute:
    seq:
      - id: name_len
        type: u4
        doc: "bytes of name"
      - id: name
        type: str
        encoding: UTF-8
        size: name_len
        doc: "attribute name"
      - id: datatype
        type: u1
        enum: datatype
        valid:
          in-enum: true
        doc: "datatype of the values"
      - id: cell_val_num
        type: u4
        doc: "values per cell, 2**32-1 = var-sized"
      - id: filters
        type: filter_pipeline
        doc: "filter pipeline of the attribute's tiles"
  compression_options:
    seq:
      - id: compressor
        type: u1
        enum: compressor
        valid:
          in-enum: true
        doc: "Compressor enum value (not the FilterType: dictionary is 7, delta 8)"
      - id: level
        type: s4
        doc: "compression level (ignored by LZ4, RLE and dictionary)"
  delta_options:
    seq:
      - id: compressor
        type: u1
        enum: compressor
        valid:
          in-enum: true
        doc: "Compressor enum value (not the FilterType: dictionary is 7, delta 8)"
      - id: level
        type: s4
        doc: "compression level (ignored by LZ4, RLE and dictionary)"
  dimension:
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
        type: "typed_value(_parent.domain_type.to_i)"
        repeat: expr
        repeat-expr: 2
        doc: "[low, high] (inclusive), [] for var-sized dims"
      - id: null_tile_extent
        type: u1
        doc: "1 = no tile extent follows"
      - id: tile_extent
        if: "null_tile_extent == 0"
        type: "typed_value(_parent.domain_type.to_i)"
        doc: "extent in the dimension's datatype, or None"
  domain:
    seq:
      - id: domain_type
        type: u1
        enum: datatype
        valid:
          in-enum: true
        doc: "datatype of every dimension (before v5 only)"
      - id: dim_num
        type: u4
        doc: "number of dimensions"
      - id: dimensions
        repeat: expr
        repeat-expr: dim_num
        type: dimension
        doc: "the dimensions, in order"
  double_delta_options:
    seq:
      - id: compressor
        type: u1
        enum: compressor
        valid:
          in-enum: true
        doc: "Compressor enum value (not the FilterType: dictionary is 7, delta 8)"
      - id: level
        type: s4
        doc: "compression level (ignored by LZ4, RLE and dictionary)"
  filter:
    seq:
      - id: type
        type: u1
        enum: filter_type
        valid:
          in-enum: true
        doc: "filter type"
      - id: options_size
        type: u4
        doc: "bytes of the options that follow"
      - id: options
        size: options_size
        type:
          switch-on: "type.to_i"
          cases:
            "0": no_options
            "1": compression_options
            "2": compression_options
            "3": compression_options
            "4": compression_options
            "5": compression_options
            "6": double_delta_options
            "7": window_options
            "8": no_options
            "9": no_options
            "10": window_options
            "11": no_options
            "12": no_options
            "13": no_options
            "14": compression_options
            "15": float_scale_options
            "16": no_options
            "17": no_options
            "18": webp_options
            "19": delta_options
        doc: "typed options of this filter type"
  filter_pipeline:
    doc: "Filter pipeline (filter_pipeline.md)"
    doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/filter_pipeline.md"
    seq:
      - id: max_chunk_size
        type: u4
        doc: "chunk size of the tile (0 = no chunking)"
      - id: num_filters
        type: u4
        doc: "number of filters"
      - id: filters
        repeat: expr
        repeat-expr: num_filters
        type: filter
        doc: "the filters, first applied first"
  float_scale_options:
    seq:
      - id: scale
        type: f8
        doc: "scale factor: stored = round((x - offset) / scale)"
      - id: offset
        type: f8
        doc: "offset subtracted before scaling"
      - id: byte_width
        type: u8
        doc: "bytes of each stored integer: 1, 2, 4 or 8"
  no_options:
    seq: []
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
  webp_options:
    seq:
      - id: quality
        type: f4
        doc: "lossy quality, 0 to 100"
      - id: input_format
        type: u1
        enum: webp_input_format
        valid:
          in-enum: true
        doc: "pixel layout of the input"
      - id: lossless
        type: u1
        doc: "1 = lossless encoding"
      - id: y_extent
        type: u2
        doc: "tile extent of the row dimension"
      - id: x_extent
        type: u2
        doc: "tile extent of the column dimension (in bytes: pixels times channels)"
      - id: padding
        size: "2"
        doc: "struct padding of TileDB's FilterConfig (sizeof is 12)"
  window_options:
    seq:
      - id: max_window_size
        type: u4
        doc: "largest window in bytes"
enums:
  array_type:
    0: dense
    1: sparse
  compressor:
    0: no_compression
    1: gzip
    2: zstd
    3: lz4
    4: rle
    5: bzip2
    6: double_delta
    7: dictionary_encoding
    8: delta
  datatype:
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
    11: string_ascii
    12: string_utf8
    13: string_utf16
    14: string_utf32
    15: string_ucs2
    16: string_ucs4
    17: any
    18: datetime_year
    19: datetime_month
    20: datetime_week
    21: datetime_day
    22: datetime_hr
    23: datetime_min
    24: datetime_sec
    25: datetime_ms
    26: datetime_us
    27: datetime_ns
    28: datetime_ps
    29: datetime_fs
    30: datetime_as
    31: time_hr
    32: time_min
    33: time_sec
    34: time_ms
    35: time_us
    36: time_ns
    37: time_ps
    38: time_fs
    39: time_as
    40: blob
    41: bool
    42: geom_wkb
    43: geom_wkt
  filter_type:
    0: none
    1: gzip
    2: zstd
    3: lz4
    4: rle
    5: bzip2
    6: double_delta
    7: bit_width_reduction
    8: bitshuffle
    9: byteshuffle
    10: positive_delta
    11: aes_256_gcm
    12: checksum_md5
    13: checksum_sha256
    14: dictionary
    15: scale_float
    16: xor
    17: deprecated_bitsort
    18: webp
    19: delta
  layout:
    0: row_major
    1: col_major
    2: global_order
    3: unordered
    4: hilbert
  webp_input_format:
    0: webp_none
    1: webp_rgb
    2: webp_bgr
    3: webp_rgba
    4: webp_bgra
