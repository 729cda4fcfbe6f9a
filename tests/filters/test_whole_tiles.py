"""The whole-tile path of a one-stage zstd pipeline (``FilterPlan.unfilter_tiles``): the same bytes as
decoding chunk by chunk, declined (for the chunk-by-chunk path to decode or name) wherever a header does not
agree, and never an allocation past its limit before decoded frames prove the bytes."""

from __future__ import annotations

import struct
import tracemalloc

import numpy as np
import pytest
import zstandard
from construct import Container, ListContainer

from tdbformat.enums import Datatype, FilterType
from tdbformat.filters import FilterPlan, filter_tile, unfilter
from tdbformat.structs.tile import Tile, write_tile

ZSTD = Container(max_chunk_size=65536, filters=ListContainer([Container(type=FilterType.ZSTD,
                                                                       options=Container(level=3))]))


def _tiles(n=5, cells=20_000, seed=0):
    """(stored bytes of ``n`` tiles of int64 cells, their unfiltered bytes), as a v22 writer makes them."""
    rng = np.random.default_rng(seed)
    values = [np.cumsum(rng.integers(-3, 4, cells)).astype("<i8") for _ in range(n)]
    return [write_tile(filter_tile(v.tobytes(), ZSTD, datatype=Datatype.INT64, version=22, cell_size=8))
            for v in values], values


def _plan():
    return FilterPlan(ZSTD, datatype=Datatype.INT64, version=22, cell_size=8)


@pytest.mark.parametrize("threads", [1, 2])
def test_whole_tiles_decode_to_the_chunk_by_chunk_bytes(threads):
    tiles, values = _tiles()
    want = b"".join(v.tobytes() for v in values)  # what was filtered
    assert want == b"".join(bytes(unfilter(Tile.parse(t), ZSTD, datatype=Datatype.INT64, version=22, cell_size=8))
                            for t in tiles)  # (and what the chunk-by-chunk path gives)
    out = np.zeros(len(want), np.uint8)
    assert _plan().unfilter_tiles(tiles, out, threads) is True
    assert out.tobytes() == want
    grown = _plan().unfilter_tiles(tiles, None, threads, limit=len(want) // 7)  # proven a round at a time
    assert grown is not None and grown.tobytes() == want


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tiles, cells, rounds", [(2, 20_000, 1), (10, 10_000, 1), (5, 100_000, 4)])
def test_rounds_of_frames_decompress_on_the_filters_threads_one_libzstd_thread_a_call(tiles, cells, rounds, threads,
                                                                                      monkeypatch):
    """Frames decompress a round (about a MiB) a call, the rounds shared by the filters' threads, each call on
    one libzstd thread: libzstd makes its threads afresh each call (0.1 ms; 83 ms for 64 MiB where ours take
    44). The bytes are those filtered."""
    import threading
    from tdbformat.filters import compression
    asked, made = [], compression._decompressor

    class Spy:
        def multi_decompress_to_buffer(self, frames, *, decompressed_sizes, threads):
            asked.append((threading.current_thread().name, threads))
            return made().multi_decompress_to_buffer(frames, decompressed_sizes=decompressed_sizes, threads=threads)
    monkeypatch.setattr(compression, "_decompressor", Spy)
    stored, values = _tiles(tiles, cells)
    out = np.zeros(sum(v.nbytes for v in values), np.uint8)
    assert _plan().unfilter_tiles(stored, out, threads) is True
    assert out.tobytes() == b"".join(v.tobytes() for v in values)
    assert len(asked) == rounds and all(t == 1 for _, t in asked)
    assert all(name.startswith("tdbformat-filters") for name, _ in asked) == (min(threads, rounds) > 1)


def _chunk_fields(tile: bytes, chunk: int = 0, field: int = 0, value: int = 0) -> bytes:
    """``tile`` with field ``field`` (of the chunk header's 3 and the compressor header's 4 u32) of its chunk
    ``chunk`` set to ``value``."""
    data, pos = bytearray(tile), 8
    for _ in range(chunk):
        _, size, md = struct.unpack_from("<III", data, pos)
        pos += 12 + md + size
    struct.pack_into("<I", data, pos + 4 * field, value)
    return bytes(data)


@pytest.mark.parametrize("field, value", [
    (0, 1), (1, 3), (2, 15), (3, 1), (4, 2), (5, 7), (6, 9)])  # each size or count of the two headers wrong
def test_a_header_that_does_not_agree_is_declined(field, value):
    tiles, values = _tiles(2)
    tiles[1] = _chunk_fields(tiles[1], 1, field, value)
    out = np.zeros(sum(v.nbytes for v in values), np.uint8)
    assert _plan().unfilter_tiles(tiles, out, 1) is False
    assert _plan().unfilter_tiles(tiles, None, 1, limit=len(out)) is None


def test_a_corrupt_frame_or_a_short_tile_or_sizes_other_than_the_output_are_declined():
    tiles, values = _tiles(2)
    size = sum(v.nbytes for v in values)
    bad = bytearray(tiles[0])
    bad[8 + 28 + 6] ^= 0xFF  # inside the first frame
    assert _plan().unfilter_tiles([bytes(bad), tiles[1]], np.zeros(size, np.uint8), 1) is False
    assert _plan().unfilter_tiles([tiles[0][:-1], tiles[1]], np.zeros(size, np.uint8), 1) is False
    assert _plan().unfilter_tiles(tiles, np.zeros(size + 8, np.uint8), 1) is False
    assert _plan().unfilter_tiles(tiles + [b"\0" * 4], np.zeros(size, np.uint8), 1) is False


def test_frames_that_claim_more_than_the_limit_allocate_nothing_past_it():
    """A tile of tiny frames each claiming 4 MiB (a frame of a run of zeros, 4 MiB of them): with a limit of
    1 MiB the path declines before decoding (the first claim does not fit), allocating no more than a MiB."""
    frame = zstandard.ZstdCompressor(level=3).compress(bytes(4 << 20))
    chunk = struct.pack("<7I", 4 << 20, len(frame), 16, 0, 1, 4 << 20, len(frame)) + frame
    tile = struct.pack("<Q", 64) + chunk * 64  # 256 MiB claimed from a few KiB
    tracemalloc.start()
    try:
        assert _plan().unfilter_tiles([tile], None, 1, limit=1 << 20) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 << 20


def test_other_pipelines_have_no_whole_tile_path():
    lz4 = Container(max_chunk_size=65536, filters=ListContainer([Container(type=FilterType.LZ4, options=Container())]))
    plan = FilterPlan(lz4, datatype=Datatype.INT64, version=22, cell_size=8)
    assert plan.unfilter_tiles([b""], np.zeros(0, np.uint8), 1) is False
    assert plan.unfilter_tiles([b""], None, 1, limit=10) is None


def _count_zstd_calls(monkeypatch) -> list:
    """The buffers of each libzstd call of this thread's compressors from now on (1: a one-shot ``compress``)."""
    from tdbformat.filters import compression
    calls, made = [], compression._compressor

    class Counted:  # (the C type's methods cannot be replaced: the calls are counted through a stand-in)
        def __init__(self, ctx):
            self.inner = made(ctx)

        def multi_compress_to_buffer(self, parts, threads):
            calls.append(len(parts))
            return self.inner.multi_compress_to_buffer(parts, threads=threads)

        def compress(self, raw):
            calls.append(1)
            return self.inner.compress(raw)
    monkeypatch.setattr(compression, "_compressor", Counted)
    return calls


@pytest.mark.parametrize("level, libzstd_level", [(3, 3), (-1, -1), (-7, -7), (19, 19), (30, 22), (-10, 3)])
@pytest.mark.parametrize("nbytes", [1, 65536, 3 * 65536 + 17, 40 * 65536])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_zstd_tile_compressed_in_one_call_a_run_is_libzstds_frame_of_each_chunk(level, libzstd_level, nbytes,
                                                                                  threads, monkeypatch):
    """A one-stage zstd pipeline compresses a run of chunks in one libzstd call (``Zstd.forward_many``); the
    tile is, byte for byte, what the format says of each 64 KiB chunk: its sizes, the compressor's header (no
    metadata part, one data part: its size and its frame's) and python-zstandard's one-shot frame of it at the
    level TileDB gives libzstd (past the maximum: the maximum; below -7: 3)."""
    rng = np.random.default_rng(nbytes)
    raw = np.cumsum(rng.integers(-3, 4, nbytes)).astype(np.uint8).tobytes()
    pipeline = Container(max_chunk_size=65536, filters=ListContainer([
        Container(type=FilterType.ZSTD, options=Container(level=level))]))
    runs = _count_zstd_calls(monkeypatch)
    got = write_tile(filter_tile(raw, pipeline, datatype=Datatype.UINT8, version=22, cell_size=1, threads=threads))
    chunks = [raw[i:i + 65536] for i in range(0, nbytes, 65536)]
    assert sum(runs) == len(chunks) and (len(runs) < len(chunks) or len(chunks) < 40)  # (40: runs of several)
    want = [struct.pack("<Q", len(chunks))]
    for chunk in chunks:
        frame = zstandard.ZstdCompressor(level=libzstd_level).compress(chunk)
        header = struct.pack("<IIII", 0, 1, len(chunk), len(frame))
        want += [struct.pack("<III", len(chunk), len(frame), len(header)), header, frame]
    assert got == b"".join(want)
    assert bytes(unfilter(Tile.parse(got), pipeline, datatype=Datatype.UINT8, version=22, cell_size=1)) == raw


@pytest.mark.parametrize("first", [FilterType.BYTESHUFFLE, FilterType.DELTA, FilterType.DOUBLE_DELTA, FilterType.RLE])
def test_zstd_after_a_filter_compresses_its_parts_as_chunk_by_chunk(first, monkeypatch):
    """Whatever a filter before zstd hands on (a header part, as delta's and RLE's, or none), zstd compresses
    the parts of a run of chunks in one libzstd call, and the tile equals the one zstd makes chunk by chunk
    (``forward_many`` of the base class, a call a part), and reads back to the cells."""
    from tdbformat.filters import compression
    from tdbformat.filters.pipeline import Codec
    raw = np.cumsum(np.random.default_rng(1).integers(-3, 4, 100_000)).astype("<i8").tobytes()
    pipeline = Container(max_chunk_size=65536, filters=ListContainer([
        Container(type=first, options=Container(reinterpret_datatype=0) if first in (
            FilterType.DELTA, FilterType.DOUBLE_DELTA) else Container()),
        Container(type=FilterType.ZSTD, options=Container(level=3))]))
    calls = _count_zstd_calls(monkeypatch)
    got = write_tile(filter_tile(raw, pipeline, datatype=Datatype.INT64, version=22, cell_size=8, threads=1))
    assert len(calls) == 1 and calls[0] >= 13  # 13 chunks: their parts in one call
    monkeypatch.undo()
    monkeypatch.setattr(compression.Zstd, "forward_many", Codec.forward_many)
    assert got == write_tile(filter_tile(raw, pipeline, datatype=Datatype.INT64, version=22, cell_size=8))
    assert bytes(unfilter(Tile.parse(got), pipeline, datatype=Datatype.INT64, version=22, cell_size=8)) == raw
