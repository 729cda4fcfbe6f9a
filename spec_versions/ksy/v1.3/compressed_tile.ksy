meta:
  id: compressed_tile
  title: "Compressed tile (1.x)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Compressed tile (1.x) (prev1.md §3.4), TileDB 1.3 (before format version 1)."
seq:
  - id: chunk_num
    type: u8
    doc: "number of chunks"
  - id: chunks
    repeat: expr
    repeat-expr: chunk_num
    type: chunk1x
    doc: "the chunks"
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
