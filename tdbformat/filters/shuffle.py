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
    x, t = words.copy(), np.empty_like(words)
    for mask, shift in ((_M1, _S1), (_M2, _S2), (_M3, _S3)):
        np.right_shift(x, shift, out=t)
        t ^= x
        t &= mask
        x ^= t
        t <<= shift
        x ^= t
    return x


def _planes(values: np.ndarray, size: int) -> np.ndarray:
    """(..., n) words of ``size`` bytes to (..., size, n) byte planes, plane j holding byte j of each."""
    planes = np.empty(values.shape[:-1] + (size, values.shape[-1]), np.uint8)
    for j in range(size):
        planes[..., j, :] = values >> values.dtype.type(8 * j)
    return planes


def _words(planes: np.ndarray, word) -> np.ndarray:
    """The inverse of :func:`_planes`: (..., size, n) byte planes to (..., n) words."""
    out = planes[..., 0, :].astype(word)
    for j in range(1, planes.shape[-2]):
        out |= planes[..., j, :].astype(word) << word.type(8 * j)
    return out


def _bits(blocks: np.ndarray, size: int, inverse: bool) -> np.ndarray:
    """Bit-(un)shuffle ``blocks`` (k, n*size bytes, n a multiple of 8) to the same shape.

    The output is byte plane j (byte j of every element), bit plane b of it, 8 elements per byte: a
    byte transpose, an 8x8 bit transpose per 8 bytes of a plane, and a byte transpose of the results.
    """
    k, nbytes = blocks.shape
    n = nbytes // size
    element = np.dtype(f"<u{size}")
    if not inverse:
        planes = _planes(blocks.view(element), size) if size > 1 else blocks.reshape(k, 1, n)
        bits = _transpose8x8(planes.view("<u8"))  # (k, size, n / 8)
        return _planes(bits, 8).reshape(k, nbytes)
    bits = _words(blocks.reshape(k, size, 8, n // 8), np.dtype("<u8"))
    planes = _transpose8x8(bits).view(np.uint8)  # (k, size, n)
    return (_words(planes, element).view(np.uint8) if size > 1 else planes).reshape(k, nbytes)


def bitshuffle(part, size: int, inverse: bool = False) -> np.ndarray:
    """Bitshuffle (``inverse``: unshuffle) of one sub-part in 8192-byte blocks, as blosc2_bitshuffle."""
    buf = np.frombuffer(part, np.uint8)
    full = len(buf) // _BLOCK * _BLOCK
    shuffled = (len(buf) - full) // size // 8 * 8 * size
    pieces = [_bits(buf[:full].reshape(-1, _BLOCK), size, inverse).reshape(-1)] if full else []
    if shuffled:
        pieces.append(_bits(buf[full:full + shuffled].reshape(1, -1), size, inverse).reshape(-1))
    pieces.append(buf[full + shuffled:])  # the elements of the last block that are not a multiple of 8
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


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
