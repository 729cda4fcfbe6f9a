"""Filters against plain-Python references of their definitions: RLE, windowed delta and bit width reduction,
zlib-ng against zlib, delta and zstd runs decoded as chunk by chunk, sampled distinct counts, stacked parts."""

from __future__ import annotations

import numpy as np
import pytest
from construct import Container
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tdbformat.enums import Compressor, Datatype, FilterType
from tdbformat.filters import filter_tile, unfilter
from tdbformat.structs.tile import Tile

from test_filters_props import INTEGERS, PROPS, _filter, _pipeline, chunks


def _rle_reference(raw: bytes, cs: int) -> bytes:
    """rle_compressor.cc in plain Python: each run of equal cells as the cell, then its length as u16 BE."""
    out, i = bytearray(), 0
    while i < len(raw):
        j = i + cs
        while j < len(raw) and raw[j:j + cs] == raw[i:i + cs] and (j - i) // cs < 65535:
            j += cs
        out += raw[i:i + cs] + ((j - i) // cs).to_bytes(2, "big")
        i = j
    return bytes(out)


@PROPS
@given(st.sampled_from([1, 2, 3, 4, 5, 8, 12]), st.lists(st.integers(0, 2), max_size=400), st.integers(0, 3))
def test_rle_matches_a_plain_python_reference(cs, cells, long_run):
    from tdbformat.filters.compression import Rle
    from tdbformat.filters.pipeline import FilterContext
    raw = b"".join(bytes([c]) * cs for c in cells) + bytes(cs) * (70000 * (long_run == 0))
    ctx = FilterContext(cell_size=cs)
    packed = Rle().compress(ctx, raw)
    assert packed == _rle_reference(raw, cs)
    assert bytes(Rle().decompress(ctx, packed, len(raw))) == raw  # a buffer (a numpy view), as codecs return


@PROPS
@given(st.sampled_from([1, 2, 3, 8]), st.lists(st.tuples(st.integers(0, 2), st.integers(1, 40)), min_size=1,
                                               max_size=60), st.lists(st.integers(1, 30), min_size=2, max_size=6),
       st.booleans())
def test_rle_chunks_encoded_together_match_the_reference_chunk_by_chunk(cs, runs, cuts, long_run):
    """A run of chunks through ``Rle.forward_many`` (one set of numpy passes): each chunk's header and runs as
    TileDB makes them for that chunk alone, runs that cross a chunk's start broken there."""
    from tdbformat.filters.compression import Rle
    from tdbformat.filters.pipeline import FilterContext
    raw = b"".join(bytes([value]) * (cs * count) for value, count in runs) + bytes(cs) * (70000 * long_run)
    cells = len(raw) // cs
    bounds = sorted({0, cells, *(cells * c // 31 for c in cuts)})
    chunks = [raw[cs * a:cs * b] for a, b in zip(bounds, bounds[1:]) if b > a]
    got = Rle().forward_many(FilterContext(cell_size=cs), [([], [c]) for c in chunks])
    assert len(got) == len(chunks)
    for (md, parts), chunk in zip(got, chunks):
        expect = _rle_reference(chunk, cs)
        assert bytes(parts[0]) == expect
        assert b"".join(md) == np.array([0, 1, len(chunk), len(expect)], "<u4").tobytes()


def _windowed_reference(values: np.ndarray, window: int, bwr: bool) -> tuple[bytes, bytes]:
    """(header, data) of bit-width reduction or positive delta over whole windows, value by value in Python
    (bit_width_reduction_filter.cc, positive_delta_filter.cc)."""
    dtype = values.dtype
    per = window // dtype.itemsize
    head, out = [], b""
    for w in range(0, len(values), per):
        win = [int(v) for v in values[w:w + per]]
        nbytes = len(win) * dtype.itemsize
        if not bwr:
            head.append(np.array([win[0]], dtype).tobytes() + nbytes.to_bytes(4, "little"))
            out += np.array([0] + [b - a for a, b in zip(win, win[1:])], dtype).tobytes()
            continue
        lo, span = min(win), max(win) - min(win)
        top = np.iinfo(dtype).max
        bits = next((b for b in (8, 16, 32) if span + 1 <= (1 << (b - (dtype.kind == "i"))) - 1), 64)
        bits = 8 * dtype.itemsize if span >= top else bits
        head.append(np.array([lo], dtype).tobytes() + bytes([bits]) + nbytes.to_bytes(4, "little"))
        packed = bits < 8 * dtype.itemsize
        out += np.array([v - lo for v in win], f"<{dtype.kind}{bits // 8}").tobytes() if packed else \
            np.array(win, dtype).tobytes()
    total = len(values) * dtype.itemsize
    count = np.array(([total] if bwr else []) + [len(head)], "<u4").tobytes()
    return count + b"".join(head), out


@PROPS
@given(st.sampled_from(INTEGERS), st.sampled_from([8, 64, 256]), st.integers(0, 40), st.booleans(), st.data())
def test_windowed_filters_match_a_plain_python_reference(datatype, window, nwindows, bwr, data):
    from tdbformat.filters.bitwidth import BitWidthReduction, PositiveDelta
    from tdbformat.filters.pipeline import FilterContext
    dtype = datatype.numpy_dtype
    n = nwindows * (window // dtype.itemsize)
    spread = data.draw(st.sampled_from([3, 300, 70000, int(np.iinfo(dtype).max)]))
    values = data.draw(arrays(dtype, n, elements=st.integers(0, min(spread, int(np.iinfo(dtype).max)))))
    values = np.sort(values) if not bwr else values
    if bwr and dtype.itemsize == 1:
        return  # 1-byte types pass through bit-width reduction
    ctx = FilterContext(options=Container(max_window_size=window), datatype=datatype, version=22,
                        cell_size=dtype.itemsize)
    codec = BitWidthReduction() if bwr else PositiveDelta()
    md, out = codec.forward(ctx, [], [values.tobytes()])
    assert (b"".join(md), b"".join(out)) == _windowed_reference(values, window, bwr)
    assert bytes(codec.reverse(ctx, memoryview(b"".join(md)), memoryview(b"".join(out)))[1]) == values.tobytes()


@PROPS
@given(st.integers(0, 255).filter(lambda b: b not in (8, 16, 32, 64)), st.integers(0, 3))
def test_bit_width_reduction_rejects_a_window_width_tiledb_never_writes(bits, window):
    from tdbformat.errors import FormatError
    pipeline = _pipeline(_filter(FilterType.BIT_WIDTH_REDUCTION, max_window_size=64))
    values = np.arange(64, dtype="<i4").tobytes()  # 4 windows of 16 values, each stored in 8 bits
    tile = filter_tile(values, pipeline, datatype=Datatype.INT32, version=22, cell_size=4)
    md = bytearray(tile.chunks[0].metadata)
    assert md[8 + 9 * window + 4] == 8
    md[8 + 9 * window + 4] = bits  # header: input length, window count, then (offset i4, bits u1, nbytes u4)
    tile.chunks[0].metadata = bytes(md)
    with pytest.raises(FormatError, match="bit widths"):
        unfilter(tile, pipeline, datatype=Datatype.INT32, version=22, cell_size=4)


@PROPS
@given(st.binary(max_size=3000), st.integers(0, 9), st.sampled_from(["whole", "cut", "flipped", "trailing"]),
       st.integers(0, 10**6))
def test_zlib_ng_inflates_as_zlib(raw, level, damage, where):
    """The optional zlib-ng (the ``fast`` extra), which GZIP decodes with when installed, against zlib: the same
    bytes from whole streams, and the same refusal of damaged ones."""
    import zlib
    from tdbformat.filters import compression
    if compression._inflate is zlib:
        pytest.skip("zlib-ng is not installed")
    packed = zlib.compress(raw, level)
    at = where % len(packed)
    packed = {"whole": packed, "cut": packed[:at], "trailing": packed + b"\x00\x01",
              "flipped": packed[:at] + bytes([packed[at] ^ 0x5A]) + packed[at + 1:]}[damage]

    def outcome(inflate, error):
        try:
            return inflate(packed, bufsize=max(len(raw), 1))
        except error:
            return "refused"
    assert outcome(compression._inflate.decompress, compression._inflate.error) == outcome(zlib.decompress, zlib.error)


@PROPS
@given(st.sampled_from([FilterType.DOUBLE_DELTA, FilterType.DELTA]), st.sampled_from(INTEGERS),
       st.sampled_from([19, 22]), st.lists(st.sampled_from([0, 1, 3, 40]), min_size=2, max_size=12),
       st.integers(0, 6), st.sampled_from([None, "flip", "cut"]), st.integers(0, 10**6), st.data())
def test_delta_rows_decode_as_chunk_by_chunk(ftype, datatype, version, lengths, bits, damage, where, data):
    """Chunks of (double) deltas packed alike decode together as rows (``reverse_many``): the same values as
    chunk by chunk, in runs that mix lengths, widths and raw chunks (and v19's extra delta); with a damaged
    chunk, the run fails as a FormatError exactly when one of its chunks fails alone."""
    from tdbformat.filters.pipeline import CODECS, FilterContext
    codec = CODECS[ftype]
    compressor = Compressor.DOUBLE_DELTA if ftype == FilterType.DOUBLE_DELTA else Compressor.DELTA
    ctx = FilterContext(options=Container(compressor=compressor, level=-1, reinterpret_datatype=Datatype.ANY),
                        datatype=datatype, version=version)
    dtype, chunks = datatype.numpy_dtype, []
    for n in lengths:
        steps = data.draw(arrays(np.int64, n, elements=st.integers(-(2**bits), 2**bits)))
        raw = np.cumsum(steps).astype(dtype).tobytes()  # small types wrap, as C casts do
        (md,), (packed,) = codec.forward(ctx, [], [raw])
        chunks.append((md, packed))
    if damage:
        i = where % len(chunks)
        md, packed = chunks[i]
        packed = bytearray(packed)
        if damage == "flip" and packed:
            packed[where % len(packed)] ^= 0x10
        else:
            del packed[where % max(1, len(packed)):]
        chunks[i] = (md, bytes(packed))
    _run_decodes_as_chunk_by_chunk(codec, ctx, chunks)


def _run_decodes_as_chunk_by_chunk(codec, ctx, chunks):
    """``codec.reverse_many`` of ``chunks`` gives each chunk's metadata and data as ``reverse`` does alone,
    or, where one of them fails alone, a FormatError. Both as memoryviews and as the numpy arrays an earlier
    stage hands on (bit width reduction's: a u8 scalar broke the double delta's header arithmetic)."""
    from tdbformat.errors import FormatError
    for wrap in (memoryview, lambda b: np.frombuffer(b, np.uint8)):
        views = [(memoryview(md), wrap(packed)) for md, packed in chunks]
        alone = []
        for md, packed in views:
            try:
                alone.append(tuple(map(bytes, codec.reverse(ctx, md, packed))))
            except FormatError:
                alone.append(None)
        if None in alone:
            with pytest.raises(FormatError):
                codec.reverse_many(ctx, views)
        else:
            assert [tuple(map(bytes, done)) for done in codec.reverse_many(ctx, views)] == alone


@PROPS
@given(st.lists(st.tuples(st.binary(max_size=40), st.binary(max_size=3000)), min_size=2, max_size=10),
       st.sampled_from([None, "flip", "cut", "header"]), st.integers(0, 10**6))
def test_zstd_runs_decode_as_chunk_by_chunk(chunks, damage, where):
    """Chunks of one data part and at most one metadata part (an earlier filter's header) decompress in one
    call (``Zstd.reverse_many``): the same metadata and data as chunk by chunk; with a damaged chunk, the run
    fails as a FormatError exactly when one of its chunks fails alone."""
    from tdbformat.filters.pipeline import CODECS, FilterContext
    codec = CODECS[FilterType.ZSTD]
    ctx = FilterContext(options=Container(compressor=Compressor.ZSTD, level=3), datatype=Datatype.UINT8)
    made = []
    for md, data in chunks:
        (head,), (packed,) = codec.forward(ctx, [md] if md else [], [data * 3 or b"x"])
        made.append([head, packed])
    if damage:
        i = where % len(made)
        part = 0 if damage == "header" else 1
        raw = bytearray(made[i][part])
        if damage == "cut":
            del raw[where % max(1, len(raw)):]
        elif raw:
            raw[(where if damage == "flip" else 8 + where % 8) % len(raw)] ^= 0x21
        made[i][part] = bytes(raw)
    _run_decodes_as_chunk_by_chunk(codec, ctx, made)


@PROPS
@given(st.integers(1, 12_000), st.integers(1, 60_000), st.integers(0, 2**32 - 1))
def test_sampled_distinct_counts_the_sample_within_a_few_percent(distinct, cells, seed):
    """The estimate of distinct cells in the sample (which sizes the equal-cells table and decides whether
    values are shared) is within 2% and 2 of the exact count of distinct (length, words) rows sampled."""
    from tdbformat.filters.strings import SAMPLE, cell_words, sampled_distinct
    rng = np.random.default_rng(seed)
    words = [b"w%d-" % i * (i % 3 + 1) for i in range(distinct)]
    picked = [words[i] for i in rng.integers(0, distinct, cells)]
    buf = np.frombuffer(b"".join(picked), np.uint8)
    lengths = np.array([len(c) for c in picked], np.int64)
    cols = cell_words(buf, np.cumsum(lengths) - lengths, lengths, 3)
    pick = np.linspace(0, cells - 1, min(cells, SAMPLE)).astype(np.int64)
    exact = len({picked[i] for i in pick})
    estimate, sampled = sampled_distinct(cols)
    assert sampled == len(pick)
    assert abs(estimate - exact) <= 2 + 0.02 * exact


@PROPS
@given(st.binary(min_size=1, max_size=300), st.lists(st.integers(0, 60), min_size=1, max_size=8), st.booleans(),
       st.sampled_from(["bytes", "array", "mixed"]))
def test_stacked_parts_are_their_bytes_back_to_back(raw, cuts, gap, kind):
    """``stacked`` (the input of a run of chunks): the parts' bytes back to back, whether they are neighbouring
    slices of one buffer (a view, read-only: a codec must not write into the caller's data), slices with a
    byte left out between two, or parts of different buffers."""
    from tdbformat.filters.pipeline import stacked
    base = np.frombuffer(raw, np.uint8).copy() if kind == "array" else raw
    whole = memoryview(base).cast("B")
    bounds = sorted({0, len(raw), *(min(c, len(raw)) for c in cuts)})
    parts = [whole[a:b] for a, b in zip(bounds, bounds[1:])]
    if gap and len(parts) > 1 and len(parts[1]) > 1:
        parts[1] = parts[1][1:]
    if kind == "mixed":
        parts[-1] = bytes(parts[-1])
    got = stacked(parts)
    assert got.tobytes() == b"".join(parts)
    if kind == "array" and np.shares_memory(got, base):
        with pytest.raises(ValueError):
            got[:1] = 7


@pytest.mark.parametrize("ftype", [FilterType.BYTESHUFFLE, FilterType.BITSHUFFLE, FilterType.XOR])
@pytest.mark.parametrize("delta", [-8, 8])
def test_a_part_size_that_is_not_the_chunks_stops_a_run_of_chunks(ftype, delta):
    """A run of equal chunks is undone together only where each chunk's part-sizes header says one part of
    exactly its bytes: one that claims another size (a hostile file) is a FormatError naming its chunk, as
    undoing it alone is, not cells unshuffled by the wrong size."""
    import struct
    from tdbformat.errors import FormatError
    values = np.arange(1024 * 6, dtype=np.int64)  # six chunks of 8 KiB
    pipeline = _pipeline(_filter(ftype))
    kw = dict(datatype=Datatype.INT64, version=22, cell_size=8)
    tile = filter_tile(values.tobytes(), pipeline, max_chunk=8192, **kw)
    assert tile.num_chunks == 6
    md = bytearray(tile.chunks[3].metadata)
    md[4:8] = struct.pack("<I", struct.unpack("<I", md[4:8])[0] + delta)
    tile.chunks[3].metadata = bytes(md)
    with pytest.raises(FormatError, match="chunk 3"):
        unfilter(Tile.parse(Tile.build(tile)), pipeline, threads=1, **kw)
