"""The writer: arrays created and written by tdbformat at every format version open in TileDB-Py (the oracle)
and read back equal; v23 arrays read back with our reader and every file rebuilds byte for byte; a failed
write leaves the array as it was, and what the writer refuses it refuses before writing (byte fidelity:
test_writer_fidelity.py; hypothesis-made schemas and TileDB-Py's behaviours: test_writer_props.py)."""

from __future__ import annotations

import contextlib
import glob
import importlib
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import tiledb

import tdbformat
from tdbformat.write.create import create, schema_at
from tdbformat.write.writer import open_writer, write
from tdbformat import parse_file
from tdbformat.layout import FRAGMENT_METADATA, load_schemas
from tdbformat.storage import LocalStorage, storage_for

import tiledb_arrays

CORPUS = Path(__file__).parents[1] / "data" / "corpus"
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
        dims = [d.name for d in tdbformat.structs.dimensions(src.schema)]
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
    tiledb_arrays.create(tmp_path / "theirs", [("d", (0, 39), 10)],
                         [("s", "ascii", {"nullable": True}), ("c", np.dtype("S3"))])
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
    tiledb_arrays.create(tmp_path / "theirs", [("d", (0, 59), 20)], [("s", "ascii", {"filters": filters})])
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
    from tdbformat.write.fragment_writer import _summary_bound
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


@pytest.mark.parametrize("filters, shared", [([tiledb.ZstdFilter()], True), ([tiledb.LZ4Filter()], True),
                                             ([tiledb.RleFilter(), tiledb.ZstdFilter()], False)])
def test_large_tiles_share_their_chunks_where_the_filters_let_the_gil_go(tmp_path, monkeypatch, filters, shared):
    """Tiles of more than 2 MiB whose filters all run in C without the GIL (zstd, lz4) have their chunks
    compressed by the filters' threads, runs of chunks of the tiles in flight in turn, so that neither thread
    ends the last tile alone; RLE holds the GIL, so each tile stays with one encoding thread. The bytes are those
    of a write on one thread; TileDB-Py reads the values."""
    from tdbformat.filters import compression
    n, extent = 1 << 21, 1 << 19  # four tiles of 4 MiB
    uri, one = str(tmp_path / "a"), str(tmp_path / "one")
    for path in (uri, one):
        tiledb.Array.create(path, tiledb.ArraySchema(domain=tiledb.Domain(tiledb.Dim(
            "d", domain=(0, n - 1), tile=extent, dtype=np.uint64)), attrs=[tiledb.Attr("a", np.int64, filters=filters)]))
    values = np.repeat(np.random.default_rng(6).integers(-2**40, 2**40, n // 8), 8)
    names = set()
    for codec in (compression.Zstd, compression.Lz4):
        real = codec.forward_many

        def spy(self, ctx, chunks, real=real):
            names.add(threading.current_thread().name.rsplit("_", 1)[0])
            return real(self, ctx, chunks)
        monkeypatch.setattr(codec, "forward_many", spy)
    write(uri, {"a": values}, timestamp=1, threads=2)
    monkeypatch.undo()
    assert names == ({"tdbformat-filters"} if shared else {"tdbformat-encode"})
    write(one, {"a": values}, timestamp=1, threads=1)
    assert next(Path(uri).glob("__fragments/*/a0.tdb")).read_bytes() == \
        next(Path(one).glob("__fragments/*/a0.tdb")).read_bytes()
    with tiledb.open(uri) as A:
        assert np.array_equal(A[:]["a"], values)


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
    from tdbformat.write import fragment_writer
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


@pytest.mark.parametrize("gathered", [True, False], ids=["gathered", "tile-by-tile"])
@pytest.mark.parametrize("version", [4, 22])
def test_a_data_file_that_cannot_be_written_fails_the_write_and_leaves_the_array_as_it_was(tmp_path, monkeypatch,
                                                                                          version, gathered):
    """Tiles go to their files in a thread of their own, gathered into writes of a MiB (or one by one): a write
    the disk refuses (the one that holds the small tiles; the second tile's) still fails the write, naming the
    file, before anything commits."""
    if not gathered:
        monkeypatch.setattr(importlib.import_module("tdbformat.write.fragment_writer"), "_GATHER", 0)
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

                def write_parts(self, parts):
                    Full.calls += 1
                    if Full.calls > (0 if gathered else 1):
                        raise OSError(28, "No space left on device")
                    return f.write_parts(parts)
            yield Full()
    monkeypatch.setattr(LocalStorage, "writer", full_disk)
    with pytest.raises(tdbformat.StorageError, match="No space left") as err:
        write(path, dense_data(np.random.default_rng(2), (8, 6), version >= 7), timestamp=2, max_chunk_size=64)
    assert err.value.file is not None and err.value.file.endswith(".tdb")
    monkeypatch.undo()
    with tiledb.open(path) as A:
        assert A[:]["i"].tolist() == first["i"].tolist()


def test_a_tiles_filtered_chunks_go_to_the_file_as_they_are_not_joined(tmp_path, monkeypatch):
    """A large tile's filtered chunks and their headers are handed to the disk as pieces, one ``writev`` a tile:
    a join of them made a copy of every tile (1.5 ms for a 2 MB one in fresh memory, the GIL held)."""
    from tdbformat.storage import local
    monkeypatch.delenv("TDBFORMAT_FSYNC", raising=False)
    n, extent = 1 << 19, 1 << 18  # two tiles of 2 MiB: 32 chunks of 64 KiB each
    uri = str(tmp_path / "a")
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(tiledb.Dim(
        "d", domain=(0, n - 1), tile=extent, dtype=np.uint64)), attrs=[
        tiledb.Attr("a", np.int64, filters=[tiledb.ZstdFilter()])]))
    values = np.random.default_rng(5).integers(-2**62, 2**62, n)
    real, calls = os.writev, []

    def writev(fd, views):
        calls.append((os.readlink(f"/proc/self/fd/{fd}"), [len(v) for v in views]))
        return real(fd, views)
    monkeypatch.setattr(local.os, "writev", writev)
    write(uri, {"a": values}, timestamp=1)
    monkeypatch.undo()
    tiles = [sizes for path, sizes in calls if path.endswith("a0.tdb")]
    assert len(tiles) == 2 and all(len(sizes) == 1 + 3 * 32 for sizes in tiles)  # tile.md: the count, then a
    assert all(max(sizes) <= (1 << 16) + 64 for sizes in tiles)  # header, metadata and data a chunk
    data_file = next(Path(uri).glob("__fragments/*/a0.tdb"))
    assert data_file.stat().st_size == sum(map(sum, tiles))
    with tiledb.open(uri) as A:
        assert np.array_equal(A[:]["a"], values)


def test_small_tiles_are_filtered_and_written_in_batches_into_the_bytes_of_a_tile_at_a_time(tmp_path, monkeypatch):
    """A write of many small tiles filters them a few at a time on each thread and gathers them into writes of
    about 128 KiB per data file (a task and a write a tile cost a round trip to a thread each, which the next
    tile waited for), and its files are byte for byte those of a task and a write a tile; TileDB-Py reads the
    cells."""
    fragment_writer = importlib.import_module("tdbformat.write.fragment_writer")
    n, extent = 400_000, 1_000
    values = {"a": np.arange(n, dtype=np.int64) * 7,
              "s": np.array([f"cell {k % 997}" for k in range(n)], object)}
    made, calls, tasks = {}, {}, {}
    real, encodes = LocalStorage.writer, fragment_writer._encodes

    @contextlib.contextmanager
    def counted(self, p):
        with real(self, p) as f:
            class Counted:
                def write_parts(self, parts):
                    calls[made["now"]][os.path.basename(p)] = calls[made["now"]].get(os.path.basename(p), 0) + 1
                    return f.write_parts(parts)
            yield Counted()

    class CountedPool:
        def __init__(self, threads):
            self.pool = encodes(threads)

        def submit(self, *args):
            tasks[made["now"]] = tasks.get(made["now"], 0) + 1
            return self.pool.submit(*args)
    monkeypatch.setattr(LocalStorage, "writer", counted)
    monkeypatch.setattr(fragment_writer, "_encodes", CountedPool)
    for batched in (True, False):
        made["now"], calls[batched] = batched, {}
        if not batched:
            monkeypatch.setattr(fragment_writer, "_GATHER", 0)
            monkeypatch.setattr(fragment_writer, "_TASK", 0)
        uri = str(tmp_path / f"batched-{batched}")
        schema = tiledb.ArraySchema(domain=tiledb.Domain(tiledb.Dim("d", domain=(0, n - 1), tile=extent,
                                                                    dtype=np.uint64)), attrs=[
            tiledb.Attr("a", np.int64, filters=[tiledb.ZstdFilter()]), tiledb.Attr("s", str, var=True)])
        tiledb.Array.create(uri, schema)
        write(uri, values, timestamp=1, uuid="0" * 32, threads=2)
        made[batched] = {os.path.relpath(q, uri): Path(q).read_bytes()
                         for q in glob.glob(f"{uri}/__fragments/*/*.tdb") if "metadata" not in q}
        with tiledb.open(uri) as A:
            got = A[:]
        assert got["a"].tolist() == values["a"].tolist() and got["s"].tolist() == values["s"].tolist()
    assert made[True] == made[False]
    sizes = {os.path.basename(q): len(b) for q, b in made[False].items()}
    assert set(sizes) == {"a0.tdb", "a1.tdb", "a1_var.tdb"}
    for name, size in sizes.items():  # a tile a write, against a write of 128 KiB or so
        assert calls[False][name] == n // extent
        assert calls[True][name] <= size // (1 << 17) + 1, (name, size, calls[True][name])
    assert tasks[False] == 2 * n // extent  # a task a tile of each field, against a task of 32 tiles or so
    assert tasks[True] <= 2 * n // extent // 30, tasks


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
