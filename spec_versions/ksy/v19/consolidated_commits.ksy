meta:
  id: consolidated_commits
  title: "Consolidated commits (.con)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Consolidated commits (.con) (consolidated_commits_file.md), TileDB format version 19."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/consolidated_commits_file.md"
seq:
  - id: entries
    repeat: eos
    type: entries
    doc: "one entry per consolidated commit"
types:
  comparison:
    seq:
      - id: op
        type: u1
        enum: query_condition_op
        valid:
          in-enum: true
        doc: "comparison operator (LT..NE, IN, NOT_IN, ALWAYS_TRUE, ALWAYS_FALSE)"
      - id: field_name_len
        type: u4
        doc: "bytes of field_name"
      - id: field_name
        type: str
        encoding: UTF-8
        size: field_name_len
        doc: "attribute or dimension compared"
      - id: value_size
        type: u8
        doc: "bytes of value"
      - id: value
        size: value_size
        doc: "raw value bytes; for IN/NOT_IN every member concatenated"
      - id: offsets_size
        type: u8
        if: "op == query_condition_op::in_ or op == query_condition_op::not_in"
        doc: "bytes of offsets (IN/NOT_IN only)"
      - id: offsets
        size: offsets_size
        if: "op == query_condition_op::in_ or op == query_condition_op::not_in"
        type: run_comparison_offsets
        doc: "byte offset of each set member in value (IN/NOT_IN only)"
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
  condition_node:
    seq:
      - id: node_type
        type: u1
        enum: node_type
        valid:
          in-enum: true
        doc: "0 expression, 1 value (comparison)"
      - id: expression
        if: "(node_type == node_type::expression)"
        type: expression
        doc: "combination of child nodes"
      - id: comparison
        if: "(node_type == node_type::value)"
        type: comparison
        doc: "a field compared with a value"
  delete_payload:
    seq:
      - id: condition
        type: condition_node
        doc: "the negated delete condition (cells to keep)"
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
      - id: reinterpret_datatype
        type: u1
        enum: datatype
        valid:
          in-enum: true
        doc: "datatype the input is reinterpreted as (ANY = none)"
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
  entries:
    seq:
      - id: uri
        type: str
        encoding: UTF-8
        terminator: 10
        doc: "commit file relative to the array, e.g. __commits/__t1_t2_uuid_v.wrt"
      - id: delete_size
        type: u8
        if: "uri.substring(uri.length - 4, uri.length) == '.del'"
        doc: "bytes of the embedded .del file (.del entries only)"
      - id: delete
        size: delete_size
        type: generic_tile
        if: "uri.substring(uri.length - 4, uri.length) == '.del'"
        doc: "the whole .del file, generic tile included (.del entries only)"
  expression:
    seq:
      - id: combination_op
        type: u1
        enum: combination_op
        valid:
          in-enum: true
        doc: "AND, OR or NOT"
      - id: num_children
        type: u8
        doc: "number of child nodes (one u64)"
      - id: children
        repeat: expr
        repeat-expr: num_children
        type: condition_node
        doc: "the operands"
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
  generic_tile:
    seq:
      - id: version
        type: u4
        doc: "format version of the library that wrote the tile"
      - id: persisted_size
        type: u8
        doc: "bytes of the filtered tile that follows the header"
      - id: tile_size
        type: u8
        doc: "bytes of the unfiltered tile"
      - id: datatype
        type: u1
        enum: datatype
        valid:
          in-enum: true
        doc: "datatype of the tile's cells (CHAR as TileDB writes them)"
      - id: cell_size
        type: u8
        doc: "bytes per cell (1 as TileDB writes them)"
      - id: encryption_type
        type: u1
        enum: encryption_type
        valid:
          in-enum: true
        doc: "encryption of the tile"
      - id: filter_pipeline_size
        type: u4
        doc: "bytes of the serialized pipeline that follows"
      - id: filter_pipeline
        size: filter_pipeline_size
        type: filter_pipeline
        doc: "pipeline the tile was filtered with (GZIP, then AES-256-GCM if encrypted)"
      - id: tile
        size: persisted_size
        type: tile
        doc: "the filtered tile"
  no_options:
    seq: []
  run_comparison_offsets:
    doc: "the offsets of comparison, to the end of its bound"
    seq:
      - id: items
        type: u8
        repeat: eos
  tile:
    doc: "Tile (tile.md)"
    doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/tile.md"
    seq:
      - id: num_chunks
        type: u8
        doc: "number of chunks (0 for an empty tile)"
      - id: chunks
        repeat: expr
        repeat-expr: num_chunks
        type: tile_chunk
        doc: "the chunks"
  tile_chunk:
    seq:
      - id: unfiltered_size
        type: u4
        doc: "bytes of this chunk before filtering"
      - id: filtered_data_size
        type: u4
        doc: "bytes of data"
      - id: filtered_metadata_size
        type: u4
        doc: "bytes of metadata"
      - id: metadata
        size: filtered_metadata_size
        doc: "metadata of the last filter stage; opaque: the filtered (compressed, encrypted...) bytes, which Kaitai cannot unfilter; *_chunk_metadata.ksy describe each filter's metadata"
      - id: data
        size: filtered_data_size
        doc: "data of the last filter stage; opaque: the filtered (compressed, encrypted...) bytes, which Kaitai cannot unfilter; *_chunk_metadata.ksy describe each filter's metadata"
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
  combination_op:
    0: and_
    1: or_
    2: not_
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
  encryption_type:
    0: no_encryption
    1: aes_256_gcm
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
  node_type:
    0: expression
    1: value
  query_condition_op:
    0: lt
    1: le
    2: gt
    3: ge
    4: eq
    5: ne
    6: in_
    7: not_in
    253: always_true
    254: always_false
  webp_input_format:
    0: webp_none
    1: webp_rgb
    2: webp_bgr
    3: webp_rgba
    4: webp_bgra
