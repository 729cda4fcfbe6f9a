meta:
  id: aes_256_gcm_chunk_metadata
  title: "AES_256_GCM chunk metadata"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "AES_256_GCM chunk metadata (tile.md), TileDB format version 11."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/tile.md"
seq:
  - id: num_metadata_parts
    type: u4
    doc: "encrypted metadata parts"
  - id: num_data_parts
    type: u4
    doc: "encrypted data parts"
  - id: parts
    repeat: expr
    repeat-expr: "(num_metadata_parts + num_data_parts)"
    type: encrypted_part
    doc: "one entry per part, metadata parts first"
types:
  encrypted_part:
    seq:
      - id: plaintext_size
        type: u4
        doc: "bytes of the plaintext part"
      - id: encrypted_size
        type: u4
        doc: "bytes of the ciphertext part (GCM adds none)"
      - id: iv
        size: "12"
        doc: "initialisation vector, fresh per part"
      - id: tag
        size: "16"
        doc: "GCM authentication tag"
