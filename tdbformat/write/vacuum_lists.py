"""What vacuum lists (``.vac`` files) hold at each format version, shared by fragment and metadata consolidation."""

from __future__ import annotations

import os

from ..storage import LocalStorage
from ..versions import FEATURES

__all__ = ["VACUUM_FILES", "RELATIVE_VACUUM_URIS", "array_uri", "vacuum_lines"]

#: consolidation lists what it replaced in a vacuum file (before, TileDB deleted the fragments at once)
VACUUM_FILES = FEATURES["vacuum_files"]
#: a vacuum file's lines are relative to the array (write_vacuum_file); absolute URIs before
RELATIVE_VACUUM_URIS = FEATURES["relative_vacuum_uris"]


def array_uri(arr=None, storage=None, path=None) -> str:
    """The URI of the array ``arr`` (or at ``path`` of ``storage``) as TileDB spells it in absolute vacuum
    lines (``file:///...`` for a local folder)."""
    storage, path = (arr.storage, arr.path) if arr is not None else (storage, path)
    if isinstance(storage, LocalStorage):
        return "file://" + os.path.abspath(str(path))
    return str(path)


def vacuum_lines(storage, root, parts: list, version: int) -> list[str]:
    """A vacuum list's lines for the paths ``parts`` (tuples below the array folder) at format ``version``
    (FragmentConsolidator::write_vacuum_file): what follows the array's URI from v19 (``/__fragments/<name>``),
    the whole URI before."""
    base = "" if RELATIVE_VACUUM_URIS(version) else array_uri(storage=storage, path=root).rstrip("/")
    return [base + "/" + "/".join(p) for p in parts]
