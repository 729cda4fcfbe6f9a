"""construct's own ``common()`` test pattern for one structure: parse, build and sizeof agree with bytes."""

from __future__ import annotations

import numpy as np
import pytest

from tdbformat.errors import FormatError


def same(a, b) -> bool:
    """Deep equality of parsed values (Containers, lists, numpy arrays, bytes), hidden keys aside."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = {k for k in a if not str(k).startswith("_")} | {k for k in b if not str(k).startswith("_")}
        return all(same(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.asarray(a).tobytes() == np.asarray(b).tobytes() and np.asarray(a).shape == np.asarray(b).shape
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (bytes, bytearray, memoryview)) and isinstance(b, (bytes, bytearray, memoryview)):
        return bytes(a) == bytes(b)
    return a == b


def equal_cells(a, b, name):
    """Read results ``a`` and ``b`` are equal: type, dtype, shape, mask and values (NaN equal to NaN)."""
    assert type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape, name
    assert np.array_equal(np.ma.getmaskarray(a), np.ma.getmaskarray(b)), name
    if a.dtype.kind == "f":
        assert np.array_equal(np.ma.getdata(a), np.ma.getdata(b), equal_nan=True), name
    else:
        assert all(x == y for x, y in zip(np.ma.getdata(a).ravel(), np.ma.getdata(b).ravel())), name


def common(con, data: bytes, obj, size, **ctx):
    """``con.parse(data) == obj``, ``con.build(obj) == data``, and ``con.sizeof() == size`` (with ``size``
    None: the structure has no static size, and sizeof says so with a FormatError)."""
    assert same(con.parse(data, **ctx), obj), "parse(data) != obj"
    assert con.build(obj, **ctx) == data, "build(obj) != data"
    if size is None:
        with pytest.raises(FormatError):
            con.sizeof(**ctx)
    else:
        assert con.sizeof(**ctx) == size == len(data), f"sizeof {con.sizeof(**ctx)} != {size}"


def break_var_offsets(uri: str, tile: int, bad: str) -> None:
    """Edit in place the offsets of var tile ``tile`` of attribute 0 of the array's one fragment, stored without
    filters and holding the cells ``cell{k}`` in tiles of 10: ``bad`` is "past its bytes" (the last 20 bytes on,
    inside the next tile's), "not from 0" or "falling"."""
    from pathlib import Path

    from tdbformat import open_array
    _, _, end = open_array(uri).fragments[0].tile_span("", 0, tile)
    data = next(Path(uri).glob("__fragments/*/a0.tdb"))
    raw = bytearray(data.read_bytes())
    offsets = np.frombuffer(raw[end - 80:end], "<u8").copy()  # the tile's 10 offsets end it (no filters)
    first = 10 * tile
    assert offsets.tolist() == [sum(len(f"cell{k}") for k in range(first, first + i)) for i in range(10)]
    if bad == "past its bytes":
        offsets[-1] += 20
    elif bad == "not from 0":
        offsets[0] = 3
    else:
        offsets[5] = offsets[6] + 1
    raw[end - 80:end] = offsets.tobytes()
    data.write_bytes(bytes(raw))

