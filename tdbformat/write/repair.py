"""The writes of ``repair``: what it sets aside goes into a backup folder inside the array, by renames (the bytes
are never copied, never lost, and never in two places), and rewritten fragments move into place folder first,
commit marker last, as a writer commits them.

Only the array's own files are touched: every path is one that a listing of the array found, is checked to lie
inside the array's folder, and is never reached through a symbolic link.
"""

from __future__ import annotations

import time

from .. import layout as directory
from ..errors import FormatError
from ..structs.names import parse_timestamped_name
from ..versions import FEATURES

__all__ = ["Mover", "backup_folder", "fragment_parts", "copy_array", "stage", "parts_below",
           "fragment_version"]


def backup_folder(storage, root, stamp: str | None = None):
    """A new folder of the array's backup, named for the time (``.tdbformat-backup/20261127T210455Z``)."""
    stamp = stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = storage.join(root, directory.BACKUP_DIR, stamp)
    n = 1
    while storage.is_dir(base) or storage.is_file(base):
        base, n = storage.join(root, directory.BACKUP_DIR, f"{stamp}-{n}"), n + 1
    return base


def fragment_parts(name: str, version: int) -> tuple[tuple, tuple | None]:
    """(the folder, the commit marker or None) of fragment ``name`` written at format ``version``, as path
    parts below the array folder: the marker is ``__commits/<name>.wrt`` (v12+), ``<name>.ok`` (v5-11), or
    none (v1-4: the metadata file inside the folder commits it)."""
    if FEATURES["fragments_folder"](version):
        return (directory.FRAGMENTS_DIR, name), (directory.COMMITS_DIR, f"{name}.wrt")
    if FEATURES["commit_markers"](version):
        return (name,), (f"{name}.ok",)
    return (name,), None


def fragment_version(name: str, fallback: int) -> int:
    """The format version a fragment's name carries, else ``fallback`` (names before v5 carry none)."""
    v = parse_timestamped_name(name).version
    return fallback if v is None else v


class Mover:
    """Moves of paths (tuples of parts) below ``root``: into ``backup`` (:meth:`set_aside`), or from another
    folder of the same storage into the array (:meth:`put`). ``moved`` records each (from, to)."""

    def __init__(self, storage, root, backup):
        self.storage, self.root, self.backup, self.moved = storage, root, backup, []

    def path(self, parts, base=None):
        return self.storage.join(self.root if base is None else base, *parts)

    def inside(self, parts) -> None:
        """FormatError unless ``parts`` names a path inside the array reached through no link."""
        if not parts or any(p in ("", ".", "..") or "/" in p or "\\" in p for p in parts):
            raise FormatError(f"repair: {'/'.join(parts)!r} is not a path inside the array", file=str(self.root))
        for i in range(1, len(parts) + 1):
            if self.storage.is_link(self.path(parts[:i])):
                raise FormatError("repair: a symbolic link; nothing is changed through it",
                                  file=str(self.path(parts[:i])))

    def set_aside(self, parts) -> None:
        self.inside(parts)
        src, dst = self.path(parts), self.path(parts, self.backup)
        self.storage.move(src, dst)
        self.moved.append((str(src), str(dst)))

    def set_aside_marker(self, parts) -> None:
        """The folder marker object ``parts`` + "/" (object stores only) into the backup, if it is still there."""
        self.inside(parts)
        src, dst = str(self.path(parts)) + "/", str(self.path(parts, self.backup)) + "/"
        if self.storage.move_marker(src, dst):
            self.moved.append((src, dst))

    def put(self, source_base, parts) -> None:
        """Move ``parts`` of the folder ``source_base`` to the same place in the array."""
        self.inside(parts)
        src, dst = self.path(parts, source_base), self.path(parts)
        self.storage.move(src, dst)
        self.moved.append((str(src), str(dst)))


def stage(storage, root, d_storage, staging) -> None:
    """An array at ``staging`` that holds the schema files of the array at ``root`` byte for byte (so a
    fragment written into it names a schema the array has), and no fragment."""
    for p in storage.walk(root):
        parts = parts_below(storage, root, p)
        if parts[0] == directory.SCHEMA_DIR or parts == (directory.LEGACY_SCHEMA,) or parts == (directory.LOCK,):
            d_storage.write(d_storage.join(staging, *parts), storage.read(p, what="schema file"))


def copy_array(storage, root, d_storage, d_root, skip) -> None:
    """Every file of the array at ``root`` copied to ``d_root`` but those below the path parts in ``skip``, the
    backup folder and folder marker objects; each file written whole before the next (data first: commit
    markers are empty files that sort after their folders only by chance, so they go last)."""
    files = [(p, parts_below(storage, root, p)) for p in storage.walk(root)
             if not str(p).endswith("/")]  # a folder marker object: the folder is there through its files
    files = [(p, parts) for p, parts in files
             if parts[0] != directory.BACKUP_DIR and not any(parts[:len(s)] == tuple(s) for s in skip)]
    markers = [(p, parts) for p, parts in files if parts[-1].endswith((".ok", ".wrt"))]
    for p, parts in [f for f in files if f not in markers] + markers:
        d_storage.write(d_storage.join(d_root, *parts), storage.read(p, what="file"))
    for folder in sorted(directory.SPECIAL_DIRS):
        if storage.is_dir(storage.join(root, folder)):
            d_storage.makedirs(d_storage.join(d_root, folder))


def parts_below(storage, root, path) -> tuple:
    r, p = str(root).rstrip("/\\"), str(path)
    if not p.startswith(r) or p[len(r):len(r) + 1] not in ("/", "\\"):
        raise FormatError("repair: a path outside the array", file=p)
    return tuple(x for x in p[len(r) + 1:].replace("\\", "/").split("/") if x)
