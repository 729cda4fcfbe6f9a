meta:
  id: data_file
  title: "Data file (0.x)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Data file (0.x) (prev1.md §2.3), TileDB 0.x (before format version 1): tiles back to back from the tile offsets."
params:
  - id: tile_offsets
    type: u8[]
    doc: "where each tile starts (the fragment metadata's tile_offsets or tile_var_offsets of the field)"
seq:
  - id: tiles
    repeat: expr
    repeat-expr: "_root.tile_offsets.size"
    size: "(_index + 1 < _root.tile_offsets.size ? _root.tile_offsets[_index + 1] : _io.size) - _root.tile_offsets[_index]"
    doc: "each tile's bytes (0.x: compressed as the field's compressor, no header)"
