"""Cells to tiles, the way back of :mod:`.order`: a dense write's subarray laid out as whole tiles of the
schema's tile grid (tile order, then cell order inside each tile), and a sparse write's cells sorted in
global order and cut into tiles of ``capacity`` cells (REFERENCE.md §4.3, fragment.md).
"""

from __future__ import annotations

import numpy as np

from ..enums import Layout
from ..errors import FormatError
from ..structs.array_schema import VAR_NUM
from ..array.order import hilbert_values, order_cells, tile_grid, tile_range

__all__ = ["TileStreams", "Utf8Column", "dense_box", "dense_tiles", "encoded_run", "sparse_order", "streamed_tiles",
           "terminated_cells", "tile_bounds", "utf8_cells", "var_bytes", "var_cells"]


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
    """A C-contiguous object column of str cells whose UTF-8 the write's check made (:func:`utf8_cells`); its
    views (a dense write's tiles of whole tiles) carry it, and :func:`encoded_run` slices a tile's bytes from it
    instead of encoding the cells again (1M strings: 27 of 120 ms)."""

    utf8 = None  # the column's _Utf8, on it and on every array made from it (only views of it use it)

    def __array_finalize__(self, obj):
        self.utf8 = getattr(obj, "utf8", None)

    @classmethod
    def of(cls, column: np.ndarray, encoded: tuple, streams=None) -> "Utf8Column":
        """``column`` (C-contiguous) seen as a Utf8Column of ``encoded`` (:func:`utf8_cells` of its cells), whose
        tiles ``streams`` (:class:`TileStreams`) filtered as they came."""
        out = column.view(cls)
        out.utf8 = _Utf8(*encoded, column, streams)
        return out


class _Utf8:
    def __init__(self, data: np.ndarray, bounds: np.ndarray, origin: np.ndarray, streams=None):
        self.data, self.bounds, self.origin = data, bounds, origin  # (the origin held: no other takes its memory)
        self.address, self.streams = origin.__array_interface__["data"][0], streams

    def run(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """:func:`encoded_run` of ``cells`` where they are a run of the column (a 1-D view into it)."""
        first, rest = divmod(cells.__array_interface__["data"][0] - self.address, cells.itemsize)
        if cells.ndim != 1 or cells.strides != (cells.itemsize,) or rest or first < 0 or \
                first + len(cells) > self.origin.size or not len(cells):
            return None
        begin, end = int(self.bounds[first]), int(self.bounds[first + len(cells)])
        offsets = self.bounds[first:first + len(cells)]
        return self.data[begin:end], (offsets - begin if first else offsets).view("<u8")


_BLOCK = 1 << 13  # cells encoded at a time: its text and bytes stay in the cache, and its chunks reach the streams soon


def utf8_cells(values: np.ndarray, streams=None) -> tuple[np.ndarray, np.ndarray] | None:
    """The UTF-8 of ``values`` (a 1-D object array of str) back to back, and where each cell starts (and, last,
    where the last ends), encoded a block of cells at a time: joined with a NUL after each cell, encoded, the
    NULs found and dropped (a whole 1M-cell column at once faulted in 45 MB of fresh pages for its list, text,
    bytes and their copies: 25 ms of a 100 ms write). None for no cells, or where a cell holds a NUL of its
    own; every cell is still encoded, so that TypeError (a cell that is not str) and UnicodeEncodeError (text
    UTF-8 cannot hold) come as from encoding them all. ``streams``: the :class:`TileStreams` of the column's
    tiles, which take the cells encoded after each block."""
    n, data, pos, whole = len(values), np.empty(0, np.uint8), 0, True
    bounds, steps = np.zeros(n + 1, np.int64), np.arange(min(n, _BLOCK), dtype=np.int64)
    for a in range(0, n, _BLOCK):
        part = values[a:a + _BLOCK].tolist()
        part.append("")  # (a NUL after the block's last cell too)
        raw = "\0".join(part).encode()
        if not whole:
            continue
        nuls = np.flatnonzero(np.frombuffer(raw, np.uint8) == 0)
        whole, b = len(nuls) == len(part) - 1, a + len(nuls)
        if whole:
            # a cell ends at its NUL, less the NULs before it
            np.subtract(nuls, steps[:len(nuls)] - pos, out=bounds[a + 1:b + 1])
            kept = np.frombuffer(raw.translate(None, b"\0"), np.uint8)
            if pos + len(kept) > len(data):  # grown to the size the cells so far foretell, an eighth over
                data = _grown(data, pos, (pos + len(kept)) * n // b * 9 // 8 + 64)
            data[pos:pos + len(kept)] = kept
            pos += len(kept)
            if streams is not None:
                streams.add(data[:pos], bounds, b)
    return (data[:pos], bounds) if whole and n else None


def _grown(data: np.ndarray, used: int, size: int) -> np.ndarray:
    out = np.empty(size, np.uint8)
    out[:used] = data[:used]
    return out


class TileStreams:
    """The tiles of a column of str, runs of ``extent`` cells, filtered as the write's check encodes their cells
    (:func:`utf8_cells` feeds a block at a time): ``make(base)`` gives a tile's pair of
    :class:`~..filters.pipeline.TileStream`, of its bytes (from ``base`` of the column's) and of its offsets,
    once its bytes outgrow ``least`` (a smaller tile is filtered when it is stored: a stream's tasks cost more
    than they save). ``made_for``: what the streams' bytes depend on besides the cells."""

    def __init__(self, make, extent: int, made_for, least: int):
        self.make, self.extent, self.made_for, self.least = make, extent, made_for, least
        self._tiles, self._offsets, self._known = {}, {}, 0

    def add(self, data, bounds, known: int) -> None:
        """The cells before ``known`` encoded: their bytes, ``data``, and ``bounds`` (:func:`utf8_cells`)."""
        extent = self.extent
        for t in range(self._known // extent, -(-known // extent)):
            first, upto = t * extent, min(known, (t + 1) * extent)
            done = max(self._known, first)  # (the tile's offsets so far, less its start: as its tile holds them)
            if t not in self._tiles:
                if bounds[upto] - bounds[first] <= self.least:
                    continue
                self._tiles[t], self._offsets[t], done = self.make(int(bounds[first])), np.empty(extent, "<u8"), first
            offsets, (cells, starts) = self._offsets[t], self._tiles[t]
            np.subtract(bounds[done:upto], bounds[first], out=offsets[done - first:upto - first].view(np.int64))
            cells.add(data[:int(bounds[upto])], bounds[first + 1:upto + 1])
            starts.add(offsets[:upto - first].view(np.uint8))
            if upto == first + extent:  # (its cells all known: its last chunks go now, not when it is stored)
                cells.finish(data[:int(bounds[upto])], offsets, bounds[first + 1:upto + 1])
                starts.finish(offsets.view(np.uint8))
        self._known = known

    def tile(self, first: int, data, bounds) -> tuple | None:
        """The filtered tiles (of the bytes, of the offsets) of the tile of cells from ``first``; once (its
        streams are let go), and None if it has none."""
        if first % self.extent or first // self.extent not in self._tiles:
            return None
        streams, offsets = self._tiles.pop(first // self.extent), self._offsets.pop(first // self.extent)
        end = first + self.extent
        return (streams[0].tile(data[:int(bounds[end])], offsets, bounds[first + 1:end + 1]),
                streams[1].tile(offsets.view(np.uint8)))


def streamed_tiles(cells: np.ndarray, made_for) -> tuple | None:
    """The filtered tiles of the bytes and of the offsets of ``cells`` that the write's check filtered as it
    encoded them (:class:`TileStreams`), where they are a tile of a :class:`Utf8Column` whose streams were
    ``made_for`` this tile; else None."""
    utf8 = cells.utf8 if isinstance(cells, Utf8Column) else None
    if utf8 is None or utf8.streams is None or utf8.streams.made_for != made_for or cells.ndim != 1 or \
            cells.strides != (cells.itemsize,) or len(cells) != utf8.streams.extent:
        return None
    first, rest = divmod(cells.__array_interface__["data"][0] - utf8.address, cells.itemsize)
    return None if rest or first < 0 else utf8.streams.tile(first, utf8.data, utf8.bounds)


def encoded_run(column: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The UTF-8 of a :class:`Utf8Column`'s run of cells (a dense tile of whole tiles) back to back and each
    cell's u64 offset, sliced from what the write's check encoded; None for other cells."""
    return column.utf8.run(column) if isinstance(column, Utf8Column) and column.utf8 is not None else None


def terminated_cells(column: np.ndarray) -> tuple[bytes, np.ndarray] | None:
    """A column of str as UTF-8 with a NUL after each cell, and each cell's length, encoded at once (1M short
    strings: 22 ms, cell by cell 61); None for other cells, text UTF-8 cannot hold, or a cell holding a NUL."""
    if not len(column):
        return None
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
    encoded = encoded_run(column)
    if encoded is not None:
        return encoded[0], np.diff(encoded[1], append=np.uint64(len(encoded[0])))
    found = terminated_cells(column)
    if found is not None:
        return found[0].translate(None, b"\0"), found[1]  # (translate: 0.6 ms a tile, a numpy mask 1.0)
    parts = var_bytes(column, numpy_dtype)
    return b"".join(parts), np.fromiter(map(len, parts), np.uint64, len(parts))
