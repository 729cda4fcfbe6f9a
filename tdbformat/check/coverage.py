"""Byte coverage and the labelled hex view of a file, from the declarations: every :class:`~tdbformat.fields.Struct`
records where each named field starts and ends (``_offsets``, ``_ends``), so a parsed file says which field
every byte belongs to, and the bytes no field accounts for are what is left.

A file has up to two byte spaces: the file itself, and the unfiltered payload of each generic tile in it
(whose fields count from the payload's start). A fragment metadata file is walked section by section, where
its footer points, then the footer and its length.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout.files import parse_file
from ..show.render import _scalar
from ..storage import storage_for
from ..structs.footer import has_footer_length
from ..structs.fragment import SECTIONS, Footer, find_footer

__all__ = ["Span", "spans", "field_spans", "metadata_spans", "gaps", "coverage", "hexdump"]


@dataclass
class Span:
    """Bytes ``[start, end)`` of a byte ``space`` ("file", or "payload@N": the unfiltered payload of the generic
    tile at file offset N) that field ``path`` (None: no field) holds."""

    space: str
    start: int
    end: int
    path: str | None
    value: object = None


def _walk(value, prefix: str, base: int, space: str, out: list) -> None:
    """The leaf fields of a parsed Container (and the generic tiles inside it) as spans."""
    if not isinstance(value, dict):  # a value parsed whole (a pre-v1 data file's bytes): no fields inside
        return
    if isinstance(value, dict) and value.get("_generic_tile") is not None:
        gt_at = value["_generic_tile"]._offsets.get("version", 0) + base
        _walk(value["_generic_tile"], f"{prefix}generic_tile.", base, space, out)
        inner = f"payload@{gt_at}"
        payload = bytes(value.get("_unfiltered") or b"")
        out.append(Span(inner, 0, len(payload), None, payload))  # the space itself: its size and bytes
        value = {k: v for k, v in value.items() if k not in ("_generic_tile", "_unfiltered")} | {
            "_offsets": value._offsets, "_ends": value._ends}
        base, space = 0, inner
    starts, ends = value.get("_offsets") or {}, value.get("_ends") or {}
    for name, start in starts.items():
        v, path = value[name], f"{prefix}{name}"
        if isinstance(v, dict) and v.get("_offsets") is not None:
            _walk(v, path + ".", base, space, out)
        elif isinstance(v, list) and v and all(isinstance(x, dict) and x.get("_offsets") is not None for x in v):
            for i, x in enumerate(v):
                _walk(x, f"{path}[{i}].", base, space, out)
        elif ends.get(name, start) > start:
            out.append(Span(space, base + start, base + ends[name], path, v))


def field_spans(value, space: str = "file") -> list[Span]:
    """The leaf fields of a parsed value (a Container from a declaration) as spans, in the order declared."""
    out: list[Span] = []
    _walk(value, "", 0, space, out)
    return out


def metadata_spans(fm, data: bytes, name: str) -> list[Span]:
    """The spans of a parsed fragment metadata file ``fm`` (its bytes ``data``, its fragment ``name``)."""
    out: list[Span] = []
    _fragment_metadata(fm, data, name, out)
    return out


def _fragment_metadata(fm, data: bytes, name: str, out: list) -> None:
    """A v3+ metadata file: each section where the footer points, the footer, its length."""
    if fm.legacy is not None:
        return _walk(fm.legacy, "", 0, "file", out)
    for slot in SECTIONS:
        for i, at in enumerate(slot.offsets(fm.footer) or []):
            _walk(fm._payload(slot, i), f"{slot.name}[{i}].", at, "file", out)
    start, size, stored = find_footer(data, fm.schema, fm.version, name)
    if fm.unreferenced and fm.version == 15:  # v15 writes a processed-conditions tile that only v16+ footers
        # point to (REFERENCE §17 #7); at other versions, bytes between the sections and the footer are a gap
        out.append(Span("file", start - len(fm.unreferenced), start, "unreferenced", bytes(fm.unreferenced)))
    _walk(Footer.parse(data[start:start + size], schema=fm.schema), "footer.", start, "file", out)
    if stored and has_footer_length(fm.version, fm.schema):
        out.append(Span("file", start + size, start + size + 8, "footer_length", size))


def spans(path, key=None) -> tuple[bytes, list[Span]]:
    """The file's bytes, and every byte range a field holds (leaf fields, in file order per space)."""
    storage, p = storage_for(path)
    parsed = parse_file(p, key=key)
    data = storage.read(p, what="file")
    out: list[Span] = []
    if parsed.kind == "fragment_metadata":
        _fragment_metadata(parsed.value, data, storage.name(storage.parent(p)), out)
    elif isinstance(parsed.value, list):  # a data file: tiles back to back
        for i, tile in enumerate(parsed.value):
            _walk(tile, f"[{i}].", 0, "file", out)
    elif parsed.value is not None:
        _walk(parsed.value, "", 0, "file", out)
    out.sort(key=lambda s: (s.space != "file", s.space, s.start, s.path is None))
    return data, out


def _spaces(data: bytes, found: list[Span]) -> dict:
    """``{space: its bytes}``: the file, and each generic tile's unfiltered payload."""
    return {"file": data} | {s.space: s.value for s in found if s.path is None}


def gaps(fields: list[Span], space: str, size: int) -> list[Span]:
    """The ranges of ``[0, size)`` of ``space`` that no span of ``fields`` holds."""
    out, at = [], 0
    for s in sorted((s for s in fields if s.space == space and s.path is not None), key=lambda s: s.start):
        if s.start > at:
            out.append(Span(space, at, s.start, None))
        at = max(at, s.end)
    if at < size:
        out.append(Span(space, at, size, None))
    return out


def coverage(path, key=None) -> list[Span]:
    """The byte ranges of the file (and of each generic tile's payload) that no field accounts for."""
    data, found = spans(path, key)
    return [g for space, buf in _spaces(data, found).items() for g in gaps(found, space, len(buf))]


def _label(s: Span) -> str:
    if s.path is None:
        return "(no field)"
    return f"{s.path} = {_scalar(s.value)}" if not isinstance(s.value, (dict, list)) else s.path


def hexdump(path, key=None, max_bytes: int = 64) -> str:
    """A hex dump of the file (and each generic tile's unfiltered payload), each range labelled with the field
    path that holds it and its value; ``max_bytes`` per field are shown, the rest counted."""
    data, found = spans(path, key)
    lines = []
    for space, buf in _spaces(data, found).items():
        if space != "file":
            lines.append(f"-- {space}: the unfiltered payload of the generic tile at file offset "
                         f"{space.split('@')[1]} ({len(buf)} bytes; offsets within it)")
        fields = [s for s in found if s.space == space and s.path is not None]
        for s in sorted(fields + gaps(found, space, len(buf)), key=lambda s: s.start):
            chunk = buf[s.start:min(s.end, s.start + max_bytes)]
            for i in range(0, len(chunk), 16):
                lines.append(f"{s.start + i:08x}  {chunk[i:i + 16].hex(' '):<47}  {_label(s) if i == 0 else ''}")
            if s.end - s.start > max_bytes:
                lines.append(f"{'':8}  ... {s.end - s.start - max_bytes} more bytes of {s.path or '(no field)'}")
    return "\n".join(lines)
