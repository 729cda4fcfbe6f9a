"""The strict, bounded construct building blocks every declaration is made of.

construct on its own accepts unknown enum values, lets a ``Switch`` without a case read nothing, and
allocates whatever a length field asks for. These replacements do not:

- :class:`Struct` records the absolute offset of the field that failed;
- :class:`Section` is a top-level structure: it names its spec page, rejects trailing bytes and is the
  one place that turns construct's errors into :class:`~tdbformat.errors.FormatError`;
- :class:`Bounded`, :class:`Raw` and :class:`Counted` check a length against the bytes left before
  reading, and a bounded payload must be consumed exactly;
- :class:`StrictEnum` and :func:`switch` refuse values they do not know.
"""

from __future__ import annotations

import enum
import io
import threading

import construct
from construct import (
    BytesIOWithOffsets,
    ConstructError,
    Container,
    Construct,
    Rebuild,
    Subconstruct,
    evaluate,
)

from .errors import FormatError, as_format_error, located
from .versions import format_version

__all__ = [
    "Struct", "Section", "Bounded", "Raw", "Counted", "StrictEnum", "switch", "Text", "text_field",
    "remaining", "built_size", "RepeatToEnd", "Valid", "rule", "ParseMemo",
]


def rule(text: str):
    """Say in words what a function of the context computes (a length, count, condition, switch key or
    dtype), for the spec pages, which print this text in place of the function: ``rule("...")(fn)``."""
    def mark(fn):
        fn.rule = text
        return fn
    return mark


def remaining(stream) -> int:
    """Bytes left in ``stream`` after its current position."""
    if isinstance(stream, io.BytesIO):  # in memory (every parse): its size, without seeking
        with stream.getbuffer() as buf:
            return buf.nbytes - io.BytesIO.tell(stream)
    pos = stream.tell()
    end = stream.seek(0, io.SEEK_END)
    stream.seek(pos)
    return end - pos


def _need(stream, nbytes: int, path, what: str = "bytes"):
    if nbytes < 0:
        raise FormatError(f"negative length {nbytes}", path=path)
    left = remaining(stream)
    if nbytes > left:
        raise FormatError(f"{what}: expected {nbytes} bytes but only {left} are left", path=path)


def _offset(stream) -> int | None:
    try:
        return stream.tell()
    except (OSError, ValueError):  # a closed or unseekable stream has no position to report
        return None


class Struct(construct.Struct):
    """construct's Struct, reporting the absolute offset and version of a field that fails to parse."""

    def _parse(self, stream, context, path):
        obj = Container()
        context = Container(_=context, _params=context._params, _root=None, _parsing=True, _building=False,
                            _sizing=False, _subcons=self._subcons, _io=stream, _index=context.get("_index"))
        context._root = context._.get("_root", context)
        offsets = {}  # where each field starts, for inspection (hidden from equality and printing)
        ends = {}  # and where it ends: bytes between one field's end and the next one's start belong to no field
        end = _offset(stream)
        for sc in self.subcons:
            start = end
            try:
                subobj = sc._parsereport(stream, context, path)
            except (ConstructError, FormatError) as e:
                _mark(e, start, context, path + (f" -> {sc.name}" if sc.name else ""))
                raise
            end = _offset(stream)  # where this field ends is where the next one starts
            if sc.name:
                obj[sc.name] = subobj
                context[sc.name] = subobj
                offsets[sc.name] = start
                ends[sc.name] = end
        obj._offsets = offsets
        obj._ends = ends
        return obj

    def _build(self, obj, stream, context, path):
        try:
            return super()._build(obj, stream, context, path)
        except (ConstructError, FormatError) as e:
            _mark(e, _offset(stream), context, path)
            raise
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
            raise FormatError(f"cannot build from the given value: {type(e).__name__}: {e}", path=path,
                              offset=_offset(stream)) from e


def _mark(err, offset, context, path):
    """Record where an error happened (the innermost structure marks first, and wins)."""
    if isinstance(err, FormatError):
        located(err, offset=offset, path=path, version=format_version(context, required=False))
    elif getattr(err, "_tdb_offset", None) is None:
        err._tdb_offset = offset
        err._tdb_version = format_version(context, required=False)


class Section(Subconstruct):
    """A top-level structure: one section of the spec, and the boundary where errors become FormatError.

    ``whole=True`` requires that a parse consumes every byte it was given. ``since``/``until`` bound the
    format versions the structure exists in (a structure that arrived or left as a whole), for the spec
    listings; parsing goes by the versions the bytes themselves carry.
    """

    def __init__(self, title: str, page: str, subcon, whole: bool = True, since: int | None = None,
                 until: int | None = None):
        super().__init__(subcon)
        self.title, self.page, self.whole = title, page, whole
        self.since, self.until = since, until
        self.docs = f"{title} ({page})"

    def exists(self, version: int) -> bool:
        """Whether the structure is part of format ``version``."""
        return (self.since is None or version >= self.since) and (self.until is None or version < self.until)

    def __repr__(self):
        return f"<Section {self.title} ({self.page})>"

    def _fail(self, err, contextkw, stream):
        known = dict(file=contextkw.get("filename"), structure=self.title,
                     version=getattr(err, "_tdb_version", None) or contextkw.get("version"))
        if getattr(err, "_tdb_offset", None) is None and not isinstance(err, FormatError):
            known["offset"] = _offset(stream)
        return as_format_error(err, **known)

    def _parse(self, stream, context, path):
        try:
            return self.subcon._parsereport(stream, context, path)
        except (ConstructError, FormatError) as e:
            if isinstance(e, FormatError):
                located(e, structure=self.title)
            raise

    def _build(self, obj, stream, context, path):
        try:
            return self.subcon._build(obj, stream, context, path)
        except (ConstructError, FormatError) as e:
            if isinstance(e, FormatError):
                located(e, structure=self.title)
            raise

    def parse(self, data, **contextkw):
        """Parse ``data`` (bytes-like). Keyword arguments (``version=``, ``schema=``, ``key=``...) give context."""
        return self.parse_stream(BytesIOWithOffsets(bytes(data), None, 0), **contextkw)

    def parse_stream(self, stream, **contextkw):
        try:
            obj = super().parse_stream(stream, **contextkw)
            if self.whole and remaining(stream):
                raise FormatError(f"{remaining(stream)} trailing bytes after the structure", offset=stream.tell())
            return obj
        except (ConstructError, FormatError) as e:
            raise self._fail(e, contextkw, stream) from None

    def build_stream(self, obj, stream, **contextkw):
        try:
            return super().build_stream(obj, stream, **contextkw)
        except (ConstructError, FormatError) as e:
            raise self._fail(e, contextkw, stream) from None

    def sizeof(self, **contextkw):
        try:
            return super().sizeof(**contextkw)
        except (ConstructError, FormatError) as e:
            raise as_format_error(e, structure=self.title) from None


class ParseMemo:
    """The last ``size`` results of one structure's parses, by the exact bytes parsed.

    A file TileDB wrote never changes under its name, and a process opens the same arrays again and again;
    each open parses every schema (construct: about 0.7 ms a schema). Each call hands out a fresh copy of
    the containers and lists, so a caller that edits its result changes no one else's. Only for parses
    whose result depends on the bytes alone (no key, no context beyond the file name of errors).
    """

    def __init__(self, section: Section, size: int = 64, largest: int = 1 << 18, copy=None):
        self.section, self.size, self.largest = section, size, largest  # at most size * largest bytes kept
        self.copy = _fresh if copy is None else copy  # what each call hands out of a kept result
        self._seen: dict[tuple, object] = {}
        self._lock = threading.Lock()

    def parse(self, data, filename=None, context: tuple = (), **kw):
        """``section.parse(data, filename=filename, **kw)``, kept by ``data`` and ``context``: what else
        the result depends on (``kw`` must follow from it)."""
        data = bytes(data)
        if len(data) > self.largest:
            return self.section.parse(data, filename=filename, **kw)
        key = (data, context)
        with self._lock:
            hit = self._seen.get(key)
        if hit is None:
            hit = self.section.parse(data, filename=filename, **kw)  # errors are not kept: they raise again
            with self._lock:
                if len(self._seen) >= self.size:
                    del self._seen[next(iter(self._seen))]
                self._seen[key] = hit
        return self.copy(hit)


def _fresh(obj):
    """A copy of a parse result's containers and lists (values themselves are immutable); entries whose
    name starts with ``_`` (offsets and headers kept for inspection, never edited) are shared."""
    kind = type(obj)
    if issubclass(kind, dict):
        return kind((k, v if isinstance(k, str) and k.startswith("_") else _fresh(v)) for k, v in obj.items())
    if issubclass(kind, list):
        return kind(_fresh(v) for v in obj)
    return obj


class Bounded(Subconstruct):
    """``subcon`` parsed inside exactly ``length`` bytes: it may neither run past them nor leave any."""

    def __init__(self, length, subcon, what: str = "payload"):
        super().__init__(subcon)
        self.length, self.what = length, what
        self.flagbuildnone = subcon.flagbuildnone

    def _parse(self, stream, context, path):
        length = evaluate(self.length, context)
        what = evaluate(self.what, context)
        _need(stream, length, path, what)
        sub = BytesIOWithOffsets.from_reading(stream, length, path)
        obj = self.subcon._parsereport(sub, context, path)
        left = remaining(sub)
        if left:
            raise FormatError(f"{what}: the size field says {length} bytes but the layout takes "
                              f"{length - left}", path=path, offset=sub.tell())
        return obj

    def _build(self, obj, stream, context, path):
        sub = io.BytesIO()
        ret = self.subcon._build(obj, sub, context, path)
        data = sub.getvalue()
        length = evaluate(self.length, context)
        if length != len(data):
            raise FormatError(f"{evaluate(self.what, context)}: the size field says {length} bytes but the layout takes "
                              f"{len(data)}", path=path)
        stream.write(data)
        return ret

    def _sizeof(self, context, path):
        return evaluate(self.length, context)


class Raw(Construct):
    """``length`` raw bytes, checked against the bytes left before they are read."""

    def __init__(self, length, what: str = "bytes"):
        super().__init__()
        self.length, self.what = length, what

    def _parse(self, stream, context, path):
        length = evaluate(self.length, context)
        _need(stream, length, path, self.what)
        return stream.read(length)

    def _build(self, obj, stream, context, path):
        data = bytes(obj)
        length = evaluate(self.length, context)
        if length != len(data):
            raise FormatError(f"{self.what}: the length field says {length} bytes but {len(data)} were given",
                              path=path)
        stream.write(data)
        return data

    def _sizeof(self, context, path):
        return evaluate(self.length, context)


class Counted(Subconstruct):
    """``count`` elements of ``subcon``; the count is checked against the bytes left before parsing."""

    def __init__(self, count, subcon, min_size: int = 1):
        super().__init__(subcon)
        self.count, self.min_size = count, min_size

    def _parse(self, stream, context, path):
        count = evaluate(self.count, context)
        _need(stream, count * self.min_size, path, f"{count} elements")
        out = construct.ListContainer()
        for i in range(count):
            context._index = i
            out.append(self.subcon._parsereport(stream, context, path))
        return out

    def _build(self, obj, stream, context, path):
        count = evaluate(self.count, context)
        if count != len(obj):
            raise FormatError(f"the count field says {count} elements but {len(obj)} were given", path=path)
        out = construct.ListContainer()
        for i, item in enumerate(obj):
            context._index = i
            out.append(self.subcon._build(item, stream, context, path))
        return out

    def _sizeof(self, context, path):
        return evaluate(self.count, context) * self.subcon._sizeof(context, path)


class StrictEnum(construct.Adapter):
    """An integer field whose value must be a member of ``enum_cls`` (an IntEnum); parses to the member."""

    def __init__(self, subcon, enum_cls: type[enum.IntEnum]):
        super().__init__(subcon)
        self.enum_cls = enum_cls

    def _decode(self, obj, context, path):
        try:
            return self.enum_cls(obj)
        except ValueError:
            raise FormatError(f"{obj} is not a known {self.enum_cls.__name__}", path=path) from None

    def _encode(self, obj, context, path):
        try:
            if isinstance(obj, str):
                return int(self.enum_cls[obj])
            return int(self.enum_cls(obj))
        except (KeyError, ValueError):
            raise FormatError(f"{obj!r} is not a known {self.enum_cls.__name__}", path=path) from None


class Valid(construct.Renamed):
    """``subcon`` whose parsed value must satisfy ``check(value, context)``: a rule of the format that its
    readers rely on (an allocation, a reshape) and that the layout alone does not enforce. A rule adds no
    bytes, so the spec tables peel it like a name and show ``subcon``."""

    def __init__(self, subcon, check, reason: str):
        super().__init__(subcon)
        self.check, self.reason = check, reason

    def _parse(self, stream, context, path):
        obj = self.subcon._parsereport(stream, context, path)
        if not self.check(obj, context):
            raise FormatError(f"{self.reason} (found {obj if isinstance(obj, int) else len(obj)})", path=path)
        return obj

    def _build(self, obj, stream, context, path):
        return self.subcon._build(obj, stream, context, path)


class _Reject(Construct):
    def __init__(self, what):
        super().__init__()
        self.what = what
        self.flagbuildnone = True

    def _parse(self, stream, context, path):
        raise FormatError(self.what, path=path)

    def _build(self, obj, stream, context, path):
        raise FormatError(self.what, path=path)

    def _sizeof(self, context, path):
        raise construct.SizeofError(self.what, path=path)


def switch(key, cases: dict, what: str):
    """A Switch whose unknown keys are errors (construct's default reads nothing)."""
    return construct.Switch(key, cases, default=_Reject(what))


class Text(construct.Adapter):
    """``length`` bytes of UTF-8 text; bytes that are not UTF-8 survive a round trip unchanged."""

    def __init__(self, length):
        super().__init__(Raw(length, "text"))

    def _decode(self, obj, context, path):
        return obj.decode("utf-8", "surrogateescape")

    def _encode(self, obj, context, path):
        return obj.encode("utf-8", "surrogateescape") if isinstance(obj, str) else bytes(obj)


def text_length(key):
    """The encoded byte length of the text field ``key``, for a Rebuild."""
    def length(ctx):
        value = ctx[key]
        return len(value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value)
    return length


def text_field(name: str, length_type, doc: str):
    """A length-prefixed text: ``<name>_len`` then ``<name>``, as the spec tables write them."""
    return (
        f"{name}_len" / Rebuild(length_type, text_length(name)) * f"bytes of {name}",
        name / Text(construct.this[f"{name}_len"]) * doc,
    )


def built_size(key, subcon):
    """The number of bytes ``subcon`` builds from the value of field ``key``, for a Rebuild size field."""
    def size(ctx):
        sub = io.BytesIO()
        subcon._build(ctx[key], sub, ctx, "(size)")
        return len(sub.getvalue())
    return size


class RepeatToEnd(Subconstruct):
    """``subcon`` repeated until the stream ends; an element that fails to parse is an error, not the end."""

    def _parse(self, stream, context, path):
        out = construct.ListContainer()
        while remaining(stream):
            context._index = len(out)
            out.append(self.subcon._parsereport(stream, context, path))
        return out

    def _build(self, obj, stream, context, path):
        for i, item in enumerate(obj):
            context._index = i
            self.subcon._build(item, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise construct.SizeofError("a run to the end of the data has no static size", path=path)
