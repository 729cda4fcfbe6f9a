"""Legacy coordinate tiles: ``__coords.tdb`` of format v1-4 holds every dimension in one tile
(REFERENCE.md §4.3).

From v2 the coordinates are split by dimension before filtering (``x1..xN y1..yN``); v1 split them only
when the coordinate pipeline has a compressor and otherwise stored them zipped (``x1 y1 x2 y2 ...``).
The tile's datatype is the domain type and its cell size that of a whole coordinate tuple.
"""

from __future__ import annotations

import numpy as np

from ..enums import FilterType
from ..errors import FormatError
from ..versions import FEATURES

__all__ = ["coords_zipped", "unzip_coords", "zip_coords"]

_COMPRESSORS = {FilterType.GZIP, FilterType.ZSTD, FilterType.LZ4, FilterType.RLE, FilterType.BZIP2,
                FilterType.DOUBLE_DELTA}


def coords_zipped(version: int, pipeline) -> bool:
    """Whether a v1-4 coordinate tile stores zipped coordinates."""
    return FEATURES["zipped_coordinates"](version) and not any(
        FilterType(f["type"]) in _COMPRESSORS for f in pipeline["filters"])


def unzip_coords(data, dtype, ndim: int, zipped: bool) -> list[np.ndarray]:
    """One array per dimension from an unfiltered coordinate tile."""
    values = np.frombuffer(data, dtype)
    if len(values) % ndim:
        raise FormatError(f"a coordinate tile of {len(values)} values is not whole {ndim}-dimensional coordinates")
    table = values.reshape(-1, ndim).T if zipped else values.reshape(ndim, -1)
    return list(table)


def zip_coords(columns, zipped: bool) -> bytes:
    """The unfiltered coordinate tile of per-dimension arrays (the inverse of :func:`unzip_coords`)."""
    table = np.stack([np.asarray(c) for c in columns])
    return (table.T if zipped else table).tobytes()
