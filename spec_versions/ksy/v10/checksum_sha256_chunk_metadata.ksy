meta:
  id: checksum_sha256_chunk_metadata
  title: "CHECKSUM_SHA256 chunk metadata"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "CHECKSUM_SHA256 chunk metadata (tile.md), TileDB format version 10."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/tile.md"
seq:
  - id: num_metadata_checksums
    type: u4
    doc: "checksummed metadata parts"
  - id: num_data_checksums
    type: u4
    doc: "checksummed data parts"
  - id: checksums
    repeat: expr
    repeat-expr: "(num_metadata_checksums + num_data_checksums)"
    type: checksums
    doc: "per part, metadata parts first"
types:
  checksums:
    seq:
      - id: nbytes
        type: u8
        doc: "bytes the digest covers"
      - id: digest
        size: "32"
        doc: "the digest"
