"""Files on a local disk."""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from contextlib import contextmanager
from pathlib import Path

from ..errors import FormatError
from .base import Storage

__all__ = ["LocalStorage"]


class LocalStorage(Storage):
    """Files on a local disk (paths are :class:`pathlib.Path`)."""

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
