"""Fragment metadata: the ``__fragment_metadata.tdb`` file and the sections its footer points to
(fragment.md; REFERENCE.md §11-§12).

- :class:`FragmentMetadata` (§12): the footer (:mod:`.footer`), and each section (a generic tile) parsed on
  first access, so that the footer of a fragment with a million tiles parses without touching its offsets.
  ``build()`` writes the file back, byte for byte for a parsed one. Format versions 1 and 2 (one generic
  tile, §12.9) load through the same class.
- The sections: R-tree, tile offsets, tile mins/maxes/sums/null counts, fragment summary, processed
  conditions; and the data file names of each version (§3.3).

The footer and consolidated ``.meta`` files have their own modules (:mod:`.footer`, :mod:`.consolidated`);
their names are re-exported here.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from functools import cached_property

import numpy as np
from construct import Container, Float64l, IfThenElse, Int32ul, Int64sl, Int64ul, ListContainer, Rebuild, this

from ..enums import DatatypeEnum, OptionalSectionId
from ..errors import FormatError, located
from ..fields import Bounded, Counted, Raw, Section, Struct, rule, switch, text_field
from ..numpy_array import CountedNumpy, NumpyArray
from ..versions import FEATURES, FormatVersion, until
from .array_schema import FieldInfo, attributes, dimensions, value_dtype
from .consolidated import ConsolidatedFragmentMetadata
from .footer import (NEED_SCHEMA, Footer, FooterPayload, NDRectangle, OptionalSection, TileGlobalOrderOffsets,
                     _attrs, _dims, find_footer, has_footer_length, index_fields, pick_schema)
from .generic_tile import GENERIC_TILE_BASE_SIZE, generic_tile, read_generic_tile

__all__ = [
    "Footer", "FooterPayload", "NDRectangle", "RTree", "TileOffsets", "TileMinMax", "TileSums",
    "FragmentSummary", "ProcessedConditions", "LegacyFragmentMetadata", "ConsolidatedFragmentMetadata",
    "RTreeTile", "TileOffsetsTile", "TileMinMaxTile", "TileSumsTile", "FragmentSummaryTile",
    "ProcessedConditionsTile", "LegacyFragmentMetadataFile", "fragment_sections", "TileGlobalOrderOffsets", "OptionalSection",
    "FragmentMetadata", "read_section", "SECTIONS", "index_fields", "find_footer", "pick_schema", "data_file_stem", "data_files",
]

# ---------------------------------------------------------------------------------------------------------
# Sections (each a generic tile; §12.2, §12.4-§12.8, §12.10)


@rule("MBRs: per dimension, [lo, hi] in the dimension's datatype")
def _mbr_dtype(ctx) -> np.dtype:
    """One fixed-dimension MBR: ``[lo, hi]`` per dimension, as a structured dtype named by dimension."""
    return np.dtype([(d.name, value_dtype(d.datatype), (2,)) for d in _dims(ctx)])


_mbrs = IfThenElse(rule("a dimension is var-sized")(lambda ctx: any(d.var for d in _dims(ctx))),
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


@rule("the field's datatype (u64 offsets into var for var-sized fields)")
def _bound_dtype(ctx) -> np.dtype:
    """Mins/maxes (and global-order bounds) are values of the field; var fields store u64 offsets."""
    field = _field(ctx)
    return np.dtype("<u8") if field.var else value_dtype(field.datatype)


#: Tile mins or maxes of one field (§12.5), and the v23 tile global-order bounds of one dimension (§12.10).
TileMinMax = Struct(
    "fixed_size" / Rebuild(Int64ul, lambda ctx: np.asarray(ctx.fixed).nbytes) * "bytes of fixed (not a count)",
    "var_size" / Rebuild(Int64ul, lambda ctx: len(ctx.var)) * "bytes of var",
    "fixed" / Bounded(this.fixed_size, NumpyArray(rule("fixed_size / the element size")(lambda ctx: ctx.fixed_size // _bound_dtype(ctx).itemsize),
                                                  _bound_dtype), "fixed values")
    * "one value per tile (var fields: u64 offsets into var)",
    "var" / Raw(this.var_size, "var values") * "the var-sized values, concatenated",
)


def _sum_dtype(field: FieldInfo) -> np.dtype:
    """Sums are int64 for signed, datetime and time types, uint64 for unsigned ones, f64 for floats (§12.6)."""
    kind = value_dtype(field.datatype).kind
    return np.dtype({"f": "<f8", "u": "<u8", "b": "<u8"}.get(kind, "<i8"))


_SUM_RULE = "int64 (signed, datetime and time fields), uint64 (unsigned, bool) or f64 (floats)"
TileSums = CountedNumpy(rule(_SUM_RULE)(lambda ctx: _sum_dtype(_field(ctx))), doc="one 8-byte sum per tile")

#: The fragment-wide min, max, sum and null count of every field (§12.7, v12+).
FragmentSummary = Struct(
    "fields" / Counted(rule("N (one per field of the index space)")(lambda ctx: len(ctx._params.fields)), Struct(
        "min_size" / Rebuild(Int64ul, lambda ctx: len(ctx.min)) * "bytes of min",
        "min" / Raw(this.min_size, "min") * "fragment minimum (empty if none)",
        "max_size" / Rebuild(Int64ul, lambda ctx: len(ctx.max)) * "bytes of max",
        "max" / Raw(this.max_size, "max") * "fragment maximum (empty if none)",
        "sum" / switch(rule("the sum's kind by the field's datatype (i: int64, u: uint64, f: f64)")(
                       lambda ctx: _sum_dtype(ctx._params.fields[ctx._index]).kind),
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


@rule("the domain's datatype")
def _domain_dtype(ctx) -> np.dtype:
    return value_dtype(_dims(ctx)[0].datatype)


@rule("first and last coordinate: D values each, of the domain's datatype")
def _coords_dtype(ctx) -> np.dtype:
    """First and last coordinate of a tile (v1-2 bounding coords)."""
    d = len(_dims(ctx))
    return np.dtype([("first", _domain_dtype(ctx), (d,)), ("last", _domain_dtype(ctx), (d,))])


def _nbytes(key):
    return lambda ctx: np.asarray(ctx[key]).nbytes


_attributes_and_coords = rule("one per attribute, plus one for the coordinates")(lambda ctx: len(_attrs(ctx)) + 1)
_per_attribute = rule("one per attribute")(lambda ctx: len(_attrs(ctx)))

LegacyFragmentMetadata = Struct(
    "version" / FormatVersion * "1 or 2",
    "non_empty_domain_size" / Rebuild(Int64ul, _nbytes("non_empty_domain")) * "bytes of the domain (0 = null)",
    "non_empty_domain" / Bounded(this.non_empty_domain_size,
                                 NumpyArray(rule("non_empty_domain_size / the datatype's size")(
                                     lambda ctx: ctx.non_empty_domain_size // _domain_dtype(ctx).itemsize),
                                            _domain_dtype), "non-empty domain")
    * "lo, hi per dimension, of the domain type",
    "mbr_num" / Rebuild(Int64ul, lambda ctx: len(ctx.mbrs)) * "number of MBRs (one per sparse tile)",
    "mbrs" / NumpyArray(this.mbr_num, _mbr_dtype) * "[lo, hi] per dimension of each tile",
    "bounding_coords_num" / Rebuild(Int64ul, lambda ctx: len(ctx.bounding_coords)) * "number of bounding coords",
    "bounding_coords" / NumpyArray(this.bounding_coords_num, _coords_dtype)
    * "first and last coordinate of each tile (ignored by TileDB)",
    "tile_offsets" / Counted(_attributes_and_coords, TileOffsets, min_size=8)
    * "per attribute, then coords: offset of each tile in its file",
    "tile_var_offsets" / Counted(_per_attribute, TileOffsets, min_size=8)
    * "per attribute: offset of each tile in its _var file",
    "tile_var_sizes" / Counted(_per_attribute, TileOffsets, min_size=8)
    * "per attribute: unfiltered size of each var tile",
    "last_tile_cell_num" / Int64ul * "cells in the last tile",
    "file_sizes" / NumpyArray(_attributes_and_coords, "<u8") * "per attribute, then coords",
    "file_var_sizes" / NumpyArray(_per_attribute, "<u8") * "per attribute",
)

#: The whole ``__fragment_metadata.tdb`` of format versions 1 and 2.
LegacyFragmentMetadataFile = Section("Fragment metadata v1-2", "fragment.md", generic_tile(LegacyFragmentMetadata),
                                     until=3)


# ---------------------------------------------------------------------------------------------------------
# The file (§12.1)


def _tile_end(data, offset: int) -> int:
    """Where the generic tile at ``offset`` ends: its 34-byte header, its pipeline, its persisted tile."""
    if not 0 <= offset <= len(data) - GENERIC_TILE_BASE_SIZE:
        raise FormatError(f"no generic tile header at offset {offset} of a {len(data)}-byte file", offset=offset)
    head = bytes(data[offset:offset + GENERIC_TILE_BASE_SIZE])  # a slice: data may be a lazy file view
    persisted_size, = struct.unpack_from("<Q", head, 4)
    pipeline_size, = struct.unpack_from("<I", head, 30)
    return offset + GENERIC_TILE_BASE_SIZE + pipeline_size + persisted_size


def _global_order(footer):
    for s in footer.get("optional_sections") or ():
        if s.identifier == OptionalSectionId.TILE_GLOBAL_ORDER_OFFSETS:
            return s.data
    return None


class _Slot:
    """One kind of section: where the footer says it is (``key``, inside the tile global-order optional section
    if ``sub``), its generic tile (``construct``), how many there are (``fields``: None for one) and its value."""

    def __init__(self, name, key, construct, fields=None, value=None, wrap=None, sub=None, written_since=None):
        self.name, self.key, self.construct, self.sub = name, key, construct, sub
        self.written_since = written_since  # TileDB writes it from this version, before the footer points to it
        self.fields = fields  # fm -> the field of each tile (None: one tile)
        self.value = value or (lambda p: p)
        self.wrap = wrap or (lambda v: v)
        #: the unfiltered payload alone (:meth:`FragmentMetadata.read_section`)
        self.payload = Section(construct.title, construct.page, construct.subcon.payload)

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


@rule("N, one per field of the index space")
def _index(fm):
    return fm.index_fields


@rule("N_var, one per field with a var offsets slot")
def _var_index(fm):
    return fm.index_fields[:len(fm.footer.tile_var_offsets_offsets)]


@rule("D, one per dimension")
def _dimensions(fm):
    return fm.dimensions


def _data(p):
    return p.data


def _as_counted(v):
    return Container(data=v)


#: The sections of a v3+ metadata file, in the writer's order (§12.1); the footer and its length follow.
SECTIONS = [
    _Slot("rtree", "rtree_offset", RTreeTile),
    _Slot("tile_offsets", "tile_offsets_offsets", TileOffsetsTile, _index, _data, _as_counted),
    _Slot("tile_var_offsets", "tile_var_offsets_offsets", TileOffsetsTile, _var_index, _data, _as_counted),
    _Slot("tile_var_sizes", "tile_var_sizes_offsets", TileOffsetsTile, _var_index, _data, _as_counted),
    _Slot("tile_validity_offsets", "tile_validity_offsets_offsets", TileOffsetsTile, _index, _data, _as_counted),
    _Slot("tile_mins", "tile_min_offsets", TileMinMaxTile, _index),
    _Slot("tile_maxes", "tile_max_offsets", TileMinMaxTile, _index),
    _Slot("tile_global_order_mins", "min_offsets", TileMinMaxTile, _dimensions, sub=True),
    _Slot("tile_global_order_maxes", "max_offsets", TileMinMaxTile, _dimensions, sub=True),
    _Slot("tile_sums", "tile_sum_offsets", TileSumsTile, _index, _data, _as_counted),
    _Slot("tile_null_counts", "tile_null_count_offsets", TileOffsetsTile, _index, _data, _as_counted),
    _Slot("fragment_summary", "fragment_min_max_sum_null_count_offset", FragmentSummaryTile,
          value=lambda p: p.fields, wrap=lambda v: Container(fields=v)),
    _Slot("processed_conditions", "processed_conditions_offset", ProcessedConditionsTile,
          value=lambda p: [c.marker for c in p.conditions],
          wrap=lambda v: Container(conditions=ListContainer(Container(marker=m) for m in v)),
          written_since=15),  # REFERENCE §17 #7: store_v15_or_higher writes it, unreferenced, at v15
]
_SLOT = {s.name: s for s in SECTIONS}


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
        self._payloads, self._reads = {}, {}
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
        return _parse_file(cls, bytes(data), schema, key, name, version, filename)

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
                    field=fields[i] if fields else None, max_chunk=getattr(self, "max_chunk", None))

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
            flat = np.asarray(self.legacy.non_empty_domain)
            if flat.size != 2 * len(self.dimensions):
                raise FormatError(f"a non-empty domain of {flat.size} values for {len(self.dimensions)} dimensions")
            return list(flat.reshape(-1, 2))
        return self.footer.non_empty_domain

    @property
    def tile_num(self) -> int:
        """Data tiles per field: the sparse tile count, or the dense tiles the non-empty domain covers."""
        if self.dense:
            return _dense_tile_num(self.schema, self.non_empty_domain)
        return len(self.legacy.mbrs) if self.legacy is not None else self.footer.sparse_tile_num

    @property
    def cell_num(self) -> int:
        """Cells in the fragment, as TileDB counts them (dense: whole tiles of the non-empty domain)."""
        if self.dense:
            return self.tile_num * math.prod(int(d.tile_extent) for d in self.schema.domain.dimensions)
        return (self.tile_num - 1) * self.schema.capacity + self.last_tile_cell_num

    def __getitem__(self, name):  # footer fields, or the v1-2 fields of the same name
        return (self.legacy or self.footer)[name]

    last_tile_cell_num = property(lambda self: self["last_tile_cell_num"])
    file_sizes = property(lambda self: self["file_sizes"])
    file_var_sizes = property(lambda self: self["file_var_sizes"])
    file_validity_sizes = property(lambda self: None if self.legacy is not None else self.footer.file_validity_sizes)

    def summary(self) -> dict:
        """A compact, JSON-friendly description of the fragment (for ``tdbformat inspect``)."""
        return _summary(self)

    def build(self) -> bytes:
        """The file: every section in the writer's order, the footer with their offsets, the footer length."""
        return _build_file(self)


def read_section(fm: FragmentMetadata, name: str, i: int = 0):
    """What ``getattr(fm, name)[i]`` gives (``i`` only for per-field sections), for reads: a section not parsed
    yet is unfiltered by :func:`read_generic_tile` and only its payload parsed, without construct's containers of
    the tile, which inspection and build need (a read of a few cells spent most of its time on them). Kept apart
    from what attribute access parses; once that is there, it is what this gives."""
    slot = _SLOT[name]
    parsed = fm._payloads.get(name)
    if parsed is not None and parsed[i] is not None:
        return slot.value(parsed[i])
    done = fm._reads.setdefault(name, [None] * len(slot.offsets(fm.footer)))
    if done[i] is None:
        done[i] = _read_payload(fm, slot, i)
    return slot.value(done[i])


def _read_payload(fm: FragmentMetadata, slot: _Slot, i: int):
    start = slot.offsets(fm.footer)[i]
    try:
        data = read_generic_tile(fm._data[start:_tile_end(fm._data, start)], fm.key)
    except FormatError as e:
        raise located(e, where=f"{slot.construct.title} at file offset {start}", base=start) from None
    try:
        return slot.payload.parse(data, **fm._context(slot, i))
    except FormatError as e:
        raise located(e, within=f"the unfiltered payload of the generic tile at file offset {start}") from None


def fragment_sections(fm: FragmentMetadata) -> dict:
    """The footer (or the v1-2 metadata) and every section the fragment's version has, by name."""
    if fm.legacy is not None:
        return {"legacy": fm.legacy}
    present = {s.name: getattr(fm, s.name) for s in SECTIONS}
    return {"footer": fm.footer, **{k: list(v) if isinstance(v, _Lazy) else v for k, v in present.items()
                                    if v is not None}}


def _parse_file(cls, data, schema, key, name, version, filename):
    if schema is None:
        raise FormatError(NEED_SCHEMA, file=filename)
    if _tile_end(data, 0) == len(data):  # the file is one generic tile: v1-2 (§12.9)
        schema = pick_schema(schema, None)
        return cls(schema=schema, key=key, data=data,
                   legacy=LegacyFragmentMetadataFile.parse(data, schema=schema, key=key, filename=filename))
    offset, size, _ = find_footer(data, schema, version, name)
    footer = Footer.parse(data[offset:offset + size], schema=schema, filename=filename)
    schema = pick_schema(schema, footer.get("array_schema_name"))
    end = _tile_end(data, max((o for slot in SECTIONS for o in slot.offsets(footer) or ()), default=0))
    if end > offset:
        raise FormatError(f"the last section ends at {end}, past the footer at {offset}", file=filename, offset=end)
    fm = cls(footer, schema=schema, key=key, data=data, unreferenced=data[end:offset])
    fm.footer_offset = offset
    return fm


def _dense_tile_num(schema, ned) -> int:
    """The tiles of a dense fragment: those its non-empty domain ``ned`` meets, in the schema's tile grid."""
    for d in schema.domain.dimensions:
        if d.tile_extent is None or int(d.tile_extent) < 1:  # dense dimensions are integers (a float 1e-300 is 0)
            raise FormatError(f"dimension {d.name} has tile extent {d.tile_extent}: a dense tile grid needs a "
                              "positive integer one")
    return math.prod((int(hi) - int(d.domain[0])) // int(d.tile_extent) - (int(lo) - int(d.domain[0]))
                     // int(d.tile_extent) + 1 for d, (lo, hi) in zip(schema.domain.dimensions, ned))


def _summary(fm) -> dict:
    def plain(r):
        return [bytes(r.start).decode("utf-8", "replace"), bytes(r.end).decode("utf-8", "replace")] \
            if isinstance(r, dict) else np.asarray(r).tolist()

    sizes = [fm.file_sizes, fm.file_var_sizes, fm.file_validity_sizes]
    fields = [dict(name=f.name, **{k: int(v[i]) for k, v in zip(("size", "var_size", "validity_size"), sizes)
                                   if v is not None and i < len(v) and v[i]})
              for i, f in enumerate(fm.index_fields)]
    return dict(version=fm.version, dense=fm.dense, non_empty_domain=[plain(r) for r in fm.non_empty_domain],
                tile_num=fm.tile_num, cell_num=fm.cell_num, last_tile_cell_num=int(fm.last_tile_cell_num),
                has_timestamps=bool(fm.footer and fm.footer.get("has_timestamps")),
                has_delete_meta=bool(fm.footer and fm.footer.get("has_delete_meta")),
                fields=[f for f in fields if len(f) > 1],
                sections=[s.name for s in SECTIONS if fm.footer and s.offsets(fm.footer) is not None])


def _build_file(fm) -> bytes:
    if fm.legacy is not None:
        return LegacyFragmentMetadataFile.build(fm.legacy, schema=fm.schema, key=fm.key, version=fm.version,
                                                max_chunk=getattr(fm, "max_chunk", None))  # a writer's chunk bound
    out = bytearray()
    footer = Container(fm.footer)
    for slot in SECTIONS:
        if slot.offsets(footer) is None:
            continue
        offsets = []
        for i in range(len(slot.offsets(footer))):
            offsets.append(len(out))
            out += slot.construct.build(fm._payload(slot, i), **fm._context(slot, i))
        slot.set_offsets(footer, offsets)
    out += fm.unreferenced
    blob = Footer.build(footer, schema=fm.schema)
    out += blob
    if has_footer_length(fm.version, fm.schema):
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
    if FEATURES["field_name_files"](version) or name == "__coords":
        return name
    if FEATURES["escaped_field_name_files"](version):
        return "".join(_V8_ESCAPES.get(c, c) for c in name)
    if index < attribute_num:
        return f"a{index}"
    return _V9_STEMS.get(name) or f"d{index - attribute_num - 1}"


def data_files(fm: "FragmentMetadata", index: int) -> tuple[str, str, str]:
    """The fixed (or offsets), var and validity file names of index-space entry ``index`` of a fragment."""
    stem = data_file_stem(fm.version, index, fm.index_fields, len(attributes(fm.schema)))
    return f"{stem}.tdb", f"{stem}_var.tdb", f"{stem}_validity.tdb"
