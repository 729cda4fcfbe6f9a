"""A read's ranges checked before any tile is decoded, as TileDB's ``Subarray::add_range`` and its query's
current-domain check refuse them: every entry point (``read(ranges=)``, ``A[...]``, ``multi_index``,
``query``, ``.df``, Arrow, batches, ``cat --range``) goes through :func:`check_ranges` or
:func:`check_range`.

Bounds compare exactly: Python ints for integer and datetime dimensions (int64 and uint64 over their whole
range), values of the dimension's own float type for float ones. String dimensions have no domain: any
range is read, an inverted one reads nothing (as TileDB).
"""

from __future__ import annotations

import numpy as np

from .cells import range_bound

__all__ = ["RangeError", "check_range", "check_ranges", "domain_bounds"]


class RangeError(ValueError):
    """A read range TileDB refuses: a NaN bound, a lower bound above the upper, or a range outside the
    dimension's domain or the array's current domain."""


def domain_bounds(schema, j: int) -> tuple | None:
    """Dimension ``j``'s (domain, current domain or None) as exact bounds; None for a string dimension."""
    dim = schema.domain.dimensions[j]
    domain = dim.get("domain")
    if domain is None or len(domain) != 2:
        return None
    current = schema.get("current_domain")
    cur = None
    if current is not None and not current.empty:
        r = current.ndrectangle[j]
        cur = (r.start, r.end)
    return _exact(domain), cur and _exact(cur)


def _exact(bounds) -> tuple:
    """numpy bounds as Python numbers that compare without rounding: ints for integers and datetimes."""
    return tuple(int(np.asarray(v).view("<i8")) if isinstance(v, (np.datetime64, np.timedelta64))
                 else int(v) if isinstance(v, (int, np.integer)) else v for v in bounds)


def check_range(info, lo, hi, bounds) -> None:
    """Raise :class:`RangeError` if TileDB refuses the inclusive range (``lo``, ``hi``) of the dimension
    ``info`` (bounds as :func:`.cells.range_bound` gives them) with ``bounds`` from :func:`domain_bounds`."""
    if bounds is None:  # a string dimension
        return
    name, kind = info.name, info.datatype.numpy_dtype.kind
    if kind == "f":  # TileDB-Py casts a bound to the dimension's type before TileDB compares it
        lo, hi = (info.datatype.numpy_dtype.type(v) for v in (lo, hi))
    else:  # numpy ints as Python ints: int64 against uint64 compares exactly
        lo, hi = (int(v) if isinstance(v, np.integer) else v for v in (lo, hi))
    if any(isinstance(v, (float, np.floating)) and np.isnan(v) for v in (lo, hi)):
        raise RangeError(f"Subarray: Cannot add range to dimension '{name}'; Range contains NaN")
    text = _text(lo), _text(hi)
    if lo > hi:
        raise RangeError(f"Subarray: Cannot add range to dimension '{name}'; Lower range bound {text[0]} cannot be "
                         f"larger than the higher bound {text[1]}")
    (dlo, dhi), current = bounds
    if lo < dlo or hi > dhi:
        raise RangeError(f"Subarray: Cannot add range to dimension '{name}'; Range [{text[0]}, {text[1]}] is out "
                         f"of domain bounds [{_text(dlo)}, {_text(dhi)}]")
    if current is not None and (lo < current[0] or hi > current[1]):
        raise RangeError(f"Query: A range [{text[0]}, {text[1]}] on dimension '{name}' was set outside of the "
                         f"current domain [[{_text(current[0])}, {_text(current[1])}]].")


def _text(v) -> str:
    """A bound as TileDB prints it: integers whole, floats in C++'s default (``%g``) form."""
    return format(float(v), "g") if isinstance(v, (float, np.floating)) else str(int(v))


def check_ranges(dims, ranges, schema=None) -> dict:
    """``ranges=`` of an array with dimensions ``dims`` checked and normalised: ``{dimension: (lo, hi)}`` with
    bounds as the read compares them; with ``schema``, each also inside its dimension's (current) domain."""
    if ranges is None:
        return {}
    if not isinstance(ranges, dict):
        raise TypeError(f"ranges: expected a dict {{dimension: (lo, hi)}}, not {type(ranges).__name__}")
    index = {d.name: j for j, d in enumerate(dims)}
    out = {}
    for name, r in ranges.items():
        if name not in index:
            raise ValueError(f"ranges: {name!r} is not a dimension ({', '.join(index)})")
        if not isinstance(r, (tuple, list)) or len(r) != 2:
            raise TypeError(f"ranges[{name!r}]: expected a (lo, hi) pair, not {r!r}")
        d = dims[index[name]]
        out[name] = tuple(range_bound(d, v, name) for v in r)
        if schema is not None:
            check_range(d, *out[name], domain_bounds(schema, index[name]))
    return out
