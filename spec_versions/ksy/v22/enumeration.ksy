meta:
  id: enumeration
  title: Enumeration
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Enumeration (enumeration.md), TileDB format version 22. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/enumeration.md"
seq:
  - id: version
    type: u4
    valid:
      eq: 0
    doc: "enumeration format version (0)"
  - id: name_len
    type: u4
    doc: "bytes of name"
  - id: name
    type: str
    encoding: UTF-8
    size: name_len
    doc: "enumeration name (what attributes refer to)"
  - id: path_name_len
    type: u4
    doc: "bytes of path_name"
  - id: path_name
    type: str
    encoding: UTF-8
    size: path_name_len
    doc: "the file's own name, __<uuid>_0"
  - id: datatype
    type: u1
    enum: datatype
    valid:
      in-enum: true
    doc: "datatype of the values"
  - id: cell_val_num
    type: u4
    doc: "values per entry, 2**32-1 = var-sized"
  - id: ordered
    type: u1
    doc: "1 = the values are ordered"
  - id: data_size
    type: u8
    doc: "bytes of data"
  - id: data
    size: data_size
    doc: "the values, back to back"
  - id: offsets_size
    if: "(cell_val_num == 4294967295)"
    type: u8
    doc: "bytes of offsets (var-sized only)"
  - id: offsets
    if: "(cell_val_num == 4294967295)"
    size: offsets_size
    type: run_enumeration_payload_offsets
    doc: "u64 start of each value in data (var-sized only)"
types:
  run_enumeration_payload_offsets:
    doc: "the offsets of enumeration_payload, to the end of its bound"
    seq:
      - id: items
        type: u8
        repeat: eos
enums:
  datatype:
    0: int32
    1: int64
    2: float32
    3: float64
    4: char
    5: int8
    6: uint8
    7: int16
    8: uint16
    9: uint32
    10: uint64
    11: string_ascii
    12: string_utf8
    13: string_utf16
    14: string_utf32
    15: string_ucs2
    16: string_ucs4
    17: any
    18: datetime_year
    19: datetime_month
    20: datetime_week
    21: datetime_day
    22: datetime_hr
    23: datetime_min
    24: datetime_sec
    25: datetime_ms
    26: datetime_us
    27: datetime_ns
    28: datetime_ps
    29: datetime_fs
    30: datetime_as
    31: time_hr
    32: time_min
    33: time_sec
    34: time_ms
    35: time_us
    36: time_ns
    37: time_ps
    38: time_fs
    39: time_as
    40: blob
    41: bool
    42: geom_wkb
    43: geom_wkt
