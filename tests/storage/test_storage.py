"""The storage contract (tdbformat.storage): one suite, run against every backend (a local path, fsspec's
``memory://`` and ``file://``) and every way of reading (``read``, a :class:`FileView`'s slices, ranges kept in a
snapshot, ``read_many``). What it checks is what the rest of the package relies on: bytes come back as
written, every range is checked against the file's real size before anything is read, a missing file or a
folder where a file belongs is a FormatError naming it, listings are sorted and see writes, and a commit
leaves the whole file and nothing else."""

from __future__ import annotations

import os
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tdbformat.errors import FormatError
from tdbformat.storage import FileView, storage_for

pytest.importorskip("fsspec")

DATA = bytes(range(256)) * 1000  # 256,000 bytes: more than a view's block of 64 KiB


@pytest.fixture(params=["local", "memory", "file"])
def place(request, tmp_path):
    """``(storage, root)``: an empty folder of the backend."""
    root = {"local": str(tmp_path / "root"), "memory": f"memory://tdbformat-tests/{uuid.uuid4().hex}",
            "file": f"file://{tmp_path}/root"}[request.param]
    storage, root = storage_for(root)
    storage.makedirs(root)
    yield storage, root
    if request.param == "memory":
        storage.fs.rm(root, recursive=True)


def _read_view(storage, path, start, end):
    return FileView(storage, path)[start:end]


def _read_kept(storage, path, start, end):
    with storage.snapshot():
        storage.keep([(path, start, end)])
        return storage.read(path, start, end)


def _read_many(storage, path, start, end):
    return bytes(storage.read_many([(path, 0, 1), (path, start, end), (path, start, start)])[1])


READERS = {"read": lambda s, p, a, b: s.read(p, a, b), "view": _read_view, "kept": _read_kept,
           "read_many": _read_many}


@pytest.mark.parametrize("reader", READERS)
def test_bytes_come_back_as_written(place, reader):
    storage, root = place
    path = storage.join(root, "f.bin")
    storage.write(path, DATA)
    for start, end in [(0, len(DATA)), (0, 0), (1, 2), (70_000, 140_001), (len(DATA) - 3, len(DATA))]:
        assert bytes(READERS[reader](storage, path, start, end)) == DATA[start:end], (start, end)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("start, end", [(0, len(DATA) + 1), (len(DATA), len(DATA) + 8), (5, 4), (-1, 3),
                                        (0, 2**63)])
def test_a_range_outside_the_file_is_refused_naming_it(place, reader, start, end):
    storage, root = place
    path = storage.join(root, "f.bin")
    storage.write(path, DATA)
    if reader == "view":  # a view clips slices as bytes objects do; its length is the file's real size
        assert len(FileView(storage, path)) == len(DATA)
        assert FileView(storage, path)[start:end] == DATA[start:end]
        return
    with pytest.raises(FormatError, match=f"outside the {len(DATA)}-byte file") as e:
        READERS[reader](storage, path, start, end)
    assert "f.bin" in str(e.value)


@pytest.mark.parametrize("reader", READERS)
def test_a_missing_file_or_a_folder_is_a_format_error_naming_it(place, reader):
    storage, root = place
    storage.makedirs(storage.join(root, "folder"))
    for name, found in (("missing.bin", "nothing"), ("folder", "a folder")):
        with pytest.raises(FormatError, match=f"expected a file here, found {found}") as e:
            READERS[reader](storage, storage.join(root, name), 0, 1)
        assert name in str(e.value)


def test_sizes_kinds_and_sorted_listings(place):
    storage, root = place
    for name in ("b", "a", "__c"):
        storage.write(storage.join(root, "d", name), name.encode() * 3)
    storage.makedirs(storage.join(root, "d", "e"))
    d = storage.join(root, "d")
    assert storage.list(d)[:3] == ["__c", "a", "b"] and set(storage.list(d)) <= {"__c", "a", "b", "e"}
    assert storage.list(storage.join(root, "nowhere")) == []
    assert [storage.name(p) for p in storage.walk(root)] == ["__c", "a", "b"]
    assert storage.size(storage.join(d, "__c")) == 9 and storage.size_of(storage.join(d, "a")) == 3
    assert storage.is_file(storage.join(d, "a")) and not storage.is_dir(storage.join(d, "a"))
    assert storage.is_dir(d) and not storage.is_file(d)
    assert not storage.is_file(storage.join(d, "zz")) and not storage.is_dir(storage.join(d, "zz"))
    assert storage.name(storage.join(d, "a")) == "a" and str(storage.parent(storage.join(d, "a"))) == str(d)


def test_a_snapshot_lists_each_folder_once_and_a_fresh_listing_sees_writes(place):
    storage, root = place
    storage.write(storage.join(root, "a"), b"1")
    with storage.snapshot(prefetch=[root]):
        assert storage.list(root) == ["a"]
        storage.write(storage.join(root, "b"), b"2")
        assert storage.list(root) == ["a"]  # one consistent view inside the block
    assert storage.list(root) == ["a", "b"]


def test_a_commit_leaves_the_whole_file_and_nothing_else(place):
    storage, root = place
    path = storage.join(root, "c", "file.tdb")
    storage.makedirs(storage.parent(path))
    storage.commit(path, DATA)
    storage.commit(path, DATA[:10])  # over an existing file, as TileDB's renames do
    assert storage.read(path) == DATA[:10]
    assert storage.list(storage.parent(path)) == ["file.tdb"]  # no temporary left


def test_a_failed_commit_leaves_nothing(place):
    storage, root = place
    storage.makedirs(storage.join(root, "taken"))
    storage.write(storage.join(root, "taken", "x"), b"x")
    with pytest.raises(FormatError, match="taken"):  # a folder where the file would go
        storage.commit(storage.join(root, "taken"), DATA)
    assert storage.list(root) == ["taken"] and storage.list(storage.join(root, "taken")) == ["x"]


def test_tails_views_and_the_writer(place):
    storage, root = place
    path = storage.join(root, "f.bin")
    with storage.writer(path) as f:
        for i in range(0, len(DATA), 100_000):
            f.write(DATA[i:i + 100_000])
    assert storage.read_tail(path, 8) == (len(DATA) - 8, DATA[-8:])
    assert storage.read_tail(path, 10 * len(DATA)) == (0, DATA)
    view = storage.view(path, preload=16)
    assert view.fetched() == 16 and view[-16:] == DATA[-16:] and view.fetched() == 16
    assert view[10:20] == DATA[10:20] and view.fetched() == 16 + FileView.BLOCK
    assert bytes(view) == DATA
    with pytest.raises(TypeError, match="contiguous"):
        view[::2]  # noqa: B018


def test_the_writer_takes_pieces_in_order_without_their_join(place):
    """``write_parts``: bytes-like pieces of any kind and size, more than a ``writev`` takes at once, some
    empty, give the file their bytes in order."""
    storage, root = place
    path = storage.join(root, "f.bin")
    pieces = [DATA[:3], b"", bytearray(DATA[3:70_000]), memoryview(DATA)[70_000:70_001]]
    pieces += [DATA[i:i + 7] for i in range(70_001, 70_001 + 7 * 3000, 7)]  # 3,000 small pieces
    pieces.append(np.frombuffer(DATA, np.uint8)[91_001:])
    with storage.writer(path) as f:
        f.write(DATA[:0])
        f.write_parts(pieces)
    assert storage.read(path) == DATA


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 5_000), max_size=40), most=st.integers(1, 9_000), fsync=st.booleans())
def test_a_local_writer_resumes_partial_writes(tmp_path, monkeypatch, sizes, most, fsync):
    """A ``writev`` or ``write`` that takes only part of its bytes (a signal, a full pipe; the kernel may) is
    resumed where it stopped, mid-piece too: the file is the pieces' bytes in order, each once."""
    from tdbformat.storage import local
    real = os.write
    monkeypatch.setattr(local.os, "writev", lambda fd, views: real(fd, b"".join(views)[:most]))
    monkeypatch.setattr(local.os, "write", lambda fd, view: real(fd, bytes(view)[:most]))
    pieces = [os.urandom(n) for n in sizes]
    path = tmp_path / f"{uuid.uuid4().hex}.bin"
    storage, _ = storage_for(tmp_path)
    storage.fsync = fsync
    with storage.writer(str(path)) as f:
        assert f.write_parts(pieces) == sum(sizes)
    monkeypatch.undo()
    assert path.read_bytes() == b"".join(pieces)


def test_a_write_that_takes_no_bytes_is_an_error_not_a_hang(tmp_path, monkeypatch):
    from tdbformat.storage import local
    monkeypatch.setattr(local.os, "writev", lambda fd, views: 0)
    storage, _ = storage_for(tmp_path)
    with pytest.raises(OSError, match="took no bytes") as e:
        with storage.writer(str(tmp_path / "f.bin")) as f:
            f.write_parts([b"ab", b"cd"])
    assert e.value.filename.endswith("f.bin")


def test_delete_and_makedirs(place):
    storage, root = place
    path = storage.join(root, "x", "y")
    storage.makedirs(storage.join(root, "x"))
    storage.makedirs(storage.join(root, "x"))  # nothing if it is there
    storage.write(path, b"y")
    storage.delete(path)
    assert not storage.is_file(path) and storage.list(storage.join(root, "x")) == []
    with pytest.raises(FormatError, match="y"):
        storage.delete(path)


def test_storage_for_picks_the_backend_and_refuses_what_it_cannot_serve(tmp_path):
    from tdbformat.storage import FsspecStorage, LocalStorage
    assert isinstance(storage_for(tmp_path)[0], LocalStorage)
    assert isinstance(storage_for(os.fspath(tmp_path))[0], LocalStorage)
    assert isinstance(storage_for("memory://x/y/")[0], FsspecStorage) and storage_for("memory://x/y/")[1] == "memory://x/y"
    with pytest.raises(ValueError, match="unsupported URL scheme ftpx://"):
        storage_for("ftpx://host/a")
    with pytest.raises(ValueError, match="storage_options: only URLs"):
        storage_for(tmp_path, {"anon": True})
    with pytest.raises(TypeError, match="path: expected a str or os.PathLike"):
        storage_for(3)
