"""Blosc, the meta-compressor of the pre-v1 dialects (prev1.md §2.3, §3.4): one blosc1 frame per tile or chunk.

A frame is a 16-byte header (:data:`BloscHeader`) then the compressed blocks. Its inner codec is in the top
bits of ``flags``; TileDB's compressor id names which one it asked for (BLOSC is blosclz). Decoding needs the
optional extra ``blosc`` (the maintained ``blosc2`` package, which reads blosc1 frames).
"""

from __future__ import annotations

import numpy as np
from construct import Int8ul, Int32ul

from ..errors import FormatError, UnsupportedError
from ..fields import Struct

__all__ = ["BloscHeader", "INNER_CODECS", "decompress_blosc"]

#: The header of a blosc1 frame (c-blosc ``blosc.h``), all little-endian.
BloscHeader = Struct(
    "version" / Int8ul * "blosc format version (2 for c-blosc 1.x)",
    "versionlz" / Int8ul * "version of the inner codec's format",
    "flags" / Int8ul * "bit 0 byte shuffle, bit 1 memcpyed, bit 2 bit shuffle, bits 5-7 the inner codec",
    "typesize" / Int8ul * "bytes of one value, for the shuffle",
    "nbytes" / Int32ul * "bytes once decompressed",
    "blocksize" / Int32ul * "bytes of one block",
    "cbytes" / Int32ul * "bytes of the whole frame, this header included",
)

#: inner codec number (flags >> 5) -> name, as c-blosc numbers them
INNER_CODECS = {0: "blosclz", 1: "lz4", 2: "snappy", 3: "zlib", 4: "zstd"}


def decompress_blosc(packed, orig_size: int, inner: tuple[str, ...]) -> bytes:
    """The ``orig_size`` bytes of the blosc1 frame ``packed``, whose inner codec must be one of ``inner``."""
    packed = bytes(packed)
    if len(packed) < 16:
        raise FormatError(f"blosc: a frame needs a 16-byte header, only {len(packed)} bytes are left")
    head = BloscHeader.parse(packed[:16])
    codec = INNER_CODECS.get(head.flags >> 5)
    if head.version not in (1, 2):  # c-blosc 1.x, which TileDB 0.5-1.3 linked, writes 2
        raise FormatError(f"blosc: frame format version {head.version} is not blosc1's (1 or 2)")
    if codec not in inner:
        raise FormatError(f"blosc: the frame's inner codec is {codec or head.flags >> 5}, the compressor says "
                          f"{' or '.join(inner)}")
    if head.cbytes != len(packed):
        raise FormatError(f"blosc: the header says the frame is {head.cbytes} bytes, the tile holds {len(packed)}")
    if head.nbytes != orig_size:
        raise FormatError(f"blosc: the frame holds {head.nbytes} bytes, the tile {orig_size}")
    _check_blocks(head, packed)
    try:
        import blosc2
    except ImportError:
        raise UnsupportedError("blosc-compressed tiles need the optional extra 'blosc' "
                               "(pip install 'tdbformat[blosc]', which installs blosc2)") from None
    try:
        out = blosc2.decompress(packed)
    except (RuntimeError, ValueError, TypeError) as e:
        if codec == "snappy":
            raise UnsupportedError("blosc: this blosc2 build has no snappy (BLOSC_SNAPPY tiles)") from None
        raise FormatError(f"blosc data is corrupt: {e}") from None
    if len(out) != orig_size:
        raise FormatError(f"blosc: the frame decompressed to {len(out)} bytes, the tile holds {orig_size}")
    return out


def _check_blocks(head, packed: bytes) -> None:
    """The frame's block table against its size, before C reads it: a memcpyed frame is the header and the
    bytes; otherwise each block's start (an i32 after the header) must point past the table and into the
    frame (the C library reads where they point: a campaign case crashed a worker in it once)."""
    if head.flags & 0x2:
        if head.cbytes != 16 + head.nbytes:
            raise FormatError(f"blosc: a stored (memcpyed) frame of {head.nbytes} bytes is {head.cbytes} long")
        return
    if not head.nbytes:
        return
    if not 0 < head.blocksize <= head.nbytes:
        raise FormatError(f"blosc: a block of {head.blocksize} bytes in a frame of {head.nbytes}")
    blocks = -(-head.nbytes // head.blocksize)
    table = 16 + 4 * blocks
    if table > len(packed):
        raise FormatError(f"blosc: the table of {blocks} block starts runs past the {len(packed)}-byte frame")
    starts = np.frombuffer(packed, "<i4", blocks, 16)
    if np.any(starts < table) or np.any(starts >= len(packed)):
        raise FormatError(f"blosc: a block starts outside the frame's {len(packed)} bytes (after its table, at "
                          f"{table})")
