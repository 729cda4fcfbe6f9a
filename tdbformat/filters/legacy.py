"""The per-tile codecs of the pre-v1 dialects (prev1.md §2.3, §3.4), by TileDB's old compressor id.

They are the algorithms of the v1+ compression filters without the filter framing: gzip is a zlib stream,
zstd a frame, lz4 a raw block, RLE runs of (value, u16 big-endian run length), bzip2 a stream, double delta
the same layout as v1's; blosc is :mod:`.blosc`. The original size always comes from the tile geometry
or the chunk header, never from the compressed bytes.
"""

from __future__ import annotations

from ..enums import Datatype, LegacyCompressor as C
from ..errors import FormatError
from .blosc import decompress_blosc
from .compression import Bzip2, DoubleDelta, Gzip, Lz4, Rle, Zstd
from .pipeline import FilterContext

__all__ = ["decompress", "BLOSC_INNER"]

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
