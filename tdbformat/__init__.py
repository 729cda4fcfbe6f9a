"""tdbformat: the executable specification of TileDB's on-disk format."""

from . import spec
from .array import Array, Fragment, open_array
from .array import ConditionError, MemoryBudgetError, Query
from .array.metadata import delete_metadata, put_metadata
from .array.deletes import delete_cells
from .array.convert import convert
# the write/ package first: importing it later would rebind tdbformat.write from the function to it
from .write import convert_group as _convert_group  # noqa: F401
from .array.writer import ArrayWriter, create, open_writer, write
from .groups import Group, create_group
from .array.group import GroupReader, open_group
from .array import schema
from .errors import ChecksumError, EncryptionError, FormatError, FormatWarning, UnsupportedError, VersionError
from .files import ParsedFile, parse_file
from .filters import filter_tile, unfilter
from .structs.tile import FilteredTile
from .structs.array_schema import (
    VAR_NUM, ArraySchema, FieldInfo, attributes, check_not_pre_v1, dimensions, fill_value, schema_version,
)
from .structs.enumeration import Enumeration, enumeration_values
from .structs.consolidated import ConsolidatedFragmentMetadata
from .structs.filter_pipeline import Filter, FilterPipeline
from .structs.footer import Footer
from .structs.fragment import FragmentMetadata
from .structs.generic_tile import GenericTile, GenericTileHeader
from .directory import group_members, read_metadata
from .structs.group import GroupDetails
from .structs.metadata import ArrayMetadata, fold_metadata
from .structs.tile import DataFile, Tile, TileChunk
from .versions import KNOWN_VERSIONS, LATEST
from .array.legacy import LegacyArray
from .structs.prev1_0x import ArraySchema0x, BookKeeping0x
from .structs.prev1_1x import ArraySchema1x, FragmentMetadata1x, GenericTile1x
from .validate import RULES, Finding, validate  # noqa: E402 (the function shadows its package's name, on purpose)
from .array.dask import to_dask
from .storage import storage_for
from .storage import default_storage_options
from .salvage import Loss, SalvageReport, salvage  # noqa: E402 (the function shadows its module's name)
from .filters import FilterPlan

__all__ = [
    "FormatError", "ChecksumError", "EncryptionError", "UnsupportedError", "VersionError", "FormatWarning",
    "ParsedFile", "parse_file", "open_array", "Array", "Fragment",
    "ArraySchema", "FieldInfo", "VAR_NUM", "attributes", "dimensions", "fill_value", "schema_version",
    "check_not_pre_v1",
    "Enumeration", "enumeration_values",
    "FilteredTile", "filter_tile", "unfilter",
    "FragmentMetadata", "ConsolidatedFragmentMetadata", "Footer",
    "Filter", "FilterPipeline", "GenericTile", "GenericTileHeader", "DataFile", "Tile", "TileChunk",
    "GroupDetails", "group_members", "ArrayMetadata", "fold_metadata", "read_metadata",
    "KNOWN_VERSIONS", "LATEST", "spec",
    "put_metadata", "delete_metadata",
    "delete_cells",
    "create_group", "Group", "open_group", "GroupReader",
    "schema",
    "LegacyArray", "ArraySchema0x", "BookKeeping0x", "ArraySchema1x", "FragmentMetadata1x", "GenericTile1x",
    "validate", "Finding", "RULES",
    "create", "write", "open_writer", "ArrayWriter",
    "convert",
    "Query", "ConditionError", "MemoryBudgetError",
    "salvage", "SalvageReport", "Loss",
]
__all__ += ["to_dask", "storage_for"]
__all__ += ["FilterPlan"]
__all__ += ["default_storage_options"]
