"""A tiledbsoma experiment (scripts/make_soma.py, tests/data/soma/): tiledbsoma 2.3 ingested an AnnData and
appended a second one, which adds fragments, grows the arrays' current domain and extends an enumeration;
``update_obs`` then evolved obs's schema (a column dropped, two added) and wrote its cells again.
Every array reads as tiledbsoma read it back (truth.json) and as TileDB-Py reads it at every timestamp; the
groups' members and metadata are TileDB-Py's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from oracle import assert_same
from tdbformat import open_array
from tdbformat.layout import group_members, read_metadata
from tdbformat.array.cells import tiledb_py_metadata

DATA = Path(__file__).parent / "data" / "soma"
TRUTH = json.loads((DATA / "truth.json").read_text())
ARRAYS = sorted(TRUTH["arrays"])
GROUPS = sorted(p.parent for p in DATA.rglob("__group"))


def _plain(column) -> list:
    """A column as tiledbsoma's truth holds it: None for a null, "nan" for NaN, rows of a 2-D array as lists,
    str for an ASCII dimension's bytes (which TileDB-Py gives as bytes too)."""
    if np.ndim(column) > 1:
        return [_plain(row) for row in column]
    valid = ~np.ma.getmaskarray(column)
    return [None if not ok else "nan" if isinstance(v, float) and v != v else v.decode() if isinstance(v, bytes)
            else v for v, ok in zip(np.ma.getdata(column).tolist(), valid)]


@pytest.mark.parametrize("path", ARRAYS)
def test_reads_equal_tiledbsoma(path):
    entry = TRUTH["arrays"][path]
    arr = open_array(DATA / entry["uri"])
    if entry["soma_object_type"].endswith("DataFrame"):  # with labels; tiledbsoma's rows sorted by soma_joinid
        got = arr[:]
        got = {k: v[np.argsort(got["soma_joinid"], kind="stable")] for k, v in got.items()}
    elif entry["soma_object_type"] == "SOMADenseNDArray":
        got = arr[:]
    else:  # an nd array's cells sorted by its dimensions, row-major
        got = arr.query(order="C")[:]
    assert sorted(entry["read"]) == sorted(got)
    for name, want in entry["read"].items():
        assert _plain(got[name]) == want, name
    assert arr.meta["soma_object_type"] == entry["soma_object_type"]


def test_the_append_extended_an_enumeration_and_grew_the_domain():
    obs = open_array(DATA / "experiment" / "obs")
    assert obs.enumerations["cell_type_U"] == ["B", "T", "NK", "mono"]
    assert len(obs.fragments) == 3 and obs.nonempty_domain() == ((0, 59),)  # the update wrote the third


tiledb = pytest.importorskip("tiledb")


def _stamps(uri: Path) -> list:
    """0, and the time of each fragment and each schema."""
    files = [*(uri / "__fragments").iterdir(), *(uri / "__schema").glob("__*_*"), *(uri / "__commits").iterdir()]
    return sorted({int(p.name.split("_")[2]) for p in files} | {0})


@pytest.mark.parametrize("path", ARRAYS)
def test_reads_equal_live_tiledb_py_at_every_timestamp(path):
    uri = DATA / TRUTH["arrays"][path]["uri"]
    for ts in [*_stamps(uri), None]:
        arr = open_array(uri, timestamp=ts)
        with tiledb.open(str(uri), timestamp=ts) as A:
            codes = A.query(order="C")[:]
            assert_same(arr.query(order="C")[:], codes)
            try:
                labels = A[:]
            except IndexError:  # null cells coded outside their enumeration: "batch" before update_obs wrote it
                got = arr[:]
                assert sorted(got) == sorted(codes) and ts < _stamps(uri)[-1]
                for name in arr.enumeration_labels():
                    assert (np.ma.getmaskarray(got[name]) == np.ma.getmaskarray(codes[name])).all(), name
                continue
            assert_same(arr[:], labels)
            assert arr.nonempty_domain() == A.nonempty_domain(), ts
            assert arr.meta == dict(A.meta.items()), ts


@pytest.mark.parametrize("group", GROUPS, ids=lambda p: p.name)
def test_groups_equal_tiledb_py(group):
    with tiledb.Group(str(group)) as G:
        want = sorted((m.name, Path(m.uri.removeprefix("file://")).name) for m in G)
        meta = dict(G.meta.items())
    assert sorted((m.name, m.uri) for m in group_members(group)) == want
    assert tiledb_py_metadata(read_metadata(group)) == meta
