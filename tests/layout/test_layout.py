"""The layout contract (tdbformat.layout): which files an array's folders hold and which of them a read sees.
On every corpus array, the committed fragments a read sees are TileDB's (truth.json's ``fragments``) and the
ones consolidated away are its ``to_vacuum``; on arrays TileDB-Py writes and consolidates here, every state
of a fragment folder (committed, consolidated, vacuumed, uncommitted) is the one TileDB-Py's fragment info
and the folders on disk show."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import tiledb_arrays
from corpus import case_id, cases, key, root, truth
from tdbformat import layout
from tdbformat.storage import storage_for

tiledb = pytest.importorskip("tiledb")

ARRAYS = [c for c in cases() if truth(c)["kind"] == "array" and "fragments" in truth(c)]


def _names(uris) -> set[str]:
    return {u.rstrip("/").rsplit("/", 1)[-1] for u in uris}


def _states_of(uri, key=None) -> dict:
    """``layout.fragment_states`` of the array at ``uri``, the live fragments those a read at any time sees."""
    storage, root_ = storage_for(str(uri))
    listing = layout.Listing.of(storage, root_, key)
    sparse = layout.load_schemas(storage, root_, key)[-1][1].array_type.name == "SPARSE"
    live = listing.live((0, 2**64 - 1), sparse=sparse)
    return layout.fragment_states(listing, [f.name for f in listing.fragments], live,
                                  layout.fragment_folders(storage, root_))


@pytest.mark.parametrize("case", ARRAYS, ids=case_id)
def test_the_live_and_consolidated_fragments_are_tiledbs(case):
    t = truth(case)
    storage, root_ = storage_for(str(root(case)))
    if layout.dialect(storage, root_):
        pytest.skip("an array before format version 1 has no commits to list")
    states = _states_of(root(case), key(case))
    committed = {n for n, s in states.items() if s == "committed"}
    consolidated = {n for n, s in states.items() if s == "consolidated"}
    if all("cell_num" not in f for f in t["fragments"]):  # libtiledb < 2.2 (no fragment info): every folder
        assert committed | consolidated == _names(f["uri"] for f in t["fragments"])
    else:
        assert committed == _names(f["uri"] for f in t["fragments"])
        assert consolidated == _names(t.get("to_vacuum") or [])
    assert set(states.values()) <= {"committed", "consolidated"}  # TileDB left nothing half-done


def _fragment_info(uri) -> tuple[set, set]:
    info = tiledb.array_fragments(uri)
    return _names(info.uri), _names(info.to_vacuum)


@pytest.fixture
def consolidated(tmp_path):
    """Three fragments of a sparse array, consolidated (not vacuumed) into a fourth."""
    uri = tiledb_arrays.sparse_cells(tmp_path / "a", n=10, fragments=3)
    tiledb.consolidate(uri)
    return uri


def test_consolidated_fragments_stay_until_vacuumed(consolidated):
    live, to_vacuum = _fragment_info(consolidated)
    states = _states_of(consolidated)
    assert len(live) == 1 and len(to_vacuum) == 3
    assert states == {**dict.fromkeys(live, "committed"), **dict.fromkeys(to_vacuum, "consolidated")}


def test_a_vacuum_that_removed_the_folders_but_not_its_list_leaves_them_vacuumed(consolidated):
    live, to_vacuum = _fragment_info(consolidated)
    storage, root_ = storage_for(consolidated)
    folders = layout.fragment_folders(storage, root_)
    for name in to_vacuum:  # TileDB's vacuum removes the fragments first, then the .vac file
        shutil.rmtree(folders[name])
    assert _fragment_info(consolidated)[0] == live
    assert _states_of(consolidated) == {**dict.fromkeys(live, "committed"), **dict.fromkeys(to_vacuum, "vacuumed")}
    tiledb.vacuum(consolidated)  # the whole vacuum: gone fragments leave no trace
    assert _states_of(consolidated) == dict.fromkeys(live, "committed")


def test_a_fragment_without_its_commit_is_uncommitted_and_unseen(tmp_path):
    uri = tiledb_arrays.dense_grid(tmp_path / "d", fragments=2)
    storage, root_ = storage_for(uri)
    listing = layout.Listing.of(storage, root_)
    last = listing.fragments[-1].name
    (tmp_path / "d" / "__commits" / f"{last}.wrt").unlink()
    live, _ = _fragment_info(uri)
    assert last not in live and len(live) == 1
    assert _states_of(uri) == {**dict.fromkeys(live, "committed"), last: "uncommitted"}


def test_file_kinds_of_an_array_written_by_tiledb_py(tmp_path):
    """Each file TileDB-Py writes has the kind its place and name give (array_file_hierarchy.md)."""
    uri = tiledb_arrays.sparse_cells(tmp_path / "s", n=5, fragments=2)
    with tiledb.open(uri, "w", timestamp=9) as A:
        A.meta["k"] = np.int64(1)
    tiledb.consolidate(uri)
    storage, root_ = storage_for(uri)
    kinds = {}
    for p in storage.walk(root_):
        kinds.setdefault(layout.file_kind(storage, p), set()).add(p.relative_to(root_).parts[0])
    assert kinds == {"array_schema": {"__schema"}, "commit": {"__commits"}, "vacuum": {"__commits"},
                     "fragment_metadata": {"__fragments"}, "data": {"__fragments"}, "metadata": {"__meta"}}


def test_fragment_folders_are_told_from_files_without_a_stat_each(tmp_path, monkeypatch):
    """An open finds the fragment folders of ``__fragments`` from one listing of entry types, not a ``stat`` per
    fragment; a folder linked in is still one (as a stat follows links), a stray file or a dangling link with a
    fragment's name is not, and the array reads as TileDB-Py reads it."""
    import os
    import tiledb

    from tdbformat import open_array
    uri = str(tmp_path / "a")
    dim = tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True,
                                                attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for t in range(1, 13):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[[t, t + 50]] = np.array([t, -t], np.int32)
    frags = tmp_path / "a" / "__fragments"
    moved = sorted(frags.iterdir())[3]
    shutil.move(str(moved), str(tmp_path / "elsewhere"))
    os.symlink(tmp_path / "elsewhere", moved)  # a fragment folder linked in
    (frags / "__99_99_0123456789abcdef0123456789abcdef_22").write_bytes(b"")  # a stray file, no commit
    os.symlink(tmp_path / "gone", frags / "__98_98_0123456789abcdef0123456789abcdef_22")  # dangling
    with tiledb.open(uri) as A:
        want = A[:]
    stats, real = [], os.stat

    def stat(path, *args, **kwargs):
        stats.append(str(path))
        return real(path, *args, **kwargs)
    monkeypatch.setattr(os, "stat", stat)
    arr = open_array(uri)
    monkeypatch.undo()
    assert len(arr.fragments) == 12
    assert not [p for p in stats if p.rstrip("/").rsplit("/", 1)[-1].startswith("__") and
                p.rstrip("/").endswith(("_22",))], stats  # no fragment folder statted
    got = arr[:]
    assert {k: v.tolist() for k, v in got.items()} == {k: v.tolist() for k, v in want.items()}
