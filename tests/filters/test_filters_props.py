"""Properties: every filter decodes what it encodes, over datatypes, cell counts (0 and 1 included),
chunk sizes, windows and versions."""

from __future__ import annotations

import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from construct import Container
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tdbformat.enums import Compressor, Datatype, FilterType, WebpInputFormat
from tdbformat.filters import filter_tile, unfilter, unfilter_strings
from tdbformat.filters.pipeline import chunk_sizes, var_chunk_sizes
from tdbformat.filters.shuffle import bitshuffle, bitunshuffle
from tdbformat.structs.tile import Tile

PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INTEGERS = [Datatype.INT8, Datatype.UINT8, Datatype.INT16, Datatype.UINT16, Datatype.INT32, Datatype.UINT32,
            Datatype.INT64, Datatype.UINT64]
FIXED = INTEGERS + [Datatype.FLOAT32, Datatype.FLOAT64, Datatype.CHAR, Datatype.DATETIME_MS, Datatype.TIME_NS,
                    Datatype.BLOB, Datatype.BOOL]
COMPRESSORS = {FilterType.GZIP: Compressor.GZIP, FilterType.ZSTD: Compressor.ZSTD, FilterType.LZ4: Compressor.LZ4,
               FilterType.BZIP2: Compressor.BZIP2, FilterType.RLE: Compressor.RLE}
KEY = bytes(range(32))


def _filter(ftype, **options):
    return Container(type=ftype, options=Container(options))


def _pipeline(*filters, max_chunk_size=65536):
    return Container(max_chunk_size=max_chunk_size, filters=list(filters))


def _values(datatype, n, elements=None):
    dtype = datatype.numpy_dtype
    if datatype.is_datetime or datatype.is_time:
        return arrays(np.int64, n, elements=elements).map(lambda a: a.view(dtype))
    if dtype.kind == "S":
        return arrays(np.uint8, n).map(lambda a: a.view(dtype))
    return arrays(dtype, n, elements=elements)


def _roundtrip(data: bytes, pipeline, datatype, version, max_chunk, encrypted=False, cell_size=None):
    kw = dict(datatype=datatype, version=version, cell_size=cell_size or datatype.size,
              key=KEY if encrypted else None, encrypted=encrypted)
    tile = filter_tile(data, pipeline, max_chunk=max_chunk, **kw)
    parsed = Tile.parse(Tile.build(tile))
    assert unfilter(parsed, pipeline, **kw) == data
    return tile


def test_highly_compressed_tile_decodes_past_the_first_allocation():
    """unfilter allocates at most 16x the stored bytes (+1 MiB) before output arrives, then grows with it."""
    data = np.repeat(np.arange(3, dtype=np.int32), 1 << 20).tobytes()  # 12 MiB in three runs
    pipeline = _pipeline(_filter(FilterType.RLE, compressor=Compressor.RLE, level=-1))
    tile = _roundtrip(data, pipeline, Datatype.INT32, 22, 65536)
    stored = sum(len(c.metadata) + len(c.data) for c in tile.chunks)
    assert 16 * stored + (1 << 20) < len(data)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        got = unfilter(Tile.parse(Tile.build(tile)), pipeline, datatype=Datatype.INT32, version=22, cell_size=4,
                       threads=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == data
    # the allocation grows in place with the output: the tile's 12 MiB are held once (three times before
    # 2026-11-24, as the first allocation, the chunks decoded past it and the joined result: 35 MiB)
    assert peak < 1.25 * len(data)


chunks = st.sampled_from([1, 8, 24, 64, 256, 65536])
counts = st.integers(0, 300) | st.sampled_from([0, 1])


@PROPS
@given(st.sampled_from(list(COMPRESSORS)), st.sampled_from(FIXED), counts, st.integers(-1, 9), chunks,
       st.sampled_from([1, 11, 22, 23]), st.booleans(), st.data())
def test_compressors(ftype, datatype, n, level, max_chunk, version, encrypted, data):
    values = data.draw(_values(datatype, n))
    pipeline = _pipeline(_filter(ftype, compressor=COMPRESSORS[ftype], level=level))
    _roundtrip(values.tobytes(), pipeline, datatype, version, max_chunk, encrypted)


@PROPS
@given(st.sampled_from([FilterType.DOUBLE_DELTA, FilterType.DELTA]), st.sampled_from(INTEGERS + [Datatype.CHAR]),
       counts, chunks, st.sampled_from([20, 22, 23]), st.data())
def test_delta_compressors(ftype, datatype, n, max_chunk, version, data):
    dtype = datatype.numpy_dtype if datatype != Datatype.CHAR else np.dtype("i1")
    small = st.integers(max(-(2**31), int(np.iinfo(dtype).min)), min(2**31 - 1, int(np.iinfo(dtype).max)))
    values = data.draw(arrays(dtype, n, elements=small)).view(datatype.numpy_dtype)
    compressor = Compressor.DOUBLE_DELTA if ftype == FilterType.DOUBLE_DELTA else Compressor.DELTA
    pipeline = _pipeline(_filter(ftype, compressor=compressor, level=-1, reinterpret_datatype=Datatype.ANY))
    _roundtrip(values.tobytes(), pipeline, datatype, version, max_chunk)


@PROPS
@given(st.sampled_from(INTEGERS + [Datatype.DATETIME_NS, Datatype.BLOB]), counts, chunks,
       st.sampled_from([1, 2, 7, 8, 16, 100, 256]), st.sampled_from([19, 20, 23]), st.data())
def test_windowed_filters(datatype, n, max_chunk, window, version, data):
    values = data.draw(_values(datatype, n))
    ordered = np.sort(values.view(np.int64) if datatype.is_datetime else values)  # NaT would sort last
    for ftype, vals in ((FilterType.BIT_WIDTH_REDUCTION, values), (FilterType.POSITIVE_DELTA, ordered)):
        _roundtrip(vals.tobytes(), _pipeline(_filter(ftype, max_window_size=window)), datatype, version, max_chunk)


@PROPS
@given(st.sampled_from([FilterType.BYTESHUFFLE, FilterType.BITSHUFFLE, FilterType.XOR, FilterType.CHECKSUM_MD5,
                        FilterType.CHECKSUM_SHA256]), st.sampled_from(FIXED), counts, chunks, st.data())
def test_shuffles_xor_checksums(ftype, datatype, n, max_chunk, data):
    values = data.draw(_values(datatype, n))
    pipeline = _pipeline(_filter(ftype), _filter(FilterType.ZSTD, compressor=Compressor.ZSTD, level=1))
    _roundtrip(values.tobytes(), pipeline, datatype, 22, max_chunk)


@PROPS
@given(st.binary(max_size=20000), st.sampled_from([1, 2, 4, 8]))
def test_bitshuffle_inverts_on_any_length(raw, size):
    raw = raw[:len(raw) // (8 * size) * 8 * size]
    assert bitunshuffle(bitshuffle(raw, size), size).tobytes() == raw


def _bit_transpose(raw: np.ndarray, size: int) -> bytes:
    """Per 8192-byte block: bit k of byte j of its elements (a multiple of 8 of them), 8 elements per byte,
    LSB first; the rest of the block as it is (an independent formula)."""
    out = []
    for block in np.split(raw, range(8192, len(raw), 8192)):
        n = len(block) // size // 8 * 8
        bits = np.unpackbits(block[:n * size].reshape(n, size), axis=1, bitorder="little").reshape(n, size, 8)
        out += [np.packbits(bits.transpose(1, 2, 0), axis=2, bitorder="little").tobytes(), block[n * size:].tobytes()]
    return b"".join(out)


@pytest.mark.parametrize("size", [1, 2, 4, 8])
@pytest.mark.parametrize("nbytes", [64 * 8, 8192, 9 * 8192 + 200 * 8 + 5])  # more blocks than a chunk, a short one
def test_bitshuffle_matches_the_bit_transpose_definition(size, nbytes):
    raw = np.random.default_rng(size).integers(0, 256, nbytes, dtype=np.uint8)
    want = _bit_transpose(raw, size)
    assert bitshuffle(raw.tobytes(), size).tobytes() == want
    assert bitunshuffle(want, size).tobytes() == raw.tobytes()


def test_bitshuffle_in_threads():
    """Each thread shuffles in buffers of its own."""
    rng = np.random.default_rng(3)
    raws = [rng.integers(0, 256, n, dtype=np.uint8) for n in (65536, 65536, 3 * 8192 + 40, 65536 + 1000)] * 8
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda raw: (bitshuffle(raw.tobytes(), 4).tobytes(),
                                         bitunshuffle(_bit_transpose(raw, 4), 4).tobytes()), raws))
    assert got == [(_bit_transpose(raw, 4), raw.tobytes()) for raw in raws]


@PROPS
@given(st.sampled_from([Datatype.FLOAT32, Datatype.FLOAT64]), st.sampled_from([1, 2, 4, 8]), counts,
       st.sampled_from([0.5, 0.25, 1.0, 2.0]), st.integers(-100, 100), chunks, st.data())
def test_float_scale(datatype, width, n, scale, offset, max_chunk, data):
    bound = min(2 ** (8 * width - 1) - 1, 2**20)
    stored = data.draw(arrays(np.int64, n, elements=st.integers(-bound, bound)))
    values = (scale * stored + offset).astype(datatype.numpy_dtype)  # exactly representable
    pipeline = _pipeline(_filter(FilterType.SCALE_FLOAT, scale=scale, offset=float(offset), byte_width=width))
    _roundtrip(values.tobytes(), pipeline, datatype, 22, max_chunk)


strings = st.lists(st.sampled_from([b"", b"a", b"bb", b"ccc" * 30, b"\x00x"]) | st.binary(max_size=40), max_size=200)


def test_chunk_sizes_follow_tiledb():
    assert chunk_sizes(200, 4, 192) == [192, 8]
    assert chunk_sizes(0, 4) == []
    assert chunk_sizes(1200, 16, 256, dim_num=2) == [256, 256, 88] * 2  # per dimension in v1-4
    # the 50%/150% rule: a cell that fits in 150% joins the chunk; a chunk closed at the end leaves an empty one
    assert var_chunk_sizes([0, 60, 120], 150, 1, 100) == [120, 30]
    assert var_chunk_sizes([0, 10, 110], 300, 1, 100) == [110, 190, 0]


@pytest.mark.parametrize("fmt", [WebpInputFormat.WEBP_RGB, WebpInputFormat.WEBP_BGRA])
def test_webp_lossless_round_trip(fmt):
    pytest.importorskip("webp")
    depth = 3 if fmt == WebpInputFormat.WEBP_RGB else 4
    image = np.random.default_rng(2).integers(0, 256, (8, 6 * depth), dtype=np.uint8)
    pipeline = _pipeline(_filter(FilterType.WEBP, quality=100.0, input_format=fmt, lossless=1, y_extent=8,
                                 x_extent=6 * depth, padding=bytes(2)))
    tile = _roundtrip(image.tobytes(), pipeline, Datatype.UINT8, 22, 65536)
    assert tile.num_chunks == 1


@pytest.mark.parametrize("lossless", [1, 0])
@pytest.mark.parametrize("fmt", list(WebpInputFormat)[1:])
def test_webp_encodes_as_tiledb_calls_libwebp(fmt, lossless):
    """TileDB's filter calls libwebp's simple API (WebPEncodeLosslessRGB, WebPEncodeBGR(.., quality), ...;
    webp_filter.cc); the same call into the webp package's own libwebp makes our bytes, quality 100 or not."""
    import ctypes
    webp = pytest.importorskip("webp")
    lib = ctypes.CDLL(webp._webp.__file__)
    depth = 4 if "A" in fmt.name[5:] else 3
    rng = np.random.default_rng(3)
    # (an image on which libwebp's lossless output at quality 100 and at 70 differ in all four layouts)
    image = (np.add.outer(np.arange(64), np.arange(64 * depth)) + rng.integers(0, 20, (64, 64 * depth))).astype(np.uint8)
    pipeline = _pipeline(_filter(FilterType.WEBP, quality=100.0 if lossless else 42.0, input_format=fmt,
                                 lossless=lossless, y_extent=64, x_extent=64 * depth, padding=bytes(2)))
    tile = filter_tile(image.tobytes(), pipeline, datatype=Datatype.UINT8, version=22, cell_size=1)
    call = getattr(lib, "WebPEncode" + ("Lossless" if lossless else "") + fmt.name[5:])
    call.restype = ctypes.c_size_t
    out = ctypes.POINTER(ctypes.c_uint8)()
    args = (image.ctypes.data_as(ctypes.c_void_p), 64, 64, 64 * depth) + (() if lossless else (ctypes.c_float(42.0),))
    size = call(*args, ctypes.byref(out))
    assert size > 0
    want = ctypes.string_at(out, size)
    lib.WebPFree(out)
    assert tile.chunks[0].data == want


def _corpus_tiles():
    """(tile, pipeline, datatype, version, var strings?) of one tile per filter case of the newest corpus copies."""
    import test_filters as tf
    out = []
    for name in sorted({c.name for c in tf.CASES if c.name.startswith("filter_")}):
        case, _, info, _, version = tf._tile_of(name)
        path = tf._file(tf._fragments(case)[0][0], tf.Field(info, 0, False), "_var" if info.var else "")
        strings = info.var and tf.skips_offsets(info.filters, info.datatype, version)
        out.append((tf._tiles(path)[0], info.filters, info.datatype, version, strings))
    return out


CORPUS_TILES = _corpus_tiles()


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(CORPUS_TILES))), st.sampled_from(["metadata", "data"]), st.integers(0, 10**6),
       st.sampled_from(["flip", "cut", "grow"]), st.integers(0, 255))
def test_corrupt_chunks_raise_format_error_only(which, part, where, how, byte):
    from tdbformat.errors import FormatError
    tile, pipeline, datatype, version, strings = CORPUS_TILES[which]
    chunk = Container(tile.chunks[0])
    raw = bytearray(chunk[part])
    if not raw:
        return
    i = where % len(raw)
    if how == "flip":
        raw[i] ^= byte or 1
    elif how == "cut":
        del raw[i:]
    else:
        raw[i:i] = bytes([byte]) * 4
    chunk[part] = bytes(raw)
    broken = Container(num_chunks=1, chunks=[chunk])
    try:
        if strings:
            unfilter_strings(broken, pipeline, datatype=datatype, version=version)
        else:
            unfilter(broken, pipeline, datatype=datatype, cell_size=datatype.size, version=version)
    except FormatError:
        pass


def _fields_reference(fields, width: int) -> bytes:
    """Fields laid MSB first in u64 words stored LE, by a string of bits (dd_compressor.cc's layout)."""
    bits = "".join(format(int(f), f"0{width}b") for f in fields)
    bits += "0" * (-len(bits) % 64)
    return b"".join(int(bits[i:i + 64], 2).to_bytes(8, "little") for i in range(0, len(bits), 64))


@PROPS
@given(st.integers(1, 63).flatmap(lambda w: st.tuples(st.just(w), st.lists(st.integers(0, 2**w - 1), max_size=300))))
def test_bit_fields_match_a_bit_string_reference(case):
    from tdbformat.filters.compression import pack_fields, unpack_fields
    width, values = case
    fields = np.array(values, np.uint64)
    packed = pack_fields(fields, width).astype("<u8").tobytes()
    assert packed == _fields_reference(values, width)
    assert unpack_fields(np.frombuffer(packed, "<u8"), len(values), width).tolist() == values


@PROPS
@given(st.sampled_from([1, 2, 3, 4, 8]), st.integers(1, 5), st.integers(0, 100), st.data())
def test_byteshuffle_rows_match_the_definition(size, k, n, data):
    from tdbformat.filters.shuffle import byteshuffle, byteunshuffle
    rows = data.draw(arrays(np.uint8, (k, n)))
    for row, got in zip(rows, byteshuffle(rows, size)):
        m = n // size  # byte j of element i goes to j * m + i; a partial last element stays
        want = [row[i * size + j] for j in range(size) for i in range(m)] + list(row[m * size:])
        assert got.tolist() == want
        assert byteunshuffle(got[None], size)[0].tolist() == row.tolist()


THREADED = [_pipeline(_filter(FilterType.BITSHUFFLE), _filter(FilterType.LZ4, compressor=Compressor.LZ4, level=1)),
            _pipeline(_filter(FilterType.BYTESHUFFLE), _filter(FilterType.ZSTD, compressor=Compressor.ZSTD, level=1)),
            _pipeline(_filter(FilterType.XOR)),
            _pipeline(_filter(FilterType.DOUBLE_DELTA, compressor=Compressor.DOUBLE_DELTA, level=-1,
                              reinterpret_datatype=Datatype.ANY)),
            _pipeline(_filter(FilterType.BIT_WIDTH_REDUCTION, max_window_size=64)),
            _pipeline(_filter(FilterType.POSITIVE_DELTA, max_window_size=64)),
            _pipeline(_filter(FilterType.RLE, compressor=Compressor.RLE, level=-1)),
            # every other filter of numeric tiles, alone (float scale and AES-256-GCM: the test after)
            _pipeline(_filter(FilterType.GZIP, compressor=Compressor.GZIP, level=6)),
            _pipeline(_filter(FilterType.ZSTD, compressor=Compressor.ZSTD, level=3)),
            _pipeline(_filter(FilterType.LZ4, compressor=Compressor.LZ4, level=1)),
            _pipeline(_filter(FilterType.BZIP2, compressor=Compressor.BZIP2, level=9)),
            _pipeline(_filter(FilterType.DELTA, compressor=Compressor.DELTA, level=-1,
                              reinterpret_datatype=Datatype.ANY)),
            _pipeline(_filter(FilterType.BITSHUFFLE)),
            _pipeline(_filter(FilterType.BYTESHUFFLE)),
            _pipeline(_filter(FilterType.CHECKSUM_MD5)),
            _pipeline(_filter(FilterType.CHECKSUM_SHA256))]


@PROPS
@given(st.sampled_from(THREADED), st.sampled_from(INTEGERS), st.integers(0, 3000), st.sampled_from([64, 256, 1000]),
       st.integers(2, 5), st.data())
def test_threads_give_the_same_bytes(pipeline, datatype, n, max_chunk, threads, data):
    values = data.draw(_values(datatype, n, elements=st.integers(0, 9)))
    positive = pipeline.filters[0].type == FilterType.POSITIVE_DELTA  # whose values must not decrease
    raw = (np.sort(values) if positive else values).tobytes()
    kw = dict(datatype=datatype, version=22, cell_size=datatype.size)
    one = filter_tile(raw, pipeline, max_chunk=max_chunk, threads=1, **kw)
    many = filter_tile(raw, pipeline, max_chunk=max_chunk, threads=threads, **kw)
    assert Tile.build(one) == Tile.build(many)
    parsed = Tile.parse(Tile.build(one))
    assert unfilter(parsed, pipeline, threads=1, **kw) == unfilter(parsed, pipeline, threads=threads, **kw) == raw


SINGLE = [p.filters[0] for p in THREADED[2:]]


@pytest.mark.parametrize("datatype", [Datatype.INT32, Datatype.UINT64], ids=lambda d: d.name)
@pytest.mark.parametrize("second", SINGLE, ids=lambda f: f.type.name)
@pytest.mark.parametrize("first", SINGLE, ids=lambda f: f.type.name)
def test_every_pair_of_filters_round_trips(first, second, datatype):
    """Every chain of two filters gives back its input in many chunks, in one thread and in two: the
    second stage hands the first what it decoded (bytes, a memoryview or a numpy array). Double delta after
    bit width reduction overflowed on the latter's u8 array."""
    from tdbformat.errors import FormatError
    rng = np.random.default_rng(7)  # small steps, not decreasing (positive delta's need), some runs (RLE's)
    values = np.cumsum(rng.integers(0, 3, 5000) * (rng.random(5000) < 0.7)).astype(datatype.numpy_dtype)
    pipeline, kw = _pipeline(first, second), dict(datatype=datatype, version=22, cell_size=datatype.size)
    try:
        tile = Tile.parse(Tile.build(filter_tile(values.tobytes(), pipeline, max_chunk=1024, **kw)))
    except FormatError:  # a chain TileDB cannot write either (positive delta after a shuffle, ...)
        return
    assert unfilter(tile, pipeline, threads=1, **kw) == unfilter(tile, pipeline, threads=2, **kw) == values.tobytes()

@PROPS
@given(st.sampled_from([Datatype.FLOAT32, Datatype.FLOAT64]), st.integers(0, 3000), st.sampled_from([64, 256, 1000]),
       st.integers(2, 5), st.booleans(), st.data())
def test_threads_give_the_same_bytes_float_scale_and_aes(datatype, n, max_chunk, threads, encrypted, data):
    """Float scale encodes alike on any number of threads; AES-256-GCM draws a fresh IV per chunk, so its tiles
    are compared decoded."""
    values = data.draw(_values(datatype, n, elements=st.integers(-1000, 1000)))
    pipeline = _pipeline(_filter(FilterType.SCALE_FLOAT, scale=0.5, offset=1.0, byte_width=4))
    kw = dict(datatype=datatype, version=22, cell_size=datatype.size, key=KEY if encrypted else None,
              encrypted=encrypted)
    one = filter_tile(values.tobytes(), pipeline, max_chunk=max_chunk, threads=1, **kw)
    many = filter_tile(values.tobytes(), pipeline, max_chunk=max_chunk, threads=threads, **kw)
    if not encrypted:
        assert Tile.build(one) == Tile.build(many)
    parsed = Tile.parse(Tile.build(many))
    assert unfilter(parsed, pipeline, threads=1, **kw) == unfilter(parsed, pipeline, threads=threads, **kw) \
        == values.tobytes()  # whole numbers times 0.5 plus 1 survive the scale exactly


@PROPS
@given(st.sampled_from(THREADED[:3]), st.integers(0, 39), st.sampled_from(["metadata", "data"]), st.integers(0, 10**6),
       st.sampled_from([1, 2]))
def test_a_corrupt_chunk_among_many_is_named(pipeline, which, part, where, threads):
    """Runs of chunks unfilter together (reverse_many); an error still names its chunk."""
    from tdbformat.errors import FormatError
    raw = np.arange(40 * 64, dtype=np.int32).tobytes()
    tile = Tile.parse(Tile.build(filter_tile(raw, pipeline, datatype=Datatype.INT32, cell_size=4, max_chunk=256)))
    chunk = Container(tile.chunks[which])
    cut = bytes(chunk[part])[:where % max(1, len(chunk[part]))]
    chunk[part] = cut
    tile.chunks[which] = chunk
    with pytest.raises(FormatError, match=f"chunk {which} "):
        unfilter(tile, pipeline, datatype=Datatype.INT32, cell_size=4, threads=threads)


@PROPS
@given(st.sampled_from([1, 2, 4, 8]), st.integers(0, 3 * 8192 // 8 + 40), st.booleans(), st.data())
def test_bitshuffle_library_gives_the_numpy_bytes(size, n, inverse, data):
    """The optional bitshuffle library (the ``fast`` extra) against our numpy kernel."""
    from tdbformat.filters import shuffle
    if shuffle._LIBRARY is None:
        pytest.skip("bitshuffle is not installed")
    buf = data.draw(arrays(np.uint8, size * n + data.draw(st.integers(0, size - 1))))
    lib = shuffle._bitshuffle(buf, size, inverse)
    assert lib.tobytes() == shuffle._bitshuffle(buf, size, inverse, library=None).tobytes()


@PROPS
@given(st.sampled_from([2, 4, 8]), st.integers(1, 4), st.integers(1, 40), st.integers(0, 7), st.booleans(), st.data())
def test_the_simd_byte_shuffles_give_the_definitions_bytes(size, k, words, extra, aligned, data):
    """Rows of 8q elements (plus a partial one) byte-unshuffled through the library's byte transpose and word
    copies: each element's byte j is the j-th plane's, into new rows or a place, aligned or not; and rows of any
    count of elements shuffled by the transpose alone."""
    from tdbformat.filters import shuffle
    if shuffle._TRANSPOSE is None:
        pytest.skip("bitshuffle (the fast extra) is not installed")
    n = 8 * words * size + extra
    raw = data.draw(arrays(np.uint8, k * n + 1))
    rows = (raw[:-1] if aligned else raw[1:]).reshape(k, n)
    m = n // size
    want = np.array([[row[j * m + i] for i in range(m) for j in range(size)] + list(row[m * size:]) for row in rows],
                    np.uint8).reshape(k, n)
    assert shuffle.byteshuffle(rows, size, True).tolist() == want.tolist()
    place = np.zeros_like(rows)
    assert np.shares_memory(shuffle.byteshuffle(rows, size, True, place), place)
    assert place.tolist() == want.tolist()
    odd = rows[:, :n - size * data.draw(st.integers(0, 7))] if n > 8 * size else rows  # any count of elements
    m = odd.shape[1] // size
    shuffled = [[row[i * size + j] for j in range(size) for i in range(m)] + list(row[m * size:]) for row in odd]
    assert shuffle.byteshuffle(odd, size).tolist() == shuffled


def test_a_byte_transpose_that_gives_other_bytes_is_not_used(monkeypatch):
    """The library's transpose is a test hook of bitshuffle's: one that is missing, raises or gives other
    bytes leaves the numpy planes to unshuffle."""
    from tdbformat.filters import shuffle
    if shuffle._LIBRARY is None:
        pytest.skip("bitshuffle (the fast extra) is not installed")
    ext = shuffle._LIBRARY.ext
    for fake in (lambda a: a, lambda a: 1 / 0):
        monkeypatch.setattr(ext, "trans_byte_elem_SSE", fake)
        monkeypatch.setattr(ext, "trans_byte_elem_NEON", fake, raising=False)
        assert shuffle._byte_transpose() is None
    monkeypatch.delattr(ext, "trans_byte_elem_SSE")
    monkeypatch.delattr(ext, "trans_byte_elem_NEON", raising=False)
    assert shuffle._byte_transpose() is None


@PROPS
@given(st.sampled_from([1, 2, 4, 8]), st.integers(1, 3), st.booleans(), st.data())
def test_unshuffles_write_into_the_rows_they_are_given(size, k, bits, data):
    """A run of chunks' rows undone into a place given to them (a tile's output, which saves a copy): the same
    bytes as into new rows, in that place (byteshuffle of one-byte values leaves its input as it is).
    Bitshuffle through the numpy kernel (the library makes its own rows)."""
    from tdbformat.filters import shuffle
    from tdbformat.filters.xor import _xor_decode_rows

    def bitshuffle(r, out=None):
        flat = None if out is None else out.reshape(-1)
        return shuffle._bitshuffle(r.reshape(-1), size, True, library=None, out=flat).reshape(r.shape)

    rows = data.draw(arrays(np.uint8, (k, 8192 * data.draw(st.integers(1, 2)))))
    undo = [(lambda r, out=None: shuffle.byteshuffle(r, size, True, out), size > 1),
            (lambda r, out=None: _xor_decode_rows(r, size, out), True)] + [(bitshuffle, True)] * bits
    for fn, writes in undo:
        place = np.zeros_like(rows)
        got = fn(rows, place)
        assert got.tobytes() == fn(rows).tobytes()
        assert np.shares_memory(got, place) == writes




@PROPS
@given(st.lists(st.binary(max_size=300).map(lambda b: b.replace(b"\0", b"x")), max_size=400),
       st.sampled_from([None, FilterType.ZSTD, FilterType.LZ4, FilterType.GZIP, FilterType.BITSHUFFLE]),
       st.sampled_from([64, 200, 1024, 65536]), st.sampled_from([5, 10, 11, 22]), st.sampled_from([1, 2]))
def test_terminated_var_cells_filter_to_the_bytes_of_the_cells_without_their_nuls(cells, ftype, max_chunk, version,
                                                                                   threads):
    """A writer's var cells each followed by a NUL (``terminated``) filter to the same tile as the cells
    without them: from v11 each chunk drops its own cells' NULs (empty cells, cells larger than a chunk and
    chunk ends among them), before v11 the NULs go first."""
    pipeline = _pipeline(*([] if ftype is None else [_filter(ftype, level=3)]))
    lengths = np.array([len(c) for c in cells], np.uint64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype("<u8") if cells else np.zeros(0, "<u8")
    plain = filter_tile(b"".join(cells), pipeline, datatype=Datatype.STRING_UTF8, version=version, offsets=offsets,
                        max_chunk=max_chunk, threads=threads)
    if not cells:
        return
    terminated = filter_tile(b"".join(c + b"\0" for c in cells), pipeline, datatype=Datatype.STRING_UTF8,
                             version=version, offsets=offsets + np.arange(len(cells), dtype=np.uint64),
                             max_chunk=max_chunk, threads=threads, terminated=True)
    assert Tile.build(terminated) == Tile.build(plain)
