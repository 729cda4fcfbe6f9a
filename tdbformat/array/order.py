"""Cell-order arithmetic for reads: dense tile grids, tile shapes and the sort orders of sparse cells.

TileDB lays a dense fragment out as the tiles that intersect its non-empty domain, in tile order, each
tile holding all of its cells in cell order (REFERENCE.md §4.3, fragment.md). Sparse cells are sorted
row-major, column-major or in global order (tile order over the tile grid, then cell order; for a Hilbert
cell order, the cells' Hilbert values with no tiles involved).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..enums import Layout
from ..errors import FormatError

__all__ = ["tile_grid", "tile_range", "tiles_in_order", "tile_position", "tile_box", "as_tile", "ranks", "tile_index",
           "hilbert_values", "order_cells", "global_order_keys", "ordinal_key", "global_keys", "linear_keys"]


def tile_grid(dimensions) -> tuple[list, list]:
    """(domain lows, tile extents) of a schema's dimensions, the grid tiles are laid on; an extent that is
    not positive (TileDB never writes one) is a FormatError, not a division by zero. Dimensions without an
    extent (var-sized, or sparse without one) give None."""
    dom_lo, extents = [], []
    for d in dimensions:
        e = d.tile_extent
        if e is not None and not e > 0:
            raise FormatError(f"dimension {d.name} has tile extent {e}: a tile extent must be positive")
        dom_lo.append(d.domain[0] if d.domain else None)
        extents.append(e)
    return dom_lo, extents


def tile_range(dom_lo, extents, lo, hi):
    """Per dimension, the first and last tile index (in the grid anchored at ``dom_lo``) touching ``[lo, hi]``."""
    first = [(int(a) - int(d)) // int(e) for a, d, e in zip(lo, dom_lo, extents)]
    last = [(int(b) - int(d)) // int(e) for b, d, e in zip(hi, dom_lo, extents)]
    return first, last


def tiles_in_order(first, last, tile_order: Layout) -> np.ndarray:
    """The grid coordinates of the tiles ``first..last`` (inclusive, per dimension) in tile order."""
    axes = [range(a, b + 1) for a, b in zip(first, last)]
    if tile_order == Layout.COL_MAJOR:
        return np.array([t[::-1] for t in itertools.product(*axes[::-1])], dtype=np.int64).reshape(-1, len(axes))
    return np.array(list(itertools.product(*axes)), dtype=np.int64).reshape(-1, len(axes))


def tile_position(tile, first, counts, tile_order: Layout) -> int:
    """The position of grid tile ``tile`` among the tiles ``first..first+counts-1`` in tile order."""
    rel = [int(t) - int(f) for t, f in zip(tile, first)]
    counts = [int(c) for c in counts]
    if not all(0 <= r < c for r, c in zip(rel, counts)):
        raise ValueError(f"tile {list(tile)} is outside the {counts} tiles from {list(first)}")
    pairs = list(zip(rel, counts))
    position = 0
    for r, c in pairs[::-1] if tile_order == Layout.COL_MAJOR else pairs:  # plain ints: called once per tile
        position = position * c + r
    return position


def tile_box(dom_lo, extents, tile):
    """The inclusive ``(lo, hi)`` cell coordinates of grid tile ``tile``."""
    lo = [int(d) + int(t) * int(e) for d, t, e in zip(dom_lo, tile, extents)]
    return lo, [a + int(e) - 1 for a, e in zip(lo, extents)]


def as_tile(cells: np.ndarray, extents, cell_order: Layout) -> np.ndarray:
    """A dense tile's cells (in cell order) as an N-D array indexed by coordinates (row-major axes)."""
    shape = tuple(int(e) for e in extents)
    if cells.size != math.prod(shape):
        raise FormatError(f"a dense tile holds {cells.size} cells, not the {math.prod(shape)} of its extents")
    return cells.reshape(shape, order="F" if cell_order == Layout.COL_MAJOR else "C")


def ranks(column: np.ndarray) -> np.ndarray:
    """Integer sort keys of a column; var-sized (object) columns rank their bytes/strings."""
    if column.dtype == object:
        return np.unique(column, return_inverse=True)[1].reshape(-1)
    return ordinal_key(column)


def hilbert_values(coords, domains) -> np.ndarray:
    """TileDB's Hilbert value of each cell (``coords``: one array per dimension; ``domains``: each numeric
    dimension's ``(low, high)``, ``None`` for string dimensions).

    Each dimension gets ``63 // dim_num`` bits; its coordinates map onto ``0 .. 2**bits - 1`` and Skilling's
    transpose of those axes is read out as one number (TileDB: ``Dimension::map_to_uint64`` in
    ``array_schema/dimension.cc``, ``Hilbert::coords_to_hilbert`` in ``misc/hilbert.h``).
    """
    bits = 63 // len(coords)
    axes = [_string_axis(c, bits) if dom is None else _numeric_axis(c, dom, bits)
            for c, dom in zip(coords, domains)]
    return _skilling(axes, bits)


def _numeric_axis(column: np.ndarray, domain, bits: int) -> np.ndarray:
    """Coordinates scaled onto ``0 .. 2**bits - 1`` in double precision, truncated, as TileDB does."""
    if column.dtype.kind in "mM":  # datetimes and times are their stored int64
        column = column.view(np.int64)
    lo, hi = np.float64(domain[0]), np.float64(domain[1])
    with np.errstate(invalid="ignore"):
        scaled = (column.astype(np.float64) - lo) / (hi - lo) * np.float64((1 << bits) - 1)
    # a one-value domain gives 0/0, which x86-64 builds turn into 2**63; that orders like 0: with two or more
    # dimensions no step moves bit 63 into the bits read out, and with one every cell ties anyway
    return np.nan_to_num(scaled, nan=0.0).astype(np.uint64)


def _string_axis(column: np.ndarray, bits: int) -> np.ndarray:
    """A string's first 8 bytes as a big-endian number cut to its top ``bits`` bits.

    TileDB ORs in each byte as a signed ``char``: a byte of 0x80 or more sets every higher bit too.
    """
    table = np.array([v[:8] for v in column.tolist()], dtype="S8").view(np.uint8).reshape(-1, 8)
    value = np.zeros(len(table), np.uint64)
    for byte in table.T.astype(np.uint64):
        value = (value << np.uint64(8)) | np.where(byte >= 0x80, byte | np.uint64(0xFFFF_FFFF_FFFF_FF00), byte)
    return value >> np.uint64(64 - bits)


def _skilling(axes: list[np.ndarray], bits: int) -> np.ndarray:
    """Skilling's "Programming the Hilbert curve" (2004): axes to transpose, then the transpose's bits
    interleaved level by level, dimension 0 the most significant of each level (``Hilbert::coords_to_hilbert``).
    Every step works on the whole uint64, as TileDB's does: bits above ``bits`` can shift down into the result."""
    x = [a.astype(np.uint64) for a in axes]
    n = len(x)
    q = 1 << (bits - 1)
    while q > 1:
        bit, low = np.uint64(q), np.uint64(q - 1)
        x[0] = np.where((x[0] & bit) != 0, x[0] ^ low, x[0])
        for i in range(1, n):
            swap = (x[0] ^ x[i]) & low
            flip = (x[i] & bit) != 0
            x[0] = np.where(flip, x[0] ^ low, x[0] ^ swap)
            x[i] = np.where(flip, x[i], x[i] ^ swap)
        q >>= 1
    for i in range(1, n):  # Gray encode
        x[i] = x[i] ^ x[i - 1]
    t = x[n - 1]
    shift = 1
    while shift < bits:
        x[n - 1] = x[n - 1] ^ (x[n - 1] >> np.uint64(shift))
        shift <<= 1
    t = t ^ x[n - 1]
    for i in range(n - 1):
        x[i] = x[i] ^ t
    out = np.zeros(len(x[0]), np.uint64)
    for j in range(bits):
        for i in range(n):
            out |= ((x[i] >> np.uint64(j)) & np.uint64(1)) << np.uint64(j * n + n - 1 - i)
    return out


#: byte ``i ^ 0x80``: bytes compared unsigned then sort as the original bytes compared as signed chars
_SIGNED_CHAR = bytes(i ^ 0x80 for i in range(256))


def _signed_chars(column: np.ndarray) -> np.ndarray:
    """A string column re-encoded so that numpy's byte order is TileDB's signed ``char`` order of it."""
    if column.dtype != object:
        return column
    out = np.empty(len(column), object)
    out[:] = [v.translate(_SIGNED_CHAR) for v in column.tolist()]
    return out


def order_cells(coords, layout: Layout, *, dom_lo=None, extents=None, tile_order=Layout.ROW_MAJOR,
                cell_order=Layout.ROW_MAJOR, hilbert=None) -> np.ndarray:
    """The permutation that sorts cells (``coords``: one array per dimension) by ``layout``.

    ``Layout.GLOBAL_ORDER`` sorts by tile (``extents`` per dimension, ``None`` for dimensions without
    one) in ``tile_order``, then by ``cell_order``; a Hilbert cell order sorts by the ``hilbert`` values
    (:func:`hilbert_values`), then row-major.
    The sort is stable, so cells with equal coordinates keep their incoming order.
    """
    if layout == Layout.GLOBAL_ORDER:
        return np.lexsort([ranks(k) for k in global_order_keys(coords, dom_lo=dom_lo, extents=extents,
                                                               tile_order=tile_order, cell_order=cell_order,
                                                               hilbert=hilbert)])
    keys = [ranks(c) for c in coords]
    if layout == Layout.ROW_MAJOR:
        return np.lexsort(keys[::-1]) if keys else np.arange(0)
    if layout == Layout.COL_MAJOR:
        return np.lexsort(keys)
    raise ValueError(f"no sort order for layout {layout!r}")


def global_order_keys(coords, *, dom_lo, extents, tile_order, cell_order, hilbert=None) -> list:
    """The keys whose ``np.lexsort`` (the last one primary) is the global order of cells (as
    :func:`order_cells`), as values that compare across batches of cells: tile indexes, then coordinates
    (datetimes as their int64, strings as bytes); with a Hilbert cell order, the ``hilbert`` values, then
    row-major coordinates, strings compared as signed chars the way TileDB 2.30's writer sorts a fragment
    (Domain::cell_order_cmp_impl<char>), and no tile grid."""
    keys = [ordinal_key(c) for c in coords]
    if cell_order == Layout.HILBERT:
        return [_signed_chars(k) for k in keys][::-1] + [hilbert]
    tiles = [tile_index(k, d, e) if e is not None else np.zeros(len(k), np.int64)
             for k, d, e in zip(keys, dom_lo, extents)]
    tiles = tiles[::-1] if tile_order == Layout.ROW_MAJOR else tiles
    cells = keys[::-1] if cell_order == Layout.ROW_MAJOR else keys
    return cells + tiles


def ordinal_key(column: np.ndarray) -> np.ndarray:
    """A column as the values cells sort by: datetimes as the int64 TileDB stores (tile arithmetic needs ints)."""
    return column.view(np.int64) if column.dtype.kind in "mM" else column


def tile_index(keys: np.ndarray, lo, extent) -> np.ndarray:
    """Each coordinate's tile index along its dimension. Integer ones (datetimes as their int64) as TileDB's
    ``Dimension::tile_idx`` computes it, in uint64: exact over the whole range of every integer type (an int64
    span of 2**63 or more wraps in int64, and float64 rounds past 2**53); floats floored in float64."""
    if keys.dtype.kind in "iu":
        return (keys.astype(np.uint64) - np.uint64(int(lo) % 2**64)) // np.uint64(int(extent))
    return (keys - lo) // extent


def global_keys(coords, dimensions, tile_order: Layout, cell_order: Layout) -> np.ndarray | None:
    """Each cell's position in the global order of integer dimensions as one int64 (tile in tile order times
    the cells of a tile, plus the cell's place in its tile in cell order): sorting these sorts the cells in
    global order, and equal keys are equal coordinates. None where no such key exists: float or string
    dimensions, a Hilbert cell order, a grid of 2**62 or more cells, or a coordinate outside its domain."""
    if cell_order not in (Layout.ROW_MAJOR, Layout.COL_MAJOR):
        return None
    offsets = _domain_offsets(coords, dimensions)
    if offsets is None:
        return None
    extents, counts = [], []
    for d in dimensions:
        lo, hi = int(d.domain[0]), int(d.domain[1])
        extent = int(d.tile_extent) if d.tile_extent is not None else hi - lo + 1
        if extent < 1:
            return None
        extents.append(extent)
        counts.append((hi - lo) // extent + 1)
    if math.prod(extents) * math.prod(counts) >= 2**62:
        return None
    tiles = [o // e for o, e in zip(offsets, extents)]
    within = [o - t * e for o, t, e in zip(offsets, tiles, extents)]
    return _ravel(tiles, counts, tile_order) * math.prod(extents) + _ravel(within, extents, cell_order)


def linear_keys(coords, dimensions, layout: Layout) -> np.ndarray | None:
    """Each cell's row-major (``layout`` COL_MAJOR: column-major) position in the domain of integer
    dimensions as one int64: a stable sort of these is a stable sort of the cells in that order, about 8x
    faster than ``np.lexsort`` of the coordinates (timsort finds the runs a global-order fragment already
    has). None where no such key exists (as :func:`global_keys`)."""
    offsets = _domain_offsets(coords, dimensions)
    if offsets is None or math.prod(int(d.domain[1]) - int(d.domain[0]) + 1 for d in dimensions) >= 2**62:
        return None
    return _ravel(offsets, [int(d.domain[1]) - int(d.domain[0]) + 1 for d in dimensions], layout)


def _domain_offsets(coords, dimensions) -> list | None:
    """Each integer coordinate's offset from its domain's low end, int64; None unless every dimension is an
    integer one with a domain that holds all of its coordinates."""
    if not coords:
        return None
    offsets = []
    for c, d in zip(coords, dimensions):
        if c.dtype.kind not in "iu" or not d.domain:
            return None
        lo, hi = int(d.domain[0]), int(d.domain[1])
        if len(c) and (int(c.min()) < lo or int(c.max()) > hi):
            return None
        # (exact in uint64; int64 holds it where the callers use it, spans under 2**62)
        offsets.append((c.astype(np.uint64) - np.uint64(lo % 2**64)).view(np.int64))
    return offsets


def _ravel(index, sizes, layout: Layout) -> np.ndarray:
    """Row-major (or column-major) positions of multi-indexes, in int64."""
    out = np.zeros(len(index[0]), np.int64)
    pairs = list(zip(index, sizes))
    for i, size in pairs[::-1] if layout == Layout.COL_MAJOR else pairs:
        out = out * size + i
    return out
