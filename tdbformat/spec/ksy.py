"""Kaitai Struct (``.ksy``) export of the declarations, one file per registered structure and version.

A ``.ksy`` is Kaitai Struct's language-neutral description of a binary layout; its compiler turns one into
parsers in a dozen languages. :func:`ksy_documents` walks the same construct trees that parse the files
(found through :func:`tdbformat.spec.structures`), at one format version, so version gates are resolved
here: the ``vNN`` files hold only what exists in format version NN.

How constructs map (:class:`_Builder`): Struct → a user type; a named field → a ``seq`` entry with its
``doc``; FormatField/Flag → ``u1``..``u8``/``s1``..``s8``/``f4``/``f8`` (a Flag is a ``u1``, 0 or 1);
StrictEnum → ``enum:`` with ``valid: in-enum``; Raw/Bytes → ``size:``; GreedyBytes → ``size-eos``; Text →
``str``; Bounded/FixedSized → ``size:`` around the inner type; Counted/Array/NumpyArray → ``repeat: expr``;
RepeatToEnd → ``repeat: eos``; If → ``if:``; Switch → ``switch-on``; Rebuild/Default → the field they wrap;
a nested Section → its own type; a stored format version → ``valid: eq``. ``this`` expressions become
Kaitai expressions. Python functions (lambdas that read the schema or a sibling) cannot be read, so
:data:`_OVERRIDES` says what each one means, per type and field; a function without an entry is an error,
never silently dropped. A generic tile's body (filtered: compressed, encrypted) cannot be unfiltered by
Kaitai: such files are exported as their unfiltered payload, and ``generic_tile.ksy`` describes the tile
around it with its chunk data as opaque bytes.

Context that a file does not hold (a footer's dimension types, a tile's field) is a ``params:`` entry.
"""

from __future__ import annotations

import enum
import json
import keyword
import operator
import re
from pathlib import Path

import construct
from construct import Container
import numpy as np
from construct.expr import BinExpr, Path as ThisPath, UniExpr

from ..enums import Datatype
from ..fields import Bounded, Counted, Raw, RepeatToEnd, Section, StrictEnum, Text
from ..numpy_array import NumpyArray
from . import _type_names, structures
from ..storage import LocalStorage
from ..structs.array_schema import value_dtype
from ..structs.fragment import _sum_dtype
from ..versions import FEATURES, KNOWN_VERSIONS, Versioned

__all__ = ["ksy_documents", "ksy_text", "export_ksy", "write_ksy"]

SPEC_URL = "https://github.com/TileDB-Inc/TileDB/blob/dev/format_spec/"

_INT_TYPES = {"B": "u1", "H": "u2", "I": "u4", "L": "u4", "Q": "u8", "b": "s1", "h": "s2", "i": "s4", "l": "s4",
              "q": "s8", "f": "f4", "d": "f8"}
_OPS = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.floordiv: "/", operator.mod: "%",
        operator.eq: "==", operator.ne: "!=", operator.lt: "<", operator.le: "<=", operator.gt: ">",
        operator.ge: ">=", operator.and_: "and", operator.or_: "or"}
VAR_NUM = 2**32 - 1


def _snake(name: str) -> str:
    name = re.sub(r"\(.*?\)", "", name)
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _enum_id(cls) -> str:
    return _snake(cls.__name__)


def _member(m: enum.Enum) -> str:
    """An enum member's Kaitai name; one that is a keyword of a target language (``in``, ``and``, ``not``...)
    takes a trailing ``_``, since the compiler passes it through to the generated code."""
    name = m.name.lower()
    return f"{name}_" if keyword.iskeyword(name) or name in _KEYWORDS else name


_KEYWORDS = {"new", "delete", "default", "switch", "case", "function", "var", "null", "true", "false"}


def _numpy_kaitai(dtype) -> str:
    """The Kaitai type of one little-endian numpy value (bool and bytes as u1)."""
    if dtype.kind == "f":
        return f"f{dtype.itemsize}"
    return f"{'s' if dtype.kind == 'i' else 'u'}{dtype.itemsize}"


def _expr(x) -> str:
    """A construct ``this`` expression as a Kaitai expression (``this._.x`` is ``_parent.x``)."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, enum.Enum):
        return f"{_enum_id(type(x))}::{_member(x)}"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, ThisPath):
        parent, field = x._Path__parent, x._Path__field
        if parent is None:
            return ""
        head = _expr(parent)
        name = "_parent" if field == "_" else field
        return f"{head}.{name}" if head else name
    if isinstance(x, BinExpr):
        return f"({_expr(x.lhs)} {_OPS[x.op]} {_expr(x.rhs)})"
    if isinstance(x, UniExpr) and x.op is operator.not_:
        return f"not {_truth(x.operand)}"
    raise _Opaque(x)


def _outward(type_ref: str) -> str:
    """A type reference moved one type down: its arguments read the fields of ``_parent``."""
    head, _, args = type_ref.partition("(")
    if not args:
        return type_ref
    return head + "(" + re.sub(r"(?<![.\w])(?!_root\b)([a-z_]\w*)(?!\w*::)", r"_parent.\1", args)


def _truth(x) -> str:
    """An ``if:`` condition: a bare field (a Flag is a u1) is true when not 0."""
    return f"{_expr(x)} != 0" if isinstance(x, ThisPath) else _expr(x)


class _Opaque(Exception):
    """A Python function where the walker needs an expression: :data:`_OVERRIDES` must say what it means."""


def _datatype_switch(param: str) -> dict:
    """The Kaitai type of one value of the Datatype in ``param`` (datetimes as s8, strings as bytes)."""
    return {"switch-on": param, "cases": {str(int(d)): _numpy_kaitai(value_dtype(d)) for d in Datatype}}


def _sum_switch(param: str) -> dict:
    """The Kaitai type of a sum of a field of the Datatype in ``param`` (int64, uint64 or f64, §12.6)."""
    return {"switch-on": param,
            "cases": {str(int(d)): _numpy_kaitai(_sum_dtype(Container(datatype=d))) for d in Datatype}}


# A value of a datatype passed as a parameter: domains, extents, ranges, mins and maxes.
_TYPED_VALUE = {"doc": "one value of a Datatype (datetimes and times as their int64)",
                "params": [{"id": "datatype", "type": "u1", "doc": "Datatype enum value"}],
                "seq": [{"id": "value", "type": _datatype_switch("datatype")}]}

# One [lo, hi] range of a dimension: typed values for fixed dimensions, sizes then bytes for var ones.
_ND_RANGE = {"doc": "the range of one dimension: [lo, hi] in its datatype, or (var-sized) sizes then bytes",
             "params": [{"id": "datatype", "type": "u1", "doc": "the dimension's Datatype"},
                        {"id": "is_var", "type": "bool", "doc": "the dimension is var-sized"}],
             "seq": [{"id": "range_size", "type": "u8", "if": "is_var", "doc": "bytes of start and end"},
                     {"id": "start_size", "type": "u8", "if": "is_var", "doc": "bytes of start"},
                     {"id": "start", "type": "typed_value(datatype)", "if": "not is_var", "doc": "low bound"},
                     {"id": "end", "type": "typed_value(datatype)", "if": "not is_var", "doc": "high bound"},
                     {"id": "start_var", "size": "start_size", "if": "is_var", "doc": "low bound (bytes)"},
                     {"id": "end_var", "size": "range_size - start_size", "if": "is_var",
                      "doc": "high bound (bytes)"}]}

# One MBR or non-empty domain: a range per dimension (the dimensions are the root's params).
_ND_RECTANGLE = {"doc": "one range per dimension", "seq": [
    {"id": "ranges", "type": "nd_range(_root.dim_types[_index], _root.dim_var[_index])", "repeat": "expr",
     "repeat-expr": "_root.num_dims"}]}

# The first and last coordinates of a v1-2 tile (every dimension has the domain's type).
_COORDS_PAIR = {"doc": "first and last coordinate of a tile", "seq": [
    {"id": name, "type": "typed_value(_root.dim_types[0])", "repeat": "expr", "repeat-expr": "_root.num_dims",
     "doc": f"the {name} coordinate"} for name in ("first", "last")]}

_HELPERS = {"coords_pair": (_COORDS_PAIR, ("typed_value",)), "typed_value": (_TYPED_VALUE, ()), "nd_range": (_ND_RANGE, ("typed_value",)),
            "nd_rectangle": (_ND_RECTANGLE, ("nd_range",))}
_VAR_CASE = 255  # not a Datatype: the switch key of a var-sized field


def _field_typed(dtype_fn) -> dict:
    """A helper type for a value whose numpy dtype a declaration computes from the tile's field (``field=``
    in the parse context): the function is asked once per Datatype, and once for a var-sized field."""
    def ask(datatype, var):
        field = Container(datatype=datatype, var=var, cell_val_num=VAR_NUM if var else 1)
        return _numpy_kaitai(np.dtype(dtype_fn(Container(_params=Container(field=field)))))

    cases = {str(int(d)): ask(d, False) for d in Datatype}
    cases[str(_VAR_CASE)] = ask(Datatype.CHAR, True)
    switch = {"switch-on": f"_root.field_var ? {_VAR_CASE} : _root.field_type", "cases": cases}
    return {"doc": "one value, typed by the field of the tile (the root's params)",
            "seq": [{"id": "value", "type": switch}]}

# The schema context of fragment metadata, as params of the root (a file does not hold it).
_SCHEMA_PARAMS = [
    {"id": "num_attributes", "type": "u4", "doc": "attributes of the array schema"},
    {"id": "num_dims", "type": "u4", "doc": "dimensions of the array schema"},
    {"id": "dim_types", "type": "u1[]", "doc": "Datatype of each dimension"},
    {"id": "dim_var", "type": "bool[]", "doc": "whether each dimension is var-sized"},
]
_FIELD_PARAMS = [
    {"id": "field_type", "type": "u1", "doc": "Datatype of the field this tile belongs to"},
    {"id": "field_var", "type": "bool", "doc": "whether the field is var-sized"},
]


def _dim_type(version: int) -> str:
    """A dimension's datatype, in a dimension type: its own from v5, the domain's before."""
    return "datatype.to_i" if version >= 5 else "_parent.domain_type.to_i"


def _index_count(version: int, var: bool = False) -> str:
    """Entries of the footer's per-field arrays (the index space, fragment.md): see ``index_fields``."""
    if not FEATURES["coordinates_per_dimension"](version):
        return "_root.num_attributes" if var else "_root.num_attributes + 1"
    extra = "".join(f" + ({flag} != 0 ? {n} : 0)" for flag, n, since in
                    (("has_timestamps", 1, 14), ("has_delete_meta", 2, 15)) if version >= since)
    return f"_root.num_attributes + 1 + _root.num_dims{extra}"


# What the walker cannot read: Python functions, per (type, field). Each value is a function of the version
# giving the Kaitai keys that stand for the function (and the helper types they use).
_OVERRIDES = {
    ("dimension", "domain"): lambda v: (
        {"size": "domain_size", "type": f"typed_value({_dim_type(v)})", "repeat": "eos"} if v >= 5 else
        {"size": None, "type": f"typed_value({_dim_type(v)})", "repeat": "expr", "repeat-expr": 2}),
    ("dimension", "tile_extent"): lambda v: {"if": "null_tile_extent == 0", "type": f"typed_value({_dim_type(v)})"},
    ("current_domain", "type"): lambda v: {"if": "empty == 0"},
    ("current_domain", "ndrectangle"): lambda v: {
        "if": "empty == 0", "repeat": "expr", "repeat-expr": "_parent.domain.dim_num",
        "type": "nd_range(_parent.domain.dimensions[_index].datatype.to_i, "
                f"_parent.domain.dimensions[_index].cell_val_num == {VAR_NUM})"},
    ("metadata_entry", "datatype"): lambda v: {"if": "deleted == 0"},
    ("metadata_entry", "value_num"): lambda v: {"if": "deleted == 0"},
    ("metadata_entry", "value"): lambda v: {"if": "deleted == 0", "type": "typed_value(datatype.to_i)"},
    ("comparison", "offsets_size"): lambda v: {"if": _IN_OPS},
    ("comparison", "offsets"): lambda v: {"if": _IN_OPS},
    ("entries", "delete_size"): lambda v: {"if": "uri.substring(uri.length - 4, uri.length) == '.del'"},
    ("entries", "delete"): lambda v: {"if": "uri.substring(uri.length - 4, uri.length) == '.del'"},
    ("footer_payload", "non_empty_domain"): lambda v: {
        "type": "nd_range(_root.dim_types[_index], _root.dim_var[_index])", "repeat": "expr",
        "repeat-expr": "_root.num_dims"},
}
_IN_OPS = "op == query_condition_op::in_ or op == query_condition_op::not_in"
for _name in ("file_sizes", "file_validity_sizes", "tile_offsets_offsets", "tile_validity_offsets_offsets",
              "tile_min_offsets", "tile_max_offsets", "tile_sum_offsets", "tile_null_count_offsets"):
    _OVERRIDES[("footer_payload", _name)] = lambda v: {"repeat-expr": _index_count(v)}
for _name in ("file_var_sizes", "tile_var_offsets_offsets", "tile_var_sizes_offsets"):
    _OVERRIDES[("footer_payload", _name)] = lambda v: {"repeat-expr": _index_count(v, var=True)}
_OVERRIDES[("footer_payload", "backcompat_fragment_summary_offset")] = lambda v: {
    "if": "_io.size - _io.pos == 8", "doc-suffix": "present when exactly 8 bytes are left"}
for _name in ("min_offsets", "max_offsets"):
    _OVERRIDES[("tile_global_order_offsets", _name)] = lambda v: {"repeat-expr": "_root.num_dims"}

_MBRS = {"type": "nd_rectangle", "repeat": "expr", "repeat-expr": "mbr_num"}
_FILTERED = ("opaque: the filtered (compressed, encrypted...) bytes, which Kaitai cannot unfilter; "
             "*_chunk_metadata.ksy describe each filter's metadata")
_OVERRIDES.update({
    ("tile_chunk", "metadata"): lambda v: {"doc-suffix": _FILTERED},
    ("tile_chunk", "data"): lambda v: {"doc-suffix": _FILTERED},
    ("levels", "mbrs"): lambda v: _MBRS,
    ("legacy_fragment_metadata", "non_empty_domain"): lambda v: {
        "type": "typed_value(_root.dim_types[0])", "repeat": "eos"},
    ("legacy_fragment_metadata", "mbrs"): lambda v: _MBRS,
    ("legacy_fragment_metadata", "bounding_coords"): lambda v: {"type": "coords_pair"},
    ("legacy_fragment_metadata", "tile_offsets"): lambda v: {"repeat-expr": "_root.num_attributes + 1"},
    ("legacy_fragment_metadata", "file_sizes"): lambda v: {"repeat-expr": "_root.num_attributes + 1"},
    ("tile_min_max", "fixed"): lambda v: {"type": "field_value", "repeat": "eos"},
    ("tile_sums", "data"): lambda v: {"type": "field_sum"},
    ("fragment_summary", "fields"): lambda v: {"repeat-expr": "_root.field_num", "args": "_root.field_types[_index]",
                                                 "params": [{"id": "datatype", "type": "u1",
                                                             "doc": "Datatype of this entry's field"}]},
    ("fields", "sum"): lambda v: {"type": _sum_switch("datatype")},
    ("consolidated_fragment_metadata", "footers"): lambda v: {
        "type": _registered("Fragment metadata footer"), "repeat": "expr", "repeat-expr": "fragment_num"},
    ("windows", "offset"): lambda v: {"type": "typed_value(_root.datatype)", "repeat": None},
})
for _name in ("tile_var_offsets", "tile_var_sizes", "file_var_sizes"):
    _OVERRIDES[("legacy_fragment_metadata", _name)] = lambda v: {"repeat-expr": "_root.num_attributes"}

# Params of root structures whose layout depends on context outside the file, by structure.
_PARAMS = {
    "fragment_metadata_footer": _SCHEMA_PARAMS, "r_tree": _SCHEMA_PARAMS, "fragment_metadata_v1_2": _SCHEMA_PARAMS,
    "consolidated_fragment_metadata": _SCHEMA_PARAMS,
    "tile_mins_maxes": _FIELD_PARAMS, "tile_sums": _FIELD_PARAMS,
    "fragment_min_max_sum_null_count": [
        {"id": "field_num", "type": "u4", "doc": "entries of the index space"},
        {"id": "field_types", "type": "u1[]", "doc": "Datatype of each field of the index space, in index order"}],
    "bit_width_reduction_chunk_metadata": [{"id": "datatype", "type": "u1", "doc": "Datatype of the values"}],
    "positive_delta_chunk_metadata": [{"id": "datatype", "type": "u1", "doc": "Datatype of the values"}],
}


class _Leaves:
    """How the leaves of a declaration become Kaitai fields: bounded runs, enums and values, switches."""

    def _bounded_run(self, attr, owner: str) -> dict:
        """A run of values inside a byte bound: Kaitai's ``size`` bounds each element of a ``repeat``, so
        the run becomes a type of its own, ``items`` read to the end of the bound."""
        name = f"run_{owner}_{attr['id']}"
        inner = {"id": "items", "type": _outward(attr["type"]) if isinstance(attr["type"], str) else attr["type"],
                 "repeat": "eos"}
        self.types[name] = {"doc": f"the {attr['id']} of {owner}, to the end of its bound", "seq": [inner]}
        rest = {k: v for k, v in attr.items() if k not in ("type", "repeat", "repeat-expr")}
        return {**rest, "type": name}

    def _slot(self, attr, key, keys, value, as_truth=False):
        """``attr[key]`` from a construct expression, unless the override gives it."""
        if key in keys:
            return
        attr[key] = _truth(value) if as_truth else _expr(value)

    def _inner(self, con, attr, name, keys) -> bool:
        """Fill ``attr`` from ``con`` (wrappers first); False when the field does not exist at this version."""
        while True:
            if isinstance(con, Versioned):
                if not con.present(self.version):
                    return False
            elif isinstance(con, (Bounded, construct.FixedSized)):
                self._slot(attr, "size", keys, con.length)
            elif isinstance(con, construct.LazyBound):
                con = con.subconfunc()
                continue
            elif isinstance(con, construct.IfThenElse) and con.elsesubcon is construct.Pass:
                self._slot(attr, "if", keys, con.condfunc, as_truth=True)
                con = con.thensubcon
                continue
            elif isinstance(con, (Counted, construct.Array)):
                attr["repeat"] = "expr"
                self._slot(attr, "repeat-expr", keys, con.count)
            elif isinstance(con, (RepeatToEnd, construct.GreedyRange)):
                attr["repeat"] = "eos"
            elif not isinstance(con, (construct.Renamed, construct.Rebuild, construct.Default)):
                break
            con = con.subcon
        if isinstance(keys.get("type"), construct.Construct):
            keys["type"] = self._type(keys["type"], name)
        if "type" in keys:
            if isinstance(con, NumpyArray):  # typed by the override: still a run of count values
                if keys.get("repeat", "expr") == "expr":
                    attr["repeat"] = "expr"
                    self._slot(attr, "repeat-expr", keys, con.count)
                if callable(con.dtype) and str(keys["type"]).startswith("field_"):
                    self.types[keys["type"]] = _field_typed(con.dtype)
            return True
        self._leaf(con, attr, name, keys)
        return True

    def _leaf(self, con, attr, name, keys):
        """The type of a field that has no wrapper left."""
        kind = type(con).__name__
        if isinstance(con, construct.FormatField):
            attr["type"] = _INT_TYPES[con.fmtstr[-1]]
        elif isinstance(con, type(construct.Flag)):
            attr["type"] = "u1"
        elif isinstance(con, StrictEnum):
            attr.update(type=_INT_TYPES[con.subcon.fmtstr[-1]], enum=self._enum(con.enum_cls),
                        valid={"in-enum": True})
        elif isinstance(con, (Raw, construct.Bytes)):
            self._slot(attr, "size", keys, con.length)
        elif isinstance(con, type(construct.GreedyBytes)):
            attr["size-eos"] = True
        elif isinstance(con, Text):
            attr.update(type="str", encoding="UTF-8")
            self._slot(attr, "size", keys, con.subcon.length)
        elif kind == "Line":  # commits.Line: text up to a newline
            attr.update(type="str", encoding="UTF-8", terminator=10)
        elif isinstance(con, NumpyArray):
            if callable(con.dtype):
                raise _Opaque(con.dtype)
            attr.update(type=_numpy_kaitai(con.dtype), repeat="expr")
            self._slot(attr, "repeat-expr", keys, con.count)
        elif kind == "_FormatVersionField":
            attr.update(type="u4", **({"valid": {"eq": self.version}} if con.strict else {}))
        elif kind == "VersionZero":
            attr.update(type="u4", valid={"eq": 0})
        elif kind == "_GroupVersion":
            attr.update(type="u4", valid={"any-of": [1, 2]})
        elif isinstance(con, construct.Switch):
            self._switch(con, attr, name, keys)
        elif isinstance(con, (construct.Struct, Section)):
            attr["type"] = self._type(con, name)
        elif hasattr(con, "payload") and isinstance(con.payload, construct.Construct):
            self._type(con.payload, f"{name}_payload")  # declared, for the unfiltered bytes
            attr["type"] = self._type(_generic_tile_raw(), "generic_tile")
        else:
            raise _Opaque(con)

    def _switch(self, con, attr, name, keys):
        cases = {}
        for key, sc in con.cases.items():
            sub = {}
            self._leaf(sc, sub, f"{name}_{_snake(getattr(key, 'name', str(key)))}", keys)
            if "type" in sub:
                cases[str(int(key))] = sub["type"]
        key = _expr(con.keyfunc)
        if any(a["id"] == key and "enum" in a for a in self.seq):
            key += ".to_i"
        attr["type"] = {"switch-on": key, "cases": cases}


class _Builder(_Leaves):
    """One .ksy document: a root structure and the user types, enums and helpers it uses."""

    overrides = _OVERRIDES  # what a Python function means, per (type, field)
    root_params = _PARAMS  # context a root structure needs, per structure

    def __init__(self, version: int):
        self.version = version
        self.names = _type_names()
        self.types: dict[str, dict] = {}
        self.by_id: dict[int, str] = {}
        self.enums: dict[str, dict] = {}
        self.seq: list[dict] = []

    def document(self, ident: str, structure) -> dict:
        con = structure.construct
        inner = con.subcon if isinstance(con, Section) else con
        root = self._struct_body(inner, _snake(self.names.get(id(getattr(inner, "payload", inner)), ident)))
        doc = f"{structure.title} ({structure.page}), TileDB format version {self.version}."
        payload = getattr(root.pop("_payload_of", None), "payload", None)
        if payload is not None:
            doc += (" The file is one generic tile (generic_tile.ksy): this is its unfiltered payload. Kaitai "
                    "cannot unfilter a tile (compressed, encrypted), so parse the bytes its filter pipeline "
                    "gives back.")
        meta = {"id": ident, "title": structure.title, "endian": "le", "encoding": "UTF-8",
                "ks-version": "0.11"}
        out = {"meta": meta, "doc": doc, "doc-ref": SPEC_URL + structure.page}
        if ident in self.root_params:
            out["params"] = self.root_params[ident]
        out["seq"] = root["seq"]
        if self.types:
            out["types"] = dict(sorted(self.types.items()))
        if self.enums:
            out["enums"] = dict(sorted(self.enums.items()))
        return out

    # -- types ------------------------------------------------------------------------------------------

    def _struct_body(self, con, name: str) -> dict:
        """The ``seq`` of a Struct (or of a generic tile's payload, marked ``_payload_of``)."""
        body = {}
        if hasattr(con, "payload") and isinstance(con.payload, construct.Construct):
            body["_payload_of"] = con
            con = con.payload
        while isinstance(con, (construct.Renamed, Section)):
            con = con.subcon
        if not isinstance(con, construct.Struct):  # one run of elements (a data file): one field
            con = construct.Struct("items" / con)
        seq, outer = [], self.seq
        self.seq = seq  # the fields so far, for switches on an enum field
        for i, sc in enumerate(con.subcons):
            if (a := self._field(sc, name, i)) is not None:
                seq.append(a)
        self.seq = outer
        body["seq"] = seq
        return body

    def _type(self, con, hint: str) -> str:
        """The name of the user type for Struct ``con``, declared on first use."""
        if id(con) in self.by_id:
            return self.by_id[id(con)]
        name = _snake(con.title) if isinstance(con, Section) else _snake(self.names.get(id(con), hint))
        while name in self.types or name in _HELPERS:
            name += "_"
        self.by_id[id(con)] = name
        self.types[name] = {}  # reserved now: a recursive structure refers to itself
        body = self._struct_body(con, name)
        body.pop("_payload_of", None)
        if isinstance(con, Section):
            body = {"doc": f"{con.title} ({con.page})", "doc-ref": SPEC_URL + con.page, **body}
        self.types[name] = body
        return name

    def _helper(self, name: str):
        helper, needs = _HELPERS[name]
        self.types[name] = helper
        for n in needs:
            self._helper(n)

    def _enum(self, cls) -> str:
        ident = _enum_id(cls)
        self.enums[ident] = {int(m): _member(m) for m in cls}
        return ident

    # -- fields -----------------------------------------------------------------------------------------

    def _field(self, sc, owner: str, index: int) -> dict | None:
        name = sc.name or f"unnamed{index}"
        doc = sc.docs or ""
        attr = {"id": name}
        override = self.overrides.get((owner, name))
        keys = override(self.version) if override else {}
        con = sc
        try:
            present = self._inner(con, attr, name, keys)
        except _Opaque as e:
            raise KeyError(f"{owner}.{name} at v{self.version}: a Python function ({e.args[0]!r}) needs an "
                           f"entry in tdbformat.spec.ksy._OVERRIDES") from None
        if not present:
            return None
        if "args" in keys:  # the walked type takes params (a type decided by a sibling of its parent)
            self.types[attr["type"]] = {"params": keys.pop("params"), **self.types[attr["type"]]}
            attr["type"] += f"({keys.pop('args')})"
        suffix = keys.pop("doc-suffix", "")
        attr.update(keys)
        attr = {k: v for k, v in attr.items() if v is not None}  # an override may drop a key
        if "size" in attr and "repeat" in attr:
            attr = self._bounded_run(attr, owner)
        for helper in _HELPERS:
            if re.search(rf"\b{helper}\b", json.dumps(attr.get("type", ""))):
                self._helper(helper)
        attr["doc"] = "; ".join(d for d in (doc, suffix) if d)
        if not attr["doc"]:
            del attr["doc"]
        return attr

def _registered(title: str):
    """A registered structure's construct, without its Section boundary."""
    return structures()[title].construct.subcon


def _generic_tile_raw():
    """The raw generic tile (header and chunks as stored)."""
    return _registered("Generic tile")


def ksy_documents(version: int) -> dict[str, dict]:
    """Every structure that exists at format ``version`` as a .ksy document, by file stem."""
    out = {}
    for s in structures().values():
        con = s.construct
        if isinstance(con, Section) and not con.exists(version):
            continue
        ident = _snake(s.title)
        out[ident] = _Builder(version).document(ident, s)
    return out


# ---------------------------------------------------------------------------------------------------------
# YAML

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\[\])?$")


def _scalar(x) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, str) and _PLAIN.match(x) and x not in ("true", "false", "null", "yes", "no", "on", "off"):
        return x
    return json.dumps(x, ensure_ascii=False)


def _yaml(x, indent=0) -> list[str]:
    pad = "  " * indent
    lines = []
    if isinstance(x, dict):
        for k, v in x.items():
            if isinstance(v, (dict, list)) and v:
                lines.append(f"{pad}{_scalar(k)}:")
                lines += _yaml(v, indent + 1)
            else:
                lines.append(f"{pad}{_scalar(k)}: {_scalar(v) if not isinstance(v, (dict, list)) else json.dumps(v)}")
    else:
        for v in x:
            sub = _yaml(v, indent + 1) if isinstance(v, (dict, list)) else [f"{pad}  {_scalar(v)}"]
            lines.append(f"{pad}- {sub[0].lstrip()}")
            lines += sub[1:]
    return lines


def ksy_text(document: dict) -> str:
    """A .ksy document as YAML."""
    return "\n".join(_yaml(document)) + "\n"


def export_ksy(version: int, out) -> list[Path]:
    """Write ``out/<structure>.ksy`` for format ``version``; .ksy files of structures it lacks are removed."""
    storage, out = LocalStorage(), Path(out)
    docs = ksy_documents(version)
    for name in storage.list(out):
        if name.endswith(".ksy") and name[:-4] not in docs:
            storage.delete(out / name)
    written = []
    for ident, doc in docs.items():
        written.append(out / f"{ident}.ksy")
        storage.commit(written[-1], ksy_text(doc).encode())
    return written


def write_ksy(folder) -> list[Path]:
    """Write ``folder/vNN/<structure>.ksy`` for every known version."""
    return [p for v in KNOWN_VERSIONS for p in export_ksy(v, Path(folder) / f"v{v:02d}")]
