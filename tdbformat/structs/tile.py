"""Filtered tiles: a chunk count, then each chunk's sizes, filter metadata and data (tile.md; REFERENCE.md §4).

This is the body of every data tile and of every generic tile. A data file is tiles back to back;
where each one starts comes from the fragment metadata, so :data:`DataFile` only splits the run.
"""

from __future__ import annotations

from construct import Int32ul, Int64ul, Rebuild, this

from ..fields import Counted, Raw, RepeatToEnd, Section, Struct

__all__ = ["TileChunk", "Tile", "DataFile", "tile_nbytes"]

TileChunk = Struct(
    "unfiltered_size" / Int32ul * "bytes of this chunk before filtering",
    "filtered_data_size" / Rebuild(Int32ul, lambda ctx: len(ctx.data)) * "bytes of data",
    "filtered_metadata_size" / Rebuild(Int32ul, lambda ctx: len(ctx.metadata)) * "bytes of metadata",
    "metadata" / Raw(this.filtered_metadata_size, "chunk metadata") * "metadata of the last filter stage",
    "data" / Raw(this.filtered_data_size, "chunk data") * "data of the last filter stage",
)

Tile = Section("Tile", "tile.md", Struct(
    "num_chunks" / Rebuild(Int64ul, lambda ctx: len(ctx.chunks)) * "number of chunks (0 for an empty tile)",
    "chunks" / Counted(this.num_chunks, TileChunk, min_size=12) * "the chunks",
), whole=False)

#: A data file (``a0.tdb``, ``d0_var.tdb``...): tiles back to back.
DataFile = Section("Data file", "fragment.md", RepeatToEnd(Tile))


def tile_nbytes(tile) -> int:
    """Bytes of a tile on disk, computed from its chunks."""
    return 8 + sum(12 + len(c["metadata"]) + len(c["data"]) for c in tile["chunks"])
