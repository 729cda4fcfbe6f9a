"""Array schema files (array_schema.md, current_domain.md; REFERENCE.md §8).

One generic tile holding the schema payload: ``<array>/__array_schema.tdb`` before format v10,
``<array>/__schema/__<t1>_<t2>_<uuid>`` from v10 on. Every field is declared once with its version gate;
the payload's own leading ``version`` governs the whole schema, filter options included.

Typed values: a dimension's ``domain`` is ``[low, high]`` read with the dimension's datatype (the
domain-wide ``domain_type`` before v5), ``[]`` for var-sized dimensions; ``tile_extent`` is one value or
``None``. Datetime and time values are their stored int64. A fill value is kept as the stored bytes, so
that every schema builds back byte for byte (a NaN never compares equal); :func:`fill_value` types it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from construct import Construct, Container, Flag, If, Int32ul, Int64ul, ListContainer, Rebuild, evaluate, this

from ..enums import (
    ArrayType, ArrayTypeEnum, CurrentDomainType, CurrentDomainTypeEnum, DataOrderEnum, Datatype, DatatypeEnum,
    Layout, LayoutEnum,
)
from ..errors import FormatError
from ..fields import Bounded, Counted, Raw, Section, Struct, Text, Valid, rule, switch, text_field
from ..versions import FEATURES, KNOWN_VERSIONS, FormatVersion, since, until
from .filter_pipeline import DEFAULT_MAX_CHUNK_SIZE, FilterPipeline
from .generic_tile import generic_tile

__all__ = [
    "ArraySchema", "ArraySchemaPayload", "Domain", "Dimension", "Attribute", "DimensionLabel", "CurrentDomain",
    "FieldInfo", "dimensions", "attributes", "evolution_mismatch", "schema_version", "fill_value", "dimension_datatype",
    "check_not_pre_v1", "VAR_NUM", "TypedValues", "TypedValue", "VersionZero", "value_dtype",
]

#: ``cell_val_num`` of a var-sized field (TILEDB_VAR_NUM).
VAR_NUM = 2**32 - 1


def value_dtype(datatype: Datatype) -> np.dtype:
    """The numpy dtype a typed domain or extent value is read as: datetimes and times as their int64."""
    if datatype.is_datetime or datatype.is_time:
        return np.dtype("<i8")
    if datatype.numpy_dtype.kind == "S":  # CHAR, STRING_ASCII: one byte each
        return np.dtype("u1")
    return datatype.numpy_dtype


class TypedValues(Construct):
    """Values of ``datatype`` (a Datatype or a function of the context) filling the bytes of their bound;
    parses to a list of Python numbers."""

    def __init__(self, datatype, count=None):
        super().__init__()
        self.datatype, self.count = datatype, count
        what = getattr(datatype, "rule", datatype)
        self.spec_type = f"one value of {what}" if count == 1 else f"values of {what}, filling the bound"
        self.spec_size = "the datatype's size" if count == 1 else None

    def _dtype(self, context):
        return value_dtype(Datatype(evaluate(self.datatype, context)))

    def _parse(self, stream, context, path):
        dtype = self._dtype(context)
        count = evaluate(self.count, context)
        data = stream.read() if count is None else Raw(count * dtype.itemsize, "typed values")._parse(
            stream, context, path)
        if len(data) % dtype.itemsize:
            raise FormatError(f"{len(data)} bytes are not a whole number of {dtype} values", path=path)
        return np.frombuffer(data, dtype).tolist()

    def _build(self, obj, stream, context, path):
        data = np.asarray(list(obj), dtype=self._dtype(context)).tobytes()
        count = evaluate(self.count, context)
        if count is not None and len(obj) != count:
            raise FormatError(f"expected {count} values, got {len(obj)}", path=path)
        stream.write(data)
        return obj

    def _sizeof(self, context, path):
        return evaluate(self.count, context) * self._dtype(context).itemsize


class TypedValue(TypedValues):
    """One value of ``datatype``, as a Python number."""

    def __init__(self, datatype):
        super().__init__(datatype, 1)

    def _parse(self, stream, context, path):
        return super()._parse(stream, context, path)[0]

    def _build(self, obj, stream, context, path):
        super()._build([obj], stream, context, path)
        return obj


@rule("the dimension's datatype (v1-4: the domain_type)")
def dimension_datatype(ctx) -> Datatype:
    """A dimension's datatype: its own from v5, the domain-wide ``domain_type`` before."""
    return ctx.datatype if ctx.get("datatype") is not None else ctx._.domain_type


def _typed_nbytes(ctx):
    return len(ctx.domain) * value_dtype(dimension_datatype(ctx)).itemsize


# Dimension (array_schema.md; REFERENCE.md §8.2)
Dimension = Struct(
    *text_field("name", Int32ul, "dimension name"),
    "datatype" / since(5, DatatypeEnum) * "datatype of the coordinates (before v5: the domain_type)",
    "cell_val_num" / since(5, Valid(Int32ul, lambda n, ctx: n in (1, VAR_NUM),
                                    "a dimension has one value per coordinate, or is var-sized"))
    * "values per coordinate: 1, or 2**32-1 for var-sized (string) dims",
    "filters" / since(5, FilterPipeline) * "coordinate filters; empty = the schema's coords_filters apply",
    "domain_size" / since(5, Rebuild(Int64ul, _typed_nbytes)) * "bytes of domain: 2 values, 0 for var dims",
    "domain" / Bounded(rule("domain_size (v1-4: 2 × the domain_type's size)")(
                       lambda ctx: ctx.domain_size if ctx.domain_size is not None
                       else 2 * value_dtype(ctx._.domain_type).itemsize),
                       TypedValues(dimension_datatype), "dimension domain")
    * "[low, high] (inclusive), [] for var-sized dims",
    "null_tile_extent" / Rebuild(Flag, lambda ctx: ctx.tile_extent is None) * "1 = no tile extent follows",
    "tile_extent" / If(rule("null_tile_extent is 0")(lambda ctx: not ctx.null_tile_extent), TypedValue(dimension_datatype)
                       ) * "extent in the dimension's datatype, or None",
)


# Domain (array_schema.md; REFERENCE.md §8.1)
Domain = Struct(
    "domain_type" / until(5, DatatypeEnum) * "datatype of every dimension (before v5 only)",
    "dim_num" / Rebuild(Int32ul, lambda ctx: len(ctx.dimensions)) * "number of dimensions",
    "dimensions" / Counted(this.dim_num, Dimension, min_size=6) * "the dimensions, in order",
)

def _one_cell(fill, ctx) -> bool:
    return ctx.cell_val_num == VAR_NUM or len(fill) == ctx.cell_val_num * Datatype(ctx.datatype).size


# Attribute (array_schema.md; REFERENCE.md §8.3)
Attribute = Struct(
    *text_field("name", Int32ul, "attribute name"),
    "datatype" / DatatypeEnum * "datatype of the values",
    "cell_val_num" / Valid(Int32ul, lambda n, ctx: n > 0, "an attribute has at least one value per cell")
    * "values per cell, 2**32-1 = var-sized",
    "filters" / FilterPipeline * "filter pipeline of the attribute's tiles",
    "fill_value_size" / since(6, Rebuild(Int64ul, lambda ctx: len(ctx.fill_value))) * "bytes of fill_value",
    "fill_value" / since(6, Valid(Raw(this.fill_value_size, "fill value"), _one_cell,
                                  "a fixed-size attribute's fill value is one cell: cell_val_num values"))
    * "stored bytes of the fill value (one cell; see fill_value())",
    "nullable" / since(7, Flag) * "1 = the attribute has a validity vector",
    "fill_value_validity" / since(7, Flag) * "validity of the fill value",
    "order" / since(17, DataOrderEnum) * "order of the data (ordered attributes)",
    "enumeration_name_len" / since(20, Rebuild(Int32ul, lambda ctx: len(ctx.enumeration_name.encode())))
    * "bytes of enumeration_name (0 = no enumeration)",
    "enumeration_name" / since(20, Text(this.enumeration_name_len)) * "name of the attribute's enumeration, or ''",
)

# Dimension label (REFERENCE.md §8.4, §17 #1: the code's layout, not array_schema.md's)
DimensionLabel = Struct(
    "dim_index" / Int32ul * "index of the labelled dimension",
    *text_field("name", Int32ul, "label name"),
    "relative_uri" / Flag * "1 = uri is relative to the array",
    *text_field("uri", Int64ul, "URI of the label array (e.g. __labels/l0)"),
    *text_field("label_attr_name", Int32ul, "attribute of the label array holding the labels"),
    "label_order" / DataOrderEnum * "order of the labels",
    "label_datatype" / DatatypeEnum * "datatype of the labels",
    "label_cell_val_num" / Int32ul * "values per label, 2**32-1 = var-sized",
    "is_external" / Flag * "1 = the label array is not managed by the schema",
)

# Enumeration reference (REFERENCE.md §8)
EnumerationRef = Struct(
    *text_field("name", Int32ul, "enumeration name"),
    *text_field("filename", Int32ul, "its file in __schema/__enumerations/"),
)


def _range_dimension(ctx):
    """The dimension of the range being parsed (``ctx`` is the CurrentDomain's): ranges follow the dimensions."""
    return ctx._.domain.dimensions[ctx._index]


_range_datatype = rule("the dimension's datatype")(lambda ctx: _range_dimension(ctx._).datatype)

_fixed_range = Struct(
    "start" / TypedValue(_range_datatype) * "low bound",
    "end" / TypedValue(_range_datatype) * "high bound",
)

_var_range = Struct(
    "range_size" / Rebuild(Int64ul, lambda ctx: len(ctx.start) + len(ctx.end)) * "bytes of start and end",
    "start_size" / Rebuild(Int64ul, lambda ctx: len(ctx.start)) * "bytes of start",
    "start" / Raw(this.start_size, "range start") * "low bound (bytes)",
    "end" / Raw(this.range_size - this.start_size, "range end") * "high bound (bytes)",
)

NDRange = switch(rule("the dimension is var-sized")(lambda ctx: _range_dimension(ctx).cell_val_num == VAR_NUM),
                 {False: _fixed_range, True: _var_range}, "unreachable")


class VersionZero(Construct):
    """A u32 version that must be 0, the only one TileDB writes and reads (current domain, enumeration)."""

    spec_type = "u32 = 0"

    def __init__(self, what: str):
        super().__init__()
        self.what = what

    def _parse(self, stream, context, path):
        value = Int32ul._parsereport(stream, context, path)
        if value != 0:
            raise FormatError(f"{self.what} version {value} is not 0, the only one TileDB knows", path=path)
        return value

    def _build(self, obj, stream, context, path):
        if obj != 0:
            raise FormatError(f"{self.what} version must be 0, not {obj}", path=path)
        return Int32ul._build(obj, stream, context, path)

    def _sizeof(self, context, path):
        return 4


_not_empty = rule("empty is 0")(lambda ctx: not ctx.empty)

# Current domain (current_domain.md; REFERENCE.md §8.5, §17 #4: version is 0)
CurrentDomain = Struct(
    "version" / VersionZero("current domain") * "current domain version (0)",
    "empty" / Flag * "1 = no current domain is set",
    "type" / If(_not_empty, CurrentDomainTypeEnum) * "kind of current domain",
    "ndrectangle" / If(_not_empty, switch(this.type, {
        CurrentDomainType.NDRECTANGLE: Counted(rule("D (one per dimension)")(lambda ctx: len(ctx._.domain.dimensions)),
                                               NDRange, min_size=0),
    }, "unknown current domain type")) * "one range (start, end) per dimension",
)

# Array schema payload (array_schema.md; REFERENCE.md §8)
ArraySchemaPayload = Struct(
    "version" / FormatVersion * "format version of the schema (governs every field below)",
    "allows_dups" / since(5, Flag) * "1 = sparse array allows duplicate coordinates",
    "array_type" / ArrayTypeEnum * "dense or sparse",
    "tile_order" / LayoutEnum * "tile order (row- or col-major)",
    "cell_order" / LayoutEnum * "cell order",
    "capacity" / Int64ul * "cells per sparse data tile",
    "coords_filters" / FilterPipeline * "coordinate filters (default of every dimension)",
    "cell_var_offsets_filters" / FilterPipeline * "filters of var-sized offsets tiles",
    "cell_validity_filters" / since(7, FilterPipeline) * "filters of validity tiles",
    "domain" / Domain * "the array's domain",
    "attribute_num" / Rebuild(Int32ul, lambda ctx: len(ctx.attributes)) * "number of attributes",
    "attributes" / Counted(this.attribute_num, Attribute, min_size=13) * "the attributes, in order",
    "label_num" / since(18, Rebuild(Int32ul, lambda ctx: len(ctx.labels))) * "number of dimension labels",
    "labels" / since(18, Counted(this.label_num, DimensionLabel, min_size=31)) * "the dimension labels",
    "enumeration_num" / since(20, Rebuild(Int32ul, lambda ctx: len(ctx.enumerations)))
    * "number of enumerations",
    "enumerations" / since(20, Counted(this.enumeration_num, EnumerationRef, min_size=8))
    * "(name, filename) of each enumeration",
    "current_domain" / since(22, CurrentDomain) * "the current domain",
)


class _SchemaFile(Section):
    def parse(self, data, **contextkw):
        check_not_pre_v1(data, contextkw.get("filename"))
        return super().parse(data, **contextkw)


#: A whole schema file (a generic tile); ``ArraySchema.parse(data, key=...)`` for encrypted arrays.
ArraySchema = _SchemaFile("Array schema", "array_schema.md", generic_tile(ArraySchemaPayload))


def check_not_pre_v1(data, filename=None):
    """Refuse a file written before format version 1 (TileDB < 1.4), which has no generic tile header."""
    if len(data) < 4:
        return  # too short for anything: the parse reports it
    version = int.from_bytes(bytes(data[:4]), "little")
    if version not in KNOWN_VERSIONS and version != 2**32 - 1:  # UINT32_MAX: experimental TileDB builds
        raise FormatError(f"the file starts with {version}, not a format version: it predates format version 1 "
                          f"(TileDB before 1.4 wrote no generic tile header) and is not supported",
                          file=filename, structure="Array schema", offset=0)


@dataclass(frozen=True)
class FieldInfo:
    """What a reader needs of a dimension or attribute."""

    name: str
    datatype: Datatype
    cell_val_num: int
    var: bool
    nullable: bool
    filters: Container


def schema_version(schema) -> int:
    """The format version stored in the schema."""
    return schema.version


def dimensions(schema) -> list[FieldInfo]:
    """The dimensions as fields; an empty dimension pipeline means the coords_filters apply, and a dimension
    of a v1-4 schema has an empty one of its own (feature ``dimension_filters``: what TileDB 2.x's fragments
    in such an array store its dimension tiles with)."""
    domain = schema.domain
    own = schema.get("version") is None or FEATURES["dimension_filters"](schema.version)
    out = []
    for dim in domain.dimensions:
        datatype = Datatype(dim.datatype if dim.get("datatype") is not None else domain.domain_type)
        cell_val_num = dim.cell_val_num if dim.get("cell_val_num") is not None else 1
        filters = dim.filters if dim.get("filters") is not None and dim.filters.filters else \
            schema.coords_filters if own else Container(max_chunk_size=DEFAULT_MAX_CHUNK_SIZE, filters=ListContainer())
        out.append(FieldInfo(dim.name, datatype, cell_val_num, cell_val_num == VAR_NUM, False, filters))
    return out


def _fixed_shape(schema) -> str:
    """What evolution keeps of a schema, in words: array type, tile and cell order, and per dimension its
    name, type, values per cell, domain and tile extent (by which dense tiles and MBRs are read)."""
    def plain(value):
        return None if value is None else np.asarray(value).tolist()

    dims = "; ".join(f"{f.name} {f.datatype.name}" + (" var" if f.var else f" x{f.cell_val_num}") +
                     f" domain {plain(d.get('domain'))} extent {plain(d.get('tile_extent'))}"
                     for f, d in zip(dimensions(schema), schema.domain.dimensions))
    return (f"{ArrayType(schema.array_type).name.lower()} array, tile order {Layout(schema.tile_order).name}, "
            f"cell order {Layout(schema.cell_order).name}, dimensions {dims}")


def evolution_mismatch(schemas: list[tuple]) -> str | None:
    """Why ``[(file name, schema)]``, an array's schemas oldest first, cannot be one array's, or None. Schema
    evolution changes attributes, enumerations and the current domain only (ArraySchemaEvolution): every
    schema has the array type, orders and dimensions of the latest, by which fragments are read."""
    latest_name, latest = schemas[-1]
    for name, schema in schemas[:-1]:
        if _fixed_shape(schema) != _fixed_shape(latest):
            return (f"schema {name} describes a {_fixed_shape(schema)}, but the latest schema {latest_name} a "
                    f"{_fixed_shape(latest)}; evolution cannot change them")
    return None


def attributes(schema) -> list[FieldInfo]:
    """The attributes as fields (nullable is False before v7)."""
    return [FieldInfo(a.name, Datatype(a.datatype), a.cell_val_num, a.cell_val_num == VAR_NUM,
                      bool(a.get("nullable")), a.filters) for a in schema.attributes]


def fill_value(attribute) -> np.ndarray | None:
    """The attribute's fill value as a numpy array of its datatype (uint8 for var-sized ones); None before v6."""
    data = attribute.get("fill_value")
    if data is None:
        return None
    if attribute.cell_val_num == VAR_NUM:
        return np.frombuffer(data, np.uint8)
    return np.frombuffer(data, Datatype(attribute.datatype).numpy_dtype)
