"""``tdbformat.convert``: corpus arrays rewritten at their own format version parse equal to TileDB's files, and
rewritten at other versions read back in TileDB-Py as the originals do, at the current time and at each
original fragment's timestamp; what a version cannot hold is refused before anything is written."""

from __future__ import annotations

import copy
import hashlib
import re
import shutil
import warnings

import numpy as np
import pytest

import tdbformat
from tdbformat.layout import metadata_files
from tdbformat.structs.names import parse_timestamped_name

from corpus import CORPUS, cases, key, root, truth
from oracle import assert_same, canonical

tiledb = pytest.importorskip("tiledb")

# per writer: a dense, a sparse, a metadata and a deletes case where it has them (first match of each)
_KINDS = [("dense_2d_multiattr", "consolidated_dense", "filter_zstd"), ("sparse_2d_rtree", "sparse_var_string_dim"),
          ("array_metadata", "array_metadata_consolidated"), ("sparse_delete",), ("enumerations",)]
# v1-4, the first of __meta (v5 commit markers), v9 the last legacy schema, v10, v16 deletes, v22
_TARGETS = [1, 4, 5, 9, 10, 16, 22]


# footer fields that place tiles and sections in files, or size them
_WHERE = re.compile(r"(_offsets?|_sizes)$")


def _version(case) -> int:
    return int(case.parent.name.split("_")[0][1:])


def _subset():
    by_writer = {}
    for c in cases():
        by_writer.setdefault(c.parent, {})[c.name] = c
    for writer, found in sorted(by_writer.items()):
        if _version(next(iter(found.values()))) > 22:  # TileDB-Py 0.36 opens v1-v22
            continue
        for names in _KINDS:
            name = next((n for n in names if n in found), None)
            if name:
                yield pytest.param(found[name], id=f"{writer.name.split('_')[0]}-{writer.name.split('_')[1]}-{name}")


SUBSET = list(_subset())


def _strip(value):
    """A parsed structure without construct's private fields (offsets, io)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _tiledb_cells(path, k, timestamp=None) -> dict:
    with tiledb.open(str(path), key=k, timestamp=timestamp) as A:
        if A.schema.sparse:
            return canonical({n: np.asarray(v) if not isinstance(v, np.ma.MaskedArray) else v
                              for n, v in A.query(order="U")[:].items()})
        return A[:]


def _tiledb_meta(path, k) -> dict:
    with tiledb.open(str(path), key=k) as A:
        return {n: copy.deepcopy(A.meta[n]) for n in A.meta.keys()}  # copied while the array is open


def _metadata(path, k) -> dict:
    return {n: (e.datatype, np.asarray(e.value).tolist()) for n, e in tdbformat.layout.read_metadata(path, k).items()}


def _digest(folder) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        h.update(str(p.relative_to(folder)).encode())
        h.update(p.read_bytes() if p.is_file() else b"/")
    return h.hexdigest()


@pytest.mark.parametrize("case", SUBSET)
def test_convert_to_its_own_version_parses_equal(tmp_path, case):
    src, k, v = root(case), key(case), _version(case)
    before = _digest(src)
    tdbformat.convert(src, tmp_path / "a", v, key=k)
    assert _digest(src) == before  # SRC is only read
    theirs, ours = tdbformat.open_array(src, key=k), tdbformat.open_array(tmp_path / "a", key=k)
    # schemas: each at its version, field for field, under its own name (v10+: fragments name it)
    assert [_strip(s) for _, s in ours.schemas] == [_strip(s) for _, s in theirs.schemas]
    if v >= 10:
        assert [n for n, _ in ours.schemas] == [n for n, _ in theirs.schemas]
    # fragments: same names (a consolidated fragment's range too), domains, tile and cell counts
    assert len(ours.fragments) == len(theirs.fragments)
    for f, g in zip(theirs.fragments, ours.fragments):
        assert g.name == f.name
        assert [list(map(str, d)) for d in g.non_empty_domain] == [list(map(str, d)) for d in f.non_empty_domain]
        assert (g.metadata.tile_num, g.cell_num, g.dense) == (f.metadata.tile_num, f.cell_num, f.dense)
        if v >= 10:
            assert g.metadata["array_schema_name"] == f.metadata["array_schema_name"]
        # every footer field but where tiles lie and how big they are (codec output: README's fidelity table)
        theirs_footer, ours_footer = (f.metadata.legacy or f.metadata.footer), (g.metadata.legacy or g.metadata.footer)
        for name in (n for n in theirs_footer if not n.startswith("_") and not _WHERE.search(n)):
            assert str(_strip(ours_footer[name])) == str(_strip(theirs_footer[name])), name
        if not f.dense:
            assert str(g.mbrs(ours.dims)) == str(f.mbrs(theirs.dims))  # the R-tree's leaves
    # metadata files: same names, same entries; delete commits: same timestamps and conditions
    live = {p.name for p in metadata_files(theirs.storage, src / "__meta")} if (src / "__meta").is_dir() else set()
    assert {p.name for p in (tmp_path / "a" / "__meta").glob("*") if p.is_file()} == live
    assert _metadata(tmp_path / "a", k) == _metadata(src, k)
    assert [(d.timestamp, _strip(d.condition)) for d in ours.deletes] == \
        [(d.timestamp, _strip(d.condition)) for d in theirs.deletes]


def _first_version(message: str, target: int) -> int:
    m = re.search(r"need format version (\d+) or later, not (\d+)", message)
    assert m and int(m[2]) == target and int(m[1]) > target, message
    return int(m[1])


@pytest.mark.parametrize("case", SUBSET)
def test_convert_across_versions_reads_back_in_tiledb(tmp_path, case):
    src, k, v = root(case), key(case), _version(case)
    times = sorted({parse_timestamped_name(f.name).t2 for f in tdbformat.open_array(src, key=k).fragments})
    want = {t: _tiledb_cells(src, k, t) for t in [None] + times}
    want_meta = _tiledb_meta(src, k)
    for target in (t for t in _TARGETS if t != v):
        dst = tmp_path / f"v{target}"
        try:
            tdbformat.convert(src, dst, target, key=k)
        except ValueError as e:
            assert not dst.exists(), "refused after writing"
            first = _first_version(str(e), target)
            tdbformat.convert(src, tmp_path / f"first{target}", first, key=k)  # the version it names holds it
            continue
        assert tdbformat.open_array(dst, key=k).schema.version == target
        for t, cells in want.items():
            assert_same(_tiledb_cells(dst, k, t), cells)
        np.testing.assert_equal(_tiledb_meta(dst, k), want_meta)


def _case(writer: str, name: str):
    return CORPUS / writer / name


def test_deletes_need_v16_unless_merged(tmp_path):
    case = _case("v22_tiledb-py-0.36.1_core-2.30.0", "sparse_delete")
    src = root(case)
    with pytest.raises(ValueError, match="delete commits need format version 16 or later, not 15"):
        tdbformat.convert(src, tmp_path / "a", 15)
    assert not (tmp_path / "a").exists()
    written = tdbformat.convert(src, tmp_path / "m", 15, merge=True)
    assert len(written) == 1 and not tdbformat.open_array(tmp_path / "m").deletes
    assert_same(_tiledb_cells(tmp_path / "m", None), _tiledb_cells(src, None))


@pytest.mark.parametrize("writer, name, target, message", [
    ("v9_c-api_core-2.3.3", "array_metadata", 3, "array metadata need format version 4 or later, not 3"),
    ("v22_tiledb-py-0.36.1_core-2.30.0", "dense_2d_multiattr", 6, "nullable attributes need format version 7"),
    ("v21_tiledb-py-0.25.1_core-2.19.2", "enumerations", 19, "enumerations need format version 20"),
    ("v22_tiledb-py-0.36.1_core-2.30.0", "current_domain", 21, "a current domain need format version 22"),
    ("v22_tiledb-py-0.36.1_core-2.30.0", "sparse_var_string_dim", 4, "var-sized dimensions need format version 5"),
])
def test_what_the_target_cannot_hold_is_refused(tmp_path, writer, name, target, message):
    src = root(_case(writer, name))
    before = _digest(src)
    with pytest.raises(ValueError, match=re.escape(message)):
        tdbformat.convert(src, tmp_path / "a", target)
    assert not (tmp_path / "a").exists() and _digest(src) == before


def test_merge_writes_one_fragment_that_reads_as_all(tmp_path):
    case = _case("v14_c-api_core-2.10.4", "consolidated_dense")
    src = root(case)
    assert len(tdbformat.open_array(src).fragments) >= 1
    for target in (2, 14, 22):
        written = tdbformat.convert(src, tmp_path / f"m{target}", target, merge=True)
        assert len(written) == 1
        assert_same(_tiledb_cells(tmp_path / f"m{target}", None), _tiledb_cells(src, None))


def test_arguments_are_checked(tmp_path):
    src = root(_case("v22_tiledb-py-0.36.1_core-2.30.0", "filter_zstd"))
    (tmp_path / "there").mkdir()
    with pytest.raises(ValueError, match="dst: .* exists"):
        tdbformat.convert(src, tmp_path / "there", 22)
    with pytest.raises(ValueError, match="version"):
        tdbformat.convert(src, tmp_path / "a", 99)
    with pytest.raises(TypeError, match="merge"):
        tdbformat.convert(src, tmp_path / "a", 22, merge="yes")
    shutil.rmtree(tmp_path / "there")


@pytest.mark.parametrize("case", ["back_compat_v11", "evolved_pre_v10_array"])
@pytest.mark.parametrize("target", [9, 16, 22])
def test_arrays_tiledb_cannot_open_convert_to_arrays_it_reads(tmp_path, case, target):
    """TileDB 2.30 fails on both sources (truth.json has its error); their cells as TileDB read them before
    (``read_global_order``) come back from the conversion, the evolved one's pre-v10 fragment through the
    latest schema (the added attribute as its fill value)."""
    src = CORPUS.parent / "behaviours" / case / "array"
    want = truth(src.parent)["read_global_order"]
    with warnings.catch_warnings():  # back_compat_v11's broken .meta: read each fragment's own metadata
        warnings.simplefilter("ignore", tdbformat.FormatWarning)
        tdbformat.convert(src, tmp_path / "a", target)
    with tiledb.open(str(tmp_path / "a")) as A:
        got = A.query(order="G")[:]
    assert {k: np.asarray(got[k]).tolist() for k in want} == want


def test_encrypted_arrays_convert_with_their_key(tmp_path):
    case = _case("v22_tiledb-py-0.36.1_core-2.30.0", "encrypted_dense")
    src, k = root(case), key(case)
    for target in (5, 22):
        tdbformat.convert(src, tmp_path / f"v{target}", target, key=k)
        assert_same(_tiledb_cells(tmp_path / f"v{target}", k), _tiledb_cells(src, k))
        with pytest.raises(tiledb.TileDBError):
            tiledb.open(str(tmp_path / f"v{target}"))


def _label_cells(path, name) -> dict:
    with tiledb.open(str(path)) as A:
        uri = A.schema.dim_label(name).uri
    with tiledb.open(uri if "://" in uri or uri.startswith("/") else f"{path}/{uri}") as L:
        return {"label": L[:]["label"], "domain": L.nonempty_domain()}


@pytest.mark.parametrize("writer", sorted(p.parent.name for p in CORPUS.glob("v*/dimension_labels")))
def test_dimension_labels_arrays_are_converted_too(tmp_path, writer):
    src = CORPUS / writer / "dimension_labels" / "array"
    want = _label_cells(src, "lx")
    for target in (18, 22):
        tdbformat.convert(src, tmp_path / f"v{target}", target)
        assert tdbformat.open_array(tmp_path / f"v{target}" / "__labels" / "l0").schema.version == target
        got = _label_cells(tmp_path / f"v{target}", "lx")
        np.testing.assert_array_equal(got["label"], want["label"])
        assert got["domain"] == want["domain"]
        assert_same(_tiledb_cells(tmp_path / f"v{target}", None), _tiledb_cells(src, None))
    with pytest.raises(ValueError, match="dimension labels need format version 18 or later, not 17"):
        tdbformat.convert(src, tmp_path / "v17", 17)


def test_an_array_before_format_version_1_becomes_one_fragment(tmp_path):
    """A 1.2 array (no timestamps, one schema) converts to one fragment of its cells (tests/test_prev1.py
    compares every pre-v1 array with TileDB-Py's read of the result); a key is refused, as those arrays never
    had encryption."""
    src = CORPUS.parent / "prev1" / "tiledb-1.2.2" / "my_dense_array"
    with pytest.raises(ValueError, match="never encrypted"):
        tdbformat.convert(src, tmp_path / "k", 22, key="0123456789abcdeF0123456789abcdeF")
    assert len(tdbformat.convert(src, tmp_path / "a", 22)) == 1
    assert len(tdbformat.open_array(tmp_path / "a").fragments) == 1


# ---------------------------------------------------------------------------------------------------------
# Consolidated fragments: their cell timestamps and delete metadata go along where the target holds them


def _consolidated_with_deletes(path) -> None:
    """Three writes by TileDB-Py with a delete between the second and third (it removes the second write's
    x=5, which hides the first's), consolidated with timestamps (TileDB keeps the deleted cell and its delete
    metadata) and vacuumed."""
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=True, capacity=4, attrs=[
        tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str, var=True),
        tiledb.Attr("n", dtype=np.float64, nullable=True)]))
    for k, xs in enumerate([[1, 5, 9, 20], [5, 6, 7, 50], [1, 60, 61, 99]]):
        t = int(parse_timestamped_name(tdbformat.open_array(path).schemas[-1][0]).t1) + 10 * (k + 1)
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[np.array(xs)] = {"a": np.array(xs, np.int32) * (k + 1), "s": np.array([f"v{x}_{k}" for x in xs], object),
                               "n": np.ma.masked_array(np.array(xs, float) / (k + 1), mask=[False, True, False, False])}
        if k == 1:
            with tiledb.open(str(path), "d", timestamp=t + 5) as A:
                A.query(cond="a == 10").submit()
    tiledb.consolidate(str(path), config=tiledb.Config({"sm.consolidation.with_timestamps": "true",
                                                        "sm.consolidation.mode": "fragments"}))
    tiledb.vacuum(str(path), config=tiledb.Config({"sm.vacuum.mode": "fragments"}))


_CONSOLIDATED = [c for c in cases() if c.name.startswith("consolidated_sparse_with_timestamps")]


def _chunk(case) -> int:
    """The chunk bound the corpus writer's TileDB had (README: 192 bytes in the tiledb-py 0.19-0.25 wheels)."""
    return 192 if re.search(r"tiledb-py-0\.(19|2[0-5])\.", case.parent.name) else 65536


def _files(folder) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.parent.name.split('_')[0]}-{c.parent.name.split('_')[1]}-"
                                                   f"{c.name.split('_')[-1]}") for c in _CONSOLIDATED])
def test_a_consolidated_fragment_converts_to_its_own_version_byte_for_byte(tmp_path, case):
    src, v = root(case), _version(case)
    tdbformat.convert(src, tmp_path / "a", v, max_chunk_size=_chunk(case))
    frag = next(f for f in tdbformat.open_array(src).fragments if f.has_timestamps)
    theirs = next(p for p in src.rglob(frag.name) if p.is_dir())
    ours = next(p for p in (tmp_path / "a").rglob(frag.name) if p.is_dir())
    assert _files(ours) == _files(theirs)
    assert tdbformat.open_array(tmp_path / "a").fragments[0].has_timestamps


def test_an_array_consolidated_across_a_delete_converts_to_its_own_version_byte_for_byte(tmp_path):
    _consolidated_with_deletes(tmp_path / "src")
    frag = tdbformat.open_array(tmp_path / "src").fragments[0]
    assert frag.has_delete_meta and len(frag.processed_conditions) == 1  # what TileDB made
    tdbformat.convert(tmp_path / "src", tmp_path / "a", 22)
    theirs, ours = _files(tmp_path / "src"), _files(tmp_path / "a")
    assert sorted(ours) == sorted(theirs)  # schema, fragment, commit and delete commit, under their names
    for name in theirs:
        assert ours[name] == theirs[name], name


@pytest.mark.parametrize("target, times", [
    (16, "all"), (19, "all"), (21, "all"),
    (15, "from the delete"),  # cell timestamps kept, the deleted cells dropped: before the delete they are missing
    (14, "now"),  # TileDB reads a v14 fragment only in windows holding its whole range
    (12, "now"), (7, "now")])  # no cell timestamps: a read inside the range sees every cell
def test_an_array_consolidated_across_a_delete_reads_equal_at_other_versions(tmp_path, target, times):
    src = tmp_path / "src"
    _consolidated_with_deletes(src)
    array = tdbformat.open_array(src)
    frag = array.fragments[0]
    t1, t2 = frag.timestamp_range
    deleted = array.deletes[0].timestamp
    when = {"all": [None, t1, t1 + 10, deleted, t2], "from the delete": [None, deleted, t2], "now": [None]}[times]
    tdbformat.convert(src, tmp_path / "a", target)
    converted = tdbformat.open_array(tmp_path / "a")
    assert converted.fragments[0].has_timestamps == (target >= 14)
    assert converted.fragments[0].has_delete_meta == (target >= 16)
    assert len(converted.deletes) == (1 if target >= 16 else 0)
    for t in when:
        assert_same(_tiledb_cells(tmp_path / "a", None, t), _tiledb_cells(src, None, t))
    if times != "all":  # what the target loses: the cells of some earlier window
        assert any(str(_tiledb_cells(tmp_path / "a", None, t)) != str(_tiledb_cells(src, None, t))
                   for t in (t1, t1 + 10))


@pytest.mark.parametrize("target", [16, 22])
def test_a_corpus_fragment_consolidated_with_timestamps_reads_equal_at_every_timestamp(tmp_path, target):
    case = next(c for c in _CONSOLIDATED if c.parent.name.startswith("v22_tiledb-py-0.36.1"))
    src = root(case)
    frag = next(f for f in tdbformat.open_array(src).fragments if f.has_timestamps)
    tdbformat.convert(src, tmp_path / "a", target)
    t1, t2 = frag.timestamp_range
    for t in (None, t1, (t1 + t2) // 2, t2):
        assert_same(_tiledb_cells(tmp_path / "a", None, t), _tiledb_cells(src, None, t))


def test_the_command_line_takes_the_chunk_bound(tmp_path):
    from tdbformat.cli import main

    case = next(c for c in _CONSOLIDATED if c.parent.name.startswith("v21_tiledb-py-0.25.1"))
    src = root(case)
    frag = next(f for f in tdbformat.open_array(src).fragments if f.has_timestamps)
    for bound, same in ((65536, False), (192, True)):
        assert main(["convert", str(src), str(tmp_path / str(bound)), "--version", "21",
                     "--max-chunk-size", str(bound)]) == 0
        theirs = next(p for p in src.rglob(frag.name) if p.is_dir())
        ours = next(p for p in (tmp_path / str(bound)).rglob(frag.name) if p.is_dir())
        assert (_files(ours) == _files(theirs)) == same
    assert main(["convert", str(src), str(tmp_path / "x"), "--version", "21", "--max-chunk-size", "0"]) == 2
    assert not (tmp_path / "x").exists()
