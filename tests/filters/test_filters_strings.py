"""Properties of the string filters and var-sized cells: RLE and dictionary of strings, their record walks and
bounds, var chunking as TileDB walks it, and the extreme cells TileDB's strncmp scan finds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tdbformat.enums import Compressor, Datatype, FilterType
from tdbformat.filters import filter_tile, unfilter, unfilter_strings
from tdbformat.filters.pipeline import var_chunk_sizes
from tdbformat.structs.tile import Tile
from tdbformat.filters.strings import DictionaryHeader

from test_filters_props import PROPS, _filter, _pipeline, chunks, strings


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
