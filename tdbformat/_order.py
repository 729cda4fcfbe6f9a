"""Cell-order arithmetic for reads: dense tile grids, tile shapes and the sort orders of sparse cells.

TileDB lays a dense fragment out as the tiles that intersect its non-empty domain, in tile order, each
tile holding all of its cells in cell order (REFERENCE.md §4.3, fragment.md). Sparse cells are sorted
row-major, column-major or in global order (tile order over the tile grid, then cell order).
"""

from __future__ import annotations

import itertools

import numpy as np

from .enums import Layout

__all__ = ["tile_range", "tiles_in_order", "tile_box", "as_tile", "ranks", "order_cells"]


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


def tile_box(dom_lo, extents, tile):
    """The inclusive ``(lo, hi)`` cell coordinates of grid tile ``tile``."""
    lo = [int(d) + int(t) * int(e) for d, t, e in zip(dom_lo, tile, extents)]
    return lo, [a + int(e) - 1 for a, e in zip(lo, extents)]


def as_tile(cells: np.ndarray, extents, cell_order: Layout) -> np.ndarray:
    """A dense tile's cells (in cell order) as an N-D array indexed by coordinates (row-major axes)."""
    shape = tuple(int(e) for e in extents)
    return cells.reshape(shape, order="F" if cell_order == Layout.COL_MAJOR else "C")


def ranks(column: np.ndarray) -> np.ndarray:
    """Integer sort keys of a column; var-sized (object) columns rank their bytes/strings."""
    if column.dtype == object:
        return np.unique(column, return_inverse=True)[1].reshape(-1)
    return column


def order_cells(coords, layout: Layout, *, dom_lo=None, extents=None, tile_order=Layout.ROW_MAJOR,
                cell_order=Layout.ROW_MAJOR, hilbert=None) -> np.ndarray:
    """The permutation that sorts cells (``coords``: one array per dimension) by ``layout``.

    ``Layout.GLOBAL_ORDER`` sorts by tile (``extents`` per dimension, ``None`` for dimensions without
    one) in ``tile_order``, then by ``cell_order``; a Hilbert cell order sorts by the ``hilbert`` values.
    The sort is stable, so cells with equal coordinates keep their incoming order.
    """
    keys = [ranks(c) for c in coords]
    if layout == Layout.ROW_MAJOR:
        return np.lexsort(keys[::-1]) if keys else np.arange(0)
    if layout == Layout.COL_MAJOR:
        return np.lexsort(keys)
    if layout != Layout.GLOBAL_ORDER:
        raise ValueError(f"no sort order for layout {layout!r}")
    if cell_order == Layout.HILBERT:
        # Hilbert arrays have no tile grid: global order is the Hilbert value, then row-major coordinates.
        return np.lexsort(keys[::-1] + [hilbert])
    tiles = [(k - d) // e if e is not None else np.zeros_like(k, dtype=np.int64)
             for k, d, e in zip(keys, dom_lo, extents)]
    tiles = tiles[::-1] if tile_order == Layout.ROW_MAJOR else tiles
    cells = keys[::-1] if cell_order == Layout.ROW_MAJOR else keys
    # lexsort's last key is the primary one
    return np.lexsort(cells + tiles)
