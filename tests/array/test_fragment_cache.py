"""Committed fragments (tdbformat/array/fragment.py): a local fragment's metadata parse is kept for the next
open by the bytes it depends on (the metadata file's, the fragment's name, the schema files'), never by its
path: an array whose files changed under the same names reads what TileDB-Py reads."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import tiledb

import tiledb_arrays
from common import equal_cells
from tdbformat import open_array
from tdbformat.array import fragment
from tdbformat.errors import FormatError
from tdbformat.fields import ParseMemo
from tdbformat.structs.fragment import FragmentMetadata


@pytest.fixture
def memo(monkeypatch):
    """An empty memo of parsed fragment metadata, and the parses made: ``[fragment name]``."""
    fresh = ParseMemo(FragmentMetadata, size=256, largest=64 << 10, copy=lambda fm: fm)
    monkeypatch.setattr(fragment, "_PARSED", fresh)
    parses, real = [], FragmentMetadata.parse.__func__
    monkeypatch.setattr(FragmentMetadata, "parse", classmethod(
        lambda cls, data, **kw: parses.append(kw.get("name")) or real(cls, data, **kw)))
    return fresh, parses


def _array(path, values, filters=()):
    uri = tiledb_arrays.create(path, [("x", (0, 99), 10)], [("a", np.int64, {"filters": list(filters)})],
                               sparse=True, capacity=8)
    tiledb_arrays.write(uri, {"a": np.asarray(values, np.int64)}, coords=[np.arange(len(values)) * 3], timestamp=1)
    return uri


def _same_as_tiledb_py(uri):
    got = open_array(uri).query(order="G")[:]
    with tiledb.open(uri) as A:
        want = A.query(order="G")[:]
    for name in want:
        equal_cells(got[name], want[name], name)


def test_a_second_open_parses_no_fragment_metadata_again(tmp_path, memo):
    uri = tiledb_arrays.sparse_cells(tmp_path / "a", n=50, fragments=3)
    _same_as_tiledb_py(uri)
    assert len(memo[1]) == 3
    _same_as_tiledb_py(uri)
    assert len(memo[1]) == 3  # kept from the first open


def test_a_fragment_rewritten_under_its_name_is_parsed_anew(tmp_path, memo):
    """Array b is a copy of a whose fragment was replaced by another of other cells, under the first one's
    name: the kept parse of a's file is not b's."""
    a = _array(tmp_path / "a", np.arange(20))
    b = str(tmp_path / "b")
    shutil.copytree(a, b)
    other = str(tmp_path / "other")  # a second fragment of a's schema, of 33 other cells
    shutil.copytree(a, other)
    tiledb_arrays.write(other, {"a": np.arange(100, 133)}, coords=[np.arange(33) * 2], timestamp=2)
    (name,) = [f.name for f in open_array(a).fragments]
    theirs = open_array(other).fragments[-1].name
    shutil.rmtree(f"{b}/__fragments/{name}")
    shutil.copytree(f"{other}/__fragments/{theirs}", f"{b}/__fragments/{name}")
    _same_as_tiledb_py(a)
    _same_as_tiledb_py(b)
    assert memo[1] == [name, name]


def test_a_schema_rewritten_under_its_name_is_not_taken_for_the_old_one(tmp_path, memo):
    """Array b is a copy of a whose schema file holds another schema under the same name (its attribute
    zstd-compressed, where a's tiles are not): b's read fails as in a fresh process, as TileDB-Py's does,
    and never gives a's cells through a's kept parse."""
    a = _array(tmp_path / "a", np.arange(20))
    b = str(tmp_path / "b")
    shutil.copytree(a, b)
    zstd = tiledb_arrays.create(tmp_path / "zstd", [("x", (0, 99), 10)],
                                [("a", np.int64, {"filters": [tiledb.ZstdFilter()]})], sparse=True, capacity=8)
    (schema,), (other,) = ([p for p in (tmp_path / n / "__schema").iterdir() if p.is_file()] for n in ("b", "zstd"))
    schema.write_bytes(other.read_bytes())
    with pytest.raises(tiledb.TileDBError):
        with tiledb.open(b) as A:
            A.query(order="G")[:]
    _same_as_tiledb_py(a)
    with pytest.raises(FormatError):
        open_array(b).read(order="G")
    assert len(memo[1]) == 2 and zstd
