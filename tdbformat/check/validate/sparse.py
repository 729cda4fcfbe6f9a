"""The rules about a sparse fragment's coordinates: R-tree MBRs hold their tiles' coordinates and parents hold
their children; cells are in global order (``array.order``, as the reader sorts), without duplicates unless
the schema allows them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...enums import Layout
from ...errors import FormatError
from ...array.cells import ordinal
from ...array.fragment import mbr_bounds
from ...array.sparse import _sort
from ...versions import FEATURES

__all__ = ["check_sparse"]


def _coord_fields(frag) -> list[int]:
    if FEATURES["coordinates_per_dimension"](frag.version):
        return [frag.index(d.name) for d in frag.metadata.dimensions]
    return [frag.index("__coords")]


def check_sparse(frag, tiles, decoded, report, pool) -> None:
    """``decoded``: per decoded field, each tile's result (a dict with its cell count "n" and, for fixed-size
    fields, its "values"; or the FormatError it raised)."""
    fields = _coord_fields(frag)
    if any(i not in decoded for i in fields):
        return
    per_tile = list(zip(*([r["n"] if isinstance(r, dict) else None for r in decoded[i]] for i in fields)))
    ok = [k for k, c in enumerate(per_tile) if None not in c and len(set(c)) == 1]
    dims = frag.metadata.dimensions
    try:
        if FEATURES["coordinates_per_dimension"](frag.version) and not any(d.var for d in dims):  # decoded already
            coords = [ordinal(np.concatenate([decoded[i][k]["values"] for k in ok]) if ok
                              else np.empty(0, d.datatype.numpy_dtype)) for i, d in zip(fields, dims)]
        else:  # var-sized or v1-4 zipped coordinates: as the reader splits them
            coords = tiles.coords(frag, dims, ok, pool)
        mbrs = frag.mbrs(dims)
    except FormatError as e:
        report.error(e, rule="tile-decodes")
        return
    sizes = np.array([per_tile[k][0] for k in ok], np.int64)
    where = _Where(frag, tiles, fields[0], ok, sizes)
    if report.wants("rtree-mbrs"):
        _leaves(frag, dims, coords, mbrs, where, report)
        _parents(frag, dims, report, tiles)
    if report.wants("global-order", "duplicates") and len(ok) == len(per_tile):
        _order(frag, coords, tiles, pool, where, report)


class _Where:
    """Cell positions of the decoded tiles, back to (tile, data file, byte offset of the tile)."""

    def __init__(self, frag, tiles, idx, ok, sizes):
        self.frag, self.tiles, self.idx, self.ok = frag, tiles, idx, np.asarray(ok, np.int64)
        self.starts = np.concatenate([[0], np.cumsum(sizes)])[:-1]

    def tile(self, cell: int) -> int:
        return int(self.ok[np.searchsorted(self.starts, cell, "right") - 1])

    def file(self, k: int):
        name, start, _ = self.frag.tile_span("", self.idx, k)
        return self.tiles.storage.join(self.frag.path, name), start


def _comparable(column):
    """Values that compare as TileDB compares them: strings as bytes; the numbers of a fixed-size dimension
    (an R-tree with a var-sized dimension holds them as objects too) as they are."""
    if column.dtype == object:
        out = np.empty(len(column), object)
        out[:] = [v.encode("utf-8", "surrogateescape") if isinstance(v, str) else
                  bytes(v) if isinstance(v, (bytes, bytearray, memoryview)) else v for v in column]
        return out
    return column


def _leaves(frag, dims, coords, mbrs, where, report) -> None:
    """Each leaf MBR holds the coordinates of its tile (vectorised: one reduceat per dimension)."""
    full = np.diff(np.append(where.starts, len(coords[0]) if coords else 0)) > 0
    starts = where.starts[full]
    tiles_k = where.ok[full]
    if not len(starts):
        return
    for d, col, (lows, highs) in zip(dims, coords, mbrs):
        if len(lows) <= int(tiles_k.max()):
            report.add("rtree-mbrs", f"fragment {frag.name}: the R-tree has {len(lows)} leaves for "
                       f"{int(tiles_k.max()) + 1}+ tiles", file=frag.path, expected=int(tiles_k.max()) + 1,
                       found=len(lows))
            return
        col = _comparable(col)
        lo, hi = _comparable(np.asarray(lows)[tiles_k]), _comparable(np.asarray(highs)[tiles_k])
        tmin, tmax = np.minimum.reduceat(col, starts), np.maximum.reduceat(col, starts)
        bad = np.flatnonzero(~((lo <= tmin) & (tmax <= hi)))
        if len(bad):
            j = int(bad[0])
            k = int(tiles_k[j])
            path, at = where.file(k)
            report.add("rtree-mbrs", f"fragment {frag.name}, dimension {d.name}: the MBR of tile {k} does not hold "
                       f"its coordinates ({len(bad)} tiles)", file=path, structure="R-tree",
                       field=f"levels[-1].mbrs[{k}].{d.name}", offset=at,
                       expected=f"[{lo[j]!r}, {hi[j]!r}] holding the tile", found=f"[{tmin[j]!r}, {tmax[j]!r}]")


def _parents(frag, dims, report, tiles) -> None:
    """Each R-tree node holds its children: per level, one reduceat per dimension over the children."""
    fm = frag.metadata
    if fm.legacy is not None or not fm.rtree.levels:
        return
    levels, fanout = fm.rtree.levels, int(fm.rtree.fanout)
    for p in range(len(levels) - 1):
        parent, child = mbr_bounds(levels[p].mbrs, dims), mbr_bounds(levels[p + 1].mbrs, dims)
        n_child = len(child[0][0]) if dims else 0
        starts = np.arange(0, n_child, max(fanout, 1))
        if len(parent[0][0]) != len(starts):
            report.add("rtree-mbrs", f"fragment {frag.name}: R-tree level {p} has {len(parent[0][0])} nodes for the "
                       f"{n_child} below it (fanout {fanout})", file=frag.path, structure="R-tree",
                       field=f"levels[{p}].mbr_num", expected=len(starts), found=len(parent[0][0]))
            continue
        for d, (p_lo, p_hi), (c_lo, c_hi) in zip(dims, parent, child):
            p_lo, p_hi = _comparable(p_lo), _comparable(p_hi)
            lo, hi = np.minimum.reduceat(_comparable(c_lo), starts), np.maximum.reduceat(_comparable(c_hi), starts)
            bad = np.flatnonzero(~((p_lo <= lo) & (hi <= p_hi)))
            if len(bad):
                i = int(bad[0])
                report.add("rtree-mbrs", f"fragment {frag.name}, dimension {d.name}: R-tree node {i} of level {p} "
                           "does not hold its children", file=frag.path, structure="R-tree",
                           field=f"levels[{p}].mbrs[{i}].{d.name}", expected=f"[{lo[i]!r}, {hi[i]!r}] inside",
                           found=f"[{p_lo[i]!r}, {p_hi[i]!r}]")


def _order(frag, coords, tiles, pool, where, report) -> None:
    """Cells in global order (the reader's sort is stable: a sorted fragment sorts to itself), then no two
    neighbours equal (with cell timestamps, equal coordinates of different times are versions, not duplicates)."""
    n = len(coords[0]) if coords else 0
    if n < 2:
        return
    perm = _sort(SimpleNamespace(schema=frag.schema), coords, Layout.GLOBAL_ORDER)
    moved = np.flatnonzero(perm != np.arange(n))
    if len(moved):
        cell = int(moved[0])
        k = where.tile(cell)
        path, at = where.file(k)
        report.add("global-order", f"fragment {frag.name}: cell {cell} (tile {k}) is out of global order",
                   file=path, offset=at, expected=f"cell {int(perm[cell])} at position {cell}", found=f"cell {cell}")
        return
    if frag.schema.allows_dups or not report.wants("duplicates"):
        return
    same = np.ones(n - 1, bool)
    keys = list(coords)
    if frag.has_timestamps:
        keys.append(tiles.field(frag, frag.index("__timestamps"), [int(k) for k in where.ok], pool)[0])
    for col in keys:
        same &= col[1:] == col[:-1]
    dup = np.flatnonzero(same)
    if len(dup):
        cell = int(dup[0]) + 1
        k = where.tile(cell)
        path, at = where.file(k)
        report.add("duplicates", f"fragment {frag.name}: cell {cell} (tile {k}) repeats the coordinates of the cell "
                   f"before it ({len(dup)} duplicates), and the schema does not allow duplicates",
                   file=path, offset=at, expected="distinct coordinates",
                   found=[c[cell].item() if hasattr(c[cell], "item") else c[cell] for c in coords])
