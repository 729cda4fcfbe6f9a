meta:
  id: ignore_file
  title: "Ignore file (.ign)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Ignore file (.ign) (ignore_file.md), TileDB format version 12."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/ignore_file.md"
seq:
  - id: uris
    repeat: eos
    type: str
    encoding: UTF-8
    terminator: 10
    doc: "one URI a line: relative to the array (v19+) or absolute"
