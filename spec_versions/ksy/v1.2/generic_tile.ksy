meta:
  id: generic_tile
  title: "Generic tile (1.x)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Generic tile (1.x) (prev1.md §3.1), TileDB 1.2 (before format version 1)."
seq:
  - id: persisted_size
    type: u8
    doc: "bytes after this 30-byte header"
  - id: tile_size
    type: u8
    doc: "bytes of the uncompressed payload"
  - id: datatype
    type: u1
    enum: legacy_datatype
    valid:
      in-enum: true
    doc: "datatype of the payload (CHAR)"
  - id: cell_size
    type: u8
    doc: "bytes per cell (1)"
  - id: compressor
    type: u1
    enum: legacy_compressor
    valid:
      in-enum: true
    doc: "BLOSC_ZSTD in 1.0-1.2, GZIP in 1.3"
  - id: compression_level
    type: s4
    doc: "-1 in 1.0-1.2, 1 in 1.3"
  - id: body
    size: persisted_size
    type:
      switch-on: "compressor == legacy_compressor::no_compression"
      cases:
        "false": compressed_tile
    doc: "the payload: raw if uncompressed, else a compressed tile (§3.4); bytes when compressor is no_compression"
types:
  chunk1x:
    seq:
      - id: uncompressed_size
        type: u8
        doc: "bytes of the chunk once decompressed"
      - id: compressed_size
        type: u8
        doc: "bytes of the compressed chunk"
      - id: data
        size: compressed_size
        doc: "the chunk, compressed on its own"
  compressed_tile:
    seq:
      - id: chunk_num
        type: u8
        doc: "number of chunks"
      - id: chunks
        repeat: expr
        repeat-expr: chunk_num
        type: chunk1x
        doc: "the chunks"
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
