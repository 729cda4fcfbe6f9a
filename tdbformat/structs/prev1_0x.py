"""The 0.x dialect, TileDB 0.1 to 0.6.1 (prev1.md §2): a raw C-struct schema and a gzip book-keeping file.

Nothing in 0.x stores a version: parse with ``version=(0,)`` where a gate needs one (the book-keeping
shares the 1.x fragment metadata payload, :data:`~.prev1_1x.FragmentMetadataPayload`, whose 1.2 fields
are absent). All sizes are x86-64 C types: int 4, bool 1, char 1, size_t and off_t 8.

- :data:`ArraySchema0x`: ``__array_schema.tdb`` (``ArraySchema::serialize``), uncompressed, starting with the
  array's absolute path at creation;
- :data:`BookKeeping0x`: ``__book_keeping.tdb.gz``, a gzip member (``gzopen(..., "wb")``) around the payload;
  it parses to the payload and keeps the stored member, so parse then build is byte-exact;
- :data:`DataFile0x`: a data file cut at the book-keeping's tile offsets (no per-tile header).
"""

from __future__ import annotations

import io
import zlib

import construct

from construct import Const, Construct, Container, Int8sl, Int8ul, Int32sl, Int32ul, Int64sl, ListContainer, Rebuild, \
    this

from ..enums import Datatype
from ..errors import FormatError
from ..fields import Counted, Raw, Struct, Valid, remaining, text_field
from .prev1_1x import DialectSection, FragmentMetadataPayload, LegacyCompressorEnum, LegacyDatatypeEnum

__all__ = ["ArraySchema0x", "BookKeeping0x", "GzipMember", "DataFile0x", "VAR_NUM_0X", "VERSION_0X"]

#: ``cell_val_num`` of a var-sized attribute in 0.x (INT_MAX; 1.x uses UINT_MAX)
VAR_NUM_0X = 2**31 - 1
#: the "version" that governs 0.x structures: none is stored
VERSION_0X = (0,)

_Layout0x = Valid(Int8sl, lambda v, ctx: v in (0, 1), "an order is 0 (row-major) or 1 (column-major)")


class _Agrees(construct.Check):
    """A rule between fields read earlier (no bytes): the domain and tile extents hold D values of the
    coordinates type, which is stored after them."""

    def __init__(self):
        super().__init__(self._ok)

    @staticmethod
    def _ok(ctx) -> bool:
        size = Datatype(int(ctx.types[-1])).size
        return len(ctx.domain) == 2 * ctx.dim_num * size and len(ctx.tile_extents) in (0, ctx.dim_num * size)

    def _parse(self, stream, context, path):
        if not self._ok(context):
            raise FormatError(f"domain ({len(context.domain)} bytes) and tile extents ({len(context.tile_extents)}) "
                              f"must hold 2·{context.dim_num} and 0 or {context.dim_num} values of "
                              f"{context.types[-1].name}", path=path)


_Name = Struct(*text_field("name", Int32sl, "the name"))

ArraySchema0x = DialectSection("Array schema (0.x)", "prev1.md §2.1", Struct(
    *text_field("array_name", Int32sl, "absolute path of the array folder when it was created"),
    "dense" / Valid(Int8ul, lambda v, ctx: v in (0, 1), "dense is a bool") * "1 dense, 0 sparse",
    "tile_order" / _Layout0x * "0 row-major, 1 column-major",
    "cell_order" / _Layout0x * "0 row-major, 1 column-major",
    "capacity" / Valid(Int64sl, lambda v, ctx: v > 0, "the capacity is positive") * "cells per sparse data tile",
    "attribute_num" / Rebuild(Int32sl, lambda ctx: len(ctx.attributes)) * "N attributes",
    "attributes" / Counted(this.attribute_num, _Name, 4) * "attribute names",
    "dim_num" / Rebuild(Int32sl, lambda ctx: len(ctx.dimensions)) * "D dimensions",
    "dimensions" / Counted(this.dim_num, _Name, 4) * "dimension names",
    "domain_size" / Rebuild(Int32sl, lambda ctx: len(ctx.domain)) * "bytes of the domain: 2·D values",
    "domain" / Raw(this.domain_size, "domain") * "lo/hi per dimension in the coordinates type",
    "tile_extents_size" / Rebuild(Int32sl, lambda ctx: len(ctx.tile_extents))
    * "bytes of the tile extents: 0 (no space tiles) or D values",
    "tile_extents" / Raw(this.tile_extents_size, "tile extents") * "space tile extent per dimension",
    "types" / Counted(this.attribute_num + 1, LegacyDatatypeEnum) * "per attribute, then the coordinates type",
    "cell_val_num" / Counted(this.attribute_num, Int32sl, 4) * "values per cell; 2147483647 = var-sized",
    "compression" / Counted(this.attribute_num + 1, LegacyCompressorEnum)
    * "per attribute, then the coordinates compressor",
    _Agrees(),
))

class _UpToTrailer(Construct):
    spec_type = "deflate stream (RFC 1951)"
    spec_size = "the file - 18"

    def _parse(self, stream, context, path):
        n = remaining(stream) - 8
        if n < 0:
            raise FormatError(f"a gzip member ends with an 8-byte trailer, only {n + 8} bytes are left", path=path)
        return stream.read(n)

    def _build(self, obj, stream, context, path):
        stream.write(bytes(obj))
        return obj


#: The gzip member header as zlib's ``gzopen(path, "wb")`` writes it (RFC 1952; no name, no comment).
GzipMember = Struct(
    "magic" / Const(b"\x1f\x8b") * "gzip magic",
    "method" / Const(8, Int8ul) * "8 = deflate",
    "flags" / Const(0, Int8ul) * "no extra fields, name or comment (zlib writes none)",
    "mtime" / Int32ul * "modification time (0 from zlib)",
    "xfl" / Int8ul * "compression hint",
    "os" / Int8ul * "operating system (3 = Unix)",
    "deflated" / _UpToTrailer() * "the raw deflate stream: every byte up to the 8-byte trailer",
    "crc32" / Int32ul * "CRC-32 of the payload",
    "isize" / Int32ul * "payload bytes modulo 2**32",
)


class _Gzipped(Construct):
    """``payload`` inside a gzip member (:data:`GzipMember`): parses to the payload, keeping the member
    under ``_gzip``; building reuses it while the payload is unchanged, else deflates at zlib's default
    level as ``gzopen`` does."""

    container_name = "gzip member (GzipMember)"

    def __init__(self, payload):
        super().__init__()
        self.payload = payload
        self.flagbuildnone = False

    def _parse(self, stream, context, path):
        member = GzipMember._parsereport(stream, context, path + " -> gzip")
        d = zlib.decompressobj(-zlib.MAX_WBITS)
        try:  # a payload is a few bytes per tile: its size is bounded by the file, 1032:1 at most
            data = d.decompress(member.deflated, 1032 * len(member.deflated) + 64)
        except zlib.error as e:
            raise FormatError(f"the gzip stream is corrupt: {e}", path=path) from None
        if not d.eof or d.unused_data:
            raise FormatError("the deflate stream does not end where the gzip trailer starts", path=path)
        if zlib.crc32(data) != member.crc32 or len(data) % 2**32 != member.isize:
            raise FormatError(f"gzip trailer: CRC-32 {member.crc32:#x} and size {member.isize} do not match the "
                              f"payload ({zlib.crc32(data):#x}, {len(data)})", path=path)
        sub = construct.BytesIOWithOffsets(data, None, 0)
        obj = self.payload._parsereport(sub, context, path)
        if remaining(sub):
            raise FormatError(f"{remaining(sub)} bytes left over after the payload", offset=sub.tell(),
                              within="the gunzipped book-keeping")
        obj["_gzip"], obj["_unfiltered"] = member, data
        return obj

    def _build(self, obj, stream, context, path):
        sub = io.BytesIO()
        self.payload._build(obj, sub, context, path)
        data = sub.getvalue()
        member = obj.get("_gzip")
        if member is None or obj.get("_unfiltered") != data:
            c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -zlib.MAX_WBITS)
            member = Container(mtime=0, xfl=0, os=3, deflated=c.compress(data) + c.flush(),
                               crc32=zlib.crc32(data), isize=len(data) % 2**32)
        GzipMember._build(member, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise FormatError("a gzip file has no static size", path=path)


#: ``__book_keeping.tdb.gz``: parse with ``schema=`` (the parsed :data:`ArraySchema0x`) and ``version=(0,)``
BookKeeping0x = DialectSection("Book-keeping (0.x)", "prev1.md §2.2", _Gzipped(FragmentMetadataPayload))


class _Spans(Construct):
    """A data file cut at ``tile_offsets`` (or, uncompressed, at multiples of ``tile_bytes``)."""

    spec_type = "compressed tiles back to back from tile_offsets (no header), or uncompressed tiles of tile_bytes"
    spec_size = "the file"

    def _parse(self, stream, context, path):
        data = stream.read()
        offsets = [int(o) for o in context._params.get("tile_offsets", ())]
        step = context._params.get("tile_bytes")
        if not offsets:
            offsets = (list(range(0, len(data), step)) if step else []) or [0]
        if offsets[0] != 0 or any(b < a for a, b in zip(offsets, offsets[1:])) or offsets[-1] > len(data):
            raise FormatError(f"tile offsets {offsets[:4]} do not cut a file of {len(data)} bytes", path=path)
        return ListContainer(data[a:b] for a, b in zip(offsets, offsets[1:] + [len(data)]))

    def _build(self, obj, stream, context, path):
        for span in obj:
            stream.write(bytes(span))
        return obj


#: A 0.x data file (``a1.tdb``, ``a2_var.tdb``, ``__coords.tdb``): compressed tiles back to back with no header
#: (``tile_offsets=`` from the book-keeping), or uncompressed tiles of ``tile_bytes=``.
DataFile0x = DialectSection("Data file (0.x)", "prev1.md §2.3", _Spans())
