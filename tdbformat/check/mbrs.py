"""``mbrs``: every sparse tile's minimum bounding rectangle, per fragment a read sees (TileDB's
``dump-mbrs``; TileDB-Py's ``array_fragments(include_mbrs=True).mbrs``), read from the R-tree alone."""

from __future__ import annotations

from ..array import Array, open_array
from ..errors import UnsupportedError
from ..show import jsonable
from .dataset import is_group, per_array

__all__ = ["mbrs", "array_mbrs"]


def array_mbrs(path, key=None, fragment: str | None = None) -> list[dict]:
    """``[{"fragment", "dense", "mbrs": [[[lo, hi] per dimension] per tile]}]`` of the fragments a read of
    the array at ``path`` sees, in TileDB's order (dense fragments have none); ``fragment``: that one alone
    (a ValueError names the fragments when none has that name)."""
    arr = open_array(path, key=key)
    if not isinstance(arr, Array):
        raise UnsupportedError("an array from before format version 1: its fragments have no R-tree", file=str(path))
    frags = arr.fragments
    if fragment is not None:
        frags = [f for f in frags if f.name == fragment]
        if not frags:
            raise ValueError(f"fragment: {fragment!r} is not a fragment a read of {path} sees "
                             f"({', '.join(f.name for f in arr.fragments) or 'none'})")
    out = []
    for f in frags:
        boxes = [] if f.dense else f.mbrs(arr.dims)
        tiles = len(boxes[0][0]) if boxes else 0
        out.append({"fragment": f.name, "dense": bool(f.dense),
                    "mbrs": [[[jsonable(lo[t]), jsonable(hi[t])] for lo, hi in boxes] for t in range(tiles)]})
    return out


def mbrs(path, key=None, fragment: str | None = None) -> dict:
    """The ``mbrs`` document (docs/json-schema/mbrs.v1.json): for an array, ``fragments``; for a group,
    ``objects``, each array's fragments below it (with ``fragment``, those of that name only)."""
    if not is_group(path):
        return {"kind": "array", "fragments": array_mbrs(path, key, fragment)}
    rows = per_array(path, lambda obj: {"fragments": [f for f in array_mbrs(obj.path, key)
                                                      if fragment in (None, f["fragment"])]}, key)
    return {"kind": "group", "objects": rows}
