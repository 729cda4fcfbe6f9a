"""The array read path on damaged folders and lying metadata: each class the fuzzer found (issue #13 §4)
built by hand on arrays TileDB-Py writes, each a FormatError naming the file, never another exception or
an allocation the file has not proven."""

from __future__ import annotations

import shutil
import tracemalloc

import numpy as np
import pytest

import corpus
from tdbformat import FormatError, open_array
from tdbformat.structs import ArraySchema, FragmentMetadata
from tdbformat.array.order import tile_grid

tiledb = pytest.importorskip("tiledb")


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    dense, sparse = str(root / "dense"), str(root / "sparse")
    dim = tiledb.Dim("d", domain=(1, 100), tile=10, dtype=np.int64)
    tiledb.Array.create(dense, tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[tiledb.Attr("a", dtype=np.int32)]))
    with tiledb.open(dense, "w") as A:
        A[1:51] = np.arange(50, dtype=np.int32)
    tiledb.Array.create(sparse, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True, capacity=8,
                                                   attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for t in (1, 2):
        with tiledb.open(sparse, "w", timestamp=t) as A:
            A[np.arange(1, 41) + t] = np.arange(40, dtype=np.int32)
    tiledb.consolidate(sparse, config=tiledb.Config({"sm.consolidation.mode": "fragment_meta"}))
    return root


def _copy(arrays, name, tmp_path):
    dst = tmp_path / name
    shutil.copytree(arrays / name, dst)
    return dst


def _fragment(dst):
    return sorted(p for p in (dst / "__fragments").iterdir())[0]


def _read_fails(path, *words):
    tracemalloc.start()  # (one thread: stopping tracemalloc races with other threads' numpy, conftest one_thread)
    try:
        with pytest.raises(FormatError) as err:
            open_array(path).read(threads=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak} bytes allocated before the error"
    for w in words:
        assert w in str(err.value), str(err.value)
    return err.value


def _rewrite_footer(frag, change):
    path = frag / "__fragment_metadata.tdb"
    schemas = {p.name: ArraySchema.parse(p.read_bytes()) for p in (frag.parent.parent / "__schema").iterdir()
               if p.is_file()}
    fm = FragmentMetadata.parse(path.read_bytes(), schema=schemas, name=frag.name)
    for _ in fm.tile_offsets:  # load every section before the footer changes under them
        pass
    fm.rtree
    change(fm.footer)
    path.write_bytes(fm.build())


def test_missing_data_file(arrays, tmp_path):
    dst = _copy(arrays, "dense", tmp_path)
    (_fragment(dst) / "a0.tdb").unlink()
    _read_fails(dst, "a0.tdb", "expected a data file")


def test_folder_in_place_of_a_data_file(arrays, tmp_path):
    dst = _copy(arrays, "dense", tmp_path)
    (_fragment(dst) / "a0.tdb").unlink()
    (_fragment(dst) / "a0.tdb").mkdir()
    _read_fails(dst, "a0.tdb", "found a folder")


def test_folder_in_place_of_consolidated_metadata(arrays, tmp_path):
    dst = _copy(arrays, "sparse", tmp_path)
    meta = next((dst / "__fragment_meta").iterdir())
    meta.unlink()
    meta.mkdir()
    with pytest.raises(FormatError, match="found a folder"):
        open_array(dst)


def test_committed_fragment_without_metadata(arrays, tmp_path):
    dst = _copy(arrays, "dense", tmp_path)
    (_fragment(dst) / "__fragment_metadata.tdb").unlink()
    with pytest.raises(FormatError, match="fragment metadata file of a committed fragment"):
        open_array(dst)


def test_empty_schema_folder(arrays, tmp_path):
    dst = _copy(arrays, "dense", tmp_path)
    for p in (dst / "__schema").iterdir():
        if p.is_file():
            p.unlink()
    with pytest.raises(FormatError, match="no array schema"):
        open_array(dst)


@pytest.mark.parametrize("size", [2**64 - 1, 3])
def test_file_size_that_lies(arrays, tmp_path, size):
    """A recorded size past the real file, or before the last tile starts, is refused before any read."""
    dst = _copy(arrays, "dense", tmp_path)
    def lie(footer):
        footer.file_sizes = footer.file_sizes.copy()
        footer.file_sizes[0] = size
    _rewrite_footer(_fragment(dst), lie)
    _read_fails(dst, "a0.tdb")


def test_non_empty_domain_outside_the_domain(arrays, tmp_path):
    """One flipped bit would otherwise make millions of tiles to enumerate."""
    dst = _copy(arrays, "dense", tmp_path)
    def lie(footer):
        footer.non_empty_domain = [np.array([1, 2**40], r.dtype) for r in footer.non_empty_domain]
    _rewrite_footer(_fragment(dst), lie)
    _read_fails(dst, "not inside its domain")


def test_non_empty_domain_outside_the_domain_is_refused_before_a_merge_sizes_anything(arrays, tmp_path):
    """Consolidation sizes a dense merge by the union of non-empty domains: one that leaves the domain (a
    flipped bit: 268,435,466 cells, fuzz campaign 20261154 case 49490) is refused before any allocation."""
    from tdbformat import consolidate
    dst = _copy(arrays, "dense", tmp_path)
    with tiledb.open(str(dst), "w") as A:
        A[51:61] = np.arange(10, dtype=np.int32)
    def lie(footer):
        footer.non_empty_domain = [np.array([1, 2**28], r.dtype) for r in footer.non_empty_domain]
    _rewrite_footer(_fragment(dst), lie)
    before = sorted(p.relative_to(dst) for p in dst.rglob("*"))
    tracemalloc.start()
    try:
        with pytest.raises(FormatError, match="not inside its domain"):
            consolidate(str(dst))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak} bytes allocated before the error"
    assert sorted(p.relative_to(dst) for p in dst.rglob("*")) == before


def _rewrite_schema(dst, change):
    path = next(p for p in (dst / "__schema").iterdir() if p.is_file())
    schema = ArraySchema.parse(path.read_bytes())
    change(schema)
    path.write_bytes(ArraySchema.build(schema))


@pytest.mark.parametrize("extent,words", [(0, ("tile extent 0",)), (2**31 - 1, ("unfilter to",))])
def test_tile_extent_that_lies(arrays, tmp_path, extent, words):
    """Zero divided nothing; a huge extent allocated gigabytes for one tile before its size was checked."""
    dst = _copy(arrays, "dense", tmp_path)
    _rewrite_schema(dst, lambda s: s.domain.dimensions[0].__setitem__("tile_extent", extent))
    _read_fails(dst, *words)


def test_tile_grid_refuses_non_positive_extents():
    class Dim:
        name, domain = "d", (0, 9)

        def __init__(self, e):
            self.tile_extent = e
    assert tile_grid([Dim(5), Dim(None)]) == ([0, 0], [5, None])
    for bad in (0, -3, 0.0):
        with pytest.raises(FormatError, match="must be positive"):
            tile_grid([Dim(bad)])


def test_truncated_footer_search_never_recurses():
    """A truncated v5-9 metadata file whose tail looks like a generic tile recursed until RecursionError."""
    for case in corpus.cases():
        if not case.parent.name.startswith(("v5_", "v6_", "v7_", "v8_", "v9_")):
            continue
        for meta in corpus.root(case).rglob("__fragment_metadata.tdb"):
            data = meta.read_bytes()
            schemas = {p.name: ArraySchema.parse(p.read_bytes(), key=corpus.key(case))
                       for p in [corpus.root(case) / "__array_schema.tdb"] if p.is_file()}
            for cut in (1, 8, 40, len(data) // 2):
                try:
                    FragmentMetadata.parse(data[:-cut], schema=schemas, key=corpus.key(case))
                except FormatError:
                    pass
            return
    pytest.fail("no v5-9 fragment in the corpus")


def test_cells_wider_than_memory_are_refused_by_the_budget(tmp_path):
    """A v2 schema (no fill value to contradict it) whose attribute claims 2**31 values a cell: the read
    refuses the 1.6 TiB result by name before any dtype or array that wide is built."""
    from tdbformat.array import MemoryBudgetError
    case = next(c for c in corpus.cases() if c.parent.name.startswith("v2_") and c.name == "filter_gzip")
    dst = tmp_path / "a"
    shutil.copytree(corpus.root(case), dst)
    path = dst / "__array_schema.tdb"
    schema = ArraySchema.parse(path.read_bytes())
    schema.attributes[0].cell_val_num = 2**31
    path.write_bytes(ArraySchema.build(schema))
    tracemalloc.start()
    try:
        with pytest.raises(MemoryBudgetError, match="memory budget"):
            open_array(dst).read(threads=1)
        assert tracemalloc.get_traced_memory()[1] < 64 << 20
    finally:
        tracemalloc.stop()


def test_dense_dimension_retyped_as_float(arrays, tmp_path):
    """An INT64 dimension whose datatype byte says FLOAT64 reads its extent as a tiny float: the dense tile
    grid refuses it (int() of it was 0, then a ZeroDivisionError)."""
    from tdbformat.enums import Datatype
    dst = _copy(arrays, "dense", tmp_path)

    def retype(schema):  # what the INT64 bytes of the extent 10 read as, once the datatype says FLOAT64
        dim = schema.domain.dimensions[0]
        dim.datatype, dim.domain = Datatype.FLOAT64, [1.0, 100.0]
        dim.tile_extent = float(np.array([10], "<i8").view("<f8")[0])
    _rewrite_schema(dst, retype)
    with pytest.raises(FormatError, match="positive integer"):
        open_array(dst).read()
