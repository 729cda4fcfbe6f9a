"""Filter codecs, one module per filter family, and the pipeline that runs them."""

# importing the modules registers their codecs
from . import bitwidth, checksum, compression, encryption, float_scale, noop, shuffle, strings, webp, xor  # noqa: F401
from .pipeline import (CODECS, STRING_CODECS, Codec, FilterContext, FilterPlan, chunk_sizes, filter_tile,
                       get_threads, set_threads, skips_offsets, unfilter, unfilter_strings, uses_chunking,
                       var_chunk_sizes)
from .strings import set_pyarrow

__all__ = ["CODECS", "STRING_CODECS", "Codec", "FilterContext", "filter_tile", "unfilter", "unfilter_strings",
           "chunk_sizes", "var_chunk_sizes", "skips_offsets", "uses_chunking", "set_threads", "get_threads",
           "set_pyarrow", "FilterPlan"]
