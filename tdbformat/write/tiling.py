"""Cells to tiles, the way back of :mod:`.order`: a dense write's subarray laid out as whole tiles of the
schema's tile grid (tile order, then cell order inside each tile), and a sparse write's cells sorted in
global order and cut into tiles of ``capacity`` cells (REFERENCE.md §4.3, fragment.md).
"""

from __future__ import annotations

import functools

import numpy as np

from ..enums import Layout
from ..errors import FormatError
from ..structs.array_schema import VAR_NUM
from ..array.order import hilbert_values, order_cells, tile_grid, tile_range

__all__ = ["Utf8Column", "dense_box", "dense_tiles", "sparse_order", "tile_bounds", "terminated_cells", "var_bytes",
           "var_cells"]


def dense_box(dims, subarray):
    """(first tile, tile counts, lows of the tile-aligned box) of the tiles a dense ``subarray`` meets."""
    dom_lo = [int(d.domain[0]) for d in dims]
    extents = [int(d.tile_extent) for d in dims]
    first, last = tile_range(dom_lo, extents, [lo for lo, _ in subarray], [hi for _, hi in subarray])
    counts = [b - a + 1 for a, b in zip(first, last)]
    box_lo = [d + f * e for d, f, e in zip(dom_lo, first, extents)]
    return counts, extents, box_lo


def dense_tiles(values: np.ndarray, subarray, dims, fill, tile_order: Layout, cell_order: Layout) -> np.ndarray:
    """``values`` (one per cell of ``subarray``, row-major axes) inside whole tiles padded with ``fill``, as a
    (tiles, cells per tile) array in tile order and cell order (``dims``: the schema's dimension Containers)."""
    counts, extents, box_lo = dense_box(dims, subarray)
    shape = [c * e for c, e in zip(counts, extents)]
    if list(values.shape) == shape:  # the subarray is whole tiles: no padding, no copy
        box = values
    else:
        box = np.empty(shape, dtype=values.dtype)
        box.fill(fill)  # not np.full: it turns a bytes fill of object cells into numpy "S", dropping NULs
        box[tuple(slice(int(lo) - b, int(hi) - b + 1) for (lo, hi), b in zip(subarray, box_lo))] = values
    n = len(dims)
    split = box.reshape([x for c, e in zip(counts, extents) for x in (c, e)])
    tile_axes = [2 * i for i in range(n)]
    cell_axes = [2 * i + 1 for i in range(n)]
    if tile_order == Layout.COL_MAJOR:
        tile_axes = tile_axes[::-1]
    if cell_order == Layout.COL_MAJOR:
        cell_axes = cell_axes[::-1]
    return split.transpose(tile_axes + cell_axes).reshape(int(np.prod(counts)), int(np.prod(extents)))


def sparse_grid(dims) -> tuple[list, list]:
    """(domain lows, tile extents) the global order of sparse cells uses, None for a var-sized dimension
    (``dims``: the schema's dimension Containers); an extent that is not positive (a hostile schema file) is
    a FormatError."""
    var = [d.get("cell_val_num") == VAR_NUM for d in dims]
    dom_lo, extents = zip(*((None, None) if v else g for v, g in zip(var, zip(*tile_grid(dims)))))
    return list(dom_lo), list(extents)


def sparse_order(coords, dims, tile_order: Layout, cell_order: Layout) -> np.ndarray:
    """The permutation that puts sparse cells (one column per dimension, datetimes as int64) in global order
    (``dims``: the schema's dimension Containers)."""
    var = [d.get("cell_val_num") == VAR_NUM for d in dims]
    dom_lo, extents = sparse_grid(dims)
    hilbert = None
    if cell_order == Layout.HILBERT:
        hilbert = hilbert_values(coords, [None if v else d.domain for v, d in zip(var, dims)])
    return order_cells(coords, Layout.GLOBAL_ORDER, dom_lo=dom_lo, extents=extents, tile_order=tile_order,
                       cell_order=cell_order, hilbert=hilbert)


def tile_bounds(n: int, capacity: int) -> np.ndarray:
    """Start of each sparse tile of ``capacity`` cells, and ``n`` at the end. A capacity of 0 comes only from a
    hostile schema file (TileDB refuses to set one), which salvage and repair write through."""
    if capacity < 1:
        raise FormatError(f"the array schema's capacity is {capacity}: a sparse tile holds at least one cell")
    return np.append(np.arange(0, n, capacity, dtype=np.int64), n) if n else np.zeros(1, np.int64)


def var_bytes(column: np.ndarray, numpy_dtype: np.dtype) -> list[bytes]:
    """Each var cell as its stored bytes: str as UTF-8, bytes as they are, arrays as values of the field's type."""
    values = column.tolist()
    kinds = set(map(type, values))
    if kinds <= {str}:  # the usual column of strings, in C loops (a Python loop cost 5x more)
        return list(map(str.encode, values))
    if kinds <= {bytes}:
        return values
    out = []
    for v in values:
        if isinstance(v, str):
            out.append(v.encode("utf-8"))
        elif isinstance(v, (bytes, bytearray, memoryview)):
            out.append(bytes(v))
        else:
            out.append(np.ascontiguousarray(v, numpy_dtype).tobytes())
    return out


class Utf8Column(np.ndarray):
    """A C-contiguous object column of str cells whose UTF-8 the write's check made (:func:`of`); its views
    (a dense write's tiles of whole tiles) carry it, and :func:`terminated_cells` slices a tile's bytes from it
    instead of encoding the cells again (1M strings: 27 of 120 ms)."""

    utf8 = None  # the column's _Utf8, on it and on every array made from it (only views of it use it)

    def __array_finalize__(self, obj):
        self.utf8 = getattr(obj, "utf8", None)

    @classmethod
    def of(cls, column: np.ndarray, raw: bytes) -> "Utf8Column":
        """``column`` (C-contiguous) seen as a Utf8Column of ``raw``: its cells' UTF-8, a NUL after each."""
        out = column.view(cls)
        out.utf8 = _Utf8(raw, column)
        return out


class _Utf8:
    def __init__(self, raw: bytes, origin: np.ndarray):
        self.raw, self.origin = raw, origin  # (the origin held: no other array can take its memory)
        self.address = origin.__array_interface__["data"][0]

    @functools.cached_property
    def ends(self) -> np.ndarray | None:
        """Where each cell's NUL is; None if a cell holds a NUL of its own."""
        ends = np.flatnonzero(np.frombuffer(self.raw, np.uint8) == 0)
        return ends if len(ends) == self.origin.size else None

    def run(self, cells: np.ndarray) -> tuple[bytes, np.ndarray] | None:
        """:func:`terminated_cells` of ``cells`` where they are a run of the column (a 1-D view into it)."""
        first, rest = divmod(cells.__array_interface__["data"][0] - self.address, cells.itemsize)
        if cells.ndim != 1 or cells.strides != (cells.itemsize,) or rest or first < 0 or \
                first + len(cells) > self.origin.size or not len(cells) or self.ends is None:
            return None
        ends = self.ends[first:first + len(cells)]
        begin = int(self.ends[first - 1]) + 1 if first else 0
        lengths = np.diff(ends, prepend=begin - 1).view(np.uint64)
        lengths -= np.uint64(1)
        return self.raw[begin:int(ends[-1]) + 1], lengths


def terminated_cells(column: np.ndarray) -> tuple[bytes, np.ndarray] | None:
    """A column of str as UTF-8 with a NUL after each cell, and each cell's length, encoded at once (1M short
    strings: 22 ms, cell by cell 61), or sliced from a :class:`Utf8Column`'s; None for other cells, text UTF-8
    cannot hold, or a cell holding a NUL."""
    made = column.utf8.run(column) if isinstance(column, Utf8Column) and column.utf8 is not None else None
    if made is not None or not len(column):
        return made
    values = column.tolist()
    values.append("")  # (a NUL after the last cell too: concatenating one copied the whole column)
    try:
        raw = "\0".join(values).encode()
    except (TypeError, UnicodeEncodeError):
        return None
    ends = np.flatnonzero(np.frombuffer(raw, np.uint8) == 0)
    if len(ends) != len(values) - 1:  # a cell holds a NUL of its own: the NULs are not the cells' ends
        return None
    lengths = np.diff(ends, prepend=-1).view(np.uint64)
    lengths -= np.uint64(1)
    return raw, lengths


def var_cells(column: np.ndarray, numpy_dtype: np.dtype) -> tuple[bytes, np.ndarray]:
    """The var cells' stored bytes back to back (as :func:`var_bytes` makes them), and each cell's length."""
    found = terminated_cells(column)
    if found is not None:
        return found[0].translate(None, b"\0"), found[1]  # (translate: 0.6 ms a tile, a numpy mask 1.0)
    parts = var_bytes(column, numpy_dtype)
    return b"".join(parts), np.fromiter(map(len, parts), np.uint64, len(parts))
