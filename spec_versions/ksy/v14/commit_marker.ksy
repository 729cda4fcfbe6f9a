meta:
  id: commit_marker
  title: "Commit marker (.ok / .wrt)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Commit marker (.ok / .wrt) (array_file_hierarchy.md), TileDB format version 14."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/array_file_hierarchy.md"
seq: []
