"""A tile filtered as its cells come (``FilterPlan.stream``, what a write's UTF-8 check fills): the chunks the
walk closes over the cells known so far are those of the walk over them all, and the tile is, byte for byte,
the one ``filter_tile`` makes of all its cells at once."""

from __future__ import annotations

from unittest import mock

import numpy as np
from construct import Container, ListContainer
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tdbformat.enums import Datatype, FilterType
from tdbformat.filters import FilterPlan, filter_tile
from tdbformat.filters.pipeline import var_chunk_sizes, var_chunk_walk
from tdbformat.structs.tile import Tile

PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEY = bytes(range(32))
SIZES = st.lists(st.one_of(st.integers(0, 40), st.integers(0, 300), st.sampled_from([0, 50, 100, 150])), min_size=1,
                 max_size=200)


@PROPS
@given(SIZES, st.sampled_from([64, 100, 101]), st.lists(st.integers(1, 200), max_size=8), st.booleans())
def test_the_walk_over_cells_as_they_come_closes_the_chunks_of_the_walk_over_all(sizes, chunk, cuts, each):
    """Walking the cells known after each cut (``each``: after every cell; not ``final``), then all of them
    from where it stopped, gives the chunks of one walk over all the cells: TileDB's (``var_chunk_sizes``),
    which a reference walk of TileDB's cell-by-cell loop checks in test_filters_strings."""
    ends = np.cumsum(sizes)
    nbytes = int(ends[-1])
    if nbytes <= chunk:  # (one chunk: TileDB does not chunk a tile that fits)
        return
    starts, at = [], (0, 0)
    for cut in range(1, len(sizes) + 1) if each else sorted(cuts):
        closed, at = var_chunk_walk(ends[:cut], chunk, at, final=False)
        starts += closed
    closed, _ = var_chunk_walk(ends, chunk, at)
    offsets = np.concatenate([[0], ends[:-1]])
    assert np.diff([0, *starts, *closed, nbytes]).tolist() == var_chunk_sizes(offsets, nbytes, 1, chunk)


def _pipeline(*kinds, level=3):
    return Container(max_chunk_size=65536, filters=ListContainer(
        Container(type=t, options=Container(level=level) if t in (FilterType.ZSTD, FilterType.GZIP, FilterType.LZ4)
                  else Container()) for t in kinds))


PIPELINES = [(FilterType.ZSTD,), (FilterType.GZIP,), (FilterType.LZ4,), (FilterType.BITSHUFFLE, FilterType.ZSTD),
             (FilterType.ZSTD, FilterType.CHECKSUM_MD5), (FilterType.CHECKSUM_SHA256,), ()]


@PROPS
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=400), st.sampled_from(PIPELINES),
       st.sampled_from([64, 200, 1024, 4096]), st.sampled_from([11, 22]), st.sampled_from([2, 3]),
       st.lists(st.integers(1, 400), max_size=6) | st.just(list(range(1, 401))), st.booleans())
def test_a_var_tile_streamed_as_its_cells_come_is_the_tile_of_all_its_cells(cells, kinds, max_chunk, version,
                                                                          threads, cuts, ends_given):
    """Its bytes and offsets (fixed-size cells: u64) given to the streams a prefix of cells at a time (as the
    write's check encodes blocks) make the tiles ``filter_tile`` makes of all the cells: empty cells, cells
    larger than a chunk, a chunk closing at the end (an empty last chunk), through compressors, shuffles and
    checksums, v11 and v22, the walk going on where it stopped or made again."""
    _streamed_is_whole(cells, kinds, max_chunk, version, threads, cuts, ends_given)


@pytest.mark.parametrize("max_chunk", [64, 200, 1024])
@pytest.mark.parametrize("kinds", PIPELINES[:2] + PIPELINES[3:5])
@pytest.mark.parametrize("ends_given", [True, False])
def test_a_tile_streamed_a_cell_at_a_time_is_the_tile_of_all_its_cells(kinds, max_chunk, ends_given):
    """As above, a cell at a time (each chunk of bytes and of offsets closed as soon as it is whole), over
    empty cells, cells of 1-5 bytes and cells larger than a chunk."""
    rng = np.random.default_rng(max_chunk)
    cells = [bytes(rng.integers(0, 4, int(n), dtype=np.uint8)) for n in rng.choice([0, 1, 5, 150, 3000], 600)]
    _streamed_is_whole(cells, kinds, max_chunk, 22, 2, range(1, len(cells) + 1), ends_given)


def _streamed_is_whole(cells, kinds, max_chunk, version, threads, cuts, ends_given):
    pipeline, data = _pipeline(*kinds), b"".join(cells)
    ends = np.cumsum([len(c) for c in cells])
    offsets = np.concatenate([[0], ends[:-1]]).astype("<u8")
    streams = [FilterPlan(pipeline, datatype=dt, version=version, cell_size=dt.size).stream(
        max_chunk, threads, var=var) for dt, var in [(Datatype.STRING_UTF8, True), (Datatype.UINT64, False)]]
    assert None not in streams
    for cut in sorted(cuts):
        cut = min(cut, len(cells))
        streams[0].add(np.frombuffer(data[:int(ends[cut - 1])], np.uint8), ends[:cut])
        streams[1].add(offsets[:cut].view(np.uint8))
    with mock.patch.object(FilterPlan, "filter", side_effect=AssertionError("made again, not streamed")):
        got = [streams[0].tile(data, offsets, ends if ends_given else None), streams[1].tile(offsets.view(np.uint8))]
    want = [filter_tile(data, pipeline, datatype=Datatype.STRING_UTF8, version=version, offsets=offsets,
                        max_chunk=max_chunk),
            filter_tile(offsets.tobytes(), pipeline, datatype=Datatype.UINT64, version=version, cell_size=8,
                        max_chunk=max_chunk)]
    assert [Tile.build(t) for t in got] == [Tile.build(t) for t in want]


def test_no_stream_where_the_chunks_are_not_the_cells_alone_or_one_thread_filters():
    """A plan streams only where its chunks follow from the cells as they come: not before v11 for var cells
    (v5-10 chunk by a buffer's size), not v1-4 (the pipeline's own bound), not string RLE or dictionary
    (one chunk of the whole tile), not with one thread (nothing runs beside the cells' maker)."""
    zstd, rle = _pipeline(FilterType.ZSTD), _pipeline(FilterType.RLE)

    def stream(pipeline=zstd, version=22, threads=2, var=True, datatype=Datatype.STRING_UTF8):
        return FilterPlan(pipeline, datatype=datatype, version=version, cell_size=datatype.size).stream(
            threads=threads, var=var)
    assert stream() is not None and stream(version=11) is not None
    assert stream(var=False, datatype=Datatype.UINT64, version=5) is not None
    assert stream(version=10) is None and stream(var=False, datatype=Datatype.UINT64, version=4) is None
    assert stream(pipeline=rle) is None and stream(threads=1) is None
    assert stream(pipeline=_pipeline(FilterType.DICTIONARY)) is None
