meta:
  id: positive_delta_chunk_metadata
  title: "POSITIVE_DELTA chunk metadata"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "POSITIVE_DELTA chunk metadata (tile.md), TileDB format version 3."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/tile.md"
params:
  - id: datatype
    type: u1
    doc: "Datatype of the values"
seq:
  - id: num_windows
    type: u4
    doc: "number of windows over all parts"
  - id: windows
    repeat: expr
    repeat-expr: num_windows
    type: windows
    doc: "one entry per window"
types:
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
  windows:
    seq:
      - id: offset
        type: "typed_value(_root.datatype)"
        doc: "first value of the window"
      - id: nbytes
        type: u4
        doc: "input bytes of the window"
