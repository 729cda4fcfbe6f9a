"""Array metadata writes (put_metadata, delete_metadata) against TileDB-Py, the oracle: the same file for the
same assignments, and each side reads what the other wrote."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import tdbformat
from tdbformat.structs.metadata import ArrayMetadata
from tdbformat.versions import DEFAULT_WRITE_VERSION

from corpus import CORPUS
from oracle import tiledb_ctx

tiledb = pytest.importorskip("tiledb")

KEY = "0123456789abcdeF0123456789abcdeF"

VALUES = {
    "i": 3, "f": 2.5, "s": "héllo", "b": b"\x00\x01", "t": True, "l": [1, 2, 3], "lf": (1.0, 2.0),
    "n": np.arange(6, dtype=np.uint16).reshape(2, 3), "e": "", "ns": np.int32(7), "nf": np.float32(1.5),
    "ea": np.array([], dtype=np.int8), "z": np.array(5.0), "el": [], "c": np.bytes_(b"xy"),
}


def _make(path, key=None):
    dim = tiledb.Dim(name="d", domain=(0, 9), tile=10, dtype=np.int32)
    schema = tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[tiledb.Attr(name="a", dtype=np.int64)],
                                ctx=tiledb_ctx(key))
    tiledb.Array.create(str(path), schema, ctx=tiledb_ctx(key))
    return path


def _meta_files(path):
    return sorted((path / "__meta").iterdir())


def _py_meta(path, key=None, timestamp=None):
    with tiledb.open(str(path), ctx=tiledb_ctx(key), timestamp=timestamp) as A:
        # copies: TileDB-Py's arrays are views of buffers that closing the array frees
        return {k: A.meta[k].copy() if isinstance(A.meta[k], np.ndarray) else A.meta[k] for k in A.meta}


def _assert_meta_equal(got, want):
    assert sorted(got) == sorted(want)
    for k in want:
        assert type(got[k]) is type(want[k]), k
        if isinstance(want[k], np.ndarray):
            assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape, k
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def test_the_file_equals_tiledb_pys(tmp_path):
    """The same assignments at the same timestamp make the same bytes as TileDB-Py's (name's uuid aside)."""
    ours, theirs = _make(tmp_path / "ours"), _make(tmp_path / "theirs")
    with tiledb.open(str(theirs), "w", timestamp=5) as A:
        for k, v in VALUES.items():
            A.meta[k] = v
    tdbformat.put_metadata(ours, VALUES, timestamp=5)
    [a], [b] = _meta_files(ours), _meta_files(theirs)
    assert a.name.startswith("__5_5_") and len(a.name) == len(b.name)
    assert a.read_bytes() == b.read_bytes()


def test_tiledb_py_reads_what_we_put_and_delete(tmp_path):
    path = _make(tmp_path / "a")
    tdbformat.put_metadata(path, VALUES, timestamp=10)
    tdbformat.delete_metadata(path, ["i", "n"], timestamp=20)
    tdbformat.put_metadata(path, {"i": [7, 8]}, timestamp=30)
    want10 = dict(VALUES)
    _assert_meta_equal(_py_meta(path, timestamp=10), _py_meta_of(tmp_path / "want10", want10))
    after = {k: v for k, v in want10.items() if k not in ("i", "n")}
    _assert_meta_equal(_py_meta(path, timestamp=20), _py_meta_of(tmp_path / "want20", after))
    _assert_meta_equal(_py_meta(path), _py_meta_of(tmp_path / "want30", {**after, "i": [7, 8]}))
    assert _py_meta(path)["i"] == (7, 8)


def _py_meta_of(path, values):
    """What TileDB-Py reads back after putting ``values`` itself: the expected side of the comparison."""
    _make(path)
    with tiledb.open(str(path), "w") as A:
        for k, v in values.items():
            A.meta[k] = v
    return _py_meta(path)


def test_big_endian_values_are_stored_little_endian(tmp_path):
    """The format is little-endian: a big-endian array is stored by value (TileDB-Py 0.36 stores its bytes
    as they are, so it reads back 3.1e-319 for 1.5; we do not copy that)."""
    path = _make(tmp_path / "a")
    tdbformat.put_metadata(path, {"v": np.array([1.5, -2.0], dtype=">f8"), "w": np.array([[1, 2]], ">i4")})
    got = _py_meta(path)
    np.testing.assert_array_equal(got["v"], [1.5, -2.0])
    np.testing.assert_array_equal(got["w"], [[1, 2]])
    assert got["w"].dtype == np.int32


def test_default_timestamp_is_now(tmp_path):
    path = _make(tmp_path / "a")
    written = tdbformat.put_metadata(path, {"x": 1})
    with tiledb.open(str(path)) as A:
        assert A.meta["x"] == 1
        assert A.timestamp_range[1] >= int(written.rsplit("/", 1)[-1].split("_")[2])


def test_we_read_what_tiledb_py_put(tmp_path):
    path = _make(tmp_path / "a")
    with tiledb.open(str(path), "w") as A:
        for k, v in VALUES.items():
            A.meta[k] = v
    with tiledb.open(str(path), "w") as A:
        del A.meta["s"]
    _assert_meta_equal(tdbformat.open_array(path).meta, _py_meta(path))


def test_encrypted(tmp_path):
    path = _make(tmp_path / "a", KEY)
    tdbformat.put_metadata(path, {"x": 1.5, "s": "text"}, timestamp=3, key=KEY)
    [f] = _meta_files(path)
    assert ArrayMetadata.parse(f.read_bytes(), key=KEY)._generic_tile.encryption_type == 1
    assert _py_meta(path, KEY) == {"x": 1.5, "s": "text"}


@pytest.mark.parametrize("case", ["v4_c-api_core-1.7.7/array_metadata", "v10_c-api_core-2.5.4/array_metadata"])
def test_old_versions(tmp_path, case):
    """The file is of the array's format version, and TileDB-Py reads it with the array's older metadata."""
    path = tmp_path / "a"
    shutil.copytree(CORPUS / case / "array", path)
    version = tdbformat.open_array(path).schema.version
    before = _py_meta(path)
    new = tdbformat.put_metadata(path, {"added": 42}, timestamp=2**40)
    assert ArrayMetadata.parse(Path(new).read_bytes())._generic_tile.version == version
    assert _py_meta(path) == {**before, "added": 42}


def test_before_v4_is_refused(tmp_path):
    path = tmp_path / "a"
    shutil.copytree(CORPUS / "v3_c-api_core-1.6.3/filter_gzip/array", path)
    with pytest.raises(ValueError, match="version 4"):
        tdbformat.put_metadata(path, {"x": 1})
    assert not (path / "__meta").exists()


@pytest.mark.parametrize("mapping,error", [
    ({"x": object()}, TypeError), ({"x": [1, 2.0]}, TypeError), ({1: 2}, TypeError),
    ({"x": np.array(["a"])}, TypeError), ({}, ValueError), ([("x", 1)], TypeError),
])
def test_bad_values(tmp_path, mapping, error):
    path = _make(tmp_path / "a")
    with pytest.raises(error):
        tdbformat.put_metadata(path, mapping)
    assert not (path / "__meta").exists() or not list((path / "__meta").iterdir())


def test_bad_timestamp(tmp_path):
    path = _make(tmp_path / "a")
    with pytest.raises(ValueError, match="timestamp"):
        tdbformat.put_metadata(path, {"x": 1}, timestamp=-1)


def test_group_metadata(tmp_path):
    """A group's metadata: TileDB-Py's tiledb.Group reads what we put, at its group's version."""
    root = tmp_path / "g"
    tiledb.Group.create(str(root))
    with tiledb.Group(str(root), "w") as G:
        G.meta["old"] = 1
    mine = tdbformat.put_metadata(root, {"s": "text", "v": np.array([1.5, 2.5])})
    tdbformat.delete_metadata(root, "old")
    with tiledb.Group(str(root)) as G:
        got = {k: G.meta[k].copy() if isinstance(G.meta[k], np.ndarray) else G.meta[k] for k in G.meta}
    assert got.keys() == {"s", "v"} and got["s"] == "text"
    np.testing.assert_array_equal(got["v"], [1.5, 2.5])
    assert ArrayMetadata.parse(Path(mine).read_bytes())._generic_tile.version == DEFAULT_WRITE_VERSION  # as TileDB 2.30


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    """A rename that fails leaves no partial file (TileDB 2.30 would load one from __meta/), the metadata as it
    was for TileDB-Py, and the next write succeeds."""
    path = _make(tmp_path / "a")
    tdbformat.put_metadata(path, {"k": 1}, timestamp=1)
    before = sorted(p.name for p in _meta_files(path))

    def no_space(*args):
        raise OSError(28, "No space left on device")
    with monkeypatch.context() as m:
        m.setattr("tdbformat.storage.os.replace", no_space)
        with pytest.raises(tdbformat.StorageError, match="No space left"):
            tdbformat.put_metadata(path, {"x": 2}, timestamp=2)
    assert sorted(p.name for p in _meta_files(path)) == before
    assert _py_meta(path) == {"k": 1}
    tdbformat.put_metadata(path, {"x": 2}, timestamp=3)
    assert _py_meta(path) == {"k": 1, "x": 2}


# ---- hypothesis: random mappings, written by TileDB-Py and by us ----

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

_KEYS = st.text(st.characters(min_codepoint=48, max_codepoint=122), min_size=1, max_size=8)
_NUMERIC = st.sampled_from([np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
                            np.float32, np.float64, np.bool_])
_VALUES = st.one_of(
    st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), st.text(max_size=20), st.binary(max_size=20),
    st.lists(st.integers(-2**63, 2**63 - 1), max_size=5), st.lists(st.floats(allow_nan=False), max_size=5),
    _NUMERIC.flatmap(lambda t: hnp.arrays(t, hnp.array_shapes(min_dims=0, max_dims=3, max_side=3))),
    _NUMERIC.flatmap(lambda t: hnp.from_dtype(np.dtype(t)).map(lambda v: np.dtype(t).type(v))),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mapping=st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=6))
def test_random_mappings_equal_tiledb_pys_file(tmp_path_factory, mapping):
    folder = tmp_path_factory.mktemp("m")
    ours, theirs = _make(folder / "ours"), _make(folder / "theirs")
    with tiledb.open(str(theirs), "w", timestamp=5) as A:
        for k, v in mapping.items():
            A.meta[k] = v
    tdbformat.put_metadata(ours, mapping, timestamp=5)
    [a], [b] = _meta_files(ours), _meta_files(theirs)
    assert a.read_bytes() == b.read_bytes()
