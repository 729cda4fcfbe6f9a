"""What vacuum lists (``.vac`` files) hold at each format version, shared by fragment and metadata consolidation."""

from __future__ import annotations

import os

from ..storage import LocalStorage
from ..versions import FEATURES

__all__ = ["VACUUM_FILES", "RELATIVE_VACUUM_URIS", "array_uri"]

#: consolidation lists what it replaced in a vacuum file (before, TileDB deleted the fragments at once)
VACUUM_FILES = FEATURES["vacuum_files"]
#: a vacuum file's lines are relative to the array (write_vacuum_file); absolute URIs before
RELATIVE_VACUUM_URIS = FEATURES["relative_vacuum_uris"]


def array_uri(arr) -> str:
    """The array's URI as TileDB spells it in absolute vacuum lines (``file:///...`` for a local folder)."""
    if isinstance(arr.storage, LocalStorage):
        return "file://" + os.path.abspath(str(arr.path))
    return str(arr.path)
