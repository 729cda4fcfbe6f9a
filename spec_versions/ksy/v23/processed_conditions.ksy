meta:
  id: processed_conditions
  title: "Processed conditions"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Processed conditions (fragment.md), TileDB format version 23. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/fragment.md"
seq:
  - id: num
    type: u8
    doc: "number of processed delete/update conditions"
  - id: conditions
    repeat: expr
    repeat-expr: num
    type: conditions
    doc: sorted
types:
  conditions:
    seq:
      - id: marker_len
        type: u8
        doc: "bytes of marker"
      - id: marker
        type: str
        encoding: UTF-8
        size: marker_len
        doc: "the condition's commit file, relative to the array"
