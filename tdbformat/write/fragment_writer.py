"""One write, one fragment: cells already in tile order become the data files, the fragment metadata and the
commit of the fragment's format version (REFERENCE.md §3, §4, §11-§12).

Each field's tiles run through its filter pipeline (``filters.filter_tile``) and are stored back to back; the
footer and its sections are built by ``structs.fragment.FragmentMetadata``. Data files go through
``storage.write``; the file that commits the fragment (``.ok`` v5-11, ``__commits/*.wrt`` v12+, the metadata file
itself v1-4) is written last through ``storage.commit``, so a reader sees the whole fragment or nothing.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import functools
import os
import sys
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field

import numpy as np
from construct import Container, ListContainer

from ..layout import COMMITS_DIR, FRAGMENT_METADATA, FRAGMENTS_DIR
from ..enums import Datatype, FilterType, OptionalSectionId
from ..filters import chunk_sizes, filter_tile, skips_offsets, uses_chunking
from ..filters.encryption import normalize_key
from ..filters.strings import extreme_cells
from ..filters.pipeline import MAX_CHUNK, FilterPlan, thread_count
from ..structs.array_schema import FieldInfo, attributes, dimensions, value_dtype
from ..structs.fragment import FragmentMetadata, ProcessedConditionsTile, data_file_stem, index_fields
from ..structs.names import timestamped_name
from ..structs.tile import Tile, tile_parts
from ..versions import FEATURES, Feature
from .rtree import FANOUT, build_levels
from .tiling import TileStreams, encoded_run, streamed_tiles, terminated_cells, var_cells

__all__ = ["FragmentWrite", "FragmentStream", "write_fragment", "fragment_name", "tile_streams",
           "whole_write_var_bound"]

_COMPRESSORS = {FilterType.GZIP, FilterType.ZSTD, FilterType.LZ4, FilterType.RLE, FilterType.BZIP2,
                FilterType.DOUBLE_DELTA}
#: TileDB 2.0-2.4 made a var tile's chunk size once, from the buffer it first allocated for the tile
#: (Tile::init_unfiltered, compute_chunk_size), and kept it as the buffer grew; TileDB 2.5 (v10 too) chunks by
#: the tile's final size, as before (the pipeline's bound, v1-4) and after (get_var_chunk_sizes, v11+). Not in
#: FEATURES, whose rules are the format's: TileDB 2.4 and 2.5 both write v10, one each way.
_BUFFER_VAR_CHUNKS = Feature("buffer_var_chunks", "var data chunked by the tile buffer first allocated", 5, 10)
#: TileDB 2.3+ lays a dense write's tiles out with DenseTiler, which allocates each var tile for the whole
#: write's var buffer.
_DENSE_TILER = Feature("dense_tiler", "a dense write's var tiles allocated for the write's var buffer", 9)
#: TileDB 2.12 (v16) computes a dense tile's statistics over the cell slabs the write copied in
#: (DenseTiler::compute_tile_metadata); 2.7-2.11 over the whole tile, the zeroed padding included.
_WRITTEN_CELL_STATS = Feature("written_cell_stats", "dense tile statistics of the cells written only", 16)


def whole_write_var_bound(version: int) -> bool:
    """Whether a dense write's var data is chunked by a bound of the whole write (not of each tile's), which a
    write in batches is told (:class:`FragmentStream`'s ``var_bounds``)."""
    return _BUFFER_VAR_CHUNKS(version) and _DENSE_TILER(version)


_EMPTY_TILE = Tile.build(Container(num_chunks=0, chunks=ListContainer()))


@dataclass
class FragmentWrite:
    """What one fragment holds: ``tiles[name]`` a list of per-tile cell arrays (attributes, and for sparse
    fragments the dimensions), ``validity[name]`` the same of bools for nullable attributes, ``mbrs`` and
    ``non_empty_domain`` as the footer stores them, the cells in the last tile."""

    schema: object
    schema_name: str | None
    dense: bool
    non_empty_domain: list
    tiles: dict
    validity: dict = field(default_factory=dict)
    mbrs: object = None
    last_tile_cell_num: int = 0
    global_bounds: dict | None = None  # v23 sparse: dimension -> (first cells, last cells) of each tile
    written: list | None = None  # dense: per tile, which cells the subarray wrote (None: all of them)
    # sparse, as consolidation makes them: tiles of __timestamps (v14+), of __delete_timestamps and
    # __delete_condition_index (v15+), and the delete commits those indexes name (v16+)
    has_timestamps: bool = False
    has_delete_meta: bool = False
    processed_conditions: list = field(default_factory=list)


@dataclass
class _Out:
    """One field's stored tiles and per-tile numbers."""

    offsets: list = field(default_factory=list)
    var_offsets: list = field(default_factory=list)
    var_sizes: list = field(default_factory=list)
    validity_offsets: list = field(default_factory=list)
    sizes: list = field(default_factory=lambda: [0, 0, 0])
    stats: list = field(default_factory=list)  # (min, max, sum, null count) per tile, or None


def fragment_name(version: int, t, uuid: str) -> str:
    """The fragment's folder name in ``version``'s era (REFERENCE §3.1); ``t``: ms, or (t1, t2) for a fragment
    that spans a range (a consolidated one); v1-2 names hold one timestamp, the end."""
    t1, t2 = t if isinstance(t, tuple) else (t, t)
    if version <= 2:
        return f"__{uuid}_{t2}"
    return timestamped_name(t1, t2, uuid, version if version >= 5 else None)


class _Encoder:
    def __init__(self, schema, version, key, max_chunk, storage, folder, threads):
        self.schema, self.version, self.max_chunk, self.threads = schema, version, max_chunk, threads
        self.storage, self.folder = storage, folder
        self.key = normalize_key(key)

    def stored(self, data, pipeline, datatype, cell_size, offsets=None, dim_num=1, var_bound=None, threads=None,
               terminated=False) -> list:
        """The stored tile, as pieces of bytes (``var_bound``: the chunk bound of v5-10 var data; ``threads``: for
        its chunks, default all; ``terminated``: as :func:`filter_tile`'s)."""
        sizes = None
        if var_bound is not None and uses_chunking(pipeline, datatype, self.version, True):
            sizes = chunk_sizes(len(data), cell_size, min(self.max_chunk, var_bound))
        tile = filter_tile(data, pipeline, datatype=datatype, version=self.version, cell_size=cell_size, key=self.key,
                           encrypted=self.key is not None, offsets=offsets, var=offsets is not None,
                           dim_num=dim_num, max_chunk=self.max_chunk, sizes=sizes, threads=threads or self.threads,
                           terminated=terminated)
        return tile_parts(tile)

    def var_bound(self, info: FieldInfo, tiles, dense: bool, written) -> int | None:
        """The chunk bound of a field's var data where TileDB chunked it by the buffer it allocated for the
        tile (``_BUFFER_VAR_CHUNKS``): 8 bytes per cell of a tile, as for the offsets (Writer::init_tile),
        but a dense write's whole var buffer (every cell the subarray wrote) in ``_DENSE_TILER``. None: the
        tile's own size bounds its chunks."""
        if not info.var or not _BUFFER_VAR_CHUNKS(self.version):
            return None
        if not dense:
            return 8 * int(self.schema.capacity)
        if not _DENSE_TILER(self.version):
            return 8 * len(tiles[0])
        sels = written or [slice(None)] * len(tiles)
        return sum(len(var_cells(cells[sel], info.datatype.numpy_dtype)[0]) for cells, sel in zip(tiles, sels))

    def sinks(self, files: ExitStack, info: FieldInfo, stem: str) -> tuple:
        """The fixed, var and validity files of a field (a ``_Sink(None)`` where it has none), open in ``files``
        until the fragment's last tile is stored (a data file is never held whole)."""
        def sink(suffix):
            return _Sink.writing(files, self.storage, self.storage.join(self.folder, f"{stem}{suffix}.tdb"))
        return sink(""), sink("_var") if info.var else _Sink(None), sink("_validity") if info.nullable else _Sink(None)

    def encoded(self, info: FieldInfo, tiles, validity, stats: bool, is_dim: bool, written=None, dense: bool = False,
                var_bound=None):
        """A batch of a field's tiles filtered (:meth:`tile`'s tuples, in order), :attr:`threads` tiles at once
        (:func:`_in_order`). ``var_bound``: :meth:`var_bound` of the whole fragment where a batch is not all of
        it (None: of these tiles)."""
        var_bound = var_bound if var_bound is not None else self.var_bound(info, tiles, dense, written) if tiles \
            else None
        at_once = min(self.threads, len(tiles))
        chunk_threads = self.threads if self._shares_chunks(info, tiles) else max(1, self.threads // max(1, at_once))

        def tile(t):
            return self.tile(info, tiles[t], None if validity is None else validity[t], var_bound, chunk_threads,
                             stats and (slice(None) if written is None or not _WRITTEN_CELL_STATS(self.version)
                                        else written[t]), is_dim)
        return _in_order(tile, len(tiles), at_once, _per_task(tiles, at_once))

    def _shares_chunks(self, info: FieldInfo, tiles) -> bool:
        """Whether each tile's chunks get every thread, not a tile a thread (a lone tile's always do): large
        fixed-size tiles whose filters all run in C without the GIL. The filters' threads then take the runs of
        chunks of the tiles in flight in turn, so that neither ends the last tile alone (64 MiB of int64 in 8
        tiles, zstd: with a tile a thread, one thread ended 5-13 ms after the other; shared, the write took 1.8-3.7
        ms less in paired A/Bs of 31). Filters that hold the GIL would contend for it (RLE + zstd: 51 -> 57 ms)."""
        return self.threads > 1 and len(tiles) > 1 and not info.var and getattr(tiles[0], "nbytes", 0) > _SHARED \
            and FilterPlan(info.filters, datatype=info.datatype, version=self.version, key=self.key,
                           encrypted=self.key is not None).gil_free

    @staticmethod
    def store(info: FieldInfo, encoded, sinks, out: _Out) -> None:
        """Filtered tiles (:meth:`encoded`) into a field's ``sinks`` (:meth:`sinks`), added to ``out``."""
        fixed, var, valid = sinks
        for fixed_parts, var_parts, var_size, valid_parts, tile_stats in encoded:
            out.offsets.append(fixed.size)
            if info.var:
                out.var_offsets.append(var.size)
                out.var_sizes.append(var_size)
                var.put(var_parts)
            fixed.put(fixed_parts)
            if info.nullable:
                out.validity_offsets.append(valid.size)
                valid.put(valid_parts)
            out.stats.append(tile_stats)
        out.sizes = [fixed.size, var.size, valid.size]

    def tile(self, info: FieldInfo, cells, validity, var_bound, threads, stats, is_dim) -> tuple:
        """(fixed parts, var parts, the var data's size, validity parts, statistics) of one tile; ``stats``: the
        cells they are of (False: none)."""
        var_parts = valid_parts = mask = var_size = var = None
        if info.var:
            fixed_parts, var_parts, data, offsets, terminated = _var_tile(self, info, cells, var_bound, threads)
            if stats is not False and _has_min_max(info, is_dim):  # (only string min and max read them)
                starts = offsets.astype(np.int64)
                var = np.frombuffer(data, np.uint8), starts, np.diff(starts, append=len(data)) - terminated
            var_size = len(data) - terminated * len(offsets)
        else:
            fixed_parts = self.stored(_raw(cells), info.filters, info.datatype, info.datatype.size * info.cell_val_num,
                                      threads=threads)
        if info.nullable:
            mask = np.asarray(validity, bool)
            valid_parts = self.stored(_raw(mask.astype(np.uint8)), self.schema.cell_validity_filters, Datatype.UINT8,
                                      1, threads=threads)
        # of the whole tile, padding too, until TileDB 2.12 counted only the cells written
        tile_stats = None if stats is False else _tile_stats(info, cells[stats], None if mask is None else mask[stats],
                                                             is_dim, var and tuple(var[:1]) + (var[1][stats], var[2][stats]))
        return fixed_parts, var_parts, var_size, valid_parts, tile_stats

    def coords(self, tiles, dims, sink, out: _Out) -> None:
        """The v1-4 ``__coords`` field (into ``sink``, adding to ``out``): every dimension's coordinates of a
        tile together, zipped (x1 y1 x2 y2...) in v1 unless the coordinate pipeline compresses, else one
        dimension after the other."""
        pipeline = self.schema.coords_filters
        zipped = FEATURES["zipped_coordinates"](self.version) and not (
            {FilterType(f.type) for f in pipeline.filters} & _COMPRESSORS)
        datatype = dims[0].datatype
        for cols in zip(*(tiles[d.name] for d in dims)):
            out.offsets.append(sink.size)
            raw = np.stack(cols, axis=1) if zipped else np.concatenate(cols)
            sink.put(self.stored(_raw(raw.astype(datatype.numpy_dtype)), pipeline, datatype,
                                 datatype.size * len(dims), dim_num=1 if zipped else len(dims)))
            out.stats.append(None)
        out.sizes = [sink.size, 0, 0]


def _var_tile(enc: _Encoder, info: FieldInfo, cells, var_bound, threads) -> tuple:
    """(offsets parts, var parts, var data, u64 offsets, whether a NUL follows each cell) of a var tile
    (:meth:`_Encoder.tile`); its parts those the write's check filtered as it encoded the cells, where it had
    streams for this tile (:func:`tile_streams`)."""
    in_place = skips_offsets(info.filters, info.datatype, enc.version)  # string RLE or dictionary
    # the cells' NULs kept: the codecs read them in place, or each chunk drops its own (not v5-10's bound)
    data, offsets, terminated = _var_data(cells, info, in_place or var_bound is None)
    streamed = streamed_tiles(cells, _made_for(enc.schema, info, enc.key, enc.max_chunk))
    if streamed is not None:
        return tile_parts(streamed[1]), tile_parts(streamed[0]), data, offsets, False
    stored_offsets = offsets - np.arange(len(offsets), dtype=np.uint64) if terminated else offsets
    # a lone tile (all the threads its own) filters its offsets beside its data, not before
    fixed = None if in_place else (_sides().submit if threads > 1 else _now)(
        enc.stored, stored_offsets, enc.schema.cell_var_offsets_filters, Datatype.UINT64, 8, threads=threads)
    var_parts = enc.stored(data, info.filters, info.datatype, info.datatype.size, offsets=offsets,
                           var_bound=var_bound, threads=threads, terminated=terminated)
    return [_EMPTY_TILE] if in_place else fixed.result(), var_parts, data, offsets, terminated


class _Sink:
    """A data file written tile by tile; its size so far is the next tile's offset (None: no file).

    Tiles go to their file in a thread of its own while the next ones are filtered (the write lets the GIL
    go), gathered into writes of at least :data:`_GATHER` bytes; at most one write a file waits, and
    :meth:`wait` (before the file closes) writes what is gathered and raises what a write raised, as the
    storage's writer of that file turns it into an error naming the file."""

    def __init__(self, file, own: ExitStack | None = None):
        self.file, self.size, self._pending, self._own = file, 0, None, own
        self._gathered = bytearray()

    @classmethod
    def writing(cls, files: ExitStack, storage, path) -> "_Sink":
        """A sink writing ``path``, closed with ``files`` (after its last tile is written)."""
        own = ExitStack()
        made = cls(own.enter_context(storage.writer(path)), own)
        files.push(own)
        files.callback(made.wait)  # (before the file closes)
        return made

    def put(self, parts: list):
        size = sum(map(len, parts))
        self.size += size
        if size + len(self._gathered) < _GATHER:  # copied: views would hold whole buffers of their tiles
            for part in parts:
                self._gathered += part
            return
        gathered, self._gathered = self._gathered, bytearray()
        self._write([gathered, *parts] if gathered else parts)

    def _write(self, parts: list):
        self._written()
        self._pending = _writes().submit(self.file.write_parts, parts)  # one write call for them, not joined

    def wait(self):
        gathered, self._gathered = self._gathered, bytearray()  # (taken first: not written again after a failure)
        if gathered:
            self._write([gathered])
        self._written()

    def _written(self):
        if self._pending is not None:
            pending, self._pending = self._pending, None
            try:
                pending.result()
            except BaseException:
                if self._own is not None:
                    self._own.__exit__(*sys.exc_info())  # raises the storage's error, which names the file
                raise


#: bytes of tiles a data file's write gathers: a write a tile of 60 KB cost a round trip to the writing thread
#: each, which the next tile waited for (100 tiles of 10,000 strings: a third of the write)
_GATHER = 1 << 17


def tile_streams(schema, info: FieldInfo, extent: int, *, key=None, max_chunk: int = MAX_CHUNK,
                 threads: int | None = None) -> TileStreams | None:
    """The :class:`TileStreams` of a var field's tiles of ``extent`` cells, as :meth:`_Encoder.tile` filters
    them, for a write's check to fill as it encodes the cells (:func:`~.values.column`); None where a tile's
    chunks do not come from its cells alone (v5-10's bound, string RLE and dictionary, before v11) or one
    thread filters them."""
    version, key = schema.version, normalize_key(key)
    if _BUFFER_VAR_CHUNKS(version) or skips_offsets(info.filters, info.datatype, version):
        return None
    made_for, threads = _made_for(schema, info, key, max_chunk), thread_count(threads)
    plans = [(FilterPlan(pipeline, datatype=datatype, version=version, cell_size=datatype.size, key=key,
                         encrypted=key is not None), var) for pipeline, datatype, var in
             [(info.filters, info.datatype, True), (schema.cell_var_offsets_filters, Datatype.UINT64, False)]]
    if any(plan.stream(max_chunk, threads, var=var) is None for plan, var in plans):
        return None
    return TileStreams(lambda base: tuple(plan.stream(max_chunk, threads, var=var, base=base if var else 0)
                                          for plan, var in plans), extent, made_for, max_chunk)


def _made_for(schema, info: FieldInfo, key, max_chunk) -> tuple:
    """What a var tile's filtered bytes and offsets depend on besides its cells."""
    return schema.version, info.filters, info.datatype, schema.cell_var_offsets_filters, key, max_chunk


def _in_order(fn, n: int, threads: int, per: int = 1):
    """``fn(0)``, ..., ``fn(n - 1)``, in order, computed ``threads`` tasks of ``per`` at once on the encoders'
    pool: at most that many tasks' filtered tiles wait for their turn. If one fails, the others end before the
    error is raised."""
    if threads <= 1:
        yield from map(fn, range(n))
        return
    pool, pending = _encodes(threads), collections.deque()
    try:
        for first in range(0, n, per):
            pending.append(pool.submit(lambda a: [fn(t) for t in range(a, min(n, a + per))], first))
            if len(pending) > threads:  # (one more than the threads: none waits for its next tiles)
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()
    finally:
        futures.wait(pending)


def _per_task(tiles, threads: int) -> int:
    """Tiles an encoder takes at once: small ones up to :data:`_TASK` bytes of cells, while every thread still
    gets a few tasks."""
    size = getattr(tiles[0], "nbytes", 0) if len(tiles) else 0
    return max(1, min(_TASK // max(1, size), len(tiles) // (4 * threads)))


#: bytes of a tile's cells from which its chunks may be shared by the threads (:meth:`_Encoder._shares_chunks`):
#: two runs of 16 chunks of 64 KiB (a smaller tile's runs would be a chunk or two, a task each)
_SHARED = 2 << 20

#: bytes of small tiles' cells an encoder filters in one task: a task a tile cost a round trip to a thread each
#: (1,000 tiles of 1,000 int64: 141 ms, 60% of it waiting, where TileDB-Py takes 50)
_TASK = 1 << 18


@functools.cache
def _encodes(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(threads, thread_name_prefix="tdbformat-encode")


@functools.cache
def _writes() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="tdbformat-writes")  # one: a file's tiles stay in order


@functools.cache
def _closes() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="tdbformat-closes")


@functools.cache
def _sides() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="tdbformat-offsets")


def _now(fn, *args, **kwargs) -> futures.Future:
    """``fn(*args, **kwargs)`` called here, as a done future (what ``submit`` gives, without a thread)."""
    done = futures.Future()
    try:
        done.set_result(fn(*args, **kwargs))
    except BaseException as e:
        done.set_exception(e)
    return done


for _cache in (_writes, _encodes, _sides, _closes):  # a forked child has none of the parent's threads
    os.register_at_fork(after_in_child=_cache.cache_clear)


def _raw(values: np.ndarray) -> np.ndarray:
    """A tile's cells as bytes for the pipeline, without copying contiguous ones."""
    return np.ascontiguousarray(values).reshape(-1).view(np.uint8)


_NO_STATS = (Datatype.ANY, Datatype.BLOB, Datatype.GEOM_WKB, Datatype.GEOM_WKT, Datatype.STRING_UTF8,
             Datatype.STRING_UTF16, Datatype.STRING_UTF32, Datatype.STRING_UCS2, Datatype.STRING_UCS4)
_CHARS = (Datatype.CHAR, Datatype.STRING_ASCII)


def _has_min_max(info: FieldInfo, is_dim: bool) -> bool:
    """TileMetadataGenerator::has_min_max_metadata: not dimensions (they have the R-tree), var-sized or
    multi-value cells only of CHAR and ASCII, no ANY, BLOB, GEOM or non-ASCII strings."""
    if is_dim or (info.var or info.cell_val_num != 1) and info.datatype not in _CHARS:
        return False
    return info.datatype not in _NO_STATS


def _has_sum(info: FieldInfo) -> bool:
    """TileMetadataGenerator::has_sum_metadata: fixed cells of one value, no ANY, BLOB, GEOM or strings."""
    return not info.var and info.cell_val_num == 1 and info.datatype not in _NO_STATS + (Datatype.STRING_ASCII,)


def _sum_dtype(kind: str) -> str:
    return "<f8" if kind == "f" else "<u8" if kind in "ub" else "<i8"


def _tile_stats(info, cells, mask, is_dim, var=None):
    """(min, max, sum, null count) of a tile as TileDB's metadata generator makes them: min and max skip null
    cells (none valid: the type's max and lowest), sums add cell after cell (None where the field has none).
    ``var``: the var cells as (u8 data, starts, lengths)."""
    nulls = 0 if mask is None else int((~mask).sum())
    lo = hi = total = None
    if _has_min_max(info, is_dim):
        if info.datatype in _CHARS:
            lo, hi = _string_min_max(info, cells, mask, var)
        else:
            values = np.asarray(cells).view(value_dtype(info.datatype))
            values = values if mask is None else values[mask]
            limits = np.finfo if values.dtype.kind == "f" else np.iinfo
            if len(values):
                lo, hi = values.min(), values.max()
            else:
                t = values.dtype if values.dtype.kind != "b" else np.dtype(np.uint8)
                lo, hi = np.array(limits(t).max, t).view(values.dtype), np.array(limits(t).min, t).view(values.dtype)
    if _has_sum(info):
        values = np.asarray(cells).view(value_dtype(info.datatype))
        values = values if mask is None else values[mask]
        bounds = (lo, hi) if lo is not None and len(values) else None  # (a pass each over the tile: kept)
        total = _saturating_sum(values, _sum_dtype(values.dtype.kind), bounds)
    return lo, hi, total, nulls


def _saturating_float_sum(values):
    """Doubles added in order until a sum of finite values would pass the largest double: then that (or the
    lowest), as Sum<T, double>::sum clamps."""
    with np.errstate(over="ignore", invalid="ignore"):
        sums = np.cumsum(values)
    if np.isfinite(sums[-1]):  # a running sum that leaves the finite doubles never comes back: none left them
        return sums[-1]
    out = np.flatnonzero(~np.isfinite(sums) & np.isfinite(values))
    if not len(out) or not np.isfinite(sums[out[0] - 1] if out[0] else 0.0):
        return sums[-1]
    return np.float64(np.finfo(np.float64).max if values[out[0]] > 0 else np.finfo(np.float64).min)


def _string_min_max(info, cells, mask, var) -> tuple:
    """The least and greatest valid string cells as TileDB keeps them (:func:`extreme_cells`), as bytes
    (None, None: no valid cell)."""
    if var is None:
        width = info.cell_val_num
        buf = np.ascontiguousarray(cells).view(np.uint8).reshape(-1)
        var = buf, np.arange(len(buf) // width) * width, np.full(len(buf) // width, width)
    buf, starts, sizes = var
    valid = np.arange(len(starts)) if mask is None else np.flatnonzero(mask)
    if not len(valid):
        return None, None
    picks = valid[list(extreme_cells(buf, starts[valid], sizes[valid]))]
    return tuple(buf[int(starts[i]):int(starts[i] + sizes[i])].tobytes() for i in picks)


def _saturating_sum(values, acc: str, bounds=None):
    """``values`` added one after the other as TileDB's metadata generator adds them (Sum<T>::sum,
    compute_fragment_sum): a sum that would leave its type stops at the type's max (or min, or lowest
    double) and adds nothing more. ``bounds``: their (min, max) if known."""
    if not len(values):
        return np.zeros((), acc)[()]
    if acc == "<f8":
        return _saturating_float_sum(np.asarray(values, acc))
    lo, hi = bounds or (values.min(), values.max())
    if len(values) * max(abs(int(lo)), abs(int(hi))) < (2**64 if acc == "<u8" else 2**63):
        return values.sum(dtype=acc)  # no running sum can leave the type: one vectorised pass, no cumsum
    if acc == "<u8":  # adding less than 2**64 wraps to below the previous sum exactly when it overflows
        sums = np.cumsum(values, dtype=acc)
        return np.uint64(2**64 - 1) if (sums[1:] < sums[:-1]).any() else sums[-1]
    v = np.asarray(values).astype(np.int64)
    # the exact running sum, floored to units of 2**32 (the low halves' carries added): it leaves int64 where
    # this leaves [-2**31, 2**31)
    units = np.cumsum(v >> 32) + (np.cumsum(v & 0xFFFFFFFF) >> 32)
    out = np.flatnonzero((units >= 2**31) | (units < -2**31))
    if len(out):
        return np.int64(2**63 - 1) if units[out[0]] >= 0 else np.int64(-2**63)
    return np.cumsum(v)[-1]


def _fields(fw: FragmentWrite, version: int) -> list:
    return index_fields(fw.schema, version, fw.has_timestamps, fw.has_delete_meta)


def _index_data(fw: FragmentWrite, version: int) -> list:
    """(index, field, is dimension) of each index-space field that has data files in this fragment (the cell
    timestamps and delete metadata after the dimensions count as attributes: TileDB keeps their statistics)."""
    fields = _fields(fw, version)
    attrs = attributes(fw.schema)
    out = [(i, f, False) for i, f in enumerate(fields[:len(attrs)])]
    if not fw.dense and FEATURES["coordinates_per_dimension"](version):
        ndim = len(dimensions(fw.schema))
        out += [(len(attrs) + 1 + j, f, j < ndim) for j, f in enumerate(fields[len(attrs) + 1:])]
    return out


def write_fragment(storage, root, fw: FragmentWrite, *, timestamp: int, uuid: str, key=None,
                   max_chunk: int = MAX_CHUNK, threads: int | None = None) -> str:
    """Write the fragment ``fw`` into the array at ``root`` and commit it; returns the fragment's name.
    ``threads`` filter its tiles (default :func:`filters.set_threads`'); any number gives the same bytes.
    A write that fails before its commit takes its fragment folder back: the array is as it was."""
    with FragmentStream(storage, root, fw.schema, timestamp=timestamp, uuid=uuid, key=key, max_chunk=max_chunk,
                        threads=threads) as stream:
        stream.add(fw)
        stream.finish()
    return stream.name


#: batches whose MBRs and tile bounds a stream keeps apart before joining them
_COMPACT = 32


class FragmentStream:
    """One fragment written a batch of whole tiles at a time: :meth:`add` stores each batch (a
    :class:`FragmentWrite` of consecutive tiles in global order, the last one's last tile may be partial) into
    the data files, which stay open; :meth:`finish` writes the fragment metadata of every batch, then the
    commit. Peak memory is a batch and its filtered tiles, whatever the fragment's size. Used as a context
    manager, a stream left without its commit (an error, an interrupt) takes its folder back.

    ``var_bounds``: per var attribute, the chunk bound of its v5-10 var data where it depends on the whole
    write (:meth:`_Encoder.var_bound` of a dense fragment in ``_DENSE_TILER``'s versions)."""

    def __init__(self, storage, root, schema, *, timestamp, uuid: str, key=None, max_chunk: int = MAX_CHUNK,
                 threads: int | None = None, var_bounds: dict | None = None):
        version = schema.version
        self.storage, self.schema, self.var_bounds = storage, schema, var_bounds or {}
        self.name = fragment_name(version, timestamp, uuid)
        self.folder = storage.join(root, FRAGMENTS_DIR, self.name) if FEATURES["fragments_folder"](version) else \
            storage.join(root, self.name)
        if not FEATURES["commit_markers"](version):
            self.commit = storage.join(self.folder, FRAGMENT_METADATA)  # v1-4: the metadata file is the commit
        elif FEATURES["fragments_folder"](version):
            self.commit = storage.join(root, COMMITS_DIR, f"{self.name}.wrt")
        else:
            self.commit = storage.join(root, f"{self.name}.ok")
        if storage.is_dir(self.folder):
            raise ValueError(f"uuid: the array already has a fragment {self.name}")
        self.key, self.max_chunk = key, max_chunk
        self._enc = _Encoder(schema, version, key, max_chunk, storage, self.folder, thread_count(threads))
        self._files, self._outs, self._sinks = ExitStack(), {}, {}
        self._first: FragmentWrite | None = None
        self._tile_num, self._last, self._ned = 0, 0, None
        self._mbrs, self._global_bounds = [], []
        storage.makedirs(self.folder)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            return self._files.close()  # (a finish closed them already)
        try:  # (a tile its pipeline cannot encode, a full disk, an interrupt)
            self._files.__exit__(*exc)
        finally:
            with contextlib.suppress(Exception):  # a commit that was made stays
                if not self.storage.is_file(self.commit):
                    self.storage.remove_folder(self.folder)

    def add(self, fw: FragmentWrite, encoded: dict | None = None) -> None:
        """Store the tiles of ``fw`` after those added before; ``encoded``: their filtered tiles by field
        (:meth:`encode`, of these tiles), else they are filtered as they are stored."""
        version = self.schema.version
        if self._first is None:
            self._first = fw
            self._fields = _fields(fw, version)
            for i, info, _ in _index_data(fw, version):
                stem = data_file_stem(version, i, self._fields, len(attributes(self.schema)))
                self._sinks[i], self._outs[i] = self._enc.sinks(self._files, info, stem), _Out()
            if not fw.dense and not FEATURES["coordinates_per_dimension"](version):
                coords = len(attributes(self.schema))
                path = self.storage.join(self.folder, "__coords.tdb")
                self._sinks[coords], self._outs[coords] = _Sink.writing(self._files, self.storage, path), _Out()
        for i, info, is_dim in _index_data(fw, version):
            self._enc.store(info, encoded[i] if encoded is not None else self._encoded(fw, i, info, is_dim),
                            self._sinks[i], self._outs[i])
        if not fw.dense and not FEATURES["coordinates_per_dimension"](version):
            coords = len(attributes(self.schema))
            self._enc.coords(fw.tiles, dimensions(self.schema), self._sinks[coords], self._outs[coords])
        self._tile_num += len(next(iter(fw.tiles.values())))
        self._last = fw.last_tile_cell_num
        self._ned, dims = _joined_domain(self._ned, fw.non_empty_domain), dimensions(self.schema)
        if fw.mbrs is not None:
            self._mbrs.append(fw.mbrs)
        if fw.global_bounds is not None:
            self._global_bounds.append(fw.global_bounds)
        if len(self._mbrs) >= _COMPACT:  # (many small batches: one array, not an array's overhead a batch)
            self._mbrs, self._global_bounds = [_joined_mbrs(self._mbrs)], [_joined_bounds(self._global_bounds, dims)]

    def _encoded(self, fw, i, info, is_dim):
        return self._enc.encoded(info, fw.tiles[info.name], fw.validity.get(info.name), self.schema.version >= 11,
                                 is_dim, fw.written, fw.dense, self.var_bounds.get(info.name))

    def encode(self, fw: FragmentWrite) -> tuple[dict, np.ndarray]:
        """The filtered tiles of ``fw`` by field (held, for :meth:`add`), and each tile's stored bytes over every
        field (WriterTileTuple::filtered_size, summed as GlobalOrderWriter sizes fragments): for a fragment cut
        by size (v5+: the coordinates of each dimension apart)."""
        fields = _index_data(fw, self.schema.version)
        encoded = {i: list(self._encoded(fw, i, info, is_dim)) for i, info, is_dim in fields}
        sizes = np.zeros(len(next(iter(fw.tiles.values()))), np.int64)
        for tiles in encoded.values():
            for t, (fixed, var, _, valid, _) in enumerate(tiles):
                sizes[t] += sum(map(len, fixed)) + sum(map(len, var or [])) + sum(map(len, valid or []))
        return encoded, sizes

    def finish(self, commit: bool = True) -> None:
        """The data files closed, then the fragment metadata, then (unless ``commit`` is False: then
        :meth:`commit` later) the commit, last."""
        first = self._first
        if first is None:
            raise ValueError("a fragment needs at least one tile")
        # the data files' last writes and syncs run beside the metadata, which needs only their sizes; it is
        # written once they are on the disk (a 64 MiB write: 1.3 ms of sync and 1.5 of metadata, one after
        # the other)
        closed = _closes().submit(contextvars.copy_context().run, self._files.close)
        try:
            metadata = _stream_metadata(self, first)
        finally:
            closed.result()
        if not FEATURES["commit_markers"](self.schema.version):
            self._metadata = metadata  # v1-4: the metadata file is the commit
        else:
            self.storage.write(self.storage.join(self.folder, FRAGMENT_METADATA), metadata)
            self._metadata = b""
        if commit:
            self.commit_now()

    def commit_now(self) -> None:
        """The commit of a fragment :meth:`finish` left uncommitted: from here on readers see it."""
        self.storage.makedirs(self.storage.parent(self.commit))
        self.storage.commit(self.commit, self._metadata)


def _stream_metadata(fs: "FragmentStream", first: FragmentWrite) -> bytes:
    """The fragment metadata file of the tiles added to ``fs`` (their sizes as stored, not their bytes)."""
    dims = dimensions(fs.schema)
    whole = FragmentWrite(
        fs.schema, first.schema_name, first.dense, fs._ned, {}, mbrs=_joined_mbrs(fs._mbrs),
        last_tile_cell_num=fs._last,
        global_bounds=_joined_bounds(fs._global_bounds, dims) if fs._global_bounds else None,
        has_timestamps=first.has_timestamps, has_delete_meta=first.has_delete_meta,
        processed_conditions=first.processed_conditions)
    return _metadata(whole, fs.schema.version, fs.key, fs._fields, fs._outs, fs._tile_num, fs.max_chunk)


def _joined_domain(ned, more) -> list:
    """Two non-empty domains as one (the batches of a fragment): per dimension the lower low, the higher high."""
    if ned is None:
        return list(more)
    out = []
    for a, b in zip(ned, more):
        if isinstance(a, dict):  # var: Container(start=, end=) of bytes
            out.append(Container(start=min(a.start, b.start), end=max(a.end, b.end)))
        else:
            out.append(np.array([min(a[0], b[0]), max(a[1], b[1])], a.dtype))
    return out


def _joined_bounds(parts: list, dims) -> dict:
    """The batches' first and last cells of each tile (``FragmentWrite.global_bounds``) as one."""
    return {d.name: tuple(np.concatenate([g[d.name][k] for g in parts]) for k in (0, 1)) for d in dims}


def _joined_mbrs(parts: list):
    """The batches' MBRs as one: a structured array of fixed-size dimensions, a list of var ones."""
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if isinstance(parts[0], np.ndarray) else [m for p in parts for m in p]


def _per_field(outs, n, tile_num, what):
    """One u64 array per index-space field (zeros of tile_num for fields without that kind of data)."""
    return [np.asarray(getattr(outs[i], what), "<u8") if i in outs and getattr(outs[i], what)
            else np.zeros(tile_num, "<u8") for i in range(n)]


def _metadata(fw, version, key, fields, outs, tile_num, max_chunk) -> bytes:
    n = len(fields)
    n_var = n if FEATURES["coordinates_per_dimension"](version) else n - 1
    sizes = np.array([[outs[i].sizes[k] if i in outs else 0 for i in range(n)] for k in range(3)], "<u8")
    offsets = _per_field(outs, n, tile_num, "offsets")
    var_offsets = _per_field(outs, n_var, tile_num, "var_offsets")
    var_sizes = _per_field(outs, n_var, tile_num, "var_sizes")
    if version <= 2:
        return _legacy(fw, version, key, offsets, var_offsets, var_sizes, sizes, n_var, max_chunk)
    zeros = np.zeros(n, "<u8")
    footer = Container(
        version=version, array_schema_name=fw.schema_name if version >= 10 else None, dense=fw.dense,
        null_non_empty_domain=False, non_empty_domain=ListContainer(fw.non_empty_domain),
        sparse_tile_num=0 if fw.dense else tile_num, last_tile_cell_num=fw.last_tile_cell_num,
        has_timestamps=fw.has_timestamps if version >= 14 else None,
        has_delete_meta=fw.has_delete_meta if version >= 15 else None,
        file_sizes=sizes[0], file_var_sizes=sizes[1][:n_var], file_validity_sizes=sizes[2] if version >= 7 else None,
        rtree_offset=0, tile_offsets_offsets=zeros, tile_var_offsets_offsets=zeros[:n_var],
        tile_var_sizes_offsets=zeros[:n_var])
    sections = dict(
        rtree=Container(dim_num=len(fw.non_empty_domain) if version < 5 else None, fanout=FANOUT,
                        datatype=dimensions(fw.schema)[0].datatype if version < 5 else None,
                        levels=ListContainer() if fw.dense else build_levels(fw.mbrs)),
        tile_offsets=offsets, tile_var_offsets=var_offsets, tile_var_sizes=var_sizes)
    if version >= 7:
        footer.tile_validity_offsets_offsets = zeros
        sections["tile_validity_offsets"] = _per_field(outs, n, tile_num, "validity_offsets")
    if version >= 11:
        _stat_sections(footer, sections, fields, outs, version, zeros, tile_num, len(attributes(fw.schema)),
                       len(dimensions(fw.schema)))
    if version >= 16:
        footer.processed_conditions_offset = 0
        sections["processed_conditions"] = list(fw.processed_conditions)
    unreferenced = b""
    if version == 15:  # TileDB 2.11 writes an empty processed-conditions tile no v15 footer points to
        unreferenced = ProcessedConditionsTile.build(Container(conditions=ListContainer()), version=version, key=key)
    if version >= 23:
        _global_order_section(fw, footer, sections)
    fm = FragmentMetadata(footer, schema=fw.schema, key=key, unreferenced=unreferenced, **sections)
    fm.max_chunk = max_chunk
    return fm.build()


def _min_max(info, values, has):
    """A field's tile mins (or maxes) section value: numbers, or u64 offsets into the var bytes of strings."""
    bound = np.dtype("<u8") if info.var else value_dtype(info.datatype)
    if not has or not values:
        return Container(fixed=np.zeros(0, bound), var=b"")
    if info.var:
        parts = [v or b"" for v in values]
        offsets = np.zeros(len(parts), "<u8")
        np.cumsum(np.fromiter(map(len, parts), np.uint64, len(parts))[:-1], out=offsets[1:])
        return Container(fixed=offsets, var=b"".join(parts))
    if info.datatype in _CHARS:
        return Container(fixed=np.frombuffer(b"".join(v or bytes(info.cell_val_num) for v in values), bound), var=b"")
    return Container(fixed=np.array(values, bound), var=b"")


def _summary_bound(info, values, largest: bool):
    """The fragment's min or max of a field from its tiles' (None: a tile of nulls), as
    FragmentMetadata::compute_fragment_min_max_sum does. Its loop over fixed-size strings steps through the
    tiles' values only for the tiles it uses, so with k such tiles it compares the first k values stored."""
    found = [v for v in values if v is not None]
    if not found:
        return b""
    if info.datatype not in _CHARS:
        best = max(found) if largest else min(found)
        return np.asarray(best, value_dtype(info.datatype)).tobytes()
    if not info.var:
        found = [v or bytes(info.cell_val_num) for v in values][:len(found)]
    sizes = np.array([len(v) for v in found], np.int64)
    buf = np.frombuffer(b"".join(found), np.uint8)
    return found[extreme_cells(buf, np.cumsum(sizes) - sizes, sizes)[largest]]


def _coords_stats(info, tile_num):
    """TileDB sizes every field's tile metadata, the __coords one too, and leaves that one zero."""
    has_mm = _has_min_max(FieldInfo(info.name, info.datatype, 1, False, False, info.filters), False)
    zeros = np.zeros(tile_num * info.cell_val_num if has_mm else 0, value_dtype(info.datatype))
    acc = _sum_dtype(value_dtype(info.datatype).kind)
    has_sum = _has_sum(FieldInfo(info.name, info.datatype, 1, False, False, info.filters))
    one = np.zeros(1, value_dtype(info.datatype)).tobytes() if has_mm else b""
    return (Container(fixed=zeros, var=b""), np.zeros(tile_num if has_sum else 0, acc),
            Container(min=one, max=one, sum=0, null_count=0))


def _stat_sections(footer, sections, fields, outs, version, zeros, tile_num, attribute_num, ndim):
    """Tile mins, maxes, sums and null counts (v11+) and the fragment summary (v12+)."""
    mins, maxes, sums, nulls, summary = [], [], [], [], []
    for i, info in enumerate(fields):
        if i == attribute_num:
            mm, tile_sums, entry = _coords_stats(info, tile_num)
            mins.append(mm), maxes.append(mm), sums.append(tile_sums), nulls.append(np.zeros(0, "<u8"))
            summary.append(entry)
            continue
        st = outs[i].stats if i in outs else []
        has_mm = bool(st) and _has_min_max(info, attribute_num < i <= attribute_num + ndim)
        acc = _sum_dtype(value_dtype(info.datatype).kind)
        tile_sums = np.array([s[2] for s in st], acc) if st and _has_sum(info) else np.zeros(0, acc)
        tile_nulls = np.array([s[3] for s in st], "<u8") if info.nullable and st else np.zeros(0, "<u8")
        mins.append(_min_max(info, [s[0] for s in st], has_mm))
        maxes.append(_min_max(info, [s[1] for s in st], has_mm))
        sums.append(tile_sums)
        nulls.append(tile_nulls)
        total = _saturating_sum(tile_sums, acc).item() if len(tile_sums) else 0
        summary.append(Container(min=_summary_bound(info, [s[0] for s in st], False) if has_mm else b"",
                                 max=_summary_bound(info, [s[1] for s in st], True) if has_mm else b"",
                                 sum=total, null_count=int(tile_nulls.sum())))
    for key in ("tile_min_offsets", "tile_max_offsets", "tile_sum_offsets", "tile_null_count_offsets"):
        footer[key] = zeros
    sections.update(tile_mins=mins, tile_maxes=maxes, tile_sums=sums, tile_null_counts=nulls)
    if version >= 12:
        footer.fragment_min_max_sum_null_count_offset = 0
        sections["fragment_summary"] = summary


def _global_order_section(fw, footer, sections):
    """v23: sparse fragments carry each tile's first and last coordinates in global order (§12.10)."""
    if fw.dense:
        footer.optional_sections = ListContainer()
        return
    dims = dimensions(fw.schema)
    zeros = np.zeros(len(dims), "<u8")
    footer.optional_sections = ListContainer([Container(identifier=OptionalSectionId.TILE_GLOBAL_ORDER_OFFSETS,
                                                        data=Container(min_offsets=zeros, max_offsets=zeros))])
    mins, maxes = [], []
    for d in dims:
        first, last = fw.global_bounds[d.name]
        mins.append(_bounds(d, first))
        maxes.append(_bounds(d, last))
    sections.update(tile_global_order_mins=mins, tile_global_order_maxes=maxes)


def _bounds(info, values):
    if not info.var:
        return Container(fixed=np.asarray(values, value_dtype(info.datatype)), var=b"")
    data, offsets, _ = _var_data(np.asarray(values, object), info)
    return Container(fixed=offsets, var=data)


def _var_data(cells, info, terminated=False) -> tuple[bytes, np.ndarray, bool]:
    """(var data, u64 offsets, whether a NUL follows each cell) of var cells: sliced from what the write's check
    encoded where it can be (:func:`encoded_run`); ``terminated``: else the NULs :func:`terminated_cells` puts
    there may stay (string RLE and dictionary read the cells in place)."""
    encoded = encoded_run(cells)
    if encoded is not None:
        return encoded[0], encoded[1], False
    found = terminated_cells(cells) if terminated else None
    data, lengths = found or var_cells(cells, info.datatype.numpy_dtype)
    offsets = np.zeros(len(lengths), "<u8")
    np.cumsum(lengths[:-1] + np.uint64(found is not None), out=offsets[1:])
    return data, offsets, found is not None


def _legacy(fw, version, key, offsets, var_offsets, var_sizes, sizes, n_var, max_chunk) -> bytes:
    """The v1-2 metadata file: one generic tile (§12.9)."""
    dims = dimensions(fw.schema)
    dtype = value_dtype(dims[0].datatype)
    bdtype = np.dtype([("first", dtype, (len(dims),)), ("last", dtype, (len(dims),))])
    bounding = np.zeros(0 if fw.dense else len(fw.mbrs), bdtype)
    if not fw.dense:
        for j, d in enumerate(dims):
            bounding["first"][:, j], bounding["last"][:, j] = fw.global_bounds[d.name]
    mbrs = fw.mbrs if not fw.dense else np.zeros(0, [(d.name, dtype, (2,)) for d in dims])
    legacy = Container(
        version=version, non_empty_domain=np.asarray(fw.non_empty_domain, dtype).reshape(-1), mbrs=mbrs,
        bounding_coords=bounding, tile_offsets=ListContainer(Container(data=o) for o in offsets),
        tile_var_offsets=ListContainer(Container(data=o) for o in var_offsets),
        tile_var_sizes=ListContainer(Container(data=o) for o in var_sizes),
        last_tile_cell_num=fw.last_tile_cell_num, file_sizes=sizes[0], file_var_sizes=sizes[1][:n_var])
    fm = FragmentMetadata(schema=fw.schema, key=key, legacy=legacy)
    fm.max_chunk = max_chunk
    return fm.build()
