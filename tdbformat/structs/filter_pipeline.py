"""Filter pipelines and their typed filter options (filter_pipeline.md; REFERENCE.md §6).

The options of each filter are declared per filter type; ``options_size`` is rebuilt from them and must
match the layout exactly on parse, as TileDB's reader parses the typed layout and not the size.
Version gates follow the version governing the pipeline: the schema's, or the generic tile header's.
"""

from __future__ import annotations

from construct import Bytes, Float32l, Float64l, Flag, Int32sl, Int32ul, Int64ul, Int16ul, Rebuild, this

from ..enums import CompressorEnum, DatatypeEnum, FilterType, FilterTypeEnum, WebpInputFormatEnum
from ..fields import Bounded, Counted, Section, Struct, built_size, switch
from ..versions import since

__all__ = [
    "FilterPipeline", "Filter", "FilterOptions", "NoOptions", "CompressionOptions", "DeltaOptions",
    "DoubleDeltaOptions", "WindowOptions", "FloatScaleOptions", "WebpOptions", "DEFAULT_MAX_CHUNK_SIZE",
]

#: The chunk size TileDB writes into pipelines (and always chunks with, unless the field is 0).
DEFAULT_MAX_CHUNK_SIZE = 65536

NoOptions = Struct()

_compressor_fields = (
    "compressor" / CompressorEnum * "Compressor enum value (not the FilterType: dictionary is 7, delta 8)",
    "level" / Int32sl * "compression level (ignored by LZ4, RLE and dictionary)",
)

CompressionOptions = Struct(*_compressor_fields)

DoubleDeltaOptions = Struct(
    *_compressor_fields,
    "reinterpret_datatype" / since(20, DatatypeEnum) * "datatype the input is reinterpreted as (ANY = none)",
)

DeltaOptions = Struct(
    *_compressor_fields,
    "reinterpret_datatype" / since(19, DatatypeEnum) * "datatype the input is reinterpreted as (ANY = none)",
)

WindowOptions = Struct(
    "max_window_size" / Int32ul * "largest window in bytes",
)

FloatScaleOptions = Struct(
    "scale" / Float64l * "scale factor: stored = round((x - offset) / scale)",
    "offset" / Float64l * "offset subtracted before scaling",
    "byte_width" / Int64ul * "bytes of each stored integer: 1, 2, 4 or 8",
)

WebpOptions = Struct(
    "quality" / Float32l * "lossy quality, 0 to 100",
    "input_format" / WebpInputFormatEnum * "pixel layout of the input",
    "lossless" / Flag * "1 = lossless encoding",
    "y_extent" / Int16ul * "tile extent of the row dimension",
    "x_extent" / Int16ul * "tile extent of the column dimension (in bytes: pixels times channels)",
    "padding" / Bytes(2) * "struct padding of TileDB's FilterConfig (sizeof is 12)",
)

#: The options layout of each filter type.
FilterOptions = {
    FilterType.NONE: NoOptions,
    FilterType.GZIP: CompressionOptions,
    FilterType.ZSTD: CompressionOptions,
    FilterType.LZ4: CompressionOptions,
    FilterType.RLE: CompressionOptions,
    FilterType.BZIP2: CompressionOptions,
    FilterType.DOUBLE_DELTA: DoubleDeltaOptions,
    FilterType.BIT_WIDTH_REDUCTION: WindowOptions,
    FilterType.BITSHUFFLE: NoOptions,
    FilterType.BYTESHUFFLE: NoOptions,
    FilterType.POSITIVE_DELTA: WindowOptions,
    FilterType.AES_256_GCM: NoOptions,
    FilterType.CHECKSUM_MD5: NoOptions,
    FilterType.CHECKSUM_SHA256: NoOptions,
    FilterType.DICTIONARY: CompressionOptions,
    FilterType.SCALE_FLOAT: FloatScaleOptions,
    FilterType.XOR: NoOptions,
    FilterType.DEPRECATED_BITSORT: NoOptions,
    FilterType.WEBP: WebpOptions,
    FilterType.DELTA: DeltaOptions,
}

_options = switch(this.type, FilterOptions, "no options layout for this filter type")

Filter = Struct(
    "type" / FilterTypeEnum * "filter type",
    "options_size" / Rebuild(Int32ul, built_size("options", _options)) * "bytes of the options that follow",
    "options" / Bounded(this.options_size, _options, lambda ctx: f"options of filter {ctx.type.name}")
    * "typed options of this filter type",
)

FilterPipeline = Section("Filter pipeline", "filter_pipeline.md", Struct(
    "max_chunk_size" / Int32ul * "chunk size of the tile (0 = no chunking)",
    "num_filters" / Rebuild(Int32ul, lambda ctx: len(ctx.filters)) * "number of filters",
    "filters" / Counted(this.num_filters, Filter, min_size=5) * "the filters, first applied first",
))
