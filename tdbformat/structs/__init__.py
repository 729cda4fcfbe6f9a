"""The declarations: one module per spec page, both directions, no file I/O (``from tdbformat.structs import
Footer``). Each file's structure parses bytes (``Footer.parse(data, schema=...)``) and builds them back
(``Footer.build(dict)``); the modules hold the parts and helpers of each page."""

from .array_schema import (
    VAR_NUM, ArraySchema, FieldInfo, attributes, check_not_pre_v1, dimensions, fill_value, schema_version,
)
from .commits import CommitMarker, ConsolidatedCommits, DeleteCommit, IgnoreFile, UpdateCommit, VacuumFile
from .consolidated import ConsolidatedFragmentMetadata
from .enumeration import Enumeration, enumeration_values
from .filter_pipeline import Filter, FilterPipeline
from .footer import Footer
from .fragment import FragmentMetadata
from .generic_tile import GenericTile, GenericTileHeader
from .group import GroupDetails
from .metadata import ArrayMetadata, fold_metadata
from .prev1_0x import ArraySchema0x, BookKeeping0x
from .prev1_1x import ArraySchema1x, FragmentMetadata1x, GenericTile1x
from .tile import DataFile, FilteredTile, Tile, TileChunk

__all__ = [
    # files of format versions 1-23, by spec page
    "GenericTile", "GenericTileHeader", "ArraySchema", "Enumeration", "Filter", "FilterPipeline", "Footer",
    "FragmentMetadata", "ConsolidatedFragmentMetadata", "DataFile", "Tile", "TileChunk", "FilteredTile",
    "ArrayMetadata", "GroupDetails", "CommitMarker", "DeleteCommit", "UpdateCommit", "VacuumFile", "IgnoreFile",
    "ConsolidatedCommits",
    # files before format version 1 (prev1.md)
    "ArraySchema0x", "BookKeeping0x", "ArraySchema1x", "FragmentMetadata1x", "GenericTile1x",
    # reading a parsed schema, enumeration or metadata
    "VAR_NUM", "FieldInfo", "attributes", "dimensions", "fill_value", "schema_version", "check_not_pre_v1",
    "enumeration_values", "fold_metadata",
]
