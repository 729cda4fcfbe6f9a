meta:
  id: fragment_min_max_sum_null_count
  title: "Fragment min/max/sum/null count"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Fragment min/max/sum/null count (fragment.md), TileDB format version 23. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/fragment.md"
params:
  - id: field_num
    type: u4
    doc: "entries of the index space"
seq:
  - id: fields
    repeat: expr
    type: fields
    repeat-expr: "_root.field_num"
    doc: "one entry per index of the index space"
types:
  fields:
    seq:
      - id: min_size
        type: u8
        doc: "bytes of min"
      - id: min
        size: min_size
        doc: "fragment minimum (empty if none)"
      - id: max_size
        type: u8
        doc: "bytes of max"
      - id: max
        size: max_size
        doc: "fragment maximum (empty if none)"
      - id: sum
        size: 8
        doc: "fragment sum (int64, uint64 or f64 as the tile sums); opaque here: int64, uint64 or f64 as the field's tile sums (Kaitai would need every field's type)"
      - id: null_count
        type: u8
        doc: "fragment null count"
