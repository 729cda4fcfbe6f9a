"""The bulk-number construct: a counted run of fixed-size numbers as one numpy array.

``NumpyArray(count, dtype)`` reads ``count`` values with ``numpy.frombuffer`` and builds them with
``tobytes``; it is about a thousand times faster than ``Array(count, Int64ul)``. The count is checked
against the bytes left before anything is read. Parsed arrays are read-only views of the input.
"""

from __future__ import annotations

import io

import numpy as np
from construct import Construct, Int64ul, Rebuild, evaluate, this

from .errors import FormatError
from .fields import Struct, _need, remaining

__all__ = ["NumpyArray", "CountedNumpy"]


def _read_view(stream, nbytes: int):
    """The next ``nbytes`` of ``stream``, without a copy when it is in memory."""
    if isinstance(stream, io.BytesIO):
        pos = io.BytesIO.tell(stream)  # the buffer position, whatever offset a subclass reports
        io.BytesIO.seek(stream, pos + nbytes)
        return stream.getbuffer()[pos:pos + nbytes]
    return stream.read(nbytes)


class NumpyArray(Construct):
    """``count`` little-endian values of ``dtype`` (a numpy dtype or a callable of the context)."""

    def __init__(self, count, dtype):
        super().__init__()
        self.count = count
        self.dtype = dtype if callable(dtype) else np.dtype(dtype)

    def _dtype(self, context) -> np.dtype:
        return np.dtype(evaluate(self.dtype, context))

    def _parse(self, stream, context, path):
        dtype = self._dtype(context)
        count = evaluate(self.count, context)
        nbytes = count * dtype.itemsize
        if not 0 <= nbytes <= remaining(stream):  # the message only when it is needed: parses run this often
            _need(stream, nbytes, path, f"{count} values of {dtype}")
        arr = np.frombuffer(_read_view(stream, nbytes), dtype=dtype, count=count)
        arr.flags.writeable = False
        return arr

    def _build(self, obj, stream, context, path):
        dtype = self._dtype(context)
        arr = np.ascontiguousarray(obj, dtype=dtype).reshape(-1)
        count = evaluate(self.count, context)
        if count != arr.size:
            raise FormatError(f"the count field says {count} values but {arr.size} were given", path=path)
        stream.write(arr.tobytes())
        return arr

    def _sizeof(self, context, path):
        return evaluate(self.count, context) * self._dtype(context).itemsize


def CountedNumpy(dtype, count_type=Int64ul, doc: str = "values"):
    """A count followed by that many values: ``num`` then ``data`` (``values`` would shadow dict.values)."""
    return Struct(
        "num" / Rebuild(count_type, lambda ctx: len(ctx["data"])) * "number of values",
        "data" / NumpyArray(this.num, dtype) * doc,
    )
