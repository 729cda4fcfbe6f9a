"""The filter pipeline: a tile's chunks to cell bytes and back (filter_pipeline.md; REFERENCE.md §4, §7).

Each filter is a codec (see :class:`Codec`) registered in :data:`CODECS` by filter type. A chunk is
filtered by running the codecs forward, each turning ``(metadata parts, data parts)`` into new parts;
the stored chunk holds the concatenation of the last stage's parts. Reading runs them in reverse: each
codec reads its own header from the front of the metadata and hands the rest to the codec before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from construct import Container, ListContainer

from ..enums import Datatype, FilterType
from ..errors import EncryptionError, FormatError, UnsupportedError

__all__ = ["Codec", "FilterContext", "CODECS", "register", "unfilter", "filter_tile", "chunk_sizes"]


@dataclass(frozen=True)
class FilterContext:
    """What a codec needs besides its input: the filter's options and the tile it belongs to."""

    #: the filter's parsed options (a Container of the filter type's options layout)
    options: object = None
    #: datatype of this filter's input (the tile's datatype, transformed by earlier filters)
    datatype: Datatype = Datatype.CHAR
    #: format version governing the tile's data (0 for generic tiles)
    version: int = 0
    #: bytes of one cell of the tile
    cell_size: int = 1
    #: AES-256-GCM key (32 bytes) for the encryption filter
    key: bytes | None = None
    #: the tile's var-size offsets, for the string forms of RLE and dictionary
    offsets: object = None
    extra: dict = field(default_factory=dict)


class Codec:
    """One filter type. ``forward`` is TileDB's write direction, ``reverse`` its read direction."""

    #: the construct Struct of this filter's per-chunk metadata header (for inspection and docs)
    metadata = None

    def output_datatype(self, ctx: FilterContext) -> Datatype:
        """Datatype handed to the next filter."""
        return ctx.datatype

    def forward(self, ctx: FilterContext, metadata: list[bytes], data: list[bytes]) -> tuple[list[bytes], list[bytes]]:
        raise NotImplementedError

    def reverse(self, ctx: FilterContext, metadata: memoryview, data: memoryview) -> tuple[memoryview, bytes]:
        """Undo this filter: read its header from the front of ``metadata``; return (rest, data)."""
        raise NotImplementedError


#: filter type -> codec
CODECS: dict[FilterType, Codec] = {}


def register(*types: FilterType):
    def deco(cls):
        for t in types:
            CODECS[t] = cls()
        return cls
    return deco


def _codec(filter_type) -> Codec:
    try:
        return CODECS[FilterType(filter_type)]
    except KeyError:
        raise UnsupportedError(f"filter {FilterType(filter_type).name} is not supported") from None


def _contexts(pipeline, datatype, version, cell_size, key, offsets):
    """One FilterContext per filter, with each filter's input datatype."""
    out = []
    dt = Datatype(datatype)
    for f in pipeline["filters"]:
        ctx = FilterContext(options=f["options"], datatype=dt, version=version, cell_size=cell_size, key=key,
                            offsets=offsets)
        out.append((_codec(f["type"]), ctx))
        dt = out[-1][0].output_datatype(ctx)
    return out


def _with_encryption(pipeline, key):
    """Data tiles of encrypted arrays carry an AES filter that the schema does not list."""
    if key is None:
        return pipeline
    return Container(max_chunk_size=pipeline["max_chunk_size"],
                     filters=list(pipeline["filters"]) + [Container(type=FilterType.AES_256_GCM, options=Container())])


def unfilter(tile, pipeline, *, datatype=Datatype.CHAR, version=0, cell_size=1, key=None, offsets=None,
             encrypted=False) -> bytes:
    """The unfiltered bytes of ``tile`` (a parsed Tile) filtered with ``pipeline``.

    ``encrypted=True`` adds the implicit AES-256-GCM stage of data tiles in encrypted arrays.
    """
    if encrypted:
        if key is None:
            raise EncryptionError("the array is encrypted: pass key=")
        pipeline = _with_encryption(pipeline, key)
    stages = _contexts(pipeline, datatype, version, cell_size, key, offsets)
    out = []
    for i, chunk in enumerate(tile["chunks"]):
        md, data = memoryview(chunk["metadata"]), memoryview(chunk["data"])
        for codec, ctx in reversed(stages):
            md, data = codec.reverse(ctx, md, data)
        if len(md):
            raise FormatError(f"chunk {i}: {len(md)} bytes of filter metadata left over after the pipeline")
        if len(data) != chunk["unfiltered_size"]:
            raise FormatError(f"chunk {i}: unfiltered to {len(data)} bytes but the chunk says "
                              f"{chunk['unfiltered_size']}")
        out.append(bytes(data))
    return b"".join(out)


def chunk_sizes(nbytes: int, cell_size: int, max_chunk_size: int) -> list[int]:
    """Chunk sizes of a fixed-size tile (tile.cc): whole cells, at most 64 KiB, the remainder last."""
    if nbytes == 0:
        return []
    if max_chunk_size == 0:
        return [nbytes]
    chunk = max(cell_size, (min(65536, nbytes) // cell_size) * cell_size)
    sizes = [chunk] * (nbytes // chunk)
    if nbytes % chunk:
        sizes.append(nbytes % chunk)
    return sizes


def filter_tile(data: bytes, pipeline, *, datatype=Datatype.CHAR, version=0, cell_size=1, key=None,
                offsets=None, encrypted=False, sizes=None) -> Container:
    """A Tile (``num_chunks``, ``chunks``) holding ``data`` filtered with ``pipeline``.

    ``sizes`` overrides the chunking (var-size tiles are chunked by their cells, see filters issue).
    """
    if encrypted:
        pipeline = _with_encryption(pipeline, key)
    stages = _contexts(pipeline, datatype, version, cell_size, key, offsets)
    if sizes is None:
        sizes = chunk_sizes(len(data), cell_size, pipeline["max_chunk_size"])
    chunks = ListContainer()
    pos = 0
    for size in sizes:
        md, parts = [], [bytes(data[pos:pos + size])]
        pos += size
        for codec, ctx in stages:
            md, parts = codec.forward(ctx, md, parts)
        chunks.append(Container(unfiltered_size=size, metadata=b"".join(md), data=b"".join(parts)))
    return Container(num_chunks=len(chunks), chunks=chunks)
