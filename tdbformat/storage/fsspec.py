"""URLs through fsspec (``s3://``, ``gs://``, ``az://``, ``http(s)://``, ``memory://``, ``file://``): ranged and
concurrent reads, listings of a whole tree in one request, sizes remembered from listings, commits as one PUT on
object stores and by rename where there are folders. fsspec is the optional extra ``tdbformat[remote]``."""

from __future__ import annotations

import contextlib
import uuid
from contextlib import contextmanager

from ..errors import FormatError, StorageError, UnsupportedError
from .base import Storage, _Moves

__all__ = ["FsspecStorage", "URL_SCHEMES", "MERGE_GAP"]


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


class _FsspecMoves(_Moves):
    def move(self, path, to) -> None:
        if _call(lambda: self.fs.exists(to), to):
            raise FormatError("cannot move here: something already exists", file=str(to))
        _call(lambda: self.fs.mv(path, to, recursive=True), path)
        self._sizes.clear()

    def remove_folder(self, path) -> None:
        _call(lambda: self.fs.rm(path, recursive=True), path)
        self._sizes.clear()

    def move_marker(self, path, to) -> bool:
        """Move a folder marker (a zero-byte object whose key ends in "/", as some tools write for a folder) to
        ``to`` (a key ending in "/" too): whether it was there. fsspec's copies strip the slash (and its moves
        would take the whole folder), so on S3 the calls are made one object at a time; other stores refuse."""
        call = getattr(self.fs, "call_s3", None)
        if call is None:
            raise UnsupportedError("moving a folder marker object: only on S3", file=str(path))
        (sb, sk), (db, dk) = (str(p).split("://", 1)[-1].split("/", 1) for p in (path, to))
        def there() -> bool:
            call("head_object", Bucket=sb, Key=sk)
            return True

        if not _call(there, path, missing=bool):
            return False
        _call(lambda: call("copy_object", Bucket=db, Key=dk, CopySource={"Bucket": sb, "Key": sk}), path)
        _call(lambda: call("delete_object", Bucket=sb, Key=sk), path)
        self.fs.invalidate_cache()
        self._sizes.clear()
        return True


#: requests an object store's batch keeps in flight (:meth:`Storage.read_many`): I/O, not the cores
IN_FLIGHT = 64
#: the storage option (ours, not passed to fsspec) that sets :attr:`Storage.merge_gap` in bytes
MERGE_GAP = "tdbformat.merge_gap"


#: an object store's (or web server's) request: 20 ms before the first byte, then the bytes a second assumed of
#: one connection (:attr:`Storage.bandwidth`): gaps under 640 KiB are fetched, not a request of their own
#: (TileDB's ``vfs.min_batch_gap`` is 500 KB); ``file://`` and ``memory://`` have no latency
STORE_LATENCY = 0.02


def _estimated(storage) -> dict:
    """The storage's request costs set (:class:`Storage` ``latency``, the option :data:`MERGE_GAP`, checked);
    the options that are fsspec's."""
    options = dict(storage.storage_options)
    gap = options.pop(MERGE_GAP, None)
    if gap is not None and (isinstance(gap, bool) or not isinstance(gap, int) or gap < 0):
        raise ValueError(f"storage_options[{MERGE_GAP!r}]: expected an int of bytes >= 0, not {gap!r}")
    storage.latency, storage._merge_gap = (0.0 if storage.protocol in storage._RENAMES else STORE_LATENCY), gap
    return options


class FsspecStorage(_FsspecMoves, Storage):
    """Files behind an fsspec filesystem; paths are URLs (``s3://bucket/array/__schema``).

    Object stores have no rename and no folders: an object PUT is already whole-or-nothing, so
    :meth:`commit` writes the object in one request (TileDB's commit protocol orders the objects: data,
    then the commit marker last); where the filesystem renames (``file://``, ``memory://``) it writes a
    temporary name and moves it into place. Sizes seen in a listing are kept, so a tile read costs one
    request, not a size lookup and a read.
    """

    _RENAMES = ("file", "memory")

    def __init__(self, protocol: str, storage_options=None):
        if storage_options is not None and not isinstance(storage_options, dict):
            raise TypeError(f"storage_options: expected a dict, not {type(storage_options).__name__}")
        self.protocol, self.storage_options = protocol, dict(storage_options or {})
        self.fs, self._sizes = _filesystem(protocol, _estimated(self)), {}

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
        if self._in_tree(folder) or (self._tree is not None and str(folder).rstrip("/") == self._tree):
            return super().walk(folder)  # from the snapshot's recursive listing: no request
        return _walk(self, folder)

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

    def commit(self, path, data: bytes, staging=None) -> None:  # (a temporary beside path: no kill between)
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

    def write_parts(self, parts) -> None:
        for part in parts:  # (the file buffers them: no join)
            self.write(part)


def _commit_by_rename(storage, path, data: bytes) -> None:
    """Write ``data`` to a temporary name beside ``path``, then move it into place."""
    if storage.is_dir(path):  # fsspec's mv would move the file into the folder, and report no error
        raise FormatError("cannot commit a file here: a folder is in the way", file=str(path))
    tmp = storage.join(storage.parent(path), f".{storage.name(path)}.{uuid.uuid4().hex}.tmp")
    try:
        storage.write(tmp, data)
        _call(lambda: storage.fs.mv(tmp, path), path)
    finally:  # a failed move leaves the temporary: remove it, never mask the error
        storage._sizes.pop(tmp, None)
        with contextlib.suppress(Exception):
            storage.fs.rm_file(tmp) if storage.fs.exists(tmp) else None
    storage._sizes[path] = len(data)


def _walk(storage, folder) -> list:
    """Every file below ``folder`` from one recursive listing, sorted by path; their sizes remembered."""
    base = storage.fs._strip_protocol(folder).rstrip("/")
    found = _call(lambda: storage.fs.find(folder, detail=True), folder)
    for name, info in found.items():
        _remember(storage, str(folder).rstrip("/") + name[len(base):], info)
    return sorted((str(folder).rstrip("/") + n[len(base):] for n in found), key=lambda p: p.split("/"))


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
    except (FormatError, StorageError):
        raise
    except FileNotFoundError as e:
        if missing is None:
            raise _error(e, path) from None
        return missing()
    except Exception as e:  # noqa: BLE001 - fsspec, botocore, aiohttp and the OS raise their own kinds
        raise _error(e, path) from None


def _check_fetched(data, path, start: int, end: int) -> bytes:
    """``data``, fetched for ``[start, end)`` of ``path``, unless it is an error or not that long (the object
    changed since its size was taken)."""
    if isinstance(data, BaseException):
        raise _error(data, path)
    if len(data) != end - start:
        raise FormatError(f"expected {end - start} bytes at offset {start}, read {len(data)}", file=str(path),
                          offset=start)
    return data


def _error(e: BaseException, path) -> Exception:
    """The one place an fsspec backend's error becomes ours, naming the URL: a missing object a FormatError,
    any other failure (refused, unreachable, denied) a StorageError."""
    if isinstance(e, FileNotFoundError):
        return FormatError("not found", file=str(path))
    return StorageError(getattr(e, "errno", None), f"cannot access: {type(e).__name__}: {e}", path)
