"""Dense reads: the result starts as fill values; fragments apply in timestamp order, later ones overwriting
earlier ones, each only inside its non-empty domain; sparse fragments that old TileDB wrote into dense
arrays go on top, as TileDB's legacy reader merges them (DISCREPANCIES.md)."""

from __future__ import annotations

import math

import numpy as np

from ..enums import Layout
from ..errors import FormatError
from . import order
from .cells import filled, masked, result_bytes
from .dense_tiles import grid, place_batched
from .fetch_ahead import fetched_ahead
from .fragment import field_index
from .options import budget_or_default
from .sparse import sparse_tiles
from .tiles import chunk_threads

__all__ = ["read_dense", "read_box", "check_budget", "MemoryBudgetError"]


class MemoryBudgetError(ValueError):
    """A read's result would not fit in its memory budget; nothing was allocated."""


def read_box(arr, schema, ranges) -> tuple[list, list]:
    """Per dimension, the inclusive bounds read: ``ranges``, else the current domain (v22+) if the schema
    sets one, else the domain."""
    current = schema.get("current_domain")
    bounds = ([(r.start, r.end) for r in current.ndrectangle] if current is not None and not current.empty
              else [dim.domain for dim in schema.domain.dimensions])
    lo, hi = [], []
    for d, r in zip(arr.dims, bounds):
        if d.name in ranges:  # (the caller's ranges are checked where they come in)
            pass
        elif r is None or len(r) != 2:  # a var-sized (string) dimension has none: a dense array cannot have one
            raise FormatError(f"dimension {d.name}: a dense array's dimension needs a domain, the schema gives none",
                              file=str(arr.path))
        elif not r[0] <= r[1]:
            raise FormatError(f"dimension {d.name}: the schema's domain [{r[0]}, {r[1]}] has its lower bound above "
                              "its upper", file=str(arr.path))
        r = ranges.get(d.name, r)
        lo.append(r[0])
        hi.append(r[1])
    return lo, hi


def check_budget(arr, schema, wanted, ranges, budget):
    """Raise :class:`MemoryBudgetError` if the result of a dense read of ``ranges`` would exceed ``budget``
    bytes (default: ``tdbformat.array.options.MEMORY_BUDGET``), checked before anything is allocated: applications
    create domains of 2**31 cells per dimension and write a corner of them."""
    budget = budget_or_default(budget)
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
        raise TypeError(f"memory_budget: expected a number of bytes (an int >= 0), not {budget!r}")
    lo, hi = read_box(arr, schema, ranges)
    cells = 1
    for a, b in zip(lo, hi):
        cells *= max(int(b) - int(a) + 1, 0)
    # var cells are object pointers (their bytes come on top); nullable ones add a validity byte
    per_cell = sum(result_bytes(a) + a.nullable for a in wanted)
    if cells * per_cell > budget:
        box = ", ".join(f"{d.name}=[{a}, {b}]" for d, a, b in zip(arr.dims, lo, hi))
        raise MemoryBudgetError(
            f"the result of this dense read would take {_size(cells * per_cell)} ({cells:,} cells over {box}), "
            f"more than its memory budget of {_size(budget)}: read a smaller box with ranges= (the written "
            "cells lie in nonempty_domain()), fewer attrs=, or pass a larger memory_budget=")


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024


def _covers(ned, lo, hi) -> bool:
    """Whether the non-empty domain ``ned`` ((lo, hi) per dimension) contains the box ``lo..hi``."""
    return all(int(n[0]) <= int(a) and int(b) <= int(n[1]) for n, a, b in zip(ned, lo, hi))


def _attribute(schema, name: str):
    return next(a for a in schema.attributes if a.name == name)


class _Result:
    """The result arrays of a dense read, and how cells are put into them."""

    def __init__(self, schema, wanted, shape, covered):
        attribute = {a.name: _attribute(schema, a.name) for a in wanted}
        self.out = {a.name: filled(a, attribute[a.name], shape, empty=covered) for a in wanted}
        self.fills = {a.name: filled(a, attribute[a.name], ()) for a in wanted}
        self.fill_valid = {a.name: bool(attribute[a.name].get("fill_value_validity")) for a in wanted if a.nullable}
        self.valid = {name: np.full(shape, v) for name, v in self.fill_valid.items()}

    def put(self, a, at, values, validity):
        self.out[a.name][at] = values
        if a.nullable:
            self.valid[a.name][at] = validity

    def slot(self, a, at):
        """The cells of the result at ``at`` as one flat array where they are contiguous (a tile decodes
        straight into them, var string tiles of string RLE and dictionary too), else None."""
        view = self.out[a.name][at]
        return view.reshape(-1) if view.flags.c_contiguous else None

    def put_fill(self, a, at):
        self.put(a, at, self.fills[a.name], self.fill_valid.get(a.name))


#: unfiltered bytes per field from which a dense read's tiles decode in parallel: 2,000 x 2,000 int32 (zstd) in
#: 9 KiB to 3.9 MiB tiles took 83-26 ms on one thread, 130-16 ms on two; 156 KiB was the turn (32.5 / 29)
_PARALLEL_TILE = 128 << 10


#: result bytes of a dense read's large tiles a worker takes at once: 10 tiles of 100,000 strings in 4 runs left
#: one thread 2 tiles behind the other (33 ms where 5 each took 28)
_RUN_BYTES = 512 << 10


def _runs(jobs: int, job_bytes: int, workers: int) -> int:
    """Runs of neighbouring tile jobs the workers share: a few per worker, more where tiles are large (a run
    of large tiles left to one thread at the end idles the others)."""
    return min(jobs, max(2 * workers, jobs * job_bytes // _RUN_BYTES))


def _tile_jobs(arr, frag, lo, hi):
    """(tile position in the fragment, source slice in the tile, destination slice in the result) of each
    tile of a dense fragment that meets the box ``lo..hi``. Only the tiles inside the box are enumerated."""
    if (g := grid(arr, frag, lo, hi)) is None:
        return
    dom_lo, extents, first, counts, b_lo, b_hi = g.dom_lo, g.extents, g.first, g.counts, g.b_lo, g.b_hi
    lo = [int(q) for q in lo]
    for tile in order.tiles_in_order(g.t_first, g.t_last, arr.schema.tile_order).tolist():
        k = order.tile_position(tile, first, counts, arr.schema.tile_order)
        t_lo, t_hi = order.tile_box(dom_lo, extents, tile)
        c_lo = [max(a, b) for a, b in zip(t_lo, b_lo)]
        c_hi = [min(a, b) for a, b in zip(t_hi, b_hi)]
        src = tuple(slice(a - t, b - t + 1) for a, b, t in zip(c_lo, c_hi, t_lo))
        dst = tuple(slice(a - q, b - q + 1) for a, b, q in zip(c_lo, c_hi, lo))
        yield k, src, dst


def read_dense(arr, schema, frags, wanted, ranges, layout, pool) -> dict:
    lo, hi = read_box(arr, schema, ranges)
    dense = [f for f in frags if f.dense]
    tiles_of = (lambda f: [k for k, _, _ in _tile_jobs(arr, f, lo, hi) if k < f.tile_num()])
    with fetched_ahead(arr, dense, wanted, tiles_of):
        return _read_dense(arr, schema, frags, wanted, ranges, layout, pool)


def _read_dense(arr, schema, frags, wanted, ranges, layout, pool) -> dict:
    _, extents = order.tile_grid(arr.schema.domain.dimensions)
    cell_num, cell_order = int(np.prod(extents)), arr.schema.cell_order
    lo, hi = read_box(arr, schema, ranges)
    shape = tuple(int(b) - int(a) + 1 for a, b in zip(lo, hi))
    if min(shape, default=1) < 1:  # checked ranges never run backwards: a fragment's non-empty domain can
        raise FormatError(f"the box {list(zip(lo, hi))} runs backwards: a fragment's non-empty domain is damaged")
    # a dense fragment holds every cell of its non-empty domain: one that covers the result leaves no fill
    result = _Result(schema, wanted, shape, any(f.dense and _covers(f.non_empty_domain, lo, hi) for f in frags))

    def place(frag, a, idx, k, src, dst, spans, threads=1):
        if idx is None:  # an attribute added after the fragment was written: its cells read as fill
            return result.put_fill(a, dst)
        if k >= frag.tile_num():
            raise FormatError(f"fragment {frag.name}: tile {k} is past the {frag.tile_num()} tiles of its "
                              "non-empty domain", file=str(frag.path))
        into = result.slot(a, dst) if whole(src) else None
        values, validity = arr.tiles.cells(frag, idx, k, cell_num, spans=spans, threads=threads, into=into)
        if values is into:  # decoded in place: only the validity is left to put
            if a.nullable:
                result.valid[a.name][dst] = order.as_tile(validity, extents, cell_order)
            return
        result.put(a, dst, order.as_tile(values, extents, cell_order)[src],
                   order.as_tile(validity, extents, cell_order)[src] if a.nullable else None)

    def whole(src) -> bool:  # a tile all in the box, whose cells lie in the result's (row-major) order
        return (len(extents) == 1 or cell_order == Layout.ROW_MAJOR) and \
            all(s.start == 0 and s.stop == e for s, e in zip(src, extents))

    for frag in frags:  # in timestamp order: later fragments overwrite earlier ones
        if frag.dense and (g := grid(arr, frag, lo, hi)) is not None:
            small = cell_num * sum(result_bytes(a) for a in wanted) < _PARALLEL_TILE * max(1, len(wanted))
            # small tiles: a batch of them at a time (a Python step per tile cost more than decoding it)
            few = math.prod(b - a + 1 for a, b in zip(g.t_first, g.t_last)) < 2
            rest = wanted if few or not small else place_batched(arr, frag, g, wanted, [int(q) for q in lo], result,
                                                                         pool)
            if not rest:
                continue
            tiles = list(_tile_jobs(arr, frag, lo, hi))
            ks = [k for k, _, _ in tiles if k < frag.tile_num()]
            fields = [(a, field_index(frag, a)) for a in rest]
            spans = {a.name: arr.tiles.spans(frag, idx, ks) if idx is not None else None for a, idx in fields}
            # fewer tiles than threads: each tile's chunks share the rest
            threads = chunk_threads(pool, len(tiles) * len(fields))
            jobs = [(frag, a, idx, k, src, dst, spans[a.name], threads) for k, src, dst in tiles for a, idx in fields]
            # tiles are decoded and placed in workers (tiles of one fragment never overlap), a few runs of
            # neighbouring tiles per thread: a task per small tile costs more than decoding it; small tiles in
            # this thread, since placing one is mostly Python, which threads only take turns at (GIL)
            runs = 1 if small else _runs(len(jobs), cell_num * sum(result_bytes(a) for a, _ in fields),
                                         getattr(pool, "_max_workers", 1))
            bounds = [len(jobs) * r // runs for r in range(runs + 1)] if runs > 1 else []
            todo = [jobs[bounds[r]:bounds[r + 1]] for r in range(len(bounds) - 1)]
            list(pool.map(lambda run: [place(*job) for job in run], todo) if todo else (place(*j) for j in jobs))
    _place_sparse(arr, frags, wanted, lo, hi, result, pool)
    out = result.out
    if layout == Layout.COL_MAJOR:
        out = {k: np.asfortranarray(v) for k, v in out.items()}
    return {k: masked(v, result.valid.get(k)) for k, v in out.items()}


def _place_sparse(arr, frags, wanted, lo, hi, result, pool):
    """Sparse fragments (unordered writes of old TileDB) go on top of every dense one, later over earlier,
    except tiles whose MBR a later dense fragment covers (legacy Reader; DISCREPANCIES.md)."""
    box = {d.name: (a, b) for d, a, b in zip(arr.dims, lo, hi)}
    for i, frag in enumerate(frags):
        if frag.dense:
            continue
        later = [f.non_empty_domain for f in frags[i + 1:] if f.dense]
        mbrs = frag.mbrs(arr.dims)
        tiles = [k for k in sparse_tiles(arr, frag, box)
                 if not any(_covers(ned, [m[0][k] for m in mbrs], [m[1][k] for m in mbrs]) for ned in later)]
        coords = arr.tiles.coords(frag, arr.dims, tiles, pool)
        keep = np.logical_and.reduce([(c >= a) & (c <= b) for c, a, b in zip(coords, lo, hi)])
        at = tuple((c[keep] - a).astype(np.int64) for c, a in zip(coords, lo))
        for a in wanted:
            idx = field_index(frag, a)
            if idx is None:
                result.put_fill(a, at)
            else:
                values, validity = arr.tiles.field(frag, idx, tiles, pool)
                result.put(a, at, values[keep], validity[keep] if a.nullable else None)
