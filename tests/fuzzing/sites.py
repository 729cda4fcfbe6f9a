"""Where a file's integer fields are, found from what the declarations record while parsing.

Every ``Struct`` of tdbformat keeps the offset where each field starts (``_offsets``), and every generic
tile keeps its unfiltered payload (``_unfiltered``). Walking a parsed value with those gives each integer
field (scalar or one element of a numpy run) its byte offset and width, checked against the bytes
themselves, so the fuzzer can lie in every length, count and offset without a hand-kept list.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from construct import Container

from tdbformat.structs import GenericTile
from tdbformat.filters import filter_tile
from tdbformat.layout.files import ParsedFile
from tdbformat.filters.encryption import normalize_key
from tdbformat.structs.fragment import SECTIONS, FragmentMetadata, _tile_end, find_footer
from tdbformat.structs.prev1_1x import GenericTile1x

__all__ = ["Site", "find_sites", "write_site"]


@dataclass(frozen=True)
class Site:
    """An integer field: ``offset`` counts from the file, or (``tile`` set) from the unfiltered payload of
    the generic tile that starts at file offset ``tile``."""

    path: str
    tile: int | None
    offset: int
    width: int
    value: int
    signed: bool = False


@dataclass
class _Frame:
    data: bytes          # the bytes the offsets count into (the file, or a payload)
    base: int            # where the parsing stream started within ``data``
    tile: int | None     # None for the file, else the file offset of the generic tile
    sites: list
    payloads: dict       # generic tile file offset -> (its raw tile, its unfiltered payload)


def _width(frame: _Frame, at: int, span: int | None, value: int) -> tuple[int, bool] | None:
    """The width (and signedness) of the integer ``value`` stored at ``at``: the span to the next field
    when it is a plain integer width, else the narrowest width whose bytes read back as ``value``."""
    widths = (span,) if span in (1, 2, 4, 8) else (1, 2, 4, 8)
    for w in widths:
        raw = frame.data[at:at + w]
        if len(raw) == w:
            for signed in (False, True):
                if int.from_bytes(raw, "little", signed=signed) == value:
                    return w, signed
    return None


def _numbers(frame: _Frame, path: str, at: int, arr: np.ndarray):
    """Sites for the first, middle and last elements of an integer run whose bytes are at ``at``."""
    arr = np.asarray(arr).reshape(-1)
    if not arr.size or frame.data[at:at + arr.nbytes] != arr.tobytes():
        return
    w = arr.dtype.itemsize
    for i in sorted({0, arr.size // 2, arr.size - 1}):
        frame.sites.append(Site(f"{path}[{i}]", frame.tile, at + i * w, w, int(arr[i]), arr.dtype.kind == "i"))


def _walk(value, frame: _Frame, path: str, end: int | None):
    if isinstance(value, dict) and value.get("_generic_tile") is not None:
        _generic(value, frame, path)
    elif isinstance(value, dict):
        _container(value, frame, path, end)
    elif isinstance(value, (list, tuple)):
        starts = [_start(v) for v in value]
        for i, v in enumerate(value):
            nxt = next((s for s in starts[i + 1:] if s is not None), end)
            _walk(v, frame, f"{path}[{i}]", nxt)


def _start(value) -> int | None:
    offsets = value.get("_offsets") if isinstance(value, dict) else None
    return min(offsets.values()) if offsets else None


def _container(value, frame: _Frame, path: str, end: int | None):
    offsets = value.get("_offsets") or {}
    for name, at in offsets.items():
        nxt = min((o for o in offsets.values() if o > at), default=end)
        field, v = f"{path}.{name}" if path else name, value.get(name)
        pos = frame.base + at
        if isinstance(v, (int, np.integer)):
            found = _width(frame, pos, None if nxt is None else nxt - at, int(v))
            if found:
                frame.sites.append(Site(field, frame.tile, pos, found[0], int(v), found[1]))
        elif isinstance(v, np.ndarray) and v.dtype.kind in "iu":
            _numbers(frame, field, pos, v)
        else:
            _walk(v, frame, field, nxt)


def _generic(value, frame: _Frame, path: str):
    """A generic tile: its header and chunks in this frame, its payload in a frame of its own."""
    gt = value["_generic_tile"]
    _container(gt, frame, f"{path}.generic_tile" if path else "generic_tile", None)
    if frame.tile is not None:
        return  # a generic tile inside a payload: its header is enough
    start = frame.base + min(gt["_offsets"].values())
    inner = _Frame(bytes(value["_unfiltered"]), 0, start, frame.sites, frame.payloads)
    frame.payloads[start] = (gt, inner.data)
    _container(value, inner, path, len(inner.data))


def find_sites(pf: ParsedFile, data: bytes) -> tuple[list[Site], dict]:
    """The integer fields of the parsed file ``pf`` whose bytes are ``data``, and its generic tiles."""
    frame = _Frame(data, 0, None, [], {})
    value = pf.value
    if isinstance(value, FragmentMetadata):
        _fragment_metadata(value, frame, pf)
    elif value is not None:
        _walk(value, frame, "", len(data))
    return frame.sites, frame.payloads


def _fragment_metadata(fm: FragmentMetadata, frame: _Frame, pf: ParsedFile):
    """Fragment metadata: the footer where it was found, and each section at the offset the footer gives."""
    if fm.legacy is not None:
        _walk(fm.legacy, frame, "", len(frame.data))
        return
    offset, size, _ = find_footer(frame.data, pf.context["schema"], None, pf.path.parent.name)
    _walk(fm.footer, _Frame(frame.data, offset, None, frame.sites, frame.payloads), "footer", size)
    for slot in SECTIONS:
        for i, at in enumerate(slot.offsets(fm.footer) or ()):
            payload = fm._payload(slot, i)
            _walk(payload, _Frame(frame.data, at, None, frame.sites, frame.payloads), f"{slot.name}[{i}]", None)


def write_site(data: bytes, site: Site, new: int, payloads: dict, key) -> bytes:
    """``data`` with the field at ``site`` set to ``new`` (wrapped to the field's width)."""
    raw = (new % (1 << 8 * site.width)).to_bytes(site.width, "little")
    if site.tile is None:
        return data[:site.offset] + raw + data[site.offset + site.width:]
    gt, payload = payloads[site.tile]
    payload = payload[:site.offset] + raw + payload[site.offset + site.width:]
    if "filter_pipeline" not in gt:  # a 1.x generic tile (a whole file): the payload stored uncompressed
        return GenericTile1x.build(Container(gt, tile_size=len(payload), compressor=0, body=payload))
    end = _tile_end(data, site.tile)
    tile = filter_tile(payload, gt.filter_pipeline, datatype=gt.datatype, cell_size=gt.cell_size,
                       key=normalize_key(key))
    built = GenericTile.build(Container(gt, tile=tile))
    if site.tile == 0 and end == len(data):
        return built
    # inside a larger file: keep the later sections where their offsets say they are when it fits
    if len(built) < end - site.tile:
        built += bytes(end - site.tile - len(built))
    return data[:site.tile] + built + data[end:]

