"""Files on a local disk."""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import errno
import functools
import os
import shutil
import stat
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

from ..errors import FormatError, StorageError
from .base import Storage, _Moves

__all__ = ["LocalStorage", "syncing"]


class _LocalMoves(_Moves):
    def move(self, path, to) -> None:
        def move():
            if os.path.lexists(to):  # os.replace would overwrite a file: a move never does
                raise FileExistsError(errno.EEXIST, "already exists", str(to))
            Path(to).parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, to)
        LocalStorage._os(move, to)

    def is_link(self, path) -> bool:
        return os.path.islink(path)

    def remove_folder(self, path) -> None:
        if os.path.islink(path):  # a folder that is a link: the link goes, what it names stays
            LocalStorage._os(lambda: os.unlink(path), path)
        else:  # rmtree unlinks the links inside, never follows them
            LocalStorage._os(lambda: shutil.rmtree(path), path)


class LocalStorage(_LocalMoves, Storage):
    """Files on a local disk (paths are :class:`pathlib.Path`). ``fsync`` (default on; :func:`syncing`, or the
    environment's ``TDBFORMAT_FSYNC=0``, turn it off): files are synced as they close, and :meth:`commit` syncs
    the folders that gained entries before its rename and its folder after, so that a power loss cannot leave a
    commit whose data is not on the disk. Off: scratch writes, which a crash of the machine (not of the process)
    may lose."""

    def __init__(self, fsync: bool | None = None):
        self.fsync = _fsync_default() if fsync is None else bool(fsync)
        self._unsynced = set()  # folders that gained an entry since the last commit: synced before the next

    def join(self, folder, *names):
        # a Path is not parsed again (three times the cost): this runs for every name of a listing
        return (folder if isinstance(folder, Path) else Path(folder)).joinpath(*names)

    def name(self, path) -> str:
        return Path(path).name

    def parent(self, path):
        return Path(path).parent

    def size(self, path) -> int:
        return self._os(lambda: os.stat(path).st_size, path)

    def is_file(self, path) -> bool:
        return self._is(path, stat.S_ISREG)

    def _file_size(self, path) -> int | None:
        try:  # one stat, not one for "is it a file" and one for its size: this runs for every tile
            st = os.stat(path)
        except OSError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def is_dir(self, path) -> bool:
        return self._is(path, stat.S_ISDIR)

    def folders_in(self, folder) -> set[str]:
        return _folders_in(folder)

    @staticmethod
    def _is(path, test) -> bool:
        """``test`` of the file mode at ``path``, False where nothing is (as pathlib's ``is_dir``, with one
        ``stat`` and no Path made: a listing asks this of every fragment)."""
        try:
            return test(os.stat(path).st_mode)
        except (OSError, ValueError):
            return False

    def _list(self, folder) -> list[str]:
        if not self.is_dir(folder):
            return []
        return sorted(self._os(lambda: os.listdir(folder), folder))

    def _read(self, path, start: int, length: int) -> bytes:
        def read():
            with open(path, "rb") as f:
                f.seek(start)
                return f.read(length)
        data = self._os(read, path)
        if len(data) != length:  # the file shrank since its size was taken
            raise FormatError(f"expected {length} bytes at offset {start}, read {len(data)}", file=str(path),
                              offset=start)
        return data

    def write(self, path, data: bytes) -> None:
        def write():
            self._mkdir(Path(path).parent)
            with open(path, "wb") as f:
                f.write(data)
                _synced(f, self.fsync)
        self._os(write, path)
        self._unsynced.add(Path(path).parent)

    def commit(self, path, data: bytes, staging=None) -> None:
        """``data`` under a temporary name (in ``staging``, default ``path``'s folder), the folders synced
        (:func:`_sync_folders`), renamed to ``path``."""
        tmp = Path(staging or Path(path).parent) / f".{Path(path).name}.{uuid.uuid4().hex}.tmp"
        try:
            self.write(tmp, data)
            _sync_folders(self)
            self._os(lambda: os.replace(tmp, path), path)
            if self.fsync:
                self._os(lambda: _sync_folder(Path(path).parent), path)
        except (FormatError, StorageError):
            # TileDB 2.30 loads every file of __meta/, a partial one too: leave none behind
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise

    def delete(self, path) -> None:
        self._os(lambda: os.remove(path), path)

    def makedirs(self, path) -> None:
        self._os(lambda: self._mkdir(Path(path)), path)

    def _mkdir(self, folder: Path) -> None:
        """``folder`` and its missing parents, each noted for the next commit's sync (its entry is in its parent)."""
        if not folder.is_dir():
            self._mkdir(folder.parent)
            folder.mkdir(exist_ok=True)
            self._unsynced.add(folder.parent)

    @contextmanager
    def writer(self, path):
        try:
            self._mkdir(Path(path).parent)
            with open(path, "wb", buffering=0) as f:
                yield _Written(f, write_back=self.fsync)
                _synced(f, self.fsync)
            self._unsynced.add(Path(path).parent)
        except OSError as e:
            raise _local_error(e, path) from None

    @staticmethod
    def _os(call, path):
        try:
            return call()
        except OSError as e:
            raise _local_error(e, path) from None


#: what :func:`syncing` set for the local storages made in this thread or task (None: the environment's)
_FSYNC = contextvars.ContextVar("tdbformat_fsync", default=None)


@contextmanager
def syncing(fsync: bool | None):
    """Within the block, local storages made without ``fsync=`` of their own take ``fsync`` (None: as before):
    how a writer's ``fsync=`` reaches every storage a job opens (``convert``'s)."""
    token = _FSYNC.set(_FSYNC.get() if fsync is None else bool(fsync))
    try:
        yield
    finally:
        _FSYNC.reset(token)


def _fsync_default() -> bool:
    """Whether to sync: :func:`syncing`'s choice, else the environment's ``TDBFORMAT_FSYNC`` (default on)."""
    if _FSYNC.get() is not None:
        return _FSYNC.get()
    return os.environ.get("TDBFORMAT_FSYNC", "1").strip().lower() not in ("0", "false", "no", "off")


def _synced(f, fsync: bool) -> None:
    """``f``'s bytes flushed and, with ``fsync``, on the disk."""
    if fsync:
        f.flush()
        os.fsync(f.fileno())


class _Written:
    """A file written piece by piece, each call's pieces in one ``writev`` (IOV_MAX at a time, partial writes
    resumed), never joined: the join of a 2 MB tile's chunks faulted in 2 MB of fresh memory and held the GIL
    for it (1.5 ms a tile; a 128 MiB write, 9 ms). With ``write_back``, each call's pages start for the disk as
    they are written (Linux's ``sync_file_range``, as PostgreSQL and RocksDB do), so that the sync at its close
    waits for the last pieces only, not for the whole file (a 115 MB file: the sync took 72 ms of a 0.32 s
    write)."""

    def __init__(self, file, write_back: bool):
        self._file, self._written, self._write_back = file, 0, write_back

    def write(self, data) -> int:
        return self.write_parts([data])

    def write_parts(self, parts) -> int:
        fd = self._file.fileno()
        n = _write_all(fd, [memoryview(p).cast("B") for p in parts if len(p)])
        start = _sync_file_range() if self._write_back else None
        if start is not None and n:
            start(fd, self._written, n, _SYNC_FILE_RANGE_WRITE)  # (errors: the sync reports them)
        self._written += n
        return n


def _write_all(fd: int, views: list) -> int:
    """All of ``views`` written to ``fd`` in order: their byte count."""
    if not hasattr(os, "writev"):  # (Windows)
        views = [memoryview(b"".join(views))] if views else []
    total, first = 0, 0
    while first < len(views):
        batch = views[first:first + _IOV_MAX]
        n = os.writev(fd, batch) if len(batch) > 1 else os.write(fd, batch[0])
        if n <= 0:  # (a regular file never takes none of a write it does not refuse)
            raise OSError(errno.EIO, "the write took no bytes")
        total += n
        while first < len(views) and n >= len(views[first]):
            n -= len(views[first])
            first += 1
        if n:  # a partial write: the rest of this piece next
            views[first] = views[first][n:]
    return total


#: pieces a ``writev`` takes at most (POSIX's IOV_MAX; Linux's 1024)
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") and "SC_IOV_MAX" in os.sysconf_names else 16


_SYNC_FILE_RANGE_WRITE = 2


@functools.cache
def _sync_file_range():
    """glibc's ``sync_file_range(fd, offset, nbytes, flags)`` (it lets the GIL go), or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


def _folders_in(folder) -> set[str]:
    """The names in ``folder`` that are folders (or links to folders, as ``is_dir`` follows them), from one
    ``os.scandir``, whose entries know their type without a ``stat`` each (200 of them cost an open of 200
    fragments 0.37 ms); none if there is no such folder."""
    try:
        with os.scandir(folder) as entries:
            return {e.name for e in entries if _is_folder(e)}
    except (OSError, ValueError):  # (as is_dir: no such folder, or a path no folder can have)
        return set()


def _is_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # (a link whose target is gone, as is_dir's stat finds)
        return False


def _sync_folders(storage: LocalStorage) -> None:
    """Every folder that gained an entry since the last commit synced (the deepest first), with ``fsync``."""
    if storage.fsync:
        for folder in sorted(storage._unsynced, key=lambda p: -len(p.parts)):
            storage._os(lambda: _sync_folder(folder), folder)
    storage._unsynced.clear()


def _sync_folder(folder) -> None:
    """The folder's entries (the names of new files and renames) on the disk (where folders can be synced: not
    on Windows, nor on file systems that refuse it with EINVAL)."""
    if os.name == "nt":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise
    finally:
        os.close(fd)


#: what is not there, or not what the format puts there: the folder's layout, so a FormatError
_LAYOUT_ERRORS = (FileNotFoundError, NotADirectoryError, IsADirectoryError)


def _local_error(e: OSError, path) -> Exception:
    """The one place a local ``OSError`` becomes ours: a layout problem is a FormatError, anything else (a full
    disk, an I/O error, no permission) a StorageError keeping the errno."""
    if isinstance(e, StorageError):  # already ours
        return e
    if isinstance(e, _LAYOUT_ERRORS):
        return FormatError(f"cannot access: {e.strerror or e}", file=str(path))
    return StorageError(e.errno, f"cannot access: {e.strerror or e}", path)
