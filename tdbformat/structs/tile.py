"""Filtered tiles: a chunk count, then each chunk's sizes, filter metadata and data (tile.md; REFERENCE.md §4).

This is the body of every data tile and of every generic tile. A data file is tiles back to back;
where each one starts comes from the fragment metadata, so :data:`DataFile` only splits the run.

:func:`decode_tile` is the one adapter from a stored tile to its unfiltered bytes (the reader and
:data:`FilteredTile` both use it). :data:`FilteredTile` parses a data tile to the cell values it holds:
parse with context ``pipeline=`` (a FilterPipeline Container), ``datatype=`` and ``version=`` (the
fragment's format version), plus ``key=`` for encrypted arrays, ``cell_size=`` (default: one value of
the datatype) and ``var=True`` for var-size data (string RLE/dictionary then return the offsets they
carry). The result holds the stored ``tile``, the unfiltered ``data`` bytes, their ``array`` (a numpy
view by datatype) and ``offsets`` (string RLE/dictionary only). Building a value whose ``data`` is
unchanged writes the stored tile back byte for byte; otherwise (or from ``array`` alone) the pipeline
runs forward (give ``offsets`` in the value for var data).
"""

from __future__ import annotations

import struct

import numpy as np
from construct import Construct, Container, Int32ul, Int64ul, ListContainer, Rebuild, this

from ..enums import Datatype
from ..errors import FormatError
from ..fields import Counted, Raw, RepeatToEnd, Section, Struct
from ..filters import FilterPlan, filter_tile
from ..filters.encryption import normalize_key

__all__ = ["TileChunk", "Tile", "DataFile", "FilteredTile", "tile_nbytes", "read_tile", "write_tile", "tile_parts",
           "decode_tile"]

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


def tile_parts(tile) -> list:
    """The bytes of ``Tile.build(tile)`` as a list of pieces, for bulk writes of data tiles: one ``pack`` per
    chunk instead of construct's per-field building (the counterpart of :func:`read_tile`)."""
    parts = [struct.pack("<Q", len(tile["chunks"]))]
    for c in tile["chunks"]:
        parts += [struct.pack("<III", c["unfiltered_size"], len(c["data"]), len(c["metadata"])), c["metadata"],
                  c["data"]]
    return parts


def write_tile(tile) -> bytes:
    """The same bytes as ``Tile.build(tile)``, built as :func:`tile_parts`."""
    return b"".join(tile_parts(tile))


def decode_tile(tile, pipeline, *, datatype, version, cell_size, key=None, encrypted=False, var=False, out=None,
                threads=None):
    """A stored tile's unfiltered bytes (into ``out`` if given), and the offsets that string RLE and
    dictionary carry for var strings (REFERENCE §4.2; None otherwise): ``(data, offsets)``. ``threads``:
    for its chunks (default: the filters' setting)."""
    return FilterPlan(pipeline, datatype=datatype, version=version, cell_size=cell_size, key=key,
                encrypted=encrypted).decode(tile, var=var, out=out, threads=threads)


def _settings(context):
    p = context._params
    if p.get("pipeline") is None or p.get("datatype") is None:
        raise FormatError("a filtered tile needs pipeline= and datatype= to be parsed or built")
    datatype = Datatype(p.datatype)
    key = normalize_key(p.get("key"))
    return dict(datatype=datatype, version=p.get("version") or 0, key=key, encrypted=key is not None,
                cell_size=p.get("cell_size") or datatype.size), p.pipeline, bool(p.get("var"))


class _FilteredTile(Construct):
    def _parse(self, stream, context, path):
        tile = Tile.subcon._parsereport(stream, context, path)
        kw, pipeline, var = _settings(context)
        data, offsets = decode_tile(tile, pipeline, var=var, **kw)
        dtype = kw["datatype"].numpy_dtype
        if len(data) % dtype.itemsize:
            raise FormatError(f"the tile unfilters to {len(data)} bytes, not whole {kw['datatype'].name} values",
                              path=path)
        return Container(tile=tile, data=data, array=np.frombuffer(data, dtype), offsets=offsets)

    def _build(self, obj, stream, context, path):
        kw, pipeline, var = _settings(context)
        data = obj.get("data")
        if data is None:
            data = np.ascontiguousarray(obj["array"], kw["datatype"].numpy_dtype).tobytes()
        tile = obj.get("tile")
        unchanged = tile is not None and obj.get("data") is not None and (
            obj.get("array") is None or np.asarray(obj["array"]).tobytes() == data)
        if not unchanged:
            tile = filter_tile(data, pipeline, offsets=obj.get("offsets"), var=var, **kw)
        Tile.subcon._build(tile, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise FormatError("a filtered tile has no static size", path=path)


#: A data tile parsed through its filter pipeline (see the module doc).
FilteredTile = _FilteredTile()
