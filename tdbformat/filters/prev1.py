"""The per-tile codecs of the pre-v1 dialects (prev1.md §2.3, §3.4), by TileDB's old compressor id.

They are the algorithms of the v1+ compression filters without the filter framing: gzip is a zlib stream,
zstd a frame, lz4 a raw block, RLE runs of (value, u16 big-endian run length), bzip2 a stream, double delta
the same layout as v1's; blosc is :mod:`.blosc`. The original size always comes from the tile geometry
or the chunk header, never from the compressed bytes.
"""

from __future__ import annotations

import numpy as np

from ..enums import Datatype, LegacyCompressor as C
from ..errors import FormatError
from .blosc import decompress_blosc
from .compression import Bzip2, DoubleDelta, Gzip, Lz4, Rle, Zstd
from .pipeline import FilterContext

__all__ = ["decompress", "decompress_coords_rle", "BLOSC_INNER"]

#: blosc compressor id -> the inner codecs its frames may carry
BLOSC_INNER = {C.BLOSC: ("blosclz",), C.BLOSC_LZ4: ("lz4",), C.BLOSC_LZ4HC: ("lz4",),
               C.BLOSC_SNAPPY: ("snappy",), C.BLOSC_ZLIB: ("zlib",), C.BLOSC_ZSTD: ("zstd",)}
#: the most any codec here expands (RLE: 65535 one-byte values from 3 bytes is 21845:1), so that a size
#: read from the file is refused before a buffer of it is allocated
_MAX_RATIO = 65536
_PLAIN = {C.GZIP: Gzip(), C.ZSTD: Zstd(), C.LZ4: Lz4(), C.BZIP2: Bzip2(), C.RLE: Rle(), C.DOUBLE_DELTA: DoubleDelta()}


def decompress(compressor: C, packed, orig_size: int, datatype: Datatype, value_size: int) -> bytes:
    """``orig_size`` bytes of ``packed``, compressed with ``compressor``; ``value_size`` is RLE's value
    (the cell for fixed attributes, one value for var data and offsets), ``datatype`` double delta's."""
    compressor = C(compressor)
    if compressor != C.NO_COMPRESSION and orig_size > _MAX_RATIO * len(packed) + (1 << 20):
        raise FormatError(f"{compressor.name}: {len(packed)} compressed bytes cannot hold the {orig_size} the "
                          f"tile claims (more than {_MAX_RATIO}:1)")
    if compressor == C.NO_COMPRESSION:
        out = bytes(packed)
    elif compressor in BLOSC_INNER:
        out = decompress_blosc(packed, orig_size, BLOSC_INNER[compressor])
    else:
        ctx = FilterContext(options={}, datatype=datatype, version=1, cell_size=value_size, limit=orig_size)
        out = _PLAIN[compressor].decompress(ctx, bytes(packed), orig_size)
    if len(out) != orig_size:
        raise FormatError(f"{compressor.name}: {len(out)} bytes where the tile holds {orig_size}")
    return out


def decompress_coords_rle(packed, cells: int, value_size: int, dim_num: int, col_major: bool) -> bytes:
    """A 0.x coordinate tile compressed with RLE (utils.cc ``RLE_compress_coords_row``/``_col``): an i64
    coordinate count, then per dimension runs of (value, u16 big-endian length) covering every cell, except
    the last dimension (row-major cell order; the first for column-major), whose values follow (precede) as
    they are. Returns the coordinates cell-major (d1 d2 d1 d2 ...)."""
    packed = bytes(packed)
    if len(packed) < 8 or int.from_bytes(packed[:8], "little", signed=True) != cells:
        raise FormatError(f"RLE coordinates: the tile must start with its coordinate count {cells}")
    body, plain = packed[8:], cells * value_size
    if len(body) < plain:
        raise FormatError(f"RLE coordinates: {len(body)} bytes cannot hold the {plain} of the plain dimension")
    raw, runs = (body[:plain], body[plain:]) if col_major else (body[len(body) - plain:], body[:len(body) - plain])
    if len(runs) % (value_size + 2):
        raise FormatError(f"RLE coordinates: {len(runs)} bytes are not whole runs of {value_size + 2} bytes")
    table = np.frombuffer(runs, np.dtype([("value", f"V{value_size}"), ("run_length", ">u2")]))
    ends = np.cumsum(table["run_length"].astype(np.int64))
    if len(ends) and ends[-1] != cells * (dim_num - 1) or not len(ends) and dim_num > 1 and cells:
        raise FormatError(f"RLE coordinates: the runs cover {int(ends[-1]) if len(ends) else 0} values, not "
                          f"{cells} for each of {dim_num - 1} dimensions")
    if dim_num > 1 and not np.all(np.isin(np.arange(1, dim_num) * cells, ends)):
        raise FormatError("RLE coordinates: a run crosses from one dimension into the next")
    expanded = np.repeat(table["value"], table["run_length"].astype(np.int64)).reshape(dim_num - 1, cells)
    plain_dim = np.frombuffer(raw, f"V{value_size}").reshape(1, cells)
    dims = np.concatenate([plain_dim, expanded] if col_major else [expanded, plain_dim])
    return np.ascontiguousarray(dims.T).tobytes()
