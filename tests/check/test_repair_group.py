"""``repair`` of a group TileDB-Py wrote: its own damaged metadata files are set aside (TileDB-Py fails on a cut
one: "Read exceeds file size"), the others kept; its members are not walked (their findings are reported, to
repair member by member)."""

from __future__ import annotations

import glob
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tdbformat
from tdbformat.check.repair import repair
from test_repair import _digest
from test_repair_lists import _restore

tiledb = pytest.importorskip("tiledb")


def _group_meta(path: Path) -> str:
    code = ("import sys, tiledb\ntry:\n    with tiledb.Group(sys.argv[1]) as G: print(sorted(dict(G.meta).items()),"
            " len(G))\nexcept Exception as e: print(type(e).__name__)\n")
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    g = tmp_path_factory.mktemp("group") / "g"
    tiledb.Group.create(str(g))
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 9), tile=10, dtype=np.int64))
    tiledb.Array.create(str(g / "arr"), tiledb.ArraySchema(domain=dom, sparse=True,
                                                           attrs=[tiledb.Attr("a", dtype=np.int32)]))
    with tiledb.Group(str(g), "w") as G:
        G.add("arr", relative=True)
    with tiledb.Group(str(g), "w") as G:
        G.meta["k"] = 1
    time.sleep(0.01)  # the second file's name sorts after the first's (millisecond timestamps)
    with tiledb.Group(str(g), "w") as G:
        G.meta["j"] = 2
    return g


def test_a_cut_group_metadata_file_is_set_aside(tmp_path, group):
    root = tmp_path / "g"
    shutil.copytree(group, root)
    first = Path(sorted(glob.glob(str(root / "__meta" / "*")))[0])
    first.write_bytes(first.read_bytes()[:len(first.read_bytes()) // 2])
    assert _group_meta(root) == "TileDBError"
    damaged = _digest(root)
    assert _digest(root) == damaged and [f.repair for f in repair(root).fixes] == ["array-metadata"]
    report = repair(root, in_place=True)
    assert report.complete and report.fixes[0].paths == [f"__meta/{first.name}"]
    assert _group_meta(root) == "[('j', 2)] 1"  # the other file's key, and the member, kept
    assert tdbformat.validate(root) == [] and repair(root).fixes == []
    _restore(root, report)
    assert _digest(root) == damaged


def test_members_are_reported_not_repaired(tmp_path, group):
    root = tmp_path / "g"
    shutil.copytree(group, root)
    (root / "arr" / "__fragments" / "notes.txt").write_text("x")
    report = repair(root, in_place=True)
    assert report.fixes == [] and [f.rule for f in report.unrepaired] == ["stray-files"] and not report.complete
    assert (root / "arr" / "__fragments" / "notes.txt").exists()


def test_a_moved_group_metadata_vacuum_list(tmp_path):
    """A group's metadata vacuum list holds whole URIs, which TileDB matches as they are: once the group is
    moved, they name nothing, and TileDB-Py's vacuum leaves the consolidated files behind (a consistency fix:
    the keys still read). Repair writes them for where the group is; the vacuum then removes them."""
    first, root = tmp_path / "first", tmp_path / "g"
    tiledb.Group.create(str(first))
    for k, v in (("k", 1), ("j", 2)):
        with tiledb.Group(str(first), "w") as G:
            G.meta[k] = v
        time.sleep(0.01)
    tiledb.Group.consolidate_metadata(str(first))
    shutil.move(first, root)
    assert (len(list((root / "__meta").iterdir())), _group_meta(root)) == (4, "[('j', 2), ('k', 1)] 0")
    damaged = _digest(root)
    assert [f.rule for f in tdbformat.validate(root)] == ["vacuum-targets"] * 2
    unrepaired = tmp_path / "unrepaired"
    shutil.copytree(root, unrepaired)
    _vacuum_group_metadata(unrepaired)  # drops the list, keeps the files it named
    assert sorted(p.name for p in (unrepaired / "__meta").iterdir()) == sorted(
        p.name for p in (root / "__meta").iterdir() if p.suffix != ".vac")
    report = repair(root, in_place=True)
    assert [(f.repair, f.action) for f in report.fixes] == [("commit-lists", "rewrite")], str(report)
    assert tdbformat.validate(root) == [] and repair(root).fixes == []
    _restore(root, report)
    assert _digest(root) == damaged
    repair(root, in_place=True)
    _vacuum_group_metadata(root)
    assert len(list((root / "__meta").iterdir())) == 1 and _group_meta(root) == "[('j', 2), ('k', 1)] 0"


def _vacuum_group_metadata(root: Path) -> None:
    subprocess.run([sys.executable, "-c", "import sys, tiledb; tiledb.Group.vacuum_metadata(sys.argv[1])", str(root)],
                   check=True)
