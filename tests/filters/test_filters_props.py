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
from tdbformat.filters.strings import DictionaryHeader

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


@PROPS
@given(strings, st.sampled_from([(FilterType.RLE, Compressor.RLE), (FilterType.DICTIONARY,
                                                                     Compressor.DICTIONARY_ENCODING)]),
       st.sampled_from([(Datatype.STRING_ASCII, 13), (Datatype.STRING_ASCII, 22), (Datatype.STRING_UTF8, 17),
                        (Datatype.STRING_UTF8, 23)]), st.booleans(), st.booleans())
def test_string_rle_and_dictionary(cells, filt, typed, compress, terminated):
    """Round trip; ``terminated``: the writer's layout, a byte after each cell that is not the cell's (here
    ``a``, which a cell may also hold), gives the same tile."""
    ftype, compressor = filt
    datatype, version = typed
    filters = [_filter(ftype, compressor=compressor, level=-1)]
    if compress:
        filters.append(_filter(FilterType.ZSTD, compressor=Compressor.ZSTD, level=3))
    pipeline = _pipeline(*filters)
    data = b"".join(cells)
    offsets = np.cumsum([0] + [len(c) for c in cells[:-1]]).astype("<u8") if cells else np.zeros(0, "<u8")
    tile = filter_tile(data, pipeline, datatype=datatype, version=version, cell_size=1, offsets=offsets)
    if terminated and cells:
        ends = _terminated(cells)
        assert Tile.build(filter_tile(ends[0], pipeline, datatype=datatype, version=version, cell_size=1,
                                      offsets=ends[1], terminated=True)) == Tile.build(tile)
    assert tile.num_chunks == (1 if cells else 0)
    got, got_offsets = unfilter_strings(Tile.parse(Tile.build(tile)), pipeline, datatype=datatype, version=version)
    assert got == data and got_offsets.tolist() == offsets.tolist()


def _terminated(cells: list) -> tuple[bytes, np.ndarray]:
    """(data, offsets) of ``cells`` each followed by one byte ``a`` that is not the cell's."""
    return b"".join(c + b"a" for c in cells), np.cumsum([0] + [len(c) + 1 for c in cells[:-1]]).astype("<u8")


@PROPS
@given(strings, st.sampled_from([16, 0]))
def test_dictionary_lists_the_distinct_strings_in_first_seen_order(cells, spread):
    """The dictionary TileDB writes: each distinct string once, in the order the cells first show it, and the
    cells' ids into it; also with a table of two slots (``spread`` 0), where most cells are left to the sort."""
    from tdbformat.filters import strings as strings_mod
    data = b"".join(cells)
    offsets = np.cumsum([0] + [len(c) for c in cells[:-1]]).astype("<u8") if cells else np.zeros(0, "<u8")
    if not cells:
        return
    saved = strings_mod._SPREAD, strings_mod._MIN_BITS
    strings_mod._SPREAD, strings_mod._MIN_BITS = spread, 10 if spread else 1
    try:
        md, parts = strings_mod.StringDictionary().forward_strings(None, data, offsets)
    finally:
        strings_mod._SPREAD, strings_mod._MIN_BITS = saved
    head = DictionaryHeader.parse(md[0])
    distinct = list(dict.fromkeys(cells))
    want = b"".join(len(c).to_bytes(head.strlen_bytesize, "big") + c for c in distinct)
    assert head.dictionary == want
    width = head.ids_bytesize
    ids = [int.from_bytes(parts[0][i:i + width], "big") for i in range(0, len(parts[0]), width)]
    assert ids == [distinct.index(c) for c in cells]


@PROPS
@given(strings, st.booleans())
def test_string_dictionary_encodes_the_same_with_or_without_pyarrow(cells, terminated):
    """pyarrow's dictionary_encode (where it is installed) and the numpy hash table number the strings the
    same (first seen first), so both write the same bytes; also from cells each followed by a byte not
    theirs (``terminated``), which pyarrow encodes with the cells."""
    pytest.importorskip("pyarrow")
    from tdbformat.filters import set_pyarrow
    from tdbformat.filters.strings import StringDictionary
    if not cells:
        return
    cells = cells * (64 // len(cells) + 1)  # (under 64 cells both go through numpy)
    data = b"".join(cells)
    offsets = np.cumsum([0] + [len(c) for c in cells[:-1]]).astype("<u8")
    with_arrow = StringDictionary().forward_strings(None, *(_terminated(cells) if terminated else (data, offsets)),
                                                    terminated)
    try:
        set_pyarrow(False)
        without = StringDictionary().forward_strings(None, data, offsets)
    finally:
        set_pyarrow(True)
    assert with_arrow == without


@PROPS
@given(strings, st.booleans())
def test_string_cells_compare_as_their_padded_bytes(cells, terminated):
    """The rows string RLE and dictionary compare cells by (found a word at a time for short cells, a byte at
    a time for long ones): each cell's length, then its bytes zero-padded to whole u64 words; the same for
    cells each followed by a byte not theirs (``terminated``)."""
    from tdbformat.filters.strings import _cells
    data = b"".join(cells)
    offsets = np.cumsum([0] + [len(c) for c in cells[:-1]]).astype("<u8") if cells else np.zeros(0, "<u8")
    if terminated and cells:
        data, offsets = _terminated(cells)
    _, lengths, cols = _cells(data, offsets, terminated and bool(cells))
    words = 1 + -(-max(map(len, cells), default=0) // 8)
    want = [[len(c), *np.frombuffer(c.ljust(8 * (words - 1), b"\0"), "<u8").tolist()] for c in cells]
    assert np.stack(cols, axis=1).tolist() == (want or np.zeros((0, words)).tolist())
    assert lengths.tolist() == [len(c) for c in cells]


def _records_reference(raw: bytes, skip: int, width: int):
    """Record positions by walking them one by one (the loop the vectorised walker replaces), or None if the
    last record does not fit."""
    pos, out = 0, []
    while pos < len(raw):
        if pos + skip + width > len(raw):
            return None
        out.append(pos)
        pos += skip + width + int.from_bytes(raw[pos + skip:pos + skip + width], "big")
        if pos > len(raw):
            return None
    return out


@PROPS
@given(st.sampled_from([0, 1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8]),
       st.lists(st.tuples(st.binary(max_size=8), st.binary(max_size=40)), max_size=60), st.binary(max_size=6),
       st.booleans())
def test_string_record_walk_matches_a_loop(skip, width, records, tail, corrupt):
    from tdbformat.errors import FormatError
    from tdbformat.filters.strings import _records
    raw = b"".join((head + bytes(8))[:skip] + len(body).to_bytes(8, "big")[8 - width:] + body
                   for head, body in records)
    if corrupt:  # arbitrary trailing bytes: a record that may or may not fit
        raw += tail
    want = _records_reference(raw, skip, width)
    if want is None:
        with pytest.raises(FormatError, match="cut off|runs past"):
            _records(np.frombuffer(raw, np.uint8), skip, width, "test")
    else:
        assert _records(np.frombuffer(raw, np.uint8), skip, width, "test").tolist() == want


@pytest.mark.parametrize("skip,width,longest", [(1, 1, 3), (2, 1, 40), (0, 2, 2000), (4, 8, 300), (8, 4, 0)])
def test_string_record_walk_matches_a_loop_across_windows(skip, width, longest):
    """Records over several of the walker's windows (the property above stays within one): short, long and
    empty strings, then the same cut short at every few bytes of its last record."""
    from tdbformat.errors import FormatError
    from tdbformat.filters.strings import _WINDOW, _records
    rng = np.random.default_rng(longest)
    count = 4 * _WINDOW // (skip + width + longest // 2 + 1)
    bodies = [rng.bytes(int(k)) for k in rng.integers(0, longest + 1, count)]
    raw = b"".join(rng.bytes(skip) + len(b).to_bytes(8, "big")[8 - width:] + b for b in bodies)
    assert len(raw) > 3 * _WINDOW
    assert _records(np.frombuffer(raw, np.uint8), skip, width, "test").tolist() == _records_reference(raw, skip, width)
    for cut in range(1, min(len(bodies[-1]) + skip + width, 9)):
        with pytest.raises(FormatError, match="cut off|runs past"):
            _records(np.frombuffer(raw[:-cut], np.uint8), skip, width, "test")


@PROPS
@given(st.lists(st.binary(min_size=1, max_size=20), min_size=1, max_size=50),
       st.sampled_from([FilterType.RLE, FilterType.DICTIONARY]), st.data())
def test_truncated_string_tiles_raise_format_error(cells, ftype, data):
    from tdbformat.errors import FormatError
    compressor = Compressor.RLE if ftype == FilterType.RLE else Compressor.DICTIONARY_ENCODING
    pipeline = _pipeline(_filter(ftype, compressor=compressor, level=-1))
    payload = b"".join(cells)
    offsets = np.cumsum([0] + [len(c) for c in cells[:-1]]).astype("<u8")
    tile = filter_tile(payload, pipeline, datatype=Datatype.STRING_ASCII, version=22, cell_size=1, offsets=offsets)
    chunk = tile.chunks[0]
    if ftype == FilterType.RLE:  # cut the runs; the header's encoded size follows, so only the walk can notice
        cut = data.draw(st.integers(1, len(chunk.data)))
        chunk.data = chunk.data[:-cut]
        chunk.metadata = chunk.metadata[:12] + len(chunk.data).to_bytes(4, "little") + chunk.metadata[16:]
    else:  # cut the dictionary the same way, keeping its declared size consistent
        dict_size = int.from_bytes(chunk.metadata[22:26], "little")
        cut = data.draw(st.integers(1, dict_size))
        chunk.metadata = (chunk.metadata[:22] + (dict_size - cut).to_bytes(4, "little") +
                          chunk.metadata[26:26 + dict_size - cut])
    with pytest.raises(FormatError):
        unfilter_strings(tile, pipeline, datatype=Datatype.STRING_ASCII, version=22)


@PROPS
@given(st.lists(st.binary(max_size=300), max_size=300), st.sampled_from([16, 64, 100, 65536]),
       st.sampled_from([10, 11, 23]))
def test_var_chunking_round_trips(cells, max_chunk, version):
    data = b"".join(cells)
    offsets = np.cumsum([0] + [len(c) for c in cells[:-1]]).astype("<u8") if cells else np.zeros(0, "<u8")
    pipeline = _pipeline(_filter(FilterType.GZIP, compressor=Compressor.GZIP, level=1))
    tile = filter_tile(data, pipeline, datatype=Datatype.STRING_UTF8, version=version, cell_size=1,
                       offsets=offsets, max_chunk=max_chunk)
    if version >= 11 and cells:  # cells are never split across chunks
        ends = np.cumsum([c.unfiltered_size for c in tile.chunks])
        assert set(ends[:-1].tolist()) <= set(offsets.tolist()) | {len(data)}
    assert unfilter(tile, pipeline, datatype=Datatype.STRING_UTF8, version=version) == data


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


def _strncmp(a: bytes, b: bytes, n: int) -> int:
    for x, y in zip(a[:n], b[:n]):
        if x != y or not x:
            return x - y
    return 0


def _tiledb_min_max(cells):
    """TileMetadataGenerator::min_max_var, cell after cell as TileDB scans (tile_metadata_generator.cc)."""
    lo = hi = cells[0]
    for value in cells[1:]:
        cmp = _strncmp(lo, value, min(len(lo), len(value)))
        lo = value if cmp > 0 or cmp == 0 and len(value) < len(lo) else lo
        cmp = _strncmp(hi, value, min(len(hi), len(value)))
        hi = value if cmp < 0 or cmp == 0 and len(value) > len(hi) else hi
    return lo, hi


@settings(PROPS, max_examples=300)
@given(st.lists(st.binary(max_size=20) | st.sampled_from([b"", b"a", b"a\0", b"a\0z", b"a\0y", b"a\0\0\0\0\0\0\0\0",
                                                           b"\xff", b"ab" * 9, b"\0", b"\0\xff", b"12345678a",
                                                           b"12345678b", b"1234567812345678a", b"1234567812345678b"]),
                min_size=1, max_size=60))  # (the last four tie on their first words)
def test_extreme_cells_are_tiledbs_strncmp_scan(cells):
    """The least and greatest cells, found a word at a time, are those TileDB's scan keeps with strncmp (bytes
    to the first NUL, unsigned; then the shorter; the first of equals), NULs inside cells included."""
    from tdbformat.filters.strings import extreme_cells
    sizes = np.array([len(c) for c in cells])
    buf = np.frombuffer(b"".join(cells), np.uint8)
    starts = np.cumsum(sizes) - sizes
    lo, hi = _tiledb_min_max(cells)
    least, greatest = extreme_cells(buf, starts, sizes)
    assert (cells[least], cells[greatest]) == (lo, hi)


def _tiledb_var_chunks(offsets, nbytes, chunk):
    """FilterPipeline::get_var_chunk_sizes, cell by cell as TileDB walks (filter_pipeline.cc), as sizes."""
    starts, current = [0], 0
    for c, start in enumerate(offsets):
        size = (nbytes if c == len(offsets) - 1 else offsets[c + 1]) - start
        if current + size > chunk:
            if current <= chunk // 2 or current + size <= chunk + chunk // 2:
                starts.append(start + size)
                current = 0
            else:
                starts.append(start)
                if size > chunk:
                    if c != len(offsets) - 1:
                        starts.append(start + size)
                    current = 0
                else:
                    current = size
        else:
            current += size
    return np.diff(np.append(starts, nbytes)).tolist()


@settings(PROPS, max_examples=400)
@given(st.lists(st.one_of(st.integers(0, 40), st.integers(0, 300), st.sampled_from([0, 50, 100, 150])), min_size=1,
                max_size=200), st.sampled_from([64, 100, 101]))
def test_var_chunks_are_tiledbs_walk(sizes, chunk):
    """Chunks found a chunk at a time are those of TileDB's cell-by-cell walk: cells that fit, overflow into
    the 150%, are larger than a chunk, empty, or end a chunk exactly at the end (an empty last chunk)."""
    offsets = np.cumsum([0] + sizes[:-1])
    nbytes = int(sum(sizes))
    if nbytes == chunk or chunk > nbytes:  # (one chunk: TileDB does not chunk a tile that fits)
        return
    assert var_chunk_sizes(offsets, nbytes, 1, chunk) == _tiledb_var_chunks(offsets.tolist(), nbytes, chunk)


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
