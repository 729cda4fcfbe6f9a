"""Issue #39 §0b: two float32 or float64 values a cell read as complex64 or complex128, as TileDB-Py gives
them (docs/reading-values.md), and what such a read gives writes back unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import tdbformat

tiledb = pytest.importorskip("tiledb")


@pytest.fixture(params=[np.complex64, np.complex128], ids=["complex64", "complex128"])
def written(request, tmp_path):
    """A sparse and a dense array whose attribute TileDB-Py declares complex (FLOAT32/FLOAT64, two values)."""
    dtype = request.param
    values = np.array([1 + 2j, -3.5 + 4j, 0 - 1j, 7.25 + 0j], dtype)
    out = {}
    for sparse in (True, False):
        uri = str(tmp_path / ("sparse" if sparse else "dense"))
        dom = tiledb.Domain(tiledb.Dim("d", domain=(1, 4), tile=2, dtype=np.int64))
        attrs = [tiledb.Attr("z", dtype=dtype), tiledb.Attr("n", dtype=np.int32)]
        tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=sparse, attrs=attrs))
        with tiledb.open(uri, "w", timestamp=1) as A:
            if sparse:
                A[np.arange(1, 5)] = {"z": values, "n": np.arange(4, dtype=np.int32)}
            else:
                A[:] = {"z": values, "n": np.arange(4, dtype=np.int32)}
        out[uri] = values
    return dtype, out


def test_complex_cells_read_as_tiledb_py_reads_them(written):
    dtype, arrays = written
    for uri, values in arrays.items():
        with tiledb.open(uri) as A:
            want = [A[:], A.multi_index[1:4], A.query(attrs=["z"])[2:4]]
        arr = tdbformat.open_array(uri)
        got = [arr[:], arr.multi_index[1:4], arr.query(attrs=["z"])[2:4]]
        for g, w in zip(got, want):
            assert g["z"].dtype == w["z"].dtype == dtype
            np.testing.assert_array_equal(g["z"], w["z"])
        np.testing.assert_array_equal(got[0]["z"], values)


def test_frames_refuse_complex_attributes_by_name(written):
    """Arrow has no complex type: .df and to_arrow refuse the attribute by name (pyarrow's own error named
    nothing), and take the others."""
    pytest.importorskip("pyarrow")
    _, arrays = written
    for uri in arrays:
        arr = tdbformat.open_array(uri)
        for frame in (lambda: arr.df[:], lambda: arr.to_arrow()):
            with pytest.raises(TypeError, match="'z' holds complex numbers"):
                frame()
        assert list(arr.query(attrs=["n"]).df[:]["n"]) == [0, 1, 2, 3]


def test_what_a_read_gives_writes_back(written, tmp_path):
    dtype, arrays = written
    for uri, values in arrays.items():
        cells = tdbformat.open_array(uri)[:]
        sparse = "d" in cells
        kwargs = {"coords": [cells["d"] + 0]} if sparse else {"subarray": [(1, 4)]}
        tdbformat.write(uri, {"z": cells["z"] * 2, "n": cells["n"]}, timestamp=2, **kwargs)
        # the record of (real, imaginary) that tdbformat read before still writes the same cells
        record = (cells["z"] * 3).view([("f0", values.real.dtype), ("f1", values.real.dtype)])
        tdbformat.write(uri, {"z": record, "n": cells["n"]}, timestamp=3, **kwargs)
        with tiledb.open(uri, timestamp=2) as A:
            np.testing.assert_array_equal(A[:]["z"], values * 2)
        with tiledb.open(uri) as A:
            np.testing.assert_array_equal(A[:]["z"], values * 3)
