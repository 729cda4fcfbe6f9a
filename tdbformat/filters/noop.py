"""The no-op filter, FILTER_NONE (TileDB-Py's ``NoOpFilter``): data and metadata pass through unchanged, with
no header of its own (``noop_filter.cc``)."""

from __future__ import annotations

from ..enums import FilterType
from .pipeline import Codec, nonempty, register

__all__ = ["NoOp"]


@register(FilterType.NONE)
class NoOp(Codec):
    def forward(self, ctx, metadata, data):
        return nonempty(metadata), nonempty(data)

    def reverse(self, ctx, metadata, data):
        return metadata, data
