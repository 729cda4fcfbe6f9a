"""Commit-related files: markers, vacuum and ignore lists, consolidated commits, delete and update commits
(delete_commit_file.md, update_commit_file.md, consolidated_commits_file.md, vacuum_file.md, ignore_file.md;
REFERENCE.md §14).

- ``.ok`` (v5-11) and ``.wrt`` (v12+): empty :data:`CommitMarker`.
- ``.vac`` and ``.ign``: plain text, one URI a line (:data:`VacuumFile`, :data:`IgnoreFile`).
- ``.con``: not a generic tile; one URI a line, and after each ``.del`` entry the whole ``.del`` file
  (size u64 + bytes) (:data:`ConsolidatedCommits`; REFERENCE §17 #10).
- ``.del``: a generic tile holding the query-condition AST of the **negated** delete condition, i.e. of the
  cells to keep (:data:`DeleteCommit`); :func:`negate` gives back the condition the user wrote.
- ``.upd``: the same, then the update values (:data:`UpdateCommit`).
"""

from __future__ import annotations

from construct import Construct, Container, If, Int32ul, Int64ul, LazyBound, ListContainer, Rebuild, this

from ..enums import CombinationOp, CombinationOpEnum, NodeType, NodeTypeEnum, QueryConditionOp, QueryConditionOpEnum
from ..errors import FormatError
from ..fields import Bounded, Counted, Raw, RepeatToEnd, Section, Struct, built_size, rule, text_field
from ..numpy_array import NumpyArray
from .generic_tile import generic_tile

__all__ = [
    "CommitMarker", "VacuumFile", "IgnoreFile", "ConsolidatedCommits", "DeleteCommit", "UpdateCommit",
    "ConditionNode", "UpdateValues", "negate", "comparison", "combination", "condition_text",
]

CommitMarker = Section("Commit marker (.ok / .wrt)", "array_file_hierarchy.md", Struct(), since=5)


class Line(Construct):
    """One line of text ending in ``\\n`` (the newline is not part of the value)."""

    spec_type = "text line: UTF-8 up to a newline (\\n, not part of the value)"
    spec_size = "to the newline"

    def _parse(self, stream, context, path):
        out = bytearray()
        while (c := stream.read(1)) != b"\n":
            if not c:
                raise FormatError("the line does not end in a newline", path=path)
            out += c
        return out.decode("utf-8", "surrogateescape")

    def _build(self, obj, stream, context, path):
        data = obj.encode("utf-8", "surrogateescape")
        if b"\n" in data:
            raise FormatError(f"{obj!r} contains a newline", path=path)
        stream.write(data + b"\n")
        return obj


_uri_list = Struct("uris" / RepeatToEnd(Line()) * "one URI a line: relative to the array (v19+) or absolute")

VacuumFile = Section("Vacuum file (.vac)", "vacuum_file.md", _uri_list, since=5)
IgnoreFile = Section("Ignore file (.ign)", "ignore_file.md", _uri_list, since=12)

_IN_OPS = (QueryConditionOp.IN, QueryConditionOp.NOT_IN)
_in_op = rule("op is IN or NOT_IN")(lambda ctx: ctx.op in _IN_OPS)
_embeds_delete = rule("uri ends with .del")(lambda ctx: ctx.uri.endswith(".del"))

_Expression = Struct(
    "combination_op" / CombinationOpEnum * "AND, OR or NOT",
    "num_children" / Rebuild(Int64ul, lambda ctx: len(ctx.children)) * "number of child nodes (one u64)",
    "children" / Counted(this.num_children, LazyBound(lambda: ConditionNode), min_size=1) * "the operands",
)

_Comparison = Struct(
    "op" / QueryConditionOpEnum * "comparison operator (LT..NE, IN, NOT_IN, ALWAYS_TRUE, ALWAYS_FALSE)",
    *text_field("field_name", Int32ul, "attribute or dimension compared"),
    "value_size" / Rebuild(Int64ul, lambda ctx: len(ctx.value)) * "bytes of value",
    "value" / Raw(this.value_size, "condition value") * "raw value bytes; for IN/NOT_IN every member concatenated",
    "offsets_size" / If(_in_op, Rebuild(Int64ul, lambda ctx: 8 * len(ctx.offsets)))
    * "bytes of offsets (IN/NOT_IN only)",
    "offsets" / If(_in_op,
                   Bounded(this.offsets_size, NumpyArray(this.offsets_size // 8, "<u8"), "set member offsets"))
    * "byte offset of each set member in value (IN/NOT_IN only)",
)

#: One node of a serialized query condition (REFERENCE §14.1): an expression or a comparison.
ConditionNode = Struct(
    "node_type" / NodeTypeEnum * "0 expression, 1 value (comparison)",
    "expression" / If(this.node_type == NodeType.EXPRESSION, _Expression) * "combination of child nodes",
    "comparison" / If(this.node_type == NodeType.VALUE, _Comparison) * "a field compared with a value",
)

#: The values an update commit assigns (REFERENCE §14.2).
UpdateValues = Struct(
    "num" / Rebuild(Int64ul, lambda ctx: len(ctx.assignments)) * "number of assignments",
    "assignments" / Counted(this.num, Struct(
        *text_field("field_name", Int64ul, "field assigned"),
        "value_size" / Rebuild(Int64ul, lambda ctx: len(ctx.value)) * "bytes of value",
        "value" / Raw(this.value_size, "update value") * "raw value bytes",
    ), min_size=16) * "field = value assignments",
)

_delete_payload = Struct("condition" / ConditionNode * "the negated delete condition (cells to keep)")

DeleteCommit = Section("Delete commit (.del)", "delete_commit_file.md", generic_tile(_delete_payload), since=16)
UpdateCommit = Section("Update commit (.upd)", "update_commit_file.md", generic_tile(Struct(
    "condition" / ConditionNode * "the negated update condition",
    "update_values" / UpdateValues * "the assignments",
)), since=16)

ConsolidatedCommits = Section("Consolidated commits (.con)", "consolidated_commits_file.md", Struct(
    "entries" / RepeatToEnd(Struct(
        "uri" / Line() * "commit file relative to the array, e.g. __commits/__t1_t2_uuid_v.wrt",
        "delete_size" / If(_embeds_delete,
                           Rebuild(Int64ul, built_size("delete", DeleteCommit.subcon)))
        * "bytes of the embedded .del file (.del entries only)",
        "delete" / If(_embeds_delete,
                      Bounded(this.delete_size, DeleteCommit.subcon, "embedded delete commit"))
        * "the whole .del file, generic tile included (.del entries only)",
    )) * "one entry per consolidated commit",
), since=12)

_NEGATED_OP = {
    QueryConditionOp.LT: QueryConditionOp.GE, QueryConditionOp.GE: QueryConditionOp.LT,
    QueryConditionOp.LE: QueryConditionOp.GT, QueryConditionOp.GT: QueryConditionOp.LE,
    QueryConditionOp.EQ: QueryConditionOp.NE, QueryConditionOp.NE: QueryConditionOp.EQ,
    QueryConditionOp.IN: QueryConditionOp.NOT_IN, QueryConditionOp.NOT_IN: QueryConditionOp.IN,
    QueryConditionOp.ALWAYS_TRUE: QueryConditionOp.ALWAYS_FALSE,
    QueryConditionOp.ALWAYS_FALSE: QueryConditionOp.ALWAYS_TRUE,
}
_SYMBOL = {QueryConditionOp.LT: "<", QueryConditionOp.LE: "<=", QueryConditionOp.GT: ">", QueryConditionOp.GE: ">=",
           QueryConditionOp.EQ: "==", QueryConditionOp.NE: "!=", QueryConditionOp.IN: "in",
           QueryConditionOp.NOT_IN: "not in"}


def comparison(field_name: str, op: QueryConditionOp, value: bytes, offsets=None) -> Container:
    """A comparison node; ``offsets`` (the byte offset of each member in ``value``) only for IN/NOT_IN."""
    return Container(node_type=NodeType.VALUE, expression=None, comparison=Container(
        op=QueryConditionOp(op), field_name=field_name, value=bytes(value), offsets=offsets))


def combination(op: CombinationOp, *children) -> Container:
    """An AND / OR / NOT node over ``children``."""
    return Container(node_type=NodeType.EXPRESSION, comparison=None,
                     expression=Container(combination_op=CombinationOp(op), children=ListContainer(children)))


def negate(node) -> Container:
    """The logical negation, as TileDB forms it for delete commits (De Morgan; NOT(x) negates to x)."""
    if node["node_type"] == NodeType.VALUE:
        c = node["comparison"]
        return comparison(c["field_name"], _NEGATED_OP[c["op"]], c["value"], c.get("offsets"))
    e = node["expression"]
    if e["combination_op"] == CombinationOp.NOT:
        return e["children"][0]
    op = CombinationOp.OR if e["combination_op"] == CombinationOp.AND else CombinationOp.AND
    return combination(op, *(negate(child) for child in e["children"]))


def condition_text(node, dtypes: dict | None = None) -> str:
    """A readable form such as ``a > 500``; ``dtypes`` maps field names to numpy dtypes to show values."""
    import numpy as np

    if node["node_type"] == NodeType.EXPRESSION:
        e = node["expression"]
        parts = [condition_text(child, dtypes) for child in e["children"]]
        if e["combination_op"] == CombinationOp.NOT:
            return f"not ({parts[0]})"
        return f" {e['combination_op'].name.lower()} ".join(f"({p})" for p in parts)
    c = node["comparison"]
    if c["op"] not in _SYMBOL:
        return c["op"].name.lower()
    dtype = (dtypes or {}).get(c["field_name"])
    if dtype is None:
        shown = c["value"].hex()
    else:
        values = np.frombuffer(c["value"], dtype=dtype).tolist()
        shown = str(values if c["op"] in _IN_OPS else values[0])
    return f"{c['field_name']} {_SYMBOL[c['op']]} {shown}"
