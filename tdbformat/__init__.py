"""tdbformat: the executable specification of TileDB's on-disk format.

The names below are the public API. The rest lives in namespaces: :mod:`tdbformat.structs` (the declarations:
``Footer``, ``GenericTile``, ``FragmentMetadata``...), :mod:`tdbformat.schema` (the schema builders, named as
TileDB-Py's: ``Dim``, ``Domain``, ``Attr``, ``ArraySchema``...), :mod:`tdbformat.filters`, :mod:`tdbformat.spec`.
"""

import importlib
import warnings

from . import schema, spec
from .array import Array, Fragment, Query
from .array import open_array as _open_for_reading
from .array.group import open_group
from .array.ranges import RangeError
from .array.dask import to_dask
from .check.salvage import SalvageReport, salvage
from .check.validate import Finding, validate
from .check.repair import repair
from .errors import (ChecksumError, EncryptionError, FormatError, FormatWarning, StorageError, UnsupportedError,
                     VersionError)
from .array.condition import ConditionError
from .array.dense import MemoryBudgetError
from .layout.files import ParsedFile, parse_file
from .versions import KNOWN_VERSIONS, LATEST
from .write.consolidate import consolidate
from .write.convert import convert
from .write.deletes import delete_cells
from .write.evolve import ArraySchemaEvolution
from .write.groups import Group, create_group
from .write.metadata import delete_metadata, put_metadata
from .write.vacuum import delete_fragments, vacuum
from .write.writer import ArrayWriter, create, open_writer, write

__all__ = [
    # open and read
    "open_array", "Array", "Query", "Fragment", "to_dask", "parse_file", "ParsedFile", "Group", "open_group",
    # write and maintain
    "create", "write", "open_writer", "ArrayWriter", "convert", "put_metadata", "delete_metadata", "delete_cells",
    "create_group", "consolidate", "vacuum", "delete_fragments", "ArraySchemaEvolution", "repair",
    # check
    "validate", "Finding", "salvage", "SalvageReport",
    # spec
    "spec", "LATEST", "KNOWN_VERSIONS",
    # errors
    "FormatError", "ChecksumError", "EncryptionError", "UnsupportedError", "VersionError", "FormatWarning",
    "StorageError",
    "ConditionError", "RangeError", "MemoryBudgetError",
]


def open_array(path, mode: str = "r", key=None, timestamp=None, storage_options=None):
    """Open the array at ``path`` as ``tiledb.open`` does: ``mode`` "r" reads (:func:`tdbformat.array.open_array`,
    which documents the other arguments), "w" writes (:func:`open_writer`; ``timestamp`` is the writes')."""
    if mode == "w":
        return open_writer(path, timestamp=timestamp, key=key)
    return _open_for_reading(path, mode, key=key, timestamp=timestamp, storage_options=storage_options)


#: old top-level names -> the module that holds them now; they keep working for one release, with a warning
_MOVED = {
    **dict.fromkeys(
        ["ArraySchema", "FieldInfo", "VAR_NUM", "attributes", "dimensions", "fill_value", "schema_version",
         "check_not_pre_v1", "Enumeration", "enumeration_values", "FilteredTile", "FragmentMetadata",
         "ConsolidatedFragmentMetadata", "Footer", "Filter", "FilterPipeline", "GenericTile", "GenericTileHeader",
         "DataFile", "Tile", "TileChunk", "GroupDetails", "ArrayMetadata", "fold_metadata", "ArraySchema0x",
         "BookKeeping0x", "ArraySchema1x", "FragmentMetadata1x", "GenericTile1x"], "tdbformat.structs"),
    **dict.fromkeys(["filter_tile", "unfilter", "FilterPlan"], "tdbformat.filters"),
    **dict.fromkeys(["group_members", "read_metadata"], "tdbformat.layout"),
    **dict.fromkeys(["storage_for", "default_storage_options"], "tdbformat.storage"),
    "LegacyArray": "tdbformat.array.prev1",
    "RULES": "tdbformat.check.validate",
    "Loss": "tdbformat.check.salvage",
}


def __getattr__(name):
    if name in _MOVED:
        warnings.warn(f"tdbformat.{name} moved to {_MOVED[name]}.{name}; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module 'tdbformat' has no attribute {name!r}")
