"""The fsspec storage (tdbformat.storage.fsspec) on memory:// and file:// URLs, no server needed: listings,
commits, sizes asked for where a listing gives none, coalesced ranged reads, views, default storage options, a
missing backend naming the extra; local reads merging touching ranges only."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import tdbformat
from tdbformat.errors import FormatError, UnsupportedError
from tdbformat.storage import FsspecStorage, LocalStorage, coalesce, storage_for
from tdbformat.storage.fsspec import MERGE_GAP

import corpus
from common import equal_cells

fsspec = pytest.importorskip("fsspec")
DENSE = corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "dense_2d_multiattr"


@pytest.fixture
def mem():
    root = f"memory://t{uuid.uuid4().hex}"
    yield FsspecStorage("memory"), root
    fsspec.filesystem("memory").rm(root, recursive=True)


def test_storage_for_picks_by_scheme():
    assert isinstance(storage_for("memory://a/b")[0], FsspecStorage)
    assert isinstance(storage_for("/tmp/x")[0], LocalStorage)
    assert storage_for("file:///tmp/x/")[1] == "file:///tmp/x"
    with pytest.raises(ValueError, match="ftpx://"):
        storage_for("ftpx://a/b")
    with pytest.raises(ValueError, match="storage_options"):
        storage_for("/tmp/x", {"anon": True})
    with pytest.raises(TypeError, match="storage_options"):
        storage_for("memory://a", storage_options=["anon"])


def test_memory_reads_lists_commits_and_checks_sizes(mem):
    storage, root = mem
    storage.commit(storage.join(root, "d", "f.tdb"), b"0123456789")
    storage.write(storage.join(root, "d", "g.tdb"), b"ab")
    assert storage.list(storage.join(root, "d")) == ["f.tdb", "g.tdb"]
    assert storage.list(storage.join(root, "nothing")) == []
    assert storage.walk(root) == [f"{root}/d/f.tdb", f"{root}/d/g.tdb"]
    f = storage.join(root, "d", "f.tdb")
    assert storage.read(f, 2, 5) == b"234" and storage.read_tail(f, 4) == (6, b"6789")
    assert storage.is_file(f) and storage.is_dir(storage.join(root, "d")) and not storage.is_file(root)
    with pytest.raises(FormatError, match=r"bytes \[8, 12\) lie outside the 10-byte file") as e:
        storage.read(f, 8, 12)
    assert e.value.file == f
    with pytest.raises(FormatError, match="expected a data file here, found nothing"):
        storage.read(storage.join(root, "d", "missing.tdb"), what="data file")
    storage.delete(storage.join(root, "d", "g.tdb"))
    assert storage.list(storage.join(root, "d")) == ["f.tdb"]  # and no temporary left by commit


@pytest.mark.parametrize("claimed", [None, -1, "10", True])
def test_a_listing_without_sizes_asks_for_them_and_a_store_that_never_says_is_a_format_error(mem, monkeypatch,
                                                                                           claimed):
    """Listings that give no size (HTTP index pages) leave each file's size to an ``info`` when first needed;
    where that gives none either, or nothing a size can be, a FormatError names the file."""
    storage, root = mem
    f = storage.join(root, "d", "f.tdb")
    storage.write(f, b"0123456789")
    storage._sizes.clear()
    find, info = storage.fs.find, storage.fs.info
    monkeypatch.setattr(storage.fs, "find", lambda *a, **k: {n: {**e, "size": None} for n, e in find(*a, **k).items()})
    with storage.snapshot(prefetch=[root]):
        assert storage.read_tail(f, 4) == (6, b"6789")  # the size from info
        storage._sizes[f] = tdbformat.storage.fsspec._UNSIZED
        monkeypatch.setattr(storage.fs, "info", lambda path, **k: {**info(path, **k), "size": claimed})
        with pytest.raises(FormatError, match="the store gives no size for this file") as e:
            storage.size_of(f)
    assert e.value.file == f


def test_read_many_coalesces_neighbours_and_keeps_order(mem, monkeypatch):
    root = mem[1]
    storage = FsspecStorage("memory", {MERGE_GAP: 64 << 10})
    a, b = storage.join(root, "a"), storage.join(root, "b")
    storage.write(a, bytes(range(256)) * 1024)
    storage.write(b, b"x" * 300_000)
    asked = [(b, 0, 10), (a, 100, 110), (a, 0, 4), (a, 200_000, 200_004), (a, 105, 120)]
    calls = []
    real = storage.fs.cat_ranges
    monkeypatch.setattr(storage.fs, "cat_ranges", lambda *args, **kw: calls.append(args) or real(*args, **kw))
    got = storage.read_many(asked)
    whole = {a: storage.read(a), b: storage.read(b)}
    assert got == [whole[p][s:e] for p, s, e in asked]
    # one concurrent call; a's first three ranges (within the gap) are one block, its far one another
    assert len(calls) == 1 and sorted(zip(*calls[0])) == [(a, 0, 120), (a, 200_000, 200_004), (b, 0, 10)]
    with pytest.raises(FormatError, match="outside"):
        storage.read_many([(a, 0, 10**7)])


def test_coalesce_independently():
    blocks, owner = coalesce([("p", 50, 60), ("p", 0, 10), ("q", 0, 1), ("p", 11, 20)], max_gap=1)
    assert blocks == [["p", 0, 20], ["p", 50, 60], ["q", 0, 1]] and owner == [1, 0, 2, 0]


def test_file_view_fetches_what_is_sliced(mem):
    storage, root = mem
    p = storage.join(root, "f")
    data = np.arange(100_000, dtype="<u4").tobytes()
    storage.write(p, data)
    from tdbformat.storage import FileView
    view = FileView(storage, p, preload=100)
    assert len(view) == len(data) and view.fetched() == 100
    assert view[-8:] == data[-8:] and view.fetched() == 100  # served from the tail
    assert view[10:20] == data[10:20] and view.fetched() == 100 + FileView.BLOCK
    assert bytes(view) == data
    with pytest.raises(TypeError, match="slices"):
        view[3]


def test_a_missing_backend_names_the_extra(monkeypatch):
    import builtins
    real = builtins.__import__
    monkeypatch.setattr(builtins, "__import__",
                        lambda name, *a, **k: (_ for _ in ()).throw(ImportError(name)) if name == "fsspec"
                        else real(name, *a, **k))
    with pytest.raises(UnsupportedError, match=r"tdbformat\[remote\]"):
        storage_for("s3://bucket/array")


def test_file_and_memory_urls_read_equal_to_the_local_read():
    case = DENSE
    local = tdbformat.open_array(corpus.root(case)).read()
    memory = fsspec.filesystem("memory")
    url = f"memory://m{uuid.uuid4().hex}/array"
    for p in corpus.files(corpus.root(case)):
        memory.pipe_file(f"{url}/{p.relative_to(corpus.root(case)).as_posix()}", p.read_bytes())
    for got in (tdbformat.open_array(corpus.root(case).as_uri()).read(), tdbformat.open_array(url).read()):
        assert set(got) == set(local)
        for name in local:
            equal_cells(got[name], local[name], name)
    memory.rm(url.rsplit("/", 1)[0], recursive=True)


def test_the_merge_gap_is_latency_times_bandwidth_unless_an_option_sets_it():
    """A local disk, file:// and memory:// merge only touching ranges; an object store or web server
    merges gaps up to 20 ms at 32 MiB/s (640 KiB: TileDB's vfs.min_batch_gap is 500 KB); the storage
    option ``tdbformat.merge_gap`` sets it, stays out of fsspec's options and survives a pickle."""
    import pickle
    pytest.importorskip("s3fs")
    assert LocalStorage().merge_gap == FsspecStorage("memory").merge_gap == FsspecStorage("file").merge_gap == 0
    assert FsspecStorage("s3", {"anon": True}).merge_gap == 20 * (32 << 20) // 1000 == 671_088
    storage = storage_for("s3://b/a", {"anon": True, MERGE_GAP: 4096})[0]
    assert storage.merge_gap == 4096 and MERGE_GAP not in storage.fs.storage_options
    assert pickle.loads(pickle.dumps(storage)).merge_gap == 4096
    for bad in (-1, True, "1", 1.5):
        with pytest.raises(ValueError, match=f"storage_options.*{MERGE_GAP}"):
            FsspecStorage("memory", {MERGE_GAP: bad})


@pytest.mark.parametrize("gap", [0, 100, 1 << 30])
def test_reads_are_equal_whatever_the_gap(gap, tmp_path):
    """A sparse array of three fragments of 25 tiles (TileDB-Py's), read whole and by a box at every
    gap: what the local read gives."""
    import tiledb_arrays
    path = tiledb_arrays.create(tmp_path / "a", [("x", (0, 99), 10), ("y", (0, 99), 10)],
                                [("a", np.int64), ("s", str)], sparse=True, capacity=16)
    rng = np.random.default_rng(3)
    for t in (1, 2, 3):
        cells = rng.choice(100 * 100, 400, replace=False)
        tiledb_arrays.write(path, {"a": rng.integers(0, 1 << 40, 400), "s": np.array([f"s{c}" for c in cells], object)},
                            coords=[cells // 100, cells % 100], timestamp=t)
    memory = fsspec.filesystem("memory")
    url = f"memory://g{uuid.uuid4().hex}/array"
    memory.put(path, url.removeprefix("memory://"), recursive=True)
    local, remote = tdbformat.open_array(path), tdbformat.open_array(url, storage_options={MERGE_GAP: gap})
    for ranges in (None, {"x": (20, 60), "y": (10, 70)}):
        want, got = local.read(ranges=ranges, order="G"), remote.read(ranges=ranges, order="G")
        for name in want:
            equal_cells(got[name], want[name], name)
    memory.rm(url.rsplit("/", 1)[0], recursive=True)


def test_local_read_many_merges_touching_ranges_only(tmp_path, monkeypatch):
    path = tmp_path / "f"
    data = bytes(range(256)) * 64
    path.write_bytes(data)
    storage, reads = LocalStorage(), []
    real = LocalStorage._read
    monkeypatch.setattr(LocalStorage, "_read", lambda s, p, start, n: reads.append((start, n)) or real(s, p, start, n))
    asked = [(path, 100, 200), (path, 0, 100), (path, 300, 310), (path, 200, 250)]
    got = storage.read_many(asked)
    assert [bytes(g) for g in got] == [data[s:e] for _, s, e in asked]
    assert sorted(reads) == [(0, 250), (300, 10)]  # the gap before 300 is not read
    with pytest.raises(FormatError, match="outside") as e:
        storage.read_many([(path, 0, 10), (path, 16000, 16400)], what="data file")
    assert e.value.file == str(path)


def test_default_storage_options_reach_urls_only_and_only_inside_the_block():
    from tdbformat.storage import default_storage_options
    with default_storage_options({"skip_instance_cache": True}):
        assert storage_for("memory://a/b")[0].storage_options == {"skip_instance_cache": True}
        assert storage_for("memory://a/b", {})[0].storage_options == {}  # the caller's own options win
        assert isinstance(storage_for("/tmp/x")[0], LocalStorage)  # a local path ignores them
    assert storage_for("memory://a/b")[0].storage_options == {}
    with pytest.raises(TypeError, match="storage_options"):
        with default_storage_options('{"anon": true}'):
            pass
