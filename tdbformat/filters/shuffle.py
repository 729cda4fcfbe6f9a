"""Byteshuffle and bitshuffle (REFERENCE.md §7.1, §7.2), as blosc2 lays them out, in numpy.

Both pass earlier metadata through after their header (``num_parts: u32``, one u32 size per part) and
keep the size of the data. Byteshuffle groups the k-th byte of every element of a part together; bytes
of a trailing partial element stay in place. Bitshuffle cuts each part into a multiple of 8 bytes and a
remainder, and shuffles a sub-part only if it is whole elements and a multiple of 8 bytes, in blocks
of 8192 bytes: each block's elements, rounded down to a multiple of 8, are transposed bit by bit
(kiyo-masui/bitshuffle), the rest of the block is copied.
"""

from __future__ import annotations

import numpy as np
from construct import Int32ul, this

from ..enums import FilterType
from ..fields import Counted, Struct
from .pipeline import Codec, Header, joined, parts_header, register, split_parts

__all__ = ["PartSizes", "byteshuffle", "byteunshuffle", "bitshuffle", "bitunshuffle"]

#: Header of byteshuffle, bitshuffle, XOR (and, with output sizes, float scale and WebP).
PartSizes = Struct(
    "num_parts" / Int32ul * "number of parts",
    "part_sizes" / Counted(this.num_parts, Int32ul, 4) * "bytes of each part",
)

_BLOCK = 8192  # BSHUF_TARGET_BLOCK_SIZE_B


def byteshuffle(part, size: int, inverse: bool = False) -> np.ndarray:
    """blosc2_shuffle (``inverse``: unshuffle) of one part with elements of ``size`` bytes."""
    buf = np.frombuffer(part, np.uint8)
    n = len(buf) // size
    if size == 1 or n == 0:
        return buf
    out = buf.copy()
    whole = out[:n * size]
    if size in (2, 4, 8):  # shifts on whole words: several times faster than a strided transpose
        word = np.dtype(f"<u{size}")
        if inverse:
            planes = buf[:n * size].reshape(size, n)
            words = planes[0].astype(word)
            for j in range(1, size):
                words |= planes[j].astype(word) << word.type(8 * j)
            whole[:] = words.view(np.uint8)
        else:
            words, planes = buf[:n * size].view(word), whole.reshape(size, n)
            for j in range(size):
                planes[j] = words >> word.type(8 * j)
    else:
        whole[:] = buf[:n * size].reshape((size, n) if inverse else (n, size)).T.reshape(-1)
    return out


def byteunshuffle(part, size: int) -> np.ndarray:
    return byteshuffle(part, size, inverse=True)


_M1, _M2, _M3 = np.uint64(0x00AA00AA00AA00AA), np.uint64(0x0000CCCC0000CCCC), np.uint64(0x00000000F0F0F0F0)
_S1, _S2, _S3 = np.uint64(7), np.uint64(14), np.uint64(28)


def _transpose8x8(words: np.ndarray) -> np.ndarray:
    """Transpose the 8x8 bit matrix in each u64 (bitshuffle's TRANS_BIT_8X8): its own inverse."""
    x = words.copy()
    for mask, shift in ((_M1, _S1), (_M2, _S2), (_M3, _S3)):
        t = (x ^ (x >> shift)) & mask
        x ^= t ^ (t << shift)
    return x


def _bits(blocks: np.ndarray, size: int, inverse: bool) -> np.ndarray:
    """Bit-(un)shuffle ``blocks`` (k, n*size bytes, n a multiple of 8) to the same shape."""
    k, nbytes = blocks.shape
    n = nbytes // size
    if not inverse:
        planes = blocks.reshape(k, n, size).transpose(0, 2, 1)  # [byte j][element i]
        words = np.ascontiguousarray(planes).view("<u8")  # 8 elements' byte j per word
        bits = _transpose8x8(words).view(np.uint8).reshape(k, size, n // 8, 8)
        return np.ascontiguousarray(bits.transpose(0, 1, 3, 2)).reshape(k, nbytes)  # [byte j][bit][i / 8]
    bits = blocks.reshape(k, size, 8, n // 8).transpose(0, 1, 3, 2)
    words = np.ascontiguousarray(bits).view("<u8").reshape(k, size, n // 8)
    planes = _transpose8x8(words).view(np.uint8).reshape(k, size, n)
    return np.ascontiguousarray(planes.transpose(0, 2, 1)).reshape(k, nbytes)


def bitshuffle(part, size: int, inverse: bool = False) -> np.ndarray:
    """Bitshuffle (``inverse``: unshuffle) of one sub-part in 8192-byte blocks, as blosc2_bitshuffle."""
    buf = np.frombuffer(part, np.uint8)
    out = buf.copy()
    full = len(buf) // _BLOCK * _BLOCK
    if full:
        out[:full] = _bits(buf[:full].reshape(-1, _BLOCK), size, inverse).reshape(-1)
    tail = len(buf) - full
    shuffled = (tail // size) // 8 * 8 * size
    if shuffled:
        out[full:full + shuffled] = _bits(buf[full:full + shuffled].reshape(1, -1), size, inverse).reshape(-1)
    return out


def bitunshuffle(part, size: int) -> np.ndarray:
    return bitshuffle(part, size, inverse=True)


class _Shuffle(Codec):
    metadata = PartSizes

    def forward(self, ctx, metadata, data):
        parts = self.parts(data)
        size = ctx.datatype.size
        out = [self.shuffle(p, size) if self.shuffles(len(p), size) else p for p in parts]
        return [parts_header([len(p) for p in parts]), *metadata], [joined(out)]

    def reverse(self, ctx, metadata, data):
        head = Header(metadata, self.name)
        size = ctx.datatype.size
        parts = split_parts(data, head.parts(), self.name)
        out = [self.shuffle(p, size, True) if self.shuffles(len(p), size) else p for p in parts]
        return head.rest(), joined(out)


@register(FilterType.BYTESHUFFLE)
class Byteshuffle(_Shuffle):
    name = "BYTESHUFFLE"
    shuffle = staticmethod(byteshuffle)

    def parts(self, data):
        return data

    def shuffles(self, nbytes, size):
        return True


@register(FilterType.BITSHUFFLE)
class Bitshuffle(_Shuffle):
    name = "BITSHUFFLE"
    shuffle = staticmethod(bitshuffle)

    def parts(self, data):
        # each part becomes a multiple of 8 bytes and, if any, the remainder (compute_parts)
        out = []
        for p in data:
            cut = len(p) - len(p) % 8
            out += [p[:cut], p[cut:]] if len(p) % 8 else [p]
        return out

    def shuffles(self, nbytes, size):
        return nbytes % size == 0 and nbytes % 8 == 0
