"""Fragment metadata: the ``__fragment_metadata.tdb`` file, its footer and the sections the footer points to,
and consolidated fragment metadata ``.meta`` files (fragment.md, consolidated_fragment_metadata_file.md;
REFERENCE.md §11-§13).

- :data:`Footer` (§12.3), for format versions 3 to 23. ``Footer.parse(data, schema=...)`` takes the footer
  bytes or the whole metadata file, and finds the footer in the file as TileDB does (§12.1).
- :class:`FragmentMetadata` (§12): the footer, and each section (a generic tile) parsed on first access, so
  that the footer of a fragment with a million tiles parses without touching its offsets. ``build()``
  writes the file back, byte for byte for a parsed one. Format versions 1 and 2 (one generic tile, §12.9)
  load through the same class.
- :data:`ConsolidatedFragmentMetadata` (§13): a ``.meta`` file, footers of possibly different versions.

Counts, var-ness and datatypes come from the array schema: pass ``schema=`` (what ``ArraySchema.parse``
returns) or, for arrays whose schema evolved, a dict from schema file name to schema.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from functools import cached_property

import numpy as np
from construct import (
    Construct, Container, Flag, Float64l, GreedyBytes, If, IfThenElse, Int32ul, Int64sl, Int64ul, ListContainer, Rebuild,
    SizeofError, Switch, this,
)

from ..enums import Datatype, DatatypeEnum, OptionalSectionId, OptionalSectionIdEnum
from ..errors import FormatError
from ..fields import Bounded, Counted, Raw, Section, Struct, built_size, remaining, switch, text_field
from ..numpy_array import NumpyArray, CountedNumpy
from ..versions import LATEST, FormatVersion, between, format_version, since, until
from .array_schema import FieldInfo, attributes, dimensions, value_dtype
from .generic_tile import GENERIC_TILE_BASE_SIZE, generic_tile
from .names import parse_timestamped_name

__all__ = [
    "Footer", "FooterPayload", "NDRectangle", "RTree", "TileOffsets", "TileMinMax", "TileSums",
    "FragmentSummary", "ProcessedConditions", "LegacyFragmentMetadata", "ConsolidatedFragmentMetadata",
    "RTreeTile", "TileOffsetsTile", "TileMinMaxTile", "TileSumsTile", "FragmentSummaryTile",
    "ProcessedConditionsTile", "LegacyFragmentMetadataFile", "TileGlobalOrderOffsets", "OptionalSection",
    "FragmentMetadata", "index_fields", "find_footer", "data_file_stem", "data_files",
]


# ---------------------------------------------------------------------------------------------------------
# Schema context


_NEED_SCHEMA = ("fragment metadata cannot be parsed without its array schema: pass schema= "
                "(what ArraySchema.parse returns)")


def _schema(ctx):
    """The schema governing ``ctx``: ``schema=``, or the entry of a dict named by the footer's array_schema_name."""
    schema = ctx._params.get("schema")
    if schema is None:
        raise FormatError(_NEED_SCHEMA)
    if "domain" in schema:
        return schema
    c = ctx
    while c is not None and c.get("array_schema_name") is None:
        c = c.get("_")
    return pick_schema(schema, None if c is None else c.array_schema_name)


def pick_schema(schema, name):
    """``schema`` itself, or from a dict of schemas by file name, the one called ``name`` (None before v10,
    where the schema is implicitly ``__array_schema.tdb``)."""
    if "domain" in schema:
        return schema
    name = name or "__array_schema.tdb"
    if name not in schema:
        raise FormatError(f"no schema named {name!r} among the schemas given ({', '.join(map(str, schema))})")
    return schema[name]


def _dims(ctx) -> list[FieldInfo]:
    return dimensions(_schema(ctx))


def _attrs(ctx) -> list[FieldInfo]:
    return attributes(_schema(ctx))


def _flag(ctx, name) -> int:
    c = ctx
    while c is not None and name not in c:
        c = c.get("_")
    return int(bool(c and c[name]))


def index_fields(schema, version: int, has_timestamps=False, has_delete_meta=False) -> list[FieldInfo]:
    """The fields of the fragment-metadata index space, in index order (REFERENCE §11).

    v5+: attributes, ``__coords``, dimensions, ``__timestamps`` (if has_timestamps), ``__delete_timestamps``
    and ``__delete_condition_index`` (if has_delete_meta). v1-4: attributes, then ``__coords``.
    """
    attrs, dims = attributes(schema), dimensions(schema)
    coords = FieldInfo("__coords", dims[0].datatype, len(dims), False, False, schema.coords_filters)
    extra = [FieldInfo(n, Datatype.UINT64, 1, False, False, schema.coords_filters)
             for n, on in (("__timestamps", has_timestamps), ("__delete_timestamps", has_delete_meta),
                           ("__delete_condition_index", has_delete_meta)) if on]
    return attrs + [coords] + (dims + extra if version >= 5 else [])


def _n(ctx) -> int:
    """Per-field count of the fixed/validity arrays (§11): A+1 before v5, N = A+1+D+ts+2*dm from v5."""
    return len(index_fields(_schema(ctx), format_version(ctx), _flag(ctx, "has_timestamps"),
                            _flag(ctx, "has_delete_meta")))


def _n_var(ctx) -> int:
    """Per-field count of the var arrays (§11): A before v5 (no __coords slot), N from v5."""
    return _n(ctx) - (1 if format_version(ctx) < 5 else 0)


# ---------------------------------------------------------------------------------------------------------
# NDRectangle (non-empty domain, var MBRs)


class NDRectangle(Construct):
    """One range per dimension: a fixed dimension's ``[lo, hi]`` as a numpy array of its type; a var
    dimension's as ``r_size u64, start_size u64, start, end`` (parsed to a Container(start, end))."""

    def _parse(self, stream, context, path):
        out = ListContainer()
        for d in _dims(context):
            if d.var:
                r_size, start_size = struct.unpack("<QQ", Raw(16, "range sizes")._parse(stream, context, path))
                if start_size > r_size:
                    raise FormatError(f"range start size {start_size} exceeds the range size {r_size}", path=path)
                data = Raw(r_size, "var range")._parse(stream, context, path)
                out.append(Container(start=data[:start_size], end=data[start_size:]))
            else:
                out.append(NumpyArray(2, value_dtype(d.datatype))._parse(stream, context, path))
        return out

    def _build(self, obj, stream, context, path):
        dims = _dims(context)
        if len(obj) != len(dims):
            raise FormatError(f"{len(obj)} ranges given for {len(dims)} dimensions", path=path)
        for d, r in zip(dims, obj):
            if d.var:
                start, end = bytes(r["start"]), bytes(r["end"])
                stream.write(struct.pack("<QQ", len(start) + len(end), len(start)) + start + end)
            else:
                NumpyArray(2, value_dtype(d.datatype))._build(r, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        dims = _dims(context)
        if any(d.var for d in dims):
            raise SizeofError("ranges of var-sized dimensions have no static size", path=path)
        return sum(2 * value_dtype(d.datatype).itemsize for d in dims)


# ---------------------------------------------------------------------------------------------------------
# Footer (§12.3)

_offsets = NumpyArray(_n, "<u8")
_var_offsets = NumpyArray(_n_var, "<u8")

#: The identifier-0 optional section: the offsets of the tile global-order bound tiles (§12.10).
TileGlobalOrderOffsets = Struct(
    "min_offsets" / NumpyArray(lambda ctx: len(_dims(ctx)), "<u8") * "offset of each dimension's mins tile",
    "max_offsets" / NumpyArray(lambda ctx: len(_dims(ctx)), "<u8") * "offset of each dimension's maxes tile",
)

_section_data = Switch(this.identifier, {OptionalSectionId.TILE_GLOBAL_ORDER_OFFSETS: TileGlobalOrderOffsets},
                       default=GreedyBytes)  # readers skip unknown identifiers: keep their bytes

OptionalSection = Struct(
    "identifier" / OptionalSectionIdEnum * "u64 OptionalSectionId (unknown ones are kept as raw bytes)",
    "data_size" / Rebuild(Int32ul, built_size("data", _section_data)) * "bytes of data",
    "data" / Bounded(this.data_size, _section_data, "optional section") * "the section's content",
)

def trailing_8_bytes(ctx) -> bool:
    """The v11 footer ends with 8 more bytes (parsing), or the field has a value (building)."""
    if ctx._building:
        return ctx.get("backcompat_fragment_summary_offset") is not None
    return not ctx._sizing and remaining(ctx._io) == 8


_BACKCOMPAT_OFFSET = If(trailing_8_bytes, Int64ul)
_BACKCOMPAT_OFFSET.flagbuildnone = True  # None: a genuine v11 footer


#: The footer's fields (§12.3), without the Section boundary (for use inside .meta files).
FooterPayload = Struct(
    "version" / FormatVersion * "format version of the fragment (governs the footer and every section)",
    *(f.name / since(10, f.subcon) * f.docs
      for f in text_field("array_schema_name", Int64ul, "file name of the schema in __schema (v10+)")),
    "dense" / Flag * "1 = dense fragment",
    "null_non_empty_domain" / Flag * "1 = no non-empty domain (the writer still writes zeros)",
    "non_empty_domain" / NDRectangle() * "[lo, hi] per dimension (v3-4: 2*D values of the domain type)",
    "sparse_tile_num" / Int64ul * "number of sparse data tiles (R-tree leaves)",
    "last_tile_cell_num" / Int64ul * "cells in the last tile",
    "has_timestamps" / since(14, Flag) * "1 = cells carry timestamps (__timestamps field)",
    "has_delete_meta" / since(15, Flag) * "1 = delete timestamps and condition index fields",
    "file_sizes" / _offsets * "size of each field's data file",
    "file_var_sizes" / _var_offsets * "size of each field's _var file",
    "file_validity_sizes" / since(7, _offsets) * "size of each field's _validity file",
    "rtree_offset" / Int64ul * "file offset of the R-tree tile",
    "tile_offsets_offsets" / _offsets * "file offset of each field's tile offsets tile",
    "tile_var_offsets_offsets" / _var_offsets * "file offset of each field's var offsets tile",
    "tile_var_sizes_offsets" / _var_offsets * "file offset of each field's var sizes tile",
    "tile_validity_offsets_offsets" / since(7, _offsets) * "file offset of each field's validity offsets tile",
    "tile_min_offsets" / since(11, _offsets) * "file offset of each field's tile mins tile",
    "tile_max_offsets" / since(11, _offsets) * "file offset of each field's tile maxes tile",
    "tile_sum_offsets" / since(11, _offsets) * "file offset of each field's tile sums tile",
    "tile_null_count_offsets" / since(11, _offsets) * "file offset of each field's tile null counts tile",
    "backcompat_fragment_summary_offset" / between(11, 12, _BACKCOMPAT_OFFSET)
    * "0, written by TileDB >= 2.8 into v11 fragments (back-compat writes), not by 2.7 (REFERENCE §17 #6)",
    "fragment_min_max_sum_null_count_offset" / since(12, Int64ul)
    * "file offset of the fragment min/max/sum/null count tile (v12+; REFERENCE §17 #5)",
    "processed_conditions_offset" / since(16, Int64ul) * "file offset of the processed conditions tile",
    "optional_section_count" / since(23, Rebuild(Int32ul, lambda ctx: len(ctx.optional_sections)))
    * "number of optional sections",
    "optional_sections" / since(23, Counted(this.optional_section_count, OptionalSection, min_size=12))
    * "optional sections (identifier 0: tile global-order bound offsets)",
)


def _looks_like_generic_tile(data) -> bool:
    """A whole metadata file starts with a generic tile (CHAR cells of size 1); a footer does not."""
    if len(data) < 34:
        return False
    persisted, _, datatype, cell_size, encryption, fps = struct.unpack_from("<QQBQBI", data, 4)
    return datatype == Datatype.CHAR and cell_size == 1 and encryption in (0, 1) and 34 + fps + persisted <= len(data)


def _footer_size(version: int, schema) -> int:
    """The footer size TileDB computes when no footer length is stored (v3-9, fixed dimensions)."""
    return FooterPayload.sizeof(version=version, schema=schema)


def find_footer(data, schema, version: int | None = None, name: str | None = None) -> tuple[int, int, bool]:
    """Where the footer of a whole metadata file is: ``(offset, size, has_footer_length)`` (REFERENCE §12.1).

    The footer length is stored from v10, and for v5-9 when a dimension is var-sized; otherwise the size
    is computed from the schema for the version of the fragment's name (v3-4 names carry none: 4). Without
    ``version=`` or ``name=`` the version is taken from the footer itself.
    """
    if version is None and name is not None:
        version = parse_timestamped_name(name).version or 4
    var_dims = any(d.var for d in dimensions(schema if "domain" in schema else next(iter(schema.values()))))
    size_end = len(data)

    def trailer():
        if size_end < 8:
            return None
        size = struct.unpack_from("<Q", data, size_end - 8)[0]
        return (size_end - 8 - size, size, True) if 4 <= size <= size_end - 8 else None

    def computed(v):
        size = _footer_size(v, schema)
        return (size_end - size, size, False) if size <= size_end else None

    def stored_version(span):
        return span and struct.unpack_from("<I", data, span[0])[0]

    if version is not None:
        span = trailer() if version >= 10 or (version >= 5 and var_dims) else computed(version)
        if span is None:
            raise FormatError(f"the file is too short for a v{version} footer")
        return span
    # No version known: the span whose stored version fits how it was found, and that parses exactly.
    candidates = [(trailer(), range(5 if var_dims else 10, LATEST + 1))]
    if not var_dims:
        candidates += [(computed(9), (7, 8, 9)), (computed(6), (5, 6)), (computed(4), (3, 4))]
    for span, versions in candidates:
        if span is not None and stored_version(span) in versions and _parses(data, span, schema):
            return span
    raise FormatError("cannot find the footer: no footer length and no v3-9 footer size fits; pass name= "
                      "(the fragment's folder name) or version=")


def _parses(data, span, schema) -> bool:
    try:
        Footer.parse(data[span[0]:span[0] + span[1]], schema=schema)
        return True
    except FormatError:  # a candidate position, not an error: the next candidate is tried
        return False


class _FooterSection(Section):
    def parse(self, data, **contextkw):
        """Parse a footer: the footer bytes, or a whole ``__fragment_metadata.tdb`` (``schema=`` needed;
        ``name=`` or ``version=`` locate a v3-9 footer as TileDB does)."""
        if _looks_like_generic_tile(data):
            if contextkw.get("schema") is None:
                raise FormatError(_NEED_SCHEMA, structure=self.title)
            offset, size, _ = find_footer(data, contextkw["schema"], contextkw.get("version"), contextkw.get("name"))
            data = bytes(data)[offset:offset + size]
        return super().parse(data, **contextkw)


#: The fragment metadata footer (§12.3).
Footer = _FooterSection("Fragment metadata footer", "fragment.md", FooterPayload, since=3)


# ---------------------------------------------------------------------------------------------------------
# Sections (each a generic tile; §12.2, §12.4-§12.8, §12.10)


def _mbr_dtype(ctx) -> np.dtype:
    """One fixed-dimension MBR: ``[lo, hi]`` per dimension, as a structured dtype named by dimension."""
    return np.dtype([(d.name, value_dtype(d.datatype), (2,)) for d in _dims(ctx)])


_mbrs = IfThenElse(lambda ctx: any(d.var for d in _dims(ctx)),
                   Counted(this.mbr_num, NDRectangle(), min_size=0),
                   NumpyArray(this.mbr_num, _mbr_dtype))

RTree = Struct(
    "dim_num" / until(5, Int32ul) * "number of dimensions (v3-4; ignored on read)",
    "fanout" / Int32ul * "maximum children per node (TileDB writes 10)",
    "datatype" / until(5, DatatypeEnum) * "the domain type (v3-4; ignored on read)",
    "level_num" / Rebuild(Int32ul, lambda ctx: len(ctx.levels)) * "number of levels (0 for dense fragments)",
    "levels" / Counted(this.level_num, Struct(
        "mbr_num" / Rebuild(Int64ul, lambda ctx: len(ctx.mbrs)) * "MBRs on this level",
        "mbrs" / _mbrs * "numpy structured array (fixed dims: one [lo, hi] field per dimension) or, "
                         "with a var dimension, a list of NDRectangles",
    ), min_size=8) * "levels, root first, leaves last",
)

#: Tile offsets, var offsets, var sizes, validity offsets and null counts: one u64 count, then u64 values.
TileOffsets = CountedNumpy("<u8", doc="one u64 per tile")


def _field(ctx) -> FieldInfo:
    return ctx._params.field


def _bound_dtype(ctx) -> np.dtype:
    """Mins/maxes (and global-order bounds) are values of the field; var fields store u64 offsets."""
    field = _field(ctx)
    return np.dtype("<u8") if field.var else value_dtype(field.datatype)


#: Tile mins or maxes of one field (§12.5), and the v23 tile global-order bounds of one dimension (§12.10).
TileMinMax = Struct(
    "fixed_size" / Rebuild(Int64ul, lambda ctx: np.asarray(ctx.fixed).nbytes) * "bytes of fixed (not a count)",
    "var_size" / Rebuild(Int64ul, lambda ctx: len(ctx.var)) * "bytes of var",
    "fixed" / Bounded(this.fixed_size, NumpyArray(lambda ctx: ctx.fixed_size // _bound_dtype(ctx).itemsize,
                                                  _bound_dtype), "fixed values")
    * "one value per tile (var fields: u64 offsets into var)",
    "var" / Raw(this.var_size, "var values") * "the var-sized values, concatenated",
)


def _sum_dtype(field: FieldInfo) -> np.dtype:
    """Sums are int64 for signed, datetime and time types, uint64 for unsigned ones, f64 for floats (§12.6)."""
    kind = value_dtype(field.datatype).kind
    return np.dtype({"f": "<f8", "u": "<u8", "b": "<u8"}.get(kind, "<i8"))


TileSums = CountedNumpy(lambda ctx: _sum_dtype(_field(ctx)), doc="one 8-byte sum per tile")

#: The fragment-wide min, max, sum and null count of every field (§12.7, v12+).
FragmentSummary = Struct(
    "fields" / Counted(lambda ctx: len(ctx._params.fields), Struct(
        "min_size" / Rebuild(Int64ul, lambda ctx: len(ctx.min)) * "bytes of min",
        "min" / Raw(this.min_size, "min") * "fragment minimum (empty if none)",
        "max_size" / Rebuild(Int64ul, lambda ctx: len(ctx.max)) * "bytes of max",
        "max" / Raw(this.max_size, "max") * "fragment maximum (empty if none)",
        "sum" / switch(lambda ctx: _sum_dtype(ctx._params.fields[ctx._index]).kind,
                       {"i": Int64sl, "u": Int64ul, "f": Float64l}, "unreachable")
        * "fragment sum (int64, uint64 or f64 as the tile sums)",
        "null_count" / Int64ul * "fragment null count",
    ), min_size=32) * "one entry per index of the index space",
)

ProcessedConditions = Struct(
    "num" / Rebuild(Int64ul, lambda ctx: len(ctx.conditions)) * "number of processed delete/update conditions",
    "conditions" / Counted(this.num, Struct(*text_field("marker", Int64ul, "the condition's commit file, "
                                                        "relative to the array"))) * "sorted",
)


# Each section is one generic tile of the metadata file; these are those tiles (parse one with ``version=``,
# ``schema=``, ``key=`` and, for per-field sections, ``field=`` its FieldInfo and ``fields=`` the index space).
RTreeTile = Section("R-tree", "fragment.md", generic_tile(RTree), since=3)
TileOffsetsTile = Section("Tile offsets (also var offsets, var sizes, validity offsets, null counts)",
                          "fragment.md", generic_tile(TileOffsets), since=3)
TileMinMaxTile = Section("Tile mins/maxes (also v23 tile global-order bounds)", "fragment.md",
                         generic_tile(TileMinMax), since=11)
TileSumsTile = Section("Tile sums", "fragment.md", generic_tile(TileSums), since=11)
FragmentSummaryTile = Section("Fragment min/max/sum/null count", "fragment.md", generic_tile(FragmentSummary),
                              since=12)
ProcessedConditionsTile = Section("Processed conditions", "fragment.md", generic_tile(ProcessedConditions),
                                  since=16)


# ---------------------------------------------------------------------------------------------------------
# Legacy metadata, v1-2 (§12.9)


def _domain_dtype(ctx) -> np.dtype:
    return value_dtype(_dims(ctx)[0].datatype)


def _coords_dtype(ctx) -> np.dtype:
    """First and last coordinate of a tile (v1-2 bounding coords)."""
    d = len(_dims(ctx))
    return np.dtype([("first", _domain_dtype(ctx), (d,)), ("last", _domain_dtype(ctx), (d,))])


def _nbytes(key):
    return lambda ctx: np.asarray(ctx[key]).nbytes


LegacyFragmentMetadata = Struct(
    "version" / FormatVersion * "1 or 2",
    "non_empty_domain_size" / Rebuild(Int64ul, _nbytes("non_empty_domain")) * "bytes of the domain (0 = null)",
    "non_empty_domain" / Bounded(this.non_empty_domain_size,
                                 NumpyArray(lambda ctx: ctx.non_empty_domain_size // _domain_dtype(ctx).itemsize,
                                            _domain_dtype), "non-empty domain")
    * "lo, hi per dimension, of the domain type",
    "mbr_num" / Rebuild(Int64ul, lambda ctx: len(ctx.mbrs)) * "number of MBRs (one per sparse tile)",
    "mbrs" / NumpyArray(this.mbr_num, _mbr_dtype) * "[lo, hi] per dimension of each tile",
    "bounding_coords_num" / Rebuild(Int64ul, lambda ctx: len(ctx.bounding_coords)) * "number of bounding coords",
    "bounding_coords" / NumpyArray(this.bounding_coords_num, _coords_dtype)
    * "first and last coordinate of each tile (ignored by TileDB)",
    "tile_offsets" / Counted(lambda ctx: len(_attrs(ctx)) + 1, TileOffsets, min_size=8)
    * "per attribute, then coords: offset of each tile in its file",
    "tile_var_offsets" / Counted(lambda ctx: len(_attrs(ctx)), TileOffsets, min_size=8)
    * "per attribute: offset of each tile in its _var file",
    "tile_var_sizes" / Counted(lambda ctx: len(_attrs(ctx)), TileOffsets, min_size=8)
    * "per attribute: unfiltered size of each var tile",
    "last_tile_cell_num" / Int64ul * "cells in the last tile",
    "file_sizes" / NumpyArray(lambda ctx: len(_attrs(ctx)) + 1, "<u8") * "per attribute, then coords",
    "file_var_sizes" / NumpyArray(lambda ctx: len(_attrs(ctx)), "<u8") * "per attribute",
)

#: The whole ``__fragment_metadata.tdb`` of format versions 1 and 2.
LegacyFragmentMetadataFile = Section("Fragment metadata v1-2", "fragment.md", generic_tile(LegacyFragmentMetadata),
                                     until=3)


# ---------------------------------------------------------------------------------------------------------
# The file (§12.1)


def _has_footer_length(version: int, schema) -> bool:
    """The u64 footer length follows the footer from v10, and in v5-9 when a dimension is var-sized."""
    return version >= 10 or (version >= 5 and any(d.var for d in dimensions(schema)))


def _tile_end(data, offset: int) -> int:
    """Where the generic tile at ``offset`` ends: its 34-byte header, its pipeline, its persisted tile."""
    if not 0 <= offset <= len(data) - GENERIC_TILE_BASE_SIZE:
        raise FormatError(f"no generic tile header at offset {offset} of a {len(data)}-byte file", offset=offset)
    persisted_size, = struct.unpack_from("<Q", data, offset + 4)
    pipeline_size, = struct.unpack_from("<I", data, offset + 30)
    return offset + GENERIC_TILE_BASE_SIZE + pipeline_size + persisted_size


def _global_order(footer):
    for s in footer.get("optional_sections") or ():
        if s.identifier == OptionalSectionId.TILE_GLOBAL_ORDER_OFFSETS:
            return s.data
    return None


class _Slot:
    """One kind of section: where the footer says it is, its payload, and its value for readers."""

    def __init__(self, name, key, construct, fields=None, value=None, wrap=None, sub=None):
        self.name, self.key, self.construct, self.sub = name, key, construct, sub
        self.fields = fields  # fm -> the field of each tile (None: one tile)
        self.value = value or (lambda p: p)
        self.wrap = wrap or (lambda v: v)

    def offsets(self, footer):
        holder = _global_order(footer) if self.sub else footer
        where = None if holder is None else holder.get(self.key)
        if where is None:
            return None
        return [int(where)] if self.fields is None else [int(x) for x in where]

    def set_offsets(self, footer, offsets):
        """Record the offsets in ``footer`` (a copy being built: nested containers are copied, not changed)."""
        value = offsets[0] if self.fields is None else np.array(offsets, "<u8")
        if not self.sub:
            footer[self.key] = value
            return
        sections = ListContainer(footer.optional_sections)
        i = next(i for i, s in enumerate(sections) if s.identifier == OptionalSectionId.TILE_GLOBAL_ORDER_OFFSETS)
        sections[i] = Container(sections[i], data=Container(sections[i].data, **{self.key: value}))
        footer.optional_sections = sections


def _index(fm):
    return fm.index_fields


def _var_index(fm):
    return fm.index_fields[:len(fm.footer.tile_var_offsets_offsets)]


def _data(p):
    return p.data


def _as_counted(v):
    return Container(data=v)


_SLOTS = [  # in the writer's order (§12.1)
    _Slot("rtree", "rtree_offset", RTreeTile),
    _Slot("tile_offsets", "tile_offsets_offsets", TileOffsetsTile, _index, _data, _as_counted),
    _Slot("tile_var_offsets", "tile_var_offsets_offsets", TileOffsetsTile, _var_index, _data, _as_counted),
    _Slot("tile_var_sizes", "tile_var_sizes_offsets", TileOffsetsTile, _var_index, _data, _as_counted),
    _Slot("tile_validity_offsets", "tile_validity_offsets_offsets", TileOffsetsTile, _index, _data, _as_counted),
    _Slot("tile_mins", "tile_min_offsets", TileMinMaxTile, _index),
    _Slot("tile_maxes", "tile_max_offsets", TileMinMaxTile, _index),
    _Slot("tile_global_order_mins", "min_offsets", TileMinMaxTile, lambda fm: fm.dimensions, sub=True),
    _Slot("tile_global_order_maxes", "max_offsets", TileMinMaxTile, lambda fm: fm.dimensions, sub=True),
    _Slot("tile_sums", "tile_sum_offsets", TileSumsTile, _index, _data, _as_counted),
    _Slot("tile_null_counts", "tile_null_count_offsets", TileOffsetsTile, _index, _data, _as_counted),
    _Slot("fragment_summary", "fragment_min_max_sum_null_count_offset", FragmentSummaryTile,
          value=lambda p: p.fields, wrap=lambda v: Container(fields=v)),
    _Slot("processed_conditions", "processed_conditions_offset", ProcessedConditionsTile,
          value=lambda p: [c.marker for c in p.conditions],
          wrap=lambda v: Container(conditions=ListContainer(Container(marker=m) for m in v))),
]
_SLOT = {s.name: s for s in _SLOTS}


class _Lazy(Sequence):
    """The per-field values of one section, each tile parsed on first access."""

    def __init__(self, fm, slot):
        self._fm, self._slot, self._len = fm, slot, len(slot.offsets(fm.footer))

    def __len__(self):
        return self._len

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._len))]
        if not -self._len <= i < self._len:
            raise IndexError(i)
        return self._slot.value(self._fm._payload(self._slot, i % self._len))

    def __repr__(self):
        return f"<{self._slot.name}: {self._len} fields, parsed on access>"


_LEGACY_LISTS = ("tile_offsets", "tile_var_offsets", "tile_var_sizes")


class FragmentMetadata:
    """A fragment's metadata: the footer (parsed at once) and its sections (each parsed on first access).

    Per-field sections (``tile_offsets``, ``tile_var_offsets``, ``tile_var_sizes``, ``tile_validity_offsets``,
    ``tile_mins``, ``tile_maxes``, ``tile_sums``, ``tile_null_counts``) are sequences in index-space order
    (:attr:`index_fields`); ``tile_global_order_mins``/``maxes`` have one entry per dimension. A section the
    fragment's version does not have is ``None``. Offsets, sizes, sums are numpy arrays; mins and maxes are
    Containers (``fixed`` numpy values, or u64 offsets into ``var`` for var fields).

    Format versions 1 and 2 have no footer: :attr:`legacy` holds the whole metadata, and the common
    properties (``version``, ``non_empty_domain``, ``tile_offsets``, ``file_sizes``...) read from it.
    """

    def __init__(self, footer=None, *, schema, key=None, legacy=None, data=None, unreferenced=b"", **sections):
        """A new fragment metadata to :meth:`build`: the footer Container (its section offsets are filled in
        by build) and every section's value, e.g. ``tile_offsets=[array, ...]``, ``rtree=Container(...)``."""
        self.footer, self.legacy, self.schema, self.key, self._data = footer, legacy, schema, key, data
        #: generic tiles between the last section and the footer that the footer does not point to: v15
        #: writers emit an empty processed-conditions tile that only v16+ footers reference (REFERENCE §17 #7)
        self.unreferenced = unreferenced
        self._payloads = {}
        for name, value in sections.items():
            slot = _SLOT[name]
            self._payloads[name] = ([slot.wrap(v) for v in value] if slot.fields else [slot.wrap(value)])

    # -- parsing ---------------------------------------------------------------------------------------

    @classmethod
    def parse(cls, data, *, schema, key=None, name=None, version=None, filename=None) -> "FragmentMetadata":
        """Parse a ``__fragment_metadata.tdb``: the footer now, the sections when first used.

        ``schema``: the array schema (what ``ArraySchema.parse`` returns); ``key``: the encryption key;
        ``name``/``version``: the fragment's folder name or version, to find a v3-9 footer as TileDB does.
        """
        data = bytes(data)
        if schema is None:
            raise FormatError(_NEED_SCHEMA, file=filename)
        if _tile_end(data, 0) == len(data):  # the file is one generic tile: v1-2 (§12.9)
            schema = pick_schema(schema, None)
            return cls(schema=schema, key=key, data=data,
                       legacy=LegacyFragmentMetadataFile.parse(data, schema=schema, key=key, filename=filename))
        offset, size, _ = find_footer(data, schema, version, name)
        footer = Footer.parse(data[offset:offset + size], schema=schema, filename=filename)
        schema = pick_schema(schema, footer.get("array_schema_name"))
        end = _tile_end(data, max(o for slot in _SLOTS for o in slot.offsets(footer) or ()))
        return cls(footer, schema=schema, key=key, data=data, unreferenced=data[end:offset])

    def _payload(self, slot, i=0):
        loaded = self._payloads.setdefault(slot.name, [None] * len(slot.offsets(self.footer)))
        if loaded[i] is None:
            offset = slot.offsets(self.footer)[i]
            loaded[i] = slot.construct.parse(self._data[offset:_tile_end(self._data, offset)],
                                             **self._context(slot, i))
        return loaded[i]

    def _context(self, slot, i):
        fields = slot.fields(self) if slot.fields else None
        return dict(version=self.version, schema=self.schema, key=self.key, fields=self.index_fields,
                    field=fields[i] if fields else None)

    def __getattr__(self, name):
        slot = _SLOT.get(name)
        if slot is None:
            raise AttributeError(name)
        if self.legacy is not None:
            return [t.data for t in self.legacy[name]] if name in _LEGACY_LISTS else None
        if slot.offsets(self.footer) is None:
            return None
        return _Lazy(self, slot) if slot.fields else slot.value(self._payload(slot))

    # -- what every version has ------------------------------------------------------------------------

    @property
    def version(self) -> int:
        return (self.legacy or self.footer).version

    @property
    def dense(self) -> bool:
        if self.legacy is not None:
            return self.schema.array_type == 0
        return bool(self.footer.dense)

    @cached_property
    def dimensions(self) -> list[FieldInfo]:
        return dimensions(self.schema)

    @cached_property
    def index_fields(self) -> list[FieldInfo]:
        """The field of each index of the per-field arrays (REFERENCE §11)."""
        f = self.footer or {}
        return index_fields(self.schema, self.version, f.get("has_timestamps"), f.get("has_delete_meta"))

    @property
    def non_empty_domain(self):
        """``[lo, hi]`` per dimension: numpy pairs for fixed dimensions, Container(start, end) for var ones."""
        if self.legacy is not None:
            return list(np.asarray(self.legacy.non_empty_domain).reshape(-1, 2))
        return self.footer.non_empty_domain

    @property
    def tile_num(self) -> int:
        """Data tiles per field: the sparse tile count, or the dense tiles the non-empty domain covers."""
        if self.dense:
            return int(np.prod([(hi - d.domain[0]) // d.tile_extent - (lo - d.domain[0]) // d.tile_extent + 1
                                for d, (lo, hi) in zip(self.schema.domain.dimensions, self.non_empty_domain)]))
        return len(self.legacy.mbrs) if self.legacy is not None else self.footer.sparse_tile_num

    @property
    def cell_num(self) -> int:
        """Cells in the fragment, as TileDB counts them (dense: whole tiles of the non-empty domain)."""
        if self.dense:
            return self.tile_num * int(np.prod([d.tile_extent for d in self.schema.domain.dimensions]))
        return (self.tile_num - 1) * self.schema.capacity + self.last_tile_cell_num

    def __getitem__(self, name):  # footer fields, or the v1-2 fields of the same name
        return (self.legacy or self.footer)[name]

    last_tile_cell_num = property(lambda self: self["last_tile_cell_num"])
    file_sizes = property(lambda self: self["file_sizes"])
    file_var_sizes = property(lambda self: self["file_var_sizes"])
    file_validity_sizes = property(lambda self: None if self.legacy is not None else self.footer.file_validity_sizes)

    def summary(self) -> dict:
        """A compact, JSON-friendly description of the fragment (for ``tdbformat inspect``)."""
        def plain(r):
            return [bytes(r.start).decode("utf-8", "replace"), bytes(r.end).decode("utf-8", "replace")] \
                if isinstance(r, dict) else np.asarray(r).tolist()

        sizes = [self.file_sizes, self.file_var_sizes, self.file_validity_sizes]
        fields = [dict(name=f.name, **{k: int(v[i]) for k, v in zip(("size", "var_size", "validity_size"), sizes)
                                       if v is not None and i < len(v) and v[i]})
                  for i, f in enumerate(self.index_fields)]
        return dict(version=self.version, dense=self.dense, non_empty_domain=[plain(r) for r in self.non_empty_domain],
                    tile_num=self.tile_num, cell_num=self.cell_num, last_tile_cell_num=int(self.last_tile_cell_num),
                    has_timestamps=bool(self.footer and self.footer.get("has_timestamps")),
                    has_delete_meta=bool(self.footer and self.footer.get("has_delete_meta")),
                    fields=[f for f in fields if len(f) > 1],
                    sections=[s.name for s in _SLOTS if self.footer and s.offsets(self.footer) is not None])

    # -- building --------------------------------------------------------------------------------------

    def build(self) -> bytes:
        """The file: every section in the writer's order, the footer with their offsets, the footer length."""
        if self.legacy is not None:
            return LegacyFragmentMetadataFile.build(self.legacy, schema=self.schema, key=self.key)
        out = bytearray()
        footer = Container(self.footer)
        for slot in _SLOTS:
            if slot.offsets(footer) is None:
                continue
            count = len(slot.offsets(footer))
            offsets = []
            for i in range(count):
                offsets.append(len(out))
                out += slot.construct.build(self._payload(slot, i), **self._context(slot, i))
            slot.set_offsets(footer, offsets)
        out += self.unreferenced
        blob = Footer.build(footer, schema=self.schema)
        out += blob
        if _has_footer_length(self.version, self.schema):
            out += struct.pack("<Q", len(blob))
        return bytes(out)


# ---------------------------------------------------------------------------------------------------------
# Data file names (§3.3)

# v8 percent-encodes these characters, with TileDB's odd codes for < > \\ | kept bit-exact (REFERENCE §17 #23)
_V8_ESCAPES = {c: f"%{ord(c):02X}" for c in "!#$%&'()*+,/:;=?@[]\""} | {"<": "%20", ">": "%2D", "\\": "%30", "|": "%3C"}
_V9_STEMS = {"__coords": "__coords", "__timestamps": "t", "__delete_timestamps": "dt",
             "__delete_condition_index": "dci"}


def data_file_stem(version: int, index: int, fields: list[FieldInfo], attribute_num: int) -> str:
    """The name stem of the data files of index-space entry ``index`` (REFERENCE §3.3): the field name
    (v1-7), percent-encoded (v8), or ``a<i>`` / ``d<j>`` / ``t`` / ``dt`` / ``dci`` (v9+)."""
    name = fields[index].name
    if version <= 7 or name == "__coords":
        return name
    if version == 8:
        return "".join(_V8_ESCAPES.get(c, c) for c in name)
    if index < attribute_num:
        return f"a{index}"
    return _V9_STEMS.get(name) or f"d{index - attribute_num - 1}"


def data_files(fm: "FragmentMetadata", index: int) -> tuple[str, str, str]:
    """The fixed (or offsets), var and validity file names of index-space entry ``index`` of a fragment."""
    stem = data_file_stem(fm.version, index, fm.index_fields, len(attributes(fm.schema)))
    return f"{stem}.tdb", f"{stem}_var.tdb", f"{stem}_validity.tdb"


# ---------------------------------------------------------------------------------------------------------
# Consolidated fragment metadata (§13)


def _footer_offset(ctx):
    """Where footer ``ctx._index`` starts in the payload: after the table, footers back to back."""
    root = ctx._
    offset = 4 + sum(16 + len(f.name.encode("utf-8", "surrogateescape")) for f in root.fragments)
    for footer in root.footers[:ctx._index]:
        offset += len(FooterPayload.build(footer, schema=root._params.schema))
    return offset


class _Footers(Construct):
    """The footers, back to back, each at the offset its table entry gives."""

    def _parse(self, stream, context, path):
        out = ListContainer()
        for entry in context.fragments:
            if stream.tell() != entry.footer_offset:
                raise FormatError(f"the footer of {entry.name} is at payload offset {stream.tell()}, "
                                  f"not at the {entry.footer_offset} its entry says", path=path)
            out.append(FooterPayload._parsereport(stream, context, path))
        return out

    def _build(self, obj, stream, context, path):
        for footer in obj:
            FooterPayload._build(footer, stream, context, path)
        return obj


ConsolidatedFragmentMetadata = Section("Consolidated fragment metadata (.meta)",
                                       "consolidated_fragment_metadata_file.md", generic_tile(Struct(
    "fragment_num" / Rebuild(Int32ul, lambda ctx: len(ctx.fragments)) * "number of fragments (u32)",
    "fragments" / Counted(this.fragment_num, Struct(
        *text_field("name", Int64ul, "fragment name (v9+ .meta) or absolute URI (before)"),
        "footer_offset" / Rebuild(Int64ul, _footer_offset) * "offset of its footer within this payload",
    ), min_size=16) * "one entry per fragment",
    "footers" / _Footers() * "each fragment's footer, following its own version (no footer length)",
)), since=5)
