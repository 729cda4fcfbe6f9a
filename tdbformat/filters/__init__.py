"""Filter codecs, one module per filter family, and the pipeline that runs them."""

from . import compression, encryption  # noqa: F401  (registers the codecs)
from .pipeline import CODECS, Codec, FilterContext, filter_tile, unfilter

__all__ = ["CODECS", "Codec", "FilterContext", "filter_tile", "unfilter"]
