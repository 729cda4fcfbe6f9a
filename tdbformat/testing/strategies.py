"""Hypothesis strategies that generate valid TileDB structures for any format version.

Users import these to test their own readers and writers: ``filter_pipelines(version=9)`` draws a
value that ``FilterPipeline.build(value, version=9)`` accepts. Requires ``hypothesis`` (a test extra).
"""

from __future__ import annotations

import numpy as np
from construct import Container
from hypothesis import strategies as st

from ..enums import (
    ArrayType, Compressor, CurrentDomainType, DataOrder, Datatype, EncryptionType, FilterType, Layout,
    WebpInputFormat,
)
from ..versions import KNOWN_VERSIONS

__all__ = [
    "versions", "filter_options", "filters", "filter_pipelines", "tiles", "generic_tiles",
    "typed_values", "domains", "attributes", "dimension_labels", "current_domains", "array_schemas",
]

u8, u16 = st.integers(0, 2**8 - 1), st.integers(0, 2**16 - 1)
u32, u64 = st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
f32 = st.floats(width=32, allow_nan=False).map(lambda x: float(np.float32(x)))
f64 = st.floats(allow_nan=False)

#: any known format version
versions = st.sampled_from(KNOWN_VERSIONS)

_COMPRESSOR = {
    FilterType.GZIP: Compressor.GZIP, FilterType.ZSTD: Compressor.ZSTD, FilterType.LZ4: Compressor.LZ4,
    FilterType.RLE: Compressor.RLE, FilterType.BZIP2: Compressor.BZIP2,
    FilterType.DOUBLE_DELTA: Compressor.DOUBLE_DELTA, FilterType.DICTIONARY: Compressor.DICTIONARY_ENCODING,
    FilterType.DELTA: Compressor.DELTA,
}
# The version from which a compression filter's options carry a reinterpret datatype.
_REINTERPRET_SINCE = {FilterType.DOUBLE_DELTA: 20, FilterType.DELTA: 19}


def filter_options(filter_type: FilterType, version: int):
    """Options of ``filter_type`` as the layout of ``version`` has them."""
    ft = FilterType(filter_type)
    if ft in _COMPRESSOR:
        since = _REINTERPRET_SINCE.get(ft)
        reinterpret = st.sampled_from(Datatype) if since is not None and version >= since else st.none()
        fields = dict(compressor=st.just(_COMPRESSOR[ft]), level=i32)
        if since is not None:
            fields["reinterpret_datatype"] = reinterpret
        return st.fixed_dictionaries(fields).map(Container)
    if ft in (FilterType.BIT_WIDTH_REDUCTION, FilterType.POSITIVE_DELTA):
        return st.builds(Container, max_window_size=u32)
    if ft == FilterType.SCALE_FLOAT:
        return st.builds(Container, scale=f64, offset=f64, byte_width=st.sampled_from([1, 2, 4, 8]))
    if ft == FilterType.WEBP:
        return st.builds(Container, quality=f32, input_format=st.sampled_from(WebpInputFormat),
                         lossless=st.booleans(), y_extent=u16, x_extent=u16, padding=st.binary(min_size=2, max_size=2))
    return st.just(Container())


def filters(version: int):
    return st.sampled_from(FilterType).flatmap(
        lambda ft: filter_options(ft, version).map(lambda opts: Container(type=ft, options=opts)))


def filter_pipelines(version: int, max_filters: int = 6):
    return st.builds(lambda size, fs: Container(max_chunk_size=size, filters=fs),
                     u32, st.lists(filters(version), max_size=max_filters))


_chunk = st.builds(lambda size, md, data: Container(unfiltered_size=size, metadata=md, data=data),
                   u32, st.binary(max_size=64), st.binary(max_size=256))

#: a filtered tile: any chunks (their contents are opaque at this layer)
tiles = st.builds(lambda chunks: Container(chunks=chunks), st.lists(_chunk, max_size=5))


def generic_tiles(version: int):
    """A raw generic tile whose header records ``version``."""
    return st.builds(
        lambda dt, cell, enc, pipe, tile: Container(version=version, datatype=dt, cell_size=cell,
                                                    encryption_type=enc, filter_pipeline=pipe, tile=tile),
        st.sampled_from(Datatype), u64, st.sampled_from(EncryptionType), filter_pipelines(version), tiles)


# --- array schemas (array_schema.md) ---------------------------------------------------------------

_VAR = 2**32 - 1
_INT_TYPES = [Datatype.INT8, Datatype.UINT8, Datatype.INT16, Datatype.UINT16, Datatype.INT32, Datatype.UINT32,
              Datatype.INT64, Datatype.UINT64]
#: datatypes a fixed-size dimension can have (datetimes and times are stored as int64)
_DIM_TYPES = _INT_TYPES + [Datatype.FLOAT32, Datatype.FLOAT64, Datatype.DATETIME_DAY, Datatype.DATETIME_NS,
                           Datatype.TIME_MS]
names = st.text(min_size=1, max_size=12)


def typed_values(datatype: Datatype):
    """One value of ``datatype`` as the schema's typed fields hold it (int64 for datetimes and times)."""
    if datatype in (Datatype.FLOAT32, Datatype.FLOAT64):
        return f32 if datatype == Datatype.FLOAT32 else f64
    info = np.iinfo(np.int64 if datatype.is_datetime or datatype.is_time else datatype.numpy_dtype)
    return st.integers(int(info.min), int(info.max))


def _fixed_dimension(datatype, with_type: bool, version: int):
    pair = st.tuples(typed_values(datatype), typed_values(datatype)).map(sorted)
    extra = dict(datatype=datatype, cell_val_num=1, filters=filter_pipelines(version, 2)) if with_type else {}
    return st.fixed_dictionaries(dict(name=names, domain=pair, tile_extent=st.none() | typed_values(datatype),
                                      **{k: st.just(v) if not isinstance(v, st.SearchStrategy) else v
                                         for k, v in extra.items()})).map(Container)


def _var_dimension(version: int):
    return st.builds(lambda name, pipe: Container(name=name, datatype=Datatype.STRING_ASCII, cell_val_num=_VAR,
                                                  filters=pipe, domain=[], tile_extent=None),
                     names, filter_pipelines(version, 2))


def domains(version: int):
    """A Domain: one domain_type for every dimension before v5, per-dimension types (and strings) from v5."""
    if version < 5:
        return st.sampled_from(_DIM_TYPES).flatmap(lambda dt: st.lists(
            _fixed_dimension(dt, False, version), min_size=1, max_size=3).map(
            lambda dims: Container(domain_type=dt, dimensions=dims)))
    dim = st.sampled_from(_DIM_TYPES).flatmap(lambda dt: _fixed_dimension(dt, True, version)) | _var_dimension(version)
    return st.lists(dim, min_size=1, max_size=3).map(lambda dims: Container(dimensions=dims))


def attributes(version: int):
    """An Attribute with the fields of ``version``; the fill value is one cell of stored bytes."""
    def fill(datatype, cell_val_num):
        size = datatype.size * cell_val_num if cell_val_num != _VAR else None
        return st.binary(min_size=size or 1, max_size=size or 8)

    def build(datatype, cell_val_num):
        fields = dict(name=names, datatype=st.just(datatype), cell_val_num=st.just(cell_val_num),
                      filters=filter_pipelines(version, 2))
        if version >= 6:
            fields["fill_value"] = fill(datatype, cell_val_num)
        if version >= 7:
            fields.update(nullable=st.booleans(), fill_value_validity=st.booleans())
        if version >= 17:
            fields["order"] = st.sampled_from(DataOrder)
        if version >= 20:
            fields["enumeration_name"] = st.just("") | names
        return st.fixed_dictionaries(fields).map(Container)

    return st.tuples(st.sampled_from(Datatype), st.sampled_from([1, 2, 3, _VAR])).flatmap(lambda t: build(*t))


def dimension_labels():
    return st.builds(lambda dim, name, rel, uri, attr, order, dt, cvn, ext: Container(
        dim_index=dim, name=name, relative_uri=rel, uri=uri, label_attr_name=attr, label_order=order,
        label_datatype=dt, label_cell_val_num=cvn, is_external=ext),
        u32, names, st.booleans(), names, names, st.sampled_from(DataOrder), st.sampled_from(Datatype),
        st.sampled_from([1, _VAR]), st.booleans())


def current_domains(domain):
    """An empty current domain, or an NDRectangle with one range per dimension of ``domain``."""
    def range_of(dim):
        if dim.cell_val_num == _VAR:
            return st.builds(lambda a, b: Container(start=a, end=b), st.binary(max_size=6), st.binary(max_size=6))
        return st.builds(lambda a, b: Container(start=a, end=b), typed_values(dim.datatype), typed_values(dim.datatype))
    rect = st.tuples(*[range_of(d) for d in domain.dimensions]).map(list)
    return (st.just(Container(version=0, empty=True, type=None, ndrectangle=None))
            | rect.map(lambda r: Container(version=0, empty=False, type=CurrentDomainType.NDRECTANGLE, ndrectangle=r)))


def array_schemas(version: int):
    """An ArraySchema payload of format ``version`` that ``ArraySchema.build`` accepts."""
    def build(domain):
        fields = dict(
            version=st.just(version), array_type=st.sampled_from(ArrayType),
            tile_order=st.sampled_from([Layout.ROW_MAJOR, Layout.COL_MAJOR]), cell_order=st.sampled_from(Layout),
            capacity=u64, coords_filters=filter_pipelines(version, 2), cell_var_offsets_filters=filter_pipelines(version, 2),
            domain=st.just(domain), attributes=st.lists(attributes(version), min_size=1, max_size=3))
        if version >= 5:
            fields["allows_dups"] = st.booleans()
        if version >= 7:
            fields["cell_validity_filters"] = filter_pipelines(version, 2)
        if version >= 18:
            fields["labels"] = st.lists(dimension_labels(), max_size=2)
        if version >= 20:
            fields["enumerations"] = st.lists(st.builds(lambda n, f: Container(name=n, filename=f), names, names),
                                              max_size=2)
        if version >= 22:
            fields["current_domain"] = current_domains(domain)
        return st.fixed_dictionaries(fields).map(Container)

    return domains(version).flatmap(build)
