"""The fragment metadata footer (fragment.md; REFERENCE.md §11, §12.1, §12.3), for format versions 3 to 23,
and the schema context every fragment structure needs.

``Footer.parse(data, schema=...)`` takes the footer bytes or the whole metadata file, and finds the footer
in the file as TileDB does (§12.1): from v10 (and from v5 with var-sized dimensions) the file ends with the
footer's length, a u64; before, the footer's size is computed from the schema for the fragment's version.

Counts, var-ness and datatypes come from the array schema: pass ``schema=`` (what ``ArraySchema.parse``
returns) or, for arrays whose schema evolved, a dict from schema file name to schema.
"""

from __future__ import annotations

import struct

from construct import (
    Construct, Container, Flag, GreedyBytes, If, Int32ul, Int64ul, ListContainer, Rebuild, SizeofError, Switch, this,
)

from ..enums import Datatype, OptionalSectionId, OptionalSectionIdEnum
from ..errors import FormatError
from ..fields import Bounded, Counted, Raw, Section, Struct, built_size, remaining, rule, text_field
from ..numpy_array import NumpyArray
from ..versions import FEATURES, LATEST, FormatVersion, between, format_version, since
from .array_schema import FieldInfo, attributes, dimensions, value_dtype
from .names import parse_timestamped_name

__all__ = ["Footer", "FooterPayload", "NDRectangle", "OptionalSection", "TileGlobalOrderOffsets", "find_footer",
           "has_footer_length", "index_fields", "pick_schema", "NEED_SCHEMA"]

# ---------------------------------------------------------------------------------------------------------
# Schema context


NEED_SCHEMA = ("fragment metadata cannot be parsed without its array schema: pass schema= "
                "(what ArraySchema.parse returns)")


def _schema(ctx):
    """The schema governing ``ctx``: ``schema=``, or the entry of a dict named by the footer's array_schema_name."""
    schema = ctx._params.get("schema")
    if schema is None:
        raise FormatError(NEED_SCHEMA)
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


#: field lists already built, per schema object: a footer parse asks for them a dozen times, and a read of N
#: fragments parses N footers of one schema. An entry holds the schema and the parts the lists come from, and
#: is used only while they are still the schema's own (a schema edited in place builds anew).
_BUILT: dict = {}


def _built(what: str, schema, build, *args) -> list:
    domain = schema.get("domain")
    parts = (schema, schema.get("attributes"), domain, None if domain is None else domain.get("dimensions"),
             schema.get("coords_filters"))
    key = (what, id(schema), *args)
    hit = _BUILT.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], parts)):
        if len(_BUILT) > 512:  # schemas come and go (tests, many arrays): keep the cache bounded
            _BUILT.clear()
        hit = _BUILT[key] = (parts, build())
    return list(hit[1])  # a copy: callers may extend it


def _dims(ctx) -> list[FieldInfo]:
    schema = _schema(ctx)
    return _built("dimensions", schema, lambda: dimensions(schema))


def _attrs(ctx) -> list[FieldInfo]:
    schema = _schema(ctx)
    return _built("attributes", schema, lambda: attributes(schema))


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
    return _built("index", schema, lambda: _index_fields(schema, version, has_timestamps, has_delete_meta),
                  version, bool(has_timestamps), bool(has_delete_meta))


def _index_fields(schema, version: int, has_timestamps, has_delete_meta) -> list[FieldInfo]:
    attrs, dims = attributes(schema), dimensions(schema)
    coords = FieldInfo("__coords", dims[0].datatype, len(dims), False, False, schema.coords_filters)
    extra = [FieldInfo(n, Datatype.UINT64, 1, False, False, schema.coords_filters)
             for n, on in (("__timestamps", has_timestamps), ("__delete_timestamps", has_delete_meta),
                           ("__delete_condition_index", has_delete_meta)) if on]
    return attrs + [coords] + (dims + extra if FEATURES["coordinates_per_dimension"](version) else [])


@rule("N: attributes + 1 for the coordinates; from v5 also + dimensions, + 1 if has_timestamps, "
      "+ 2 if has_delete_meta")
def _n(ctx) -> int:
    """Per-field count of the fixed/validity arrays (§11): A+1 before v5, N = A+1+D+ts+2*dm from v5."""
    return len(index_fields(_schema(ctx), format_version(ctx), _flag(ctx, "has_timestamps"),
                            _flag(ctx, "has_delete_meta")))


@rule("N_var: attributes before v5; from v5 the same N as the fixed-sized arrays")
def _n_var(ctx) -> int:
    """Per-field count of the var arrays (§11): A before v5 (no __coords slot), N from v5."""
    return _n(ctx) - (0 if FEATURES["coordinates_per_dimension"](format_version(ctx)) else 1)


# ---------------------------------------------------------------------------------------------------------
# NDRectangle (non-empty domain, var MBRs)


class NDRectangle(Construct):
    """One range per dimension: a fixed dimension's ``[lo, hi]`` as a numpy array of its type; a var
    dimension's as ``r_size u64, start_size u64, start, end`` (parsed to a Container(start, end))."""

    spec_type = ("NDRectangle: per dimension, in order, a fixed-sized dimension's lo and hi (two values of its "
                 "datatype), a var-sized one's range_size u64, start_size u64, then start and end (range_size bytes)")
    spec_size = "per dimension: 2 × the datatype's size (fixed), 16 + range_size (var)"

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
_per_dimension = rule("D (one per dimension)")(lambda ctx: len(_dims(ctx)))

TileGlobalOrderOffsets = Struct(
    "min_offsets" / NumpyArray(_per_dimension, "<u8") * "offset of each dimension's mins tile",
    "max_offsets" / NumpyArray(_per_dimension, "<u8") * "offset of each dimension's maxes tile",
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


def has_footer_length(version: int, schema) -> bool:
    """Whether a u64 footer length follows the footer: from v10, and in v5-9 when a dimension is var-sized."""
    return FEATURES["footer_length"](version) or (
        FEATURES["footer_length_with_var_dimensions"](version) and any(d.var for d in dimensions(schema)))


def _looks_like_generic_tile(data) -> bool:
    """A whole metadata file starts with a generic tile (CHAR cells of size 1); a footer does not."""
    if len(data) < 34:
        return False
    persisted, _, datatype, cell_size, encryption, fps = struct.unpack_from("<QQBQBI", data, 4)
    return datatype == Datatype.CHAR and cell_size == 1 and encryption in (0, 1) and 34 + fps + persisted <= len(data)


def _footer_size(version: int, schema) -> int:
    """The footer size TileDB computes when no footer length is stored (v3-9, fixed dimensions)."""
    return Footer.sizeof(version=version, schema=schema)  # a FormatError, not construct's, when it has none


def find_footer(data, schema, version: int | None = None, name: str | None = None) -> tuple[int, int, bool]:
    """Where the footer of a whole metadata file is: ``(offset, size, has_footer_length)`` (REFERENCE §12.1).

    The footer length is stored from v10, and for v5-9 when a dimension is var-sized; otherwise the size
    is computed from the schema for the version of the fragment's name (v3-4 names carry none: 4). Without
    ``version=`` or ``name=`` the version is taken from the footer itself.
    """
    if version is None and name is not None:
        version = parse_timestamped_name(name).version or 4
    first = schema if "domain" in schema else next(iter(schema.values()))
    var_dims = any(d.var for d in dimensions(first))
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
        span = trailer() if has_footer_length(version, first) else computed(version)
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
    try:  # the footer bytes alone: no second lookup, however much they look like a whole file
        Section.parse(Footer, data[span[0]:span[0] + span[1]], schema=schema)
        return True
    except FormatError:  # a candidate position, not an error: the next candidate is tried
        return False


class _FooterSection(Section):
    def parse(self, data, **contextkw):
        """Parse a footer: the footer bytes, or a whole ``__fragment_metadata.tdb`` (``schema=`` needed;
        ``name=`` or ``version=`` locate a v3-9 footer as TileDB does)."""
        if _looks_like_generic_tile(data):
            if contextkw.get("schema") is None:
                raise FormatError(NEED_SCHEMA, structure=self.title)
            offset, size, _ = find_footer(data, contextkw["schema"], contextkw.get("version"), contextkw.get("name"))
            data = bytes(data)[offset:offset + size]
        return super().parse(data, **contextkw)


#: The fragment metadata footer (§12.3).
Footer = _FooterSection("Fragment metadata footer", "fragment.md", FooterPayload, since=3)
