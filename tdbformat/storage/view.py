"""A file as a lazy bytes-like object: fetched as it is sliced."""

from __future__ import annotations

__all__ = ["FileView"]


class FileView:
    """A file fetched as it is sliced: ``len(view)`` is its real size and ``view[a:b]`` its bytes. A slice
    not yet fetched costs one ranged read of at least :attr:`BLOCK` bytes, kept for the slices that follow
    (a fragment metadata file's sections sit next to each other). ``bytes(view)`` reads the rest whole."""

    #: bytes fetched at least per miss: a section header and its payload in one request
    BLOCK = 64 << 10

    def __init__(self, storage, path, what: str = "file", preload: int = 0, segments=()):
        """``segments``: ``(start, bytes)`` of the file already fetched (e.g. by :meth:`Storage.read_many`)."""
        self.storage, self.path, self.what = storage, path, what
        self._size = storage.size_of(path, what)
        self._segments = list(segments) + ([storage.read_tail(path, preload, what)] if preload else [])

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, key) -> bytes:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("FileView: only contiguous slices, e.g. view[a:b]")
        start, stop, _ = key.indices(self._size)
        stop = max(start, stop)
        for at, data in self._segments:
            if at <= start and stop <= at + len(data):
                return data[start - at:stop - at]
        data = self.storage.read(self.path, start, min(self._size, max(stop, start + self.BLOCK)), self.what)
        self._segments.append((start, data))
        return data[:stop - start]

    def __bytes__(self) -> bytes:
        return self[:]

    def fetched(self) -> int:
        """Bytes fetched so far (what a ranged open saves is ``len(view) - view.fetched()``)."""
        return sum(len(d) for _, d in self._segments)
