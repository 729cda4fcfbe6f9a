"""Bit-width reduction and positive delta, the windowed filters (REFERENCE.md §7.3, §7.4).

Both cut each part into windows of ``max_window_size`` bytes rounded down to whole values (the last
window takes the rest) and prepend a header with one entry per window to earlier metadata.

- Bit-width reduction stores each window as ``value - window minimum`` in 8, 16, 32 or 64 bits (signed
  if the type is), or raw when that saves nothing or the window is not whole values.
- Positive delta stores each value minus the previous one, the window's first value in the header;
  values must not decrease.

Types they do not transform pass through with no header: bit-width reduction skips 1-byte types,
positive delta floats and strings, and both skip DATETIME/TIME before format v20 (generic tiles: 0).
"""

from __future__ import annotations

import numpy as np
from construct import Int8ul, Int32ul, this

from ..enums import Datatype, FilterType
from ..errors import FormatError
from ..fields import Counted, Struct, rule
from ..numpy_array import NumpyArray
from ..versions import FEATURES
from .pipeline import Codec, Header, byte_ranges, register, stacked

__all__ = ["BitWidthHeader", "PositiveDeltaHeader", "window_sizes"]

_SIZED = {Datatype.INT8: "i1", Datatype.UINT8: "u1", Datatype.INT16: "<i2", Datatype.UINT16: "<u2",
          Datatype.INT32: "<i4", Datatype.UINT32: "<u4", Datatype.INT64: "<i8", Datatype.UINT64: "<u8"}
_BYTES = (Datatype.BLOB, Datatype.GEOM_WKB, Datatype.GEOM_WKT, Datatype.BOOL)


def _value_type(ctx, one_byte: bool):
    """The integer type a windowed filter works in, or None when it passes the data through."""
    dt = ctx.datatype
    if dt.is_datetime or dt.is_time:
        return np.dtype("<i8") if FEATURES["windowed_datetimes"](ctx.version) else None
    if dt in _BYTES:
        return np.dtype("u1") if one_byte else None
    if dt in _SIZED and (one_byte or np.dtype(_SIZED[dt]).itemsize > 1):
        return np.dtype(_SIZED[dt])
    return None


def window_sizes(nbytes: int, max_window: int, size: int) -> np.ndarray:
    """Bytes of each window of a part: ``max_window`` rounded down to whole values, the rest last."""
    window = min(nbytes, max_window) // size * size
    if window == 0:  # TileDB divides by zero here; a part smaller than one value is one raw window
        return np.array([nbytes] if nbytes else [], np.int64)
    sizes = np.full(nbytes // window, window, np.int64)
    return np.append(sizes, nbytes % window) if nbytes % window else sizes


def _blocks(buf: np.ndarray, starts, width: int):
    """``buf``'s ranges [start, start+width) as rows of a (k, width) array: a view when they lie end to end,
    else an index of the rows of ``buf`` cut into pieces of the largest size that divides every start and
    the width (a byte index costs numpy eight bytes of index per byte moved)."""
    starts = np.asarray(starts, np.int64)
    if not len(starts) or not width:
        return np.zeros((len(starts), width), buf.dtype), None
    if len(starts) == 1 or (np.diff(starts) == width).all():
        return buf[starts[0]:starts[0] + len(starts) * width].reshape(-1, width), None
    piece = int(np.gcd.reduce(np.append(starts, width)))
    pieces = buf[:len(buf) // piece * piece].reshape(-1, piece)
    return pieces, starts[:, None] // piece + np.arange(width // piece)


def _gather(buf: np.ndarray, starts, width: int) -> np.ndarray:
    rows, index = _blocks(buf, starts, width)
    return rows if index is None else rows[index].reshape(-1, width)


def _scatter(out: np.ndarray, starts, rows: np.ndarray):
    dest, index = _blocks(out, starts, rows.shape[1])
    if index is None:
        dest[...] = rows
    else:
        dest[index] = rows.reshape(index.shape + (-1,))


def _windows_of(data: list, max_window: int, dtype) -> list:
    """(values as (k, n) array, byte sizes) groups: equal-sized whole-value windows together."""
    out = []
    for part in data:
        buf = np.frombuffer(part, np.uint8)
        sizes = window_sizes(len(buf), max_window, dtype.itemsize)
        starts = np.cumsum(sizes) - sizes
        out.append((buf, sizes, starts))
    return out


def _header_dtype(dtype, with_bits: bool) -> np.dtype:
    fields = [("offset", dtype)] + ([("bits", "u1")] if with_bits else []) + [("nbytes", "<u4")]
    return np.dtype(fields)


# whether a window's u8 bit width is one TileDB writes, by value: np.isin per chunk cost more than the header
_WIDTHS = np.isin(np.arange(256), (8, 16, 32, 64))


def _signed_or_unsigned(dtype, bits: int) -> np.dtype:
    return np.dtype(f"<{dtype.kind}{bits // 8}")


def _bits_needed(mins, maxs, dtype) -> np.ndarray:
    """compute_bits_required: the range + 1 in 8/16/32/64 bits, the full width if it overflows T."""
    span = maxs.astype(np.uint64) - mins.astype(np.uint64)  # exact: max >= min
    limits = _LIMITS[dtype.kind]
    bits = _WIDTH_STEPS[np.searchsorted(limits, span + np.uint64(1))]  # the first width whose limit holds it
    return np.where(span >= np.uint64(np.iinfo(dtype).max), np.uint8(8 * dtype.itemsize), bits)


# the largest range + 1 that 8, 16 and 32 bits hold, for signed and unsigned values
_LIMITS = {kind: np.array([(1 << (b - 1)) - 1 if kind == "i" else (1 << b) - 1 for b in (8, 16, 32)], np.uint64)
           for kind in "iu"}
_WIDTH_STEPS = np.array([8, 16, 32, 64], np.uint8)


_value_dtype = rule("the integer type the filter works in")(lambda ctx: ctx._params.value_dtype)


def _window(with_bits: bool, what: str):
    return Struct(
        "offset" / NumpyArray(1, _value_dtype) * what,
        *(["bits" / Int8ul * "bits per stored value: 8, 16, 32 or 64"] if with_bits else []),
        "nbytes" / Int32ul * "input bytes of the window",
    )


#: Header of bit-width reduction (parse with ``value_dtype=`` the numpy type of the values).
BitWidthHeader = Struct(
    "input_length" / Int32ul * "bytes of the input",
    "num_windows" / Int32ul * "number of windows over all parts",
    "windows" / Counted(this.num_windows, _window(True, "window minimum"), 6) * "one entry per window",
)

#: Header of positive delta (parse with ``value_dtype=`` the numpy type of the values).
PositiveDeltaHeader = Struct(
    "num_windows" / Int32ul * "number of windows over all parts",
    "windows" / Counted(this.num_windows, _window(False, "first value of the window"), 5) * "one entry per window",
)


def _bit_width_encode(data: list, max_window: int, dtype) -> tuple:
    """(window headers, the encoded bytes, their size per window) of bit-width reduction over ``data``'s parts."""
    size, full = dtype.itemsize, 8 * dtype.itemsize
    headers, outs, all_sizes = [], [], []
    for buf, sizes, starts in _windows_of(data, max_window, dtype):
        nelts = sizes // size
        head = np.zeros(len(sizes), _header_dtype(dtype, True))
        head["nbytes"] = sizes
        head["bits"] = full
        out_sizes = sizes.copy()
        groups = []
        for n in np.unique(nelts[nelts > 0]):
            sel = np.flatnonzero(nelts == n)
            values = _gather(buf, starts[sel], n * size).view(dtype)
            mins, maxs = values.min(axis=1), values.max(axis=1)
            bits = _bits_needed(mins, maxs, dtype)
            head["offset"][sel] = mins
            head["bits"][sel] = bits
            packs = (bits < full) & (sizes[sel] % size == 0)
            out_sizes[sel[packs]] = n * bits[packs] // 8
            groups.append((sel, values, mins, bits, packs))
        out = np.empty(int(out_sizes.sum()), np.uint8)
        out_starts = np.cumsum(out_sizes) - out_sizes
        raw = np.ones(len(sizes), bool)
        for sel, values, mins, bits, packs in groups:
            for b in np.unique(bits[packs]):
                rows = packs & (bits == b)
                rel = (values[rows] - mins[rows, None]).astype(_signed_or_unsigned(dtype, int(b)))
                _scatter(out, out_starts[sel[rows]], rel.view(np.uint8))
                raw[sel[rows]] = False
        for i in np.flatnonzero(raw):  # raw windows are few: incompressible ones and a ragged tail
            out[out_starts[i]:out_starts[i] + sizes[i]] = buf[starts[i]:starts[i] + sizes[i]]
        headers.append(head)
        outs.append(out.tobytes())
        all_sizes.append(out_sizes)
    head = np.concatenate(headers) if headers else np.zeros(0, _header_dtype(dtype, True))
    return head, b"".join(outs), np.concatenate(all_sizes) if all_sizes else np.zeros(0, np.int64)


def _even(chunks: list, max_window: int, size: int):
    """The part size of ``chunks`` if they window as one buffer of them all would (each one part of the same
    size, a whole number of equal windows of ``size``-byte values), else None."""
    if len(chunks) < 2 or any(len(parts) != 1 for _, parts in chunks):
        return None
    lengths = {len(parts[0]) for _, parts in chunks}
    nbytes = lengths.pop() if len(lengths) == 1 else 0
    window = min(nbytes, max_window) // size * size
    joined = min(nbytes * len(chunks), max_window) // size * size
    return nbytes if window and window == joined and nbytes % window == 0 else None


@register(FilterType.BIT_WIDTH_REDUCTION)
class BitWidthReduction(Codec):
    metadata = BitWidthHeader

    def forward(self, ctx, metadata, data):
        dtype = _value_type(ctx, one_byte=False)
        if dtype is None:
            return metadata, data
        head, out, _ = _bit_width_encode(data, ctx.options["max_window_size"], dtype)
        total = sum(len(p) for p in data)
        return [np.array([total, len(head)], "<u4").tobytes() + head.tobytes(), *metadata], [out]

    def forward_many(self, ctx, chunks):
        dtype = _value_type(ctx, one_byte=False)
        size = None if dtype is None else _even(chunks, ctx.options["max_window_size"], dtype.itemsize)
        if size is None:
            return super().forward_many(ctx, chunks)
        head, out, out_sizes = _bit_width_encode([stacked([p[0] for _, p in chunks])], ctx.options["max_window_size"],
                                                 dtype)
        per = len(head) // len(chunks)
        ends = np.append(0, np.cumsum(out_sizes)[per - 1::per]).tolist()
        return [([np.array([size, per], "<u4").tobytes() + head[i * per:(i + 1) * per].tobytes(), *md],
                 [out[ends[i]:ends[i + 1]]]) for i, (md, _) in enumerate(chunks)]

    def reverse(self, ctx, metadata, data):
        dtype = _value_type(ctx, one_byte=False)
        if dtype is None:
            return metadata, bytes(data)
        head, length, windows = _bit_width_header(metadata, dtype, len(data), ctx.limit)
        return head.rest(), _bit_width_decode(windows, np.frombuffer(data, np.uint8), dtype, length)

    def reverse_many(self, ctx, chunks):
        """The chunks' windows decoded as one run of windows (a chunk's numpy passes cost more per call than per
        byte, and held the GIL from other threads); any header that does not add up: chunk by chunk, which says
        what is wrong."""
        dtype = _value_type(ctx, one_byte=False)
        if dtype is None or len(chunks) < 2:
            return super().reverse_many(ctx, chunks)
        try:
            heads = [_bit_width_header(md, dtype, len(data), ctx.limit) for md, data in chunks]
        except FormatError:
            return super().reverse_many(ctx, chunks)
        lengths = [length for _, length, _ in heads]
        out = _bit_width_decode(np.concatenate([w for _, _, w in heads]),
                                stacked([d for _, d in chunks]), dtype, sum(lengths))
        ends = np.cumsum([0] + lengths).tolist()
        return [(head.rest(), out[ends[i]:ends[i + 1]]) for i, (head, _, _) in enumerate(heads)]


def _bit_width_header(metadata, dtype, data_size: int, limit: int) -> tuple:
    """(the header, the unfiltered length, the windows) of a bit-width reduction chunk, checked to add up to
    its ``data_size`` bytes."""
    full = 8 * dtype.itemsize
    head = Header(metadata, "BIT_WIDTH_REDUCTION")
    length, count = head.u32(), head.u32()
    windows = head.array(_header_dtype(dtype, True), count)
    sizes, bits = windows["nbytes"].astype(np.int64), windows["bits"].astype(np.int64)
    if int(sizes.sum()) != length or length > limit:
        raise FormatError(f"BIT_WIDTH_REDUCTION: windows of {int(sizes.sum())} bytes for an input of {length}")
    if not _WIDTHS[windows["bits"]].all():
        raise FormatError(f"BIT_WIDTH_REDUCTION: window bit widths {sorted(set(bits.tolist()))} are not "
                          "8, 16, 32 or 64")
    packed = (bits < full) & (sizes % dtype.itemsize == 0)
    in_size = int(np.where(packed, sizes // dtype.itemsize * bits // 8, sizes).sum())
    if in_size != data_size:
        raise FormatError(f"BIT_WIDTH_REDUCTION: the windows hold {in_size} bytes but the data has {data_size}")
    return head, length, windows


def _bit_width_decode(windows, buf: np.ndarray, dtype, length: int) -> np.ndarray:
    """The ``length`` bytes that bit-width reduction ``windows`` (checked) packed into ``buf``: the windows of
    one shape (values, bits) unpack together."""
    size, full = dtype.itemsize, 8 * dtype.itemsize
    sizes, bits = windows["nbytes"].astype(np.int64), windows["bits"].astype(np.int64)
    packed = (bits < full) & (sizes % size == 0)
    in_sizes = np.where(packed, sizes // size * bits // 8, sizes)
    in_starts, out_starts = np.cumsum(in_sizes) - in_sizes, np.cumsum(sizes) - sizes
    out = np.empty(length, np.uint8)
    shapes = sizes // size * 128 + bits  # windows of n values of b bits, as one number (b < 128)
    for shape in np.unique(shapes[packed]).tolist():
        n, b = divmod(shape, 128)
        sel = np.flatnonzero(packed & (shapes == shape))
        rel = _gather(buf, in_starts[sel], n * b // 8).view(_signed_or_unsigned(dtype, b))
        values = rel.astype(dtype) + windows["offset"][sel, None]
        _scatter(out, out_starts[sel], values.view(np.uint8))
    raw = np.flatnonzero(~packed)
    if len(raw):  # windows stored as they were
        out[byte_ranges(out_starts[raw], sizes[raw])] = buf[byte_ranges(in_starts[raw], sizes[raw])]
    return out


def _positive_delta_encode(data: list, max_window: int, dtype) -> tuple:
    """(window headers, the encoded bytes) of positive delta over ``data``'s parts (as long as the input)."""
    size = dtype.itemsize
    headers, outs = [], []
    for buf, sizes, starts in _windows_of(data, max_window, dtype):
        head = np.zeros(len(sizes), _header_dtype(dtype, False))
        head["nbytes"] = sizes
        out = buf.copy()
        whole = sizes % size == 0
        for n in np.unique(sizes[whole] // size):
            sel = np.flatnonzero(whole & (sizes // size == n))
            values = _gather(buf, starts[sel], n * size).view(dtype)
            if np.any(values[:, 1:] < values[:, :-1]):
                raise FormatError("POSITIVE_DELTA: the values decrease, which the filter cannot encode")
            head["offset"][sel] = values[:, 0]
            deltas = np.diff(values, axis=1, prepend=values[:, :1])
            _scatter(out, starts[sel], deltas.view(np.uint8))
        for i in np.flatnonzero(~whole):  # the window's first value, read as TileDB does
            first = buf[starts[i]:starts[i] + size]
            head["offset"][i] = np.frombuffer(np.append(first, np.zeros(size - len(first), np.uint8)), dtype)[0]
        headers.append(head)
        outs.append(out.tobytes())
    head = np.concatenate(headers) if headers else np.zeros(0, _header_dtype(dtype, False))
    return head, b"".join(outs)


def _positive_delta_decode(windows: np.ndarray, buf: np.ndarray, dtype) -> np.ndarray:
    """The values of positive delta's ``windows`` (their headers) over the bytes ``buf``."""
    size = dtype.itemsize
    sizes = windows["nbytes"].astype(np.int64)
    out = np.empty_like(buf)
    starts = np.cumsum(sizes) - sizes
    whole = sizes % size == 0
    for n in np.unique(sizes[whole] // size):
        sel = np.flatnonzero(whole & (sizes // size == n))
        deltas = _gather(buf, starts[sel], n * size).view(dtype)
        # one running sum over all the windows (a sum along short rows costs numpy more), each row then
        # moved by its first value less what the rows before it added up to
        values = np.cumsum(deltas.reshape(-1), dtype=dtype).reshape(deltas.shape)
        base = windows["offset"][sel].astype(dtype)
        base[1:] -= values[:-1, -1]
        values += base[:, None]
        _scatter(out, starts[sel], values.view(np.uint8))
    for i in np.flatnonzero(~whole):  # a ragged tail stays as it is
        out[starts[i]:starts[i] + sizes[i]] = buf[starts[i]:starts[i] + sizes[i]]
    return out


@register(FilterType.POSITIVE_DELTA)
class PositiveDelta(Codec):
    metadata = PositiveDeltaHeader

    def forward(self, ctx, metadata, data):
        dtype = _value_type(ctx, one_byte=True)
        if dtype is None:
            return metadata, data
        head, out = _positive_delta_encode(data, ctx.options["max_window_size"], dtype)
        return [np.array([len(head)], "<u4").tobytes() + head.tobytes(), *metadata], [out]

    def forward_many(self, ctx, chunks):
        dtype = _value_type(ctx, one_byte=True)
        size = None if dtype is None else _even(chunks, ctx.options["max_window_size"], dtype.itemsize)
        if size is None:
            return super().forward_many(ctx, chunks)
        head, out = _positive_delta_encode([stacked([p[0] for _, p in chunks])], ctx.options["max_window_size"], dtype)
        per = len(head) // len(chunks)
        return [([np.array([per], "<u4").tobytes() + head[i * per:(i + 1) * per].tobytes(), *md],
                 [out[i * size:(i + 1) * size]]) for i, (md, _) in enumerate(chunks)]

    def reverse(self, ctx, metadata, data):
        dtype = _value_type(ctx, one_byte=True)
        if dtype is None:
            return metadata, bytes(data)
        head = Header(metadata, "POSITIVE_DELTA")
        windows = head.array(_header_dtype(dtype, False), head.u32())
        sizes = windows["nbytes"].astype(np.int64)
        if int(sizes.sum()) != len(data):
            raise FormatError(f"POSITIVE_DELTA: windows of {int(sizes.sum())} bytes but the data has {len(data)}")
        return head.rest(), _positive_delta_decode(windows, np.frombuffer(data, np.uint8), dtype)

    def reverse_many(self, ctx, chunks):
        """The chunks' windows decoded as one run of windows (a chunk's numpy passes cost more per call than per
        byte); any header that does not add up: chunk by chunk, which says what is wrong."""
        dtype = _value_type(ctx, one_byte=True)
        if dtype is None or len(chunks) < 2:
            return super().reverse_many(ctx, chunks)
        heads = []
        try:
            for md, data in chunks:
                head = Header(md, "POSITIVE_DELTA")
                heads.append((head, head.array(_header_dtype(dtype, False), head.u32())))
        except FormatError:
            return super().reverse_many(ctx, chunks)
        if any(int(w["nbytes"].astype(np.int64).sum()) != len(d) for (_, w), (_, d) in zip(heads, chunks)):
            return super().reverse_many(ctx, chunks)
        out = _positive_delta_decode(np.concatenate([w for _, w in heads]),
                                     stacked([d for _, d in chunks]), dtype)
        ends = np.cumsum([0] + [len(d) for _, d in chunks]).tolist()
        return [(head.rest(), out[ends[i]:ends[i + 1]]) for i, (head, _) in enumerate(heads)]
