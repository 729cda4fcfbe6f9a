"""Byte fidelity of the writer: corpus fragments rewritten from their own cells, schema, timestamp and uuid, and
fragments TileDB-Py writes here, come out byte for byte as TileDB wrote them (codecs that legitimately differ
decode equal)."""

from __future__ import annotations

import glob
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import tiledb

import tdbformat
from tdbformat.write.create import create
from tdbformat.write.writer import open_writer, write
from tdbformat.enums import FilterType
from tdbformat.structs.fragment import SECTIONS, data_files
from tdbformat.structs.names import parse_timestamped_name
from test_writer import CORPUS, KEY, py_schema


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
    dims = tdbformat.structs.dimensions(array.schema)
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
            d.name: (int(lo), int(hi)) for d, (lo, hi) in zip(tdbformat.structs.dimensions(array.schema), ned)}
        want = array.read(timestamp=(ts.t1, ts.t1), ranges=ranges)
        got = tdbformat.open_array(tmp_path / f"a{index}").read(ranges=ranges)
        for name, values in want.items():
            assert np.ma.getdata(got[name]).tolist() == np.ma.getdata(values).tolist(), (frag.name, name)


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
    dims = tdbformat.structs.dimensions(array.schema)
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
