"""Values given to the writer (issue #39 §0 and §5): what it accepts is stored as TileDB-Py reads it, and what
it refuses is refused with a ValueError/TypeError naming the argument, before the first byte is written (the
array folder's files and bytes are the same after the refused write)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import tiledb

import tdbformat
from oracle import tiledb_ctx
from tdbformat.write.create import create
from tdbformat.schema import ArraySchema, Attr, CurrentDomain, Dim, Domain
from tdbformat.write.writer import open_writer, write


def snapshot(path) -> dict:
    """Every file under ``path`` with its bytes, and every folder."""
    out = {}
    for root, dirs, files in os.walk(path):
        rel = Path(root).relative_to(path)
        out[str(rel) + "/"] = None
        for f in files:
            out[str(rel / f)] = (Path(root) / f).read_bytes()
    return out


def refused(path, error, match, fn):
    """``fn()`` raises ``error`` matching ``match`` and leaves the array at ``path`` as it was."""
    before = snapshot(path)
    with pytest.raises(error, match=match):
        fn()
    assert snapshot(path) == before


def _array(tmp_path, dims, attrs, sparse=False, version=22, name="a", **kw):
    path = str(tmp_path / name)
    create(path, ArraySchema(Domain(*dims), attrs, sparse=sparse, **kw), version=version)
    return path


# ---- §0: writer bugs that corrupted or hid cells ----

@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_attribute_round_trip(tmp_path, dtype):
    """A complex attribute was stored as (real, real) with only a ComplexWarning."""
    path = _array(tmp_path, [Dim("d", (0, 1), 2, dtype=np.int64)], [Attr("a", dtype)])
    values = np.array([1 + 2j, 3 + 4j], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write(path, values)
    with tiledb.open(path) as A:
        np.testing.assert_array_equal(A[:]["a"], values)


def test_dense_last_extent_equal_to_values_per_cell(tmp_path):
    """A dense write whose last subarray extent equals the values per cell took that axis as the cells' values."""
    path = _array(tmp_path, [Dim("x", (0, 2), 3, dtype=np.int64), Dim("y", (0, 1), 2, dtype=np.int64)],
                  [Attr("a", np.complex128)])
    values = (np.arange(6) + 1j * np.arange(6, 12)).reshape(3, 2)
    write(path, values)
    with tiledb.open(path) as A:
        np.testing.assert_array_equal(A[:]["a"], values)
    path2 = _array(tmp_path, [Dim("x", (0, 2), 3, dtype=np.int64), Dim("y", (0, 2), 3, dtype=np.int64)],
                   [Attr("a", "i4,i4,i4")], name="b")
    cells = np.arange(27, dtype=np.int32).reshape(3, 3, 3)
    write(path2, cells)  # a last axis of 3 values on top of the (3, 3) cells
    with tiledb.open(path2) as A:
        got = A[:]["a"]
    np.testing.assert_array_equal(np.stack([got[f] for f in got.dtype.names], -1), cells)
    refused(path2, ValueError, r"data\['a'\]: shape \(3, 3\)", lambda: write(path2, cells[..., 0]))


@pytest.mark.parametrize("domain,coord", [((0, 2**64 - 2), 2**64 - 3), ((0, 2**63 + 1000), 2**63 + 500),
                                          ((2**63, 2**64 - 2), 2**63)])
def test_uint64_domain_above_2_63(tmp_path, domain, coord):
    path = _array(tmp_path, [Dim("d", domain, 10, dtype=np.uint64)], [Attr("a", np.int32)], sparse=True)
    write(path, np.array([7], np.int32), coords=[np.array([coord], np.uint64)])
    with tiledb.open(path) as A:
        got = A[:]
    assert got["d"].tolist() == [coord] and got["a"].tolist() == [7]
    refused(path, ValueError, r"coords\['d'\]: .* outside dimension d's domain",
            lambda: write(path, np.array([7], np.int32), coords=[np.array([domain[1] + 1], np.uint64)]))


def _current_domain_array(tmp_path, sparse):
    """An array TileDB-Py made with domain [0, 99] and current domain [0, 9]."""
    path = str(tmp_path / ("s" if sparse else "d"))
    ctx = tiledb_ctx()  # (one context for the suite: oracle.py)
    dom = tiledb.Domain(tiledb.Dim("d", (0, 99), 10, dtype=np.int64, ctx=ctx), ctx=ctx)
    schema = tiledb.ArraySchema(dom, [tiledb.Attr("a", np.int32, ctx=ctx)], sparse=sparse, ctx=ctx)
    nd = tiledb.NDRectangle(ctx, dom)
    nd.set_range(0, 0, 9)
    cd = tiledb.CurrentDomain(ctx)
    cd.set_ndrectangle(nd)
    schema.set_current_domain(cd)
    tiledb.Array.create(path, schema, ctx=ctx)
    return path


def test_writes_outside_the_current_domain_refused(tmp_path):
    sparse, dense = _current_domain_array(tmp_path, True), _current_domain_array(tmp_path, False)
    # TileDB refuses both
    with pytest.raises(tiledb.TileDBError, match="outside of the defined current domain"):
        with tiledb.open(sparse, "w") as A:
            A[np.array([5, 20])] = np.array([1, 2], np.int32)
    with pytest.raises(tiledb.TileDBError, match="outside of the defined current domain"):
        with tiledb.open(dense, "w") as A:
            A[5:15] = np.arange(10, dtype=np.int32)
    refused(sparse, ValueError, r"coords\['d'\]: 20 is outside dimension d's current domain \[0, 9\]",
            lambda: write(sparse, np.array([1, 2], np.int32), coords=[np.array([5, 20])]))
    refused(dense, ValueError, r"subarray: \[5, 14\] is outside dimension d's current domain \[0, 9\]",
            lambda: write(dense, np.arange(10, dtype=np.int32), subarray=[(5, 14)]))
    write(sparse, np.array([1, 2], np.int32), coords=[np.array([5, 9])])
    write(dense, np.arange(5, dtype=np.int32), subarray=[(5, 9)])
    with tiledb.open(sparse) as A:
        assert A[:]["d"].tolist() == [5, 9]
    with tiledb.open(dense) as A:
        assert A[5:10]["a"].tolist() == list(range(5))


def test_nan_coordinate_refused(tmp_path):
    path = _array(tmp_path, [Dim("d", (0.0, 10.0), 2.0, dtype=np.float64)], [Attr("a", np.int32)], sparse=True)
    refused(path, ValueError, r"coords\['d'\]: NaN at cell 1",
            lambda: write(path, np.array([1, 2], np.int32), coords=[np.array([1.0, np.nan])]))


def test_masked_record_arrays_round_trip_with_tiledb_py(tmp_path):
    """TileDB-Py returns nullable attributes of several values a cell as masked record arrays: write them back."""
    path = str(tmp_path / "m")
    dom = tiledb.Domain(tiledb.Dim("d", (0, 3), 4, dtype=np.int64))
    tiledb.Array.create(path, tiledb.ArraySchema(dom, [tiledb.Attr("a", np.dtype("i4,i4,i4"), nullable=True),
                                                       tiledb.Attr("c", np.complex64, nullable=True)]))
    with tiledb.open(path, "w") as A:
        A[:] = {"a": np.array([(1, 2, 3), (4, 5, 6), (7, 8, 9), (1, 1, 1)], "i4,i4,i4"),
                "c": np.array([1 + 2j, 3, 4, 5], np.complex64)}
    with tiledb.open(path) as A:
        first = A[:]
    write(path, {"a": first["a"], "c": first["c"]})
    with tiledb.open(path) as A:
        again = A[:]
    for k in "ac":
        np.testing.assert_array_equal(again[k], first[k])
    # a null cell, as a masked record (every value of the cell masked)
    a = np.ma.masked_array(first["a"].data, mask=np.array([(True,) * 3, (False,) * 3, (False,) * 3, (False,) * 3],
                                                          "?,?,?"))
    write(path, {"a": a, "c": first["c"]})
    with tiledb.open(path) as A:
        got = A[:]["a"]
    assert np.ma.getmaskarray(got).tolist()[0] == (True, True, True) and got[1].tolist() == (4, 5, 6)
    half = np.ma.masked_array(first["a"].data, mask=np.array([(True, False, False)] + [(False,) * 3] * 3, "?,?,?"))
    refused(path, ValueError, r"data\['a'\]: a cell with some of its values masked",
            lambda: write(path, {"a": half, "c": first["c"]}))


# ---- §5: bad arguments, refused before the first byte ----

@pytest.fixture
def arrays(tmp_path):
    """A dense and a sparse array of int32, uint8, datetime, UTF-8 and ASCII fields (v22)."""
    attrs = lambda: [Attr("i", np.int32), Attr("u", np.uint8), Attr("t", "M8[s]"), Attr("s", str),  # noqa: E731
                     Attr("n", str, nullable=True), Attr("f", np.float32)]
    dense = _array(tmp_path, [Dim("d", (0, 2), 3, dtype=np.int64)], attrs(), name="dense")
    sparse = _array(tmp_path, [Dim("d", (0, 9), 10, dtype=np.int64), Dim("k", None, dtype="ascii")], attrs(),
                    sparse=True, name="sparse")
    return dense, sparse


def _good():
    return {"i": np.array([1, 2, 3], np.int32), "u": np.array([1, 2, 3], np.uint8),
            "t": np.array(["2020-01-01", "2020-01-02", "2020-01-03"], "M8[s]"),
            "s": np.array(["a", "bé", "c"], object), "n": np.array(["x", None, "z"], object),
            "f": np.array([1.5, 2, 3], np.float32)}


def _coords():
    return [np.array([1, 2, 3]), np.array(["a", "b", "c"], object)]


BAD_VALUES = [  # (attribute, values, error, message)
    ("i", np.array([1.5, 2, 3]), TypeError, r"data\['i'\]: values of dtype float64 cannot be stored as int32"),
    ("i", np.array([1, 2**40, 3]), ValueError, r"data\['i'\]: 1099511627776 does not fit int32"),
    ("u", np.array([1, -1, 3]), ValueError, r"data\['u'\]: -1 does not fit uint8"),
    ("u", np.array([1, 256, 3]), ValueError, r"data\['u'\]: 256 does not fit uint8"),
    ("i", np.array(["1", "2", "3"]), TypeError, r"data\['i'\]: values of dtype <U1 cannot be stored"),
    ("t", np.array([1.5, 2.5, 3.5]), TypeError, r"data\['t'\]: values of dtype float64 cannot be stored"),
    ("t", np.array(["2020-01-01T00:00:00.5", "2020", "2020"]), ValueError, r"data\['t'\]: .* exactly"),
    ("t", np.array(["soon", "2020", "2020"]), TypeError, r"data\['t'\]: text that is not dates"),
    ("t", np.array(["7", "2020", "2020"]), TypeError, r"data\['t'\]: text that is not dates of a four-digit year"),
    ("t", np.array(["2020-13-01", "2020", "2020"]), TypeError, r"data\['t'\]: .*expected dates"),
    ("t", np.array(["2020-01-01T00:00:00.5", "2020", "2020"], "M8[ms]"), ValueError, r"data\['t'\]: .* exactly"),
    ("f", np.array([1, 2**60 + 1, 3]), ValueError, r"data\['f'\]: .* cannot be stored as float32 exactly"),
    ("f", np.array([1, 1e300, 3]), ValueError, r"data\['f'\]: .* cannot be stored as float32 exactly"),
    ("s", np.array([1, 2, 3]), TypeError, r"data\['s'\]: cell 0 is int, expected str or bytes"),
    ("s", np.array([1, 256, 3], object), TypeError, r"data\['s'\]: cell 0 is int"),
    ("s", np.array(["a", None, "c"], object), TypeError, r"data\['s'\]: cell 1 is None in a non-nullable field"),
    ("s", np.array(["a", "\ud800", "c"], object), ValueError, r"data\['s'\]: cell 1 .* lone surrogate"),
    ("i", np.array([object(), 1, 2], object), TypeError, r"data\['i'\]: values of mixed or non-numeric types"),
]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("name,values,error,match", BAD_VALUES, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD_VALUES)])
def test_bad_values_refused(arrays, sparse, name, values, error, match):
    path = arrays[sparse]
    data = dict(_good(), **{name: values})
    kw = {"coords": _coords()} if sparse else {}
    refused(path, error, match, lambda: write(path, data, **kw))


def test_good_values_read_by_tiledb_py(arrays):
    for sparse, path in enumerate(arrays):
        write(path, _good(), **({"coords": _coords()} if sparse else {}))
        with tiledb.open(path) as A:
            got = A.query(order="U")[:] if sparse else A[:]
        want = _good()
        for k in "iutsf":
            assert got[k].tolist() == want[k].tolist(), k
        assert np.ma.getmaskarray(got["n"]).tolist() == [False, True, False]


def test_dates_as_text(arrays):
    """TileDB-Py takes dates as text (numpy parses them): so do we, where the field's unit holds them."""
    write(arrays[0], dict(_good(), t=np.array(["2020-01-01", "2020-01-02T03:04:05", "2021"])))
    with tiledb.open(arrays[0]) as A:
        assert A[:]["t"].tolist() == np.array(["2020-01-01", "2020-01-02T03:04:05", "2021"], "M8[s]").tolist()


def test_lossy_opt_in(arrays):
    dense = arrays[0]
    data = dict(_good(), i=np.array([1.9, 2.1, -3.7]), u=np.array([1, 257, -1]))
    write(dense, data, lossy=True)
    with tiledb.open(dense) as A:
        got = A[:]
    assert got["i"].tolist() == [1, 2, -3] and got["u"].tolist() == [1, 1, 255]
    with pytest.raises(TypeError, match="lossy: expected True or False"):
        write(dense, data, lossy="yes")


BAD_COORDS = [
    ([np.array([1.0, 2.9, 3.0]), None], TypeError, r"coords\['d'\]: values of dtype float64"),
    ([None, np.array([1, 2, 3])], TypeError, r"coords\['k'\]: cell 0 is int"),
    ([None, np.array(["a", "é", "c"], object)], ValueError, r"coords\['k'\]: cell 1 .* is not ASCII"),
    ([None, np.array([b"a", b"\xff", b"c"], object)], ValueError, r"coords\['k'\]: an ASCII dimension"),
    ([np.array([1, 2, 10]), None], ValueError, r"coords\['d'\]: 10 is outside dimension d's domain \[0, 9\]"),
    ([np.array([[1, 2, 3]]), None], ValueError, r"coords\['d'\]: expected one coordinate per cell"),
]


@pytest.mark.parametrize("coords,error,match", BAD_COORDS, ids=[str(i) for i in range(len(BAD_COORDS))])
def test_bad_coordinates_refused(arrays, coords, error, match):
    path = arrays[1]
    given = [c if c is not None else d for c, d in zip(coords, _coords())]
    refused(path, error, match, lambda: write(path, _good(), coords=given))


def test_bad_call_shapes_refused(arrays):
    dense, sparse = arrays
    refused(sparse, ValueError, r"subarray: a sparse array is written by the coordinates",
            lambda: write(sparse, _good(), coords=_coords(), subarray=[(0, 2)]))
    refused(sparse, TypeError, r"coords: expected one array of coordinates per dimension",
            lambda: write(sparse, _good(), coords=np.array([1, 2, 3])))
    refused(dense, ValueError, r"coords: a dense array is written by subarray",
            lambda: write(dense, _good(), coords=_coords()))
    refused(dense, ValueError, r"uuid: expected 32 lowercase hex digits",
            lambda: write(dense, _good(), uuid="nope"))
    refused(dense, ValueError, r"data: every attribute is written at once",
            lambda: write(dense, {"i": _good()["i"]}))


def test_enumeration_codes_past_the_values_refused(tmp_path):
    path = str(tmp_path / "e")
    dom = tiledb.Domain(tiledb.Dim("d", (0, 2), 3, dtype=np.int64))
    tiledb.Array.create(path, tiledb.ArraySchema(
        dom, [tiledb.Attr("a", np.int8, enum_label="e", nullable=True)],
        enums=[tiledb.Enumeration("e", False, ["x", "y", "z"])]))
    for codes in ([0, 1, 3], [0, -1, 2]):
        refused(path, ValueError, r"data\['a'\]: code .* is not an index of enumeration 'e''s 3 values",
                lambda: write(path, np.array(codes, np.int8)))
    # a null cell's code is not an index
    write(path, np.ma.masked_array(np.array([0, 9, 2], np.int8), mask=[False, True, False]))
    with tiledb.open(path) as A:
        got = A.query(attrs=["a"])[:]["a"]
    assert got.tolist() == ["x", None, "z"] or np.ma.getmaskarray(got).tolist() == [False, True, False]


@pytest.mark.parametrize("version", [4, 8, 22])  # the metadata file commits (v1-4), .ok (v5-11), __commits (v12+)
def test_a_tile_its_pipeline_cannot_encode_leaves_the_array_as_it_was(tmp_path, version):
    """Values found wrong only while tiles are filtered (positive delta of decreasing values; TileDB refuses
    them too): the fragment folder already written is taken back."""
    from tdbformat.schema import FilterList, PositiveDeltaFilter
    path = _array(tmp_path, [Dim("d", (0, 7), 8, dtype=np.int64)],
                  [Attr("a", np.int32, filters=FilterList([PositiveDeltaFilter()]))], version=version)
    refused(path, ValueError, "POSITIVE_DELTA: the values decrease",
            lambda: write(path, np.array([5, 4, 3, 2, 1, 0, 1, 2], np.int32)))
    write(path, np.arange(8, dtype=np.int32))
    assert tdbformat.open_array(path)[:]["a"].tolist() == list(range(8))


def test_a_fragment_name_in_use_is_refused(tmp_path):
    path = _array(tmp_path, [Dim("d", (0, 1), 2, dtype=np.int64)], [Attr("a", np.int32)])
    uuid = "0123456789abcdef0123456789abcdef"
    write(path, np.array([1, 2], np.int32), uuid=uuid, timestamp=5)
    refused(path, ValueError, "uuid: the array already has a fragment",
            lambda: write(path, np.array([3, 4], np.int32), uuid=uuid, timestamp=5))
    with tiledb.open(path) as A:
        assert A[:]["a"].tolist() == [1, 2]


def test_ints_into_a_bool_attribute(tmp_path):
    path = _array(tmp_path, [Dim("d", (0, 2), 3, dtype=np.int64)], [Attr("b", np.bool_)])
    write(path, np.array([0, 1, 1]))
    with tiledb.open(path) as A:
        assert A[:]["b"].tolist() == [False, True, True]
    refused(path, ValueError, r"data\['b'\]: 2 does not fit bool", lambda: write(path, np.array([0, 2, 1])))
    refused(path, TypeError, r"data\['b'\]: values of dtype float64", lambda: write(path, np.array([0.0, 1, 1])))
