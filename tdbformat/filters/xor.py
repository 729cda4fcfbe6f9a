"""XOR filter (REFERENCE.md §7.8; filters/xor.md): each value XOR the one before, as signed integers.

The header is ``num_parts: u32`` and the part sizes; earlier metadata follows. The first value is kept,
the size is unchanged, and the next filter sees INT8/16/32/64 by the input's value size.
"""

from __future__ import annotations

import numpy as np

from ..enums import Datatype, FilterType
from ..errors import FormatError
from .pipeline import Codec, Header, forward_stacked, parts_header, register, reverse_stacked, split_parts
from .shuffle import PartSizes

__all__ = ["xor_encode", "xor_decode"]

_SIGNED = {1: Datatype.INT8, 2: Datatype.INT16, 4: Datatype.INT32, 8: Datatype.INT64}


def _values(part, size):
    if len(part) % size:
        raise FormatError(f"XOR: a part of {len(part)} bytes is not whole {size}-byte values")
    return np.frombuffer(part, f"<i{size}")


def xor_encode(part, size: int) -> bytes:
    x = _values(part, size)
    out = x.copy()
    out[1:] ^= x[:-1]
    return out.tobytes()


def xor_decode(part, size: int) -> bytes:
    return np.bitwise_xor.accumulate(_values(part, size)).tobytes()


def _xor_encode_rows(rows: np.ndarray, size: int) -> np.ndarray:
    """:func:`xor_encode` of each row of a (k, n) u8 array."""
    if rows.shape[1] % size:
        raise FormatError(f"XOR: a part of {rows.shape[1]} bytes is not whole {size}-byte values")
    x = rows.view(f"<i{size}")
    out = x.copy()
    out[:, 1:] ^= x[:, :-1]
    return out.view(np.uint8)


def _xor_decode_rows(rows: np.ndarray, size: int, out=None) -> np.ndarray:
    """:func:`xor_decode` of each row of a (k, n) u8 array (into ``out``, rows of the same shape, if given)."""
    if rows.shape[1] % size:
        raise FormatError(f"XOR: a part of {rows.shape[1]} bytes is not whole {size}-byte values")
    return np.bitwise_xor.accumulate(rows.view(f"<i{size}"), axis=1,
                                     out=None if out is None else out.view(f"<i{size}")).view(np.uint8)


@register(FilterType.XOR)
class Xor(Codec):
    name = "XOR"
    metadata = PartSizes

    def output_datatype(self, ctx):
        return _SIGNED[ctx.datatype.size]

    def forward(self, ctx, metadata, data):
        size = ctx.datatype.size
        return [parts_header([len(p) for p in data]), *metadata], [b"".join(xor_encode(p, size) for p in data)]

    def reverse(self, ctx, metadata, data):
        head = Header(metadata, "XOR")
        size = ctx.datatype.size
        parts = split_parts(data, head.parts(), "XOR")
        return head.rest(), b"".join(xor_decode(p, size) for p in parts)

    def reverse_many(self, ctx, chunks):
        return reverse_stacked(self, ctx, chunks, lambda rows, out: _xor_decode_rows(rows, ctx.datatype.size, out))

    def forward_many(self, ctx, chunks):
        return forward_stacked(self, ctx, chunks, lambda rows: _xor_encode_rows(rows, ctx.datatype.size))
