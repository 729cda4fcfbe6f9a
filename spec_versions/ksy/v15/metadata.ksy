meta:
  id: metadata
  title: Metadata
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Metadata (metadata.md), TileDB format version 15. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/metadata.md"
seq:
  - id: entries
    repeat: eos
    type: metadata_entry
    doc: "entries until the end of the payload"
types:
  metadata_entry:
    seq:
      - id: key_len
        type: u4
        doc: "bytes of key"
      - id: key
        type: str
        encoding: UTF-8
        size: key_len
        doc: "metadata key"
      - id: deleted
        type: u1
        doc: "the spec's `del`: 1 = this entry deletes the key"
      - id: datatype
        type: u1
        enum: datatype
        valid:
          in-enum: true
        if: "deleted == 0"
        doc: "datatype of the values (puts only)"
      - id: value_num
        type: u4
        if: "deleted == 0"
        doc: "number of values (not bytes; puts only)"
      - id: value
        repeat: expr
        repeat-expr: value_num
        if: "deleted == 0"
        type: "typed_value(datatype.to_i)"
        doc: "the values as a numpy array of the datatype (puts only)"
  typed_value:
    doc: "one value of a Datatype (datetimes and times as their int64)"
    params:
      - id: datatype
        type: u1
        doc: "Datatype enum value"
    seq:
      - id: value
        type:
          switch-on: datatype
          cases:
            "0": s4
            "1": s8
            "2": f4
            "3": f8
            "4": u1
            "5": s1
            "6": u1
            "7": s2
            "8": u2
            "9": u4
            "10": u8
            "11": u1
            "12": u1
            "13": u2
            "14": u4
            "15": u2
            "16": u4
            "17": u1
            "18": s8
            "19": s8
            "20": s8
            "21": s8
            "22": s8
            "23": s8
            "24": s8
            "25": s8
            "26": s8
            "27": s8
            "28": s8
            "29": s8
            "30": s8
            "31": s8
            "32": s8
            "33": s8
            "34": s8
            "35": s8
            "36": s8
            "37": s8
            "38": s8
            "39": s8
            "40": u1
            "41": u1
            "42": u1
            "43": u1
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
