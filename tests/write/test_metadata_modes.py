"""Consolidation modes commits, fragment_meta, array_meta and group_meta, and their vacuums, against
TileDB-Py's on copies of one array: the files written are the same bytes (names apart: a new uuid), the
files removed the same, and TileDB-Py reads both copies alike."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

tiledb = pytest.importorskip("tiledb")

from tdbformat.write.consolidate import consolidate  # noqa: E402
from tdbformat.write.vacuum import vacuum  # noqa: E402


def _build(path):
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=True, capacity=4,
                                                      attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for t, xs in [(10, [1, 5, 7]), (20, [5, 9, 3]), (30, [7, 1, 11, 12])]:
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[np.array(xs)] = np.array(xs, np.int32)
            A.meta[f"k{t}"] = t
            A.meta["z"] = f"s{t}"
    with tiledb.open(str(path), "d", timestamp=25) as A:
        A.query(cond="a == 5").submit()
    with tiledb.open(str(path), "w", timestamp=35) as A:
        del A.meta["k10"]


def _tree(path) -> dict:
    out = {}
    for root, _, files in os.walk(path):
        for n in files:
            p = os.path.join(root, n)
            out[os.path.relpath(p, path)] = open(p, "rb").read()
    return out


def _unnamed(rel: str) -> str:
    """A path with the uuids of its names blanked (consolidation names files with a new uuid), and the
    array's own path (in whole URIs) left out."""
    out = []
    for name in rel.split(os.sep):
        parts = name.split("_")
        if len(parts) >= 5 and len(parts[4].split(".")[0]) == 32:
            parts[4] = "U" + parts[4][32:]
        out.append("_".join(parts))
    return os.sep.join(out)


def _new_files(before, after) -> dict:
    return {_unnamed(k): v for k, v in after.items() if k not in before}


def _gone(before, after) -> list:
    return sorted(_unnamed(k) for k in before if k not in after)


def _reads(path):
    with tiledb.open(str(path)) as A:
        return repr(dict(A.meta.items())), repr(A[:])


@pytest.fixture
def pair(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    _build(theirs)
    shutil.copytree(theirs, ours)
    return ours, theirs


def _both(pair, mode, vacuum_too=False):
    ours, theirs = pair
    b_ours, b_theirs = _tree(ours), _tree(theirs)
    if vacuum_too:
        tiledb.vacuum(str(theirs), config=tiledb.Config({"sm.vacuum.mode": mode}))
        vacuum(str(ours), mode=mode)
    else:
        tiledb.consolidate(str(theirs), config=tiledb.Config({"sm.consolidation.mode": mode}))
        consolidate(str(ours), config={"sm.consolidation.mode": mode})
    a_ours, a_theirs = _tree(ours), _tree(theirs)
    assert _new_files(b_ours, a_ours) == _new_files(b_theirs, a_theirs)
    assert _gone(b_ours, a_ours) == _gone(b_theirs, a_theirs)
    assert _reads(ours) == _reads(theirs)
    return _new_files(b_ours, a_ours), _gone(b_ours, a_ours)


@pytest.mark.parametrize("mode", ["commits", "fragment_meta", "array_meta"])
def test_mode_and_its_vacuum_as_tiledb(pair, mode):
    written, _ = _both(pair, mode)
    assert written  # the copies had something to consolidate
    _, removed = _both(pair, mode, vacuum_too=True)
    if mode != "fragment_meta":  # (one .meta: nothing older to vacuum)
        assert removed


def test_vacuuming_fragments_whose_commits_a_con_holds_writes_an_ignore_file(pair):
    """The class of TileDB-Py#1885: the commits of vacuumed fragments are listed in a .ign, as TileDB does, and
    the consolidated commits stay readable."""
    _both(pair, "commits")
    _both(pair, "commits", vacuum_too=True)
    _both(pair, "fragments")
    written, removed = _both(pair, "fragments", vacuum_too=True)
    assert any(k.endswith(".ign") for k in written)
    # TileDB 2.30 cannot consolidate the commits again: it asks the size of the .del file the first .con
    # holds, which the commits vacuum removed (DISCREPANCIES.md); the .con holds the whole .del, which we use
    ours, theirs = pair
    with pytest.raises(tiledb.TileDBError, match="Cannot get file size"):
        tiledb.consolidate(str(theirs), config=tiledb.Config({"sm.consolidation.mode": "commits"}))
    consolidate(str(ours), config={"sm.consolidation.mode": "commits"})
    vacuum(str(ours), mode="commits")
    assert _reads(ours) == _reads(theirs)
    assert len(os.listdir(ours / "__commits")) == 1  # one .con holds every commit; the rest went


def test_dry_run_writes_nothing(pair):
    ours, _ = pair
    before = _tree(ours)
    for mode in ("commits", "fragment_meta", "array_meta", "fragments"):
        assert consolidate(str(ours), config={"sm.consolidation.mode": mode}, dry_run=True)["steps"]
    assert _tree(ours) == before


def test_group_meta_as_tiledb(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    tiledb.Group.create(str(theirs))
    for t in (10, 20, 30):
        with tiledb.Group(str(theirs), "w", config=tiledb.Config({"sm.group.timestamp_end": str(t)})) as g:
            g.meta[f"k{t}"] = t
    shutil.copytree(theirs, ours)
    b_ours, b_theirs = _tree(ours), _tree(theirs)
    tiledb.Group.consolidate_metadata(str(theirs))
    consolidate(str(ours), config={"sm.consolidation.mode": "group_meta"})
    mine, other = _new_files(b_ours, _tree(ours)), _new_files(b_theirs, _tree(theirs))
    assert mine.keys() == other.keys()
    for k in mine:  # a group's vacuum file holds whole URIs: each copy's own
        assert mine[k] == other[k].replace(str(theirs).encode(), str(ours).encode()), k
    tiledb.Group.vacuum_metadata(str(theirs))
    vacuum(str(ours), mode="group_meta")
    assert sorted(map(_unnamed, _tree(ours))) == sorted(map(_unnamed, _tree(theirs)))


@pytest.mark.parametrize("line", ["../outside/victim.wrt", "/{outside}/victim.wrt", "file://{outside}/victim.wrt",
                                  "__commits/../../outside/victim.wrt"])
def test_hostile_consolidated_commits_change_nothing_outside_the_array(tmp_path, line):
    from construct import Container, ListContainer

    from tdbformat.structs.commits import ConsolidatedCommits

    ours = tmp_path / "arr"
    _build(ours)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.wrt").write_bytes(b"keep")
    entries = [Container(uri=line.format(outside=outside), delete=None)]
    (ours / "__commits" / "__1_2_0123456789abcdef0123456789abcdef_22.con").write_bytes(
        ConsolidatedCommits.build(Container(entries=ListContainer(entries))))
    (ours / "__commits" / "__1_2_0123456789abcdef0123456789abcdee_22.ign").write_text(
        line.format(outside=outside) + "\n")
    for mode in ("commits", "fragments"):
        vacuum(str(ours), mode=mode)
    consolidate(str(ours), config={"sm.consolidation.mode": "commits"})
    vacuum(str(ours), mode="commits")
    assert (outside / "victim.wrt").read_bytes() == b"keep"
    assert sorted(os.listdir(outside)) == ["victim.wrt"]
