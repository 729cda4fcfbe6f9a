meta:
  id: tile_offsets
  title: "Tile offsets (also var offsets, var sizes, validity offsets, null counts)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Tile offsets (also var offsets, var sizes, validity offsets, null counts) (fragment.md), TileDB format version 6. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/fragment.md"
seq:
  - id: num
    type: u8
    doc: "number of values"
  - id: data
    type: u8
    repeat: expr
    repeat-expr: num
    doc: "one u64 per tile"
