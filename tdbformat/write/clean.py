"""Removing what failed writes left behind (TileDB#1470): :func:`clean_uncommitted`.

A fragment folder is committed by its commit file (``.ok`` v5-11, ``__commits/*.wrt`` or a ``.con`` entry
v12+) or, v1-4, by its metadata file; a folder without one is a write that never finished, which no reader
sees. Only such folders inside the array's own fragment folders are removed (a link is unlinked, never
followed). A write still running in another process is uncommitted too: clean only arrays nobody writes to.
"""

from __future__ import annotations

from .. import layout as directory
from ..layout import FRAGMENTS_DIR, SPECIAL_DIRS, Listing
from ..errors import FormatError
from ..storage import storage_for
from ..structs.names import parse_timestamped_name

__all__ = ["clean_uncommitted"]


def _folders(storage, root) -> list:
    """(name, folder) of every folder named like a fragment in the array folder and in ``__fragments/``."""
    out = []
    for folder in (root, storage.join(root, FRAGMENTS_DIR)):
        for name in storage.list(folder):
            path = storage.join(folder, name)
            if name in SPECIAL_DIRS or not name.startswith("__") or not storage.is_dir(path):
                continue
            try:
                parse_timestamped_name(name)
            except FormatError:
                continue  # not a fragment's name: not ours to remove
            out.append((name, path))
    return out


def clean_uncommitted(uri, key=None, dry_run: bool = False) -> list[str]:
    """Remove the uncommitted fragment folders of the array at ``uri`` (module doc); with ``dry_run`` only
    list them. Returns their paths."""
    storage, root = storage_for(uri)
    directory.array_format_version(storage, root, key)  # a FormatError if no schema parses
    committed = {e.name for e in Listing.of(storage, root, key).fragments}
    found = [path for name, path in _folders(storage, root) if name not in committed]
    if not dry_run:
        for path in found:
            storage.remove_folder(path)
    return [str(p) for p in found]
