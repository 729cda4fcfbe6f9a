"""Float scaling (REFERENCE.md §7.7; filters/float_scale.md): floats stored as scaled integers.

Forward: ``w = round((x - offset) / scale)`` computed in the float type, rounded half away from zero
(C's ``round``), stored as a signed integer of ``byte_width`` bytes. Reverse: ``x = scale * w + offset``
in double precision, cast to the float type. The header is ``num_parts: u32`` and each part's output
size; earlier metadata follows. Lossy: re-encoding the decoded values gives back the same integers.
"""

from __future__ import annotations

import numpy as np

from ..enums import Datatype, FilterType
from ..errors import FormatError
from .pipeline import Codec, Header, parts_header, register, split_parts
from .shuffle import PartSizes

__all__ = ["scale_floats", "unscale_floats"]

_WIDTHS = {1: Datatype.INT8, 2: Datatype.INT16, 4: Datatype.INT32, 8: Datatype.INT64}


def _types(ctx):
    if not ctx.datatype.is_real:
        raise FormatError(f"SCALE_FLOAT takes FLOAT32 or FLOAT64, not {ctx.datatype.name}")
    width = ctx.options["byte_width"]
    if width not in _WIDTHS:
        raise FormatError(f"SCALE_FLOAT: byte width {width} is not 1, 2, 4 or 8")
    return ctx.datatype.numpy_dtype, np.dtype(f"<i{width}")


def scale_floats(values: np.ndarray, scale: float, offset: float, out_dtype) -> np.ndarray:
    t = values.dtype.type
    with np.errstate(all="ignore"):
        v = (values - t(offset)) / t(scale)
        whole = np.trunc(v)
        whole += np.where(np.abs(v - whole) >= 0.5, np.sign(v), 0).astype(v.dtype)
        return whole.astype(out_dtype)


def unscale_floats(stored: np.ndarray, scale: float, offset: float, dtype) -> np.ndarray:
    return (scale * stored.astype(np.float64) + offset).astype(dtype)


@register(FilterType.SCALE_FLOAT)
class FloatScale(Codec):
    metadata = PartSizes

    def output_datatype(self, ctx):
        return _WIDTHS.get(ctx.options["byte_width"], ctx.datatype)

    def forward(self, ctx, metadata, data):
        dtype, out = _types(ctx)
        scaled = []
        for p in data:
            if len(p) % dtype.itemsize:
                raise FormatError(f"SCALE_FLOAT: a part of {len(p)} bytes is not whole {dtype} values")
            scaled.append(scale_floats(np.frombuffer(p, dtype), ctx.options["scale"], ctx.options["offset"],
                                       out).tobytes())
        # TileDB prepends each part's output, so several parts come out in reverse order
        return [parts_header([len(s) for s in scaled]), *metadata], scaled[::-1]

    def reverse(self, ctx, metadata, data):
        dtype, stored = _types(ctx)
        head = Header(metadata, "SCALE_FLOAT")
        sizes = head.parts()
        if np.any(sizes % stored.itemsize):
            raise FormatError(f"SCALE_FLOAT: part sizes {sizes.tolist()} are not whole {stored.itemsize}-byte values")
        if int(sizes.sum()) // stored.itemsize * dtype.itemsize > ctx.limit:
            raise FormatError("SCALE_FLOAT: the parts unscale to more bytes than the chunk holds")
        parts = split_parts(data, sizes, "SCALE_FLOAT")
        out = [unscale_floats(np.frombuffer(p, stored), ctx.options["scale"], ctx.options["offset"],
                              dtype).tobytes() for p in parts]
        return head.rest(), b"".join(out[::-1])
