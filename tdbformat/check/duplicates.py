"""Cells of a sparse array that share their coordinates, counted exactly from the dimension (coordinate) tiles
alone, never an attribute tile: explain's ``duplicates`` (the schema allows them: a read returns every one)
and ``overwritten`` (it does not: a read merges the fragments and drops all but the newest).

Which tiles :func:`coordinate_tiles` names for reading:

- duplicates allowed: every tile of every live fragment (two cells of one write may share coordinates);
- not allowed: every tile of a fragment consolidated with timestamps (it keeps each version of a cell),
  and of the others only the tiles whose MBR meets an MBR of another fragment (two cells at the same
  coordinates in two fragments lie in tiles whose MBRs both hold them). A fragment whose non-empty domain
  meets no other's is never read, and a pair of fragments with more than :data:`PAIRS` tile pairs to test
  has all its tiles read (more than needed, the count the same).

:func:`count_shared` then counts ``within``: per fragment, its cells less its distinct coordinates, and
``across``: the fragments' distinct coordinates less those of all of them together. A delete condition
is not applied (its cells are dropped for another reason).
"""

from __future__ import annotations

import numpy as np

from ..array.fragment import listed_tile_num
from ..versions import FEATURES
from .validate.tiles import field_offsets

__all__ = ["overlapping", "coordinate_tiles", "tile_bytes", "coordinate_bytes", "count_shared"]

#: tile pairs (MBR against MBR) tested for one pair of overlapping fragments; past it, all their tiles are read
PAIRS = 1 << 22


def _meets(boxes_a, boxes_b) -> np.ndarray:
    """``[i, j]``: box ``i`` of ``boxes_a`` meets box ``j`` of ``boxes_b`` on every dimension (per
    dimension ``(lows, highs)``, as :meth:`Fragment.mbrs` gives them)."""
    out = None
    for (lo_a, hi_a), (lo_b, hi_b) in zip(boxes_a, boxes_b):
        m = (lo_a[:, None] <= hi_b[None, :]) & (hi_a[:, None] >= lo_b[None, :])
        out = m if out is None else out & m
    return out


def overlapping(arr, frags) -> np.ndarray:
    """``[i, j]``: the non-empty domains of fragments ``i`` and ``j`` (not the same) meet; exact for every type."""
    boxes = []
    for j, d in enumerate(arr.dims):
        dtype = object if d.var else d.datatype.numpy_dtype
        boxes.append((np.array([f.non_empty_domain[j][0] for f in frags], dtype),
                      np.array([f.non_empty_domain[j][1] for f in frags], dtype)))
    meets = _meets(boxes, boxes) if frags else np.zeros((0, 0), bool)
    np.fill_diagonal(meets, False)
    return meets


def coordinate_tiles(arr, frags) -> dict:
    """``{fragment index: sorted tile numbers}`` whose coordinates :func:`count_shared` needs (the module doc)."""
    dups = bool(arr.schema.get("allows_dups"))
    whole = {i for i, f in enumerate(frags) if dups or f.has_timestamps}
    tiles = {i: set(range(listed_tile_num(frags[i]))) for i in whole}
    mbrs = {}
    for i, j in zip(*np.nonzero(np.triu(overlapping(arr, frags)))):
        i, j = int(i), int(j)
        if i in whole and j in whole:
            continue
        ni, nj = listed_tile_num(frags[i]), listed_tile_num(frags[j])
        if ni * nj > PAIRS:
            hit_i, hit_j = np.ones(ni, bool), np.ones(nj, bool)
        else:
            for k in (i, j):
                if k not in mbrs:
                    mbrs[k] = frags[k].mbrs(arr.dims)
            m = _meets(mbrs[i], mbrs[j])
            hit_i, hit_j = m.any(axis=1), m.any(axis=0)
        tiles.setdefault(i, set()).update(np.flatnonzero(hit_i).tolist())
        tiles.setdefault(j, set()).update(np.flatnonzero(hit_j).tolist())
    return {i: sorted(ks) for i, ks in sorted(tiles.items()) if ks}


def _dimension_fields(arr, frag) -> list[int]:
    if FEATURES["coordinates_per_dimension"](frag.version):
        return [frag.index(d.name) for d in arr.dims]
    return [frag.index("__coords")]


def tile_bytes(frag, idx: int, tiles, kinds=("", "_var", "_validity")) -> int:
    """Bytes on disk of ``tiles`` of index-space field ``idx`` in each of its ``kinds`` files (from the tile
    offsets: nothing read)."""
    total = 0
    for kind in kinds:
        found = field_offsets(frag, kind, idx)
        if found is None or not len(found[0]):
            continue
        offsets, size = found
        ends = np.append(offsets[1:], np.uint64(size)).astype(np.int64)
        total += int((ends - offsets.astype(np.int64))[list(tiles)].sum())
    return total


def coordinate_bytes(arr, frags, tiles: dict) -> int:
    """Bytes of the coordinate tiles ``tiles`` (:func:`coordinate_tiles`) name, on disk or decoded (fixed-size
    coordinates, a var-sized one's offsets), whichever is more: what reading them costs, in I/O or memory."""
    disk = sum(tile_bytes(frags[i], idx, ks, ("", "_var")) for i, ks in tiles.items()
               for idx in _dimension_fields(arr, frags[i]))
    width = sum(8 if d.var else d.datatype.numpy_dtype.itemsize for d in arr.dims)
    cells = 0
    for i, ks in tiles.items():  # a sparse fragment's tiles are full but its last (in Python ints: a hostile
        # capacity or cell count may pass int64)
        cap = max(1, int(frags[i].schema.capacity))
        full, rest = divmod(int(frags[i].cell_num), cap)
        ks = np.asarray(ks, np.int64)
        cells += cap * int((ks < full).sum()) + rest * int((ks == full).any())  # (numpy compares past int64)
    return max(disk, cells * width)


def _distinct(cols: list) -> int:
    """Distinct rows of the coordinate columns (exact: integers compared as integers, strings as strings)."""
    n = len(cols[0]) if cols else 0
    if n == 0:
        return 0
    if len(cols) == 1:
        return len(np.unique(cols[0]))
    codes = [np.unique(c, return_inverse=True)[1].ravel() for c in cols]
    order = np.lexsort(codes[::-1])
    new = np.zeros(n, bool)
    new[0] = True
    for c in codes:
        c = c[order]
        new[1:] |= c[1:] != c[:-1]
    return int(new.sum())


def count_shared(arr, frags, tiles: dict) -> tuple[int, int]:
    """(``within``, ``across``) of the module doc, from the coordinates of ``tiles`` (:func:`coordinate_tiles`)."""
    from ..array import _pool

    pool, within, distinct, columns = _pool(1), 0, 0, []
    for i, ks in tiles.items():
        cols = arr.tiles.coords(frags[i], arr.dims, ks, pool)
        d = _distinct(cols)
        within, distinct = within + len(cols[0]) - d, distinct + d
        columns.append(cols)
    together = [np.concatenate([c[j] for c in columns]) for j in range(len(arr.dims))] if columns else []
    return within, distinct - _distinct(together)
