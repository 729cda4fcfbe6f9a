meta:
  id: filter_pipeline
  title: "Filter pipeline"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Filter pipeline (filter_pipeline.md), TileDB format version 9."
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
types:
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
  webp_input_format:
    0: webp_none
    1: webp_rgb
    2: webp_bgr
    3: webp_rgba
    4: webp_bgra
