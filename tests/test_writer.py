"""The writer: arrays created and written by tdbformat at every format version open in TileDB-Py (the oracle)
and read back equal; v23 arrays read back with our reader and every file rebuilds byte for byte; corpus
fragments rewritten from their own cells equal TileDB's bytes; a failed write leaves the array as it was."""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import tiledb

import tdbformat
from tdbformat.array.create import create, schema_at
from tdbformat.array.writer import open_writer, write
from tdbformat import parse_file
from tdbformat.directory import FRAGMENT_METADATA, load_schemas
from tdbformat.storage import LocalStorage, storage_for
from tdbformat.enums import FilterType
from tdbformat.structs.fragment import SECTIONS, data_files
from tdbformat.structs.names import parse_timestamped_name
from oracle import assert_same, tiledb_ctx

CORPUS = Path(__file__).parent / "data" / "corpus"
KEY = "0123456789abcdeF0123456789abcdeF"  # the corpus's encrypted arrays (truth.json "key")


def py_schema(tmp_path, schema, name="src"):
    """A schema made by TileDB-Py, as ``ArraySchema.parse`` reads it from the file TileDB wrote."""
    uri = str(tmp_path / name)
    tiledb.Array.create(uri, schema)
    storage, root = storage_for(uri)
    return load_schemas(storage, root)[0][1]


def dense_schema(tmp_path, nullable=True):
    dims = [tiledb.Dim("r", domain=(1, 8), tile=4, dtype=np.int32),
            tiledb.Dim("c", domain=(1, 6), tile=3, dtype=np.int32)]
    attrs = [tiledb.Attr("i", dtype=np.int32), tiledb.Attr("f", dtype=np.float64, filters=[tiledb.ZstdFilter()]),
             tiledb.Attr("s", dtype=str, var=True, filters=[tiledb.GzipFilter()])]
    if nullable:
        attrs.append(tiledb.Attr("n", dtype=np.int64, nullable=True, filters=[tiledb.LZ4Filter()]))
    return py_schema(tmp_path, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs), f"dense{nullable}")


def dense_data(rng, shape, nullable):
    data = {"i": rng.integers(-1000, 1000, shape).astype(np.int32), "f": rng.random(shape),
            "s": np.array(["x" * int(k) + str(k) for k in rng.integers(0, 6, int(np.prod(shape)))],
                          object).reshape(shape)}
    if nullable:
        data["n"] = np.ma.masked_array(rng.integers(0, 99, shape), mask=rng.random(shape) < 0.3)
    return data


@pytest.mark.parametrize("version", range(1, 23))
def test_dense_writes_at_every_version_read_back_in_tiledb_py(tmp_path, version):
    rng = np.random.default_rng(version)
    nullable = version >= 7
    schema = dense_schema(tmp_path, nullable)
    path = str(tmp_path / "a")
    create(path, schema, version)
    whole, part = dense_data(rng, (8, 6), nullable), dense_data(rng, (3, 2), nullable)
    with open_writer(path, timestamp=1) as A:
        A[:] = whole
    with open_writer(path, timestamp=2) as A:
        A[3:6, 2:4] = part  # half-open coordinates: rows 3-5, columns 2-3
    with tiledb.open(path) as A:
        got = A[:]
    for name, values in whole.items():
        want = values.copy()
        want[2:5, 1:3] = part[name]
        if isinstance(want, np.ma.MaskedArray):
            assert (np.ma.getmaskarray(got[name]) == want.mask).all()
            assert (got[name][~want.mask] == want[~want.mask]).all()
        else:
            assert got[name].tolist() == want.tolist(), name


def sparse_schema(tmp_path, string_dim, nullable, y_dtype=np.int16):
    dims = [tiledb.Dim("x", domain=(0, 999), tile=100, dtype=np.int64),
            tiledb.Dim("y", dtype="ascii") if string_dim else tiledb.Dim("y", domain=(-50, 50), tile=10, dtype=y_dtype)]
    attrs = [tiledb.Attr("f", dtype=np.float32, filters=[tiledb.ByteShuffleFilter(), tiledb.ZstdFilter()]),
             tiledb.Attr("s", dtype=str, var=True), tiledb.Attr("n", dtype=np.uint16, nullable=nullable)]
    return py_schema(tmp_path, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=True, capacity=7),
                     f"sparse{string_dim}{nullable}")


@pytest.mark.parametrize("version", range(1, 23))
def test_sparse_writes_at_every_version_read_back_in_tiledb_py(tmp_path, version):
    rng = np.random.default_rng(version)
    string_dim, nullable = version >= 5, version >= 7
    schema = sparse_schema(tmp_path, string_dim, nullable, np.int16 if version >= 5 else np.int64)  # one type before v5
    path = str(tmp_path / "a")
    create(path, schema, version)
    n = 60
    x = rng.choice(1000, n, replace=False)
    y = np.array([f"k{k}" for k in rng.integers(0, 10**6, n)], object) if string_dim else rng.integers(-50, 51, n)
    f = rng.random(n).astype(np.float32)
    s = np.array(["a" * int(k) for k in rng.integers(0, 5, n)], object)
    nv = np.ma.masked_array(np.arange(n, dtype=np.uint16), mask=np.arange(n) % 3 == 0) if nullable else \
        np.arange(n, dtype=np.uint16)
    with open_writer(path, timestamp=1) as A:
        A[x, y] = {"f": f, "s": s, "n": nv}
    with tiledb.open(path) as A:
        got = A.query(order="U")[:]
    key = (lambda a, b: (int(a), b if string_dim else int(b)))
    got_cells = {key(a, b): (ff, ss, nn) for a, b, ff, ss, nn in zip(got["x"], got["y"], got["f"], got["s"], got["n"])}
    want = {key(a, b.encode() if string_dim else b): (ff, ss, nn) for a, b, ff, ss, nn
            in zip(x, y, f, s, np.ma.getdata(nv))}
    assert set(got_cells) == set(want)
    masked = set(np.flatnonzero(np.ma.getmaskarray(nv)).tolist())
    for i, k in enumerate(want):
        assert got_cells[k][:2] == want[k][:2]
        assert (got_cells[k][2] is np.ma.masked) if i in masked else got_cells[k][2] == want[k][2]


def test_encrypted_write_reads_in_tiledb_py_only_with_the_key(tmp_path):
    schema = dense_schema(tmp_path, True)
    path = str(tmp_path / "enc")
    create(path, schema, 22, key=KEY)
    data = dense_data(np.random.default_rng(0), (8, 6), True)
    write(path, data, key=KEY, timestamp=5)
    with tiledb.open(path, key=KEY) as A:
        assert A[:]["i"].tolist() == data["i"].tolist()
    with pytest.raises(tiledb.TileDBError):
        tiledb.open(path)


def test_v23_reads_back_and_every_file_rebuilds_byte_for_byte(tmp_path):
    for case in ("dense_2d_multiattr", "sparse_var_string_dim"):
        src = tdbformat.open_array(CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / case / "array")
        path = tmp_path / case
        create(path, src.schema, 23)
        cells = src.read()
        dims = [d.name for d in tdbformat.dimensions(src.schema)]
        attrs = {k: v for k, v in cells.items() if k not in dims}
        write(path, attrs, coords=None if src.schema.array_type == 0 else [cells[d] for d in dims], timestamp=7)
        got = tdbformat.open_array(path).read()
        for name, values in cells.items():
            assert np.ma.getdata(got[name]).tolist() == np.ma.getdata(values).tolist(), name
            assert (np.ma.getmaskarray(got[name]) == np.ma.getmaskarray(values)).all(), name
        files = [p for p in glob.glob(f"{path}/**", recursive=True) if os.path.isfile(p)]
        assert any(p.endswith("_23.wrt") for p in files)
        for p in files:
            assert tdbformat.parse_file(p).build() == Path(p).read_bytes(), p


def test_v23_sparse_fragment_carries_the_tile_global_order_bounds(tmp_path):
    schema = sparse_schema(tmp_path, True, True)
    path = tmp_path / "a"
    create(path, schema, 23)
    x = np.array([5, 1, 9, 1])
    y = np.array(["b", "a", "c", "z"], object)
    write(path, {"f": np.ones(4, np.float32), "s": np.array(["", "q", "r", "s"], object),
                 "n": np.arange(4, dtype=np.uint16)},
          coords=(x, y), timestamp=3)
    fm = tdbformat.open_array(path).fragments[0].metadata
    # tiles of 7 cells: one tile; global order on x (extent 100) then y: (1,a) (1,z) (5,b) (9,c)
    assert fm.tile_global_order_mins[0].fixed.tolist() == [1]
    assert fm.tile_global_order_maxes[0].fixed.tolist() == [9]
    assert bytes(fm.tile_global_order_mins[1].var) == b"a" and bytes(fm.tile_global_order_maxes[1].var) == b"c"


# ---------------------------------------------------------------------------------------------------------
# Byte fidelity: a corpus fragment rewritten from its own cells, schema, timestamp and uuid


def _chunk_bound(folder: Path, array) -> int:
    """The writer's chunk bound the fragment was made with (not stored): the first chunk of a tile of several
    chunks (192 bytes in the tiledb-py 0.19-0.25 wheels), in a data file or a metadata section; else 64 KiB."""
    for f in sorted(folder.glob("a*.tdb")):
        if f.stem.endswith(("_var", "_validity")):  # var data before v11 was chunked by the writer's buffer
            continue
        data = f.read_bytes()
        if len(data) > 8 and int.from_bytes(data[:8], "little") > 1:
            return int.from_bytes(data[8:12], "little")
    fm = array.fragments[0].metadata
    for name in ("tile_offsets", "tile_mins", "tile_maxes", "tile_sums", "fragment_summary"):
        for i in range(len(getattr(fm, name) or ()) if name != "fragment_summary" else 1):
            slot = next(s for s in SECTIONS if s.name == name)
            if slot.offsets(fm.footer) is None:
                continue
            chunks = fm._payload(slot, i)["_generic_tile"].tile.chunks
            if len(chunks) > 1 and chunks[0].unfiltered_size == 192:  # (old writers chunk sections otherwise too)
                return 192
    return 65536


def _rewrite(src: Path, dst: Path, key=None, index=0, written=None):
    """Rewrite fragment ``index`` of the corpus array ``src`` into a copy of its schema at ``dst``, from its cells
    as read, or ``written`` (the attribute values the corpus writer gave TileDB, where a lossy filter keeps
    less): returns (TileDB's fragment folder, ours)."""
    array = tdbformat.open_array(src, key=key)
    frag = array.fragments[index]
    ts = parse_timestamped_name(frag.name)
    schema_dir = src / "__schema"
    dst.mkdir()
    if schema_dir.is_dir():
        shutil.copytree(schema_dir, dst / "__schema")
    else:
        shutil.copy(src / "__array_schema.tdb", dst)
    theirs = Path(next(p for p in glob.glob(f"{src}/**/{frag.name}", recursive=True) if os.path.isdir(p)))
    dims = tdbformat.dimensions(array.schema)
    ned = frag.metadata.non_empty_domain
    ranges = None if frag.metadata.dense is False else {d.name: (int(lo), int(hi)) for d, (lo, hi) in zip(dims, ned)}
    cells = array.read(timestamp=(ts.t1, ts.t1), ranges=ranges)
    attrs = written or {k: v for k, v in cells.items() if k not in {d.name for d in dims}}
    writer = open_writer(dst, timestamp=ts.t1, key=key, max_chunk_size=_chunk_bound(theirs, array))
    if frag.metadata.dense:
        writer.write(attrs, subarray=[(int(lo), int(hi)) for lo, hi in ned], uuid=ts.uuid)
    else:
        writer.write(attrs, coords=[cells[d.name] for d in dims], uuid=ts.uuid)
    ours = Path(next(p for p in glob.glob(f"{dst}/**/{frag.name}", recursive=True) if os.path.isdir(p)))
    return theirs, ours


#: The cells the corpus writer gave TileDB where the file keeps less (a lossy filter): float scale stores
#: round((x - 10) / 0.01), and its tile statistics are of x, np.round(np.linspace(-50, 50, 1000), 2) (the
#: statistics TileDB stored are those of these values to the last bit: min, max and the sum added in order).
_WRITTEN = {"filter_float_scale": lambda: {"a": np.round(np.linspace(-50, 50, 1000), 2)}}


# (case, reason the bytes legitimately differ): README "Byte fidelity" table
_CODEC_DIFFERS = {"filter_lz4", "filter_pipeline_bwr_byteshuffle_zstd", "filter_webp",
                  "filter_pipeline_delta_bitshuffle_checksum_lz4"}
_FIDELITY = ["v22_tiledb-py-0.36.1_core-2.30.0", "v22_tiledb-py-0.31.1_core-2.25.0", "v21_tiledb-py-0.25.1_core-2.19.2",
             "v20_tiledb-py-0.23.5_core-2.17.5", "v16_tiledb-py-0.19.1_core-2.13.1", "v14_c-api_core-2.10.4",
             "v12_c-api_core-2.8.3", "v15_c-api_core-2.11.4", "v23_c-api_core-2.31-dev-28aeb653"]
_CASES = ["filter_float_scale", "filter_gzip", "filter_zstd", "filter_rle_int", "filter_rle_string", "filter_dictionary", "filter_xor",
          "filter_bit_width_reduction", "filter_bitshuffle", "filter_byteshuffle", "filter_checksum_sha256",
          "filter_double_delta", "filter_positive_delta", "filter_delta", "filter_bzip2", "sparse_var_string_dim",
          "sparse_2d_rtree", "enumerations", "current_domain"]


def _fidelity_cases():
    for tag in _FIDELITY:
        for case in _CASES:
            src = CORPUS / tag / case / "array"
            if src.is_dir():
                yield pytest.param(src, id=f"{tag.split('_')[0]}-{tag.split('_')[1]}-{case}")


@pytest.mark.parametrize("src", list(_fidelity_cases()))
def test_rewritten_corpus_fragment_is_byte_identical(tmp_path, src):
    written = _WRITTEN.get(src.parent.name)
    theirs, ours = _rewrite(src, tmp_path / "a", written=written and written())
    assert sorted(os.listdir(ours)) == sorted(os.listdir(theirs))
    for name in sorted(os.listdir(theirs)):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name


@pytest.mark.parametrize("case", sorted(_CODEC_DIFFERS - {"filter_webp"}))
def test_rewritten_fragment_with_a_differing_codec_decodes_equal(tmp_path, case):
    src = CORPUS / "v23_c-api_core-2.31-dev-28aeb653" / case / "array"
    _rewrite(src, tmp_path / "a")
    want = tdbformat.open_array(src).read()
    got = tdbformat.open_array(tmp_path / "a").read()
    for name, values in want.items():
        assert np.ma.getdata(got[name]).tolist() == np.ma.getdata(values).tolist(), name


@pytest.mark.parametrize("tag", ["v17_tiledb-py-0.20.0_core-2.14.0", "v18_tiledb-py-0.21.6_core-2.15.4",
                                 "v19_tiledb-py-0.22.3_core-2.16.3", "v21_tiledb-py-0.25.1_core-2.19.2",
                                 "v22_tiledb-py-0.31.1_core-2.25.0", "v22_tiledb-py-0.36.1_core-2.30.0"])
def test_rewritten_webp_images_are_byte_identical_where_libwebp_agrees(tmp_path, tag):
    """Lossless WebP at quality 100, as TileDB encodes it (at its fixed lossless quality): the libwebp of the
    webp package makes TileDB 2.14-2.25's bytes; 2.30's libwebp makes others, which decode the same."""
    pytest.importorskip("webp")
    src = CORPUS / tag / "filter_webp" / "array"
    theirs, ours = _rewrite(src, tmp_path / "a")
    same = {n: (ours / n).read_bytes() == (theirs / n).read_bytes() for n in os.listdir(theirs)}
    assert same == {n: "2.30" not in tag or n != "a0.tdb" for n in os.listdir(theirs)}
    assert tdbformat.open_array(tmp_path / "a").read()["rgb"].tolist() == tdbformat.open_array(src).read()["rgb"].tolist()


_LIBRARY_CODECS = {FilterType.ZSTD, FilterType.LZ4, FilterType.WEBP}
#: TileDB's C API releases before v16 (TileDB 1.4-2.11): var data chunked by the buffer the writer allocated
#: (2.0-2.4), dense tile statistics over the padding too (2.7-2.11)
_OLD_TAGS = sorted(p.name for p in CORPUS.glob("v*_c-api_*") if int(p.name[1:p.name.index("_")]) < 16)
_OLD_CASES = ["dense_2d_multiattr", "fill_values", "sparse_2d_rtree", "sparse_var_string_dim", "filter_rle_string",
              "filter_zstd", "filter_gzip", "filter_dictionary", "filter_bit_width_reduction", "filter_double_delta"]


def _codec_files(fm) -> set:
    """The data files of a fragment whose bytes a codec library makes (README "Byte fidelity"): a pipeline with
    zstd, LZ4 or WebP (the offsets pipeline for the offsets file of a var field)."""
    def coded(pipeline):
        return any(FilterType(f.type) in _LIBRARY_CODECS for f in pipeline.filters)
    out = set()
    for i, info in enumerate(fm.index_fields):
        fixed, var, validity = data_files(fm, i)
        if coded(info.filters):
            out.add(var if info.var else fixed)
        if info.var and coded(fm.schema.cell_var_offsets_filters):
            out.add(fixed)
        if info.nullable and coded(fm.schema.cell_validity_filters):
            out.add(validity)
    return out


@pytest.mark.parametrize("src", [pytest.param(CORPUS / t / c / "array", id=f"{t.split('_')[0]}-{c}")
                                 for t in _OLD_TAGS for c in _OLD_CASES if (CORPUS / t / c / "array").is_dir()])
def test_rewritten_fragment_of_an_old_release_is_byte_identical_but_for_codecs(tmp_path, src):
    """Every fragment of the case: each file byte for byte, but a file a codec library made (then its metadata
    file too) reads back the same cells."""
    array = tdbformat.open_array(src)
    for index, frag in enumerate(array.fragments):
        theirs, ours = _rewrite(src, tmp_path / f"a{index}", index=index)
        assert sorted(os.listdir(ours)) == sorted(os.listdir(theirs))
        differ = {n for n in os.listdir(theirs) if (ours / n).read_bytes() != (theirs / n).read_bytes()}
        codec = _codec_files(frag.metadata) & differ
        assert differ - codec - {"__fragment_metadata.tdb"} == set(), frag.name
        if not codec:
            assert not differ, frag.name
            continue
        ts = parse_timestamped_name(frag.name)
        ned = frag.metadata.non_empty_domain
        ranges = None if not frag.metadata.dense else {
            d.name: (int(lo), int(hi)) for d, (lo, hi) in zip(tdbformat.dimensions(array.schema), ned)}
        want = array.read(timestamp=(ts.t1, ts.t1), ranges=ranges)
        got = tdbformat.open_array(tmp_path / f"a{index}").read(ranges=ranges)
        for name, values in want.items():
            assert np.ma.getdata(got[name]).tolist() == np.ma.getdata(values).tolist(), (frag.name, name)


# ---------------------------------------------------------------------------------------------------------
# Atomic commits, and what the writer refuses


@pytest.mark.parametrize("version", [4, 9, 22])
def test_a_write_failing_before_its_commit_leaves_the_array_as_it_was(tmp_path, monkeypatch, version):
    schema = dense_schema(tmp_path, version >= 7)
    path = str(tmp_path / "a")
    create(path, schema, version)
    first = dense_data(np.random.default_rng(1), (8, 6), version >= 7)
    write(path, first, timestamp=1)

    def fail(self, p, data):
        raise tdbformat.FormatError("injected failure", file=str(p))
    monkeypatch.setattr(LocalStorage, "commit", fail)
    with pytest.raises(tdbformat.FormatError, match="injected"):
        write(path, dense_data(np.random.default_rng(2), (8, 6), version >= 7), timestamp=2)
    monkeypatch.undo()
    with tiledb.open(path) as A:
        assert A[:]["i"].tolist() == first["i"].tolist()
    third = dense_data(np.random.default_rng(3), (8, 6), version >= 7)
    write(path, third, timestamp=3)
    with tiledb.open(path) as A:
        assert A[:]["i"].tolist() == third["i"].tolist()


def test_string_tile_statistics_equal_tiledb_pys(tmp_path):
    """The min and max of ASCII and fixed CHAR tiles (NULs inside, and at the end of fixed cells; prefixes,
    bytes above 0x7f, null cells skipped, a tile of nulls only): our write's fragment metadata is TileDB-Py's,
    byte for byte."""
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 39), tile=10, dtype=np.int64))
    attrs = [tiledb.Attr("s", dtype="ascii", var=True, nullable=True), tiledb.Attr("c", dtype=np.dtype("S3"))]
    tiledb.Array.create(str(tmp_path / "theirs"), tiledb.ArraySchema(domain=dom, attrs=attrs))
    shutil.copytree(tmp_path / "theirs", tmp_path / "ours")
    rng = np.random.default_rng(0)
    # (TileDB-Py cuts the trailing NULs of var cells it writes: those only in the fixed cells)
    pool = [b"", b"a", b"ab", b"\xff", b"b\0c", b"zz", b"a\0\0\0\0\0\0\0\0b", b"\0x", b"a\0", b"\0"]
    strings = np.array([pool[i] for i in rng.integers(0, 8, 40)], object)
    valid = rng.random(40) < 0.6
    valid[20:30] = False
    chars = np.array([pool[i][:3] for i in rng.integers(0, 10, 40)], "S3")
    with tiledb.open(str(tmp_path / "theirs"), "w", timestamp=7) as A:
        A[:] = {"s": np.where(valid, strings, None), "c": chars}  # (TileDB-Py's nulls of var cells: None)
    under = np.where(valid, strings, b"None")  # (what TileDB-Py stores in a null cell it was given as None)
    write(str(tmp_path / "ours"), {"s": np.ma.masked_array(under, ~valid), "c": chars}, timestamp=7)
    theirs, ours = (next((tmp_path / side).rglob(FRAGMENT_METADATA)) for side in ("theirs", "ours"))
    assert parse_file(ours).value.tile_maxes[0].var == parse_file(theirs).value.tile_maxes[0].var
    assert ours.read_bytes() == theirs.read_bytes()


@pytest.mark.parametrize("filters", [[tiledb.RleFilter()], [tiledb.DictionaryFilter()],
                                     [tiledb.RleFilter(), tiledb.ZstdFilter()]], ids=["rle", "dictionary", "rle+zstd"])
def test_string_rle_and_dictionary_tiles_of_str_cells_are_tiledb_pys(tmp_path, filters):
    """Cells given as str, which the writer encodes with a NUL after each and string RLE and dictionary read in
    place: the data file and the fragment metadata (tile sizes, min and max, which must not count the NULs)
    are TileDB-Py's, byte for byte."""
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 59), tile=20, dtype=np.int64))
    attrs = [tiledb.Attr("s", dtype="ascii", var=True, filters=filters)]
    tiledb.Array.create(str(tmp_path / "theirs"), tiledb.ArraySchema(domain=dom, attrs=attrs))
    shutil.copytree(tmp_path / "theirs", tmp_path / "ours")
    pool = ["", "a", "ab", "abc", "b", "zz", "zz", "z" * 11, "abcdefghij"]
    cells = np.array([pool[i] for i in np.random.default_rng(3).integers(0, len(pool), 60)], object)
    with tiledb.open(str(tmp_path / "theirs"), "w", timestamp=7) as A:
        A[:] = {"s": cells}
    write(str(tmp_path / "ours"), {"s": cells}, timestamp=7)
    for name in (FRAGMENT_METADATA, "a0_var.tdb"):
        theirs, ours = (next((tmp_path / side).rglob(name)) for side in ("theirs", "ours"))
        assert ours.read_bytes() == theirs.read_bytes(), name


def _tiledb_fixed_string_bound(values, cell_val_num, largest):
    """FragmentMetadata::compute_fragment_min_max_sum<char> as TileDB runs it (fragment_metadata.cc): it
    steps through the stored tile values only for tiles not all null."""
    stored = [v or bytes(cell_val_num) for v in values]
    best, k = None, 0
    for v in values:
        if v is not None:
            value, k = stored[k], k + 1
            a, b = (value, best) if largest else (best, value)
            best = value if best is None or next((x - y for x, y in zip(b, a) if x != y or not x), 0) < 0 else best
    return best


@pytest.mark.parametrize("largest", [False, True])
def test_fixed_string_fragment_bounds_step_as_tiledbs_loop(largest):
    """The fragment's min and max of fixed-size strings whose tiles are sometimes all null (None): TileDB
    compares the first values stored, one per tile not all null."""
    from tdbformat.array.fragment_writer import _summary_bound
    from tdbformat.structs.array_schema import FieldInfo
    from tdbformat.enums import Datatype
    info = FieldInfo("c", Datatype.STRING_ASCII, 3, False, True, None)
    rng = np.random.default_rng(4)
    pool = [b"zz\0", b"a\0\0", b"\xff\0\0", b"ab\0", b"b\0c", None]
    for _ in range(200):
        values = [pool[i] for i in rng.integers(0, len(pool), 6)]
        want = _tiledb_fixed_string_bound(values, 3, largest)
        assert _summary_bound(info, values, largest) == (want if want is not None else b""), values


def _threads_schema(tmp_path, sparse):
    """Every kind of field a writer filters tile by tile: fixed cells through chunked codecs, var strings through
    the one-chunk string filters, nullable cells; many tiles."""
    dims = [tiledb.Dim("d", domain=(0, 9999), tile=700, dtype=np.int64)]
    attrs = [tiledb.Attr("dd", dtype=np.int64, filters=[tiledb.DoubleDeltaFilter(), tiledb.ZstdFilter()]),
             tiledb.Attr("sh", dtype=np.float64, filters=[tiledb.ByteShuffleFilter(), tiledb.LZ4Filter()]),
             tiledb.Attr("rle", dtype="ascii", var=True, filters=[tiledb.RleFilter()]),
             tiledb.Attr("dict", dtype="ascii", var=True, filters=[tiledb.DictionaryFilter()]),
             tiledb.Attr("n", dtype=np.int32, nullable=True, filters=[tiledb.ChecksumSHA256Filter()])]
    return py_schema(tmp_path, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=sparse,
                                                  capacity=900), f"threads{sparse}")


@pytest.mark.parametrize("version", [13, 22])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_write_on_any_number_of_threads_makes_the_same_bytes(tmp_path, sparse, version):
    """Tiles are filtered several at once: 1, 2 and 5 threads write byte-identical fragments, which TileDB-Py
    reads back as written."""
    rng = np.random.default_rng(5)
    words = np.array(["", "a", "bb", "ccc-long-enough-for-two-words", "z"], object)
    data = {"dd": np.cumsum(rng.integers(-3, 4, 10000)), "sh": rng.random(10000),
            "rle": words[np.repeat(rng.integers(0, 5, 10000), 3)[:10000]], "dict": words[rng.integers(0, 5, 10000)],
            "n": np.ma.masked_array(rng.integers(0, 99, 10000, dtype=np.int32), mask=rng.random(10000) < 0.3)}
    schema = _threads_schema(tmp_path, sparse)
    coords = {"coords": [rng.permutation(10000)]} if sparse else {}
    folders = []
    create(str(tmp_path / "empty"), schema, version)
    for threads in (1, 2, 5):
        path = tmp_path / f"t{threads}"
        shutil.copytree(tmp_path / "empty", path)  # (one schema, whose name the fragment metadata holds)
        write(str(path), data, timestamp=7, uuid="ab" * 16, threads=threads, **coords)
        folders.append(Path(next(p for p in glob.glob(f"{path}/**/*{'ab' * 16}*", recursive=True) if os.path.isdir(p))))
    assert len(os.listdir(folders[0])) >= 7
    for name in sorted(os.listdir(folders[0])):
        assert {(f / name).read_bytes() for f in folders} == {(folders[0] / name).read_bytes()}, name
    with tiledb.open(str(tmp_path / "t5")) as A:
        got = A.query(order="C")[:]  # (sparse: by coordinate)
    order = np.argsort(coords["coords"][0]) if sparse else np.arange(10000)
    for name, want in data.items():
        values = [v.decode() if isinstance(v, bytes) else v for v in np.ma.getdata(got[name]).tolist()]  # (ASCII)
        assert values == np.ma.getdata(want[order]).tolist(), name
    assert np.ma.getmaskarray(got["n"]).tolist() == data["n"].mask[order].tolist()


@pytest.mark.parametrize("threads", [0, -2, 1.5, True, "2"])
def test_a_thread_count_that_is_not_a_count_is_a_value_error_naming_threads(tmp_path, threads):
    path = str(tmp_path / "a")
    create(path, dense_schema(tmp_path, False), 22)
    with pytest.raises(ValueError, match="threads"):
        write(path, dense_data(np.random.default_rng(0), (8, 6), False), threads=threads)
    assert not os.listdir(tmp_path / "a" / "__fragments")
    with pytest.raises(ValueError, match="threads"):
        tdbformat.open_array(path).read(threads=threads)


def test_a_tile_that_fails_to_filter_fails_the_write_once_no_tile_is_filtering(tmp_path, monkeypatch):
    """A failure in one of the tiles filtered at once reaches the caller after the others have ended (none still
    runs in the background), and nothing commits."""
    import threading
    import time
    from tdbformat.array import fragment_writer
    schema = _threads_schema(tmp_path, False)
    path = str(tmp_path / "a")
    create(path, schema, 22)
    real, running, lock = fragment_writer._Encoder.tile, [0], threading.Lock()

    def tile(self, info, cells, *args):
        with lock:
            running[0] += 1
        try:
            time.sleep(0.02)
            if info.name == "sh" and len(cells) and cells[0] == 2100.0:  # (its fourth tile)
                raise ValueError("this tile cannot be filtered")
            return real(self, info, cells, *args)
        finally:
            with lock:
                running[0] -= 1
    monkeypatch.setattr(fragment_writer._Encoder, "tile", tile)
    sh = np.arange(10000, dtype=np.float64)
    with pytest.raises(ValueError, match="cannot be filtered"):
        write(path, {"dd": np.zeros(10000, np.int64), "sh": sh, "rle": np.full(10000, "a", object),
                     "dict": np.full(10000, "b", object), "n": np.zeros(10000, np.int32)}, threads=3)
    assert running[0] == 0
    assert not glob.glob(f"{path}/__commits/*")


@pytest.mark.parametrize("version", [4, 22])
def test_a_data_file_that_cannot_be_written_fails_the_write_and_leaves_the_array_as_it_was(tmp_path, monkeypatch,
                                                                                          version):
    """Tiles go to their files in a thread of their own: a tile the disk refuses (after the first) still fails
    the write, naming the file, before anything commits."""
    schema = dense_schema(tmp_path, version >= 7)
    path = str(tmp_path / "a")
    create(path, schema, version)
    first = dense_data(np.random.default_rng(1), (8, 6), version >= 7)
    write(path, first, timestamp=1)
    real = LocalStorage.writer

    @contextlib.contextmanager
    def full_disk(self, p):
        with real(self, p) as f:
            class Full:
                calls = 0

                def write(self, data):
                    Full.calls += 1
                    if Full.calls > 1:
                        raise OSError(28, "No space left on device")
                    return f.write(data)
            yield Full()
    monkeypatch.setattr(LocalStorage, "writer", full_disk)
    with pytest.raises(tdbformat.FormatError, match="No space left") as err:
        write(path, dense_data(np.random.default_rng(2), (8, 6), version >= 7), timestamp=2, max_chunk_size=64)
    assert err.value.file is not None and err.value.file.endswith(".tdb")
    monkeypatch.undo()
    with tiledb.open(path) as A:
        assert A[:]["i"].tolist() == first["i"].tolist()


@pytest.mark.parametrize("version, feature, since", [(6, "nullable", 7), (4, "var-sized dimensions", 5),
                                                      (19, "enumerations", 20), (4, "duplicates", 5),
                                                      (16, "the dictionary filter on UTF-8", 17)])
def test_create_refuses_a_feature_the_version_cannot_hold(tmp_path, version, feature, since):
    src = CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0"
    schema = {"nullable": lambda: dense_schema(tmp_path, True),
              "var-sized dimensions": lambda: sparse_schema(tmp_path, True, False),
              "enumerations": lambda: tdbformat.open_array(src / "enumerations" / "array").schema,
              "duplicates": lambda: _with(sparse_schema(tmp_path, False, False, np.int64), allows_dups=True),
              "the dictionary filter on UTF-8": lambda: py_schema(tmp_path, tiledb.ArraySchema(
                  domain=tiledb.Domain(tiledb.Dim("x", domain=(0, 9), dtype=np.int64)), sparse=True,
                  attrs=[tiledb.Attr("s", dtype=str, var=True, filters=[tiledb.DictionaryFilter()])]))}[feature]()
    with pytest.raises(ValueError, match=f"{feature}.*version {since}"):
        create(tmp_path / "a", schema, version)
    assert not (tmp_path / "a").exists()


def _with(schema, **changes):
    schema.update(changes)
    return schema


def test_schema_at_drops_and_adds_version_fields(tmp_path):
    schema = dense_schema(tmp_path, False)
    old = schema_at(schema, 4)
    assert old.domain.domain_type is not None and old.domain.dimensions[0].datatype is None
    assert old.attributes[0].fill_value is None and old.get("allows_dups") is None
    back = schema_at(old, 22)
    assert back.domain.dimensions[0].datatype == schema.domain.dimensions[0].datatype
    assert back.attributes[0].fill_value == schema.attributes[0].fill_value  # TileDB's default fill


def test_bad_arguments_name_the_argument(tmp_path):
    schema = dense_schema(tmp_path, False)
    with pytest.raises(ValueError, match="version"):
        create(tmp_path / "a", schema, 24)
    with pytest.raises(TypeError, match="schema"):
        create(tmp_path / "a", 5)
    create(tmp_path / "a", schema, 22)
    with pytest.raises(ValueError, match="path"):
        create(tmp_path / "a", schema, 22)
    data = dense_data(np.random.default_rng(0), (8, 6), False)
    with pytest.raises(ValueError, match="subarray"):
        write(tmp_path / "a", data, subarray=[(0, 7), (1, 6)])
    with pytest.raises(ValueError, match=r"data\['i'\]"):
        write(tmp_path / "a", dict(data, i=data["i"][:2]))
    with pytest.raises(ValueError, match="missing"):
        write(tmp_path / "a", {"i": data["i"]})
    with pytest.raises(ValueError, match="max_chunk_size"):
        open_writer(tmp_path / "a", max_chunk_size=0)
    with pytest.raises(ValueError, match="uuid"):
        write(tmp_path / "a", data, uuid="xyz")
    with pytest.raises(ValueError, match="timestamp"):
        write(tmp_path / "a", data, timestamp=-1)
    with pytest.raises(TypeError, match=r"data\['i'\]: values of dtype"):
        write(tmp_path / "a", dict(data, i=np.array([["x"] * 6] * 8)))


def test_sparse_duplicates_and_out_of_domain_coordinates_are_refused(tmp_path):
    path = tmp_path / "a"
    create(path, sparse_schema(tmp_path, False, True), 22)
    values = {"f": np.ones(2, np.float32), "s": np.array(["a", "b"], object), "n": np.ones(2, np.uint16)}
    with pytest.raises(ValueError, match="duplicate"):
        write(path, values, coords=(np.array([1, 1]), np.array([2, 2])))
    with pytest.raises(ValueError, match="outside dimension .*'s domain"):
        write(path, values, coords=(np.array([1, 1000]), np.array([2, 2])))
    with pytest.raises(ValueError, match="at least one cell"):
        write(path, {k: v[:0] for k, v in values.items()}, coords=(np.array([], int), np.array([], int)))
    assert not tdbformat.open_array(path).fragments


def _stamped_schema(tmp_path):
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    return py_schema(tmp_path, tiledb.ArraySchema(domain=dom, sparse=True, capacity=3,
                                                  attrs=[tiledb.Attr("a", dtype=np.int32)]), "stamped")


@pytest.mark.parametrize("version", [15, 22])
def test_a_fragment_with_cell_timestamps_reads_in_tiledb_py_as_of_each_time(tmp_path, version):
    """Versions of a cell at 100, 200 and 300 in one fragment spanning them, as consolidation with timestamps
    makes: TileDB-Py reads, as of each time, the cells written by then, the newest version of each."""
    path = tmp_path / "a"
    create(path, _stamped_schema(tmp_path), version, timestamp=50)
    x = np.array([7, 1, 7, 3, 7, 1])
    t = np.array([100, 100, 200, 200, 300, 300])
    write(path, {"a": (x * 1000 + t // 100).astype(np.int32)}, coords=(x,), cell_timestamps=t,
          timestamp=(100, 300))
    frag = tdbformat.open_array(path).fragments[0]
    assert frag.has_timestamps and frag.timestamp_range == (100, 300)
    for when, cells in [(100, {1: 1001, 7: 7001}), (250, {1: 1001, 3: 3002, 7: 7002}),
                        (None, {1: 1003, 3: 3002, 7: 7003})]:
        with tiledb.open(str(path), timestamp=when) as A:
            got = A.query(order="G")[:]
        assert dict(zip(got["x"].tolist(), got["a"].tolist())) == cells, when


def test_cell_timestamps_and_delete_metadata_arguments_are_checked(tmp_path):
    path, schema = tmp_path / "a", _stamped_schema(tmp_path)
    create(path, schema, 14)
    x, a, t = np.array([1, 2]), np.ones(2, np.int32), np.array([5, 6])
    with pytest.raises(ValueError, match="cell_timestamps: 1 values for 2 cells"):
        write(path, {"a": a}, coords=(x,), cell_timestamps=t[:1])
    with pytest.raises(ValueError, match="delete_timestamps: needs format version 15"):
        write(path, {"a": a}, coords=(x,), cell_timestamps=t, delete_timestamps=t, delete_conditions=t)
    with pytest.raises(ValueError, match="cell_timestamps: expected one non-negative integer per cell"):
        write(path, {"a": a}, coords=(x,), cell_timestamps=np.array([-1, 2]))
    with pytest.raises(ValueError, match="processed_conditions: needs format version 16"):
        write(path, {"a": a}, coords=(x,), processed_conditions=["__commits/x.del"])
    create(tmp_path / "b", schema, 3)
    with pytest.raises(ValueError, match="cell_timestamps: needs format version 14"):
        write(tmp_path / "b", {"a": a}, coords=(x,), cell_timestamps=t)
    create(tmp_path / "c", schema, 22)
    with pytest.raises(ValueError, match="delete_timestamps: goes with delete_conditions"):
        write(tmp_path / "c", {"a": a}, coords=(x,), cell_timestamps=t, delete_timestamps=t)
    with pytest.raises(TypeError, match="processed_conditions"):
        write(tmp_path / "c", {"a": a}, coords=(x,), processed_conditions="__commits/x.del")
    create(tmp_path / "d", dense_schema(tmp_path, False), 22)
    with pytest.raises(ValueError, match="cell_timestamps: only sparse fragments"):
        write(tmp_path / "d", dense_data(np.random.default_rng(0), (8, 6), False), cell_timestamps=t)
    for p in (path, tmp_path / "b", tmp_path / "c", tmp_path / "d"):
        assert not tdbformat.open_array(p).fragments


# ---------------------------------------------------------------------------------------------------------
# Properties: hypothesis-made schemas, data and versions, written by us and read back by TileDB-Py

from hypothesis import HealthCheck, Phase, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_NUMERIC = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64",
            "datetime64[D]", "datetime64[ms]"]
_ANY = [("gzip", 1, lambda: tiledb.GzipFilter(level=3)), ("zstd", 1, lambda: tiledb.ZstdFilter()),
        ("lz4", 1, lambda: tiledb.LZ4Filter()), ("bzip2", 1, lambda: tiledb.Bzip2Filter()),
        ("byteshuffle", 1, lambda: tiledb.ByteShuffleFilter()), ("md5", 5, lambda: tiledb.ChecksumMD5Filter()),
        ("sha256", 5, lambda: tiledb.ChecksumSHA256Filter())]
# positive delta is left out: random data decreases, which the filter (TileDB's too) refuses to encode
_INTS = [("bwr", 1, lambda: tiledb.BitWidthReductionFilter()),
         ("ddelta", 1, lambda: tiledb.DoubleDeltaFilter()), ("bitshuffle", 1, lambda: tiledb.BitShuffleFilter()),
         ("delta", 19, lambda: tiledb.DeltaFilter())]
_STRINGS = [("rle", 1, lambda: tiledb.RleFilter()), ("dictionary", 13, lambda: tiledb.DictionaryFilter())]


@st.composite
def _attribute(draw, version, i):
    kind = draw(st.sampled_from([k for k in _NUMERIC if version >= 3 or "datetime" not in k] + ["ascii", "utf8"]))
    string = kind in ("ascii", "utf8")
    nullable = version >= 7 and draw(st.booleans())
    choices = [f for f in _ANY if f[1] <= version]
    if string:  # the dictionary filter takes UTF-8 from v17
        first = [f for f in _STRINGS if max(f[1], 17 if kind == "utf8" and f[0] == "dictionary" else 0) <= version]
    elif kind.startswith("int") or kind.startswith("uint") or (kind.startswith("datetime") and version >= 20):
        first = [f for f in _INTS if f[1] <= version]
    else:
        first = []
    filters = []
    if first and draw(st.booleans()):
        filters.append(draw(st.sampled_from(first)))
    filters += draw(st.lists(st.sampled_from(choices), max_size=2, unique_by=lambda f: f[0]))
    dtype = {"ascii": "ascii", "utf8": str}.get(kind, kind)
    return tiledb.Attr(f"a{i}", dtype=dtype, var=string, nullable=nullable, filters=[f[2]() for f in filters])


def _values(rng, attr, n):
    dt = attr.dtype
    if attr.isvar:
        words = ["", "a", "bb", "ccc", "zz", "héllo"] if dt == np.str_ else ["", "a", "bb", "ccc", "zz"]
        out = np.array([words[k] for k in rng.integers(0, len(words), n)], object)
        return out if dt == np.str_ else np.array([w.encode() for w in out], object)
    if np.dtype(dt).kind == "M":
        return rng.integers(-10**6, 10**6, n).astype(dt)
    if np.dtype(dt).kind == "f":
        return rng.standard_normal(n).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dt)


@settings(max_examples=30, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=st.data(), version=st.integers(1, 22), sparse=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_hypothesis_schemas_and_data_read_back_equal_in_tiledb_py(tmp_path_factory, data, version, sparse, seed):
    tmp = tmp_path_factory.mktemp("prop")
    rng = np.random.default_rng(seed)
    attrs = [data.draw(_attribute(version, i)) for i in range(data.draw(st.integers(1, 3)))]
    order = data.draw(st.sampled_from(["row-major", "col-major"] + (["hilbert"] if sparse and version >= 7 else [])))
    dims = [tiledb.Dim("d0", domain=(0, 19), tile=data.draw(st.integers(1, 20)), dtype=np.int64),
            tiledb.Dim("d1", domain=(-5, 4), tile=data.draw(st.integers(1, 10)), dtype=np.int64)]
    try:
        py = tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=sparse, cell_order=order,
                                tile_order="row-major" if order == "hilbert" else order,
                                capacity=data.draw(st.integers(1, 50)))
        schema = py_schema(tmp, py)
    except tiledb.TileDBError:
        assume(False)
    path = str(tmp / "a")
    key = KEY if data.draw(st.booleans()) else None
    create(path, schema, version, key=key)
    written = []
    for t in (1, 2):
        if sparse:
            n = int(rng.integers(1, 120))
            flat = rng.choice(200, n, replace=False)
            coords = (flat // 10, flat % 10 - 5)
        else:
            lo0, lo1 = int(rng.integers(0, 20)), int(rng.integers(-5, 5))
            hi0, hi1 = int(rng.integers(lo0, 20)), int(rng.integers(lo1, 5))
            coords = (slice(lo0, hi0 + 1), slice(lo1, hi1 + 1))
            n = (hi0 - lo0 + 1) * (hi1 - lo1 + 1)
        values = {}
        for a in attrs:
            v = _values(rng, a, n)
            v = v if sparse else v.reshape(hi0 - lo0 + 1, hi1 - lo1 + 1)
            values[a.name] = np.ma.masked_array(v, mask=rng.random(v.shape) < 0.3) if a.isnullable else v
        with open_writer(path, timestamp=t, key=key) as A:
            A[coords] = values
        written.append((coords, values))
    with tiledb.open(path, key=key) as A:
        got = A.query(order="U")[:] if sparse else A[:]
    _check_against_tiledb(got, written, attrs, sparse)


def _check_against_tiledb(got, written, attrs, sparse):
    """What TileDB-Py read equals the cells written (later fragments win)."""
    if sparse:
        want = {}
        for (x, y), values in written:
            for i, k in enumerate(zip(x.tolist(), y.tolist())):
                want[k] = {a.name: values[a.name][i] for a in attrs}
        cells = {k: {a.name: got[a.name][i] for a in attrs} for i, k in enumerate(zip(got["d0"].tolist(),
                                                                                       got["d1"].tolist()))}
        assert set(cells) == set(want)
        for k, row in want.items():
            for a in attrs:
                w, g = row[a.name], cells[k][a.name]
                assert (g is np.ma.masked) == (w is np.ma.masked), (k, a.name)
                if w is not np.ma.masked:
                    assert g == w or (isinstance(w, float) and np.isnan(w) and np.isnan(g)), (k, a.name, g, w)
        return
    for (s0, s1), values in written[-1:]:
        for a in attrs:
            g, w = got[a.name][s0, slice(s1.start + 5, s1.stop + 5)], values[a.name]  # d1 starts at -5
            if isinstance(w, np.ma.MaskedArray):
                assert (np.ma.getmaskarray(g) == w.mask).all(), a.name
                assert np.ma.getdata(g)[~w.mask].tolist() == w.data[~w.mask].tolist(), a.name
            else:
                assert np.ma.getdata(g).tolist() == w.tolist(), a.name


def _every_first_fragment():
    for src in sorted(CORPUS.glob("v*/*/array")):
        case = src.parent.name
        if case in ("filter_webp", "group") or not src.is_dir():
            continue
        yield pytest.param(src, id=f"{src.parent.parent.name.split('_')[0]}-{case}")


@pytest.mark.parametrize("src", list(_every_first_fragment()))
def test_every_corpus_fragment_rewrites_to_the_same_cells(tmp_path, src):
    """Every version's first fragment (not consolidated) rewritten from its cells holds the same files as
    TileDB's and reads back the same cells (byte for byte where the codecs agree: the tests above)."""
    key = KEY if src.parent.name == "encrypted_dense" else None
    array = tdbformat.open_array(src, key=key)
    if not array.fragments:
        pytest.skip("no fragment")
    ts = parse_timestamped_name(array.fragments[0].name)
    if ts.t1 != ts.t2 or re.fullmatch(r"__[0-9a-f]{32}_\d+_\d+", array.fragments[0].name):  # v1-2: __uuid_t1_t2
        pytest.skip("a consolidated fragment is not one write")
    theirs, ours = _rewrite(src, tmp_path / "a", key=key)
    assert sorted(os.listdir(ours)) == sorted(os.listdir(theirs))
    frag = tdbformat.open_array(tmp_path / "a", key=key).fragments[0]
    dims = tdbformat.dimensions(array.schema)
    ranges = None if not frag.metadata.dense else {d.name: (int(lo), int(hi))
                                                    for d, (lo, hi) in zip(dims, frag.metadata.non_empty_domain)}
    want = array.read(timestamp=(ts.t1, ts.t1), ranges=ranges)
    got = tdbformat.open_array(tmp_path / "a", key=key).read(ranges=ranges)
    for name, values in want.items():
        assert (np.ma.getmaskarray(got[name]) == np.ma.getmaskarray(values)).all(), name
        valid = ~np.ma.getmaskarray(values)
        assert np.ma.getdata(got[name])[valid].tolist() == np.ma.getdata(values)[valid].tolist(), name


@pytest.mark.parametrize("version", [3, 22])
def test_multi_value_cells_read_back_in_tiledb_py(tmp_path, version):
    pair = np.dtype("i4,i4")
    schema = py_schema(tmp_path, tiledb.ArraySchema(
        domain=tiledb.Domain(tiledb.Dim("d", domain=(0, 9), tile=5, dtype=np.int32)),
        attrs=[tiledb.Attr("a", dtype=pair), tiledb.Attr("c", dtype="S3")]))
    path = str(tmp_path / "a")
    create(path, schema, version)
    a = np.zeros(10, pair)
    a["f0"], a["f1"] = np.arange(10), np.arange(10) * 2
    c = np.array([b"abc", b"de", b"f"] * 3 + [b"xyz"], "S3")
    write(path, {"a": a, "c": c}, timestamp=1)
    with tiledb.open(path) as A:
        got = A[:]
    assert got["a"].tolist() == a.tolist() and got["c"].tolist() == c.tolist()


def _dims_for(case):
    if case == "strings":
        return [tiledb.Dim("x", dtype="ascii"), tiledb.Dim("y", domain=(0, 99), tile=10, dtype=np.int32)]
    return [tiledb.Dim("x", domain=(-10.0, 10.0), tile=2.5, dtype=np.float64),
            tiledb.Dim("t", domain=(np.datetime64("2020-01-01", "D"), np.datetime64("2021-01-01", "D")),
                       tile=np.timedelta64(30, "D"), dtype="datetime64[D]")]


@pytest.mark.parametrize("case, order", [("float_datetime", "row-major"), ("float_datetime", "hilbert"),
                                         ("strings", "hilbert"), ("strings", "col-major")])
def test_a_fragment_written_by_tiledb_py_is_written_byte_identically(tmp_path, case, order):
    """The oracle writes a fragment now; we write the same cells with its uuid and timestamp: the same bytes."""
    rng = np.random.default_rng(7)
    attrs = [tiledb.Attr("a", dtype=np.int32, filters=[tiledb.ZstdFilter()]),
             tiledb.Attr("s", dtype=str, var=True, nullable=True, filters=[tiledb.GzipFilter()]),
             tiledb.Attr("n", dtype=np.float32, nullable=True)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*_dims_for(case)), sparse=True, cell_order=order,
                                tile_order="row-major" if order == "hilbert" else order, capacity=5, attrs=attrs)
    src = tmp_path / "tiledb"
    tiledb.Array.create(str(src), schema)
    n = 50
    if case == "strings":
        cells = {(bytes([97 + k % 26]) * (1 + k % 3), int(y)) for k, y in zip(rng.integers(0, 200, n),
                                                                               rng.integers(0, 100, n))}
        x = np.array([c[0] for c in cells], object)
        y = np.array([c[1] for c in cells], np.int32)
    else:
        x = rng.uniform(-10, 10, n)
        y = np.datetime64("2020-01-01", "D") + rng.integers(0, 366, n).astype("timedelta64[D]")
    n = len(x)
    # nullable fields, all valid: TileDB-Py 0.36's sparse writes ignore a masked array's mask
    values = {"a": np.arange(n, dtype=np.int32), "s": np.array(["v" * (i % 4) for i in range(n)], object),
              "n": rng.random(n).astype(np.float32)}
    with tiledb.open(str(src), "w", timestamp=1) as A:
        A[x, y] = values
    name = os.listdir(src / "__fragments")[0]
    ours = tmp_path / "ours"
    ours.mkdir()
    shutil.copytree(src / "__schema", ours / "__schema")
    write(ours, values, coords=(x, y), timestamp=1, uuid=parse_timestamped_name(name).uuid)
    theirs, mine = src / "__fragments" / name, ours / "__fragments" / name
    assert sorted(os.listdir(mine)) == sorted(os.listdir(theirs))
    for f in sorted(os.listdir(theirs)):
        assert (mine / f).read_bytes() == (theirs / f).read_bytes(), f


def test_validity_argument_and_duplicates_read_back_in_tiledb_py(tmp_path):
    schema = tiledb.ArraySchema(domain=tiledb.Domain(tiledb.Dim("x", domain=(0, 9), tile=5, dtype=np.int64)),
                                sparse=True, allows_duplicates=True,
                                attrs=[tiledb.Attr("n", dtype=np.int16, nullable=True)])
    path = tmp_path / "a"
    create(path, py_schema(tmp_path, schema), 22)
    x = np.array([3, 1, 3, 3, 8])
    n = np.array([10, 20, 30, 40, 50], np.int16)
    valid = np.array([True, False, True, True, False])
    write(path, {"n": n}, coords=(x,), validity={"n": valid}, timestamp=1)
    with tiledb.open(str(path)) as A:
        got = A.query(order="U")[:]
    cells = sorted(zip(got["x"].tolist(), np.ma.getmaskarray(got["n"]).tolist(), np.ma.getdata(got["n"]).tolist()))
    want = sorted((int(a), not v, int(b)) for a, v, b in zip(x, valid, n))
    assert [c[:2] for c in cells] == [w[:2] for w in want]
    assert [c[2] for c in cells if not c[1]] == [w[2] for w in want if not w[1]]


def test_meta_of_an_array_opened_for_writing(tmp_path):
    """A.meta[k] = v and del A.meta[k] on a writer, read back by TileDB-Py as its own."""
    import tiledb as tdb

    import tdbformat

    uri = str(tmp_path / "m")
    dom = tdb.Domain(tdb.Dim("d", domain=(0, 9), tile=5, dtype=np.int64))
    tdb.Array.create(uri, tdb.ArraySchema(domain=dom, attrs=[tdb.Attr("a", dtype=np.int32)]))
    with tdbformat.open_writer(uri, timestamp=5) as A:
        A.meta["n"] = 3
        A.meta["x"] = "text"
        A.meta.update({"f": 1.5})
    with tdbformat.open_writer(uri, timestamp=6) as A:
        del A.meta["x"]
    with tdb.open(uri) as B:
        assert dict(B.meta.items()) == {"n": 3, "f": 1.5}
    with tdb.open(uri, timestamp=5) as B:
        assert dict(B.meta.items()) == {"n": 3, "x": "text", "f": 1.5}


def test_a_fragment_spanning_a_timestamp_range(tmp_path):
    """write(timestamp=(t1, t2)) names the fragment __t1_t2_..., as consolidation does; TileDB-Py sees it from
    a window that holds the whole range, not from one that ends inside it (no cell timestamps: whole)."""
    import tiledb as tdb

    import tdbformat

    uri = str(tmp_path / "r")
    dom = tdb.Domain(tdb.Dim("d", domain=(0, 9), tile=5, dtype=np.int64))
    tdb.Array.create(uri, tdb.ArraySchema(domain=dom, sparse=True, attrs=[tdb.Attr("a", dtype=np.int32)]))
    name = tdbformat.write(uri, {"a": np.array([1, 2], np.int32)}, coords=[np.array([3, 4])], timestamp=(10, 20))
    assert name.startswith("__10_20_")
    with tdb.open(uri, timestamp=(0, 25)) as A:
        assert A[:]["a"].tolist() == [1, 2]
    with tdb.open(uri, timestamp=(0, 5)) as A:
        assert A[:]["a"].tolist() == []
    with pytest.raises(ValueError, match="t1 <= t2"):
        tdbformat.write(uri, {"a": np.array([1], np.int32)}, coords=[np.array([3])], timestamp=(20, 10))


def test_no_op_filter_reads_and_writes_as_tiledb_py(tmp_path):
    """TileDB-Py's NoOpFilter (FILTER_NONE) passes data and metadata through, alone or between other filters:
    an array TileDB-Py writes through it reads equal, and our fragment of the same cells is TileDB's, byte for
    byte."""
    attrs = [tiledb.Attr("a", dtype=np.int64, filters=[tiledb.NoOpFilter()]),
             tiledb.Attr("s", dtype=str, var=True, filters=[tiledb.NoOpFilter(), tiledb.ZstdFilter()]),
             tiledb.Attr("f", dtype=np.float64, filters=[tiledb.ByteShuffleFilter(), tiledb.NoOpFilter(),
                                                         tiledb.LZ4Filter()])]
    dims = [tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64)]
    src = tmp_path / "tiledb"
    tiledb.Array.create(str(src), tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=True,
                                                     coords_filters=[tiledb.NoOpFilter()]))
    x = np.arange(0, 100, 3, dtype=np.int64)
    values = {"a": x * 7, "s": np.array(["n" * (i % 5) for i in range(len(x))], object), "f": x / 4}
    with tiledb.open(str(src), "w", timestamp=1) as A:
        A[x] = values
    with tiledb.open(str(src)) as A:
        assert_same(tdbformat.open_array(src).read(), A[:])
    name = os.listdir(src / "__fragments")[0]
    ours = tmp_path / "ours"
    ours.mkdir()
    shutil.copytree(src / "__schema", ours / "__schema")
    write(ours, values, coords=(x,), timestamp=1, uuid=parse_timestamped_name(name).uuid)
    for f in sorted(os.listdir(src / "__fragments" / name)):
        assert (ours / "__fragments" / name / f).read_bytes() == (src / "__fragments" / name / f).read_bytes(), f


def test_dense_datetime_slices_write_where_tiledb_py_writes(tmp_path):
    """A dense datetime dimension takes datetime64 slices, inclusive and in any unit, as TileDB-Py's writes take
    them; both arrays then read equal (they raised TypeError here)."""
    dims = [tiledb.Dim("d", domain=(np.datetime64(0, "D"), np.datetime64(29, "D")), tile=np.timedelta64(5, "D"),
                       dtype="datetime64[D]"),
            tiledb.Dim("x", domain=(np.datetime64(0, "D"), np.datetime64(3, "D")), tile=np.timedelta64(2, "D"),
                       dtype="datetime64[D]")]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=[tiledb.Attr("a", dtype=np.int32)])
    day = np.datetime64(1, "D")
    writes = [(np.s_[np.datetime64(2, "D"):np.datetime64(5, "D"), day:day + 1],
               np.arange(8, dtype=np.int32).reshape(4, 2)),
              (np.s_[np.datetime64(96, "h"):np.datetime64(8, "D")], np.full((5, 4), 9, np.int32)),
              (np.s_[np.datetime64(20, "D")], np.full((1, 4), 4, np.int32))]
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    tiledb.Array.create(theirs, schema)
    tiledb.Array.create(ours, schema)
    for t, (where, values) in enumerate(writes, 1):
        with tiledb.open(theirs, "w", timestamp=t) as A:
            A[where if isinstance(where, (tuple, slice)) else slice(where, where)] = values
        with open_writer(ours, timestamp=t) as A:
            A[where] = values
    with tiledb.open(theirs) as A, tiledb.open(ours) as B:
        want = A[:]
        assert_same(B[:], want)
        assert_same(tdbformat.open_array(ours).read(), want)
    assert want["a"][[2, 3, 4, 8, 20], [1, 2, 1, 3, 0]].tolist() == [0, 3, 9, 9, 4]  # the later write wins on day 4


@pytest.mark.parametrize("version", [5, 22])
def test_unwritten_multi_value_cells_hold_the_fill_in_every_value(tmp_path, version):
    """A dense array's cells no write reached hold the fill value in each of their values, as TileDB-Py reads
    them: before v6 (no fill value in the schema) a CHAR "S3" cell read as one 0x80 byte."""
    dims = [tiledb.Dim("x", domain=(0, 7), tile=4, dtype=np.int64)]
    attrs = [tiledb.Attr("s", dtype="S3"), tiledb.Attr("r", dtype=np.dtype("i4,i4")),
             tiledb.Attr("f", dtype=np.dtype("f8,f8,f8"))]
    path = tmp_path / "a"
    create(path, py_schema(tmp_path, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs)), version)
    r = np.zeros(3, "i4,i4")
    r["f0"], r["f1"] = [1, 2, 3], [4, 5, 6]
    with open_writer(path, timestamp=1) as A:
        A[2:5] = {"s": np.array([b"abc", b"de", b"f"], "S3"), "r": r, "f": np.ones(3, "f8,f8,f8")}
    with tiledb.open(str(path)) as T:
        want = T[:]
    got = tdbformat.open_array(path).read()
    for k in ("s", "r", "f"):  # as bytes: the float fill is NaN
        assert got[k].tobytes() == want[k].tobytes(), k
    assert got["s"][0] == b"\x80\x80\x80" and got["s"][3] == b"de"


@pytest.mark.parametrize("filters", [[tiledb.ChecksumMD5Filter()], [tiledb.NoOpFilter()],
                                     [tiledb.ChecksumSHA256Filter(), tiledb.ZstdFilter()]], ids=["md5", "noop", "sha"])
def test_an_encrypted_tile_of_empty_cells_is_tiledbs(tmp_path, filters):
    """A var tile of empty cells leaves a checksum or no-op filter as no data part (TileDB's append_view skips
    empty views), so the encryption after it encrypts none: TileDB-Py read our tile as corrupt ("FilterBuffer
    error; no current buffer"), 36 bytes longer than its own."""
    ctx = tiledb_ctx(KEY)
    src, ours = tmp_path / "tiledb", tmp_path / "ours"
    dim = tiledb.Dim("d", domain=(0, 99), tile=5, dtype=np.int64, ctx=ctx)
    tiledb.Array.create(str(src), tiledb.ArraySchema(
        domain=tiledb.Domain(dim, ctx=ctx), sparse=True, capacity=5, ctx=ctx,
        attrs=[tiledb.Attr("a", dtype=bytes, var=True, filters=tiledb.FilterList(filters, ctx=ctx), ctx=ctx)]), ctx=ctx)
    values = {"a": np.array([b""] * 5, object)}
    with tiledb.open(str(src), "w", timestamp=1, ctx=ctx) as A:
        A[np.arange(5)] = values
    name = os.listdir(src / "__fragments")[0]
    ours.mkdir()
    shutil.copytree(src / "__schema", ours / "__schema")
    write(ours, values, coords=(np.arange(5),), timestamp=1, uuid=parse_timestamped_name(name).uuid, key=KEY)
    with tiledb.open(str(ours), ctx=ctx) as A:
        assert A[:]["a"].tolist() == [b""] * 5
    assert (ours / "__fragments" / name / "a0_var.tdb").stat().st_size == \
        (src / "__fragments" / name / "a0_var.tdb").stat().st_size


@pytest.mark.parametrize("cells", [
    ["abc", "", "héllo", "z" * 40, ""],  # ASCII and not, empty cells first, last and between
    ["a\x00b", "\x00", "c"],  # NULs of the cells' own: not taken for the separators
    ["only"], [""], ["", ""], [],
    ["text", b"bytes", "more"],  # a mix of str and bytes
    ["\ud800"],  # a lone surrogate, which UTF-8 cannot hold
])
def test_var_cells_are_each_cells_utf8_bytes(cells):
    """A column of var cells becomes its cells' bytes back to back and their lengths: what encoding each str
    as UTF-8 (bytes as they are) gives, cell by cell."""
    from tdbformat.array.tiling import var_cells
    column = np.array(cells + [None], object)[:-1]  # an object column, as a write holds one
    try:
        want = [c.encode() if isinstance(c, str) else c for c in cells]
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            var_cells(column, np.dtype("u1"))
        return
    data, lengths = var_cells(column, np.dtype("u1"))
    assert data == b"".join(want)
    assert lengths.dtype == np.uint64 and lengths.tolist() == [len(w) for w in want]


@pytest.mark.parametrize("dtype, values", [
    ("int64", [2**62, 2**62, 2**62, -5]),  # past the max: stops there
    ("int64", [-2**62] * 3 + [7]),  # past the min
    ("int64", [2**62, 2**62 - 1, -2**62, 3]),  # reaches the max exactly, then comes back: no stop
    ("uint64", [2**63, 2**63, 1, 2]),  # wraps: the max
    ("uint64", [2**62, 2**62, 2**62, 5]),  # large, no wrap
    ("int8", [100, 100, -100, 5]),
    ("int64", [3, -4, 5, 6]),
])
def test_tile_sums_stop_where_tiledbs_stop(tmp_path, dtype, values):
    """Integer tile sums that would leave their type stop at its max or min, as TileDB's Sum<T> does; the
    fragment written by TileDB-Py holds the expected sums."""
    made = {}
    for who in ("tiledb", "ours"):
        uri = str(tmp_path / who)
        tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(tiledb.Dim("d", domain=(0, 3), tile=4, dtype=np.int64)),
                                                    attrs=[tiledb.Attr("a", dtype)]))
        if who == "tiledb":
            with tiledb.open(uri, "w") as arr:
                arr[:] = np.array(values, dtype)
        else:
            write(uri, {"a": np.array(values, dtype)})
        fm = tdbformat.open_array(uri).fragments[0].metadata
        made[who] = (np.asarray(fm.tile_sums[0]).tobytes(), fm.fragment_summary[0])
    assert made["ours"][0] == made["tiledb"][0]
    assert made["ours"][1] == made["tiledb"][1]
