"""A TileDB-Py selection (``A.multi_index[...]``, a label selection) as inclusive ranges per dimension: the
parsing that the indexers of :mod:`.indexing` and :mod:`.labels` share."""

from __future__ import annotations

import numpy as np

from ..enums import ArrayType

__all__ = ["expand", "multi_index_ranges"]


def expand(sel, ndim: int) -> tuple:
    """``sel`` as one entry per dimension (an Ellipsis or missing trailing entries are whole dimensions)."""
    sel = sel if isinstance(sel, tuple) else (sel,)
    if sum(s is Ellipsis for s in sel) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    at = [i for i, s in enumerate(sel) if s is Ellipsis]  # `in` would compare a numpy array with Ellipsis
    if at:
        i = at[0]
        sel = sel[:i] + (slice(None),) * max(ndim - len(sel) + 1, 0) + sel[i + 1:]
    if len(sel) > ndim:
        raise IndexError(f"too many indices for a {ndim}-dimensional array")
    return sel + (slice(None),) * (ndim - len(sel))


def multi_index_ranges(arr, sel) -> list:
    """``A.multi_index[sel]`` as a list of inclusive ranges per dimension (None: the whole dimension):
    scalars are points, slices and (lo, hi) tuples inclusive ranges, lists any number of these."""
    sel = expand(sel, len(arr.dims))
    sparse = arr.schema.array_type != ArrayType.DENSE
    out = []
    for j, (d, s) in enumerate(zip(arr.dims, sel)):
        items = s if isinstance(s, (list, np.ndarray)) else [s]
        ranges = []
        for item in items:
            if isinstance(item, slice):
                if item.step is not None:
                    raise ValueError(f"multi_index: stepped slices are not supported (dimension {d.name})")
                if sparse and item.start is None and item.stop is None:
                    continue  # the whole dimension: no range
                lo, hi = _open_ends(arr, j)
                lo, hi = lo if item.start is None else item.start, hi if item.stop is None else item.stop
                if lo is not None and hi is not None:
                    ranges.append((lo, hi))
            elif isinstance(item, tuple):
                if len(item) != 2:
                    raise ValueError(f"multi_index: a range is a (lo, hi) pair, not {item!r}")
                ranges.append(item)
            else:
                ranges.append((item, item))
        out.append(ranges or None)
    return out


def _open_ends(arr, j: int) -> tuple:
    """What an open end of a multi_index slice of dimension ``j`` stands for: the non-empty domain, inside
    the current domain if the schema sets one (TileDB-Py's iter_ranges); None where neither exists."""
    ned = arr.nonempty_domain()
    ned = ned[j] if ned else None
    current = arr.schema.get("current_domain")
    cur = None
    if current is not None and not current.empty:
        cur = (current.ndrectangle[j].start, current.ndrectangle[j].end)
    if cur is not None and ned is not None:
        return max(cur[0], ned[0]), min(cur[1], ned[1])
    return cur or ned or (None, None)
