"""tdbformat: the executable specification of TileDB's on-disk format."""

from .errors import ChecksumError, EncryptionError, FormatError, UnsupportedError, VersionError
from .structs.filter_pipeline import Filter, FilterPipeline
from .structs.generic_tile import GenericTile, GenericTileHeader
from .structs.tile import DataFile, Tile, TileChunk
from .files import ParsedFile, parse_file
from .versions import KNOWN_VERSIONS, LATEST

__all__ = [
    "FormatError", "ChecksumError", "EncryptionError", "UnsupportedError", "VersionError",
    "Filter", "FilterPipeline", "GenericTile", "GenericTileHeader", "DataFile", "Tile", "TileChunk",
    "KNOWN_VERSIONS", "LATEST", "ParsedFile", "parse_file",
]
