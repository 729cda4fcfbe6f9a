"""Tile ``k`` of field ``i`` of a fragment: its bytes read through the storage, unfiltered, and turned into
cells (REFERENCE.md §4, §11). The one path from a data tile on disk to numpy values."""

from __future__ import annotations

import functools
import math
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait

import numpy as np

from ..enums import Datatype, EncryptionType
from ..errors import FormatError, located
from ..filters import FilterPlan
from ..filters.pipeline import Entries
from ..filters.coords import coords_zipped, unzip_coords
from ..storage import LocalStorage
from ..structs.tile import read_tile
from ..versions import FEATURES
from .cells import U64, cell_dtype, entry_values, ordinal, result_dtype, split_var

__all__ = ["Tiles", "at_once", "rebased", "run_tiles", "var_run_tiles"]


class Tiles:
    """Reads and decodes the data tiles of an array's fragments."""

    def __init__(self, storage, key=None, encrypted=False):
        self.storage, self.key, self.encrypted = storage, key, encrypted
        self._plans = {}  # (fragment, field index, kind) -> _Plan

    def plan(self, frag, idx: int, kind: str) -> "_Plan":
        """How tiles of index-space field ``idx``'s ``kind`` file decode, worked out once per fragment and field:
        the field, its filter plan and its cell dtype (the per-tile cost of a read of many small tiles)."""
        if (got := self._plans.get((frag, idx, kind))) is None:
            got = self._plans[frag, idx, kind] = _Plan(frag, idx, kind, self.key, self.encrypted)
        return got

    def raw(self, frag, idx: int, kind: str, k: int, strings: bool = False, cells=None, spans=None, threads=1,
            entries=False):
        """Tile ``k`` of index-space field ``idx``'s ``kind`` file ("", "_var", "_validity"), unfiltered:
        bytes; with ``strings`` (var strings that carry their own offsets, §4.2) (data, offsets), or with
        ``entries`` the :class:`~tdbformat.filters.pipeline.Entries` string RLE or dictionary decode to; with
        ``cells=(count, field)`` a numpy array of that many cells, decoded in place once the chunk headers
        prove that size (so a lying tile extent allocates nothing); ``cells=(count, field, into)``: into the
        array ``into`` when it is that many contiguous cells of the field's dtype. ``spans``: a :class:`_Spans` that read the
        bytes of this tile and its neighbours at once. ``threads``: for the tile's chunks (a read that decodes
        as many tiles as it has threads at once gives each one: :func:`chunk_threads`)."""
        plan = self.plan(frag, idx, kind)
        name, start, end = frag.tile_span(kind, idx, k)
        path = plan.path(self.storage, name)
        try:
            if end < start:
                raise FormatError(f"the tile ends at {end}, before it starts")
            data = spans.get(kind, path, start, end) if spans is not None else None
            # offsets count from the tile here; located() below makes them file offsets (base=start)
            tile = read_tile(self.storage.read(path, start, end, what="data file") if data is None else data)
            out = None if cells is None else plan.claimed(tile, *cells[::2])
            got = plan.filters.decode(tile, var=strings, out=out, threads=threads, entries=entries)
        except FormatError as e:
            raise located(e, where=f"fragment {frag.name}, field {plan.info.name}{kind}, tile {k} at byte offset "
                                   f"{start} of {self.storage.name(path)}", base=start if e.file is None else None,
                          file=str(path), version=frag.version) from None
        return got if strings else got[0] if cells is None else out

    def cells(self, frag, idx: int, k: int, cell_num: int | None = None, spans=None, threads=1, into=None):
        """(values, validity or None) of tile ``k`` of index-space field ``idx``; a fixed-size tile of a
        known ``cell_num`` cells is decoded straight into an array of its own, or into ``into`` where that is
        ``cell_num`` contiguous cells of the field's dtype (a place in the read's result), and so are the
        values of string RLE and dictionary tiles (objects). ``threads``: as in :meth:`raw`."""
        info = self.plan(frag, idx, "").info
        if info.var:
            values = _var_cells(self, frag, idx, k, info, spans, threads, into)
        elif cell_num is not None:
            values = self.raw(frag, idx, "", k, cells=(cell_num, info, into), spans=spans, threads=threads)
        else:
            data = self.raw(frag, idx, "", k, spans=spans, threads=threads)
            cell = info.datatype.size * info.cell_val_num  # checked before a dtype that wide is built
            if len(data) % cell:
                raise self._fail(frag, idx, k, f"the tile holds {len(data)} bytes, not whole {cell}-byte cells")
            values = np.frombuffer(data, cell_dtype(info))
        valid = self._array(frag, idx, "_validity", k, np.uint8, spans, threads) != 0 if info.nullable else None
        if valid is not None and len(valid) != len(values):
            raise self._fail(frag, idx, k, f"{len(valid)} validity values for {len(values)} cells")
        return values, valid

    def field(self, frag, idx: int, tiles, pool) -> tuple[np.ndarray, np.ndarray | None]:
        """Values (and validity) of index-space field ``idx`` over ``tiles`` of ``frag``, in tile order."""
        info = self.plan(frag, idx, "").info
        spans, threads = self.spans(frag, idx, tiles), chunk_threads(pool, len(tiles))
        if spans is not None and (joined := (_var_joined if info.var else _joined)(self, frag, idx, tiles, spans, pool)):
            return joined
        one = (lambda k: self.cells(frag, idx, k, spans=spans, threads=threads))
        parts = [one(k) for k in tiles] if len(tiles) == 1 else list(pool.map(one, tiles))  # one: no handoff
        if not parts:
            return np.empty(0, result_dtype(info)), (np.empty(0, bool) if info.nullable else None)
        values = np.concatenate([p[0] for p in parts])
        valid = np.concatenate([p[1] for p in parts]) if info.nullable else None
        return values, valid

    def spans(self, frag, idx: int, tiles):
        """What :meth:`cells` takes as ``spans=`` to read ``tiles`` of field ``idx`` a file at a time (None for
        one tile)."""
        return _Spans(self.storage, frag, idx, sorted(tiles)) if len(tiles) > 1 else None

    def coords(self, frag, dims, tiles, pool) -> list[np.ndarray]:
        """The coordinates of sparse tiles, one array per dimension (datetimes as int64: :func:`ordinal`), from
        each dimension's file (v5+) or the ``__coords`` of v1-4, zipped in v1 unless compressed (REFERENCE §4.3)."""
        return self.columns(frag, dims, (), tiles, pool)[0]

    def columns(self, frag, dims, idxs, tiles, pool) -> tuple[list[np.ndarray], list]:
        """(:meth:`coords` of ``dims``, :meth:`field` of each of ``idxs``) over ``tiles``, the fields decoded
        at once (:func:`at_once`); no ``dims``: the fields alone."""
        per_dim = FEATURES["coordinates_per_dimension"](frag.version)
        jobs = [functools.partial(self.field, frag, frag.index(d.name), tiles, pool) for d in dims] if per_dim \
            else [functools.partial(_shared_coords, self, frag, dims, tiles, pool)] if dims else []
        jobs += [functools.partial(self.field, frag, i, tiles, pool) for i in idxs]
        done = at_once(jobs, chunk_threads(pool, 1) > 1 and len(tiles) * int(frag.schema.capacity) >= _AT_ONCE)
        fields = done[len(jobs) - len(idxs):]
        if not per_dim or not dims:
            return (done[0] if dims else []), fields
        cols = [ordinal(values) for values, _ in done[:len(dims)]]
        if any(len(c) != len(cols[0]) for c in cols):
            raise FormatError(f"fragment {frag.name}: its dimensions hold {[len(c) for c in cols]} coordinates "
                              "in the tiles read, not one per cell each", file=str(frag.path))
        return cols, fields

    def _array(self, frag, idx, kind, k, dtype, spans=None, threads=1) -> np.ndarray:
        data = self.raw(frag, idx, kind, k, spans=spans, threads=threads)
        if len(data) % np.dtype(dtype).itemsize:
            raise self._fail(frag, idx, k, f"the {kind or 'fixed'} tile holds {len(data)} bytes, not whole "
                                           f"{np.dtype(dtype).itemsize}-byte cells")
        return np.frombuffer(data, dtype)

    def _located(self, frag, idx, k, call):
        try:
            return call()
        except FormatError as e:
            raise self._fail(frag, idx, k, e.reason) from None

    def _fail(self, frag, idx, k, reason) -> FormatError:
        info = frag.metadata.index_fields[idx]
        return FormatError(f"fragment {frag.name}, field {info.name}, tile {k}: {reason}",
                           file=str(frag.path), version=frag.version)


def _var_joined(reader: Tiles, frag, idx: int, tiles, spans, pool):
    """(values, validity) of var field ``idx`` over ``tiles``: the offsets, bytes (and validity) of every tile
    decoded as one run of chunks each (a tile at a time, 100 tiles of 10,000 strings spent 20 of a 44 ms read
    in each tile's Python, which the threads take turns at), each tile's offsets moved to the bytes back to
    back, then the values of all of them made in one call. None on any error, for the tile-by-tile path to name
    the tile, or where string RLE or dictionary tiles carry their own offsets."""
    info, threads = reader.plan(frag, idx, "").info, getattr(pool, "_max_workers", 1)
    if reader.plan(frag, idx, "_var").filters.strings:
        return None
    try:
        # (one after the other: each shares its chunks out over the threads, and a field job never waits on
        # the fields' pool, :func:`at_once`)
        offsets, counts = _run(reader, frag, idx, "", tiles, spans, threads, 8)
        data, sizes = _var_run(reader, frag, idx, tiles, spans, threads)
        valid, valid_counts = _run(reader, frag, idx, "_validity", tiles, spans, threads, 1) if info.nullable \
            else (None, counts)
        values = split_var(np.frombuffer(data, np.uint8), rebased(np.frombuffer(offsets, U64), counts, sizes), info,
                           threads=threads)
    except FormatError:
        return None
    if not np.array_equal(counts, valid_counts):
        return None
    return values, np.frombuffer(valid, np.uint8) != 0 if info.nullable else None


def rebased(offsets: np.ndarray, counts, sizes) -> np.ndarray:
    """The offsets of var tiles of ``counts`` cells and ``sizes`` bytes, each tile's counted from its own start,
    moved to the tiles' bytes back to back; a FormatError unless each tile's rise from 0 within its own bytes
    (one that left them would read its neighbour's)."""
    counts, sizes = np.asarray(counts, np.int64), np.asarray(sizes, np.int64)
    if len(offsets) != counts.sum() or len(counts) != len(sizes):
        raise FormatError("var tiles hold other numbers of offsets than of cells")
    firsts, tile = np.cumsum(counts) - counts, np.repeat(np.arange(len(counts)), counts)
    held = counts > 0
    if np.any(offsets[firsts[held]] != 0) or np.any((offsets[1:] < offsets[:-1]) & (tile[1:] == tile[:-1])) or \
            np.any(offsets[(firsts + counts - 1)[held]] > sizes[held].astype(U64)):
        raise FormatError("var offsets do not rise from 0 to at most the bytes of their var tile")
    return offsets + np.repeat((np.cumsum(sizes) - sizes).astype(U64), counts)


def run_tiles(reader: Tiles, frag, idx: int, kind: str, tiles, threads: int, cell: int):
    """(the unfiltered bytes of ``tiles`` of ``kind``'s file back to back, the cells of each tile), the
    chunks of every tile through the filter plan at once (:func:`_run`); a FormatError names no tile."""
    return _run(reader, frag, idx, kind, tiles, _Spans(reader.storage, frag, idx, sorted(tiles)), threads, cell)


def var_run_tiles(reader: Tiles, frag, idx: int, tiles, threads: int):
    """(the unfiltered bytes of var data tiles ``tiles`` back to back, the bytes of each), the chunks of every
    tile through the filter plan at once: into one array of the size their chunk headers claim where the stored
    bytes may unfilter to that much (16 times, and 1 MiB, as :func:`_run`), else grown as output proves it; a
    FormatError names no tile."""
    return _var_run(reader, frag, idx, tiles, _Spans(reader.storage, frag, idx, sorted(tiles)), threads)


def _var_run(reader: Tiles, frag, idx: int, tiles, spans, threads: int):
    plan = reader.plan(frag, idx, "_var")
    spans_of = [frag.tile_span("_var", idx, k) for k in tiles]
    stored = _stored(reader, plan, "_var", spans_of, spans)
    chunks, sizes = _chunks(stored)
    tile = dict(num_chunks=len(chunks), chunks=chunks)
    if sum(sizes) > 16 * sum(map(len, stored)) + (1 << 20):
        return plan.filters.unfilter(tile, threads=threads), sizes
    dest = np.empty(sum(sizes), np.uint8)
    if not plan.filters.unfilter_tiles(stored, dest, threads):  # (one stage of zstd)
        plan.filters.unfilter(tile, out=dest, threads=threads)
    return memoryview(dest), sizes


def _shared_coords(reader: Tiles, frag, dims, tiles, pool) -> list[np.ndarray]:
    """:meth:`Tiles.coords` from the ``__coords`` file that the dimensions of v1-4 share."""
    idx = frag.index("__coords")
    zipped = coords_zipped(frag.version, frag.schema.coords_filters)
    dtype = dims[0].datatype.numpy_dtype
    spans, threads = reader.spans(frag, idx, tiles), chunk_threads(pool, len(tiles))

    def one(k):
        return reader._located(frag, idx, k, lambda: unzip_coords(
            reader.raw(frag, idx, "", k, spans=spans, threads=threads), dtype, len(dims), zipped))
    parts = list(pool.map(one, tiles))
    return [ordinal(np.concatenate([p[j] for p in parts]) if parts else np.empty(0, dtype))
            for j in range(len(dims))]


#: cells per field (tiles x capacity) from which a sparse read decodes its fields at once: below, threads
#: only take turns at the Python part (2 tiles of 10,000 cells: 4.7 ms instead of 3.4; 16 tiles 10.8 for 14.1)
_AT_ONCE = 1 << 17


def at_once(jobs: list, many: bool) -> list:
    """The results of ``jobs`` (calls without arguments) in order, run at once on the fields' pool when
    ``many`` (a read on several threads): one field's tile reads and chunk headers (Python, holding the GIL)
    overlap another's decoding (C, which lets it go). Reading three 8 MiB fields of 100 tiles took 14-17 ms
    instead of 22-28. A field job hands its tiles and chunks to other pools, and never waits on this one.
    Every job has ended when this returns or raises: a read that fails leaves no field decoding behind."""
    if not many or len(jobs) < 2:
        return [job() for job in jobs]
    futures = [_fields_pool().submit(job) for job in jobs]
    wait(futures)
    return [f.result() for f in futures]


@functools.cache
def _fields_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(4, thread_name_prefix="tdbformat-fields")


os.register_at_fork(after_in_child=_fields_pool.cache_clear)  # a forked child has none of the parent's threads


def _var_cells(reader: Tiles, frag, idx: int, k: int, info, spans, threads, into=None) -> np.ndarray:
    """The values of var tile ``k``: from the offsets tile, or from the strings that string RLE and dictionary
    decode to, a value per distinct string, then one per cell (put into ``into`` where it fits)."""
    got = reader.raw(frag, idx, "_var", k, strings=True, spans=spans, threads=threads, entries=True)
    if isinstance(got, Entries):
        return reader._located(frag, idx, k, lambda: entry_values(got, info, into))
    data, offsets = got
    if offsets is None:
        offsets = reader._array(frag, idx, "", k, U64, spans, threads)
    return reader._located(frag, idx, k, lambda: split_var(data, np.asarray(offsets, U64), info, into, threads))


def _joined(reader: Tiles, frag, idx: int, tiles, spans, pool):
    """:meth:`Tiles.field` of fixed-size tiles decoded as one run of chunks: the chunks of every tile go
    through the filter plan together, shared out over the pool's threads (a task per tile cost more in
    Python than its zstd). None on any error: the tile-by-tile path then names the tile."""
    info, threads = reader.plan(frag, idx, "").info, getattr(pool, "_max_workers", 1)
    try:
        values, counts = _run(reader, frag, idx, "", tiles, spans, threads, info.datatype.size * info.cell_val_num)
        if not info.nullable:
            return np.frombuffer(values, cell_dtype(info)), None
        valid, valid_counts = _run(reader, frag, idx, "_validity", tiles, spans, threads, 1)
    except FormatError:
        return None
    if not np.array_equal(counts, valid_counts):
        return None
    return np.frombuffer(values, cell_dtype(info)), np.frombuffer(valid, np.uint8) != 0


def _run(reader: Tiles, frag, idx: int, kind: str, tiles, spans, threads: int, cell: int):
    """(the unfiltered bytes of ``tiles`` of ``kind``'s file back to back, the cells of each tile).

    A sparse fragment's tiles hold ``capacity`` cells but its last, a dense one's its tile's: where that many bytes are within what
    the stored bytes may unfilter to (16 times, and 1 MiB), the output is allocated once and the tiles
    decode into it about :data:`BLOCK` stored bytes at a time, each block let go once decoded (a field that
    compresses little held all its stored tiles beside its output). Otherwise, or where the tiles' chunks
    claim other sizes (an error then, and the caller goes tile by tile), in one run."""
    plan = reader.plan(frag, idx, kind)
    spans_of = [frag.tile_span(kind, idx, k) for k in tiles]
    if frag.dense:  # whole tiles, each of the schema's tile extents
        expected = [math.prod(int(d.tile_extent) for d in frag.schema.domain.dimensions) * cell] * len(tiles)
    else:
        cap, cells = max(1, int(frag.schema.capacity)), frag.cell_num  # (cell_num computes: once, not a tile)
        expected = [max(0, min(cap, cells - k * cap)) * cell for k in tiles]
    # stored bytes as far as the file proves them (spans may lie: they are checked when read)
    stored = min(sum(max(0, e - s) for _, s, e in spans_of),
                 reader.storage.size_of(plan.path(reader.storage, spans_of[0][0]), "data file") if spans_of else 0)
    if sum(expected) > 16 * stored + (1 << 20):
        tiles_stored = _stored(reader, plan, kind, spans_of, spans)
        values = plan.filters.unfilter_tiles(tiles_stored, None, threads, 16 * stored + (1 << 20))
        if values is not None and len(values) == sum(expected):
            return memoryview(values), np.array(expected, np.int64) // cell
        chunks, sizes = _chunks(tiles_stored)
        counts = np.array(sizes, np.int64)
        if np.any(counts % cell):
            raise FormatError("a tile holds no whole number of cells")
        return plan.filters.unfilter(dict(num_chunks=len(chunks), chunks=chunks), threads=threads), counts // cell
    dest, at, first = np.empty(sum(expected), np.uint8), 0, 0
    while first < len(tiles):
        last, stored = first, 0
        while last < len(tiles) and (last == first or stored + spans_of[last][2] - spans_of[last][1] <= BLOCK):
            stored, last = stored + spans_of[last][2] - spans_of[last][1], last + 1
        size = sum(expected[first:last])
        tiles_stored = _stored(reader, plan, kind, spans_of[first:last], spans)
        if not plan.filters.unfilter_tiles(tiles_stored, dest[at:at + size], threads):  # (one stage of zstd)
            chunks, _ = _chunks(tiles_stored)
            plan.filters.unfilter(dict(num_chunks=len(chunks), chunks=chunks), out=dest[at:at + size],
                                  threads=threads)
        at, first = at + size, last
    return memoryview(dest), np.array(expected, np.int64) // cell


def _stored(reader: Tiles, plan, kind: str, spans_of, spans) -> list:
    """The stored bytes of the tiles at ``spans_of`` (file name, start, end)."""
    out = []
    for name, start, end in spans_of:
        data = spans.get(kind, plan.path(reader.storage, name), start, end)
        if data is None:
            raise FormatError("the tile is not in the batch")
        out.append(data)
    return out


def _chunks(stored: list) -> tuple[list, list]:
    """(the chunks of the ``stored`` tiles, the bytes each tile claims)."""
    chunks, sizes = [], []
    for data in stored:
        tile = read_tile(data)
        chunks += tile["chunks"]
        sizes.append(sum(c["unfiltered_size"] for c in tile["chunks"]))
    return chunks, sizes


class _Spans:
    """The bytes of a set of tiles of one field, read per file in :class:`_Blocks` on first use: neighbouring
    tiles coalesce into one read (one request per run of tiles instead of one per tile; opening, sizing and
    seeking a local file per tile cost a quarter of a one-fragment sparse read), and an object store fetches
    the blocks after the one in use in the background."""

    def __init__(self, storage, frag, idx: int, tiles):
        self.storage, self.frag, self.idx, self.tiles = storage, frag, idx, tiles
        self.lock, self.read = threading.Lock(), {}

    def get(self, kind: str, path, start: int, end: int):
        """Tile bytes ``[start, end)`` of ``kind``'s file, or None where the batch does not hold them (a span
        outside the file: the caller reads the tile itself, and reports the error against its own tile)."""
        with self.lock:
            if kind not in self.read:
                self.read[kind] = self._fetch(kind, path)
            return self.read[kind].get((start, end))

    def _fetch(self, kind: str, path):
        size = self.storage.size_of(path, "data file")
        spans = sorted({s for s in map(lambda k: self._span(kind, k), self.tiles) if s and 0 <= s[0] <= s[1] <= size})
        if isinstance(self.storage, LocalStorage):
            return _Blocks(self.storage, path, spans)
        return _Blocks(self.storage, path, spans, REMOTE_BLOCK, self.storage.merge_gap, REMOTE_AHEAD)

    def _span(self, kind: str, k: int):
        try:
            return self.frag.tile_span(kind, self.idx, k)[1:]
        except FormatError:  # left to the tile's own read, which reports it against that tile
            return None


class _Blocks:
    """The tiles of a file in blocks of about ``size`` bytes, each read when a tile in it is first asked for
    and let go once all its tiles are handed out (their views keep it until they are decoded). A read then
    holds a few blocks of the file, not all of it: a whole 4 MiB local file read at once was mapped afresh,
    a page fault every 4 KiB, on every read. Tiles more than ``gap`` bytes apart start a new block (an
    object store's gaps cost transfer). With ``ahead``, the next blocks are fetched in the background as a
    block is first asked for: a read decodes one block while the next ones arrive (one GET of a whole
    object made it wait for the last byte before decoding the first tile)."""

    def __init__(self, storage, path, spans, size=None, gap=None, ahead=0):
        size = BLOCK if size is None else size
        self.storage, self.path, self.blocks, self.where, self.ahead = storage, path, [], {}, ahead
        for span in spans:  # sorted by start
            block = self.blocks[-1] if self.blocks else None
            if block is None or span[1] - block[0] > size or (gap is not None and span[0] - block[1] > gap):
                # start, end, bytes once read (or their fetch), tiles not yet handed out, place
                block = [span[0], span[1], None, 0, len(self.blocks)]
                self.blocks.append(block)
            block[1], block[3] = max(block[1], span[1]), block[3] + 1
            self.where[span] = block

    def get(self, span):
        block = self.where.get(span)
        if block is None:
            return None
        for b in self.blocks[block[4] + 1:block[4] + 1 + self.ahead]:  # on their way while this one decodes
            if b[2] is None and b[3] > 0:
                b[2] = _fetches().submit(self.storage.read, self.path, b[0], b[1], what="data file")
        data = block[2]
        if data is None:  # (a tile asked for twice after its block was let go reads it again)
            data = block[2] = self.storage.read(self.path, block[0], block[1], what="data file")
        elif isinstance(data, Future):
            data = block[2] = data.result()
        block[3] -= 1
        if block[3] <= 0:
            block[2] = None
        at = span[0] - block[0]
        return data if (at, span[1] - span[0]) == (0, len(data)) else memoryview(data)[at:span[1] - block[0]]


BLOCK = 1 << 20
#: an object store's blocks: fewer, larger requests (a GET costs a round trip), and blocks fetched ahead
REMOTE_BLOCK, REMOTE_AHEAD = 8 << 20, 2


@functools.cache
def _fetches() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(4, thread_name_prefix="tdbformat-fetch")


os.register_at_fork(after_in_child=_fetches.cache_clear)  # a forked child has none of the parent's threads


def chunk_threads(pool, tiles: int) -> int:
    """Threads for each tile's chunks when ``pool`` decodes ``tiles`` tiles at once: its threads shared out,
    so that chunks decode in parallel only where there are fewer tiles than threads (TileDB too runs
    chunks in parallel within a tile and tiles in parallel within a read)."""
    return max(1, getattr(pool, "_max_workers", 1) // max(1, tiles))


class _Plan:
    """Tiles of one field's file in one fragment: the field, its filter plan, and the data file's path."""

    def __init__(self, frag, idx: int, kind: str, key, encrypted):
        self.info, self.frag, self.kind, self.key, self.encrypted = frag.metadata.index_fields[idx], frag, kind, \
            key, encrypted
        self._path, self._cell = (None, None), None

    @functools.cached_property
    def filters(self) -> FilterPlan:
        """The filter plan (made on first use, inside the caller's error handling: a pipeline can be bad)."""
        info, schema = self.info, self.frag.schema
        if self.kind == "_validity":
            pipeline, datatype, cell_size = schema.cell_validity_filters, Datatype.UINT8, 1
        elif info.var and self.kind == "":
            pipeline, datatype, cell_size = schema.cell_var_offsets_filters, Datatype.UINT64, 8
        else:
            pipeline, datatype = info.filters, info.datatype
            cell_size = datatype.size * (1 if info.var else info.cell_val_num)
        # encrypted as the fragment's own schema says: TileDB 2.30 evolves an encrypted array into a plain
        # schema (DISCREPANCIES.md), under which the older fragments are still encrypted
        header = schema.get("_generic_tile")
        encrypted = self.encrypted if header is None else header.encryption_type != EncryptionType.NO_ENCRYPTION
        return FilterPlan(pipeline, datatype=datatype, version=self.frag.version, cell_size=cell_size, key=self.key,
                          encrypted=encrypted)

    def path(self, storage, name: str):
        """The fragment's data file ``name`` (the same one for every tile of this plan), joined once."""
        if self._path[0] != name:
            self._path = name, storage.join(self.frag.path, name)
        return self._path[1]

    def claimed(self, tile, count: int, into=None) -> np.ndarray:
        """An empty array for ``count`` cells (``into`` where it is one), once the tile's chunk headers claim
        exactly their size (and before a cell dtype is built from an unproven cell_val_num)."""
        info = self.info
        total = sum(c["unfiltered_size"] for c in tile["chunks"])
        need = count * info.datatype.size * info.cell_val_num
        if total != need:
            raise FormatError(f"the tile's chunks unfilter to {total} bytes, not the {need} of its {count} cells")
        if self._cell is None:
            self._cell = cell_dtype(info)
        if into is not None and into.dtype == self._cell and into.shape == (count,) and into.flags.c_contiguous:
            return into
        return np.empty(count, self._cell)
