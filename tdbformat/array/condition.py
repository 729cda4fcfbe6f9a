"""TileDB-Py's query-condition language (``query(cond="a > 5 and s == 'x'")``) parsed into the condition
nodes of :mod:`tdbformat.structs.commits`, which :func:`.query.evaluate` runs over the cells.

The grammar is TileDB-Py's (``tiledb/query_condition.py``): Python expressions parsed with :mod:`ast`;
``and``/``or``/``&``/``|``/``not``; comparisons ``< <= > >= == !=`` of a field with a constant (either side,
chained as ``1 < a < 5``), ``field in [...]`` / ``not in``; fields as names, ``attr("name")`` or
``dim("name")``, values as constants or ``val(...)``; ``field == None`` / ``!= None`` test for null.
Values are cast to the field's type (a string against a number is refused, as TileDB-Py refuses it);
an enumerated attribute compares its labels, turned into codes here as TileDB does
(``QueryCondition::rewrite_enumeration_conditions``). What TileDB-Py rejects raises
:class:`ConditionError` naming the token.
"""

from __future__ import annotations

import ast

import numpy as np

from ..enums import CombinationOp, QueryConditionOp
from ..structs.commits import combination, comparison

__all__ = ["ConditionError", "parse_condition"]

_OPS = {ast.Lt: QueryConditionOp.LT, ast.LtE: QueryConditionOp.LE, ast.Gt: QueryConditionOp.GT,
        ast.GtE: QueryConditionOp.GE, ast.Eq: QueryConditionOp.EQ, ast.NotEq: QueryConditionOp.NE}
_SWAPPED = {QueryConditionOp.LT: QueryConditionOp.GT, QueryConditionOp.GT: QueryConditionOp.LT,
            QueryConditionOp.LE: QueryConditionOp.GE, QueryConditionOp.GE: QueryConditionOp.LE,
            QueryConditionOp.EQ: QueryConditionOp.EQ, QueryConditionOp.NE: QueryConditionOp.NE}
_BOOL = {ast.And: CombinationOp.AND, ast.BitAnd: CombinationOp.AND, ast.Or: CombinationOp.OR,
         ast.BitOr: CombinationOp.OR}


class ConditionError(ValueError):
    """A query condition TileDB-Py would refuse: the message names the offending token."""


def parse_condition(text: str, fields: dict, dims, *, sparse: bool, enumerations: dict | None = None):
    """The condition node of ``text``.

    ``fields``: ``{name: FieldInfo}`` of the array's dimensions and attributes; ``dims``: the names of the
    dimensions among them; ``sparse``: dimensions may
    be compared only in sparse arrays (TileDB refuses them in dense ones); ``enumerations``:
    ``{attribute name: (labels, ordered)}`` of enumerated attributes.
    """
    if not isinstance(text, str):
        raise TypeError(f"cond: expected a condition string, not {type(text).__name__}")
    try:
        tree = ast.parse(f"({text})", mode="eval")
    except SyntaxError:
        raise ConditionError(f"cond: could not parse the query condition {text!r}") from None
    return _Parser(fields, set(dims), sparse, enumerations or {}).node(tree.body)


class _Parser:
    def __init__(self, fields, dims, sparse, enumerations):
        self.fields, self.dims, self.sparse, self.enumerations = fields, dims, sparse, enumerations

    def node(self, n):
        if isinstance(n, ast.BoolOp) or (isinstance(n, ast.BinOp) and type(n.op) in _BOOL):
            op = _BOOL.get(type(n.op))
            if op is None:
                raise ConditionError(f"cond: unsupported operator {type(n.op).__name__}")
            parts = n.values if isinstance(n, ast.BoolOp) else [n.left, n.right]
            return combination(op, *(self.node(p) for p in parts))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return combination(CombinationOp.NOT, self.node(n.operand))
        if isinstance(n, ast.Compare):
            return self.compare(n)
        raise ConditionError(f"cond: {ast.unparse(n)!r} is not a comparison (a condition is comparisons of a "
                             "field with a value, joined by and/or/&/|/not)")

    def compare(self, n):
        if isinstance(n.ops[0], (ast.In, ast.NotIn)):
            if len(n.ops) != 1 or not isinstance(n.comparators[0], ast.List):
                raise ConditionError(f"cond: `in` must be written `field in [v1, v2, ...]`, not {ast.unparse(n)!r}")
            op = QueryConditionOp.IN if isinstance(n.ops[0], ast.In) else QueryConditionOp.NOT_IN
            return self.member(self.field(n.left), op, [_value(v, signed=False) for v in n.comparators[0].elts])
        nodes = []
        for left, op_node, right in zip([n.left, *n.comparators[:-1]], n.ops, n.comparators):
            op = _OPS.get(type(op_node))
            if op is None:
                raise ConditionError(f"cond: the operator {type(op_node).__name__} in {ast.unparse(n)!r} "
                                     "is not supported")
            if not self._is_field(left):  # `5 < a` is `a > 5`
                left, right, op = right, left, _SWAPPED[op]
            nodes.append(self.single(self.field(left), op, _value(right)))
        return nodes[0] if len(nodes) == 1 else combination(CombinationOp.AND, *nodes)

    @staticmethod
    def _is_field(n) -> bool:
        return isinstance(n, ast.Name) or (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                                           and n.func.id in ("attr", "dim"))

    def field(self, n):
        """The field a name, ``attr("...")`` or ``dim("...")`` names."""
        kind = None
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("attr", "dim"):
            if len(n.args) != 1 or n.keywords or not isinstance(n.args[0], ast.Constant):
                raise ConditionError(f"cond: {ast.unparse(n)!r}: {n.func.id}() takes one constant name")
            kind, name = n.func.id, n.args[0].value
        elif isinstance(n, ast.Name):
            name = n.id
        else:
            raise ConditionError(f"cond: {ast.unparse(n)!r} is not a field name (quote string values)")
        info = self.fields.get(name)
        if info is None:
            raise ConditionError(f"cond: {name!r} is not an attribute or dimension of the array")
        is_dim = name in self.dims
        if kind is not None and (kind == "dim") != is_dim:
            raise ConditionError(f"cond: {name!r} is not {'a dimension' if kind == 'dim' else 'an attribute'}")
        if is_dim and not self.sparse:
            raise ConditionError(f"cond: {name!r} is a dimension: TileDB compares dimensions only in sparse arrays")
        return info

    def single(self, info, op, value):
        if value is None:
            if op not in (QueryConditionOp.EQ, QueryConditionOp.NE):
                raise ConditionError(f"cond: {info.name} compared with None: only == None and != None test nulls")
            node = comparison(info.name, op, b"")
            node.comparison.null = True  # not the empty string (query.evaluate)
            return node
        labels = self.enumerations.get(info.name)
        if labels is not None:
            return self._enumerated(info, op, [value], labels)
        return comparison(info.name, op, _encode(info, value))

    def member(self, info, op, values):
        if not values:
            raise ConditionError(f"cond: `{info.name} in []`: a set needs at least one value")
        labels = self.enumerations.get(info.name)
        if labels is not None:
            return self._enumerated(info, op, values, labels)
        encoded = [_encode(info, v) for v in values]
        return comparison(info.name, op, b"".join(encoded),
                          np.cumsum([0] + [len(e) for e in encoded[:-1]]).astype("<u8"))

    def _enumerated(self, info, op, values, labels):
        """Labels of an enumerated attribute as its codes; a label the enumeration lacks matches nothing."""
        labels, ordered = labels
        index = {v: i for i, v in enumerate(labels)}
        codes = [index.get(v.encode() if isinstance(v, str) and labels and isinstance(labels[0], bytes) else v)
                 for v in values]
        dtype = info.datatype.numpy_dtype
        if op in (QueryConditionOp.IN, QueryConditionOp.NOT_IN):
            found = [c for c in codes if c is not None]
            if not found:
                return comparison(info.name, QueryConditionOp.ALWAYS_FALSE if op == QueryConditionOp.IN
                                  else QueryConditionOp.ALWAYS_TRUE, b"")
            return comparison(info.name, op, np.array(found, dtype).tobytes(),
                              np.arange(len(found), dtype="<u8") * dtype.itemsize)
        if op not in (QueryConditionOp.EQ, QueryConditionOp.NE) and not ordered:
            raise ConditionError(f"cond: {info.name} {op.name}: inequalities need an ordered enumeration")
        if codes[0] is None:  # ASTNodeVal::rewrite_for_schema: only != holds for a value not in the enumeration
            return comparison(info.name, QueryConditionOp.ALWAYS_TRUE if op == QueryConditionOp.NE
                              else QueryConditionOp.ALWAYS_FALSE, b"")
        return comparison(info.name, op, np.array(codes[0], dtype).tobytes())


def _encode(info, value) -> bytes:
    """``value`` as the field's stored bytes (TileDB-Py's cast_value_to_dtype)."""
    dtype = info.datatype.numpy_dtype
    if info.var or dtype.kind == "S":
        if isinstance(value, (str, bytes)):
            return value.encode() if isinstance(value, str) else value
        raise ConditionError(f"cond: {value!r} compared with the string field {info.name}")
    if isinstance(value, (str, bytes)):
        raise ConditionError(f"cond: cannot cast {value!r} to the {dtype} of {info.name}")
    if dtype.kind in "mM":
        dtype = np.dtype("<i8")
    elif dtype.kind == "b":
        dtype = np.dtype("u1")
    try:
        return np.asarray(dtype.type(value), dtype).tobytes()
    except (ValueError, TypeError, OverflowError):
        raise ConditionError(f"cond: cannot cast {value!r} to the {dtype} of {info.name}") from None


def _value(n, signed: bool = True):
    """A constant (or ``val(constant)``; ``-5`` is a constant too, but not in a list or ``val()``, where
    TileDB-Py refuses a sign: "Incorrect type for comparison value: UnaryOp")."""
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "val" and len(n.args) == 1:
        n, signed = n.args[0], False
    sign = 1
    while isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
        if not signed:
            raise ConditionError(f"cond: {ast.unparse(n)!r}: TileDB-Py takes a signed value only as a comparison's "
                                 "own operand, not in a list or val()")
        sign, n = (-sign if isinstance(n.op, ast.USub) else sign), n.operand
    if not isinstance(n, ast.Constant) or (sign == -1 and not isinstance(n.value, (int, float))):
        raise ConditionError(f"cond: {ast.unparse(n)!r} is not a constant value (quote string values)")
    return -n.value if sign == -1 else n.value
