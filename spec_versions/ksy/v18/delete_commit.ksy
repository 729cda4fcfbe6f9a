meta:
  id: delete_commit
  title: "Delete commit (.del)"
  endian: le
  encoding: UTF-8
  ks-version: "0.11"
doc: "Delete commit (.del) (delete_commit_file.md), TileDB format version 18. The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline gives back."
doc-ref: "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/delete_commit_file.md"
seq:
  - id: condition
    type: condition_node
    doc: "the negated delete condition (cells to keep)"
types:
  comparison:
    seq:
      - id: op
        type: u1
        enum: query_condition_op
        valid:
          in-enum: true
        doc: "comparison operator (LT..NE, IN, NOT_IN, ALWAYS_TRUE, ALWAYS_FALSE)"
      - id: field_name_len
        type: u4
        doc: "bytes of field_name"
      - id: field_name
        type: str
        encoding: UTF-8
        size: field_name_len
        doc: "attribute or dimension compared"
      - id: value_size
        type: u8
        doc: "bytes of value"
      - id: value
        size: value_size
        doc: "raw value bytes; for IN/NOT_IN every member concatenated"
      - id: offsets_size
        type: u8
        if: "op == query_condition_op::in_ or op == query_condition_op::not_in"
        doc: "bytes of offsets (IN/NOT_IN only)"
      - id: offsets
        size: offsets_size
        if: "op == query_condition_op::in_ or op == query_condition_op::not_in"
        type: run_comparison_offsets
        doc: "byte offset of each set member in value (IN/NOT_IN only)"
  condition_node:
    seq:
      - id: node_type
        type: u1
        enum: node_type
        valid:
          in-enum: true
        doc: "0 expression, 1 value (comparison)"
      - id: expression
        if: "(node_type == node_type::expression)"
        type: expression
        doc: "combination of child nodes"
      - id: comparison
        if: "(node_type == node_type::value)"
        type: comparison
        doc: "a field compared with a value"
  expression:
    seq:
      - id: combination_op
        type: u1
        enum: combination_op
        valid:
          in-enum: true
        doc: "AND, OR or NOT"
      - id: num_children
        type: u8
        doc: "number of child nodes (one u64)"
      - id: children
        repeat: expr
        repeat-expr: num_children
        type: condition_node
        doc: "the operands"
  run_comparison_offsets:
    doc: "the offsets of comparison, to the end of its bound"
    seq:
      - id: items
        type: u8
        repeat: eos
enums:
  combination_op:
    0: and_
    1: or_
    2: not_
  node_type:
    0: expression
    1: value
  query_condition_op:
    0: lt
    1: le
    2: gt
    3: ge
    4: eq
    5: ne
    6: in_
    7: not_in
    253: always_true
    254: always_false
