"""Writing delete conditions (delete_commit_file.md; REFERENCE.md §14), format v16 and later.

:func:`delete_cells` writes ``__commits/__<t>_<t>_<uuid>_<v>.del`` as TileDB's ``DeletesAndUpdates::dowork``
does: one generic tile of the array's format version holding the **negated** condition (the cells to
keep), after the checks TileDB makes first: sparse arrays only, the condition's fields and value sizes
fit the schema (``ASTNodeVal::check_node_validity``), and the timestamp does not fall inside a fragment
consolidated without timestamps. The tree is first made the one TileDB would have built (:func:`tiledb_tree`):
TileDB never stores a NOT (it negates ``not x`` as it builds the condition, ``QueryCondition::negate``), nor
an AND directly under an AND or an OR under an OR.
"""

from __future__ import annotations

from construct import Container

from .. import layout
from ..enums import ArrayType, CombinationOp, Datatype, NodeType, QueryConditionOp
from ..storage import storage_for
from ..structs.array_schema import attributes, dimensions
from ..structs.commits import DeleteCommit, combination, negate
from ..structs.names import parse_timestamped_name, timestamped_name
from ..versions import FEATURES
from .writer import _uuid as fragment_uuid

__all__ = ["delete_cells", "DELETES_SINCE", "tiledb_tree"]

#: the first format version with delete commits
DELETES_SINCE = 16

_SET_OPS = (QueryConditionOp.IN, QueryConditionOp.NOT_IN)
_ALWAYS = (QueryConditionOp.ALWAYS_TRUE, QueryConditionOp.ALWAYS_FALSE)
_STRINGS = (Datatype.STRING_ASCII, Datatype.STRING_UTF8, Datatype.CHAR)
_UNSUPPORTED = (Datatype.ANY, Datatype.STRING_UTF16, Datatype.STRING_UTF32, Datatype.STRING_UCS2,
                Datatype.STRING_UCS4, Datatype.BLOB, Datatype.GEOM_WKB, Datatype.GEOM_WKT)


def tiledb_tree(node) -> Container:
    """``node`` as TileDB builds conditions: every NOT pushed into its operand (De Morgan), and the children of
    an AND that are ANDs (of an OR that are ORs) spliced into it (``ASTNodeExpr::combine``). TileDB 2.30
    misreads an OR nested in an OR in a delete commit (DISCREPANCIES.md), and never writes one."""
    if node["node_type"] == NodeType.VALUE:
        return node
    e = node["expression"]
    children = [tiledb_tree(child) for child in e["children"]]
    if e["combination_op"] == CombinationOp.NOT:
        if len(children) != 1:
            raise ValueError(f"condition: a NOT node has one operand, not {len(children)}")
        return negate(children[0])  # negating flips every operator, so the result stays spliced
    op, flat = e["combination_op"], []
    for child in children:
        same = child["node_type"] == NodeType.EXPRESSION and child["expression"]["combination_op"] == op
        flat.extend(child["expression"]["children"] if same else [child])
    return combination(op, *flat)


def _check_value(c, field) -> None:
    """The checks of ASTNodeVal::check_node_validity that concern the stored bytes."""
    op, value, name = QueryConditionOp(c["op"]), bytes(c["value"]), c["field_name"]
    is_null = not value and op not in _SET_OPS
    if is_null:
        if op not in (QueryConditionOp.EQ, QueryConditionOp.NE, *_ALWAYS):
            raise ValueError(f"condition on {name!r}: a null value can only be compared with == or !=")
        return
    if field.datatype in _UNSUPPORTED:
        raise ValueError(f"condition on {name!r}: TileDB cannot compare {field.datatype.name} values")
    if field.var or field.datatype in _STRINGS or op in _ALWAYS:
        return
    if field.cell_val_num != 1:
        raise ValueError(f"condition on {name!r}: a fixed-size field compared must have one value per cell")
    size = field.datatype.size
    members = _members(c) if op in _SET_OPS else [value]
    wrong = [len(m) for m in members if len(m) != size]
    if wrong:
        raise ValueError(f"condition on {name!r}: values of {wrong[0]} bytes, the field's are {size}")


def _members(c) -> list[bytes]:
    offsets = c.get("offsets")
    if offsets is None:
        raise ValueError(f"condition on {c['field_name']!r}: IN and NOT IN need the offsets of their members")
    bounds = [*map(int, offsets), len(c["value"])]
    return [bytes(c["value"][a:b]) for a, b in zip(bounds, bounds[1:])]


def _check(node, fields: dict) -> None:
    if node["node_type"] == NodeType.EXPRESSION:
        for child in node["expression"]["children"]:
            _check(child, fields)
        return
    c = node["comparison"]
    if c["field_name"] not in fields:
        raise ValueError(f"condition: {c['field_name']!r} is not a dimension or attribute of the array "
                         f"({', '.join(fields)})")
    _check_value(c, fields[c["field_name"]])


def _check_not_inside_consolidated(listing, timestamp: int) -> None:
    """TileDB refuses a delete inside a fragment consolidated without timestamps (before v15)."""
    for f in listing.fragments:
        ts = parse_timestamped_name(f.name)
        if not FEATURES["partial_time_overlap"](ts.version) and ts.t1 <= timestamp <= ts.t2:
            raise ValueError(f"timestamp: {timestamp} falls inside fragment {f.name}, consolidated without "
                             f"timestamps (TileDB refuses such a delete)")


def delete_cells(path, condition, timestamp=None, key=None, uuid: str | None = None) -> str:
    """Delete the cells of the sparse array at ``path`` that match ``condition`` (a ``ConditionNode``
    Container made with :func:`tdbformat.structs.commits.comparison` / ``combination``) and were written at
    or before ``timestamp`` (ms; None: now). Writes one ``.del`` commit whole, then renames it into place;
    returns its path. ``uuid`` (32 lowercase hex digits) names the commit, as a converted array keeps the
    names its fragments' processed conditions refer to."""
    if not isinstance(condition, dict) or "node_type" not in condition:
        raise TypeError(f"condition: expected a ConditionNode Container, not {type(condition).__name__}")
    storage, root = storage_for(path)
    schema = layout.load_schemas(storage, root, key)[-1][1]
    version = schema.version
    if version < DELETES_SINCE:
        raise ValueError(f"delete conditions exist from format version {DELETES_SINCE}; this array is v{version}")
    if schema.array_type == ArrayType.DENSE:
        raise ValueError("delete conditions apply to sparse arrays only (TileDB refuses them on dense arrays)")
    fields = {f.name: f for f in dimensions(schema) + attributes(schema)}
    plain = tiledb_tree(condition)
    _check(plain, fields)
    timestamp = layout.checked_timestamp(timestamp)
    _check_not_inside_consolidated(layout.Listing.of(storage, root, key), timestamp)
    data = DeleteCommit.build(Container(condition=negate(plain)), version=version, key=key)
    name = timestamped_name(timestamp, timestamp, fragment_uuid(uuid), version)
    target = layout.delete_commit_path(storage, root, name)
    storage.commit(target, data)
    return str(target)
