"""The format as data: every structure's fields at any version, and what changed between versions.

Everything here is computed from the declarations alone, by walking their construct trees; nothing is
parsed. :func:`fields` flattens one structure at one version into rows (path, type, size or length rule,
condition, doc); :func:`aligned` lines two versions' rows up field by field and :func:`diff` keeps the
rows that differ. :func:`structures` finds the top-level structures by itself: every :class:`Section`
in ``tdbformat.structs.*`` and every filter codec's per-chunk metadata Struct, so new declarations show
up without edits here. Constructs the walker does not know are shown as opaque, never an error.

``tdbformat spec --write spec_versions`` regenerates the per-version docs (see spec/render.py).
"""

from __future__ import annotations

import difflib
import enum
import functools
import importlib
import pkgutil
import re
from dataclasses import dataclass, replace

import construct
from construct import ConstructError

from ..errors import FormatError
from ..fields import Bounded, Counted, Raw, RepeatToEnd, Section, StrictEnum, Text, _Reject
from ..numpy_array import NumpyArray
from ..versions import FEATURES, KNOWN_VERSIONS, Feature, Versioned

__all__ = ["Field", "Structure", "Change", "Part", "fields", "structures", "structure", "aligned", "diff",
           "metadata_file_layout", "footer_lookup"]


@dataclass(frozen=True)
class Field:
    """One row of a structure's layout at one version."""

    path: str  #: ``domain.dimensions[].datatype``; ``[]`` marks the element of a repeated field
    type: str  #: ``u32``, ``char[]``, ``numpy u64[]``, ``Datatype (u8)``, a structure's name...
    size: str  #: static bytes (``"4"``), or the rule the length follows (``"num_filters × var"``)
    gate: str  #: version gate in force (``"v>=7"``), or ""
    case: str  #: switch or if condition in force (``"type == GZIP"``), or ""
    doc: str

    @property
    def condition(self) -> str:
        return " and ".join(c for c in (self.gate, self.case) if c)

    @property
    def key(self):
        """What identifies a field across versions: its path and its non-version condition."""
        return self.path, self.case

    @property
    def layout(self):
        """What a change of bytes changes."""
        return self.type, self.size


@dataclass(frozen=True)
class Structure:
    """A top-level structure: a Section, or a filter's per-chunk metadata."""

    title: str
    page: str
    construct: object


@dataclass(frozen=True)
class Change:
    """A field added, removed or changed between two versions; ``version`` is where the change arrived."""

    structure: str
    kind: str  #: "added", "removed" or "changed"
    old: Field | None
    new: Field | None
    version: int

    @property
    def path(self) -> str:
        return (self.new or self.old).path


# ---------------------------------------------------------------------------------------------------------
# Reading a construct tree

_FORMAT_TYPES = {"B": "u8", "H": "u16", "I": "u32", "L": "u32", "Q": "u64", "b": "i8", "h": "i16", "i": "i32",
                 "l": "i32", "q": "i64",
                 "e": "f16", "f": "f32", "d": "f64"}
_NO_BYTES = (construct.Computed, construct.Check, construct.StopIf, type(construct.Terminated), type(construct.Pass))


def _expr(x) -> str:
    """A length, count or switch key as text: ``this.num_filters`` reads ``num_filters``."""
    if isinstance(x, int):
        return str(x)
    if isinstance(x, construct.expr.ExprMixin):
        text = re.sub(r"this\['([^']+)'\]", r"\1", repr(x)).replace("this._.", "_.")
        return re.sub(r"<\w+\.(\w+): -?\d+>", r"\1", text)  # enum members by name
    if getattr(x, "rule", None):  # a function that says what it computes (fields.rule)
        return x.rule
    name = getattr(x, "__name__", "")
    return name if name and name != "<lambda>" and not name.startswith("_") else "computed"


def _case(key) -> str:
    return key.name if isinstance(key, enum.Enum) else repr(key)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _leaf(con):
    """(type, static size or length rule) of a construct with no fields of its own, else None."""
    if isinstance(con, construct.FormatField):
        return _FORMAT_TYPES.get(con.fmtstr[-1], con.fmtstr), con.length
    if isinstance(con, construct.BytesInteger):
        return f"{'i' if con.signed else 'u'}{8 * con.length}" if isinstance(con.length, int) else "int", con.length
    if isinstance(con, type(construct.Flag)):
        return "bool", 1
    if isinstance(con, construct.Bytes):
        n = con.length
        return (f"u8[{n}]" if isinstance(n, int) else "u8[]"), (n if isinstance(n, int) else _expr(n))
    if isinstance(con, type(construct.GreedyBytes)):
        return "u8[]", "to the end"
    if isinstance(con, Raw):
        return "u8[]", con.length if isinstance(con.length, int) else _expr(con.length)
    if isinstance(con, Text):
        return "char[]", _leaf(con.subcon)[1]
    if isinstance(con, NumpyArray):
        if callable(con.dtype):  # a dtype the schema decides: its rule says which
            return f"numpy array of {_expr(con.dtype)}", f"{_group(_expr(con.count))} × the element size"
        n, dtype, itemsize = con.count, _numpy_type(con.dtype), con.dtype.itemsize
        if isinstance(n, int):
            return f"numpy {dtype}[{n}]", n * itemsize
        return f"numpy {dtype}[]", f"{_group(_expr(n))} × {itemsize}"
    if isinstance(con, StrictEnum):
        return f"{con.enum_cls.__name__} ({_leaf(con.subcon)[0]})", _leaf(con.subcon)[1]
    if isinstance(con, construct.Enum):
        return f"enum ({_leaf(con.subcon)[0]})", _leaf(con.subcon)[1]
    if isinstance(con, construct.Const):
        typ, size = _leaf(con.subcon) or ("const", None)
        return f"{typ} = {con.value!r}", size
    if isinstance(con, construct.Padded) and con.subcon is construct.Pass:
        return "padding", con.length
    return None


def _numpy_type(dtype) -> str:
    """A numpy dtype in this module's names: ``<u8`` (numpy counts bytes) is u64."""
    if dtype.kind in "uif":
        return f"{dtype.kind}{8 * dtype.itemsize}"
    return {"b": "bool", "S": "char"}.get(dtype.kind, dtype.str.lstrip("<>|="))


def _opaque_size(con, version):
    """The static size of a construct we cannot read, if construct can tell without a context."""
    try:
        return con.sizeof(version=version)
    except (ConstructError, FormatError, LookupError, AttributeError, TypeError):  # sized by context we lack
        return None


class _Walker:
    def __init__(self, version: int):
        self.version = version
        self.names = _type_names()

    def name_of(self, con, default: str) -> str:
        if isinstance(con, Section):
            return con.title
        return self.names.get(id(con), default)

    def rows(self, con, path: str, gate: str = "", case: str = "", doc: str = "", stack=()):
        """(rows, static size or rule): the node's own row first, then its fields."""
        size_rule = None
        while True:  # peel the wrappers that only add a name, a doc, a gate or a bound
            if isinstance(con, construct.Renamed):
                doc = doc or (con.docs or "")
            elif isinstance(con, Versioned):
                if not con.present(self.version):
                    return [], 0
                gate = " and ".join(g for g in (gate, _gate(con)) if g)
            elif isinstance(con, (Bounded, construct.FixedSized)):
                size_rule = size_rule or _expr(con.length)
            elif isinstance(con, construct.Prefixed):
                size_rule = size_rule or f"{_leaf(con.lengthfield)[0]} length prefix"
            elif isinstance(con, construct.LazyBound):
                con = con.subconfunc()
                continue
            elif not isinstance(con, (construct.Rebuild, construct.Default)):
                break
            con = con.subcon

        def node(typ, size, children=()):
            size = size_rule if size_rule is not None else size
            row = Field(path, typ, "var" if size is None else str(size), gate, case, doc)
            return [row, *children], size

        if isinstance(con, _NO_BYTES):
            return [], 0
        if isinstance(getattr(con, "spec_type", None), str):  # a construct of ours that describes itself
            return node(con.spec_type, getattr(con, "spec_size", None) or _opaque_size(con, self.version))
        leaf = _leaf(con)
        if leaf is not None:
            return node(*leaf)
        if id(con) in stack:  # a recursive structure (a condition tree): list it once
            return node(f"{self.name_of(con, type(con).__name__)} (recursive)", None)
        stack = (*stack, id(con))
        sub = functools.partial(self._sub, gate=gate, case=case, stack=stack)

        if isinstance(con, Section):
            if path:  # a structure of its own, listed on its own: referenced here, as the spec pages do
                return node(con.title, None)
            rows, size = self.rows(con.subcon, path, gate, case, doc, stack)
            return node(con.title, size, rows[1:])
        if isinstance(con, (construct.Struct, construct.Sequence, construct.FocusedSeq)):
            children, total = [], 0
            for i, sc in enumerate(con.subcons):
                rows, size = sub(sc, _join(path, sc.name or f"_{i}"))
                children += rows
                total = total + size if isinstance(total, int) and isinstance(size, int) else None
            return node(self.name_of(con, "struct"), total, children)
        if isinstance(con, (Counted, construct.Array, RepeatToEnd, construct.GreedyRange)):
            rows, size = sub(con.subcon, path + "[]")
            count = _expr(con.count) if hasattr(con, "count") else "until the end"
            each = "var" if size is None else size
            total = int(count) * size if count.isdigit() and isinstance(size, int) \
                else f"{_group(count)} × {_group(each)}"
            return node(f"{rows[0].type}[]" if rows else "[]", total, rows[1:])
        if isinstance(con, construct.Switch):
            return node(f"switch on {_expr(con.keyfunc)}", None, self._cases(con, path, gate, case, stack))
        if isinstance(con, construct.IfThenElse):  # its branches' rows stand for it, each with its condition
            cond = _expr(con.condfunc)
            rows = self.rows(con.thensubcon, path, gate, _and(case, cond), doc, stack)[0]
            rows += self.rows(con.elsesubcon, path, gate, _and(case, f"not {_group(cond)}"), doc, stack)[0]
            return rows, (None if rows else 0)
        payload = getattr(con, "payload", None)
        if isinstance(payload, construct.Construct):  # generic_tile(payload): a tile whose bytes are payload
            rows, _ = sub(payload, path)
            label = getattr(con, "container_name", "generic tile")  # or the gzip file of 0.x
            return node(f"{label} of {rows[0].type}" if rows else label, None, rows[1:])
        if isinstance(getattr(con, "subcon", None), construct.Construct):  # an adapter we do not know
            rows, size = sub(con.subcon, path)
            inner = rows[0].type if rows else ""
            return node(f"{self.name_of(con, type(con).__name__)}({inner})", size, rows[1:])
        return node(f"<{type(con).__name__}>", _opaque_size(con, self.version))

    def _sub(self, con, path, gate, case, stack):
        return self.rows(con, path, gate, case, con.docs or "", stack)

    def _cases(self, con, path, gate, case, stack):
        groups = {}  # one condition per distinct layout, in the order the cases are declared
        for key, sc in con.cases.items():
            groups.setdefault(id(sc), (sc, []))[1].append(_case(key))
        keyname = _expr(con.keyfunc)
        rows = []
        for sc, keys in groups.values():
            cond = f"{keyname} in ({', '.join(keys)})" if len(keys) > 1 else _is(keyname, keys[0])
            rows += self.rows(sc, path, gate, _and(case, cond), "", stack)[0]
        if not isinstance(con.default, _Reject):
            rows += self.rows(con.default, path, gate, _and(case, f"{keyname} is another value"), "", stack)[0]
        return rows


def _is(keyname: str, key: str) -> str:
    """A switch case as a condition; a yes/no key (a rule that holds or not) reads as the rule or its negation."""
    return {"True": keyname, "False": f"not {_group(keyname)}"}.get(key, f"{_group(keyname)} == {key}")


def _group(text) -> str:
    """A rule in words, bracketed where an operator follows or precedes it."""
    text = str(text)
    return f"({text})" if " " in text and not text.startswith("(") else text


def _and(a: str, b: str) -> str:
    return f"{a} and {b}" if a else b


def _gate(v: Versioned) -> str:
    if isinstance(v.lo, tuple):  # a library-version gate of the 1.x dialect (versions.LibraryGate)
        return f"library {v.span()}"
    if v.lo is not None and v.hi is not None:
        return f"{v.lo}<=v<{v.hi}"
    return f"v>={v.lo}" if v.hi is None else f"v<{v.hi}"


def fields(struct, version: int) -> list[Field]:
    """The fields of ``struct`` (a Structure, Section or any construct) at format ``version``, in order."""
    con = struct.construct if isinstance(struct, Structure) else struct
    if isinstance(con, Section) and not con.exists(version):
        return []
    return _fields(con, version)


@functools.cache
def _fields(con, version: int) -> list[Field]:
    rows, _ = _Walker(version).rows(con, "")
    if len(rows) == 1:  # a structure that is one run of elements (a data file): its one row
        return [replace(rows[0], path="[]")]
    return rows[1:]  # the structure's own row is its title


# ---------------------------------------------------------------------------------------------------------
# The fragment metadata file


@dataclass(frozen=True)
class Part:
    """One part of a file, in file order."""

    name: str
    what: str  #: the structure it holds
    count: str  #: how many there are
    where: str  #: how a reader finds it
    offsets_in: str = ""  #: the footer field with its offset(s), if the footer has one


def footer_lookup(version: int) -> tuple[str, list[Field]]:
    """How a reader finds the footer of a v3+ fragment metadata file at ``version`` (REFERENCE §12.1), and,
    where its size is computed rather than stored, the footer fields whose sizes add up to it."""
    from ..structs.footer import Footer

    # TileDB: FragmentMetadata::get_footer_offset_and_size, footer_size_v3_v4/_v5_v6/_v7_v9
    stored = ("the file's last 8 bytes are the footer length L (u64); the footer is the L bytes before them, "
              "at file size - 8 - L")
    if FEATURES["footer_length"](version):
        return f"Always: {stored}.", []
    computed = ("no footer length is stored: the footer is the last S bytes of the file, S computed from the "
                "array schema for the version in the fragment's name (a name without one: v4) as the sum of "
                "the footer's field sizes below, each dimension's non-empty domain being two values of its type")
    if FEATURES["footer_length_with_var_dimensions"](version):
        return f"When a dimension is var-sized: {stored}. When all dimensions are fixed-sized: {computed}.", \
            fields(Footer, version)
    return f"Always: {computed}.", fields(Footer, version)


def metadata_file_layout(version: int) -> list[Part]:
    """The parts of a v3+ ``__fragment_metadata.tdb`` at ``version``, in file order: the sections (generic
    tiles) in the writer's order (§12.1), the footer, then its length where one is stored; [] before v3."""
    from ..structs.footer import Footer
    from ..structs.fragment import SECTIONS

    if not Footer.exists(version):
        return []
    present = {f.path for f in fields(Footer, version)}
    out = []
    for s in SECTIONS:
        key = f"optional_sections[].data.{s.key}" if s.sub else s.key
        what, count = f"generic tile: {s.construct.title}", _expr(s.fields) if s.fields else "1"
        if key in present:
            where = f"at the offset(s) in footer `{key}`"
            if s.sub:  # written only with the optional section that records them
                where += " (only if the footer has that optional section)"
            out.append(Part(s.name, what, count, where, key))
        elif s.written_since is not None and version >= s.written_since:
            out.append(Part(s.name, what, count, "after the last tile the footer points to: TileDB writes it, "
                            "but the footer of this version has no field for its offset (readers skip it)"))
    out.append(Part("footer", Footer.title, "1", "the footer lookup below"))
    if FEATURES["footer_length"](version) or FEATURES["footer_length_with_var_dimensions"](version):
        only = "" if FEATURES["footer_length"](version) else " (only when a dimension is var-sized)"
        out.append(Part("footer length", "u64: the footer's size in bytes" + only, "1", "the last 8 bytes"))
    return out


# ---------------------------------------------------------------------------------------------------------
# The registry

def _modules():
    """Every module of tdbformat.structs and tdbformat.filters, imported."""
    from .. import filters, structs

    out = []
    for pkg in (structs, filters):
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
            out.append(importlib.import_module(f"{pkg.__name__}.{info.name}"))
    return out


@functools.cache
def _type_names() -> dict[int, str]:
    """Public module-level names of declared constructs, to name nested structures' types."""
    names = {}
    for mod in _modules():
        for name, obj in vars(mod).items():
            while isinstance(obj, construct.Construct) and not name.startswith("_"):
                names.setdefault(id(obj), name)
                obj = obj.subcon if isinstance(obj, construct.Renamed) else None
    return names


def structures() -> dict[str, Structure]:
    """Every top-level structure, by title: the Sections of tdbformat.structs.*, then filter metadata."""
    found, seen = {}, set()

    def add(title, page, con):
        if id(con) in seen:
            return
        seen.add(id(con))
        found[title if title not in found else f"{title} ({page})"] = Structure(title, page, con)

    for mod in _modules():
        if mod.__name__.startswith("tdbformat.structs."):
            for obj in vars(mod).values():
                if isinstance(obj, Section):
                    add(obj.title, obj.page, obj)
    from ..enums import FilterType
    from ..filters import CODECS

    by_metadata = {}
    for ftype in sorted(CODECS):
        md = CODECS[ftype].metadata
        if isinstance(md, construct.Construct):
            by_metadata.setdefault(id(md), (md, []))[1].append(FilterType(ftype).name)
    for md, types in by_metadata.values():
        add(f"{', '.join(types)} chunk metadata", "tile.md", md)
    return found


def structure(name: str) -> Structure:
    """A registered structure by its title (case-insensitive)."""
    for title, s in structures().items():
        if title.lower() == name.lower():
            return s
    raise KeyError(f"no structure {name!r}; known: {', '.join(structures())}")


# ---------------------------------------------------------------------------------------------------------
# Comparing versions

def aligned(struct, a: int, b: int) -> list[tuple[Field | None, Field | None]]:
    """The fields of ``struct`` at versions ``a`` and ``b`` lined up: (left, right), None where absent."""
    left, right = fields(struct, a), fields(struct, b)
    lk, rk = [f.key for f in left], [f.key for f in right]
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, lk, rk, autojunk=False).get_opcodes():
        if op == "equal":
            out += zip(left[i1:i2], right[j1:j2])
        else:
            out += [(f, None) for f in left[i1:i2]] + [(None, f) for f in right[j1:j2]]
    return out


def _state(struct, key, version):
    return next((f.layout for f in fields(struct, version) if f.key == key), None)


def _arrival(struct, key, a: int, b: int) -> int:
    """The version, between a and b, from which the field is as it is at the later of the two."""
    lo, hi = min(a, b), max(a, b)
    states = [_state(struct, key, v) for v in range(lo, hi + 1)]
    return lo + max(i for i in range(1, len(states)) if states[i] != states[i - 1])


#: the name ``diff`` gives the behaviour gates (:data:`~tdbformat.versions.FEATURES`) that switch
BEHAVIOUR = "Behaviour gates"


def diff(a: int, b: int, struct: str | None = None) -> list[Change]:
    """Fields added, removed or changed from version ``a`` to ``b``, per structure (or one), in order; then
    the behaviour gates that switch on or off, as changes of :data:`BEHAVIOUR`."""
    for v in (a, b):
        if v not in KNOWN_VERSIONS:
            raise FormatError(f"format version {v} is not one of the known versions 1 to {KNOWN_VERSIONS[-1]}")
    chosen = [] if struct == BEHAVIOUR else [structure(struct)] if struct else structures().values()
    out = []
    for s in chosen:
        for old, new in aligned(s, a, b):
            if old is None or new is None or old.layout != new.layout:
                kind = "added" if old is None else "removed" if new is None else "changed"
                out.append(Change(s.title, kind, old, new, _arrival(s, (old or new).key, a, b)))
    if struct in (None, BEHAVIOUR):
        for on, f in feature_changes(a, b):
            row = Field(f.name, "behaviour", "", f.span(), "", f.doc)
            switch = f.since if (on == "on") == (a < b) else f.until
            out.append(Change(BEHAVIOUR, "added" if on == "on" else "removed", None if on == "on" else row,
                              row if on == "on" else None, switch))
    return out


def feature_changes(a: int, b: int) -> list[tuple[str, Feature]]:
    """Behaviour gates (:data:`~tdbformat.versions.FEATURES`) that switch from version ``a`` to ``b``:
    ``("on" | "off", feature)``, in declaration order."""
    return [("on" if f(b) else "off", f) for f in FEATURES.values() if f(a) != f(b)]


def features(version: int) -> list[Feature]:
    """The behaviour gates in force at ``version``."""
    return [f for f in FEATURES.values() if f(version)]
