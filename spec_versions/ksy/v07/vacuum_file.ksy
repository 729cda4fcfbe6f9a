meta:
  id: vacuum_file
  title: "Vacuum file (.vac)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Vacuum file (.vac) (vacuum_file.md), TileDB format version 7."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/vacuum_file.md"
seq:
  - id: uris
    repeat: eos
    type: str
    encoding: UTF-8
    terminator: 10
    doc: "one URI a line: relative to the array (v19+) or absolute"
