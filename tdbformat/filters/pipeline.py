"""The filter pipeline: a tile's chunks to cell bytes and back (filter_pipeline.md; REFERENCE.md §4, §7).

Each filter is a codec (see :class:`Codec`) registered in :data:`CODECS` by filter type. A chunk is
filtered by running the codecs forward, each turning ``(metadata parts, data parts)`` into new parts;
the stored chunk holds the concatenation of the last stage's parts. Reading runs them in reverse: each
codec reads its own header from the front of the metadata and hands the rest to the codec before it.

Chunking (REFERENCE §4.1, and DISCREPANCIES.md): fixed-size tiles are cut into whole cells of at most
64 KiB (v1-4: the pipeline's ``max_chunk_size``, per dimension for coordinates); var-size data (v11+)
is cut between cells with TileDB's 50%/150% rule; string RLE/dictionary (v12/13/17) and WebP tiles are
one chunk, as is every v5+ tile of a pipeline whose ``max_chunk_size`` is 0.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from construct import Container, ListContainer

from ..enums import Datatype, FilterType
from ..errors import EncryptionError, FormatError, UnsupportedError, located
from ..versions import FEATURES

__all__ = [
    "Codec", "FilterContext", "CODECS", "STRING_CODECS", "register", "Header", "split_parts", "joined", "unfilter",
    "filter_tile", "chunk_sizes", "var_chunk_sizes", "skips_offsets", "uses_chunking", "unfilter_strings", "MAX_CHUNK",
    "set_threads", "get_threads", "thread_count", "reverse_stacked", "forward_stacked", "FilterPlan", "Entries",
    "byte_ranges", "nonempty", "stacked", "var_chunk_walk", "TileStream", "each",
]

#: TileDB's default process-wide chunk size (v5+; v1-4 chunk by the pipeline's ``max_chunk_size``).
MAX_CHUNK = 65536

# Threads that filter and unfilter the chunks of one tile: TileDB's sm.compute_concurrency_level, which
# defaults to the hardware's concurrency. The codecs release the GIL in their libraries and numpy passes.
_threads = os.cpu_count() or 1
_pool, _pool_size, _pool_lock = None, 0, threading.Lock()


def _forget_pool():
    global _pool, _pool_size
    _pool, _pool_size = None, 0


os.register_at_fork(after_in_child=_forget_pool)  # a forked child has none of the parent's threads


def set_threads(n: int):
    """Threads per tile for :func:`unfilter` and :func:`filter_tile` when they are not given ``threads=``, and
    per write (``tdbformat.write``)."""
    global _threads
    _threads = thread_count(n)


def get_threads() -> int:
    return _threads


def thread_count(threads, default: int | None = None) -> int:
    """``threads``, checked to be a number of threads (an int >= 1); None: ``default``, else :func:`get_threads`."""
    if threads is None:
        return default or _threads
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"threads: expected a number of threads (an int >= 1), not {threads!r}")
    return int(threads)


_RUN = 16  # chunks unfiltered together (Codec.reverse_many): 1 MiB of 64 KiB chunks stays in cache
_PARALLEL = 256 << 10  # unfiltered bytes from which a tile's chunks are shared out over threads
# Once a process, at import: allocate and free an untouched block of 30 MiB. A read or write frees MiBs of
# work arrays and results. In a process that has not yet freed a large block, glibc keeps its defaults
# (blocks from 128 KiB are mapped, and more than 128 KiB free at the top of the heap goes back to the
# system), so every run of chunks faults the same pages in again: three times the faults and up to three
# times the time of a read (README, "In a fresh process"). Freeing a mapped block raises both thresholds to
# its size and twice that (mallopt(3), M_MMAP_THRESHOLD), as any large free would, and memory is then reused.
# 30 MiB: just under glibc's cap on the dynamic threshold (32 MiB), so 8 MiB tiles and their outputs are
# reused too (a 64 MiB RLE write, repeated in one process, faulted 3,152 pages a write with 8 MiB, 67 with
# 30); at import rather than at the first tile, so that a read's first result is reused too (a fresh
# process's second 1M-string read: 841-962 faults and 39-42 ms, primed at import 10-325 and 33-34).
np.empty(30 << 20, np.uint8)


def _map(fn, items: list, threads: int | None) -> list:
    """``fn(run)`` of runs of neighbouring items, shared by ``threads`` threads, as one list in order.

    A thread takes whole runs (a task per chunk costs as much as a small chunk), and the results come back
    in order, so the output does not depend on the number of threads.
    """
    threads = min(_threads if threads is None else threads, len(items))
    if threads <= 1 and len(items) <= _RUN:  # one run here: most tiles of a read are a chunk or a few
        return fn(items)
    # a few runs per thread even out chunks of unequal cost
    runs = min(len(items), max(-(-len(items) // _RUN), 4 * threads if threads > 1 else 1))
    bounds = [len(items) * r // runs for r in range(runs + 1)]
    if threads <= 1:
        done = map(lambda r: fn(items[bounds[r]:bounds[r + 1]]), range(runs))
    else:
        done = _pool_of(threads).map(lambda r: fn(items[bounds[r]:bounds[r + 1]]), range(runs))
    return [out for run in done for out in run]


def each(fn, items: list, threads: int | None = None) -> list:
    """``fn(item)`` of each of ``items``, in order, on ``threads`` of the filters' threads (default:
    :func:`set_threads`'s): for work in C that lets the GIL go. ``fn`` must not wait on these threads."""
    threads = min(_threads if threads is None else threads, len(items))
    return [fn(item) for item in items] if threads <= 1 else list(_pool_of(threads).map(fn, items))


def _pool_of(threads: int) -> ThreadPoolExecutor:
    """The filters' threads, at least ``threads`` of them."""
    global _pool, _pool_size
    with _pool_lock:  # reads in several threads may ask at once; a smaller pool left behind is idle
        if _pool_size < threads:
            _pool, _pool_size = ThreadPoolExecutor(threads, thread_name_prefix="tdbformat-filters"), threads
        return _pool


@dataclass(frozen=True)
class FilterContext:
    """What a codec needs besides its input: the filter's options and the tile it belongs to."""

    #: the filter's parsed options (a Container of the filter type's options layout)
    options: object = None
    #: datatype of this filter's input (the tile's datatype, transformed by earlier filters)
    datatype: Datatype = Datatype.CHAR
    #: format version governing the tile's data (0 for generic tiles)
    version: int = 0
    #: bytes of one cell of the tile
    cell_size: int = 1
    #: AES-256-GCM key (32 bytes) for the encryption filter
    key: bytes | None = None
    #: most bytes any part of this chunk may unfilter to: lengths read from the input are checked against it
    limit: int = 1 << 32
    #: for the last filter undone: where its run of chunks goes, back to back (their place in the tile's output);
    #: ``reverse_stacked`` codecs write there, the others leave it
    into: np.ndarray | None = None


class Codec:
    """One filter type. ``forward`` is TileDB's write direction, ``reverse`` its read direction."""

    #: the construct Struct of this filter's per-chunk metadata header (for inspection and docs)
    metadata = None
    #: whether ``forward`` runs in C with the GIL released (a compressor's library): threads sharing the chunks
    #: of a tile never wait for each other (:attr:`FilterPlan.gil_free`)
    gil_free = False

    def output_datatype(self, ctx: FilterContext) -> Datatype:
        """Datatype handed to the next filter."""
        return ctx.datatype

    def forward(self, ctx: FilterContext, metadata: list, data: list) -> tuple[list, list]:
        """Filter one chunk: (metadata parts, data parts) in, (metadata parts, data parts) out."""
        raise NotImplementedError

    def reverse(self, ctx: FilterContext, metadata: memoryview, data: memoryview) -> tuple[memoryview, bytes]:
        """Undo this filter: read its header from the front of ``metadata``; return (rest, data)."""
        raise NotImplementedError

    def reverse_many(self, ctx: FilterContext, chunks: list) -> list:
        """``reverse`` of each (metadata, data) of neighbouring chunks. A codec whose numpy passes cost more
        per call than per byte on one chunk does them over all at once: large passes also run threads in
        parallel, since numpy releases the GIL for them."""
        return [self.reverse(ctx, md, data) for md, data in chunks]

    def forward_many(self, ctx: FilterContext, chunks: list) -> list:
        """``forward`` of each (metadata parts, data parts) of neighbouring chunks (see ``reverse_many``)."""
        return [self.forward(ctx, md, parts) for md, parts in chunks]


def nonempty(parts: list) -> list:
    """The parts a filter passes on as TileDB's ``FilterBuffer::append_view`` does, which skips empty views: an
    empty chunk's data leaves a checksum or no-op filter as no part at all (so an encryption after it
    encrypts none)."""
    return [p for p in parts if len(p)]


def byte_ranges(starts, lengths) -> np.ndarray:
    """Flat indices of the byte ranges [start, start+length), back to back."""
    lengths = np.asarray(lengths, np.int64)
    ends = np.cumsum(lengths)
    return np.repeat(np.asarray(starts, np.int64) - (ends - lengths), lengths) + np.arange(int(ends[-1]) if len(
        ends) else 0, dtype=np.int64)


class Entries(NamedTuple):
    """A var string tile as string RLE and dictionary decode it: strings, each the bytes ``buf`` [start,
    start+length) (not back to back), and which string each cell holds: string ``codes[i]`` (dictionary),
    or string j for the next ``repeats[j]`` cells (RLE). A reader turns each string into a value once,
    rather than each cell."""

    buf: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    codes: np.ndarray | None
    repeats: np.ndarray | None
    #: bytes of the cells' data (what the chunk header states)
    nbytes: int

    def expand(self) -> tuple[bytes, np.ndarray]:
        """(data, u64 offsets) of the cells."""
        pick = self.codes if self.repeats is None else np.repeat(np.arange(len(self.starts)), self.repeats)
        starts, lengths = (self.starts, self.lengths) if pick is None else (self.starts[pick], self.lengths[pick])
        return self.buf[byte_ranges(starts, lengths)].tobytes(), (np.cumsum(lengths) - lengths).astype("<u8")


#: filter type -> codec
CODECS: dict[FilterType, Codec] = {}
#: filter type -> codec of its var-string form (``forward_strings``/``reverse_entries``; strings.py)
STRING_CODECS: dict[FilterType, object] = {}


def register(*types: FilterType, strings: bool = False):
    def deco(cls):
        for t in types:
            (STRING_CODECS if strings else CODECS)[t] = cls()
        return cls
    return deco


_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")
_ONE_PART = struct.Struct("<II")  # a part-sizes header of one part: 1, then its size


class Header:
    """Bounded reads from the front of a filter's metadata: a short header is a FormatError."""

    def __init__(self, buf, what: str):
        self.buf, self.pos, self.what = memoryview(buf).cast("B"), 0, what

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise FormatError(f"{self.what} header: needs {n} more bytes at byte {self.pos} of the chunk "
                              f"metadata but only {len(self.buf) - self.pos} are left")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def array(self, dtype, count: int) -> np.ndarray:
        dtype = np.dtype(dtype)
        return np.frombuffer(self.take(count * dtype.itemsize), dtype, count)

    def u8(self) -> int:
        return self.take(1)[0]

    def u32(self) -> int:  # struct, not numpy: a few per chunk, where numpy's call costs dominate
        return _U32.unpack(self.take(4))[0]

    def u64(self) -> int:
        return _U64.unpack(self.take(8))[0]

    def parts(self) -> np.ndarray:
        """``num_parts: u32`` then one u32 size per part: the header of the shuffles, XOR, float scale, WebP."""
        return self.array("<u4", self.u32()).astype(np.int64)

    def rest(self) -> memoryview:
        return self.buf[self.pos:]


def split_parts(data, sizes, what: str) -> list:
    """``data`` cut into consecutive parts of ``sizes`` bytes, which must add up to all of it."""
    sizes = [int(s) for s in sizes]  # a few parts per chunk: plain ints beat numpy here
    if sum(sizes) != len(data):
        raise FormatError(f"{what}: the header's part sizes add up to {sum(sizes)} bytes but the data has {len(data)}")
    parts, pos = [], 0
    for size in sizes:
        parts.append(data[pos:pos + size])
        pos += size
    return parts


def joined(parts):
    """The parts as one buffer (without a copy when there is one part)."""
    return parts[0] if len(parts) == 1 else b"".join(parts)


def parts_header(sizes) -> bytes:
    """``num_parts: u32`` then the u32 sizes."""
    return struct.pack(f"<{1 + len(sizes)}I", len(sizes), *sizes)


def reverse_stacked(codec: Codec, ctx: FilterContext, chunks: list, undo) -> list:
    """``reverse_many`` of a filter whose header is the part sizes (``codec.name`` names it): chunks of one
    part of the same size are undone together by ``undo(rows, out)`` on their (k, n) rows, into ``out`` where
    that is not None (``ctx.into``, when they are all the chunks, in order: a tile's full chunks), the others
    by ``reverse``."""
    groups, out = {}, [None] * len(chunks)
    for i, (md, data) in enumerate(chunks):  # (struct on the header's 8 bytes: a Header a chunk cost 5 us)
        if len(md) >= 8 and _ONE_PART.unpack_from(md) == (1, len(data)):
            groups.setdefault(len(data), []).append(i)
    for n, members in groups.items():
        if len(members) > 1:
            rows = stacked([chunks[i][1] for i in members]).reshape(len(members), n)
            into = ctx.into if len(members) == len(chunks) and ctx.into is not None and ctx.into.size == rows.size \
                else None
            for i, row in zip(members, undo(rows, None if into is None else into.reshape(rows.shape))):
                out[i] = chunks[i][0][8:], row
    return [done or codec.reverse(ctx, md, data) for done, (md, data) in zip(out, chunks)]


def stacked(parts: list) -> np.ndarray:
    """``parts`` back to back, as one u8 array: a view where they are neighbouring slices of one buffer (a tile's
    chunks, as the first filter gets them), else a copy made part by part by numpy, which lets the GIL go
    (b"".join holds it: on two threads, a sixth of a shuffle+zstd write's time at the GIL went to such
    copies, and 16 joins of 1 MiB took 9.5 ms on 2 threads where numpy's copies took 2.9)."""
    base = parts[0].obj if parts and isinstance(parts[0], memoryview) else None
    if base is not None and all(isinstance(p, memoryview) and p.obj is base for p in parts):
        whole = np.frombuffer(base, np.uint8)
        at = [np.frombuffer(p, np.uint8).ctypes.data - whole.ctypes.data for p in parts]
        if all(a + len(p) == b for a, p, b in zip(at, parts, at[1:])) and 0 <= at[0] <= at[-1] + len(parts[-1]) <= len(
                whole):
            view = whole[at[0]:at[-1] + len(parts[-1])]
            view.flags.writeable = False  # (the caller's data: a codec that wrote into its input would change it)
            return view
    out = np.empty(sum(map(len, parts)), np.uint8)
    at = 0
    for part in parts:
        out[at:at + len(part)] = np.frombuffer(part, np.uint8)
        at += len(part)
    return out


def forward_stacked(codec: Codec, ctx: FilterContext, chunks: list, do) -> list:
    """``forward_many`` of a filter whose header is the part sizes: chunks of one part of the same size are
    filtered together by ``do`` on their (k, n) rows, the others by ``forward``."""
    groups, out = {}, [None] * len(chunks)
    for i, (_, parts) in enumerate(chunks):
        if len(parts) == 1:
            groups.setdefault(len(parts[0]), []).append(i)
    for n, members in groups.items():
        if len(members) > 1 and n:
            rows = stacked([chunks[i][1][0] for i in members]).reshape(len(members), n)
            for i, row in zip(members, do(rows)):
                out[i] = [parts_header([n]), *chunks[i][0]], [row]
    return [done or codec.forward(ctx, md, parts) for done, (md, parts) in zip(out, chunks)]


def _codec(filter_type) -> Codec:
    try:
        return CODECS[FilterType(filter_type)]
    except KeyError:
        raise UnsupportedError(f"filter {FilterType(filter_type).name} is not supported") from None


def _stages(pipeline, datatype, version, cell_size, key):
    """(filter type, codec, context) per filter, each with its input datatype."""
    out = []
    dt = Datatype(datatype)
    for f in pipeline["filters"]:
        ctx = FilterContext(options=f["options"], datatype=dt, version=version, cell_size=cell_size, key=key)
        codec = _codec(f["type"])
        out.append((FilterType(f["type"]), codec, ctx))
        dt = codec.output_datatype(ctx)
    return out


def _with_encryption(pipeline, key, encrypted):
    """Data tiles of encrypted arrays carry an AES filter that the schema does not list."""
    if not encrypted:
        return pipeline
    if key is None:
        raise EncryptionError("the array is encrypted: pass key=")
    return Container(max_chunk_size=pipeline["max_chunk_size"],
                     filters=list(pipeline["filters"]) + [Container(type=FilterType.AES_256_GCM, options=Container())])


def _types(pipeline) -> set:
    return {FilterType(f["type"]) for f in pipeline["filters"]}


def skips_offsets(pipeline, datatype, version) -> bool:
    """Whether the var data carries its own offsets (string RLE v12+, dictionary v13+, UTF-8 v17+; §4.2)."""
    dt, types = Datatype(datatype), _types(pipeline)
    if dt == Datatype.STRING_UTF8:
        return bool(types & {FilterType.RLE, FilterType.DICTIONARY}) and FEATURES["utf8_string_offsets"](version)
    return dt == Datatype.STRING_ASCII and _ascii_offsets(types, version)


def _ascii_offsets(types, version) -> bool:
    """Whether RLE (v12+) or dictionary (v13+) encoding of ASCII strings carries the offsets."""
    if FilterType.RLE in types:
        return FEATURES["ascii_rle_offsets"](version)
    return FilterType.DICTIONARY in types and FEATURES["ascii_dictionary_offsets"](version)


def uses_chunking(pipeline, datatype, version, var: bool) -> bool:
    """TileDB's use_tile_chunking (filter_pipeline.cc): the exceptions that make a tile one chunk."""
    if pipeline["max_chunk_size"] == 0:
        return False
    types = _types(pipeline)
    if var and Datatype(datatype) in (Datatype.STRING_ASCII, Datatype.STRING_UTF8):
        return not _ascii_offsets(types, version)  # TileDB gates UTF-8 chunking by the ASCII versions too
    return FilterType.WEBP not in types


def _chunk_offsets(chunks) -> list:
    """Where each chunk starts in its tile (for error messages)."""
    return [8 + 12 * i + pos for i, pos in
            enumerate(itertools.accumulate((len(c["metadata"]) + len(c["data"]) for c in chunks), initial=0))][:-1]


def _reverse_chunk(stages, chunk, index, offset, strings=None):
    md, data = memoryview(chunk["metadata"]), memoryview(chunk["data"])
    ftype = None
    try:
        for ftype, codec, ctx in reversed(stages[1:] if strings else stages):
            md, data = codec.reverse(ctx, md, data)
        if strings:
            ftype, _, ctx = stages[0]
            md, data = STRING_CODECS[ftype].reverse_entries(ctx, md, data)
        ftype = None
        if len(md):
            raise FormatError(f"{len(md)} bytes of filter metadata left over after the pipeline")
        size = data.nbytes if strings else len(data)
        if size != chunk["unfiltered_size"]:
            raise FormatError(f"unfiltered to {size} bytes but the chunk says {chunk['unfiltered_size']}")
    except FormatError as e:
        what = f"{ftype.name} filter, chunk {index}" if ftype is not None else f"chunk {index}"
        raise located(e, where=f"{what} (at byte {offset} of the tile)") from None
    return data


def _reverse_run(stages, run, chunks, into=None) -> list:
    """The data of a run of (index, chunk) of a tile's ``chunks``, each stage taking all its chunks at once (the
    last one undone may put them in ``into``: :attr:`FilterContext.into`); on an error, chunk by chunk again,
    to say which chunk it is in."""
    try:
        items = [(memoryview(c["metadata"]), memoryview(c["data"])) for _, c in run]
        for k in reversed(range(len(stages))):
            _, codec, ctx = stages[k]
            items = codec.reverse_many(ctx if k or into is None else replace(ctx, into=into), items)
        if all(not len(md) and len(data) == c["unfiltered_size"] for (md, data), (_, c) in zip(items, run)):
            return [data for _, data in items]
    except FormatError:
        pass
    offsets = _chunk_offsets(chunks)
    return [_reverse_chunk(stages, c, i, offsets[i]) for i, c in run]


class FilterPlan:
    """A filter pipeline made ready once for the tiles of one field of one fragment: its codecs, their
    contexts and what does not depend on the tile, so that a tile costs its chunks and little more (a read
    keeps one per field; :func:`unfilter`, :func:`unfilter_strings` and :func:`filter_tile` make one a call).

    ``encrypted=True`` adds the implicit AES-256-GCM stage of data tiles in encrypted arrays.
    """

    def __init__(self, pipeline, *, datatype=Datatype.CHAR, version=0, cell_size=1, key=None, encrypted=False):
        self.pipeline = _with_encryption(pipeline, key, encrypted)
        self.datatype, self.version, self.cell_size, self.key = Datatype(datatype), version, cell_size, key
        self.stages = _stages(self.pipeline, self.datatype, version, cell_size, key)
        #: var data through this pipeline carries its own offsets (:func:`skips_offsets`)
        self.strings = skips_offsets(pipeline, datatype, version)
        #: every filter runs in C without the GIL (:attr:`Codec.gil_free`)
        self.gil_free = bool(self.stages) and all(codec.gil_free for _, codec, _ in self.stages)
        self._bounded = {}

    def stream(self, max_chunk: int = MAX_CHUNK, threads: int | None = None, *, var: bool = False, made_for=None,
               base: int = 0):
        """A :class:`TileStream` of a tile through this plan (``var``: of var cells), where its chunks are known
        as its cells come (v5+ fixed-size cells; v11+ var cells, not through string RLE or dictionary) and more
        than one thread filters them; else None."""
        threads, version = _threads if threads is None else threads, self.version
        if threads < 2 or not version or FEATURES["pipeline_chunk_bound"](version) or \
                not uses_chunking(self.pipeline, self.datatype, version, var) or \
                var and (self.strings or not FEATURES["var_chunking"](version)):
            return None
        return TileStream(self, max_chunk, threads, var, made_for, base)

    def bounded(self, sizes) -> list:
        """The stages with a tile's bound on what any part may unfilter to: intermediate stages stay within a
        small multiple of the largest chunk (window headers are the largest), rounded up to a power of two
        so that a plan keeps a few variants."""
        limit = 1 << (16 * max(sizes, default=0) + 4095).bit_length()
        stages = self._bounded.get(limit)
        if stages is None:
            stages = self._bounded[limit] = [(t, codec, replace(ctx, limit=limit)) for t, codec, ctx in self.stages]
        return stages

    def decode(self, tile, *, var=False, out=None, threads=None, entries=False):
        """``(data, offsets)``: :meth:`unfilter_strings` for var data that carries its offsets (with
        ``entries``, the :class:`Entries` they decode to), else ``(unfilter(...), None)``."""
        if var and self.strings:
            return self.unfilter_strings(tile, entries=entries)
        return self.unfilter(tile, out=out, threads=threads), None

    def unfilter(self, tile, *, out=None, threads=None) -> memoryview:
        """See :func:`unfilter`."""
        chunks = tile["chunks"]
        sizes = [c["unfiltered_size"] for c in chunks]
        starts = [0, *itertools.accumulate(sizes)]
        if out is None:
            # sized by the header only up to a multiple of the stored bytes; past that it grows with real output
            stored = sum(len(c["metadata"]) + len(c["data"]) for c in chunks)
            dest = np.empty(min(starts[-1], 16 * stored + (1 << 20)), np.uint8)
        else:
            dest = out.reshape(-1).view(np.uint8)
            if starts[-1] != len(dest):
                raise FormatError(f"the tile's chunks unfilter to {starts[-1]} bytes but {len(dest)} were expected")
        stages = self.bounded(sizes)

        def run(jobs):  # (neighbouring chunks: the last filter undone may put them in place, which saves a copy)
            into = dest[starts[jobs[0][0]]:starts[jobs[-1][0] + 1]]
            for (i, _), data in zip(jobs, _reverse_run(stages, jobs, chunks, into)):
                data = np.frombuffer(data, np.uint8)
                if not np.may_share_memory(data, into):  # (else its rows of ``into``, in the chunks' order)
                    dest[starts[i]:starts[i + 1]] = data
            return ()

        items, at = list(enumerate(chunks)), 0
        while at < len(items):  # in rounds: the chunks that end within what is allocated, then one that grows it
            fit = bisect.bisect_right(starts, len(dest), at) - 1
            if fit > at:  # a small tile's chunks are decoded here: handing them to threads costs more
                _map(run, items[at:fit], threads if starts[-1] >= _PARALLEL else 1)
                at = fit
            else:  # decoded first, its output is real: the allocation then doubles the output so far
                data = _reverse_run(stages, items[at:at + 1], chunks)[0]
                size = min(starts[-1], max(starts[at + 1], 2 * starts[at]))
                try:  # in place (realloc remaps a large block); numpy's refcheck refuses if anything refers to it
                    dest.resize(size)
                except ValueError:
                    dest = np.concatenate([dest, np.empty(size - len(dest), np.uint8)])
                dest[starts[at]:starts[at + 1]] = np.frombuffer(data, np.uint8)
                at += 1
        return memoryview(dest)

    def unfilter_tiles(self, tiles: list, out=None, threads: int = 1, limit: int = 0):
        """Stored tiles (their bytes) unfiltered back to back by their codec's ``reverse_tiles`` where the
        pipeline is one stage that has one (zstd): into ``out`` (uint8; True), or with ``out`` None into a new
        array (returned) allocated up to ``limit`` bytes until decoded output proves more. False (None) where
        not, or where that codec declines the tiles: :meth:`unfilter` then decodes them chunk by chunk."""
        reverse = getattr(self.stages[0][1], "reverse_tiles", None) if len(self.stages) == 1 else None
        if reverse is None:
            return False if out is not None else None
        return reverse(self.stages[0][2], tiles, out, threads, limit)

    def filter(self, data, *, offsets=None, sizes=None, var=None, dim_num=1, max_chunk=MAX_CHUNK,
               threads=None, terminated=False) -> Container:
        """See :func:`filter_tile`."""
        return _filter(self, data, offsets, sizes, var, dim_num, max_chunk, threads, terminated)

    def unfilter_strings(self, tile, entries=False):
        """See :func:`unfilter_strings`; with ``entries``, the :class:`Entries` the filter decodes to."""
        stages = self.stages
        if self.cell_size != self.datatype.size:  # string codecs count in values of the datatype
            stages = _stages(self.pipeline, self.datatype, self.version, self.datatype.size, self.key)
        if stages[0][0] not in STRING_CODECS:
            raise FormatError(f"{stages[0][0].name} comes before the string RLE/dictionary filter, which TileDB "
                              "requires to be first")
        if tile["num_chunks"] > 1:
            raise FormatError(f"a string RLE/dictionary tile is one chunk, this one has {tile['num_chunks']}")
        if not tile["chunks"]:
            none = np.zeros(0, np.int64)
            got = Entries(np.zeros(0, np.uint8), none, none, None, None, 0)
        else:
            limit = 1 << (16 * tile["chunks"][0]["unfiltered_size"] + 4095).bit_length()
            got = _reverse_chunk([(t, codec, replace(ctx, limit=limit)) for t, codec, ctx in stages],
                                 tile["chunks"][0], 0, 8, strings=True)
        return got if entries else got.expand()


def unfilter(tile, pipeline, *, datatype=Datatype.CHAR, version=0, cell_size=1, key=None,
             encrypted=False, out=None, threads=None) -> memoryview:
    """The unfiltered bytes of ``tile`` (a parsed Tile) filtered with ``pipeline``, as a memoryview.

    ``encrypted=True`` adds the implicit AES-256-GCM stage of data tiles in encrypted arrays. ``out``, a
    writable contiguous numpy array of exactly the tile's unfiltered size, receives the bytes. The chunks
    are unfiltered by ``threads`` threads (default: :func:`set_threads`); any number gives the same bytes.
    Many tiles of one pipeline: make a :class:`FilterPlan` once and call its ``unfilter``.
    """
    return FilterPlan(pipeline, datatype=datatype, version=version, cell_size=cell_size, key=key,
                encrypted=encrypted).unfilter(tile, out=out, threads=threads)


def unfilter_strings(tile, pipeline, *, datatype, version, key=None, encrypted=False):
    """(var data, u64 offsets) of a var string tile whose offsets are skipped (:func:`skips_offsets`)."""
    return FilterPlan(pipeline, datatype=datatype, version=version, cell_size=Datatype(datatype).size, key=key,
                encrypted=encrypted).unfilter_strings(tile)


def chunk_sizes(nbytes: int, cell_size: int, max_chunk: int = MAX_CHUNK, dim_num: int = 1) -> list[int]:
    """Chunk sizes of a fixed-size tile (tile.cc, filter_chunks_forward): whole cells of at most ``max_chunk``.

    A v1-4 coordinate tile of ``dim_num`` dimensions is chunked per dimension (compute_tile_chunks).
    """
    cell, part = cell_size // dim_num, nbytes // dim_num
    chunk = max(cell, min(max_chunk, part) // cell * cell)
    if part == chunk:
        return [part] * dim_num
    return ([chunk] * (part // chunk) + ([part % chunk] if part % chunk else [])) * dim_num


def var_chunk_sizes(offsets, nbytes: int, type_size: int, max_chunk: int = MAX_CHUNK) -> list[int]:
    """Chunk sizes of var data (v11+, get_var_chunk_sizes): cells are never split (:func:`var_chunk_walk`).

    The walk can close a chunk exactly at the end, and TileDB then writes an empty last chunk: so do we.
    """
    chunk = max(type_size, (min(max_chunk, nbytes) // type_size) * type_size)
    if nbytes == chunk:
        return [nbytes]
    starts, _ = var_chunk_walk(np.append(np.asarray(offsets, np.int64)[1:], nbytes), chunk)
    return np.diff([0, *starts, nbytes]).tolist()


def var_chunk_walk(ends, chunk: int, at: tuple = (0, 0), final: bool = True, base: int = 0) -> tuple[list, tuple]:
    """The starts of the chunks that get_var_chunk_sizes closes over cells ending at ``ends`` (each starts where
    the one before ends, the first at ``base``), from ``at`` (the open chunk's first cell and byte), and the
    open chunk's ``at`` where it stops.

    A cell that would overflow the chunk still joins it if the chunk is at most half full or the result at
    most 150%; otherwise it starts the next chunk (alone, if it is bigger than a chunk). TileDB walks cell by
    cell; we go chunk by chunk, finding the cell that overflows each with a binary search. Not ``final``
    (more cells to come after these), the walk stops before the last cell, whose closing depends on them.
    """
    n, starts, (first, begin) = len(ends), [], at
    while first < n:
        over = int(np.searchsorted(ends, begin + chunk, "right"))  # the first cell that does not fit
        if over >= n - (not final):
            break
        start, end = int(ends[over - 1]) if over else base, int(ends[over])
        current, size = start - begin, end - start
        if current <= chunk // 2 or current + size <= chunk + chunk // 2:  # it joins, and closes the chunk
            starts.append(end)
            first, begin = over + 1, end
        elif size > chunk:  # it closes the chunk before it, and takes one of its own
            starts.append(start)
            if over != n - 1:
                starts.append(end)
            first, begin = over + 1, end
        else:  # it starts the next chunk
            starts.append(start)
            first, begin = over, start
    return starts, (first, begin)


def _forward_run(stages, items: list) -> list:
    """Chunks of the (metadata parts, data parts) ``items``, each stage taking all of them at once."""
    for _, codec, ctx in stages:
        items = codec.forward_many(ctx, items)
    return [Container(metadata=b"".join(bytes(m) for m in md), data=b"".join(bytes(p) for p in parts))
            for md, parts in items]


def filter_tile(data: bytes, pipeline, *, datatype=Datatype.CHAR, version=0, cell_size=1, key=None,
                offsets=None, encrypted=False, sizes=None, var=None, dim_num=1, max_chunk=MAX_CHUNK,
                threads=None, terminated=False) -> Container:
    """A Tile (``num_chunks``, ``chunks``) holding ``data`` filtered with ``pipeline``.

    ``offsets`` (the cell offsets, u64, no trailing one) marks var-size data: from v11 it is chunked
    between cells, and string RLE/dictionary (:func:`skips_offsets`) encode the offsets into the data.
    ``dim_num`` is the number of dimensions of a v1-4 coordinate tile.

    Chunks are at most the pipeline's ``max_chunk_size`` in v1-4 and ``max_chunk`` after: TileDB's
    process-wide chunk size, 64 KiB unless the writing process changed it (the v16-v21 corpus arrays
    have 192-byte chunks), which the file does not record. ``sizes`` overrides the chunking: before v11
    TileDB chunked var data by the buffer it had allocated (the writer passes that rule's sizes).
    ``threads`` filter the chunks (default: :func:`set_threads`); any number gives the same bytes.
    ``terminated``: each var cell at ``offsets`` is followed by one byte that is not its own, a writer's NUL
    (no cell holding one): string RLE and dictionary read the cells in place, other pipelines store them
    without the NULs, each chunk dropping its own in the thread that filters it.
    Many tiles of one pipeline: make a :class:`FilterPlan` once and call its ``filter``.
    """
    return FilterPlan(pipeline, datatype=datatype, version=version, cell_size=cell_size, key=key,
                encrypted=encrypted).filter(data, offsets=offsets, sizes=sizes, var=var, dim_num=dim_num,
                                            max_chunk=max_chunk, threads=threads, terminated=terminated)


def _without_nuls(plan: FilterPlan, raw, offsets, sizes, var, max_chunk) -> tuple:
    """(raw, data, offsets, sizes, cut) for ``terminated`` var cells (a NUL after each, ``offsets`` into
    ``raw``) through a pipeline that stores them without: where TileDB chunks var data between cells (v11+,
    no sizes given), the chunk sizes of the cells without NULs and each chunk's place in ``raw`` (``cut``), for
    its thread to drop them; else the NULs dropped here (``data`` and ``offsets`` without them, ``cut`` None).
    Chunks never split a cell, so a chunk's bytes are its cells' with their NULs."""
    n = len(offsets)
    plain = np.asarray(offsets, np.int64) - np.arange(n)
    raw = raw if isinstance(raw, bytes) else bytes(raw)
    version = plan.version
    if sizes is not None or not var or version and FEATURES["pipeline_chunk_bound"](version) or \
            not uses_chunking(plan.pipeline, plan.datatype, version, var) or not FEATURES["var_chunking"](version):
        return raw, memoryview(raw.translate(None, b"\0")), plain.astype("<u8"), sizes, None
    nbytes = len(raw) - n
    sizes = var_chunk_sizes(plain, nbytes, plan.cell_size, max_chunk)
    starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    cut = starts + np.searchsorted(np.append(plain[1:], nbytes), starts, "right")  # + the NULs of the cells before
    return raw, None, plain.astype("<u8"), sizes, cut.tolist()


def _filter(plan: FilterPlan, data, offsets, sizes, var, dim_num, max_chunk, threads, terminated) -> Container:
    raw, data = data, memoryview(data).cast("B")
    var = offsets is not None if var is None else var
    pipeline, stages, version, cell_size = plan.pipeline, plan.stages, plan.version, plan.cell_size
    chunks = ListContainer()
    if var and offsets is not None and plan.strings:
        if len(data) or len(offsets):
            ftype, _, ctx = stages[0]
            md, parts = STRING_CODECS[ftype].forward_strings(ctx, data, np.asarray(offsets, "<u8"), terminated)
            chunk = _forward_run(stages[1:], [(md, parts)])[0]
            chunk.unfiltered_size = len(data) - terminated * len(offsets)
            chunks.append(chunk)
        return Container(num_chunks=len(chunks), chunks=chunks)
    cut = None  # with ``terminated``: where each chunk's cells lie in ``raw``, their NULs included
    if terminated:
        raw, data, offsets, sizes, cut = _without_nuls(plan, raw, offsets, sizes, var, max_chunk)
    if sizes is None:
        if version and FEATURES["pipeline_chunk_bound"](version):  # the pipeline's bound, even 0 (one cell)
            sizes = chunk_sizes(len(data), cell_size, pipeline["max_chunk_size"], dim_num)
        elif not uses_chunking(pipeline, plan.datatype, version, var):
            sizes = [len(data)]
        elif var and offsets is not None and FEATURES["var_chunking"](version):
            sizes = var_chunk_sizes(offsets, len(data), cell_size, max_chunk)
        else:
            sizes = chunk_sizes(len(data), cell_size, max_chunk)
    starts = [0, *itertools.accumulate(sizes)]

    def piece(r):  # (a chunk's NULs dropped in the thread that filters it: they overlap the compressors)
        return data[starts[r]:starts[r + 1]] if cut is None else raw[cut[r]:cut[r + 1]].translate(None, b"\0")

    chunks.extend(_map(lambda indices: _chunks_of(stages, indices, piece, starts), list(range(len(sizes))), threads))
    return Container(num_chunks=len(chunks), chunks=chunks)


def _chunks_of(stages, indices, piece, starts) -> list:
    """The filtered chunks ``indices`` of a tile, chunk r being ``piece(r)``, of the bytes [starts[r], starts[r+1])."""
    out = _forward_run(stages, [([], [piece(r)]) for r in indices])
    for r, chunk in zip(indices, out):
        chunk.unfiltered_size = starts[r + 1] - starts[r]
    return out


@functools.cache
def _stream_pool(threads: int) -> ThreadPoolExecutor:
    """The threads of :class:`TileStream`: one fewer than ``threads``, for the thread that makes the cells."""
    return ThreadPoolExecutor(max(1, threads - 1), thread_name_prefix="tdbformat-stream")


os.register_at_fork(after_in_child=_stream_pool.cache_clear)  # (a forked child has none of the parent's threads)


class TileStream:
    """A tile filtered as its cells come (:meth:`FilterPlan.stream`): each chunk goes to the filters' threads
    once the cells that close it are known, so that its compressors run beside what makes the cells (a write's
    UTF-8 check, which holds the GIL); :meth:`tile` is :meth:`FilterPlan.filter` of the whole tile.

    ``var``: var cells, whose chunks end between cells (:func:`var_chunk_walk`), else cells of the plan's cell
    size. ``base``: where the tile starts in the bytes it is given (those of several tiles, back to back).
    ``made_for``: what the tile's bytes depend on, for its user to see it is the tile it wants."""

    _AT_ONCE = 8  # chunks a task filters (a task per 64 KiB chunk cost as much as its chunk)

    def __init__(self, plan: "FilterPlan", max_chunk: int, threads: int, var: bool, made_for=None, base: int = 0):
        self.plan, self.max_chunk, self.threads, self.var, self.made_for = plan, max_chunk, threads, var, made_for
        self._chunk, self._base = max(plan.cell_size, max_chunk // plan.cell_size * plan.cell_size), base
        self._starts, self._at, self._runs, self._sent, self._done = [base], (0, base), [], 0, None

    def add(self, data, ends=None) -> None:
        """The cells so far: their bytes, the tile's from ``base`` on (kept unchanged), at the end of ``data``
        and, of var cells, where each ends."""
        if len(data) - self._base <= self.max_chunk:  # (a tile of at most a chunk is one chunk: not known before)
            return
        if self.var:
            closed, self._at = var_chunk_walk(ends, self._chunk, self._at, final=False, base=self._base)
        else:  # the chunks the bytes fill
            closed = list(range(self._starts[-1] + self._chunk, len(data) + 1, self._chunk))
        self._send(data, closed)

    def finish(self, data, offsets=None, ends=None) -> None:
        """All the cells known: their bytes, from ``base`` to the end of ``data``, and, of var cells, their u64
        ``offsets`` and where each ends (``ends``: the walk goes on where it stopped; else it is made again from
        the start); the chunks left go to the threads. Once: a later call changes nothing."""
        if self._done is not None:
            return
        base, nbytes = self._base, len(data) - self._base
        if self.var and ends is not None and nbytes > self.max_chunk:
            closed, _ = var_chunk_walk(ends, self._chunk, self._at, base=base)
            rest = [*closed, len(data)]
        else:
            cell = self.plan.cell_size
            sizes = var_chunk_sizes(offsets, nbytes, cell, self.max_chunk) if self.var else \
                chunk_sizes(nbytes, cell, self.max_chunk)
            starts = list(itertools.accumulate(sizes, initial=base))
            if starts[:len(self._starts)] != self._starts:  # (the same walk: never, but never a wrong tile either)
                self._done = (memoryview(data)[base:], offsets)
                return
            rest = starts[len(self._starts):]
        self._send(data, rest, every=True)
        self._done = ()

    def tile(self, data, offsets=None, ends=None) -> Container:
        """The filtered tile of all its cells (:meth:`finish`'s arguments, where it was not called)."""
        self.finish(data, offsets, ends)
        if self._done:
            return self.plan.filter(self._done[0], offsets=self._done[1], max_chunk=self.max_chunk,
                                    threads=self.threads)
        chunks = ListContainer(c for run in self._runs for c in run.result())
        return Container(num_chunks=len(chunks), chunks=chunks)

    def _send(self, data, closed: list, every: bool = False) -> None:
        """The chunks not sent (with those ``closed`` now) to the threads, :attr:`_AT_ONCE` a task (``every``:
        the last task too, with what is left)."""
        self._starts += closed
        view, starts = memoryview(data).cast("B"), self._starts  # (only grows: the tasks' chunks stay put)
        while len(starts) - 1 - self._sent >= (1 if every else self._AT_ONCE):
            indices = list(range(self._sent, min(self._sent + self._AT_ONCE, len(starts) - 1)))
            self._runs.append(_stream_pool(self.threads).submit(
                _chunks_of, self.plan.stages, indices, lambda r, v=view: v[starts[r]:starts[r + 1]], starts))
            self._sent = indices[-1] + 1
