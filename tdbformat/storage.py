"""The one door to bytes: every read, listing and write of an array, a group or a file goes through a
:class:`Storage`. Nothing else in the package opens files.

A storage knows each file's real size, so no read is sized by a length that a file claims: a range past
the end is a :class:`FormatError` naming the file before anything is allocated. Every ``OSError`` (a
missing file, a folder where a file belongs, no permission) becomes a ``FormatError`` that names the path
and what was expected there. Writes are atomic: data goes to a temporary name first and is renamed into
place (:meth:`Storage.commit`), so a reader sees a file whole or not at all.

:class:`LocalStorage` serves local paths; :class:`FsspecStorage` serves URLs (``s3://``, ``gs://``, ``az://``,
``http(s)://``, ``memory://``, ``file://``) through the same methods, with fsspec as the optional extra
``tdbformat[remote]``. Reads are ranged: :meth:`Storage.read` fetches ``[start, end)`` only,
:meth:`Storage.read_tail` a file's last bytes (a footer), :meth:`Storage.read_many` many ranges at once
(coalesced and concurrent on object stores), and :meth:`Storage.view` a lazy bytes-like file that fetches
the slices asked of it.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat
import uuid
from contextlib import contextmanager
from pathlib import Path

from .errors import FormatError, UnsupportedError

__all__ = ["Storage", "LocalStorage", "storage_for"]
__all__ += ["FsspecStorage", "FileView", "URL_SCHEMES", "coalesce"]
__all__ += ["default_storage_options"]


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

    def _held(self, path, start: int, end: int) -> bytes | None:
        for at, data in (self._kept or {}).get(path, ()):
            if at <= start and end <= at + len(data):
                return data if (start, end) == (at, at + len(data)) else data[start - at:end - at]
        return None


def _inside(path, start: int, end: int, size: int, what: str) -> int:
    if not 0 <= start <= end <= size:
        raise FormatError(f"bytes [{start}, {end}) lie outside the {size}-byte {what}", file=str(path), offset=start)
    return end


class Storage(_Listings):
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

    #: ranges fewer bytes apart than this are fetched as one block by :meth:`read_many` (a local read
    #: merges only ranges that touch: seeking is free, reading a gap is not)
    MAX_GAP = 0

    def read_many(self, ranges, what: str = "file") -> list:
        """The bytes of each ``(path, start, end)`` in ``ranges``, in order, each checked as :meth:`read`
        checks one. Ranges of a file less than :attr:`MAX_GAP` apart are fetched as one block
        (:func:`coalesce`); a range that is not a whole block comes back as a memoryview into it (no copy)."""
        sizes = {path: self.size_of(path, what) for path in {r[0] for r in ranges}}  # one stat per file
        ranges = [(path, int(start), _inside(path, int(start), int(end), sizes[path], what))
                  for path, start, end in ranges]
        out = [self._held(*r) for r in ranges]
        todo = [i for i, held in enumerate(out) if held is None]
        blocks, owner = coalesce([ranges[i] for i in todo], self.MAX_GAP)
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


#: URL schemes that :func:`storage_for` serves through fsspec, and the fsspec backend each one needs
URL_SCHEMES = {"s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs", "abfss": "adlfs",
               "http": "aiohttp", "https": "aiohttp", "memory": None, "file": None}


def _fsspec():
    try:
        import fsspec
    except ImportError:
        raise UnsupportedError("URLs need fsspec: pip install 'tdbformat[remote]'") from None
    return fsspec


def _filesystem(protocol: str, options: dict):
    try:
        return _fsspec().filesystem(protocol, **options)
    except ImportError as e:
        raise UnsupportedError(f"{protocol}:// URLs need fsspec's backend {URL_SCHEMES.get(protocol)}: pip install "
                               f"'tdbformat[remote]' {URL_SCHEMES.get(protocol) or ''} ({e})") from None


class FsspecStorage(Storage):
    """Files behind an fsspec filesystem; paths are URLs (``s3://bucket/array/__schema``).

    Object stores have no rename and no folders: an object PUT is already whole-or-nothing, so
    :meth:`commit` writes the object in one request (TileDB's commit protocol orders the objects: data,
    then the commit marker last); where the filesystem renames (``file://``, ``memory://``) it writes a
    temporary name and moves it into place. Sizes seen in a listing are kept, so a tile read costs one
    request, not a size lookup and a read.
    """

    #: ranges fewer bytes apart are one request in :meth:`read_many` (64 KiB more cost less than a round trip)
    MAX_GAP = 64 << 10
    _RENAMES = ("file", "memory")

    def __init__(self, protocol: str, storage_options=None):
        if storage_options is not None and not isinstance(storage_options, dict):
            raise TypeError(f"storage_options: expected a dict, not {type(storage_options).__name__}")
        self.protocol, self.storage_options = protocol, dict(storage_options or {})
        self.fs, self._sizes = _filesystem(protocol, self.storage_options), {}

    def __reduce__(self):  # the filesystem pickles as its protocol and options (dask ships storages)
        return FsspecStorage, (self.protocol, self.storage_options)

    def join(self, folder, *names):
        return "/".join([str(folder).rstrip("/"), *names])

    def name(self, path) -> str:
        return str(path).rstrip("/").rsplit("/", 1)[-1]

    def parent(self, path):
        up = str(path).rstrip("/").rsplit("/", 1)[0]
        return path if up.endswith(":/") else up

    def size(self, path) -> int:
        return self.size_of(path)

    def is_file(self, path) -> bool:
        return self._file_size(path) is not None

    def _file_size(self, path) -> int | None:
        known = self._sizes.get(path)
        # in the snapshot's tree the listing is all, but an HTTP index page lists files without their sizes
        if known is _UNSIZED or (known is None and not self._in_tree(path)):
            _ask_size(self, path)
        return self._sizes.get(path)

    def is_dir(self, path) -> bool:
        if self._listings is not None and path in self._listings:
            return True
        return not self._in_tree(path) and bool(_call(lambda: self.fs.isdir(path), path))

    #: the folder a snapshot listed recursively (:meth:`_prefetch`): below it, what the listing lacks is not there
    _tree = None

    def _in_tree(self, path) -> bool:
        return self._listings is not None and self._tree is not None and str(path).startswith(self._tree + "/")

    def _prefetch(self, folders) -> dict:
        """An array's folders from one recursive listing of the first (the others below it): every folder's
        names and file's size in one paginated request, not a listing per folder and a HEAD per file."""
        root, self._tree = (str(folders[0]).rstrip("/") if folders else ""), None
        if not folders or not all(str(f).startswith(root) for f in folders):
            return super()._prefetch(folders)
        listings, self._tree = _tree_listing(self, root, folders), root
        return listings

    def _list(self, folder, found=None) -> list[str]:
        if found is None and self._in_tree(folder):
            return []  # not in the snapshot's recursive listing: no such folder
        return sorted(self.name(e["name"]) for e in _entries(self, folder, found))

    def _list_many(self, folders) -> list[list[str]]:
        return [self._list(f, found) for f, found in zip(folders, _ls_many(self.fs, folders))]

    def walk(self, folder) -> list:
        base = self.fs._strip_protocol(folder).rstrip("/")
        found = _call(lambda: self.fs.find(folder, detail=True), folder)
        for name, info in found.items():
            _remember(self, str(folder).rstrip("/") + name[len(base):], info)
        return sorted((str(folder).rstrip("/") + n[len(base):] for n in found), key=lambda p: p.split("/"))

    def _read(self, path, start: int, length: int) -> bytes:
        data = _call(lambda: self.fs.cat_file(path, start=start, end=start + length), path)
        return _check_fetched(data, path, start, start + length)

    def _read_blocks(self, blocks, what: str) -> list[bytes]:  # one concurrent cat_ranges call
        if not blocks:
            return []
        at_most = {"batch_size": IN_FLIGHT} if getattr(self.fs, "async_impl", False) else {}  # (else 1,280)
        got = _call(lambda: self.fs.cat_ranges(*map(list, zip(*blocks)), on_error="return", **at_most), blocks[0][0])
        return [_check_fetched(data, path, start, end) for (path, start, end), data in zip(blocks, got)]

    def write(self, path, data: bytes) -> None:
        def write():
            if self.protocol in self._RENAMES:
                self.fs.makedirs(self.parent(path), exist_ok=True)
            self.fs.pipe_file(path, bytes(data))
        _call(write, path)
        self._sizes[path] = len(data)

    def commit(self, path, data: bytes) -> None:
        if self.protocol not in self._RENAMES:
            self.write(path, data)  # one PUT: the object appears whole or not at all
        else:
            _commit_by_rename(self, path, data)

    def delete(self, path) -> None:
        _call(lambda: self.fs.rm_file(path), path)
        self._sizes.pop(path, None)

    def makedirs(self, path) -> None:
        # an object store has no folders: a folder is there once an object below it is (as for TileDB)
        if self.protocol in self._RENAMES:
            _call(lambda: self.fs.makedirs(path, exist_ok=True), path)

    def writer(self, path):
        """An object appears whole when the block ends (a multipart upload completes on close), or not at all."""
        self._sizes.pop(path, None)
        self.makedirs(self.parent(path))  # a no-op on object stores
        return _fs_writer(self.fs, path)


@contextmanager
def _fs_writer(fs, path):
    f = _call(lambda: fs.open(path, "wb"), path)
    try:
        yield _Sink(f, path)
    except BaseException:
        with contextlib.suppress(Exception):  # abandon the upload; never mask the error
            f.discard() if hasattr(f, "discard") else f.close()
        raise
    _call(f.close, path)


class _Sink:
    """A file being written whose errors are ours, naming it."""

    def __init__(self, f, path):
        self.f, self.path = f, path

    def write(self, data) -> int:
        return _call(lambda: self.f.write(data), self.path)

    def writelines(self, parts) -> None:
        for part in parts:
            self.write(part)


def _commit_by_rename(storage, path, data: bytes) -> None:
    """Write ``data`` to a temporary name beside ``path``, then move it into place."""
    tmp = storage.join(storage.parent(path), f".{storage.name(path)}.{uuid.uuid4().hex}.tmp")
    try:
        storage.write(tmp, data)
        _call(lambda: storage.fs.mv(tmp, path), path)
    finally:  # a failed move leaves the temporary: remove it, never mask the error
        storage._sizes.pop(tmp, None)
        with contextlib.suppress(Exception):
            storage.fs.rm_file(tmp) if storage.fs.exists(tmp) else None
    storage._sizes[path] = len(data)


#: a listed file whose size the listing did not give (HTTP index pages): asked for when first needed
_UNSIZED = object()


def _size_in(info) -> int | None:
    """The size an fsspec listing or ``info`` gives, None where it gives none (or nothing a size can be)."""
    size = info.get("size")
    return size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None


def _remember(storage, path: str, info) -> None:
    size = _size_in(info)
    storage._sizes[path] = _UNSIZED if size is None else size


def _ask_size(storage, path) -> None:
    """The size of ``path`` from the store's ``info``, remembered (forgotten where no file is there)."""
    info = _call(lambda: storage.fs.info(path), path, missing=dict)
    storage._sizes.pop(path, None)
    if info.get("type") == "file":
        if _size_in(info) is None:
            raise FormatError(f"the store gives no size for this file: {info.get('size')!r}", file=str(path))
        storage._sizes[path] = _size_in(info)


def _tree_listing(storage, root: str, folders) -> dict:
    """``{folder: sorted names}`` of every folder below ``root`` that holds a file (and of ``folders``), from
    one recursive listing; the files' sizes remembered by ``storage``."""
    fs = storage.fs
    base = fs._strip_protocol(root).rstrip("/")
    fs.invalidate_cache(root)
    found = _call(lambda: fs.find(root, detail=True), root, missing=dict)
    listings = {f: set() for f in [root, *folders]}
    for name, info in found.items():
        path = root + name.rstrip("/")[len(base):]
        if info.get("type") == "directory":
            continue
        _remember(storage, path, info)
        while path != root and path.startswith(root + "/"):  # each folder up to the root lists the one below
            up = storage.parent(path)
            listings.setdefault(up, set()).add(storage.name(path))
            path = up
    return {f: sorted(names) for f, names in listings.items()}


def _entries(storage, folder, found=None) -> list[dict]:
    """The listing of ``folder`` (``found``: as fetched; else fresh, for other writers add files), its file
    sizes remembered by ``storage``."""
    fs = storage.fs
    if found is None:
        fs.invalidate_cache(folder)
        found = _call(lambda: fs.ls(folder, detail=True), folder, missing=list)
    base = fs._strip_protocol(folder).rstrip("/")
    out = [e for e in found if e["name"].rstrip("/") != base]
    for e in out:
        if e.get("type") == "file":
            _remember(storage, storage.join(folder, storage.name(e["name"])), e)
    return out


def _ls_many(fs, folders) -> list:
    """``fs.ls(folder, detail=True)`` of each folder, fresh, at once where the filesystem is asynchronous (a
    missing folder lists empty)."""
    for folder in folders:
        fs.invalidate_cache(folder)
    if not folders or not getattr(fs, "async_impl", False):
        return [_call(lambda f=f: fs.ls(f, detail=True), f, missing=list) for f in folders]
    import asyncio

    from fsspec.asyn import sync

    async def gather():
        return await asyncio.gather(*(fs._ls(f, detail=True) for f in folders), return_exceptions=True)
    got = _call(lambda: sync(fs.loop, gather), folders[0])
    return [[] if isinstance(g, FileNotFoundError) else _check_listed(g, f) for f, g in zip(folders, got)]


def _check_listed(found, folder):
    if isinstance(found, BaseException):
        raise _error(found, folder)
    return found


def _call(call, path, missing=None):
    """``call()``, its errors ours; ``missing()`` is the answer for no such file, when given."""
    try:
        return call()
    except FormatError:
        raise
    except FileNotFoundError as e:
        if missing is None:
            raise _error(e, path) from None
        return missing()
    except Exception as e:  # noqa: BLE001 - fsspec, botocore, aiohttp and the OS raise their own kinds
        raise _error(e, path) from None


#: requests an object store's batch keeps in flight (:meth:`Storage.read_many`): I/O, not the cores
IN_FLIGHT = 64


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


def _check_fetched(data, path, start: int, end: int) -> bytes:
    """``data``, fetched for ``[start, end)`` of ``path``, unless it is an error or not that long (the object
    changed since its size was taken)."""
    if isinstance(data, BaseException):
        raise _error(data, path)
    if len(data) != end - start:
        raise FormatError(f"expected {end - start} bytes at offset {start}, read {len(data)}", file=str(path),
                          offset=start)
    return data


def _error(e: BaseException, path) -> FormatError:
    """The one place an fsspec backend's error becomes ours, naming the URL."""
    if isinstance(e, FileNotFoundError):
        return FormatError("not found", file=str(path))
    return FormatError(f"cannot access: {type(e).__name__}: {e}", file=str(path))


def storage_for(path, storage_options=None) -> tuple[Storage, object]:
    """The storage that serves ``path``, and the path as that storage spells it: a URL of
    :data:`URL_SCHEMES` goes through fsspec (``storage_options`` passed to its filesystem, as pandas and
    dask do), a local path to :class:`LocalStorage`."""
    if isinstance(path, Storage):
        raise TypeError("path: expected a path, not a Storage")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: expected a str or os.PathLike, not {type(path).__name__}")
    if isinstance(path, str) and "://" in path:
        scheme = path.split("://", 1)[0].lower()
        if scheme not in URL_SCHEMES:
            raise ValueError(f"path: unsupported URL scheme {scheme}:// (supported: "
                             f"{', '.join(s + '://' for s in URL_SCHEMES)})")
        options = _DEFAULT_OPTIONS.get() if storage_options is None else storage_options
        return FsspecStorage(scheme, options), path.rstrip("/")
    if storage_options:
        raise ValueError("storage_options: only URLs take storage options, not a local path")
    return LocalStorage(), Path(path)


#: what :func:`default_storage_options` set for the URLs of this thread or task
_DEFAULT_OPTIONS = contextvars.ContextVar("tdbformat_storage_options", default=None)


@contextmanager
def default_storage_options(options):
    """Within the block, every URL opened without ``storage_options=`` of its own takes ``options`` (local
    paths ignore them): how the CLI's ``--storage-options`` reaches every function a command calls."""
    if not isinstance(options, dict):
        raise TypeError(f"storage_options: expected a dict, not {type(options).__name__}")
    token = _DEFAULT_OPTIONS.set(dict(options))
    try:
        yield
    finally:
        _DEFAULT_OPTIONS.reset(token)
