"""Datetime and time dimension labels both ways, against TileDB-Py: labels of every unit, increasing and
decreasing, holding pre-1970 dates and int64's extremes (NaT, TileDB's least value, included), created and
written by either side and read by label by either side, with bounds as datetime64 of the label's unit, of
a finer or coarser one, as ints of the unit, and NaT; what TileDB-Py gets wrong (a bound it rounds the
wrong way or wraps past int64) tdbformat answers exactly (DISCREPANCIES.md)."""

from __future__ import annotations

import numpy as np
import pytest
import tiledb

from oracle import assert_same
import tdbformat
from tdbformat import open_array, schema as S
from tdbformat.array import RangeError

I64 = np.iinfo(np.int64)
# (label dtype, a finer unit its bounds can be given in exactly, a coarser one)
UNITS = [("datetime64[ns]", "ps", "us"), ("datetime64[D]", "h", "W"), ("datetime64[Y]", "M", None),
         ("datetime64[M]", "D", "Y"), ("datetime64[as]", None, "fs"), ("timedelta64[ms]", "us", "h")]
# ticks of the unit: int64's least (NaT) and greatest, one past the least, before and after 1970
TICKS = np.array([I64.min, I64.min + 1, -10 ** 6, -3, -2, -1, 0, 1, 2 ** 40, I64.max], np.int64)
SECOND = (3, np.array([-5, -2, -1], np.int64))  # the second write: indices 3-5, still in order


def _schema(lib, dtype, order):
    dims = [lib.Dim(name="x", domain=(0, 9), tile=4, dtype=np.int32)]
    return lib.ArraySchema(domain=lib.Domain(*dims), attrs=[lib.Attr(name="a", dtype=np.int64)],
                           dim_labels={0: {"t": lib.DimLabelSchema(order, dtype, np.int32, dim_tile=4)}})


def _writes(dtype, order):
    """[(slice, data)]: all ten labels, then three in the middle."""
    at, second = SECOND
    ticks = TICKS if order == "increasing" else TICKS[::-1]
    if order == "decreasing":
        at, second = 10 - at - len(second), second[::-1]
    return [(slice(0, 10), {"a": np.arange(10), "t": ticks.view(dtype)}),
            (slice(at, at + 3), {"a": -np.arange(3), "t": second.view(dtype)})]


def _build(lib, uri, dtype, order):
    if lib is tiledb:
        tiledb.Array.create(uri, _schema(tiledb, dtype, order))
    else:
        tdbformat.create(uri, _schema(S, dtype, order), version=22)
    for t, (sel, data) in enumerate(_writes(dtype, order), 1):
        with tiledb.open(uri, "w", timestamp=t) if lib is tiledb else open_array(uri, "w", timestamp=t) as A:
            A[sel] = data


def _selections(dtype, finer, coarser):
    u = np.datetime_data(dtype)[0]
    v = (lambda k, unit=u: (np.datetime64 if dtype[0] == "d" else np.timedelta64)(k, unit))
    nat = np.datetime64("NaT") if dtype[0] == "d" else np.timedelta64("NaT")
    out = [slice(v(-3), v(1)), slice(nat, v(-2)), slice(v(I64.min + 1), v(I64.max)), v(0), v(I64.max),
           [v(I64.max), (v(-5), v(-1))], slice(-3, 1), slice(I64.min, -10 ** 6),
           slice(v(2), v(2 ** 40 - 1)), slice(v(1), v(-1))]  # (no label; lower above upper)
    if finer:  # the same bounds in a finer unit
        fine = f"{dtype.split('[')[0]}[{finer}]"
        out.append(slice(v(-3).astype(fine), v(1).astype(fine)))
    if coarser:  # a coarser unit: exact in the label's
        out.append(slice(v(-1, coarser), v(0, coarser)))
    return out


def _answer(run):
    try:
        return "read", run()
    except tiledb.TileDBError as e:
        return "refused", e


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    """{(dtype, order): (TileDB-Py's array, tdbformat's)}."""
    root = tmp_path_factory.mktemp("datetime_labels")
    out = {}
    for dtype, _, _ in UNITS:
        for order in ("increasing", "decreasing"):
            uris = [str(root / f"{who}-{dtype[:-1].replace('[', '-')}-{order}") for who in ("theirs", "ours")]
            for lib, uri in zip((tiledb, tdbformat), uris):
                _build(lib, uri, dtype, order)
            out[dtype, order] = uris
    return out


@pytest.mark.parametrize("order", ["increasing", "decreasing"])
@pytest.mark.parametrize("dtype,finer,coarser", UNITS, ids=[u[0] for u in UNITS])
def test_datetime_labels_both_ways(arrays, dtype, finer, coarser, order):
    theirs, ours = arrays[dtype, order]
    with tiledb.open(ours) as M, tiledb.open(theirs) as T:  # TileDB-Py reads our labels as its own
        assert M.schema.dim_label("t").dtype == T.schema.dim_label("t").dtype == np.dtype(dtype)
        with tiledb.open(M.schema.dim_label("t").uri) as L, tiledb.open(T.schema.dim_label("t").uri) as W:
            assert_same(L[:], W[:])
            assert W[:]["label"].view(np.int64).tolist()[:2] in ([I64.min, I64.min + 1], [I64.max, 2 ** 40])
    for sel in _selections(dtype, finer, coarser):
        with tiledb.open(theirs) as T, tiledb.open(ours) as M:
            want, mine = _answer(lambda: T.label_index(["t"])[sel]), _answer(lambda: M.label_index(["t"])[sel])
        assert mine[0] == want[0], sel
        for uri in (theirs, ours):  # and we read both as TileDB-Py reads them
            if want[0] == "read":
                got = open_array(uri).label_index(["t"])[sel]
                assert list(got) == list(want[1]) and list(mine[1]) == list(want[1])
                assert_same(got, want[1])
                assert_same(mine[1], want[1])
            else:
                words = "Range contained no values" if "no values" in str(want[1]) else "cannot be larger"
                with pytest.raises(RangeError, match=words):
                    open_array(uri).label_index(["t"])[sel]


def test_bounds_are_exact_where_tiledb_py_rounds_or_wraps(arrays):
    """TileDB-Py brings a bound to the label's unit with numpy's ``astype``, which floors a lower bound (-1.5
    ns takes the label -2 ns) and wraps past int64 (the year 3000 in ns is 1830); tdbformat compares exactly
    (DISCREPANCIES.md)."""
    theirs, _ = arrays["datetime64[ns]", "increasing"]
    ps = (lambda k: np.datetime64(k, "ps"))
    with tiledb.open(theirs) as T:
        assert T.label_index(["t"])[ps(-1500):ps(1500)]["t"].view(np.int64).tolist() == [-2, -1, 0, 1]
        with pytest.raises(tiledb.TileDBError, match="cannot be larger"):
            T.label_index(["t"])[np.datetime64("1970-01-01"):np.datetime64("3000-01-01")]
    A = open_array(theirs)
    assert A.label_index(["t"])[ps(-1500):ps(1500)]["t"].view(np.int64).tolist() == [-1, 0, 1]
    got = A.label_index(["t"])[np.datetime64("1970-01-01"):np.datetime64("3000-01-01")]
    assert got["t"].view(np.int64).tolist() == [0, 1, 2 ** 40, I64.max]
    # before int64's least: every label from it (int64's least itself a time, 1677-09-21, as TileDB stores it)
    got = A.label_index(["t"])[np.datetime64("1000-01-01"):np.datetime64("1969-12-31T23:59:59.999999999999")]
    assert got["t"].view(np.int64).tolist() == [I64.min, I64.min + 1, -10 ** 6, -5, -2, -1]
    with pytest.raises(RangeError, match="Range contained no values"):  # past int64: no label reaches it
        A.label_index(["t"])[np.datetime64("3000-01-01"):np.datetime64("3001-01-01")]


def test_datetime_bounds_of_other_kinds_are_refused(arrays):
    """TileDB-Py fails on them with AttributeError ('str' object has no attribute 'astype'); tdbformat names
    the argument."""
    theirs, _ = arrays["datetime64[D]", "increasing"]
    A = open_array(theirs)
    for bad in ("1970-01-01", 1.5, np.timedelta64(1, "D")):
        with pytest.raises(TypeError, match="datetime64"):
            A.label_index(["t"])[bad:bad]
    with pytest.raises(ValueError, match="does not fit"):
        A.label_index(["t"])[0:2 ** 63]
    with pytest.raises(TypeError, match="no exact length"):
        open_array(arrays["timedelta64[ms]", "increasing"][0]).label_index(["t"])[np.timedelta64(1, "Y"):1]


def test_datetime_label_values_keep_their_order_as_int64(arrays, tmp_path):
    """NaT is int64's least: first in an increasing label, written and read as such; a write that breaks the
    order as int64 is refused before anything is written."""
    _, ours = arrays["datetime64[D]", "increasing"]
    with pytest.raises(ValueError, match="strictly increasing"), open_array(ours, "w") as A:
        A[3:6] = {"a": np.zeros(3, np.int64), "t": np.array(["NaT", "1969-01-01", "1969-01-02"], "M8[D]")}
    with pytest.raises(ValueError, match="exactly"), open_array(ours, "w") as A:  # a finer unit, inexact
        A[3:6] = {"a": np.zeros(3, np.int64), "t": np.array([-5, -2, -1], "M8[D]").astype("M8[h]") + 1}


ALL_UNITS = [f"datetime64[{u}]" for u in ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as")] + \
    [f"timedelta64[{u}]" for u in ("h", "m", "s", "ms", "us", "ns", "ps", "fs", "as")]


def test_every_unit_tiledb_py_allows(tmp_path):
    """A label of each datetime and time unit TileDB-Py takes (timedelta64 from hours: TileDB's TIME_*), all on
    one dimension, both ways; what it refuses (timedelta64 in days), refused."""
    def build(lib):
        dims = [lib.Dim(name="x", domain=(0, 9), tile=4, dtype=np.int32)]
        return lib.ArraySchema(domain=lib.Domain(*dims), attrs=[lib.Attr(name="a", dtype=np.int64)], dim_labels={
            0: {f"t{i}": lib.DimLabelSchema("decreasing" if i % 2 else "increasing", dtype, np.int32)
                for i, dtype in enumerate(ALL_UNITS)}})
    data = {"a": np.arange(10)}
    data.update((f"t{i}", (TICKS[::-1] if i % 2 else TICKS).view(dtype)) for i, dtype in enumerate(ALL_UNITS))
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    tiledb.Array.create(theirs, build(tiledb))
    tdbformat.create(ours, build(S), version=22)
    with tiledb.open(theirs, "w") as T, open_array(ours, "w") as A:
        T[:], A[:] = data, data
    for i, dtype in enumerate(ALL_UNITS):
        v = (lambda k: np.array(k, np.int64).view(dtype)[()])
        for sel in (slice(v(-3), v(2 ** 40)), [v(I64.max), (v(I64.min), v(-1))]):
            with tiledb.open(theirs) as T, tiledb.open(ours) as M:
                want = T.label_index([f"t{i}"])[sel]
                assert_same(M.label_index([f"t{i}"])[sel], want)
            for uri in (theirs, ours):
                got = open_array(uri).label_index([f"t{i}"])[sel]
                assert list(got) == list(want)
                assert_same(got, want)
    for lib in (tiledb, S):
        with pytest.raises(TypeError, match="cannot be mapped"):
            lib.DimLabelSchema("increasing", "timedelta64[D]", np.int32)
