"""Compression filters: GZIP, ZSTD, LZ4, BZIP2, RLE, DOUBLE_DELTA, DELTA (REFERENCE.md §7.5).

A compressor consumes all its input parts: its header lists each part's original and compressed size
(metadata parts first), and its data is the compressed parts back to back. Earlier filters' metadata is
compressed along with the data. The string forms of RLE and dictionary are in strings.py.
"""

from __future__ import annotations

import bz2
import functools
import struct
import threading
import zlib

import lz4.block
import numpy as np
import zstandard
from construct import Bytes, Int8ul, Int16ub, Int32ul, Int64ul, this

from ..enums import Datatype, FilterType
from ..errors import FormatError, UnsupportedError
from ..versions import FEATURES
from ..fields import Counted, Struct
from .pipeline import Codec, FilterContext, Header, each, joined, register, stacked

__all__ = ["CompressedPartSizes", "CompressionCodec", "DoubleDeltaHeader", "DeltaHeader", "RleRun", "delta_dtype"]

CompressedPart = Struct(
    "orig_size" / Int32ul * "bytes of the part before compression",
    "compressed_size" / Int32ul * "bytes of the compressed part",
)

#: Header of every compression filter's output metadata.
CompressedPartSizes = Struct(
    "num_metadata_parts" / Int32ul * "compressed metadata parts",
    "num_data_parts" / Int32ul * "compressed data parts",
    "parts" / Counted(this.num_metadata_parts + this.num_data_parts, CompressedPart, 8)
    * "sizes of each part, metadata parts first",
)

_HEADER = Struct("num_metadata_parts" / Int32ul, "num_data_parts" / Int32ul)


_COUNTS = struct.Struct("<II")
_NUM_CHUNKS = struct.Struct("<Q")
#: a chunk's header (unfiltered, data and metadata sizes) and, as its metadata, a compressor's of one part
#: (no metadata parts, one data part, its uncompressed and compressed sizes)
_ZSTD_CHUNK = struct.Struct("<7I")
#: the frames decompressed in one call of the whole-tile path: the library's buffer for them is this, not a field
_ROUND = 1 << 20
_U64 = struct.Struct("<Q")


def read_part_sizes(metadata: memoryview):
    """(metadata part sizes, data part sizes, header length) from a compressor's header: lists of
    ``(orig_size, compressed_size)``."""
    # one unpack per chunk (this runs once per 64 KiB); a short header goes the checked way for its message
    if len(metadata) >= 8:
        nmd, ndata = _COUNTS.unpack_from(metadata)
        end = 8 + 8 * (nmd + ndata)
        if end <= len(metadata):
            flat = struct.unpack_from(f"<{2 * (nmd + ndata)}I", metadata, 8)
            sizes = list(zip(flat[::2], flat[1::2]))
            return sizes[:nmd], sizes[nmd:], end
    head = Header(metadata, "compressor")
    nmd, ndata = head.u32(), head.u32()
    head.take(8 * (nmd + ndata))
    raise AssertionError("unreachable: the header is short")


def write_part_sizes(md_sizes, data_sizes) -> bytes:
    flat = [n for sizes in (*md_sizes, *data_sizes) for n in sizes]  # (struct: a chunk's numpy arrays cost 3 us)
    return struct.pack(f"<{2 + len(flat)}I", len(md_sizes), len(data_sizes), *flat)


class CompressionCodec(Codec):
    """A compressor of whole parts; subclasses give ``compress`` and ``decompress``."""

    metadata = CompressedPartSizes

    def compress(self, ctx: FilterContext, raw: bytes) -> bytes:
        raise NotImplementedError

    def decompress(self, ctx: FilterContext, packed: bytes, orig_size: int) -> bytes:
        raise NotImplementedError

    def forward(self, ctx, metadata, data):
        parts = list(metadata) + list(data)
        packed = [self.compress(ctx, p) for p in parts]  # the libraries take any buffer: no copy to bytes
        sizes = [(len(p), len(c)) for p, c in zip(parts, packed)]
        return [write_part_sizes(sizes[: len(metadata)], sizes[len(metadata):])], [b"".join(packed)]

    def reverse(self, ctx, metadata, data):
        md_sizes, data_sizes, _ = read_part_sizes(metadata)
        name = type(self).__name__
        parts = md_sizes + data_sizes
        packed, unpacked = sum(p[1] for p in parts), sum(p[0] for p in parts)
        if packed != len(data):
            raise FormatError(f"{name}: compressed parts add up to {packed} bytes but the chunk holds {len(data)}")
        if unpacked > ctx.limit:
            raise FormatError(f"{name}: the parts claim {unpacked} uncompressed bytes, more than the chunk can hold "
                              f"({ctx.limit})")
        pos, out, decompress = 0, [], self.decompress
        for orig, size in parts:
            raw = decompress(ctx, data[pos:pos + size], orig)
            if len(raw) != orig:
                raise FormatError(f"{name}: a part decompressed to {len(raw)} bytes, its header says {orig}")
            out.append(raw)
            pos += size
        nmd = len(md_sizes)
        return memoryview(joined(out[:nmd])), joined(out[nmd:])  # one part (the usual): no copy

    def reverse_grouped(self, ctx, chunks, shape, undo) -> list:
        """``reverse_many`` of a compressor of numpy passes: chunks of one part that ``shape(metadata, data)``
        finds alike (a tile's full chunks, as a rule) decode together by ``undo(shape, their data)`` as rows,
        one pass each for all of them; a chunk whose shape is None, or alone in its shape, by ``reverse``."""
        groups, out = {}, [None] * len(chunks)
        for i, (md, data) in enumerate(chunks):
            found = shape(md, data)
            if found is not None:
                groups.setdefault(found, []).append(i)
        for found, members in groups.items():
            if len(members) > 1:
                for i, row in zip(members, undo(found, [chunks[i][1] for i in members])):
                    out[i] = chunks[i][0][16:], memoryview(row.view(np.uint8))
        return [done or self.reverse(ctx, md, data) for done, (md, data) in zip(out, chunks)]


def _rows_of(parts: list, skip: int, dtype) -> np.ndarray:
    """Equal-sized ``parts`` after their first ``skip`` bytes, as the rows of one ``dtype`` array (filled part
    by part: one allocation, where joining them and copying into aligned rows took two)."""
    width = len(parts[0]) - skip if parts else 0
    out = np.empty((len(parts), width // np.dtype(dtype).itemsize), dtype)
    rows = out.view(np.uint8)
    for row, part in zip(rows, parts):
        row[:] = np.frombuffer(part, np.uint8, offset=skip)
    return out


def _rows(parts: list, skip: int) -> np.ndarray:
    """Equal-sized ``parts`` after their first ``skip`` bytes, as the rows of a u8 array."""
    return stacked([memoryview(p)[skip:] for p in parts]).reshape(len(parts), -1)


try:  # zlib-ng (the ``fast`` extra) inflates zlib streams about twice as fast as zlib, with the same errors
    from zlib_ng import zlib_ng as _inflate
except ImportError:
    _inflate = zlib

# What the codec libraries raise on corrupt input.
_CODEC_ERRORS = (zlib.error, _inflate.error, zstandard.ZstdError, lz4.block.LZ4BlockError, OSError, EOFError,
                 ValueError)


def _bounded(decompress, packed, orig_size, name):
    try:
        return decompress(packed, orig_size)
    except _CODEC_ERRORS as e:
        raise FormatError(f"{name} data is corrupt: {e}") from None


@register(FilterType.GZIP)
class Gzip(CompressionCodec):
    gil_free = True  # (zlib lets the GIL go while it deflates)

    def compress(self, ctx, raw):
        level = ctx.options["level"]
        return zlib.compress(raw, level if level >= 0 else -1)

    def decompress(self, ctx, packed, orig_size):
        # a longer stream than declared fails the caller's size check; a cut one raises here. Compression stays
        # zlib's: its bytes are TileDB's, zlib-ng's are not
        # the first buffer is the declared size, but never more than the stream can inflate to (deflate's
        # ratio is at most 1032:1): a declared size is a claim, the compressed bytes are there
        return _bounded(lambda p, n: _inflate.decompress(p, bufsize=max(1, min(n, 1032 * len(p) + 64))), packed,
                        orig_size, "gzip")


_local = threading.local()  # one zstd context per thread: creating one per chunk costs more than the chunk


def _compressor(ctx) -> "zstandard.ZstdCompressor":
    """This thread's compressor of the filter's level: making one costs more than a 64 KiB chunk."""
    level = ctx.options["level"]
    # (libzstd takes levels past its maximum as the maximum, which TileDB passes on; python-zstandard refuses)
    level = 3 if level < -7 else min(level, zstandard.MAX_COMPRESSION_LEVEL)
    compressors = vars(_local).setdefault("zstd_compressors", {})
    if level not in compressors:
        compressors[level] = zstandard.ZstdCompressor(level=level)
    return compressors[level]


@register(FilterType.ZSTD)
class Zstd(CompressionCodec):
    gil_free = True  # (libzstd, the GIL let go)

    def compress(self, ctx, raw):
        return _compressor(ctx).compress(raw)

    def decompress(self, ctx, packed, orig_size):
        return _bounded(_unzstd, packed, orig_size, "zstd")

    def forward_many(self, ctx, chunks):
        """The parts of neighbouring chunks (an earlier filter's header too), none empty, compress in one call, in
        C with the GIL released: a call per part took the GIL back for each, which two threads waited for in turn
        (RLE + zstd: two calls a chunk)."""
        flat = [p for md, parts in chunks for p in (*md, *parts)]
        if len(chunks) < 2 or not flat or not all(map(len, flat)):
            return super().forward_many(ctx, chunks)
        out = _compressor(ctx).multi_compress_to_buffer(flat, threads=1)
        done, at = [], 0
        for md, parts in chunks:
            packed = [memoryview(out[i]) for i in range(at, at + len(md) + len(parts))]
            sizes = [(len(p), len(c)) for p, c in zip(flat[at:], packed)]
            done.append(([write_part_sizes(sizes[:len(md)], sizes[len(md):])],
                         [packed[0] if len(packed) == 1 else b"".join(packed)]))  # (one part, as ``forward``)
            at += len(packed)
        return done

    def reverse_many(self, ctx, chunks):
        """The parts of chunks of one data part, and at most one metadata part (an earlier filter's header),
        decompress in one call, in C with the GIL released; a call per part cost more than a 64 KiB chunk's
        zstd. Any other shape, a claim of more than 16 times the stored bytes, or an error goes chunk by
        chunk (which names it)."""
        heads = [_one_or_two_parts(md, data, ctx.limit) for md, data in chunks]
        if len(chunks) < 2 or not all(heads):
            return super().reverse_many(ctx, chunks)
        frames = [(orig, data[start:end]) for (_, data), (parts, _) in zip(chunks, heads) for orig, start, end in parts]
        sizes = np.array([orig for orig, _ in frames], np.uint64)
        if sizes.sum() > 16 * sum(len(d) for _, d in chunks) + (1 << 20):
            return super().reverse_many(ctx, chunks)
        try:
            out = _decompressor().multi_decompress_to_buffer([f for _, f in frames], decompressed_sizes=sizes.tobytes())
        except zstandard.ZstdError:
            return super().reverse_many(ctx, chunks)
        done = [memoryview(out[i]) for i in range(len(frames))]
        return _as_reversed(chunks, heads, done, [orig for orig, _ in frames]) or super().reverse_many(ctx, chunks)

    def reverse_tiles(self, ctx, tiles: list, out, threads: int, limit: int = 0):
        """Whole stored tiles (bytes each) of a pipeline of this one stage decoded back to back: into ``out``
        (uint8; returns True), or with ``out`` None into a new array (returned), allocated up to ``limit``
        bytes until decoded frames prove more, then doubling. Each chunk's header and compressor header are
        read in one unpack and the frames decompressed a round (about a MiB) a call, the rounds that fit in
        what is allocated shared by ``threads`` of the filters' threads: a sparse read of 1M cells in 300 tiles
        spent more on a chunk's Python (its Container, its header, its copy) than on its zstd, and libzstd's
        own threads, made afresh each call, took 83 ms for 64 MiB where these take 44. False/None, with
        ``out`` to be written again, for anything but chunks of one frame each, sized as the headers say (and
        adding up to ``out``): the chunk-by-chunk path then decodes or names what is wrong."""
        found = _zstd_frames(tiles)
        if found is None or not found[0] or out is not None and sum(found[1]) != len(out):
            return False if out is not None else None
        frames, sizes = found
        dest = out if out is not None else np.empty(min(sum(sizes), max(limit, 1)), np.uint8)
        first, at, total = 0, 0, sum(sizes)
        while first < len(frames):
            rounds, last, end = _rounds(sizes, first, at, len(dest))
            if not rounds:  # decoded output proves the bytes so far: the allocation may double
                if not at:
                    return None
                try:  # in place (realloc remaps a large block), as the chunk-by-chunk path grows its output
                    dest.resize(min(total, 2 * at))
                except ValueError:
                    dest = np.concatenate([dest[:at], np.empty(min(total, 2 * at) - at, np.uint8)])
                continue
            if not all(each(lambda r: _decoded_round(frames, sizes, dest, *r), rounds, threads)):
                return False if out is not None else None
            first, at = last, end
        return True if out is not None else dest


def _rounds(sizes: list, first: int, at: int, room: int) -> tuple[list, int, int]:
    """([(first frame, last frame, where its output starts)] of the rounds of frames from ``first`` whose
    claims fit in ``room`` bytes from ``at``, about a MiB each; the frame after them, where their output ends)."""
    rounds, last = [], first
    while last < len(sizes) and at + sizes[last] <= room:
        start, claimed = last, 0
        while last < len(sizes) and at + claimed + sizes[last] <= room and (last == start or claimed < _ROUND):
            claimed, last = claimed + sizes[last], last + 1
        rounds.append((start, last, at))
        at += claimed
    return rounds, last, at


def _decoded_round(frames, sizes, dest, first: int, last: int, at: int) -> bool:
    """Frames ``first`` .. ``last`` decompressed in one call into ``dest`` from ``at``; False where one is corrupt
    or does not give the bytes its header claims."""
    try:
        done = _decompressor().multi_decompress_to_buffer(
            frames[first:last], decompressed_sizes=np.array(sizes[first:last], np.uint64).tobytes(), threads=1)
    except zstandard.ZstdError:
        return False
    for k, size in enumerate(sizes[first:last]):
        part = done[k]
        if len(part) != size:
            return False
        dest[at:at + size] = np.frombuffer(part, np.uint8)
        at += size
    return True


def _zstd_frames(tiles: list):
    """(the zstd frame of every chunk of ``tiles``, each one's uncompressed size) where each chunk is one frame
    after a compressor header of one data part that agrees with the chunk's, else None."""
    frames, sizes = [], []
    for tile in tiles:
        view = memoryview(tile)
        end = len(view)
        if end < 8:
            return None
        (num,) = _NUM_CHUNKS.unpack_from(view)
        pos = 8
        for _ in range(num):
            if pos + _ZSTD_CHUNK.size > end:
                return None
            size, data_size, md_size, nmd, ndata, orig, packed = _ZSTD_CHUNK.unpack_from(view, pos)
            if (md_size, nmd, ndata, orig, packed) != (16, 0, 1, size, data_size) or not size:
                return None
            pos += _ZSTD_CHUNK.size
            frames.append(view[pos:pos + data_size])
            sizes.append(size)
            pos += data_size
        if pos != end:
            return None
    return frames, sizes


def _as_reversed(chunks, heads, done: list, sizes: list):
    """What ``reverse`` gives for each chunk, from the decompressed parts ``done`` of all of them in order (of
    the ``sizes`` their headers claim; None if one is not)."""
    if any(len(part) != orig for part, orig in zip(done, sizes)):
        return None
    result, i = [], 0
    for (md, _), (parts, end) in zip(chunks, heads):
        # as reverse: the metadata part, decompressed, is what the filter before gets (else the rest)
        result.append((done[i], done[i + 1]) if len(parts) == 2 else (md[end:], done[i]))
        i += len(parts)
    return result


def _one_or_two_parts(metadata, data, limit):
    """([(uncompressed size, start, end) of each part in ``data``], header length) of a compressor header of
    one data part after at most one metadata part, together all of ``data``, each within ``limit``; else
    None."""
    if len(metadata) < 16:
        return None
    nmd, ndata = _COUNTS.unpack_from(metadata)
    end = 8 + 8 * (nmd + ndata)
    if ndata != 1 or nmd > 1 or len(metadata) < end:
        return None
    parts, pos = [], 0
    for k in range(nmd + ndata):
        orig, packed = _COUNTS.unpack_from(metadata, 8 + 8 * k)
        if not 0 < orig <= limit:
            return None
        parts.append((orig, pos, pos + packed))
        pos += packed
    return (parts, end) if pos == len(data) else None


def _one_part(metadata, data, limit):
    """(uncompressed size, header length) of a compressor header of one data part holding all of ``data``
    and within ``limit``, else None."""
    found = _one_or_two_parts(metadata, data, limit)
    return (found[0][0][0], found[1]) if found is not None and len(found[0]) == 1 else None


def _decompressor():
    try:
        return _local.zstd
    except AttributeError:
        _local.zstd = zstandard.ZstdDecompressor()
        return _local.zstd


def _unzstd(packed, n):
    # zstandard allocates the size the frame header claims: check it first
    if zstandard.frame_content_size(packed) > n:
        raise ValueError(f"the frame claims {zstandard.frame_content_size(packed)} bytes, the part {n}")
    return _decompressor().decompress(packed, max_output_size=n)


@register(FilterType.LZ4)
class Lz4(CompressionCodec):
    gil_free = True  # (python-lz4 lets the GIL go)

    def compress(self, ctx, raw):
        return lz4.block.compress(raw, store_size=False)

    def decompress(self, ctx, packed, orig_size):
        return _bounded(lambda p, n: lz4.block.decompress(p, uncompressed_size=n), packed, orig_size, "lz4")

    def reverse_many(self, ctx, chunks):
        """The parts of chunks of one data part, and at most one metadata part, decompress in one loop of lz4
        calls, their headers read with struct: a chunk's ``reverse`` cost 15% more than lz4 itself. Any other
        shape, or an error, goes chunk by chunk (which names it)."""
        heads = [_one_or_two_parts(md, data, ctx.limit) for md, data in chunks]
        if len(chunks) < 2 or not all(heads):
            return super().reverse_many(ctx, chunks)
        frames = [(orig, data[start:end]) for (_, data), (parts, _) in zip(chunks, heads) for orig, start, end in parts]
        try:
            done = [lz4.block.decompress(frame, uncompressed_size=orig) for orig, frame in frames]
        except lz4.block.LZ4BlockError:
            return super().reverse_many(ctx, chunks)
        return _as_reversed(chunks, heads, done, [orig for orig, _ in frames]) or super().reverse_many(ctx, chunks)


@register(FilterType.BZIP2)
class Bzip2(CompressionCodec):
    gil_free = True  # (the bz2 module lets the GIL go)

    def compress(self, ctx, raw):
        return bz2.compress(raw, max(1, min(9, ctx.options["level"])))

    def decompress(self, ctx, packed, orig_size):
        def unpack(p, n):
            d = bz2.BZ2Decompressor()
            out = d.decompress(p, n)
            if not d.eof:
                raise ValueError("stream longer than the declared size or incomplete")
            return out
        return _bounded(unpack, packed, orig_size, "bzip2")


#: One run of the numeric RLE filter (the value is ``cell_size`` bytes; the run length is big-endian).
RleRun = Struct(
    "value" / Bytes(this._params.cell_size) * "the repeated cell, as stored",
    "run_length" / Int16ub * "how many times it repeats (1 to 65535)",
)

_MAX_RUN = 65535


@register(FilterType.RLE)
class Rle(CompressionCodec):
    """RLE on cells of the tile's cell size (rle_compressor.cc); var strings use strings.py instead."""

    def compress(self, ctx, raw):
        cs = ctx.cell_size
        if len(raw) % cs:
            raise FormatError(f"RLE: {len(raw)} bytes are not whole cells of {cs} bytes")
        runs, _ = _rle_encode(np.frombuffer(raw, np.uint8), cs, np.zeros(1, np.int64))
        return runs.tobytes()

    def forward_many(self, ctx, chunks):
        """Neighbouring chunks of whole cells (a tile's, as a rule) run-length encoded in one set of numpy
        passes, with a run break at each chunk's start: one 64 KiB chunk at a time, the calls cost more than
        the bytes, and two threads doing it took turns at the GIL (a 64 MiB write: 64 ms on one thread, 86
        on two)."""
        cs = ctx.cell_size
        sizes = [len(parts[0]) if not md and len(parts) == 1 else 0 for md, parts in chunks]
        if len(chunks) < 2 or not all(sizes) or any(size % cs for size in sizes):
            return super().forward_many(ctx, chunks)
        firsts = np.cumsum([0] + sizes[:-1]) // cs
        runs, counts = _rle_encode(stacked([parts[0] for _, parts in chunks]), cs, firsts)
        ends = np.cumsum(counts).tolist()
        packed = runs.view(np.uint8).reshape(len(runs), -1)
        return [([write_part_sizes([], [(size, count * (cs + 2))])],
                 [packed[end - count:end].tobytes()]) for size, end, count in zip(sizes, ends, counts.tolist())]

    def decompress(self, ctx, packed, orig_size):
        cs = ctx.cell_size
        if len(packed) % (cs + 2):
            raise FormatError(f"RLE: {len(packed)} bytes are not whole runs of {cs + 2} bytes")
        runs = np.frombuffer(packed, _runs(cs))
        lengths = runs["run_length"].astype(np.int64)
        if int(lengths.sum()) * cs != orig_size:
            raise FormatError(f"RLE: the runs expand to {int(lengths.sum()) * cs} bytes, the header says {orig_size}")
        return np.repeat(runs["value"], lengths).view(np.uint8)  # a view: no copy of the tile


def _rle_encode(raw: np.ndarray, cs: int, firsts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the runs of :func:`_runs` records, how many begin in each part) of the cells of ``raw``, whose parts
    begin at cells ``firsts`` (a run never crosses into the next part)."""
    cells = _one_per_cell(raw, cs)
    if not len(cells):
        return np.zeros(0, _runs(cs)), np.zeros(len(firsts), np.int64)
    new = np.empty(len(cells), bool)
    new[0], new[1:] = True, cells[1:] != cells[:-1]
    new[firsts] = True
    starts = np.flatnonzero(new)
    lengths = np.diff(starts, append=len(cells))
    if lengths.max() > _MAX_RUN:  # runs longer than 65535 are cut into 65535s and a remainder
        pieces = -(-lengths // _MAX_RUN)
        starts = np.repeat(starts, pieces) + _MAX_RUN * (np.arange(pieces.sum()) -
                                                         np.repeat(np.cumsum(pieces) - pieces, pieces))
        lengths = np.minimum(_MAX_RUN, np.diff(starts, append=len(cells)))
    out = np.empty(len(starts), _runs(cs))
    out["value"], out["run_length"] = np.take(cells, starts), lengths
    return out, np.diff(np.searchsorted(starts, firsts), append=len(starts))


def _cell_dtype(cs: int) -> np.dtype:
    """One element per cell, which numpy compares, copies and repeats many times faster than rows of bytes:
    an unsigned integer where one has the cell's size, else an opaque ``V`` of its bytes."""
    return np.dtype(f"<u{cs}" if cs in (1, 2, 4, 8) else f"V{cs}")


def _one_per_cell(buf: np.ndarray, cs: int) -> np.ndarray:
    return buf.view(_cell_dtype(cs))


def _runs(cs: int) -> np.dtype:
    """The runs of :data:`RleRun` as one numpy record each."""
    return np.dtype([("value", _cell_dtype(cs)), ("run_length", ">u2")])


_DELTA_TYPES = {Datatype.CHAR: np.dtype("i1"), Datatype.ANY: np.dtype("u1"), Datatype.BLOB: np.dtype("u1"),
                Datatype.BOOL: np.dtype("u1"), Datatype.GEOM_WKB: np.dtype("u1"), Datatype.GEOM_WKT: np.dtype("u1"),
                Datatype.STRING_ASCII: np.dtype("u1"), Datatype.STRING_UTF8: np.dtype("u1")}


def delta_dtype(ctx) -> np.dtype:
    """The integer type delta and double delta work in: the reinterpret type if set, else the input type."""
    dt = ctx.options.get("reinterpret_datatype") if ctx.options is not None else None
    dt = ctx.datatype if dt in (None, Datatype.ANY) else Datatype(dt)
    if dt.is_integer:
        return dt.numpy_dtype
    if dt.is_datetime or dt.is_time:
        return np.dtype("<i8")
    if dt in _DELTA_TYPES:
        return _DELTA_TYPES[dt]
    raise UnsupportedError(f"TileDB's delta compressors do not take {dt.name}")


def _whole_values(ctx, raw, what: str) -> np.dtype:
    """The (double) delta value type, checking that ``raw`` is whole values of it."""
    dtype = delta_dtype(ctx)
    if len(raw) % dtype.itemsize:
        raise FormatError(f"{what}: {len(raw)} bytes are not whole {dtype} values")
    return dtype


class _Reinterpreting(CompressionCodec):
    def output_datatype(self, ctx):
        dt = ctx.options.get("reinterpret_datatype")
        return ctx.datatype if dt in (None, Datatype.ANY) else Datatype(dt)


#: Header of a double-delta part; values follow (see REFERENCE §7.5).
DoubleDeltaHeader = Struct(
    "bitsize" / Int8ul * "magnitude bits per double delta (>= 8*sizeof(T)-1: raw values follow)",
    "num" / Int64ul * "number of values",
)


@register(FilterType.DOUBLE_DELTA)
class DoubleDelta(_Reinterpreting):
    """dd_compressor.cc: first two values, then sign + magnitude bits, MSB first in LE u64 words."""

    def compress(self, ctx, raw):
        dtype = delta_dtype(ctx)
        whole = len(raw) // dtype.itemsize * dtype.itemsize
        if whole == len(raw):
            return self._packed(ctx, np.frombuffer(raw, dtype)[None])[0]
        # a part of bytes that are not whole values (after a compressor): TileDB counts the whole values and,
        # where packing saves nothing, stores every byte raw, as here; where it would pack, it drops the last
        # bytes (which its reader then fills with whatever its buffer held), so this stores them raw too
        bitsize = self._packed(ctx, np.frombuffer(raw, dtype, whole // dtype.itemsize)[None])[0][0] if whole else 0
        return struct.pack("<BQ", max(bitsize, 8 * dtype.itemsize - 1), len(raw) // dtype.itemsize) + bytes(raw)

    def _packed(self, ctx, x: np.ndarray) -> list:
        """The compressed part of each row of values ``x`` ((k, n) of the delta type)."""
        n = x.shape[1]
        wide = x.astype(np.int64)
        deltas = np.diff(wide, axis=1)
        dd = np.diff(deltas, axis=1)
        if n <= 2:
            bits = np.zeros(len(x), np.int64)
        else:  # TileDB 2.29 (the last v22 releases, and v23) also sizes the bits for the first delta
            top = np.abs(dd).astype(np.uint64).max(axis=1)
            if FEATURES["double_delta_first_delta_bits"](ctx.version):
                top = np.maximum(top, np.abs(deltas[:, 0]).astype(np.uint64))
            bits = np.array([max(1, int(t).bit_length()) for t in top.tolist()])
        out = [None] * len(x)
        for bitsize in set(bits.tolist()):  # rows of one width pack together
            rows = np.flatnonzero(bits == bitsize)
            raw = bitsize >= 8 * x.dtype.itemsize - 1 or n <= 2
            packed = None if raw else _pack_dd(dd[rows], bitsize)
            for j, r in enumerate(rows.tolist()):
                body = x[r].tobytes() if raw else x[r, :2].tobytes() + packed[j].tobytes()
                out[r] = struct.pack("<BQ", bitsize, n) + body
        return out

    def forward_many(self, ctx, chunks):
        """Chunks of one part of the same size (a tile's full chunks) pack as the rows of one array: a numpy
        pass each for all of them, where a chunk at a time held the GIL between small passes."""
        dtype = delta_dtype(ctx)
        size = {len(parts[0]) for md, parts in chunks if not md and len(parts) == 1}
        if len(chunks) < 2 or len(size) != 1 or any(md or len(parts) != 1 for md, parts in chunks) or \
                size.pop() % dtype.itemsize:
            return super().forward_many(ctx, chunks)
        values = _rows_of([parts[0] for _, parts in chunks], 0, dtype)
        return [([write_part_sizes([], [(values.shape[1] * dtype.itemsize, len(c))])], [c])
                for c in self._packed(ctx, values)]

    def decompress(self, ctx, packed, orig_size):
        dtype = delta_dtype(ctx)
        head = Header(packed, "DOUBLE_DELTA")
        bitsize, n = head.u8(), head.u64()
        raw = bitsize >= 8 * dtype.itemsize - 1
        # raw values follow as they are, the bytes of a part that is not whole values too (n counts the whole)
        if n != orig_size // dtype.itemsize or not raw and n * dtype.itemsize != orig_size:
            raise FormatError(f"DOUBLE_DELTA: {n} values of {dtype.itemsize} bytes, but the header says {orig_size}")
        if raw or n <= 2:
            return bytes(head.take(orig_size))
        first = head.array(dtype, 2).astype(np.int64)
        words = head.array("<u8", -(-(n - 2) * (bitsize + 1) // 64))
        if len(head.rest()):
            raise FormatError(f"DOUBLE_DELTA: {len(head.rest())} bytes after the last value")
        return _undo_dd(words[None], first[None], n, bitsize, dtype)[0].view(np.uint8)

    def reverse_many(self, ctx, chunks):
        dtype = delta_dtype(ctx)
        skip = 2 * dtype.itemsize

        def undo(shape, parts):
            bitsize, n = shape
            words = _rows_of(parts, 9 + skip, "<u8")
            first = _rows_of([p[9:9 + skip] for p in parts], 0, dtype).astype(np.int64)
            return _undo_dd(words, first, n, bitsize, dtype)
        return self.reverse_grouped(ctx, chunks, lambda md, data: _dd_shape(md, data, dtype, ctx.limit), undo)


def _dd_shape(metadata, data, dtype, limit):
    """(bit width, value count) of a chunk holding one double-delta part of packed values exactly as long as
    its header implies, else None (raw values, or anything :meth:`DoubleDelta.decompress` would refuse)."""
    one = _one_part(metadata, data, limit)
    if one is None or len(data) < 9:
        return None
    bitsize, n = int(data[0]), _U64.unpack_from(data, 1)[0]  # data may be an earlier stage's u8 array
    if n <= 2 or bitsize >= 8 * dtype.itemsize - 1 or n * dtype.itemsize != one[0]:
        return None
    words = -(-(n - 2) * (bitsize + 1) // 64)
    return (bitsize, n) if len(data) == 9 + 2 * dtype.itemsize + 8 * words else None


def _undo_dd(words: np.ndarray, first: np.ndarray, n: int, bitsize: int, dtype) -> np.ndarray:
    """The ``n`` values of each row of packed double deltas (``words``, (k, w) u64) after its first two
    (``first``, (k, 2) int64), as (k, n) of ``dtype``."""
    values = np.empty((len(words), n), np.int64)
    _signed(unpack_fields(words, n - 2, bitsize + 1), bitsize, values[:, 2:])
    # two cumulative sums in place: the double deltas (the first plus the first delta) give the deltas,
    # and those after the second value give the values
    values[:, 2] += first[:, 1] - first[:, 0]
    np.cumsum(values[:, 2:], axis=1, out=values[:, 2:])
    values[:, :2] = first
    np.cumsum(values[:, 1:], axis=1, out=values[:, 1:])
    return values.astype(dtype, copy=False)


def _pack_dd(dd, bitsize) -> np.ndarray:
    """Sign bit then ``bitsize`` magnitude bits per value, MSB first, in u64 words stored LE (of each row)."""
    fields = np.abs(dd).astype(np.uint64) | ((dd < 0).astype(np.uint64) << np.uint64(bitsize))
    return pack_fields(fields, bitsize + 1).astype("<u8", copy=False)


def _field_places(count: int, width: int):
    """(word, bit offset from the word's top) of each of ``count`` fields of ``width`` bits laid end to end."""
    pos = np.arange(count, dtype=np.uint64) * np.uint64(width)
    return (pos >> np.uint64(6)).astype(np.intp), pos & np.uint64(63)


def _signed(fields: np.ndarray, bitsize: int, out: np.ndarray):
    """Sign-and-magnitude ``fields`` (sign bit above ``bitsize`` magnitude bits) as int64 into ``out``: through
    a table of every field value where one is small (one gather instead of five passes)."""
    if bitsize < 16:
        np.take(_sign_table(bitsize), fields.view(np.int64), out=out)
        return
    negative = (fields >> np.uint64(bitsize)).view(np.int64)
    np.bitwise_and(fields, np.uint64((1 << bitsize) - 1), out=out.view(np.uint64))
    out ^= -negative  # two's complement negation where the sign bit is set: ~x + 1
    out += negative


@functools.lru_cache(maxsize=16)
def _sign_table(bitsize: int) -> np.ndarray:
    fields = np.arange(1 << (bitsize + 1), dtype=np.int64)
    magnitude = fields & ((1 << bitsize) - 1)
    return np.where(fields >> bitsize, -magnitude, magnitude)


def unpack_fields(words: np.ndarray, count: int, width: int) -> np.ndarray:
    """``count`` fields of ``width`` (1 to 63) bits laid MSB first across u64 ``words``, as u64 (of each
    row, where ``words`` has rows).

    A field starts in word ``w`` at ``off`` bits from the top and may end in the next one: the two words
    shifted into place give it (the shift of the second is split in two, as a shift by 64 is undefined).
    """
    word, after, off, rest = _unpack_places(count, width)
    padded = np.zeros((*words.shape[:-1], words.shape[-1] + 2), np.uint64)  # rows of words: rows of fields
    padded[..., :-2] = words
    top = np.take(padded, word, axis=-1)  # shifted and merged in place: two arrays of fields, not six
    top <<= off
    low = np.take(padded, after, axis=-1)
    low >>= np.uint64(1)
    low >>= rest
    top |= low
    top >>= np.uint64(64 - width)
    return top


@functools.lru_cache(maxsize=16)
def _unpack_places(count: int, width: int):
    """:func:`_field_places`, each field's next word and its shift: the same for every full chunk, so kept."""
    word, off = _field_places(count, width)
    return word, word + 1, off, np.uint64(63) - off


def pack_fields(fields: np.ndarray, width: int) -> np.ndarray:
    """The u64 words of ``fields`` (u64 below ``2**width``) laid MSB first: the inverse of unpack_fields (of each
    row, where ``fields`` has rows)."""
    count = fields.shape[-1]
    words = np.zeros((*fields.shape[:-1], -(-count * width // 64) + 1), np.uint64)
    if count:
        off, first, word_first, last, word_after, rest = _pack_places(count, width)
        top = fields << np.uint64(64 - width)
        words[..., word_first] = np.bitwise_or.reduceat(top >> off, first, axis=-1)
        words[..., word_after] |= (top[..., last] << np.uint64(1)) << rest
    return words[..., :-1]


@functools.lru_cache(maxsize=16)
def _pack_places(count: int, width: int):
    """For pack_fields, kept like :func:`_unpack_places`: each field's offset, the fields that start a word
    and their words, and each word's last field (only it can run into the next word), that next word and the
    shift that brings the field's end there."""
    word, off = _field_places(count, width)
    first = np.flatnonzero(np.diff(word, prepend=-1))
    last = np.append(first[1:], count) - 1
    return off, first, word[first], last, word[last] + 1, np.uint64(63) - off[last]


#: Header of a delta part: the count, then the first value and the deltas (REFERENCE §7.5).
DeltaHeader = Struct(
    "num" / Int64ul * "number of values",
)


@register(FilterType.DELTA)
class Delta(_Reinterpreting):
    """delta_compressor.cc: n, the first value, then each difference truncated to the value width."""

    def compress(self, ctx, raw):
        dtype = _whole_values(ctx, raw, "DELTA")
        x = np.frombuffer(raw, f"<u{dtype.itemsize}")
        # TileDB 2.16 (v19) wrote one delta too many, against whatever followed the input: we write 0
        overrun = bytes(dtype.itemsize) if FEATURES["delta_overrun"](ctx.version) and len(x) > 1 else b""
        return np.array([len(x)], "<u8").tobytes() + x[:1].tobytes() + np.diff(x).tobytes() + overrun

    def decompress(self, ctx, packed, orig_size):
        size = delta_dtype(ctx).itemsize
        head = Header(packed, "DELTA")
        n = head.u64()
        if n * size != orig_size:
            raise FormatError(f"DELTA: {n} values of {size} bytes, but the header says {orig_size}")
        x = head.array(f"<u{size}", n)
        overrun = size if FEATURES["delta_overrun"](ctx.version) and n > 1 else 0
        if len(head.rest()) != overrun:
            raise FormatError(f"DELTA: {len(head.rest())} bytes after the last value (v{ctx.version} writes "
                              f"{overrun})")
        return np.cumsum(x, dtype=x.dtype).view(np.uint8)

    def reverse_many(self, ctx, chunks):
        size = delta_dtype(ctx).itemsize
        overrun = size if FEATURES["delta_overrun"](ctx.version) else 0

        def shape(md, data):  # the value count of a chunk holding one part exactly as long as it implies
            one = _one_part(md, data, ctx.limit)
            if one is None or len(data) < 8 or one[0] % size:
                return None
            n = one[0] // size
            return n if n > 1 and _U64.unpack_from(data, 0)[0] == n and len(data) == 8 + one[0] + overrun else None

        def undo(n, parts):
            rows = _rows(parts, 8)[:, :n * size].copy().view(f"<u{size}")
            return np.cumsum(rows, axis=1, dtype=rows.dtype)
        return self.reverse_grouped(ctx, chunks, shape, undo)
