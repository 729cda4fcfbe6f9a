"""The one door to bytes: every read, listing and write of an array, a group or a file goes through a
:class:`Storage`. Nothing else in the package opens files.

A storage knows each file's real size, so no read is sized by a length that a file claims: a range past
the end is a :class:`FormatError` naming the file before anything is allocated. A missing file, or a folder
where a file belongs, is a ``FormatError`` that names the path and what was expected there; a failure of the
storage itself (a full disk, an I/O error, no permission, a store out of reach) is a :class:`StorageError`,
an ``OSError`` that keeps the errno and names the file. Writes are atomic: data goes to a temporary name
first, synced, and is renamed into place (:meth:`Storage.commit`), so a reader sees a file whole or not at
all.

:class:`LocalStorage` (``local.py``) serves local paths; :class:`FsspecStorage` (``fsspec.py``) serves URLs (``s3://``, ``gs://``, ``az://``,
``http(s)://``, ``memory://``, ``file://``) through the same methods, with fsspec as the optional extra
``tdbformat[remote]``. Reads are ranged: :meth:`Storage.read` fetches ``[start, end)`` only,
:meth:`Storage.read_tail` a file's last bytes (a footer), :meth:`Storage.read_many` many ranges at once
(coalesced and concurrent on object stores), and :meth:`Storage.view` a lazy bytes-like file that fetches
the slices asked of it (:class:`FileView`, ``view.py``). What every storage does is in ``base.py``.
"""

from __future__ import annotations

import contextvars
import os
from contextlib import contextmanager
from pathlib import Path

from .base import Storage, coalesce
from .fsspec import URL_SCHEMES, FsspecStorage
from .local import LocalStorage, syncing
from ..errors import StorageError
from .view import FileView

__all__ = ["Storage", "storage_for", "default_storage_options", "LocalStorage", "FsspecStorage", "FileView",
           "URL_SCHEMES", "coalesce", "StorageError", "syncing"]


def storage_for(path, storage_options=None, fsync: bool | None = None) -> tuple[Storage, object]:
    """The storage that serves ``path``, and the path as that storage spells it: a URL of
    :data:`URL_SCHEMES` goes through fsspec (``storage_options`` passed to its filesystem, as pandas and
    dask do), a local path to :class:`LocalStorage` (``fsync``: see there; an object store has no syncs).
    A ``(storage, path)`` pair comes back as it is: a group's members are read through the group's storage
    and the listing it holds (:func:`tdbformat.check.dataset.per_array`)."""
    if isinstance(path, tuple) and len(path) == 2 and isinstance(path[0], Storage):
        return path
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
    return LocalStorage(fsync), Path(path)


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
