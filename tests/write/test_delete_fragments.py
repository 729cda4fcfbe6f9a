"""delete_fragments against TileDB-Py's Array.delete_fragments, and clean --uncommitted."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

tiledb = pytest.importorskip("tiledb")

from tdbformat.cli import main  # noqa: E402
from tdbformat.write.clean import clean_uncommitted  # noqa: E402
from tdbformat.write.consolidate import consolidate  # noqa: E402
from tdbformat.write.vacuum import delete_fragments  # noqa: E402


def _build(path):
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=True,
                                                      attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for t in (10, 20, 30, 40):
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[np.array([t // 10, 50 + t // 10])] = np.array([t, t], np.int32)


def _state(path):
    with tiledb.open(str(path)) as A:
        cells = repr(A[:])
    return cells, sorted(len(os.listdir(path / d)) for d in ("__fragments", "__commits"))


@pytest.mark.parametrize("window, commits_first", [((20, 30), False), ((0, 100), False), ((15, 25), False),
                                                   ((20, 30), True), ((25, 26), False)])
def test_delete_fragments_as_tiledb(tmp_path, window, commits_first):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    _build(theirs)
    if commits_first:  # the commits are in a .con: TileDB writes a .ign for them
        tiledb.consolidate(str(theirs), config=tiledb.Config({"sm.consolidation.mode": "commits"}))
        tiledb.vacuum(str(theirs), config=tiledb.Config({"sm.vacuum.mode": "commits"}))
    shutil.copytree(theirs, ours)
    tiledb.Array.delete_fragments(str(theirs), *window)
    delete_fragments(str(ours), *window)
    assert _state(ours) == _state(theirs)
    assert sorted(n.rsplit("_", 2)[0][:6] for n in os.listdir(ours / "__commits")) == \
        sorted(n.rsplit("_", 2)[0][:6] for n in os.listdir(theirs / "__commits"))


def test_delete_fragments_leaves_what_a_vacuum_file_replaces(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    _build(theirs)
    tiledb.consolidate(str(theirs), config=tiledb.Config({"sm.consolidation.step_min_frags": "2",
                                                          "sm.consolidation.step_max_frags": "2",
                                                          "sm.consolidation.steps": "1"}))
    shutil.copytree(theirs, ours)
    tiledb.Array.delete_fragments(str(theirs), 0, 25)
    delete_fragments(str(ours), 0, 25)
    assert _state(ours) == _state(theirs)


def test_delete_fragments_refuses_bad_timestamps(tmp_path):
    _build(tmp_path / "a")
    with pytest.raises(ValueError, match="timestamp_start"):
        delete_fragments(str(tmp_path / "a"), -1, 5)


def test_clean_uncommitted_removes_only_uncommitted_fragment_folders(tmp_path, capsys):
    path = tmp_path / "a"
    _build(path)
    folder = path / "__fragments"
    committed = sorted(os.listdir(folder))
    failed = folder / "__50_50_0123456789abcdef0123456789abcdef_22"  # a write killed before its commit
    failed.mkdir()
    (failed / "a0.tdb").write_bytes(b"partial")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_bytes(b"x")
    (folder / "__60_60_0123456789abcdef0123456789abcdef_22").symlink_to(outside)
    assert sorted(clean_uncommitted(str(path), dry_run=True)) == sorted(
        [str(failed), str(folder / "__60_60_0123456789abcdef0123456789abcdef_22")])
    assert failed.exists()
    assert main(["clean", str(path), "--uncommitted"]) == 0
    assert "removed" in capsys.readouterr().out
    assert sorted(os.listdir(folder)) == committed
    assert (outside / "keep").read_bytes() == b"x"
    before = _state(path)
    consolidate(str(path))
    assert _state(path)[0] == before[0]
