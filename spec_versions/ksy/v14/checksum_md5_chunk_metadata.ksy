meta:
  id: checksum_md5_chunk_metadata
  title: "CHECKSUM_MD5 chunk metadata"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "CHECKSUM_MD5 chunk metadata (tile.md), TileDB format version 14."
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
        size: "16"
        doc: "the digest"
