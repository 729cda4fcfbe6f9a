meta:
  id: gzip_zstd_lz4_rle_bzip2_double_delta_delta_chunk_metadata
  title: "GZIP, ZSTD, LZ4, RLE, BZIP2, DOUBLE_DELTA, DELTA chunk metadata"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "GZIP, ZSTD, LZ4, RLE, BZIP2, DOUBLE_DELTA, DELTA chunk metadata (tile.md), TileDB format version 15."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/tile.md"
seq:
  - id: num_metadata_parts
    type: u4
    doc: "compressed metadata parts"
  - id: num_data_parts
    type: u4
    doc: "compressed data parts"
  - id: parts
    repeat: expr
    repeat-expr: "(num_metadata_parts + num_data_parts)"
    type: compressed_part
    doc: "sizes of each part, metadata parts first"
types:
  compressed_part:
    seq:
      - id: orig_size
        type: u4
        doc: "bytes of the part before compression"
      - id: compressed_size
        type: u4
        doc: "bytes of the compressed part"
