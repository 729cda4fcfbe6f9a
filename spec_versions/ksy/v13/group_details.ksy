meta:
  id: group_details
  title: "Group details"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Group details (group.md), TileDB format version 13. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/group.md"
seq:
  - id: version
    type: u4
    valid:
      any-of:
        - 1
        - 2
    doc: "group details version: 1 (2.8-2.14) or 2 (2.15+)"
  - id: member_count
    type: u8
    doc: "number of members (u64)"
  - id: members
    repeat: expr
    repeat-expr: member_count
    type: group_member
    doc: "the members"
types:
  group_member:
    seq:
      - id: version
        type: u4
        valid:
          any-of:
            - 1
            - 2
        doc: "member version: 1, or 2 (2.15+, adds deleted)"
      - id: object_type
        type: u1
        enum: object_type
        valid:
          in-enum: true
        doc: "GROUP or ARRAY"
      - id: relative
        type: u1
        doc: "1 = uri is relative to the group"
      - id: uri_len
        type: u8
        doc: "bytes of uri"
      - id: uri
        type: str
        encoding: UTF-8
        size: uri_len
        doc: "URI of the member"
      - id: name_set
        type: u1
        doc: "1 = the member has a name"
      - id: name_len
        if: "name_set != 0"
        type: u8
        doc: "bytes of name (only if name_set)"
      - id: name
        if: "name_set != 0"
        type: str
        encoding: UTF-8
        size: name_len
        doc: "member name, or None"
      - id: deleted
        if: "(version >= 2)"
        type: u1
        doc: "1 = the member was removed (member version 2 only)"
enums:
  object_type:
    0: invalid
    1: group
    2: array
