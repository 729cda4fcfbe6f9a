"""What every storage does: :class:`Storage`, the methods the package calls (ranges checked against each file's
real size before anything is read, listings kept for a snapshot, ranges read many at a time), over the few each
backend provides (``_read``, ``_list``, ``size``, ``write``, ``commit``...)."""

from __future__ import annotations

from contextlib import contextmanager

from ..errors import FormatError
from .view import FileView

__all__ = ["_Moves", "Storage", "coalesce"]


class _Listings:
    """How a storage lists folders: fresh each time, or once per folder inside :meth:`snapshot`, which also
    keeps the byte ranges fetched ahead for it (:meth:`keep`)."""

    #: inside :meth:`snapshot`: ``{folder: names}``
    _listings = None
    #: inside :meth:`snapshot`: ``{path: [(start, bytes)]}`` fetched ahead by :meth:`keep`
    _kept = None

    def list(self, folder) -> list[str]:
        """The names in ``folder``, sorted (TileDB lists by name); empty if there is no such folder."""
        if self._listings is None:
            return self._list(folder)
        if folder not in self._listings:
            self._listings[folder] = self._list(folder)
        return self._listings[folder]

    def _list(self, folder) -> list[str]:
        raise NotImplementedError

    def _list_many(self, folders) -> list[list[str]]:
        return [self._list(f) for f in folders]

    def _prefetch(self, folders) -> dict:
        """``{folder: names}`` of at least ``folders``, for :meth:`snapshot`."""
        return dict(zip(folders, self._list_many(folders)))

    @contextmanager
    def snapshot(self, prefetch=()):
        """Within the block, each folder is listed once and that listing kept: one consistent view of an
        array's folders (on an object store, a request saved per folder listed twice). ``prefetch``: folders
        to list now, at once (concurrently on an object store)."""
        if self._listings is not None:  # already inside one
            yield
            return
        self._listings, self._kept = self._prefetch(list(prefetch)), {}
        try:
            yield
        finally:
            self._listings = self._kept = None

    def keep(self, ranges, what: str = "file") -> None:
        """Inside a :meth:`snapshot`: fetch ``(path, start, end)`` ``ranges`` now, in one batch (one concurrent
        round on an object store), and answer reads that fall inside them from memory until it ends."""
        if self._kept is not None:
            for (path, start, _), data in zip(ranges, self.read_many(ranges, what)):
                self._kept.setdefault(path, []).append((start, bytes(data)))

    def forget_kept(self) -> None:
        """Inside a :meth:`snapshot`: drop the ranges :meth:`keep` fetched (a walk over many arrays, after each
        one: the listing stays, the bytes do not pile up)."""
        if self._kept is not None:
            self._kept = {}

    def _held(self, path, start: int, end: int) -> bytes | None:
        for at, data in (self._kept or {}).get(path, ()):
            if at <= start and end <= at + len(data):
                return data if (start, end) == (at, at + len(data)) else data[start - at:end - at]
        return None


def _inside(path, start: int, end: int, size: int, what: str) -> int:
    if not 0 <= start <= end <= size:
        raise FormatError(f"bytes [{start}, {end}) lie outside the {size}-byte {what}", file=str(path), offset=start)
    return end


class _Requests:
    """What a storage's request costs, as it estimates it, and so which gap between ranges is worth fetching."""

    #: what a request costs as this storage estimates it: seconds before its first byte (a local disk: none),
    #: then bytes a second; a gap between two ranges under their product costs less to fetch than a request
    latency, bandwidth = 0.0, 32 << 20
    #: the largest gap merged, whatever the estimate (a block stays a few MiB)
    GAP_CAP = 1 << 20
    #: the gap a storage option set (None: estimated)
    _merge_gap = None

    @property
    def merge_gap(self) -> int:
        """Ranges of a file fewer bytes apart than this are fetched as one block (:meth:`read_many`, a read's
        tiles): the bytes a request's latency would carry at the storage's bandwidth, at most
        :attr:`GAP_CAP`; 0 on a local disk, where only ranges that touch merge (seeking is free, reading a
        gap is not)."""
        return min(self.GAP_CAP, int(self.latency * self.bandwidth)) if self._merge_gap is None else self._merge_gap


class Storage(_Listings, _Requests):
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

    def folders_in(self, folder) -> set[str]:
        """The names in ``folder`` (as :meth:`list` gives them) that are folders."""
        return {n for n in self.list(folder) if self.is_dir(self.join(folder, n))}

    def _read(self, path, start: int, length: int) -> bytes:
        raise NotImplementedError

    def read(self, path, start: int = 0, end: int | None = None, what: str = "file") -> bytes:
        """Bytes ``[start, end)`` of the file at ``path`` (``end`` None: to its end), after checking the
        range against the file's real size. ``what`` names the file's role in errors."""
        end = self.checked(path, start, end, what)
        if (held := self._held(path, start, end)) is not None:
            return held
        return self._read(path, start, end - start) if end > start else b""

    def checked(self, path, start: int, end: int | None, what: str = "file") -> int:
        """``end`` (None: the file's size) once ``[start, end)`` is known to lie inside the file."""
        size = self.size_of(path, what)
        return _inside(path, start, size if end is None else end, size, what)

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

    def read_tail(self, path, length: int, what: str = "file") -> tuple[int, bytes]:
        """``(start, bytes)``: the last ``length`` bytes of the file (all of it if shorter), in one read."""
        size = self.size_of(path, what)
        start = max(0, size - length)
        return start, self.read(path, start, size, what)

    def read_many(self, ranges, what: str = "file") -> list:
        """The bytes of each ``(path, start, end)`` in ``ranges``, in order, each checked as :meth:`read`
        checks one. Ranges of a file less than :attr:`merge_gap` apart are fetched as one block
        (:func:`coalesce`); a range that is not a whole block comes back as a memoryview into it (no copy)."""
        sizes = {path: self.size_of(path, what) for path in {r[0] for r in ranges}}  # one stat per file
        ranges = [(path, int(start), _inside(path, int(start), int(end), sizes[path], what))
                  for path, start, end in ranges]
        out = [self._held(*r) for r in ranges]
        todo = [i for i, held in enumerate(out) if held is None]
        blocks, owner = coalesce([ranges[i] for i in todo], self.merge_gap)
        got = self._read_blocks(blocks, what) if blocks else []
        for i, b in zip(todo, owner):
            (_, start, end), data, at = ranges[i], got[b], blocks[b][1]
            out[i] = data if (start, end) == (at, at + len(data)) else memoryview(data)[start - at:end - at]
        return out

    def _read_blocks(self, blocks, what: str) -> list[bytes]:
        """The bytes of each checked ``[path, start, end]`` block (object stores fetch them concurrently)."""
        return [self._read(path, start, end - start) if end > start else b"" for path, start, end in blocks]

    def view(self, path, what: str = "file", preload: int = 0) -> "FileView":
        """The file as a lazy bytes-like :class:`FileView` (its last ``preload`` bytes fetched now)."""
        return FileView(self, path, what, preload)

    def write(self, path, data: bytes) -> None:
        raise NotImplementedError

    def commit(self, path, data: bytes, staging=None) -> None:
        """Write ``data`` under a temporary name, then rename it to ``path`` in one step; ``staging``: the folder
        of the temporary (default ``path``'s), one whose stray files no reader takes for data (TileDB reads
        every file of ``__schema/`` and ``__meta/``: a process killed before its rename would leave one)."""
        raise NotImplementedError

    def delete(self, path) -> None:
        raise NotImplementedError

    def makedirs(self, path) -> None:
        """Make the folder ``path`` (and its parents); nothing if it is there."""
        raise NotImplementedError

    def writer(self, path):
        """A context manager giving a file at ``path`` to write piece by piece (``.write(bytes)``, or
        ``.write_parts(pieces)``: bytes-like pieces in order, never joined into one copy where the storage can
        take them as they are), for data files too large to hold whole; like :meth:`write`, not atomic (a commit
        marker makes them visible)."""
        raise NotImplementedError


def coalesce(ranges, max_gap: int) -> tuple[list, list]:
    """``(blocks, owner)``: ``ranges`` (``(path, start, end)``) merged into ``[path, start, end]`` blocks
    wherever two ranges of a file lie less than ``max_gap`` bytes apart; ``owner[i]`` is range i's block."""
    blocks, owner = [], [0] * len(ranges)
    for i in sorted(range(len(ranges)), key=lambda i: ranges[i][:2]):
        path, start, end = ranges[i]
        if blocks and blocks[-1][0] == path and start <= blocks[-1][2] + max_gap:
            blocks[-1][2] = max(blocks[-1][2], end)
        else:
            blocks.append([path, start, end])
        owner[i] = len(blocks) - 1
    return blocks, owner


class _Moves:
    """What maintenance needs beyond reads and writes (``repair`` sets files aside by these)."""

    def move(self, path, to) -> None:
        """Move the file or folder ``path`` to ``to`` (its parent made if missing; never over something there):
        one rename where the storage renames, so the bytes are never copied and never in two places."""
        raise NotImplementedError

    def is_link(self, path) -> bool:
        """Whether ``path`` is a symbolic link (never, where the storage has none)."""
        return False

    def remove_folder(self, path) -> None:
        """Remove the folder ``path`` and what it holds, following no link out of it (a link is removed, never
        what it points to): a write that failed takes back its fragment folder, vacuum removes what
        consolidation replaced. An object store has no folders: the objects under it go one by one."""
        for f in self.walk(path):
            self.delete(f)
