"""The fast paths of a read give what the general ones give, and what TileDB-Py gives: var strings shared per
distinct value, ranges that a fragment lies inside, cached footer field lists, the shared decoding pool."""

from __future__ import annotations

import multiprocessing
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tiledb
from construct import Container, ListContainer

from oracle import assert_same
from tdbformat import open_array, write
from tdbformat.array import cells as cells_mod
from tdbformat.array import order as order_mod
from tdbformat.filters import strings as strings_mod
from tdbformat.array import tiles as tiles_mod
from tdbformat.enums import Datatype, Layout
from tdbformat.structs.array_schema import VAR_NUM, FieldInfo
from tdbformat.structs.footer import index_fields

WORDS = np.array(["", "a", "é-ü", "w3-é" * 3, "long " * 20], object)


def _strings(uri, values, dtype=str):
    dim = tiledb.Dim("i", domain=(0, len(values) - 1), tile=max(len(values) // 4, 1), dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[
        tiledb.Attr("s", dtype=dtype, var=True, filters=[tiledb.ZstdFilter()])]))
    with tiledb.open(uri, "w") as A:
        A[:] = {"s": values}


@pytest.mark.parametrize("kind", ["repeated", "unique"])
def test_var_strings_equal_tiledb_py(tmp_path, kind):
    """Tiles of a few words repeated (one object per distinct value) and of distinct strings (one per cell)."""
    rng = np.random.default_rng(1)
    values = (WORDS[rng.integers(0, len(WORDS), 4000)] if kind == "repeated"
              else np.array([f"cell {i} é{i * 7}" for i in range(4000)], object))
    uri = str(tmp_path / "s")
    _strings(uri, values)
    got = open_array(uri)[:]
    with tiledb.open(uri) as A:
        want = A[:]
    assert_same(got, want)
    assert got["s"].tolist() == values.tolist()
    assert all(type(v) is str for v in got["s"])


def test_repeated_ascii_strings_equal_tiledb_py(tmp_path):
    rng = np.random.default_rng(2)
    values = np.array([b"x", b"yy", b"", b"zzz" * 9], object)[rng.integers(0, 4, 3000)]
    uri = str(tmp_path / "ascii")
    _strings(uri, values, dtype="ascii")
    got = open_array(uri)[:]
    with tiledb.open(uri) as A:
        assert_same(got, A[:])
    assert got["s"].tolist() == values.tolist()


@pytest.mark.parametrize("cells", [64, 3])  # (bulk through pyarrow, and cell by cell)
@pytest.mark.parametrize("sparse", [False, True])
def test_ascii_cells_ending_in_nul_read_as_tiledb_py_reads_them(tmp_path, sparse, cells):
    """ASCII cells keep their trailing NULs (a cell of one NUL reads as empty), in attributes, nullable ones and
    dimensions, as TileDB-Py 0.36 reads them; cells TileDB-Py cannot write (it cuts the NULs), so we write them."""
    words = np.array([b"a\0\0", b"b", b"\0", b"c\0d\0", b""], object)[np.arange(cells) % 5]
    dims = [tiledb.Dim("d", dtype="ascii")] if sparse else [tiledb.Dim("d", domain=(0, cells - 1), dtype=np.int64)]
    attrs = [tiledb.Attr("s", dtype="ascii", var=True), tiledb.Attr("n", dtype="ascii", var=True, nullable=True)]
    uri = str(tmp_path / "a")
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=sparse,
                                                allows_duplicates=sparse))
    data = {"s": words, "n": np.ma.masked_array(words, np.arange(cells) % 3 == 0)}
    write(uri, data, **({"coords": [words]} if sparse else {}))
    with tiledb.open(uri) as A:
        want = A.query(order="U" if sparse else "C")[:]
    got = open_array(uri).read(order="U" if sparse else "C")
    assert b"a\0\0" in want["s"].tolist()
    for name in want:
        assert list(got[name]) == list(want[name]), name


@pytest.mark.parametrize("arrow", [True, False], ids=["pyarrow", "numpy"])
@pytest.mark.parametrize("extent", [5_000, 40, 7], ids=["a tile", "tiles", "small tiles"])
@pytest.mark.parametrize("repeat", [True, False], ids=["repeated", "distinct"])
def test_var_strings_of_zstd_tiles_read_as_tiledb_py_reads_them(tmp_path, arrow, extent, repeat, monkeypatch):
    """Var strings of zstd tiles, one tile or slabs of small ones (their bytes views of what the filters
    decoded), read as TileDB-Py reads them, with pyarrow or numpy making the values (numpy's slices bytes)."""
    _with_or_without_pyarrow(monkeypatch, arrow)
    cells = [f"w{k % 9}é" * (k % 3) if repeat else f"cell {k} é" for k in range(5_000)]
    uri = str(tmp_path / "a")
    dim = tiledb.Dim("d", domain=(0, len(cells) - 1), tile=extent, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[
        tiledb.Attr("s", dtype=str, var=True, filters=[tiledb.ZstdFilter()]),
        tiledb.Attr("b", dtype="ascii", var=True, filters=[tiledb.ZstdFilter()])]))
    with tiledb.open(uri, "w") as A:
        A[:] = {"s": np.array(cells, object), "b": np.array([c.encode("utf-8") for c in cells], object)}
    with tiledb.open(uri) as A:
        want = A[:]
    got = open_array(uri)[:]
    assert got["s"].tolist() == want["s"].tolist() == cells
    assert got["b"].tolist() == want["b"].tolist()


def _var_tile(cells):
    data = b"".join(cells)
    offsets = np.cumsum([0] + [len(c) for c in cells[:-1]]).astype(np.uint64)
    return data, offsets


EXPECTED = {Datatype.STRING_UTF8: lambda c: c.decode("utf-8", "surrogateescape"),
            Datatype.STRING_ASCII: lambda c: c, Datatype.CHAR: lambda c: c}


def _with_or_without_pyarrow(monkeypatch, arrow: bool):
    """Var strings go through pyarrow where it is installed, else through numpy: pick one."""
    if arrow:
        pytest.importorskip("pyarrow")
    monkeypatch.setattr(strings_mod, "_pyarrow", arrow)


def test_strings_through_pyarrow_do_not_import_pandas(tmp_path):
    """pyarrow imports pandas (0.2 s) when given numpy arrays or asked for them: a process that reads
    repeated var strings and writes dictionary-filtered ones through pyarrow never loads it."""
    pytest.importorskip("pyarrow")
    import subprocess
    _strings(str(tmp_path / "read"), WORDS[np.arange(80_000) % len(WORDS)])
    dim = tiledb.Dim("i", domain=(0, 79_999), tile=40_000, dtype=np.int64)
    tiledb.Array.create(str(tmp_path / "write"), tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[
        tiledb.Attr("s", dtype=str, var=True, filters=[tiledb.DictionaryFilter()])]))
    code = ("import sys, numpy as np, tdbformat\n"
            "got = tdbformat.open_array(sys.argv[1]).read()['s']\n"
            "tdbformat.write(sys.argv[2], {'s': got}, timestamp=1)\n"
            "print('pyarrow' in sys.modules, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "read"), str(tmp_path / "write")],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False"]
    with tiledb.open(str(tmp_path / "read")) as A, tiledb.open(str(tmp_path / "write")) as B:
        assert B[:]["s"].tolist() == A[:]["s"].tolist()


@pytest.mark.parametrize("arrow", [True, False])
@pytest.mark.parametrize("datatype", list(EXPECTED))
@pytest.mark.parametrize("repeat", [True, False])
def test_var_cells_shared_or_not_are_the_loops_values(datatype, repeat, arrow, monkeypatch):
    """Repeated cells (shared objects, one per distinct value) and distinct ones give what slicing and
    converting cell by cell gives, bad UTF-8 and ASCII ending in NUL included, with or without pyarrow."""
    _with_or_without_pyarrow(monkeypatch, arrow)
    words = [b"ab", b"", b"\xc3\xa9-\xff", b"x\0\0", b"\xe2\x82"]
    cells = [words[i % 5] for i in range(3000)] if repeat else [b"%d\xc3\xa9" % i for i in range(3000)]
    info = FieldInfo("s", datatype, VAR_NUM, True, False, None)
    got = cells_mod.split_var(*_var_tile(cells), info)
    assert got.dtype == object and got.tolist() == [EXPECTED[datatype](c) for c in cells]
    assert (len({id(v) for v in got}) <= 5) == repeat


@pytest.mark.parametrize("into", [False, True])
@pytest.mark.parametrize("threads, cells, parts", [(2, 300_000, 2), (3, 300_000, 3), (2, 100_000, 1), (1, 300_000, 1)])
def test_repeated_var_cells_are_grouped_a_part_a_thread_into_the_values_of_one_part(threads, cells, parts, into,
                                                                                    monkeypatch):
    """A large tile of repeated strings is grouped by pyarrow a part of its cells a thread (65,536 cells a
    part at least): the values are those the cells give cell by cell, a part's equal cells share one value,
    and they go into ``into`` where given (a place in the read's result)."""
    pytest.importorskip("pyarrow")
    _with_or_without_pyarrow(monkeypatch, True)
    encoded, each = [], cells_mod.each
    monkeypatch.setattr(cells_mod, "each", lambda fn, items, threads: encoded.append((len(items), threads)) or
                        each(fn, items, threads))
    words = [b"w\xc3\xa9%d" % (i % 97) * (i % 3) for i in range(97)]
    values = [words[i] for i in np.random.default_rng(3).integers(0, len(words), cells)]
    info = FieldInfo("s", Datatype.STRING_UTF8, VAR_NUM, True, False, None)
    out = np.empty(cells, object) if into else None
    got = cells_mod.split_var(*_var_tile(values), info, out, threads)
    assert got.dtype == object and got.tolist() == [w.decode() for w in values]
    assert (got is out) == into
    assert encoded == [(parts, parts)]  # (a part a thread)
    assert len({id(v) for v in got}) <= parts * len(words)


@pytest.mark.parametrize("arrow", [True, False])
@pytest.mark.parametrize("dtype", [str, "ascii"])
@pytest.mark.parametrize("pipeline", ["RLE", "dictionary", "RLE+zstd"])
def test_string_rle_and_dictionary_tiles_read_as_tiledb_py_reads_them(tmp_path, monkeypatch, pipeline, dtype, arrow):
    """Tiles TileDB-Py wrote through string RLE or dictionary, whose strings repeat in runs and across runs
    (a value made once per distinct string), with empty cells, cells of one NUL and long cells, read as
    TileDB-Py reads them, with or without pyarrow."""
    _with_or_without_pyarrow(monkeypatch, arrow)
    rng = np.random.default_rng(11)
    words = np.array(["", "\0", "a", "é-ü", "w3-é" * 3, "long " * 12] + [f"w{i}" for i in range(300)], object)
    values = words[np.repeat(rng.integers(0, len(words), 9000), rng.integers(1, 6, 9000))[:30_000]]
    if dtype == "ascii":
        values = np.array([v.encode("utf-8").replace("é".encode(), b"e").replace("ü".encode(), b"u")
                           for v in values], object)
    first = tiledb.DictionaryFilter() if pipeline == "dictionary" else tiledb.RleFilter()
    filters = [first, tiledb.ZstdFilter()] if pipeline.endswith("zstd") else [first]
    uri = str(tmp_path / "a")
    dim = tiledb.Dim("i", domain=(0, len(values) - 1), tile=7_500, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[
        tiledb.Attr("s", dtype=dtype, var=True, filters=filters)]))
    with tiledb.open(uri, "w") as A:
        A[:] = {"s": values}
    with tiledb.open(uri) as A:
        want = A[:]["s"]
        part = A[1234:20001]["s"]
    got = open_array(uri).read()["s"]
    assert got.tolist() == want.tolist()
    assert open_array(uri)[1234:20001]["s"].tolist() == part.tolist()
    assert len({id(v) for v in got}) < 4 * len(words)  # a value per distinct string (and tile), not per run


@pytest.mark.parametrize("enabled", [True, False])
def test_pyarrow_is_imported_for_large_string_tiles_only_and_can_be_turned_off(tmp_path, enabled):
    """Where pyarrow is installed, a process that reads var strings imports it once a tile is large enough to
    pay for the import, as pandas imports it where it is installed; never for small tiles, nor once turned
    off (set_pyarrow)."""
    pytest.importorskip("pyarrow")
    import subprocess
    for name, n in [("small", 2_000), ("large", 80_000)]:  # (tiles of a quarter: 500 and 20,000 cells)
        _strings(str(tmp_path / name), WORDS[np.arange(n) % len(WORDS)])
    code = (f"import sys, tdbformat\nfrom tdbformat.filters import set_pyarrow\nset_pyarrow({enabled})\n"
            f"a = tdbformat.open_array(sys.argv[1]).read()\nprint('pyarrow' in sys.modules)\n"
            f"b = tdbformat.open_array(sys.argv[2]).read()\nprint('pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "small"), str(tmp_path / "large")],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", str(enabled)]


@pytest.mark.parametrize("arrow", [True, False])
@pytest.mark.parametrize("datatype", list(EXPECTED))
@pytest.mark.parametrize("codec", ["RLE", "dictionary"])
def test_string_rle_and_dictionary_entries_give_each_cells_value(codec, datatype, arrow, monkeypatch):
    """The strings a string RLE or dictionary tile decodes to become each cell's value as converting cell by
    cell gives it: bad UTF-8 kept as surrogates, a cell of one NUL empty, ASCII ending in NUL kept, with or
    without pyarrow making the distinct values."""
    from tdbformat.filters.strings import StringDictionary, StringRle
    _with_or_without_pyarrow(monkeypatch, arrow)
    rng = np.random.default_rng(5)
    words = [b"ab", b"", b"\0", b"\xc3\xa9-\xff", b"x\0\0", b"\xe2\x82"] + [b"w%d" % i for i in range(200)]
    cells = [words[i] for i in np.repeat(rng.integers(0, len(words), 9000), rng.integers(1, 5, 9000))[:20_000]]
    data, offsets = _var_tile(cells)
    codec = StringRle() if codec == "RLE" else StringDictionary()
    (md,), (encoded,) = codec.forward_strings(None, data, offsets)
    _, entries = codec.reverse_entries(type("Ctx", (), {"limit": 1 << 30}), md, encoded)
    info = FieldInfo("s", datatype, VAR_NUM, True, False, None)
    got = cells_mod.entry_values(entries, info)
    assert got.dtype == object and got.tolist() == [EXPECTED[datatype](c) if c != b"\0" else EXPECTED[datatype](b"")
                                                    for c in cells]


@pytest.mark.parametrize("into", [None, "fits", "short"])
def test_string_rle_runs_of_no_cells_and_a_place_in_the_result(into):
    """Runs of zero cells (TileDB writes none, a hand-made tile may) hold no cell and shift no other run's
    cells; the values go into ``into`` where it has as many cells (a place in a dense read's result), and a
    new array otherwise, ``into`` untouched."""
    from tdbformat.filters.pipeline import Entries
    rng = np.random.default_rng(9)
    strings = [b"w%d" % (i % 90) for i in range(400)]
    repeats = rng.integers(0, 4, len(strings))
    repeats[:3], repeats[-2:] = 0, 0
    buf = np.frombuffer(b"".join(strings), np.uint8)
    lengths = np.array([len(s) for s in strings])
    entries = Entries(buf, np.cumsum(lengths) - lengths, lengths, None, repeats, int((lengths * repeats).sum()))
    want = [s for s, r in zip(strings, repeats) for _ in range(r)]
    place = np.full(len(want) + (into == "short"), "old", object) if into else None
    got = cells_mod.entry_values(entries, FieldInfo("s", Datatype.STRING_ASCII, VAR_NUM, True, False, None), place)
    assert got.tolist() == want
    assert (got is place) == (into == "fits")
    if into == "short":
        assert set(place.tolist()) == {"old"}


@pytest.mark.parametrize("arrow", [True, False])
def test_blob_cells_of_one_nul_stay_a_nul_as_tiledb_py_reads_them(tmp_path, monkeypatch, arrow):
    """A var BLOB cell of one NUL byte is that byte (only string cells of one NUL read as empty), through
    pyarrow's bulk conversion as cell by cell; TileDB-Py gives memoryviews of the same bytes."""
    _with_or_without_pyarrow(monkeypatch, arrow)
    uri = str(tmp_path / "b")
    dim = tiledb.Dim("i", domain=(0, 199), tile=200, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[
        tiledb.Attr("b", dtype="blob", var=True)]))
    values = np.array([b"\0" if i % 2 else bytes([i, 0]) * (i % 3) for i in range(200)], object)
    with tiledb.open(uri, "w") as A:
        A[:] = {"b": values}
    with tiledb.open(uri) as A:
        want = [bytes(v) for v in A[:]["b"]]
    assert open_array(uri).read()["b"].tolist() == want


def test_a_pyarrow_that_cannot_load_leaves_strings_to_numpy(tmp_path, monkeypatch):
    """pyarrow failing to load (a process short of address space fails to map its libraries) is no error of
    the read: numpy makes the same values."""
    import builtins
    values = WORDS[np.arange(80_000) % len(WORDS)]
    _strings(str(tmp_path / "a"), values)
    real = builtins.__import__

    def failing(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise OSError("failed to map segment from shared object")
        return real(name, *args, **kwargs)
    monkeypatch.delitem(sys.modules, "pyarrow", raising=False)  # (restored after the test, as it was)
    monkeypatch.setattr(builtins, "__import__", failing)
    strings_mod._import_pyarrow.cache_clear()
    try:
        got = open_array(str(tmp_path / "a")).read()["s"]
    finally:
        strings_mod._import_pyarrow.cache_clear()
    assert got.tolist() == values.tolist()


@pytest.mark.parametrize("spread", [16, 1])
def test_shared_var_cells_whose_hash_slots_collide_still_get_their_own_values(monkeypatch, spread):
    """Cells share a value only with equal cells: with a table of about one slot per distinct value, most
    slots hold several strings, which go round again and then one by one."""
    monkeypatch.setattr(strings_mod, "_SPREAD", spread)
    _with_or_without_pyarrow(monkeypatch, False)
    rng = np.random.default_rng(7)
    words = [b"w%d" % i for i in range(700)] + [b"%d-long-%d" % (i, i) * 3 for i in range(60)]  # up to 8 words
    cells = [words[i] for i in rng.integers(0, len(words), 20_000)]
    info = FieldInfo("s", Datatype.STRING_ASCII, VAR_NUM, True, False, None)
    got = cells_mod.split_var(*_var_tile(cells), info)
    assert got.tolist() == cells
    assert len({id(v) for v in got}) < 2_000  # shared, not one value per cell


def _sparse(uri, frags):
    dims = [tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64),
            tiledb.Dim("y", domain=(0, 99), tile=10, dtype=np.int64)]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=50,
                                                attrs=[tiledb.Attr("a", dtype=np.float64)]))
    rng = np.random.default_rng(3)
    for f in range(frags):
        cells = rng.choice(10_000, 400, replace=False)
        with tiledb.open(uri, "w", timestamp=f + 1) as A:
            A[cells // 100, cells % 100] = rng.random(400)


@pytest.mark.parametrize("frags", [1, 3])
@pytest.mark.parametrize("order", ["U", "G", "C"])
def test_ranges_around_and_inside_fragments_equal_tiledb_py(tmp_path, frags, order):
    """A range that holds a fragment's whole non-empty domain needs no cell check; one that cuts it does."""
    uri = str(tmp_path / "sp")
    _sparse(uri, frags)
    ours = open_array(uri)
    with tiledb.open(uri) as A:
        for sel in ((slice(None), slice(None)), (slice(0, 100), slice(0, 100)), (slice(20, 31), slice(None)),
                    (slice(5, 6), slice(40, 90))):
            assert_same(ours.query(order=order)[sel], A.query(order=order)[sel])
        assert_same(ours.query(order=order).multi_index[[(0, 99)], [(10, 95)]],
                    A.query(order=order).multi_index[[(0, 99)], [(10, 95)]])


def test_index_fields_follow_a_schema_edited_in_place(arrays_schema):
    """The cached field lists are rebuilt when a schema's attributes are replaced, and a caller's copy is
    its own to change."""
    schema = arrays_schema
    before = [f.name for f in index_fields(schema, 22)]
    first = index_fields(schema, 22)
    first.append("mine")
    assert [f.name for f in index_fields(schema, 22)] == before
    schema.attributes = ListContainer(schema.attributes[1:])
    after = [f.name for f in index_fields(schema, 22)]
    assert after == before[1:]
    assert [f.name for f in index_fields(schema, 22, has_timestamps=True)] == after + ["__timestamps"]


@pytest.fixture
def arrays_schema(tmp_path):
    uri = str(tmp_path / "two")
    dim = tiledb.Dim("d", domain=(0, 9), tile=5, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True, attrs=[
        tiledb.Attr("a", dtype=np.int32), tiledb.Attr("b", dtype=np.float64)]))
    return Container(open_array(uri).schema)


def _child_reads(uri, queue):
    queue.put(open_array(uri)[:]["a"].tolist())


@pytest.mark.skipif(sys.platform != "linux", reason="fork")
def test_a_forked_child_reads_with_its_own_pool(tmp_path, monkeypatch):
    """The decoding pools are shared between reads; a child forked after a read does not inherit their
    threads (the fields' pool too, which reads of this size use once the threshold is 1 cell)."""
    monkeypatch.setattr(tiles_mod, "_AT_ONCE", 1)
    uri = str(tmp_path / "sp")
    _sparse(uri, 2)
    want = open_array(uri)[:]["a"].tolist()  # the parent's pools now have threads
    assert tiles_mod._fields_pool.cache_info().currsize == 1
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child_reads, args=(uri, queue))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == want


def test_a_failing_field_leaves_no_other_field_decoding():
    """A sparse fragment's fields decode at once; when one fails, the read raises only after the others have
    ended, so no thread is still decoding for a read its caller saw fail (a test that stops tracemalloc next
    would race it: tests/conftest.py)."""
    from tdbformat import FormatError
    ended = threading.Event()

    def fails():
        raise FormatError("a broken tile")

    def slow():
        time.sleep(0.3)
        ended.set()

    with pytest.raises(FormatError, match="a broken tile"):
        tiles_mod.at_once([fails, slow], True)
    assert ended.is_set()


def test_opening_reads_no_fragment_metadata(tmp_path, monkeypatch):
    """Opening lists fragments; a fragment's metadata file is read when a read first needs it, and a broken
    one is a FormatError then."""
    from tdbformat import FormatError
    from tdbformat.storage import LocalStorage
    uri = tmp_path / "sp"
    _sparse(str(uri), 2)
    read, seen = LocalStorage.read, []
    monkeypatch.setattr(LocalStorage, "read", lambda self, path, *a, **k: seen.append(Path(path).name) or
                        read(self, path, *a, **k))
    arr = open_array(uri)
    assert len(arr.fragments) == 2 and "__fragment_metadata.tdb" not in seen
    arr[:]
    assert seen.count("__fragment_metadata.tdb") == 2
    meta = sorted((uri / "__fragments").glob("*/__fragment_metadata.tdb"))[-1]
    meta.write_bytes(b"\0" * 7)
    arr = open_array(uri)
    with pytest.raises(FormatError):
        arr[:]


@pytest.mark.parametrize("layout", [Layout.ROW_MAJOR, Layout.COL_MAJOR])
@pytest.mark.parametrize("dtype", [np.int32, np.uint64, np.int64])
def test_linear_keys_sort_as_lexsort_does(layout, dtype):
    """A stable sort of the one-number keys is numpy's lexsort of the coordinates, duplicates kept in their
    incoming order; coordinates outside the domain, or a float dimension, give no key."""
    rng = np.random.default_rng(4)
    lows = [3, 0] if dtype is np.uint64 else [-5, 2]
    dims = [Container(domain=[lo, lo + 40], tile_extent=7) for lo in lows]
    coords = [(rng.integers(0, 41, 5000) + lo).astype(dtype) for lo in lows]
    key = order_mod.linear_keys(coords, dims, layout)
    want = np.lexsort(coords[::-1] if layout == Layout.ROW_MAJOR else coords)
    np.testing.assert_array_equal(np.argsort(key, kind="stable"), want)
    outside = [c.copy() for c in coords]
    outside[1][7] = lows[1] + 41
    assert order_mod.linear_keys(outside, dims, layout) is None
    assert order_mod.linear_keys([coords[0], coords[1].astype(np.float64)], dims, layout) is None


def test_reads_on_one_thread_run_side_by_side(tmp_path, monkeypatch):
    """threads=1 decodes in the caller's thread: reads from several threads (as dask's tasks make them)
    each decode in their own thread, not one after another in a shared worker."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from tdbformat.filters import pipeline
    uri = str(tmp_path / "sp")
    _sparse(uri, 3)
    arr = open_array(uri)
    want = arr.read(threads=1)["a"].tolist()
    seen, decode = set(), pipeline._reverse_run

    def chunks(*a, **k):  # where every tile's chunks are undone
        seen.add(threading.get_ident())
        return decode(*a, **k)
    monkeypatch.setattr(pipeline, "_reverse_run", chunks)
    with ThreadPoolExecutor(3) as callers:
        got = list(callers.map(lambda _: (threading.get_ident(), arr.read(threads=1)["a"].tolist()), range(3)))
    assert all(values == want for _, values in got)
    assert seen == {ident for ident, _ in got}


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_corrupt_tile_among_many_is_named(tmp_path, threads, sparse):
    """The tiles of a field decode as one run of chunks; a tile that fails still fails by its own name."""
    from tdbformat.errors import FormatError
    uri = str(tmp_path / "arr")
    dims = [tiledb.Dim("x", domain=(0, 999), tile=100, dtype=np.int64)]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=sparse, capacity=100, attrs=[
        tiledb.Attr("a", dtype=np.float64, filters=[tiledb.ZstdFilter()])]))
    values = np.random.default_rng(0).random(1000)
    with tiledb.open(uri, "w") as A:
        if sparse:
            A[np.arange(1000)] = values
        else:
            A[:] = values
    arr = open_array(uri)
    assert arr.read(threads=threads)["a"].tolist() == values.tolist()
    frag = arr.fragments[0]
    name, start, end = frag.tile_span("", frag.index("a"), 6)
    path = Path(frag.path) / name
    raw = bytearray(path.read_bytes())
    at = start + 8 + 12 + 16  # the tile's chunk count, the chunk's header, the compressor's: the zstd frame
    assert raw[at:at + 4] == b"\x28\xb5\x2f\xfd"
    raw[at:at + 4] = b"\xff" * 4
    path.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match=r"field a, tile 6 at byte offset"):
        open_array(uri).read(threads=threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_local_dense_read_holds_a_few_blocks_of_a_file(tmp_path, monkeypatch, threads):
    """A read takes a local data file in blocks of at most tiles.BLOCK bytes, each once, not the whole file at
    once (which the allocator mapped afresh on every read), and gives TileDB-Py's cells."""
    from tdbformat.array import tiles as tiles_mod
    from tdbformat.storage import LocalStorage
    uri = str(tmp_path / "d")
    dims = [tiledb.Dim(n, domain=(0, 1023), tile=128, dtype=np.int64) for n in "rc"]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=[tiledb.Attr("a", np.int32)]))
    with tiledb.open(uri, "w") as A:
        A[:] = np.random.default_rng(0).integers(0, 2**31, (1024, 1024), dtype=np.int32)
    (data,) = Path(uri).glob("__fragments/*/a0.tdb")
    reads, real = [], LocalStorage.read
    monkeypatch.setattr(LocalStorage, "read", lambda self, path, start=0, end=None, what="file": (
        reads.append((Path(path), start, end)) or real(self, path, start, end, what)))
    got = open_array(uri).read(threads=threads)
    with tiledb.open(uri) as A:
        assert_same(got, A[:])
    blocks = sorted((s, e) for p, s, e in reads if p == data)
    assert data.stat().st_size > 3 * tiles_mod.BLOCK and len(blocks) >= 4
    assert all(e - s <= tiles_mod.BLOCK for s, e in blocks)
    assert [s for s, _ in blocks[1:]] == [e for _, e in blocks[:-1]] and blocks[-1][1] == data.stat().st_size


def test_blocks_let_go_and_read_again():
    """A block is read when a tile in it is first asked for, let go after its last tile, and read again if a
    tile is asked for once more; a tile larger than a block is a block of its own."""
    from tdbformat.array import tiles as tiles_mod

    class Fake:
        def __init__(self):
            self.reads = []

        def read(self, path, start, end, what):
            self.reads.append((start, end))
            return bytes(end - start)

    big, size = tiles_mod.BLOCK + 10, tiles_mod.BLOCK // 4
    spans = [(0, size), (size, 2 * size), (2 * size, 2 * size + big), (2 * size + big, 3 * size + big)]
    fake = Fake()
    blocks = tiles_mod._Blocks(fake, "f", spans)
    assert [len(blocks.get(s)) for s in spans] == [size, size, big, size] and blocks.get((1, 2)) is None
    assert fake.reads == [(0, 2 * size), (2 * size, 2 * size + big), (2 * size + big, 3 * size + big)]
    assert all(b[2] is None for b in blocks.blocks)  # every block let go once its tiles were handed out
    assert len(blocks.get(spans[1])) == size and fake.reads[-1] == (0, 2 * size)


def test_a_read_of_one_small_tile_per_field_hands_nothing_to_threads(tmp_path, monkeypatch):
    """Handing a small tile (or its chunks) to a thread costs more than decoding it: a range read that meets
    one 80 KB tile of each field decodes them in the calling thread, and gives TileDB-Py's cells."""
    from concurrent.futures import ThreadPoolExecutor
    uri = str(tmp_path / "s")
    dims = [tiledb.Dim(n, domain=(0, 9999), tile=10_000, dtype=np.int64) for n in "xy"]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=10_000, attrs=[
        tiledb.Attr("a", np.float64, filters=[tiledb.ZstdFilter()])]))
    rng = np.random.default_rng(0)
    cells = rng.choice(10_000 * 10_000, 40_000, replace=False)
    with tiledb.open(uri, "w") as A:
        A[cells // 10_000, cells % 10_000] = rng.random(40_000)
    arr = open_array(uri)
    arr.multi_index[0:10]  # the metadata is loaded, and the read pool made
    handed, submit = [], ThreadPoolExecutor.submit
    monkeypatch.setattr(ThreadPoolExecutor, "submit", lambda self, *a, **k: handed.append(a) or submit(self, *a, **k))
    got = arr.multi_index[2000:2010]
    with tiledb.open(uri) as A:
        assert_same(got, A.multi_index[2000:2010])
    assert len(got["a"]) > 0 and handed == []


def test_a_field_that_compresses_little_holds_a_block_of_its_stored_tiles(tmp_path, monkeypatch):
    """A sparse field's tiles decode into one output a block of stored bytes at a time, each block let go
    once decoded: random float64 (which zstd leaves as they are) peaks at its output and a block or two,
    where holding all its stored tiles beside the output took twice the output."""
    import tracemalloc
    uri = str(tmp_path / "sp")
    dim = tiledb.Dim("x", domain=(0, 2**20), tile=1024, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True, capacity=8192, attrs=[
        tiledb.Attr("a", dtype=np.float64, filters=[tiledb.ZstdFilter()])]))
    values = np.random.default_rng(2).random(262_144)
    with tiledb.open(uri, "w") as A:
        A[np.arange(len(values))] = values
    monkeypatch.setattr(tiles_mod, "BLOCK", 128 << 10)
    arr = open_array(uri)
    frag = arr.fragments[0]
    from tdbformat.array import _INLINE  # one thread: stopping tracemalloc races with other threads' numpy
    tracemalloc.start()
    try:
        got, _ = arr.tiles.field(frag, frag.index("a"), list(range(frag.tile_num())), _INLINE)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(got, values)
    assert peak < values.nbytes + 4 * (128 << 10) + (256 << 10), peak


@pytest.mark.parametrize("order", ["U", "G", "C"])
def test_sparse_zstd_tiles_decoded_whole_equal_tiledb_py(tmp_path, monkeypatch, order):
    """A sparse array of zstd tiles (coordinates that compress 30 times and more, which the whole-tile path
    decodes a round at a time, and float64 that do not) reads through ``FilterPlan.unfilter_tiles`` for
    every field, equal to TileDB-Py, a box of it too."""
    uri = str(tmp_path / "a")
    dims = [tiledb.Dim(d, domain=(0, 99_999), tile=1000, dtype=np.int64) for d in "xy"]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=2000, attrs=[
        tiledb.Attr("a", dtype=np.float64, filters=[tiledb.ZstdFilter()])]))
    rng = np.random.default_rng(7)
    cells = np.arange(300_000)  # a full grid of 750 x 400: x repeats in runs (2.4 MB that compress 100 times)
    with tiledb.open(uri, "w") as A:
        A[cells // 400 * 100, cells % 400 * 100] = rng.random(len(cells))
    from tdbformat.filters import FilterPlan
    whole, real = [], FilterPlan.unfilter_tiles

    def counted(self, tiles, out=None, threads=1, limit=0):
        got = real(self, tiles, out, threads, limit)
        whole.append((out is None, got is True or out is None and got is not None))
        return got
    monkeypatch.setattr(FilterPlan, "unfilter_tiles", counted)
    with tiledb.open(uri) as A:
        want, box = A.query(order=order)[:], A.query(order=order).multi_index[1000:30_000, 5000:90_000]
    arr = open_array(uri)
    assert_same(arr.query(order=order)[:], want)
    assert_same(arr.query(order=order).multi_index[1000:30_000, 5000:90_000], box)
    assert {into for into, _ in whole} == {False, True} and all(done for _, done in whole), whole


def test_large_dense_tiles_are_shared_out_a_tile_a_task(tmp_path, monkeypatch):
    """Ten tiles of 100,000 int64 on two threads: a task a tile, so that neither thread ends with two tiles
    left where the other has none (runs of 2, 3, 2, 3 tiles did: 33 ms where 5 each took 28); the values are
    TileDB-Py's."""
    import tdbformat.array as array_mod
    uri = str(tmp_path / "big")
    dim = tiledb.Dim("i", domain=(0, 999_999), tile=100_000, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[
        tiledb.Attr("a", dtype=np.int64, filters=[tiledb.ZstdFilter()])]))
    with tiledb.open(uri, "w") as A:
        A[:] = {"a": np.arange(1_000_000) * 7}
    with tiledb.open(uri) as A:
        want = A[:]["a"]
    pool, runs = array_mod._pool(2), []

    class Spy:  # the read's pool, counting the tiles of each task it is given
        _max_workers = pool._max_workers

        def __getattr__(self, name):
            return getattr(pool, name)

        def map(self, fn, todo, *more):
            todo = list(todo)
            runs.extend(len(run) for run in todo)
            return pool.map(fn, todo, *more)
    monkeypatch.setattr(array_mod, "_pool", lambda threads: Spy())
    np.testing.assert_array_equal(open_array(uri).read(threads=2)["a"], want)
    assert runs == [1] * 10
