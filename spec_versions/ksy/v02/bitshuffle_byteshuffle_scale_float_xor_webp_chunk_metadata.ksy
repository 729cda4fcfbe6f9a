meta:
  id: bitshuffle_byteshuffle_scale_float_xor_webp_chunk_metadata
  title: "BITSHUFFLE, BYTESHUFFLE, SCALE_FLOAT, XOR, WEBP chunk metadata"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "BITSHUFFLE, BYTESHUFFLE, SCALE_FLOAT, XOR, WEBP chunk metadata (tile.md), TileDB format version 2."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/tile.md"
seq:
  - id: num_parts
    type: u4
    doc: "number of parts"
  - id: part_sizes
    repeat: expr
    repeat-expr: num_parts
    type: u4
    doc: "bytes of each part"
