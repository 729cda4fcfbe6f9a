"""Issue #39 §0b: arrays of format versions 1-4 that TileDB 2.30 appended to. TileDB writes a v22 fragment
into them whose dimension tiles carry no filters (a v1-4 dimension has no pipeline of its own, so the schema's
coordinate filters do not apply: feature ``dimension_filters``); tdbformat reads them as TileDB-Py does."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import tdbformat
from tdbformat import schema as S
from tdbformat.versions import FEATURES

tiledb = pytest.importorskip("tiledb")
CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
OLD_SPARSE = ["v1_c-api_core-1.4.0", "v3_c-api_core-1.6.3", "v4_c-api_core-1.7.7"]


def _append_and_compare(path):
    with tiledb.open(str(path)) as A:
        schema = A.schema
    lo = [int(d.domain[0]) for d in schema.domain]
    coords = [np.array([x, x + 1]) for x in lo]
    values = {a.name: np.array(["new", "cells"], dtype=object) if a.isvar else np.array([7, 8], a.dtype)
              for a in schema}
    with tiledb.open(str(path), "w") as A:
        A[tuple(coords)] = values
    with tiledb.open(str(path)) as A:
        assert any(f.version == 22 for f in tiledb.array_fragments(str(path)))
        want = A[:]
    got = tdbformat.open_array(path)[:]
    assert set(got) == set(want)
    for name, values in want.items():
        np.testing.assert_array_equal(np.asarray(got[name]), values, err_msg=name)
    assert not [f for f in tdbformat.validate(path) if f.severity == "error"]


@pytest.mark.parametrize("writer", OLD_SPARSE)
def test_corpus_arrays_appended_by_tiledb(tmp_path, writer):
    shutil.copytree(CORPUS / writer / "sparse_2d_rtree" / "array", tmp_path / "a")
    _append_and_compare(tmp_path / "a")


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_tdbformat_arrays_appended_by_tiledb(tmp_path, version):
    dom = S.Domain(S.Dim("x", domain=(0, 99), tile=10, dtype=np.int64), S.Dim("y", domain=(0, 99), tile=10,
                                                                                dtype=np.int64))
    schema = S.ArraySchema(domain=dom, attrs=[S.Attr("a", dtype=np.int32)], sparse=True, capacity=3,
                           coords_filters=[S.ZstdFilter(level=3)])
    tdbformat.create(tmp_path / "a", schema, version=version)
    tdbformat.write(tmp_path / "a", {"a": np.arange(5, dtype=np.int32)}, coords=[np.arange(5) * 7, np.arange(5)])
    _append_and_compare(tmp_path / "a")


def test_the_feature_is_declared():
    assert not FEATURES["dimension_filters"](4) and FEATURES["dimension_filters"](5)


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_tdbformat_dense_arrays_appended_by_tiledb(tmp_path, version):
    dom = S.Domain(S.Dim("x", domain=(1, 8), tile=4, dtype=np.int64), S.Dim("y", domain=(1, 6), tile=3,
                                                                           dtype=np.int64))
    schema = S.ArraySchema(domain=dom, attrs=[S.Attr("a", dtype=np.float64, filters=[S.ZstdFilter(level=3)])],
                           coords_filters=[S.ZstdFilter(level=3)])
    tdbformat.create(tmp_path / "a", schema, version=version)
    tdbformat.write(tmp_path / "a", {"a": np.arange(48, dtype=np.float64).reshape(8, 6)}, subarray=[(1, 8), (1, 6)])
    with tiledb.open(str(tmp_path / "a"), "w") as A:
        A[2:4, 3:6] = {"a": np.full((2, 3), -1.0)}
    with tiledb.open(str(tmp_path / "a")) as A:
        want = A[:]["a"]
    assert (want == -1).sum() == 6
    np.testing.assert_array_equal(tdbformat.open_array(tmp_path / "a")[:]["a"], want)
