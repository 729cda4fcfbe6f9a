"""The versioned spec core: generic tiles, tiles and filter pipelines, on the spec's bytes and the corpus."""

import struct
import zlib

import numpy as np
import pytest
from construct import Container, Int64ul
from hypothesis import given, settings
from hypothesis import strategies as st

from corpus import CORPUS, files
from tdbformat import FormatError, VersionError
from tdbformat.structs import DataFile, Filter, FilterPipeline, GenericTile, GenericTileHeader
from tdbformat.enums import Compressor, Datatype, EncryptionType, FilterType
from tdbformat.numpy_array import CountedNumpy
from tdbformat.testing.strategies import filter_pipelines, filters, generic_tiles, tiles
from tdbformat.structs.tile import Tile
from tdbformat.versions import KNOWN_VERSIONS, LATEST, between, since, until

from tdbformat.fields import Section, Struct

GENERIC_TILE_DIRS = ("__schema", "__meta", "__group", "__enumerations")


def generic_tile_files():
    """Every corpus file that is one generic tile (fragment metadata files hold several: see test_fragment)."""
    out = []
    for p in files(CORPUS):
        if p.parent.name in GENERIC_TILE_DIRS and not p.name.endswith(".vac") or p.name == "__array_schema.tdb":
            out.append(p)
    return out


def data_files():
    skip = {"__fragment_metadata.tdb", "__array_schema.tdb", "__lock.tdb", "__tiledb_group.tdb"}
    return [p for p in files(CORPUS) if p.suffix == ".tdb" and p.name not in skip
            and p.parent.name.startswith("__") and p.parent.name not in GENERIC_TILE_DIRS]


PRE_V1 = "dense_array_v1_3_0"  # written by TileDB 1.3, before generic tiles existed


# -- the worked example of REFERENCE.md §16, built by hand ------------------------------------------

def spec_example(payload: bytes, version: int = 23) -> bytes:
    packed = zlib.compress(payload, 1)
    pipeline = struct.pack("<IIBIBi", 65536, 1, 1, 5, 1, 1)
    chunk_md = struct.pack("<IIII", 0, 1, len(payload), len(packed))
    tile = struct.pack("<QIII", 1, len(payload), len(packed), 16) + chunk_md + packed
    header = struct.pack("<IQQBQBI", version, len(tile), len(payload), 4, 1, 0, len(pipeline))
    return header + pipeline + tile


def test_generic_tile_matches_the_spec_example():
    payload = bytes(range(256)) * 3
    data = spec_example(payload)
    gt = GenericTile.parse(data)
    assert (gt.version, gt.tile_size, gt.datatype, gt.cell_size) == (23, len(payload), Datatype.CHAR, 1)
    assert gt.persisted_size == len(data) - 34 - 18
    assert gt.filter_pipeline_size == 18
    assert gt.filter_pipeline.filters[0].type == FilterType.GZIP
    assert gt.filter_pipeline.filters[0].options == Container(compressor=Compressor.GZIP, level=1)
    assert gt.tile.chunks[0].unfiltered_size == len(payload)
    assert GenericTile.build(gt) == data
    header = GenericTileHeader.parse(data)
    assert header.persisted_size == gt.persisted_size and header.encryption_type == EncryptionType.NO_ENCRYPTION


def test_generic_tile_payload_is_filtered_like_tiledb():
    """A fresh generic tile of a payload is exactly TileDB's (GZIP level 1, one chunk per 64 KiB)."""
    from tdbformat.structs.generic_tile import generic_tile
    from construct import GreedyBytes
    raw = Section("raw payload", "generic_tile.md", generic_tile(Struct("data" / GreedyBytes)))
    payload = b"tiledb" * 100
    assert raw.build({"data": payload}) == spec_example(payload)
    assert raw.parse(spec_example(payload)).data == payload


def test_a_small_payloads_fresh_tile_is_kept_and_stays_tiledbs(monkeypatch):
    """New tiles of small unencrypted payloads are kept (most sections of a small write's fragment metadata are the
    same from write to write): a second build is a hit, and every build is the spec's bytes for its version and
    the uncached path's for its chunk bound; larger payloads and encrypted tiles are not kept."""
    from construct import GreedyBytes
    from tdbformat.structs import generic_tile as G
    raw = Section("raw payload", "generic_tile.md", G.generic_tile(Struct("data" / GreedyBytes)))
    payload = b"kept" * 150
    G._default_tile.cache_clear()
    assert raw.build({"data": payload}) == raw.build({"data": payload}) == spec_example(payload, LATEST)
    assert raw.build({"data": payload}, version=15) == spec_example(payload, 15)
    small_chunks = raw.build({"data": payload}, max_chunk=192)
    assert G._default_tile.cache_info()[:2] == (1, 3)  # (hits, misses): version and chunk bound are in its key
    raw.build({"data": payload * 2})  # 1,200 bytes: over the bound
    raw.build({"data": payload}, key=b"k" * 32)  # encrypted: its IVs are random
    assert G._default_tile.cache_info()[:2] == (1, 3)
    monkeypatch.setattr(G, "_SMALL", -1)
    assert raw.build({"data": payload}, max_chunk=192) == small_chunks


# -- the corpus -------------------------------------------------------------------------------------

def test_every_corpus_generic_tile_round_trips():
    found = generic_tile_files()
    assert len(found) > 600
    for p in found:
        data = p.read_bytes()
        if PRE_V1 in str(p):
            with pytest.raises(FormatError):
                GenericTile.parse(data)
            continue
        gt = GenericTile.parse(data)
        assert gt.persisted_size + 34 + gt.filter_pipeline_size == len(data), p
        assert GenericTile.build(gt) == data, p


def test_every_corpus_data_file_round_trips():
    found = data_files()
    assert len(found) > 1000
    for p in found:
        data = p.read_bytes()
        if PRE_V1 in str(p):
            continue
        tiles_ = DataFile.parse(data)
        assert sum(8 + sum(12 + len(c.metadata) + len(c.data) for c in t.chunks) for t in tiles_) == len(data)
        assert DataFile.build(tiles_) == data, p


def test_experimental_version_is_kept():
    p = CORPUS / "historic/arrays/experimental_array_vUINT32_MAX"
    schema = next(p.glob("__schema/*"))
    gt = GenericTile.parse(schema.read_bytes())
    assert gt.version == 2**32 - 1
    assert GenericTile.build(gt) == schema.read_bytes()


# -- filter pipelines -------------------------------------------------------------------------------

def test_filter_pipeline_bytes_from_the_spec():
    data = bytes.fromhex("00000100" "01000000" "01" "05000000" "01" "01000000")
    pipe = FilterPipeline.parse(data, version=1)
    assert pipe == Container(max_chunk_size=65536, num_filters=1,
                             filters=[Container(type=FilterType.GZIP, options_size=5,
                                                options=Container(compressor=Compressor.GZIP, level=1))])
    assert FilterPipeline.build(pipe, version=1) == data


@pytest.mark.parametrize("version, size", [(19, 5), (20, 6)])
def test_double_delta_reinterpret_arrives_in_v20(version, size):
    opts = b"\x06" + struct.pack("<i", -1) + (b"\x11" if version >= 20 else b"")
    f = Filter.parse(b"\x06" + struct.pack("<I", size) + opts, version=version)
    assert f.options_size == size
    assert f.options.reinterpret_datatype == (Datatype.ANY if version >= 20 else None)


def test_options_size_must_match_the_layout():
    data = b"\x01" + struct.pack("<I", 6) + b"\x01" + struct.pack("<i", 1) + b"\x00"
    with pytest.raises(FormatError) as e:
        FilterPipeline.parse(struct.pack("<II", 65536, 1) + data, version=23)
    assert "GZIP" in str(e.value) and "6" in str(e.value) and "5" in str(e.value)


def test_unknown_filter_type_is_refused():
    with pytest.raises(FormatError, match="not a known FilterType"):
        FilterPipeline.parse(struct.pack("<IIBI", 65536, 1, 99, 0), version=23)


def test_webp_options_have_two_padding_bytes():
    opts = struct.pack("<fBBHH", 100.0, 3, 1, 16, 64) + b"\x00\x00"
    f = Filter.parse(b"\x12" + struct.pack("<I", 12) + opts, version=16)
    assert f.options.quality == 100.0 and f.options.lossless and f.options.x_extent == 64
    assert Filter.build(f, version=16)[5:] == opts


def test_field_given_at_the_wrong_version_is_refused():
    f = Container(type=FilterType.DELTA, options=Container(compressor=Compressor.DELTA, level=0,
                                                            reinterpret_datatype=Datatype.INT32))
    with pytest.raises(VersionError) as e:
        Filter.build(f, version=18)
    assert "reinterpret_datatype" in str(e.value) and "v19+" in str(e.value)


# -- version gates ----------------------------------------------------------------------------------

def test_version_helpers_record_their_bounds():
    assert [v for v in KNOWN_VERSIONS if since(7, Int64ul).present(v)] == list(range(7, LATEST + 1))
    assert [v for v in KNOWN_VERSIONS if until(5, Int64ul).present(v)] == [1, 2, 3, 4]
    assert [v for v in KNOWN_VERSIONS if between(3, 5, Int64ul).present(v)] == [3, 4]


def test_missing_version_is_an_error():
    with pytest.raises(FormatError, match="pass version="):
        Filter.parse(b"\x13" + struct.pack("<I", 6) + b"\x08" + struct.pack("<i", 0) + b"\x00")


# -- the numpy construct ----------------------------------------------------------------------------

def test_counted_numpy_parses_little_endian_u64():
    data = struct.pack("<Q3Q", 3, 1, 2**40, 7)
    v = CountedNumpy("<u8").parse(data)
    assert v.num == 3 and v.data.tolist() == [1, 2**40, 7]
    assert CountedNumpy("<u8").build({"data": np.array([1, 2**40, 7], "<u8")}) == data


def test_numpy_count_is_checked_before_reading():
    with pytest.raises(FormatError, match="only 8 are left"):
        Section("offsets", "fragment.md", CountedNumpy("<u8")).parse(struct.pack("<QQ", 2**62, 5))


# -- properties -------------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(st.data())
def test_filter_pipelines_round_trip(data):
    version = data.draw(st.sampled_from(KNOWN_VERSIONS))
    value = data.draw(filter_pipelines(version))
    blob = FilterPipeline.build(value, version=version)
    parsed = FilterPipeline.parse(blob, version=version)
    assert parsed.max_chunk_size == value.max_chunk_size
    assert [(f.type, f.options) for f in parsed.filters] == [(f.type, f.options) for f in value.filters]
    assert FilterPipeline.build(parsed, version=version) == blob


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_filters_round_trip(data):
    version = data.draw(st.sampled_from(KNOWN_VERSIONS))
    value = data.draw(filters(version))
    parsed = Filter.parse(Filter.build(value, version=version), version=version)
    assert (parsed.type, parsed.options) == (value.type, value.options)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_generic_tiles_round_trip(data):
    version = data.draw(st.sampled_from(KNOWN_VERSIONS))
    value = data.draw(generic_tiles(version))
    blob = GenericTile.build(value)
    parsed = GenericTile.parse(blob)
    for k in ("version", "datatype", "cell_size", "encryption_type"):
        assert parsed[k] == value[k]
    assert parsed.tile_size == sum(c.unfiltered_size for c in value.tile.chunks)
    assert [(c.unfiltered_size, c.metadata, c.data) for c in parsed.tile.chunks] == \
        [(c.unfiltered_size, c.metadata, c.data) for c in value.tile.chunks]
    assert GenericTile.build(parsed) == blob


@settings(max_examples=50, deadline=None)
@given(tiles)
def test_tiles_round_trip(value):
    blob = Tile.build(value)
    assert [(c.unfiltered_size, c.metadata, c.data) for c in Tile.parse(blob).chunks] == \
        [(c.unfiltered_size, c.metadata, c.data) for c in value.chunks]


def test_read_tile_agrees_with_the_declaration():
    """The bulk reader of data tiles gives what the Tile declaration parses, on every corpus data tile."""
    from tdbformat.structs.tile import read_tile
    for p in data_files():
        if PRE_V1 in str(p):
            continue
        data, pos = p.read_bytes(), 0
        while pos < len(data):
            declared = Tile.parse(data[pos:])
            size = 8 + sum(12 + len(c.metadata) + len(c.data) for c in declared.chunks)
            fast = read_tile(data[pos:pos + size], pos)
            assert fast.num_chunks == declared.num_chunks
            assert [(c.unfiltered_size, bytes(c.metadata), bytes(c.data)) for c in fast.chunks] == \
                [(c.unfiltered_size, c.metadata, c.data) for c in declared.chunks]
            for cut in (0, 7, 8 + 11, size - 1):
                if cut < size:
                    with pytest.raises(FormatError):
                        read_tile(data[pos:pos + cut], pos)
            pos += size
