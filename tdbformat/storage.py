"""The one door to bytes: every read, listing and write of an array, a group or a file goes through a
:class:`Storage`. Nothing else in the package opens files.

A storage knows each file's real size, so no read is sized by a length that a file claims: a range past
the end is a :class:`FormatError` naming the file before anything is allocated. Every ``OSError`` (a
missing file, a folder where a file belongs, no permission) becomes a ``FormatError`` that names the path
and what was expected there. Writes are atomic: data goes to a temporary name first and is renamed into
place (:meth:`Storage.commit`), so a reader sees a file whole or not at all.

:class:`LocalStorage` serves local paths; an fsspec storage will serve URLs through the same methods.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from contextlib import contextmanager
from pathlib import Path

from .errors import FormatError

__all__ = ["Storage", "LocalStorage", "storage_for"]


class Storage:
    """What the rest of the package asks of a place where arrays live. Paths are what :meth:`join` makes."""

    def join(self, folder, *names):
        raise NotImplementedError

    def name(self, path) -> str:
        """The last component of ``path``."""
        raise NotImplementedError

    def parent(self, path):
        raise NotImplementedError

    def size(self, path) -> int:
        raise NotImplementedError

    def is_file(self, path) -> bool:
        raise NotImplementedError

    def is_dir(self, path) -> bool:
        raise NotImplementedError

    def list(self, folder) -> list[str]:
        """The names in ``folder``, sorted (TileDB lists by name); empty if there is no such folder."""
        raise NotImplementedError

    def _read(self, path, start: int, length: int) -> bytes:
        raise NotImplementedError

    def read(self, path, start: int = 0, end: int | None = None, what: str = "file") -> bytes:
        """Bytes ``[start, end)`` of the file at ``path`` (``end`` None: to its end), after checking the
        range against the file's real size. ``what`` names the file's role in errors."""
        size = self.size_of(path, what)
        end = size if end is None else end
        if not 0 <= start <= end <= size:
            raise FormatError(f"bytes [{start}, {end}) lie outside the {size}-byte {what}", file=str(path),
                              offset=start)
        return self._read(path, start, end - start) if end > start else b""

    def size_of(self, path, what: str = "file") -> int:
        """The size of a file that must be there, else a FormatError naming it."""
        size = self._file_size(path)
        if size is None:
            found = "a folder" if self.is_dir(path) else "nothing"
            raise FormatError(f"expected a {what} here, found {found}", file=str(path))
        return size

    def _file_size(self, path) -> int | None:
        """The size of the file at ``path``, None if no file is there."""
        return self.size(path) if self.is_file(path) else None

    def walk(self, folder) -> list:
        """Every file below ``folder``, sorted by path."""
        out = []
        for name in self.list(folder):
            p = self.join(folder, name)
            out += self.walk(p) if self.is_dir(p) else [p]
        return out

    def write(self, path, data: bytes) -> None:
        raise NotImplementedError

    def commit(self, path, data: bytes) -> None:
        """Write ``data`` under a temporary name, then rename it to ``path`` in one step."""
        raise NotImplementedError

    def delete(self, path) -> None:
        raise NotImplementedError

    def makedirs(self, path) -> None:
        """Make the folder ``path`` (and its parents); nothing if it is there."""
        raise NotImplementedError

    def writer(self, path):
        """A context manager giving a file at ``path`` to write piece by piece (``.write(bytes)``), for data
        files too large to hold whole; like :meth:`write`, not atomic (a commit marker makes them visible)."""
        raise NotImplementedError


class LocalStorage(Storage):
    """Files on a local disk (paths are :class:`pathlib.Path`)."""

    def join(self, folder, *names):
        return Path(folder).joinpath(*names)

    def name(self, path) -> str:
        return Path(path).name

    def parent(self, path):
        return Path(path).parent

    def size(self, path) -> int:
        return self._os(lambda: os.stat(path).st_size, path)

    def is_file(self, path) -> bool:
        return Path(path).is_file()

    def _file_size(self, path) -> int | None:
        try:  # one stat, not one for "is it a file" and one for its size: this runs for every tile
            st = os.stat(path)
        except OSError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def is_dir(self, path) -> bool:
        return Path(path).is_dir()

    def list(self, folder) -> list[str]:
        if not Path(folder).is_dir():
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
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_bytes(data)
        self._os(write, path)

    def commit(self, path, data: bytes) -> None:
        tmp = Path(path).with_name(f".{Path(path).name}.{uuid.uuid4().hex}.tmp")
        try:
            self.write(tmp, data)
            self._os(lambda: os.replace(tmp, path), path)
        except FormatError:
            # TileDB 2.30 loads every file of __meta/, a partial one too: leave none behind
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise

    def delete(self, path) -> None:
        self._os(lambda: os.remove(path), path)

    def makedirs(self, path) -> None:
        self._os(lambda: Path(path).mkdir(parents=True, exist_ok=True), path)

    @contextmanager
    def writer(self, path):
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as f:
                yield f
        except OSError as e:
            raise FormatError(f"cannot access: {e.strerror or e}", file=str(path)) from None

    @staticmethod
    def _os(call, path):
        try:
            return call()
        except OSError as e:
            raise FormatError(f"cannot access: {e.strerror or e}", file=str(path)) from None


def storage_for(path) -> tuple[Storage, object]:
    """The storage that serves ``path``, and the path as that storage spells it."""
    if isinstance(path, Storage):
        raise TypeError("path: expected a path, not a Storage")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: expected a str or os.PathLike, not {type(path).__name__}")
    return LocalStorage(), Path(path)
