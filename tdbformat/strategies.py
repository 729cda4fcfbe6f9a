"""Hypothesis strategies that generate valid TileDB structures for any format version.

Users import these to test their own readers and writers: ``filter_pipelines(version=9)`` draws a
value that ``FilterPipeline.build(value, version=9)`` accepts. Requires ``hypothesis`` (a test extra).
"""

from __future__ import annotations

import numpy as np
from construct import Container
from hypothesis import strategies as st

from .enums import Compressor, Datatype, EncryptionType, FilterType, WebpInputFormat
from .versions import KNOWN_VERSIONS

__all__ = ["versions", "filter_options", "filters", "filter_pipelines", "tiles", "generic_tiles"]

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
