meta:
  id: data_file
  title: "Data file (1.0)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Data file (1.0) (prev1.md §3.4), TileDB 1.0 (before format version 1): tiles back to back from the tile offsets."
params:
  - id: tile_offsets
    type: u8[]
    doc: "where each tile starts (the fragment metadata's tile_offsets or tile_var_offsets of the field)"
  - id: compressed
    type: bool
    doc: "the field's compressor is not NO_COMPRESSION"
seq:
  - id: tiles
    repeat: expr
    repeat-expr: "_root.tile_offsets.size"
    size: "(_index + 1 < _root.tile_offsets.size ? _root.tile_offsets[_index + 1] : _io.size) - _root.tile_offsets[_index]"
    doc: "each tile"
    type: tile_span
types:
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
  tile_span:
    doc: "one tile"
    seq:
      - id: sub_tiles
        if: "_root.compressed"
        repeat: eos
        type: compressed_tile
        doc: "compressed tiles: one per dimension in __coords.tdb, else one"
      - id: raw
        if: "not _root.compressed"
        size-eos: true
        doc: "the uncompressed tile"
