"""Read ranges outside a dimension's domain, inverted or NaN are refused as TileDB-Py refuses them, at every entry
point (``read(ranges=)``, ``A[...]``, ``multi_index``, ``query``, ``df``, ``to_arrow``, batches, ``cat --range``);
in-domain ones read what TileDB-Py reads. Every case runs through TileDB-Py first: its answer (a refusal, and its
message, or the cells) is the expected one."""

from __future__ import annotations

import numpy as np
import pytest
import tiledb

from oracle import assert_same
from tdbformat import cli, open_array
from tdbformat.array import RangeError

DT = np.datetime64


def _create(uri, dim, sparse, coords, current=None):
    dom = tiledb.Domain(dim)
    schema = tiledb.ArraySchema(domain=dom, sparse=sparse, attrs=[tiledb.Attr("a", dtype=np.int32)])
    if current is not None:
        rect = tiledb.NDRectangle(tiledb.default_ctx(), dom)
        rect.set_range(0, *current)
        cd = tiledb.CurrentDomain(tiledb.default_ctx())
        cd.set_ndrectangle(rect)
        schema.set_current_domain(cd)
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w") as A:
        if sparse:
            A[coords] = np.arange(len(coords), dtype=np.int32)
        else:
            A[:] = np.arange(len(coords), dtype=np.int32)
    return uri


ARRAYS = {
    "dense_int": lambda: (tiledb.Dim("d", domain=(1, 8), tile=4, dtype=np.int64), False, np.arange(1, 9)),
    "sparse_int": lambda: (tiledb.Dim("d", domain=(1, 8), tile=4, dtype=np.int64), True, np.array([1, 4, 8])),
    "sparse_float": lambda: (tiledb.Dim("d", domain=(-1.5, 2.5), tile=1.0, dtype=np.float64), True,
                             np.array([-1.5, 0.0, 2.5])),
    "sparse_float32": lambda: (tiledb.Dim("d", domain=(0.1, 0.7), tile=0.2, dtype=np.float32), True,
                               np.array([0.1, 0.3], np.float32)),
    "sparse_days": lambda: (tiledb.Dim("d", domain=(DT("2020-01-01"), DT("2020-12-31")), tile=np.timedelta64(10, "D"),
                                       dtype="datetime64[D]"), True, np.array(["2020-01-01", "2020-02-01"], "M8[D]")),
    "sparse_seconds": lambda: (tiledb.Dim("d", domain=(DT("2020-01-01T00:00:00"), DT("2020-01-02T00:00:00")),
                                          tile=np.timedelta64(3600, "s"), dtype="datetime64[s]"), True,
                               np.array(["2020-01-01T05:00:00"], "M8[s]")),
    "sparse_ns": lambda: (tiledb.Dim("d", domain=(DT("2020-01-01T00:00:00", "ns"), DT("2020-01-01T00:00:01", "ns")),
                                     tile=np.timedelta64(10**6, "ns"), dtype="datetime64[ns]"), True,
                          np.array(["2020-01-01T00:00:00.5"], "M8[ns]")),
    "dense_days": lambda: (tiledb.Dim("d", domain=(DT("2020-01-01"), DT("2020-01-08")), tile=np.timedelta64(4, "D"),
                                      dtype="datetime64[D]"), False, np.arange(8)),
    "sparse_uint64_top": lambda: (tiledb.Dim("d", domain=(0, 2**64 - 2), tile=2**40, dtype=np.uint64), True,
                                  np.array([2**64 - 2], np.uint64)),
    "sparse_int64_span": lambda: (tiledb.Dim("d", domain=(-2**63, 2**63 - 2), tile=2**40, dtype=np.int64), True,
                                  np.array([-2**63, 2**63 - 2], np.int64)),
    "sparse_string": lambda: (tiledb.Dim("d", domain=(None, None), tile=None, dtype="ascii"), True,
                              np.array([b"b", b"c"], object)),
}

# per array: selections of multi_index (each one refused or read by TileDB-Py)
CASES = {
    "dense_int": [slice(0, 100), slice(0, 5), slice(3, 9), slice(5, 3), slice(9, 12), slice(1, 8), slice(2, 2),
                  [(1, 2), (7, 9)], [(1, 2), (5, 6)], [(2, 3), (6, 5)], 9, 0, slice(None), slice(None, 100),
                  slice(0, None), slice(3, None), [(0, 100)]],
    "sparse_int": [slice(0, 100), slice(0, 5), slice(3, 9), slice(5, 3), slice(-1, 0), slice(1, 8), [(1, 2), (7, 9)],
                   [(1, 2), (5, 8)], 9, slice(None), slice(None, 100), slice(0, None)],
    "sparse_float": [slice(-2.0, 0.0), slice(0.0, 3.0), slice(-2.0, 3.0), slice(1.0, 0.0), slice(np.nan, 1.0),
                     slice(0.0, np.nan), slice(-1.5, 2.5), slice(np.inf, np.inf), slice(-np.inf, 0.0),
                     [(0.0, 1.0), (2.0, 3.0)], [(0.0, 1.0), (2.0, 2.5)], 2.5, 2.6],
    "sparse_float32": [slice(0.1, 0.7), slice(0.09, 0.7), slice(0.1, 0.71), slice(0.3, 0.1)],
    "sparse_days": [slice(DT("2019-12-31"), DT("2020-03-01")), slice(DT("2019-12-31T23:00", "ns"), DT("2020-03-01", "ns")),
                    slice(DT("2020-01-01T00:00:01", "s"), DT("2020-03-01", "s")), slice(DT("2020", "Y"), DT("2021", "Y")),
                    slice(DT("NaT", "D"), DT("2020-03-01")), slice(DT("2020-03-01"), DT("2020-01-01")),
                    slice(DT("2020-12-01"), DT("2021-01-01")), slice(DT("2020-01-01"), DT("2020-12-31")),
                    slice(0, 18300), [(DT("2020-01-01"), DT("2020-01-05")), (DT("2020-12-30"), DT("2021-01-02"))]],
    "sparse_seconds": [slice(DT("2020-01-01T00:00:00"), DT("2020-01-02T00:00:01")),
                       slice(DT("2019-12-31T23:59:59"), DT("2020-01-01T06:00:00")),
                       slice(DT("2020-01-01", "D"), DT("2020-01-02", "D")),
                       slice(DT("2020-01-01T00:00:00.500", "ms"), DT("2020-01-01T06:00:00", "ms"))],
    "sparse_ns": [slice(DT("2020-01-01T00:00:00", "ns"), DT("2020-01-01T00:00:01", "ns")),
                  slice(DT("2020-01-01T00:00:00", "ns"), DT("2020-01-01T00:00:01.000000001", "ns")),
                  slice(DT("2019-12-31T23:59:59.999999999", "ns"), DT("2020-01-01T00:00:01", "ns")),
                  slice(DT("2020-01-01T00:00:00", "s"), DT("2020-01-01T00:00:01", "s"))],
    "dense_days": [slice(DT("2020-01-01"), DT("2020-01-09")), slice(DT("2019-12-31"), DT("2020-01-02")),
                   slice(DT("2020-01-02"), DT("2020-01-04")), slice(DT("2020-01-04"), DT("2020-01-02"))],
    "sparse_uint64_top": [slice(2**64 - 3, 2**64 - 2), slice(2**64 - 3, 2**64 - 1), slice(0, 2**63 + 5),
                          slice(np.uint64(2**64 - 2), np.uint64(2**64 - 1))],
    "sparse_int64_span": [slice(2**63 - 3, 2**63 - 2), slice(2**63 - 3, 2**63 - 1), slice(-2**63, 0),
                          slice(-2**63, 2**63 - 2), slice(2**62, -2**62)],
    "sparse_string": [slice("a", "z"), slice("z", "a"), "a", "b", slice("c", "c"), [("a", "b"), ("c", "d")]],
}


@pytest.fixture(scope="module")
def arrays(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranges")
    out = {name: _create(str(root / name), *make()) for name, make in ARRAYS.items()}
    dim = tiledb.Dim("d", domain=(1, 100), tile=4, dtype=np.int64)
    out["current"] = _create(str(root / "current"), dim, True, np.array([2, 3]), current=(1, 8))
    return out


def _tiledb(run):
    """TileDB-Py's answer: ("refused", exception) or ("read", result)."""
    try:
        return "read", run()
    except (tiledb.TileDBError, IndexError) as e:
        return "refused", e


def _compare(want, run):
    """``run`` (tdbformat) refuses what TileDB-Py refused, with the same kind of error and message, or reads
    what it read."""
    kind, value = want
    if kind == "read":
        assert_same(run(), value)
        return
    if isinstance(value, IndexError):
        with pytest.raises(IndexError):
            run()
        return
    message = str(value).removeprefix("TileDB internal: ")
    with pytest.raises(RangeError) as got:
        run()
    if "out of domain bounds" in message or "current domain" in message:
        assert str(got.value) == message
    elif "NaN" in message:
        assert "Range contains NaN" in str(got.value) and "dimension 'd'" in str(got.value)
    else:  # TileDB prints floats here with %f: compare the numbers
        assert "Lower range bound" in message and "Lower range bound" in str(got.value)
        assert "dimension 'd'" in str(got.value)


def _cases():
    for name, sels in CASES.items():
        for i, sel in enumerate(sels):
            yield pytest.param(name, sel, id=f"{name}-{i}")


@pytest.mark.parametrize("name,sel", list(_cases()))
def test_multi_index_as_tiledb_py(arrays, name, sel):
    with tiledb.open(arrays[name]) as T:
        want = _tiledb(lambda: T.multi_index[sel])
    A = open_array(arrays[name])
    _compare(want, lambda: A.multi_index[sel])
    _compare(want, lambda: A.query(attrs=["a"], dims=["d"]).multi_index[sel])
    if want[0] == "refused":  # the same selection through the other entry points is refused too
        with pytest.raises(RangeError):
            A.df[sel]
        with pytest.raises(RangeError):
            A.to_arrow(ranges=sel)
        with pytest.raises(RangeError):
            list(A.query(return_incomplete=True, memory_budget=64).multi_index[sel])
        if isinstance(sel, slice) and sel.start is not None and sel.stop is not None:
            with pytest.raises(RangeError):
                A.read(ranges={"d": (sel.start, sel.stop)})


GETITEM = {
    "dense_int": [slice(0, 100), slice(1, 100), slice(1, 10), 9, slice(5, 3), slice(-3, None), slice(-30, None),
                  slice(None, -3), slice(None)],
    "sparse_int": [slice(0, 100), slice(1, 100), 9, slice(None)],
    "sparse_float": [slice(np.nan, 1.0), slice(None)],  # TileDB-Py reads float slices as offsets: not compared
    "sparse_days": [slice(DT("2019-12-31"), DT("2020-03-01")), slice(DT("2020-01-01"), DT("2021-01-01")),
                    slice(DT("2020-01-01"), DT("2020-12-30")), slice(None, DT("2020-02-01")), slice(None)],
    "current": [slice(1, None), slice(None, 50), slice(1, 200), slice(None, 8), slice(None, 9), slice(None, 10), -1,
                5, 20, slice(0, 50), slice(None)],
}


@pytest.mark.parametrize("name,sel", [pytest.param(n, s, id=f"{n}-{i}") for n, ss in GETITEM.items()
                                      for i, s in enumerate(ss)])
def test_getitem_as_tiledb_py(arrays, name, sel):
    with tiledb.open(arrays[name]) as T:
        want = _tiledb(lambda: T[sel])
    A = open_array(arrays[name])
    if want[0] == "refused" and "Lower range bound" in str(want[1]):
        with pytest.raises(IndexError):  # an empty slice: we say so as IndexError (before TileDB is asked)
            A[sel]
        return
    _compare(want, lambda: A[sel])


@pytest.mark.parametrize("sel", [slice(1, 9), slice(1, 8), slice(None), slice(None, 50), slice(2, None)])
def test_current_domain_as_tiledb_py(arrays, sel):
    with tiledb.open(arrays["current"]) as T:
        want = _tiledb(lambda: T.multi_index[sel])
    A = open_array(arrays["current"])
    _compare(want, lambda: A.multi_index[sel])
    if sel.start is not None and sel.stop is not None:
        _compare(want, lambda: {k: v for k, v in A.read(ranges={"d": (sel.start, sel.stop)}).items()})


def test_read_ranges_dense_refused_not_filled(arrays):
    """The issue's case: 101 cells, 93 of them fill values, before; TileDB-Py's refusal now."""
    with tiledb.open(arrays["dense_int"]) as T, pytest.raises(tiledb.TileDBError) as want:
        T.multi_index[0:100]
    with pytest.raises(RangeError) as got:
        open_array(arrays["dense_int"]).read(ranges={"d": (0, 100)})
    assert str(got.value) == str(want.value) == ("Subarray: Cannot add range to dimension 'd'; Range [0, 100] is out "
                                                 "of domain bounds [1, 8]")


@pytest.mark.parametrize("name", ["dense_int", "sparse_int"])
def test_cat_range_refused(arrays, name, capsys):
    assert cli.main(["cat", "--range", "d=0:100", arrays[name]]) == 2
    assert "Range [0, 100] is out of domain bounds [1, 8]" in capsys.readouterr().err
    assert cli.main(["cat", "--range", "d=2:3", arrays[name]]) == 0


def test_arrays_before_format_version_1_check_ranges_alike(capsys):
    """A pre-v1 array (which TileDB-Py cannot open) takes the same range check: its domain is [1, 4]."""
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "data" / "prev1" / "tiledb-1.2.2" / "dense_nocomp"
    A = open_array(path)
    with pytest.raises(RangeError, match=r"Range \[0, 1000000\] is out of domain bounds \[1, 4\]"):
        A.read(ranges={"d1": (0, 10**6)})
    with pytest.raises(RangeError, match="Lower range bound 3 cannot be larger than the higher bound 2"):
        A.read(ranges={"d2": (3, 2)})
    assert A.read(ranges={"d1": (2, 3)})[A.attrs[0].name].shape == (2, 4)
    assert cli.main(["cat", "--range", "d1=0:9", str(path)]) == 2
