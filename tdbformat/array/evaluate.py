"""Evaluating a query-condition AST (REFERENCE.md §14.1) over numpy columns.

A delete commit stores the negated condition, i.e. the cells to keep, so evaluating it gives the mask
of surviving cells directly. A comparison is false on a null cell. An empty value (``value_size`` 0) is
the empty string for a string field, as TileDB reads it; a null test (EQ: null, NE: not null) where the
node says so (``null``: the text ``== None``) or the field is fixed-size.
"""

from __future__ import annotations

import operator

import numpy as np

from ..enums import CombinationOp, NodeType, QueryConditionOp
from ..errors import FormatError

__all__ = ["evaluate", "kept_by_delete"]

_COMPARE = {
    QueryConditionOp.LT: operator.lt, QueryConditionOp.LE: operator.le, QueryConditionOp.GT: operator.gt,
    QueryConditionOp.GE: operator.ge, QueryConditionOp.EQ: operator.eq, QueryConditionOp.NE: operator.ne,
}


def _members(node, column: np.ndarray):
    """The set members of an IN/NOT_IN node, as a numpy array comparable with ``column``."""
    value = bytes(node["value"])
    if column.dtype != object:
        return np.frombuffer(value, dtype=column.dtype)
    starts = np.asarray(node["offsets"], dtype=np.int64)
    ends = np.append(starts[1:], len(value))
    members = [value[a:b] for a, b in zip(starts, ends)]
    return np.array([_like(m, column) for m in members], dtype=object)


def _like(value: bytes, column: np.ndarray):
    """``value`` as the kind of Python object the (object) ``column`` holds."""
    if column.size and isinstance(column.flat[0], str):
        return value.decode("utf-8", "surrogateescape")
    return value


def _value(node, column: np.ndarray):
    value = bytes(node["value"])
    if column.dtype == object:
        return _like(value, column)
    if len(value) != column.dtype.itemsize:
        raise FormatError(f"condition on {node['field_name']!r}: {len(value)} value bytes for a "
                          f"{column.dtype} field")
    return np.frombuffer(value, dtype=column.dtype)[0]


def evaluate(node, columns: dict, validity: dict, n: int) -> np.ndarray:
    """The boolean mask of the ``n`` cells satisfying ``node`` (a parsed ``commits.ConditionNode``).

    ``columns`` maps field names to their values; ``validity`` maps nullable fields to their masks
    (True = valid).
    """
    if NodeType(node["node_type"]) == NodeType.EXPRESSION:
        expr = node["expression"]
        masks = [evaluate(child, columns, validity, n) for child in expr["children"]]
        op = CombinationOp(expr["combination_op"])
        if op == CombinationOp.NOT:
            return ~masks[0]
        combine = np.logical_and if op == CombinationOp.AND else np.logical_or
        return combine.reduce(masks) if masks else np.full(n, op == CombinationOp.AND)
    node = node["comparison"]
    op = QueryConditionOp(node["op"])
    if op in (QueryConditionOp.ALWAYS_TRUE, QueryConditionOp.ALWAYS_FALSE):
        return np.full(n, op == QueryConditionOp.ALWAYS_TRUE)
    name = node["field_name"]
    if name not in columns:
        raise FormatError(f"condition on {name!r}, which is not a field of the array")
    column = columns[name]
    valid = validity.get(name, np.ones(n, dtype=bool))
    if not len(node["value"]) and op in (QueryConditionOp.EQ, QueryConditionOp.NE) and (
            node.get("null") or column.dtype != object):
        # a null test: a condition's ``== None``, or a stored empty value of a fixed-size field (TileDB cannot
        # read those: DISCREPANCIES.md); of a string field it is the empty string, as TileDB reads it
        return ~valid if op == QueryConditionOp.EQ else valid.copy()
    if op in (QueryConditionOp.IN, QueryConditionOp.NOT_IN):
        found = np.isin(column, _members(node, column))
        return valid & (found if op == QueryConditionOp.IN else ~found)
    return valid & np.asarray(_COMPARE[op](column, _value(node, column)), dtype=bool)


def kept_by_delete(delete, columns: dict, validity: dict, n: int) -> np.ndarray:
    """The mask of the ``n`` cells a delete commit (``layout.Delete``) keeps: its stored condition, which is
    negated. A condition on a field the array no longer has (dropped since) names the commit; TileDB
    refuses such a read too ("Field doesn't exist")."""
    try:
        return evaluate(delete.condition, columns, validity, n)
    except FormatError as err:
        raise FormatError(err.reason, file=delete.marker, structure="delete condition") from None
