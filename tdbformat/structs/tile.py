"""Filtered tiles: a chunk count, then each chunk's sizes, filter metadata and data (tile.md; REFERENCE.md §4).

This is the body of every data tile and of every generic tile. A data file is tiles back to back;
where each one starts comes from the fragment metadata, so :data:`DataFile` only splits the run.
"""

from __future__ import annotations

import struct

from construct import Container, Int32ul, Int64ul, ListContainer, Rebuild, this

from ..errors import FormatError

from ..fields import Counted, Raw, RepeatToEnd, Section, Struct

__all__ = ["TileChunk", "Tile", "DataFile", "tile_nbytes", "read_tile"]

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


def read_tile(data, offset: int = 0) -> Container:
    """The same value as ``Tile.parse(data)``, for bulk reads of data tiles: one ``unpack_from`` per chunk
    and zero-copy slices instead of construct's per-field parsing (a tile can hold hundreds of chunks).
    ``offset`` is where ``data`` starts in its file, for error messages."""
    view = memoryview(data)
    end = len(view)
    if end < 8:
        raise FormatError(f"a tile needs 8 bytes for its chunk count, found {end}", structure="Tile",
                          path="num_chunks", offset=offset)
    (num,) = struct.unpack_from("<Q", view)
    if num * 12 > end - 8:
        raise FormatError(f"{num} chunks need at least {num * 12} bytes but only {end - 8} are left",
                          structure="Tile", path="chunks", offset=offset + 8)
    chunks, pos = ListContainer(), 8
    for i in range(num):
        if pos + 12 > end:
            raise FormatError(f"chunk {i} header needs 12 bytes, {end - pos} are left", structure="Tile",
                              path="chunks", offset=offset + pos)
        size, data_size, md_size = struct.unpack_from("<III", view, pos)
        md_at, data_at, pos = pos + 12, pos + 12 + md_size, pos + 12 + md_size + data_size
        if pos > end:
            raise FormatError(f"chunk {i} holds {md_size} + {data_size} bytes but only {end - md_at} are left",
                              structure="Tile", path="chunks", offset=offset + md_at)
        chunks.append(Container(unfiltered_size=size, filtered_data_size=data_size, filtered_metadata_size=md_size,
                                metadata=view[md_at:data_at], data=view[data_at:pos]))
    if pos != end:
        raise FormatError(f"{end - pos} bytes after the last chunk", structure="Tile", offset=offset + pos)
    return Container(num_chunks=num, chunks=chunks)
