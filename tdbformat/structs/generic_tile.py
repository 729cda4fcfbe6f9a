"""Generic tiles: a 34-byte header, its filter pipeline, then one filtered tile (generic_tile.md; REFERENCE.md §5).

Every TileDB file but data files and the plain-text commit files is made of generic tiles.

- :data:`GenericTileHeader` is the header alone (it ignores what follows it).
- :data:`GenericTile` is the raw layer: header and chunks as stored.
- :func:`generic_tile` makes the typed layer: a structure whose bytes are the unfiltered payload of a
  generic tile. It parses to the payload, with the tile as stored kept under the hidden key
  ``_generic_tile``; building reuses those chunks when the payload is unchanged (so parse then build
  is byte-exact even for AES with its random IVs) and runs the pipeline forward otherwise.
"""

from __future__ import annotations

import functools
import struct

from construct import BytesIOWithOffsets, ConstructError, Construct, Container, Int32ul, Int64ul, ListContainer, Rebuild, this

from ..enums import Datatype, DatatypeEnum, EncryptionEnum, EncryptionType, FilterType
from ..errors import FormatError
from ..fields import Bounded, Section, Struct, built_size, remaining
from ..filters import FilterPlan, unfilter
from ..filters.pipeline import MAX_CHUNK
from ..filters.encryption import normalize_key
from ..versions import LATEST, AnyFormatVersion
from .filter_pipeline import DEFAULT_MAX_CHUNK_SIZE, FilterPipeline
from .tile import Tile, read_tile, tile_nbytes, write_tile

__all__ = ["GenericTileHeader", "GenericTile", "generic_tile", "parse_payload", "GENERIC_TILE_BASE_SIZE",
           "read_generic_tile"]

#: Bytes of the header before its filter pipeline.
GENERIC_TILE_BASE_SIZE = 34


def _header(persisted_size, tile_size):
    return (
        "version" / AnyFormatVersion * "format version of the library that wrote the tile",
        "persisted_size" / persisted_size * "bytes of the filtered tile that follows the header",
        "tile_size" / tile_size * "bytes of the unfiltered tile",
        "datatype" / DatatypeEnum * "datatype of the tile's cells (CHAR as TileDB writes them)",
        "cell_size" / Int64ul * "bytes per cell (1 as TileDB writes them)",
        "encryption_type" / EncryptionEnum * "encryption of the tile",
        "filter_pipeline_size" / Rebuild(Int32ul, built_size("filter_pipeline", FilterPipeline))
        * "bytes of the serialized pipeline that follows",
        "filter_pipeline" / Bounded(this.filter_pipeline_size, FilterPipeline, "filter pipeline")
        * "pipeline the tile was filtered with (GZIP, then AES-256-GCM if encrypted)",
    )


GenericTileHeader = Section("Generic tile header", "generic_tile.md", Struct(*_header(Int64ul, Int64ul)),
                            whole=False)

GenericTile = Section("Generic tile", "generic_tile.md", Struct(
    *_header(Rebuild(Int64ul, lambda ctx: tile_nbytes(ctx.tile)),
             Rebuild(Int64ul, lambda ctx: sum(c["unfiltered_size"] for c in ctx.tile["chunks"]))),
    "tile" / Bounded(this.persisted_size, Tile, "generic tile body") * "the filtered tile",
))

# The raw layer without the Section boundary, for use inside other structures.
_RawGenericTile = GenericTile.subcon


@functools.lru_cache(maxsize=2)
def _default_pipeline(encrypted: bool) -> tuple:
    """TileDB's pipeline of new generic tiles, and its bytes (built once; a fresh tile never hands it out)."""
    filters = [Container(type=FilterType.GZIP, options=Container(compressor=1, level=1))]
    if encrypted:
        filters.append(Container(type=FilterType.AES_256_GCM, options=Container()))
    pipeline = Container(max_chunk_size=DEFAULT_MAX_CHUNK_SIZE, num_filters=len(filters),
                         filters=ListContainer(filters))
    return pipeline, FilterPipeline.build(pipeline)


@functools.cache
def _default_plan() -> FilterPlan:
    """The filter plan of new unencrypted generic tiles, made once (a fragment's metadata has 36 of them)."""
    return FilterPlan(_default_pipeline(False)[0], datatype=Datatype.CHAR, cell_size=1)


class _GenericTileOf(Construct):
    """A generic tile whose unfiltered payload is ``payload`` (see the module doc)."""

    def __init__(self, payload):
        super().__init__()
        self.payload = payload
        self.flagbuildnone = False

    def _parse(self, stream, context, path):
        start = stream.tell()
        gt = _RawGenericTile._parsereport(stream, context, path)
        key = normalize_key(context._params.get("key"))
        data = _unfiltered(FilterPlan(gt.filter_pipeline, datatype=gt.datatype, cell_size=gt.cell_size, key=key),
                           gt.tile, gt.tile_size, start, path)
        obj = parse_payload(self.payload, data, context, path, start)
        obj["_generic_tile"] = gt
        obj["_unfiltered"] = data
        return obj

    def _build(self, obj, stream, context, path):
        sub = BytesIOWithOffsets(b"", None, 0)
        try:
            self.payload._build(obj, sub, context, path)
        except (ConstructError, FormatError) as e:
            _within(e, stream.tell())
            raise
        data = sub.getvalue()
        gt = obj.get("_generic_tile") if isinstance(obj, dict) else None
        if gt is None or obj.get("_unfiltered") != data:
            stream.write(self._fresh(gt, data, context))
        else:
            _RawGenericTile._build(gt, stream, context, path)
        return obj

    def _fresh(self, old, data, context) -> bytes:
        """A new tile for ``data``, as bytes: the old header's settings if there is one, TileDB's defaults
        otherwise. The header is packed, not built (construct took 110 of a section's 150 µs, and a
        fragment's metadata has a few sections per field)."""
        key = normalize_key(context._params.get("key"))
        if old is not None:
            version, encryption = old.version, old.encryption_type
            pipeline, head = old.filter_pipeline, FilterPipeline.build(old.filter_pipeline)
        else:
            version = context._params.get("version") or LATEST
            encryption = EncryptionType.AES_256_GCM if key is not None else EncryptionType.NO_ENCRYPTION
            pipeline, head = _default_pipeline(key is not None)
        # chunked by the writer's bound like data tiles (TileDB's max_tile_chunk_size; 192 in some wheels)
        max_chunk = context._params.get("max_chunk") or MAX_CHUNK
        if old is None and key is None:
            return _default_tile(bytes(data), version, max_chunk) if len(data) <= _SMALL else \
                _packed(_default_plan(), data, version, max_chunk, encryption, head)
        return _packed(FilterPlan(pipeline, datatype=Datatype.CHAR, cell_size=1, key=key), data, version, max_chunk,
                       encryption, head)

    def _sizeof(self, context, path):
        raise FormatError("a generic tile has no static size", path=path)


def _packed(plan: FilterPlan, data, version, max_chunk: int, encryption, head: bytes) -> bytes:
    """The generic tile of ``data`` filtered with ``plan``: its header, its pipeline's bytes ``head``, the tile."""
    tile = plan.filter(data, max_chunk=max_chunk)
    return _HEAD.pack(version, tile_nbytes(tile), len(data), Datatype.CHAR, 1, encryption, len(head)) + head + \
        write_tile(tile)


@functools.lru_cache(maxsize=256)
def _default_tile(data: bytes, version, max_chunk: int) -> bytes:
    """A small unencrypted payload's new tile, kept: most sections of a small write's fragment metadata are the
    same from write to write and field to field (empty offsets, one tile's, zero null counts), and filtering
    and packing 27 of them took 0.55 of a one-tile write's 2.95 ms (gzip's output depends on the bytes alone)."""
    return _packed(_default_plan(), data, version, max_chunk, EncryptionType.NO_ENCRYPTION, _default_pipeline(False)[1])


#: payload bytes up to which :func:`_default_tile` keeps a tile (256 of them: at most about 300 KB)
_SMALL = 1 << 10


def _unfiltered(plan: FilterPlan, tile, tile_size: int, start: int, path=None):
    data = plan.unfilter(tile)
    if len(data) != tile_size:
        raise FormatError(f"the tile unfilters to {len(data)} bytes but its header says {tile_size}", path=path,
                          offset=start)
    return data


_HEAD = struct.Struct("<IQQBQBI")  # version ... filter_pipeline_size: GENERIC_TILE_BASE_SIZE bytes


def read_generic_tile(data, key=None) -> memoryview:
    """The unfiltered payload of the generic tile that is all of ``data``, for reads: what parsing it with
    :func:`generic_tile` unfilters, with the same checks, but without construct's cost per field (a read of a
    few cells parses an R-tree and a few offset tiles: construct spent 120 of its 140 µs each on the header,
    the pipeline and the chunks). Pipelines are parsed once per distinct bytes, and their plans kept."""
    view = memoryview(data).cast("B")
    if len(view) < GENERIC_TILE_BASE_SIZE:
        raise FormatError(f"a generic tile header needs {GENERIC_TILE_BASE_SIZE} bytes, found {len(view)}",
                          structure="Generic tile", path="version", offset=0)
    _, persisted, tile_size, datatype, cell_size, encryption, pipe_size = _HEAD.unpack_from(view)
    for field, enum, value, at in (("datatype", Datatype, datatype, 20), ("encryption_type", EncryptionType,
                                                                         encryption, 29)):
        if value not in enum._value2member_map_:
            raise FormatError(f"{value} is not a valid {enum.__name__}", structure="Generic tile", path=field,
                              offset=at)
    body = GENERIC_TILE_BASE_SIZE + pipe_size
    if body + persisted != len(view):
        raise FormatError(f"the header says {pipe_size} bytes of pipeline and {persisted} of tile, but "
                          f"{len(view) - GENERIC_TILE_BASE_SIZE} follow it", structure="Generic tile",
                          path="persisted_size", offset=4)
    plan = _plan(bytes(view[GENERIC_TILE_BASE_SIZE:body]), Datatype(datatype), cell_size, normalize_key(key))
    return _unfiltered(plan, read_tile(view[body:], body), tile_size, 0)


@functools.lru_cache(maxsize=64)
def _plan(pipeline: bytes, datatype: Datatype, cell_size: int, key) -> FilterPlan:
    return FilterPlan(FilterPipeline.parse(pipeline), datatype=datatype, cell_size=cell_size, key=key)


def parse_payload(payload, data: bytes, context, path, start: int, what: str = "unfiltered"):
    """``payload`` parsed from a generic tile's ``what`` (unfiltered, uncompressed) bytes, all of them; an
    error says its offsets count from that payload, of the generic tile at file offset ``start``."""
    sub = BytesIOWithOffsets(data, None, 0)
    try:
        obj = payload._parsereport(sub, context, path)
        if remaining(sub):
            raise FormatError(f"{remaining(sub)} bytes left over after the payload", offset=sub.tell())
    except (ConstructError, FormatError) as e:
        _within(e, start, what)
        raise
    return obj


def _within(err, start, what: str = "unfiltered"):
    """Offsets inside a payload count from the payload, not the file: say so."""
    label = f"the {what} payload of the generic tile at file offset {start}"
    if isinstance(err, FormatError):
        if err.within is None:
            err.within = label
    elif getattr(err, "_tdb_within", None) is None:
        err._tdb_within = label


def generic_tile(payload) -> Construct:
    """A generic tile whose unfiltered bytes are ``payload`` (a Struct); wrap it in a Section for a file."""
    return _GenericTileOf(payload)
