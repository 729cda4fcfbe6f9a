meta:
  id: data_file
  title: "Data file"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Data file (fragment.md), TileDB format version 12."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/fragment.md"
seq:
  - id: items
    repeat: eos
    type: tile
types:
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
