"""The 1.x dialect, TileDB 1.0 to 1.3 (prev1.md §3): generic tiles with a 30-byte header, the array schema
(``__array_metadata.tdb`` in 1.0/1.1, ``__array_schema.tdb`` in 1.2/1.3), fragment metadata and chunked data
tiles.

The governing "version" is the library version ``int32[3]`` the schema and (from 1.2) the fragment metadata
store; fields that 1.0/1.1 lack are gated ``since_library((1, 2), ...)``. 1.0/1.1 fragment metadata stores no
version: parse it with ``version=`` the schema's. The fragment metadata layout is also the 0.x book-keeping's
(``version=(0,)``; :mod:`.prev1_0x`).

- :data:`GenericTile1x` is the raw layer (header and chunks as stored); :func:`legacy_generic_tile` the typed
  layer, which parses to the payload and keeps the stored tile, so parse then build is byte-exact.
- :data:`ChunkedTile1x` is a compressed data tile (§3.4); :data:`DataFile1x` a data file split into tiles
  with ``tile_offsets=`` and ``compressor=`` (uncompressed data files hold raw tiles).
"""

from __future__ import annotations

import io

import numpy as np
from construct import BytesIOWithOffsets, Construct, Container, Int8ul, Int32sl, Int32ul, Int64ul, \
    ListContainer, Rebuild, this

from ..enums import ArrayTypeEnum, Datatype, LegacyCompressor, LegacyDatatype, LegacyLayout
from ..errors import FormatError, UnsupportedError
from ..fields import Counted, Raw, Section, StrictEnum, Struct, Valid, remaining, rule, text_field
from ..filters.prev1 import BLOSC_INNER, decompress
from ..numpy_array import CountedNumpy, NumpyArray
from ..versions import LibraryVersion, dialect_label, since_library
from .generic_tile import parse_payload

__all__ = ["GenericTile1x", "ChunkedTile1x", "legacy_generic_tile", "ArraySchema1x", "ArrayMetadata1x",
           "FragmentMetadata1x", "FragmentMetadataPayload", "DataFile1x", "LegacyDatatypeEnum",
           "LegacyCompressorEnum", "LegacyLayoutEnum", "legacy_schema_info", "decode_chunks", "VAR_NUM_1X",
           "HEADER_SIZE_1X", "legacy_field_layout", "legacy_tile_cells", "legacy_domain", "legacy_extents"]


class DialectSection(Section):
    """A top-level structure of a pre-v1 dialect: it exists in no format version (1 and later), only at the
    library versions of its dialect (``(0,)`` for 0.x, ``(1, minor, patch)`` for 1.x)."""

    def __init__(self, title: str, page: str, subcon, whole: bool = True):
        super().__init__(title, page, subcon, whole=whole)
        self.dialect = "0.x" if "(0.x)" in title else "1.x"  # the title names it

    def exists(self, version) -> bool:
        return isinstance(version, tuple) and (dialect_label(version) == "0.x") == (self.dialect == "0.x")


LegacyDatatypeEnum = StrictEnum(Int8ul, LegacyDatatype)
LegacyCompressorEnum = StrictEnum(Int8ul, LegacyCompressor)
LegacyLayoutEnum = StrictEnum(Int8ul, LegacyLayout)
#: ``cell_val_num`` of a var-sized attribute in 1.x (UINT_MAX; 0.x uses INT_MAX)
VAR_NUM_1X = 2**32 - 1
#: bytes of the 1.x generic tile header
HEADER_SIZE_1X = 30

Chunk1x = Struct(
    "uncompressed_size" / Int64ul * "bytes of the chunk once decompressed",
    "compressed_size" / Rebuild(Int64ul, lambda ctx: len(ctx.data)) * "bytes of the compressed chunk",
    "data" / Raw(this.compressed_size, "compressed chunk") * "the chunk, compressed on its own",
)

#: A compressed 1.x tile (tile_io.cc ``compress_tile``): chunks of at most INT_MAX (1.0-1.2) or 64 KiB (1.3)
#: bytes, in order.
ChunkedTile1x = DialectSection("Compressed tile (1.x)", "prev1.md §3.4", Struct(
    "chunk_num" / Rebuild(Int64ul, lambda ctx: len(ctx.chunks)) * "number of chunks",
    "chunks" / Counted(this.chunk_num, Chunk1x, min_size=16) * "the chunks",
), whole=False)


@rule("8 + the chunks' 16-byte headers and data if compressed, else the raw body's length")
def _body_size(ctx) -> int:
    body = ctx.body
    if isinstance(body, (bytes, bytearray, memoryview)):
        return len(body)
    return 8 + sum(16 + len(c.data) for c in body.chunks)


class _Body(Construct):
    """A generic tile body: raw when the compressor is NO_COMPRESSION, else chunked, inside persisted_size."""

    spec_type = "raw payload if compressor == NO_COMPRESSION, else Compressed tile (1.x)"
    spec_size = "persisted_size"

    def _parse(self, stream, context, path):
        n = context.persisted_size
        if n > remaining(stream):
            raise FormatError(f"the header says the tile is {n} bytes, only {remaining(stream)} are left", path=path)
        data = stream.read(n)
        if context.compressor == LegacyCompressor.NO_COMPRESSION:
            return data
        sub = BytesIOWithOffsets(data, None, 0)
        obj = ChunkedTile1x.subcon._parsereport(sub, context, path)
        if remaining(sub):
            raise FormatError(f"{remaining(sub)} bytes after the last chunk of the tile", path=path)
        return obj

    def _build(self, obj, stream, context, path):
        if isinstance(obj, (bytes, bytearray, memoryview)):
            stream.write(bytes(obj))
        else:
            ChunkedTile1x.subcon._build(obj, stream, context, path)
        return obj


GenericTile1x = DialectSection("Generic tile (1.x)", "prev1.md §3.1", Struct(
    "persisted_size" / Rebuild(Int64ul, _body_size) * "bytes after this 30-byte header",
    "tile_size" / Int64ul * "bytes of the uncompressed payload",
    "datatype" / LegacyDatatypeEnum * "datatype of the payload (CHAR)",
    "cell_size" / Int64ul * "bytes per cell (1)",
    "compressor" / LegacyCompressorEnum * "BLOSC_ZSTD in 1.0-1.2, GZIP in 1.3",
    "compression_level" / Int32sl * "-1 in 1.0-1.2, 1 in 1.3",
    "body" / _Body() * "the payload: raw if uncompressed, else a compressed tile (§3.4)",
))


def decode_chunks(tile, compressor, datatype, value_size: int) -> bytes:
    """The uncompressed bytes of a parsed :data:`ChunkedTile1x`."""
    return b"".join(decompress(compressor, c.data, c.uncompressed_size, datatype, value_size) for c in tile.chunks)


class _LegacyGenericTileOf(Construct):
    """A 1.x generic tile whose uncompressed payload is ``payload``: parses to the payload, keeping the stored
    tile under ``_generic_tile``; building reuses it while the payload is unchanged."""

    def __init__(self, payload):
        super().__init__()
        self.payload = payload
        self.flagbuildnone = False

    def _parse(self, stream, context, path):
        start = stream.tell()
        gt = GenericTile1x.subcon._parsereport(stream, context, path)
        if gt.compressor == LegacyCompressor.NO_COMPRESSION:
            data = bytes(gt.body)
        else:
            data = decode_chunks(gt.body, gt.compressor, gt.datatype.datatype, gt.datatype.datatype.size)
        if len(data) != gt.tile_size:
            raise FormatError(f"the tile decompresses to {len(data)} bytes but its header says {gt.tile_size}",
                              path=path, offset=start)
        obj = parse_payload(self.payload, data, context, path, start, "uncompressed")
        obj["_generic_tile"] = gt
        obj["_unfiltered"] = data
        return obj

    def _build(self, obj, stream, context, path):
        sub = io.BytesIO()
        self.payload._build(obj, sub, context, path)
        data = sub.getvalue()
        gt = obj.get("_generic_tile")
        if gt is None or obj.get("_unfiltered") != data:
            gt = _fresh(gt, data)
        GenericTile1x.subcon._build(gt, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise FormatError("a generic tile has no static size", path=path)


def _fresh(old, data: bytes) -> Container:
    """A new 1.x generic tile for ``data``: the old tile's compressor, or GZIP level 1 as 1.3 writes them."""
    from ..filters.prev1 import _PLAIN
    from ..filters.pipeline import FilterContext
    compressor = old.compressor if old is not None else LegacyCompressor.GZIP
    level = old.compression_level if old is not None else 1
    if compressor in BLOSC_INNER:
        raise UnsupportedError("tdbformat reads blosc but does not write it: a changed payload cannot be "
                               "recompressed with the tile's BLOSC compressor")
    if compressor == LegacyCompressor.NO_COMPRESSION:
        body = data
    else:
        ctx = FilterContext(options={"level": level}, datatype=Datatype.CHAR, cell_size=1)
        packed = _PLAIN[compressor].compress(ctx, data)
        body = Container(chunks=ListContainer([Container(uncompressed_size=len(data), data=packed)]))
    return Container(tile_size=len(data), datatype=LegacyDatatype.CHAR, cell_size=1, compressor=compressor,
                     compression_level=level, body=body)


def legacy_generic_tile(payload) -> Construct:
    """A 1.x generic tile whose uncompressed bytes are ``payload``; wrap it in a Section for a file."""
    return _LegacyGenericTileOf(payload)


def _is_flag(value, ctx) -> bool:
    return value in (0, 1)


@rule("the size of one value of the domain type")
def _type_size(ctx) -> int:
    return Datatype(int(ctx._.domain_type)).size


@rule("2 × the domain type's size")
def _domain_bytes(ctx) -> int:
    return 2 * _type_size(ctx)


@rule("0 if null_tile_extent, else the domain type's size")
def _extent_bytes(ctx) -> int:
    return 0 if ctx.get("null_tile_extent") else _type_size(ctx)


Dimension1x = Struct(
    *text_field("name", Int32ul, "dimension name"),
    "domain" / Raw(_domain_bytes, "domain") * "lower and upper bound, in the domain type",
    "null_tile_extent" / since_library((1, 2), Valid(Int8ul, _is_flag, "a flag is 0 or 1"))
    * "1 = no tile extent follows (1.0/1.1 always write one)",
    "tile_extent" / Raw(_extent_bytes, "tile extent") * "space tile extent in the domain type (absent if null)",
)

Attribute1x = Struct(
    *text_field("name", Int32ul, "attribute name"),
    "type" / LegacyDatatypeEnum * "datatype of the values",
    "compressor" / LegacyCompressorEnum * "compressor of the attribute's tiles",
    "compression_level" / Int32sl * "its level (-1: the codec's default)",
    "cell_val_num" / Int32ul * "values per cell; 4294967295 = var-sized",
)

_Schema1xPayload = Struct(
    "version" / LibraryVersion * "library version that wrote the schema (1.1 still writes 1,0,0)",
    "array_type" / ArrayTypeEnum * "0 dense, 1 sparse",
    "tile_order" / LegacyLayoutEnum * "order of the space tiles",
    "cell_order" / LegacyLayoutEnum * "order of the cells in a tile",
    "capacity" / Int64ul * "cells per sparse data tile",
    "coords_compressor" / LegacyCompressorEnum * "compressor of the coordinate tiles",
    "coords_compression_level" / Int32sl * "its level",
    "offsets_compressor" / LegacyCompressorEnum * "compressor of every var attribute's offsets tiles",
    "offsets_compression_level" / Int32sl * "its level",
    "domain_type" / LegacyDatatypeEnum * "datatype of every dimension",
    "dim_num" / Rebuild(Int32ul, lambda ctx: len(ctx.dimensions)) * "number of dimensions",
    "dimensions" / Counted(this.dim_num, Dimension1x, 4) * "the dimensions",
    "attribute_num" / Rebuild(Int32ul, lambda ctx: len(ctx.attributes)) * "number of attributes",
    "attributes" / Counted(this.attribute_num, Attribute1x, 14) * "the attributes",
)

#: ``__array_schema.tdb`` of 1.2/1.3 (``tiledb/sm/array_schema/*.cc``)
ArraySchema1x = DialectSection("Array schema (1.x)", "prev1.md §3.2", legacy_generic_tile(_Schema1xPayload))
#: ``__array_metadata.tdb`` of 1.0/1.1: the same structure under the older name
ArrayMetadata1x = ArraySchema1x


def legacy_schema_info(schema) -> tuple[np.dtype, int, int]:
    """(coordinates dtype, dimension count, attribute count) of a parsed 0.x or 1.x schema."""
    if "domain_type" in schema:
        return Datatype(int(schema.domain_type)).numpy_dtype, len(schema.dimensions), len(schema.attributes)
    return Datatype(int(schema.types[-1])).numpy_dtype, len(schema.dimensions), len(schema.attributes)


def _info(ctx):
    schema = ctx._params.get("schema")
    if schema is None:
        raise FormatError("fragment metadata of the pre-v1 dialects needs its array's schema (schema=)")
    return legacy_schema_info(schema)


@rule("the coordinates type of the schema")
def _coords_dtype(ctx):
    return _info(ctx)[0]


@rule("N + 1: one list per attribute, then the coordinates")
def _fields_and_coords(ctx) -> int:
    return _info(ctx)[2] + 1


@rule("N: one list per attribute")
def _fields(ctx) -> int:
    return _info(ctx)[2]


@rule("num × 2 × dim_num")
def _box_values(ctx) -> int:
    return ctx.num * 2 * _info(ctx)[1]


def _boxes(doc: str):
    """``n`` then ``n`` boxes of 2 × dim_num coordinates (MBRs, first/last coordinates of each tile)."""
    return Struct(
        "num" / Rebuild(Int64ul, lambda ctx: len(ctx.data) // (2 * _info(ctx)[1])) * "number of boxes",
        "data" / NumpyArray(_box_values, _coords_dtype) * doc,
    )


#: The fragment metadata payload of 1.x (fragment_metadata.cc ``serialize``) and the 0.x book-keeping
#: (book_keeping.cc ``finalize``, ``version=(0,)``); ``schema=`` the parsed schema.
FragmentMetadataPayload = Struct(
    "version" / since_library((1, 2), LibraryVersion) * "library version (1.2+)",
    "non_empty_domain_size" / Rebuild(Int64ul, lambda ctx: len(ctx.non_empty_domain)) * "0 or 2·dim_num values",
    "non_empty_domain" / Raw(this.non_empty_domain_size, "non-empty domain")
    * "lo/hi pairs in the coordinates type (the write's subarray)",
    "mbrs" / _boxes("lo/hi per dimension of each sparse tile") * "MBRs (sparse only)",
    "bounding_coords" / _boxes("first and last coordinates of each tile") * "bounding coordinates",
    "tile_offsets" / Counted(_fields_and_coords, CountedNumpy("<u8", doc="file offset of each tile"), 8)
    * "per attribute, then coordinates: where each tile starts in its file (0.x: compressed fields only)",
    "tile_var_offsets" / Counted(_fields, CountedNumpy("<u8", doc="file offset of each var tile"), 8)
    * "per attribute: where each var tile starts in <attr>_var.tdb",
    "tile_var_sizes" / Counted(_fields, CountedNumpy("<u8", doc="uncompressed bytes of each var tile"), 8)
    * "per attribute: uncompressed bytes of each var tile",
    "last_tile_cell_num" / Int64ul * "cells in the last tile",
    "file_sizes" / since_library((1, 2), NumpyArray(_fields_and_coords, "<u8")) * "bytes of each data file (1.2+)",
    "file_var_sizes" / since_library((1, 2), NumpyArray(_fields, "<u8")) * "bytes of each var data file (1.2+)",
)

#: ``__fragment_metadata.tdb`` of 1.x: parse with ``schema=`` (and ``version=`` the schema's for 1.0/1.1)
FragmentMetadata1x = DialectSection("Fragment metadata (1.x)", "prev1.md §3.3", legacy_generic_tile(FragmentMetadataPayload))


class _Tiles(Construct):
    """A data file cut at ``tile_offsets``: chunked tiles when ``compressor`` is set, else raw spans."""

    spec_type = "tiles back to back from tile_offsets: Compressed tile (1.x) (one per dimension for coordinates), or raw"
    spec_size = "the file"

    def _parse(self, stream, context, path):
        data = stream.read()
        offsets = [int(o) for o in context._params.get("tile_offsets", [0])] or [0]
        if offsets[0] != 0 or any(b < a for a, b in zip(offsets, offsets[1:])) or offsets[-1] > len(data):
            raise FormatError(f"tile offsets {offsets[:4]}... do not cut a file of {len(data)} bytes", path=path)
        spans = [data[a:b] for a, b in zip(offsets, offsets[1:] + [len(data)])]
        if not context._params.get("compressor"):
            return ListContainer(spans)
        out = ListContainer()
        for span in spans:  # a coordinate tile holds one sub-tile per dimension, the others one
            sub, tile = BytesIOWithOffsets(span, None, 0), ListContainer()
            while remaining(sub) or not tile:
                tile.append(ChunkedTile1x.subcon._parsereport(sub, context, path))
            out.append(tile)
        return out

    def _build(self, obj, stream, context, path):
        for tile in obj:
            if isinstance(tile, (bytes, bytearray, memoryview)):
                stream.write(bytes(tile))
            else:
                for sub in tile:
                    ChunkedTile1x.subcon._build(sub, stream, context, path)
        return obj


#: A 1.x data file (``a1.tdb``, ``a2_var.tdb``, ``__coords.tdb``): tiles back to back; parse with
#: ``tile_offsets=`` from the fragment metadata and ``compressor=``; a compressed tile is a list of chunked
#: sub-tiles (one per dimension for coordinates, else one).
DataFile1x = DialectSection("Data file (1.x)", "prev1.md §3.4", _Tiles())


def legacy_field_layout(schema, fm, index: int, var: bool) -> dict:
    """How a data file of field ``index`` (N = coordinates; ``var``: its ``_var`` file) is cut into tiles:
    ``{"tile_offsets", "compressor"}`` (1.x), or for 0.x ``{"tile_offsets"}`` when compressed and
    ``{"tile_bytes"}`` when not (0.x records no offsets for uncompressed fields)."""
    offsets = (fm.tile_var_offsets if var else fm.tile_offsets)[index].data
    if "domain_type" in schema:  # 1.x
        attrs = schema.attributes
        if index == len(attrs):
            compressor = schema.coords_compressor
        elif attrs[index].cell_val_num == VAR_NUM_1X and not var:
            compressor = schema.offsets_compressor
        else:
            compressor = attrs[index].compressor
        return {"tile_offsets": offsets, "compressor": int(compressor)}
    compressor = schema.compression[index]
    if compressor:
        return {"tile_offsets": offsets}
    if var:
        return {}
    dtype, dim_num, _ = legacy_schema_info(schema)
    if index == len(schema.attributes):
        cell = dim_num * dtype.itemsize
    elif schema.cell_val_num[index] == 2**31 - 1:
        cell = 8
    else:
        cell = schema.cell_val_num[index] * Datatype(int(schema.types[index])).size
    return {"tile_bytes": cell * legacy_tile_cells(schema)}


def legacy_tile_cells(schema) -> int:
    """Cells of a full data tile: the capacity for sparse arrays, the space tile's cells for dense ones."""
    dense = schema.array_type == 0 if "domain_type" in schema else schema.dense
    if not dense:
        return int(schema.capacity)
    n = 1
    for extent in legacy_extents(schema):
        n *= int(extent)
    return n


def legacy_domain(schema) -> np.ndarray:
    """``(dim_num, 2)`` lo/hi of each dimension, in the coordinates type."""
    dtype, dim_num, _ = legacy_schema_info(schema)
    raw = schema.domain if "domain" in schema else b"".join(d.domain for d in schema.dimensions)
    return np.frombuffer(raw, dtype).reshape(dim_num, 2)


def legacy_extents(schema) -> np.ndarray | None:
    """The space tile extent of each dimension, or None when the array has none."""
    dtype, dim_num, _ = legacy_schema_info(schema)
    raw = schema.tile_extents if "tile_extents" in schema else b"".join(d.tile_extent for d in schema.dimensions)
    return np.frombuffer(raw, dtype) if len(raw) == dim_num * dtype.itemsize else None
