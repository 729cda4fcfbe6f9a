"""Issue #39 §0b: a failing storage is not a broken format. A full disk or an I/O error raises
``StorageError``, an ``OSError`` that keeps the errno and names the file, on reads and writes, and leaves what
was committed as it was; bytes that break the format stay ``FormatError``. And writes sync: the data files and
the fragment metadata, then their folders, reach the disk before the commit marker is renamed into place."""

from __future__ import annotations

import builtins
import errno
import os
import time
from pathlib import Path

import numpy as np
import pytest

import tdbformat
from tdbformat import FormatError, StorageError
from tdbformat import schema as S
from tdbformat.storage import local as storage_module  # where local files are opened

tiledb = pytest.importorskip("tiledb")


def _array(path, version=22):
    dom = S.Domain(S.Dim("d", domain=(1, 8), tile=4, dtype=np.int64))
    tdbformat.create(path, S.ArraySchema(domain=dom, attrs=[S.Attr("a", dtype=np.int32)], sparse=True),
                     version=version)
    tdbformat.write(path, {"a": np.arange(4, dtype=np.int32)}, coords=[np.arange(1, 5)], timestamp=1)


def _failing_open(monkeypatch, code, when):
    """``open`` in the storage layer fails with ``code`` for the paths and modes ``when(path, mode)`` picks."""
    real = builtins.open

    def fake(path, mode="r", *args, **kwargs):
        if when(str(path), mode):
            raise OSError(code, os.strerror(code), str(path))
        return real(path, mode, *args, **kwargs)
    monkeypatch.setattr(storage_module, "open", fake, raising=False)


def _tiledb_cells(path):
    with tiledb.open(str(path)) as A:
        return {k: v.tolist() for k, v in A[:].items()}


def test_an_io_error_on_read_is_an_oserror_naming_the_file(tmp_path, monkeypatch):
    _array(tmp_path / "a")
    _failing_open(monkeypatch, errno.EIO, lambda p, mode: p.endswith("a0.tdb"))
    with pytest.raises(OSError) as e:
        tdbformat.open_array(tmp_path / "a")[:]
    assert isinstance(e.value, StorageError) and not isinstance(e.value, FormatError)
    assert e.value.errno == errno.EIO and e.value.filename.endswith("a0.tdb")
    assert "Input/output error" in str(e.value)


@pytest.mark.parametrize("failing", ["a0.tdb", "__fragment_metadata.tdb", ".wrt."])
def test_a_full_disk_on_write_loses_nothing(tmp_path, monkeypatch, failing):
    _array(tmp_path / "a")
    before = _tiledb_cells(tmp_path / "a")
    commits = sorted(os.listdir(tmp_path / "a" / "__commits"))
    _failing_open(monkeypatch, errno.ENOSPC, lambda p, mode: "w" in mode and failing in p)
    with pytest.raises(OSError) as e:
        tdbformat.write(tmp_path / "a", {"a": np.full(4, 9, np.int32)}, coords=[np.arange(5, 9)], timestamp=2)
    assert isinstance(e.value, StorageError) and e.value.errno == errno.ENOSPC and failing in e.value.filename
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path / "a" / "__commits")) == commits  # nothing committed
    assert not list((tmp_path / "a").rglob("*.tmp"))
    assert _tiledb_cells(tmp_path / "a") == before
    got = tdbformat.open_array(tmp_path / "a")[:]
    assert {k: v.tolist() for k, v in got.items()} == before


def test_a_failed_rename_leaves_no_commit(tmp_path, monkeypatch):
    _array(tmp_path / "a")
    before = _tiledb_cells(tmp_path / "a")

    def replace(src, dst):
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(dst))
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(StorageError) as e:
        tdbformat.write(tmp_path / "a", {"a": np.full(4, 9, np.int32)}, coords=[np.arange(5, 9)], timestamp=2)
    assert e.value.errno == errno.EIO and e.value.filename.endswith(".wrt")
    monkeypatch.undo()
    assert _tiledb_cells(tmp_path / "a") == before and not list((tmp_path / "a").rglob("*.tmp"))


def test_a_short_file_is_still_a_format_error(tmp_path):
    _array(tmp_path / "a")
    data = next((tmp_path / "a").rglob("a0.tdb"))
    data.write_bytes(data.read_bytes()[:-3])
    with pytest.raises(FormatError):
        tdbformat.open_array(tmp_path / "a")[:]


def test_a_missing_folder_is_still_a_format_error(tmp_path):
    with pytest.raises(FormatError):
        tdbformat.open_array(tmp_path / "nothing")


def _record_syncs(monkeypatch) -> list:
    """(call, path) of every os.fsync and os.replace, in order (an fsync's path read from its descriptor)."""
    calls, real_fsync, real_replace = [], os.fsync, os.replace

    def fsync(fd):
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(src, dst):
        calls.append(("replace", str(dst)))
        return real_replace(src, dst)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return calls


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name a descriptor's file")
@pytest.mark.parametrize("version", [4, 11, 22])
def test_data_then_folders_are_synced_before_the_commit_is_renamed(tmp_path, monkeypatch, version):
    monkeypatch.delenv("TDBFORMAT_FSYNC", raising=False)  # the default: on
    _array(tmp_path / "a", version)
    calls = _record_syncs(monkeypatch)
    name = tdbformat.write(tmp_path / "a", {"a": np.full(4, 9, np.int32)}, coords=[np.arange(5, 9)], timestamp=2)
    monkeypatch.undo()
    commit = [i for i, (op, p) in enumerate(calls) if op == "replace"]
    assert len(commit) == 1, calls  # one rename: the commit (v1-4: the fragment metadata file)
    before, after = calls[:commit[0]], calls[commit[0] + 1:]
    synced = [Path(p) for op, p in before if op == "fsync"]
    folder = next(p for p in (tmp_path / "a").rglob(name) if p.is_dir())
    data = sorted(p for p in folder.iterdir() if p.suffix == ".tdb")
    assert data and all(p in synced for p in data if p.name != "__fragment_metadata.tdb" or version > 4), calls
    assert folder in synced and folder.parent in synced, calls  # the fragment's entries, and its own entry
    target = Path(calls[commit[0]][1])
    assert [Path(p) for op, p in after if op == "fsync"] == [target.parent], calls  # the rename, synced
    assert all(synced.index(p) < synced.index(folder) for p in data if p in synced)  # files before folders


def test_fsync_false_syncs_nothing_and_writes_the_same(tmp_path, monkeypatch):
    _array(tmp_path / "a")
    calls = _record_syncs(monkeypatch)
    tdbformat.write(tmp_path / "a", {"a": np.full(4, 9, np.int32)}, coords=[np.arange(5, 9)], timestamp=2,
                    fsync=False)
    tdbformat.create(tmp_path / "b", tdbformat.open_array(tmp_path / "a").schema, fsync=False)
    tdbformat.convert(tmp_path / "a", tmp_path / "c", fsync=False)
    monkeypatch.setenv("TDBFORMAT_FSYNC", "0")
    tdbformat.write(tmp_path / "b", {"a": np.full(4, 9, np.int32)}, coords=[np.arange(5, 9)], timestamp=2)
    monkeypatch.undo()
    assert [op for op, _ in calls if op == "fsync"] == []
    assert _tiledb_cells(tmp_path / "c") == _tiledb_cells(tmp_path / "a")


def _record_writebacks(monkeypatch) -> list:
    """(path, offset, length) of every write-back a local writer started (sync_file_range), the real call made."""
    real, calls = storage_module._sync_file_range(), []

    def start(fd, offset, length, flags):
        calls.append((os.readlink(f"/proc/self/fd/{fd}"), offset, length))
        return real(fd, offset, length, flags)
    monkeypatch.setattr(storage_module, "_sync_file_range", lambda: start)
    return calls


@pytest.mark.skipif(storage_module._sync_file_range() is None, reason="sync_file_range is Linux's")
@pytest.mark.parametrize("extent", [32_768, 256])
def test_each_tile_starts_for_the_disk_as_it_is_written_and_the_sync_still_ends_it(tmp_path, monkeypatch, extent):
    """A data file's tiles are handed to the disk as each write is made (a tile of 256 KiB a write; small tiles
    gathered into writes of 128 KiB or more), so that the sync at its close waits for the last ones only; the
    ranges are the file's bytes in order, each once; with fsync off none is."""
    monkeypatch.delenv("TDBFORMAT_FSYNC", raising=False)
    cells = 16 * extent
    dom = S.Domain(S.Dim("d", domain=(0, cells - 1), tile=extent, dtype=np.int64))
    tdbformat.create(tmp_path / "a", S.ArraySchema(domain=dom, attrs=[S.Attr("a", dtype=np.int64)]))
    calls = _record_writebacks(monkeypatch)
    syncs = _record_syncs(monkeypatch)
    tdbformat.write(tmp_path / "a", {"a": np.arange(cells)}, timestamp=1)
    tdbformat.write(tmp_path / "a", {"a": np.arange(cells)}, timestamp=2, fsync=False)
    monkeypatch.undo()
    (data,) = {p for p, _, _ in calls}
    tile = 8 + 12 + extent * 8 if extent * 8 <= 1 << 16 else 8 + (12 + (1 << 16)) * (extent * 8 >> 16)  # tile.md
    assert Path(data).name == "a0.tdb" and Path(data).stat().st_size == 16 * tile
    ranges = [(o, n) for _, o, n in calls]
    if tile >= 1 << 17:  # a write a tile
        assert ranges == [(k * tile, tile) for k in range(16)]
    else:  # tiles gathered: the file's bytes in order, each once, in writes of 128 KiB or more but the last
        assert [o for o, _ in ranges] == [sum(n for _, n in ranges[:i]) for i in range(len(ranges))]
        assert sum(n for _, n in ranges) == 16 * tile and len(ranges) < 16
        assert all(n >= 1 << 17 for _, n in ranges[:-1]) and all(n % tile == 0 for _, n in ranges)
    assert ("fsync", data) in syncs  # the sync at close is still made, after the write-backs it waits for
    got = tdbformat.open_array(tmp_path / "a").read(timestamp=(1, 1))["a"]
    assert got.tolist() == list(range(cells))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name a descriptor's file")
def test_the_metadata_is_made_beside_the_data_syncs_and_written_after_them(tmp_path, monkeypatch):
    """A write's fragment metadata needs only the sizes of its tiles: it is made while the data files' last
    writes and syncs run (here a sync of 0.2 s), and its file is opened only once they have ended."""
    import importlib
    fragment_writer = importlib.import_module("tdbformat.write.fragment_writer")
    monkeypatch.delenv("TDBFORMAT_FSYNC", raising=False)
    _array(tmp_path / "a")
    events, real_fsync, real_open, real_metadata = [], os.fsync, builtins.open, fragment_writer._metadata

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path.endswith(("a0.tdb", "d0.tdb")):
            time.sleep(0.2)
            events.append(("synced", Path(path).name, time.monotonic()))
        return real_fsync(fd)

    def metadata(*args, **kwargs):
        events.append(("metadata", None, time.monotonic()))
        return real_metadata(*args, **kwargs)

    def opened(path, mode="r", *args, **kwargs):
        if "__fragment_metadata" in str(path) and "w" in mode:
            events.append(("opened", Path(path).name, time.monotonic()))
        return real_open(path, mode, *args, **kwargs)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(fragment_writer, "_metadata", metadata)
    monkeypatch.setattr(storage_module, "open", opened, raising=False)
    tdbformat.write(tmp_path / "a", {"a": np.full(4, 9, np.int32)}, coords=[np.arange(5, 9)], timestamp=2)
    monkeypatch.undo()
    synced = [t for what, _, t in events if what == "synced"]
    made = next(t for what, _, t in events if what == "metadata")
    written = next(t for what, _, t in events if what == "opened")
    assert len(synced) == 2  # the attribute's and the dimension's data files
    assert made < min(synced) - 0.1  # made during the syncs, not after them
    assert written >= max(synced)
    assert _tiledb_cells(tmp_path / "a") == {"a": [0, 1, 2, 3, 9, 9, 9, 9], "d": list(range(1, 9))}
