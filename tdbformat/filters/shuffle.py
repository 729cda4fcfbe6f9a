"""Byteshuffle and bitshuffle (REFERENCE.md §7.1, §7.2), as blosc2 lays them out, in numpy.

Both pass earlier metadata through after their header (``num_parts: u32``, one u32 size per part) and
keep the size of the data. Byteshuffle groups the k-th byte of every element of a part together; bytes
of a trailing partial element stay in place. Bitshuffle cuts each part into a multiple of 8 bytes and a
remainder, and shuffles a sub-part only if it is whole elements and a multiple of 8 bytes, in blocks
of 8192 bytes: each block's elements, rounded down to a multiple of 8, are transposed bit by bit
(kiyo-masui/bitshuffle), the rest of the block is copied.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading

import numpy as np
from construct import Int32ul, this

from ..enums import FilterType
from ..fields import Counted, Struct
from .pipeline import Codec, Header, forward_stacked, joined, parts_header, register, reverse_stacked, split_parts

__all__ = ["PartSizes", "byteshuffle", "byteunshuffle", "bitshuffle", "bitunshuffle"]

#: Header of byteshuffle, bitshuffle, XOR (and, with output sizes, float scale and WebP).
PartSizes = Struct(
    "num_parts" / Int32ul * "number of parts",
    "part_sizes" / Counted(this.num_parts, Int32ul, 4) * "bytes of each part",
)

_BLOCK = 8192  # BSHUF_TARGET_BLOCK_SIZE_B
_GROUP = 8 * _BLOCK  # bitshuffled at a time: TileDB's chunk size, and bounds the work buffers a thread keeps


def _rows(part) -> np.ndarray:
    """A part as a (1, n) u8 array, or rows of equal parts (k, n) as they are."""
    return part if isinstance(part, np.ndarray) and part.ndim == 2 else np.frombuffer(part, np.uint8)[None]


def byteshuffle(part, size: int, inverse: bool = False, out=None) -> np.ndarray:
    """blosc2_shuffle (``inverse``: unshuffle) of one part with elements of ``size`` bytes, or of each row of
    a (k, n) array of parts, into ``out`` if given (rows of the same shape; bytes of one byte left as they
    are); the result has the input's shape."""
    rows = _rows(part)
    k, n = rows.shape[0], rows.shape[1] // size
    if size == 1 or n == 0:
        return rows if part is rows else rows[0]
    out = np.empty_like(rows) if out is None else out
    out[:, n * size:] = rows[:, n * size:]  # a trailing partial element stays in place
    if _TRANSPOSE is not None and size in _UNITS and (n % 8 == 0 or not inverse):
        if inverse:
            _unshuffled(rows[:, :n * size], size, out[:, :n * size], _TRANSPOSE)
        else:  # the library's transpose is the shuffle of a row (64 MiB of int64: 4.3 ms against 17)
            for row, into in zip(rows[:, :n * size], out[:, :n * size]):
                into[:] = _TRANSPOSE(row.view(_UNITS[size])).view(np.uint8)
        return out if part is rows else out[0]
    # a copy per byte plane, between a contiguous row and a strided column of the elements: several times
    # faster than one strided transpose or shifts on whole words
    planes, elements = out[:, :n * size].reshape(k, size, n), out[:, :n * size].reshape(k, n, size)
    source = rows[:, :n * size].reshape((k, size, n) if inverse else (k, n, size))
    for j in range(size):
        if inverse:
            elements[:, :, j] = source[:, j]
        else:
            planes[:, j] = source[:, :, j]
    return out if part is rows else out[0]


#: the unsigned integer of each element size the SIMD byte transpose takes (:func:`_byte_transpose`)
_UNITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _unshuffled(rows: np.ndarray, size: int, out: np.ndarray, transpose) -> None:
    """Byte-unshuffle of (k, size * n) ``rows`` (n a multiple of 8) into ``out`` through a SIMD byte transpose
    of u64 words (``transpose``, :func:`_byte_transpose`) between two copies that move whole words: about half
    the time of a strided copy per byte plane (64 MiB of int64: 9 ms against 17). Byte r of word q of plane p
    is byte p of element 8q + r: the words are put in (q, p) order, transposed to (r, q, p) bytes, and the
    elements of ``size`` bytes put from (r, q) to (q, r) order."""
    k, m = rows.shape[0], rows.shape[1] // size // 8
    words = np.ascontiguousarray(rows.view(np.uint64).reshape(k, size, m).transpose(0, 2, 1))
    grouped = transpose(words.reshape(-1)).view(_UNITS[size])
    out.view(_UNITS[size]).reshape(k, m, 8)[:] = grouped.reshape(8, k, m).transpose(1, 2, 0)


def _byte_transpose():
    """bitshuffle's SIMD byte transpose (the ``fast`` extra; ``trans_byte_elem_SSE`` or ``_NEON``: byte j of
    every 2-, 4- or 8-byte element gathered, in order, a byteshuffle of the whole array), or None where the
    library, the instruction set or the function is missing, or gives other bytes than the definition."""
    if _LIBRARY is None:
        return None
    try:  # 8 elements of each size: byte j of element i is size * i + j
        ext = getattr(_LIBRARY, "ext", None) or importlib.import_module("bitshuffle.ext")
        name = "trans_byte_elem_SSE" if ext.using_SSE2() else "trans_byte_elem_NEON" if ext.using_NEON() else ""
        fn = getattr(ext, name, None)
        ok = fn is not None and all(
            fn(np.arange(8 * size, dtype=np.uint8).view(unit)).view(np.uint8).tolist() ==
            [size * i + j for j in range(size) for i in range(8)] for size, unit in _UNITS.items())
    except Exception:  # (an older or newer library whose test hook takes other arguments)
        ok = False
    return fn if ok else None


def byteunshuffle(part, size: int) -> np.ndarray:
    return byteshuffle(part, size, inverse=True)


# Bitshuffle as a permutation of bit addresses. Shuffled, a block of n elements of s bytes (n a multiple of 8)
# is 8*s rows of n/8 bytes: row (j, i) holds bit i of byte j of each element. Cut into u64 words (the rows
# of a short block zero-padded to whole words), bit e of byte t of word w of row (j, i) is bit i of byte j of
# element 64*w + 8*t + e: the shuffle only reorders the bits of a bit's address, shuffled (from the lowest)
# e t w i j, unshuffled i j e t w. A bit's place in its u64 (the low 6 address bits) is changed by butterfly
# swaps between the two halves of a buffer, whose 6 ufuncs each make one contiguous pass; the word index is
# reordered by transposing copies between swaps, which move whole u64 runs. (Strided views instead of the
# copies, or byte-granular copies, cost numpy several times more.)
_SWAPS = [(np.array(1 << bit, np.uint64), np.array(mask, np.uint64)) for bit, mask in enumerate(
    [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F,
     0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0x00000000FFFFFFFF])]  # 0-d arrays: cheaper ufunc calls than scalars


def _transpose(sizes: list, axes: list) -> tuple:
    """(shape, axes, new shape) of a transposing copy, with source axes that stay neighbours merged."""
    runs = []
    for a in axes:
        if runs and runs[-1][-1] + 1 == a:
            runs[-1].append(a)
        else:
            runs.append([a])
    order = sorted(range(len(runs)), key=lambda r: runs[r][0])
    shape = tuple(int(np.prod([sizes[a] for a in runs[r]])) for r in order)
    axes = tuple(order.index(r) for r in range(len(runs)))
    return shape, axes, tuple(shape[a] for a in axes)


@functools.lru_cache(maxsize=64)
def _plan(blocks: int, size: int, words: int, shuffle: bool) -> tuple:
    """(Un)shuffling (blocks, size, 8, words) u64 words: ("copy", shape, axes, new shape) and ("swap", bit) steps.

    A swap exchanges an address bit below 6 with the top axis of the word index; the copy before it brings
    the axis it needs to the top (a chain of swaps moves a bit within the word through the top axis). The
    shuffle runs the unshuffle backwards: swaps are their own inverse.
    """
    planes = size.bit_length() - 1  # address bits of the byte plane j
    sizes = {"k": blocks, "w": words}  # the block and the word of a row; the other axes are bits
    axes = ["k", *(f"j{r}" for r in reversed(range(planes))), "i2", "i1", "i0", "w"]  # word index, outermost first
    inword = ["e0", "e1", "e2", "t0", "t1", "t2"]  # address bits 0-5 (a bit's place in its word), shuffled
    want = ["i0", "i1", "i2", *(f"j{r}" for r in range(planes)), *(f"e{r}" for r in range(3 - planes))]  # unshuffled
    # a chain of swaps per bit that leaves the word: e_r swapped out for i_r may first move to a higher bit
    chains = [[(3 + r, f"j{r}")] for r in range(planes)]
    for r in range(3):
        chains.append([(r, f"i{r}")] + ([(want.index(f"e{r}"), f"e{r}")] if f"e{r}" in want else []))
    # swapped out on top of each other, the bits that leave stack up in the order of the unshuffled word index
    order = [*(f"e{r}" for r in range(3 - planes, 3)), "t0", "t1", "t2"]
    chains.sort(key=lambda chain: order.index(inword[chain[-1][0]]))
    steps = []

    def copy(new):
        steps.append(("copy", *_transpose([sizes.get(a, 2) for a in axes], [axes.index(a) for a in new])))
        axes[:] = new

    upcoming = [chain[0][1] for chain in chains]
    for chain in chains:
        top = upcoming.pop(0)
        copy([top, *(a for a in axes if a not in (top, *upcoming, "k", "w")), *upcoming, "k", "w"])
        for bit, label in chain:
            steps.append(("swap", bit))
            axes[0], inword[bit] = inword[bit], label
    copy(["k", "w", *axes[:-2]])
    if shuffle:  # the unshuffle backwards, each copy from its new shape back
        steps = [("copy", s[3], tuple(map(s[2].index, range(len(s[2])))), s[1]) if s[0] == "copy" else s
                 for s in reversed(steps)]
    return tuple(steps)


class _Kernel:
    """A plan bound to work buffers of its own, with the views its steps use made once (per call, they would
    cost a sixth more)."""

    def __init__(self, steps, n: int):
        work = np.empty((2, n), np.uint64)
        self.scratch = np.empty(n // 2, np.uint64)
        self.ops, copies, last = [], 0, sum(step[0] == "copy" for step in steps) - 1
        for kind, *args in steps:
            x = work[(copies - 1) % 2]  # the buffer the last copy filled
            if kind == "swap":
                self.ops.append((x[:n // 2], x[n // 2:], *_SWAPS[args[0]]))
            else:  # the first copy reads the input and the last one writes the output: their views come per call
                shape, axes, new = args
                self.ops.append((x.reshape(shape).transpose(axes) if copies else None,
                                 work[copies % 2].reshape(new) if copies < last else None, shape, axes, new))
                copies += 1

    def __call__(self, words: np.ndarray, out: np.ndarray):
        t = self.scratch
        for op in self.ops:
            if len(op) == 4:  # a swap
                a, b, shift, mask = op
                np.right_shift(a, shift, t)
                np.bitwise_xor(t, b, t)
                np.bitwise_and(t, mask, t)
                np.bitwise_xor(b, t, b)
                np.left_shift(t, shift, t)
                np.bitwise_xor(a, t, a)
            else:
                src, dst, shape, axes, new = op
                dst = out.reshape(new) if dst is None else dst
                dst[...] = words.reshape(shape).transpose(axes) if src is None else src


_local = threading.local()  # kernels per thread: their buffers are not shared


def _kernel(blocks: int, size: int, words: int, shuffle: bool) -> _Kernel:
    kernels = vars(_local).setdefault("kernels", {})
    key = (blocks, size, words, shuffle)
    if key not in kernels:
        if len(kernels) >= 16:  # a tile's last chunk may have a shape of its own
            kernels.clear()
        kernels[key] = _Kernel(_plan(*key), blocks * size * 8 * words)
    return kernels[key]


def _bits(blocks: np.ndarray, size: int, inverse: bool, out: np.ndarray):
    """Bit-(un)shuffle ``blocks`` (k, n*size bytes, n a multiple of 8) into ``out`` of the same shape."""
    k, nbytes = blocks.shape
    m = nbytes // size // 8  # bytes of a row
    words = -(-m // 8)
    kernel = _kernel(k, size, words, not inverse)
    if m % 8 == 0:
        kernel(blocks.reshape(-1).view(np.uint64), out.reshape(-1).view(np.uint64))
        return
    rows, elements = np.zeros((k, size * 8, words * 8), np.uint8), np.zeros((k, words * 64 * size), np.uint8)
    if inverse:
        rows[:, :, :m] = blocks.reshape(k, size * 8, m)
        kernel(rows.reshape(-1).view(np.uint64), elements.reshape(-1).view(np.uint64))
        out[...] = elements[:, :nbytes]
    else:
        elements[:, :nbytes] = blocks
        kernel(elements.reshape(-1).view(np.uint64), rows.reshape(-1).view(np.uint64))
        out[...] = rows[:, :, :m].reshape(k, nbytes)


def bitshuffle(part, size: int, inverse: bool = False, out=None) -> np.ndarray:
    """Bitshuffle (``inverse``: unshuffle) of one sub-part in 8192-byte blocks, as blosc2_bitshuffle, or of
    each row of a (k, n) array of sub-parts; the result has the input's shape. ``out``: rows of whole blocks
    the numpy kernel may write into (the library makes its own).

    ``size`` is 1, 2, 4 or 8, the sizes of TileDB's datatypes.
    """
    rows = _rows(part)
    if rows.shape[1] % _BLOCK:  # rows of whole blocks shuffle as one part; the others one by one
        out = np.stack([_bitshuffle(row, size, inverse) for row in rows])
    else:
        flat = None if out is None else out.reshape(-1)
        out = _bitshuffle(rows.reshape(-1), size, inverse, out=flat).reshape(rows.shape)
    return out if part is rows else out[0]


def _library():
    """kiyo-masui's bitshuffle (the ``fast`` extra), or None. Its blocks are ours: 8192 bytes of whole elements,
    a last block of what is left rounded down to 8 elements, the rest copied (bshuf_bitshuffle); the tests
    check that it gives the numpy kernel's bytes. Its OpenMP team is held to one thread: chunks run in our
    pool, and a second team's spinning costs it ten times its speed on a loaded machine. The variable is read
    once, when its own (vendored) libgomp loads, so it is put back straight after."""
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        return importlib.import_module("bitshuffle")
    except ImportError:
        return None
    finally:
        if saved is None:
            del os.environ["OMP_NUM_THREADS"]
        else:
            os.environ["OMP_NUM_THREADS"] = saved


_LIBRARY = _library()
_TRANSPOSE = _byte_transpose()


def _bitshuffle(buf: np.ndarray, size: int, inverse: bool, library=_LIBRARY, out=None) -> np.ndarray:
    if library is not None:
        whole = len(buf) // size * size
        done = (library.bitunshuffle if inverse else library.bitshuffle)(buf[:whole].view(f"<u{size}"), 0).view(
            np.uint8)
        if whole == len(buf):  # the usual case: its output is ours, without a copy
            return done
        return np.concatenate([done, buf[whole:]])
    full = len(buf) // _BLOCK * _BLOCK
    end = full + (len(buf) - full) // size // 8 * 8 * size
    out = np.empty_like(buf) if out is None else out
    for start in range(0, full, _GROUP):
        stop = min(start + _GROUP, full)
        _bits(buf[start:stop].reshape(-1, _BLOCK), size, inverse, out[start:stop].reshape(-1, _BLOCK))
    if end > full:
        _bits(buf[full:end].reshape(1, -1), size, inverse, out[full:end].reshape(1, -1))
    out[end:] = buf[end:]  # the elements of the last block that are not a multiple of 8
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

    def reverse_many(self, ctx, chunks):
        size = ctx.datatype.size
        return reverse_stacked(self, ctx, chunks, lambda rows, out: self.shuffle(rows, size, True, out)
                               if self.shuffles(rows.shape[1], size) else rows)

    def forward_many(self, ctx, chunks):
        size = ctx.datatype.size
        if any(len(self.parts(parts)) != len(parts) for _, parts in chunks):  # bitshuffle cuts a part in two
            return super().forward_many(ctx, chunks)
        return forward_stacked(self, ctx, chunks, lambda rows: self.shuffle(rows, size)
                               if self.shuffles(rows.shape[1], size) else rows)


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
