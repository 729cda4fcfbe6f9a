meta:
  id: dictionary_chunk_metadata
  title: "DICTIONARY chunk metadata"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "DICTIONARY chunk metadata (tile.md), TileDB format version 22."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/tile.md"
seq:
  - id: num_metadata_parts
    type: u4
    doc: "always 0"
  - id: num_data_parts
    type: u4
    doc: "always 1"
  - id: uncompressed_size
    type: u4
    doc: "bytes of the var data"
  - id: compressed_size
    type: u4
    doc: "bytes of the encoded data"
  - id: offsets_size
    type: u4
    doc: "bytes of the offsets the data rebuilds (8 per cell)"
  - id: ids_bytesize
    type: u1
    doc: "bytes of each id: 1, 2, 4 or 8 (from the number of cells)"
  - id: strlen_bytesize
    type: u1
    doc: "bytes of each dictionary length prefix: 1, 2, 4 or 8"
  - id: dict_size
    type: u4
    doc: "bytes of the dictionary"
  - id: dictionary
    size: dict_size
    doc: "[length BE][bytes] per distinct string, in first-seen order"
