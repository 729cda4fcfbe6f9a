"""A dense fragment's tiles read in batches: a slab of the tile grid at a time, the chunks of all its tiles
through the field's filter plan at once, and the slab put into the result by one strided copy, not a Python
step per tile (a 2,000 x 2,000 array in 20 x 20 tiles has 10,000 of them)."""

from __future__ import annotations

import functools
import math
import os
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..enums import Layout
from ..errors import FormatError
from . import order
from .cells import U64, cell_dtype, split_var
from .fragment import field_index
from .tiles import at_once, rebased, run_tiles, var_run_tiles

__all__ = ["Grid", "check_in_domain", "grid", "place_batched"]

#: cells per batch: a slab of tile rows this large is decoded, copied into the result, then let go. Larger
#: batches were faster (1000 x 1000 int32 in 100 x 100 tiles: 3.0 ms in one batch, 4.1 in five) but held
#: more beside the result (one 4 MiB batch peaked above TileDB-Py's 7.7 MiB)
BATCH_CELLS = 1 << 19


class Grid:
    """The tiles of a dense fragment that meet a read's box: the array's tile grid (``dom_lo``, ``extents``),
    the fragment's tiles (``first``, ``counts``: its non-empty domain's, in tile order), the box clipped to
    the fragment (``b_lo..b_hi``) and the grid tiles it meets (``t_first..t_last``), all Python ints."""

    def __init__(self, dom_lo, extents, first, counts, b_lo, b_hi, t_first, t_last):
        self.dom_lo, self.extents, self.first, self.counts = dom_lo, extents, first, counts
        self.b_lo, self.b_hi, self.t_first, self.t_last = b_lo, b_hi, t_first, t_last


def check_in_domain(dims, frag) -> None:
    """Refuse a dense fragment whose non-empty domain leaves the domain of ``dims``: its tile count, and every
    size taken from it, would be unproven (one flipped bit: millions of tiles)."""
    for d, (a, b) in zip(dims, frag.non_empty_domain):
        if not int(d.domain[0]) <= int(a) <= int(b) <= int(d.domain[1]):
            raise FormatError(f"fragment {frag.name}: non-empty domain [{a}, {b}] of dimension {d.name} is not "
                              f"inside its domain [{d.domain[0]}, {d.domain[1]}]", file=str(frag.path))


def grid(arr, frag, lo, hi) -> Grid | None:
    """The :class:`Grid` of ``frag`` for the box ``lo..hi``, None if it holds no cell of it; the fragment's
    non-empty domain must lie in the array's domain (its tile count comes from it)."""
    dom = arr.schema.domain.dimensions
    dom_lo, extents = order.tile_grid(dom)
    ned = frag.non_empty_domain
    check_in_domain(dom, frag)
    first, last = order.tile_range(dom_lo, extents, [r[0] for r in ned], [r[1] for r in ned])
    b_lo = [max(int(n[0]), int(q)) for n, q in zip(ned, lo)]
    b_hi = [min(int(n[1]), int(q)) for n, q in zip(ned, hi)]
    if any(a > b for a, b in zip(b_lo, b_hi)):
        return None
    t_first, t_last = order.tile_range(dom_lo, extents, b_lo, b_hi)
    return Grid([int(d) for d in dom_lo], [int(e) for e in extents], first, [b - a + 1 for a, b in zip(first, last)],
                b_lo, b_hi, t_first, t_last)


def place_batched(arr, frag, g: Grid, wanted, lo, result, pool) -> list:
    """Put the cells of ``frag``'s fields of ``wanted`` that lie in the box into ``result`` (a ``dense._Result``;
    ``lo``: the box's low corner) a batch of tiles at a time. Returns the fields left to the tile-by-tile path:
    var ones whose strings carry their own offsets (string RLE, dictionary), and any whose batch failed (that
    path names the bad tile)."""
    schema = arr.schema
    dims = len(g.extents)
    if math.prod(g.counts) >= 1 << 62:  # positions past int64 (the tile-by-tile path reports them)
        return list(wanted)
    rest, fields = [], []
    for a in wanted:
        idx = field_index(frag, a)
        if idx is None:  # an attribute added after the fragment was written: its cells read as fill
            result.put_fill(a, tuple(slice(b0 - q, b1 - q + 1) for b0, b1, q in zip(g.b_lo, g.b_hi, lo)))
        elif a.var and arr.tiles.plan(frag, idx, "_var").filters.strings:  # (string RLE, dictionary: tile by tile)
            rest.append(a)
        else:
            fields.append((a, idx))
    # strides of a tile's grid coordinates (from the fragment's first tile) in its position (tile order)
    axes = range(dims - 1, -1, -1) if schema.tile_order == Layout.COL_MAJOR else range(dims)
    stride, at = [0] * dims, 1
    for j in reversed(list(axes)):
        stride[j], at = at, at * g.counts[j]
    n = [b - a + 1 for a, b in zip(g.t_first, g.t_last)]
    cell_num = math.prod(g.extents)
    slow = axes[0]  # slabs across the slowest axis of tile order: their tiles lie together in the file
    step = max(1, BATCH_CELLS // (cell_num * math.prod(n) // n[slow]))
    threads = getattr(pool, "_max_workers", 1)
    slabs = [([s if j == slow else 0 for j in range(dims)], [min(step, n[j] - s) if j == slow else n[j]
                                                            for j in range(dims)]) for s in range(0, n[slow], step)]
    for a, idx in fields:
        try:
            _place_field(arr, frag, g, a, idx, slabs, stride, lo, result, threads)
        except FormatError:
            rest.append(a)
    return rest


def _place_field(arr, frag, g: Grid, a, idx, slabs, stride, lo, result, threads):
    """Field ``a``'s ``slabs`` (``start``, ``n``: tiles ``t_first + start`` .., ``n`` per axis) decoded at once
    each and put into the result in turn; a var field's next slab is decoded (zstd lets the GIL go) while this
    one's cells are made (Python objects, which hold it)."""
    info, cell_num = arr.tiles.plan(frag, idx, "").info, math.prod(g.extents)

    def decoded(slab):
        ks = _tiles_of(frag, g, *slab, stride)
        return ks, (_var_bytes if info.var else _fixed_values)(arr, frag, idx, ks, threads, cell_num, info)
    ahead = None
    try:
        for i, slab in enumerate(slabs):
            ks, got = ahead.result() if ahead is not None else decoded(slab)
            ahead = _ahead().submit(decoded, slabs[i + 1]) if info.var and i + 1 < len(slabs) else None
            values = _var_cells(got, info, threads) if info.var else got
            _put_slab(arr, frag, g, a, idx, ks, slab, values, lo, result, threads)
    finally:
        if ahead is not None:  # (a slab that fails leaves none decoding behind it)
            futures.wait([ahead])


@functools.cache
def _ahead() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="tdbformat-slabs")


os.register_at_fork(after_in_child=_ahead.cache_clear)  # a forked child has none of the parent's threads


def _tiles_of(frag, g: Grid, start, n, stride) -> list:
    """The fragment's positions of tiles ``t_first + start`` .. (``n`` per axis), in tile order."""
    dims = len(n)
    rel = [g.t_first[j] + start[j] - g.first[j] for j in range(dims)]
    if sum((r + c - 1) * s for r, c, s in zip(rel, n, stride)) >= frag.tile_num():
        raise FormatError("a tile is past the fragment's tiles")
    ks = sum(((np.arange(c, dtype=np.int64) + r) * s).reshape([c if i == j else 1 for i in range(dims)])
             for j, (r, c, s) in enumerate(zip(rel, n, stride)))
    return np.broadcast_to(ks, n).reshape(-1).tolist()


def _put_slab(arr, frag, g: Grid, a, idx, ks, slab, values, lo, result, threads):
    """A slab's cells (its tiles' ``values`` back to back) and validity put into the result."""
    (start, n), cell_num = slab, math.prod(g.extents)
    origin = [d + (t + s) * e for d, t, s, e in zip(g.dom_lo, g.t_first, start, g.extents)]
    c_lo = [max(b, o) for b, o in zip(g.b_lo, origin)]
    c_hi = [min(b, o + c * e - 1) for b, o, c, e in zip(g.b_hi, origin, n, g.extents)]
    dst = tuple(slice(x - q, y - q + 1) for x, y, q in zip(c_lo, c_hi, lo))
    src = tuple(slice(x - o, y - o + 1) for x, y, o in zip(c_lo, c_hi, origin))
    whole = all(x == o and y == o + c * e - 1 for x, y, o, c, e in zip(c_lo, c_hi, origin, n, g.extents))
    _put(result.out[a.name][dst], _cells(values, n, g.extents, arr.schema), src, whole)
    if a.nullable:
        valid, counts = run_tiles(arr.tiles, frag, idx, "_validity", ks, threads, 1)
        if np.any(counts != cell_num):
            raise FormatError("a dense tile holds fewer validity values than its extents")
        _put(result.valid[a.name][dst], _cells(np.frombuffer(valid, np.uint8) != 0, n, g.extents, arr.schema), src,
             whole)


def _fixed_values(arr, frag, idx, ks, threads, cell_num, info) -> np.ndarray:
    data, counts = run_tiles(arr.tiles, frag, idx, "", ks, threads, info.datatype.size * info.cell_val_num)
    if np.any(counts != cell_num):
        raise FormatError("a dense tile holds fewer cells than its extents")
    return np.frombuffer(data, cell_dtype(info))


def _var_bytes(arr, frag, idx, ks, threads, cell_num, info) -> tuple:
    """(bytes, offsets) of var tiles ``ks``: their offsets (each tile's from its own start) and bytes decoded at
    once, the offsets moved to the bytes back to back."""
    (offsets, counts), (data, sizes) = at_once([lambda: run_tiles(arr.tiles, frag, idx, "", ks, threads, 8),
                                                lambda: var_run_tiles(arr.tiles, frag, idx, ks, threads)], threads > 1)
    if np.any(counts != cell_num):
        raise FormatError("a dense tile holds fewer offsets than its extents")
    return data, rebased(np.frombuffer(offsets, U64), counts, sizes)


def _var_cells(got, info, threads: int) -> np.ndarray:
    """The cells of a slab of var tiles (:func:`_var_bytes`) as one object array, made in one call (a tile at a
    time, a million strings in 1,000-cell tiles took 4 times TileDB-Py's read)."""
    return split_var(*got, info, threads=threads)


def _cells(flat: np.ndarray, n, extents, schema) -> np.ndarray:
    """Tiles decoded back to back (grid C order, each in cell order) as a view with axes (tile, cell) per
    dimension: (n0, e0, n1, e1, ...)."""
    dims = len(n)
    if dims > 1 and schema.cell_order == Layout.COL_MAJOR:
        tiles = flat.reshape(*n, *extents[::-1]).transpose(*range(dims), *range(2 * dims - 1, dims - 1, -1))
    else:
        tiles = flat.reshape(*n, *extents)
    return tiles.transpose([x for j in range(dims) for x in (j, dims + j)])


def _put(dest: np.ndarray, cells: np.ndarray, src, whole: bool):
    """``dest`` (the result's cells of the batch in the box) set from ``cells`` (:func:`_cells`): straight
    through a tiled view of ``dest`` where the batch's tiles all lie in the box, else through one copy."""
    if whole:
        shape = cells.shape
        tiled = np.lib.stride_tricks.as_strided(
            dest, shape=shape, strides=[x for st, e in zip(dest.strides, shape[1::2]) for x in (st * e, st)],
            writeable=True)
        np.copyto(tiled, cells)
    else:
        dest[...] = cells.reshape([c * e for c, e in zip(cells.shape[::2], cells.shape[1::2])])[src]
