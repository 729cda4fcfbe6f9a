"""Parsed values as an indented tree (with byte offsets) or as JSON, for ``tdbformat inspect``."""

from __future__ import annotations

import enum
import math

import numpy as np

__all__ = ["to_tree", "files_json", "plain"]

_PREVIEW = 8


def plain(value):
    """``value`` as JSON-ready Python: dicts, lists, numbers, strings (bytes as hex, enums by name)."""
    if isinstance(value, dict):
        out = {k: plain(v) for k, v in value.items() if not (isinstance(k, str) and k.startswith("_"))}
        if value.get("_generic_tile") is not None:
            out = {"generic_tile": plain(value["_generic_tile"]), "payload": out}
        return out
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "S":  # each value whole: tolist() drops trailing NULs (b"\x00" would be b"")
            return [plain(v.tobytes()) for v in value.reshape(-1)]
        if value.dtype.kind in "UVO":
            return [plain(v) for v in value.tolist()]
        return plain(value.tolist())
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytes_hex": bytes(value).hex()}
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": str(value)}
    return value


def _scalar(value) -> str:
    if isinstance(value, enum.Enum):
        return f"{value.name} ({int(value)})"
    if isinstance(value, (bytes, bytearray)):
        shown = bytes(value[:32]).hex(" ")
        return f"{len(value)} bytes: {shown}{' ...' if len(value) > 32 else ''}"
    if isinstance(value, np.ndarray):
        head = ", ".join(str(v) for v in value.reshape(-1)[:_PREVIEW].tolist())
        more = " ..." if value.size > _PREVIEW else ""
        return f"{value.dtype}[{value.size}] [{head}{more}]"
    return repr(value)


def _lines(value, indent, out):
    pad = "  " * indent
    if isinstance(value, dict) and value.get("_generic_tile") is not None:
        # A generic tile's payload: show the tile as stored (file offsets), then the payload.
        out.append(f"{pad}generic_tile:")
        _lines(value["_generic_tile"], indent + 1, out)
        out.append(f"{pad}payload (offsets within the unfiltered payload):")
        indent += 1
        pad = "  " * indent
    if isinstance(value, dict):
        offsets = value.get("_offsets") or {}
        for k, v in value.items():
            if isinstance(k, str) and k.startswith("_"):
                continue
            at = f"@{offsets[k]} " if k in offsets else ""
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{at}{k}:")
                _lines(v, indent + 1, out)
            else:
                out.append(f"{pad}{at}{k} = {_scalar(v)}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, (dict, list)):
                out.append(f"{pad}[{i}]")
                _lines(v, indent + 1, out)
            else:
                out.append(f"{pad}[{i}] = {_scalar(v)}")
    else:
        out.append(f"{pad}{_scalar(value)}")


def to_tree(parsed_files) -> str:
    """An indented tree of each parsed file; ``@N`` is the byte offset where a field starts (offsets
    inside a generic tile's payload count from the start of the unfiltered payload)."""
    out = []
    for pf in parsed_files:
        out.append(f"{pf.path} ({pf.kind})")
        _lines(pf.view, 1, out)
    return "\n".join(out)


def files_json(parsed_files) -> list:
    """Each parsed file as ``{"path", "kind", "value"}`` with plain JSON values."""
    return [{"path": str(pf.path), "kind": pf.kind, "value": plain(pf.view)} for pf in parsed_files]
