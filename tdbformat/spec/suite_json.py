"""The conformance suite's JSON conventions (conformance/README.md, "JSON conventions").

A value becomes JSON through :func:`tdbformat.show.render.plain` (bytes as ``{"bytes_hex": ...}``, enums by name,
NaN and infinities as ``{"float": "nan" | "inf" | "-inf"}``); on top of that, an integer that a JSON reader
holding numbers as IEEE doubles (JavaScript's ``JSON.parse``, most others by default) could round, one beyond
±(2^53 - 1), is written ``{"int": "<decimal>"}``.
"""

from __future__ import annotations

from ..show.render import plain

__all__ = ["MAX_SAFE_INTEGER", "to_suite_json"]

#: the largest integer every JSON reader keeps exactly (JavaScript's Number.MAX_SAFE_INTEGER)
MAX_SAFE_INTEGER = 2**53 - 1


def to_suite_json(value):
    """``value`` as the suite writes it (JSON-ready Python)."""
    return _exact(plain(value))


def _exact(x):
    if isinstance(x, dict):
        return {k: _exact(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_exact(v) for v in x]
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) > MAX_SAFE_INTEGER:
        return {"int": str(x)}
    return x

