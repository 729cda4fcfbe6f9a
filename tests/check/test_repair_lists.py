"""``repair`` of the lists that name fragments and commits (vacuum lists, consolidated commits, ignore files) and
``commit_complete``, on arrays TileDB-Py wrote. Damage that makes TileDB-Py fail is checked to; the rest are
consistency fixes (TileDB-Py copes, docs/checking.md says so). After each repair in place: TileDB-Py reads the
cells it read before the damage, and its vacuum then keeps them; validate is clean; the backup restores the
damaged input byte for byte; a second repair plans nothing."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tdbformat
from tdbformat.check.repair import repair
from test_repair import _digest, _tiledb_py_on

tiledb = pytest.importorskip("tiledb")


def _write(path: Path, stamps=(1, 2, 3)) -> None:
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int64))
    schema = tiledb.ArraySchema(domain=dom, sparse=True, attrs=[tiledb.Attr("a", dtype=np.int32)])
    tiledb.Array.create(str(path), schema)
    for t in stamps:
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[np.arange(10 * t, 10 * t + 10)] = {"a": np.arange(10, dtype=np.int32) + 100 * t}


def _cells(path: Path) -> dict:
    with tiledb.open(str(path)) as A:
        got = A[:]
    order = np.argsort(got["d"], kind="stable")
    return {k: v[order].tolist() for k, v in got.items()}


@pytest.fixture(scope="module")
def consolidated(tmp_path_factory):
    """Four fragments; the first two consolidated (a .vac names them), then every commit consolidated (a .con)."""
    root = tmp_path_factory.mktemp("lists") / "array"
    _write(root)
    tiledb.consolidate(str(root), config=tiledb.Config({"sm.consolidation.timestamp_start": 1,
                                                         "sm.consolidation.timestamp_end": 2}))
    with tiledb.open(str(root), "w", timestamp=4) as A:
        A[np.arange(50, 55)] = {"a": np.arange(5, dtype=np.int32)}
    tiledb.consolidate(str(root), config=tiledb.Config({"sm.consolidation.mode": "commits"}))
    return root, _cells(root)


def _one(root: Path, pattern: str) -> Path:
    (p,) = glob.glob(str(root / "__commits" / pattern))
    return Path(p)


def _append(p: Path, data: bytes) -> None:
    p.write_bytes(p.read_bytes() + data)


def _third_gone(root: Path) -> None:
    """The third fragment's folder deleted by hand: its commit is in the .con, its .wrt removed with it."""
    shutil.rmtree(glob.glob(str(root / "__fragments" / "__3_3_*"))[0])
    _one(root, "__3_3_*.wrt").unlink()


NAME = "__9_9_13ef9eee4503a31aeae16b3364de12b8_22"

#: damage -> (what it does, does TileDB-Py fail on it, the cells that remain (None: all), the repair's action)
DAMAGE = {
    "vacuum list: an empty line": (lambda r: _append(_one(r, "*.vac"), b"\n"), True, None, "rewrite"),
    "vacuum list: a line without a slash": (lambda r: _append(_one(r, "*.vac"), b"garbage\n"), True, None, "rewrite"),
    "vacuum list names a fragment that is gone": (
        lambda r: _append(_one(r, "*.vac"), f"/__fragments/{NAME}\n".encode()), False, None, "rewrite"),
    "vacuum list names nothing": (lambda r: (r / "__commits" / f"{NAME[:-3]}_22.vac").write_bytes(
        f"/__fragments/{NAME}\n".encode()), False, None, "set aside"),
    "consolidated commits name a folder that is gone": (_third_gone, True, 3, "rewrite"),
    "ignore file names nothing": (lambda r: (r / "__commits" / f"{NAME[:-3]}_22.ign").write_bytes(
        f"__commits/{NAME}.wrt\n".encode()), False, None, "set aside"),
}


def _restore(root: Path, report) -> None:
    """Undo a repair by hand, as docs/checking.md says: remove the files it wrote, move the backup back."""
    backup = Path(report.backup)
    for fix in report.fixes:
        for rel in fix.files:
            (root / rel).unlink()
    for p in backup.rglob("*"):
        rel = p.relative_to(backup)
        if p.is_file() and rel.parts[0] not in ("staging", "journal.json", "done"):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(p, root / rel)
    shutil.rmtree(root / ".tdbformat-backup")


def _tiledb_py_vacuum(root: Path) -> None:
    subprocess.run([sys.executable, "-c", "import sys, tiledb; tiledb.vacuum(sys.argv[1])", str(root)], check=True)


@pytest.mark.parametrize("damage", DAMAGE)
def test_lists_repaired_in_place(tmp_path, consolidated, damage):
    src, original = consolidated
    root = tmp_path / "array"
    shutil.copytree(src, root)
    hurt, fails, lost, action = DAMAGE[damage]
    hurt(root)
    assert _tiledb_py_on(root) == ("TileDBError" if fails else "ok")
    damaged = _digest(root)
    found = tdbformat.validate(root)
    assert any(f.severity == "error" for f in found) == fails and all(f.file != str(root) for f in found)
    planned = repair(root)
    assert _digest(root) == damaged
    assert [(f.repair, f.action) for f in planned.fixes] == [("commit-lists", action)], str(planned)
    report = repair(root, in_place=True)
    assert report.complete and all(f.applied for f in report.fixes), str(report)
    want = original if lost is None else {k: [x for x, d in zip(v, original["d"]) if not 30 <= d < 40]
                                          for k, v in original.items()}
    assert _cells(root) == want
    assert tdbformat.validate(root) == []
    assert repair(root).fixes == []
    _restore(root, report)
    assert _digest(root) == damaged
    repair(root, in_place=True)
    _tiledb_py_vacuum(root)  # what its vacuum removes after the repair: only what consolidation replaced
    assert _cells(root) == want
    assert not glob.glob(str(root / "__fragments" / "__1_1_*")) and not glob.glob(str(root / "__fragments" / "__2_2_*"))


def test_lists_repaired_into_a_copy(tmp_path, consolidated):
    src, original = consolidated
    root, out = tmp_path / "array", tmp_path / "out"
    shutil.copytree(src, root)
    _append(_one(root, "*.vac"), b"garbage\n")
    damaged = _digest(root)
    report = repair(root, out=out)
    assert _digest(root) == damaged and report.complete
    assert _cells(out) == original and tdbformat.validate(out) == [] and repair(out).fixes == []


def test_absolute_vacuum_lines_of_another_machine(tmp_path):
    """A v18 array (absolute vacuum lines) moved: TileDB matches its lines by the path after the array's URI, so
    TileDB-Py copes; repair writes them for where the array is now (a consistency fix), and they name the same
    fragments."""
    from tdbformat import schema as S
    from tdbformat.write.writer import write

    first, root = tmp_path / "elsewhere", tmp_path / "array"
    sch = S.ArraySchema(domain=S.Domain(S.Dim("d", domain=(0, 99), tile=10, dtype=np.int64)),
                        attrs=[S.Attr("a", np.int32)], sparse=True)
    tdbformat.create(first, sch, version=18)
    for t in (1, 2, 3):
        write(first, {"a": np.arange(10, dtype=np.int32) + 100 * t}, coords=[np.arange(10 * t, 10 * t + 10)],
              timestamp=t)
    tdbformat.consolidate(first)
    shutil.copytree(first, root)
    shutil.rmtree(first)
    lines = _one(root, "*.vac").read_text()
    assert lines.startswith(f"file://{first}/__fragments/")
    before = _cells(root)
    damaged = _digest(root)
    report = repair(root, in_place=True)
    assert [(f.repair, f.action) for f in report.fixes] == [("commit-lists", "rewrite")]
    (new,) = [root / p for p in report.fixes[0].files]
    assert new.read_text() == lines.replace(f"file://{first}/", f"file://{root}/")
    assert _cells(root) == before and tdbformat.validate(root) == [] and repair(root).fixes == []
    _restore(root, report)
    assert _digest(root) == damaged


def test_commit_complete(tmp_path):
    """A TileDB-Py fragment whose commit file is gone is committed again, and TileDB-Py reads its cells; one whose
    data file is cut is set aside instead, with the reason."""
    root = tmp_path / "array"
    _write(root)
    original = _cells(root)
    wrts = sorted(glob.glob(str(root / "__commits" / "*.wrt")))
    os.unlink(wrts[1])
    hurt = Path(sorted(glob.glob(str(root / "__fragments" / "*")))[2]) / "a0.tdb"
    hurt.write_bytes(hurt.read_bytes()[:-8])
    os.unlink(wrts[2])
    assert len(_cells(root)["d"]) == 10
    damaged = _digest(root)
    plan = repair(root, commit_complete=True)
    assert _digest(root) == damaged
    assert [f.action for f in plan.fixes] == ["commit", "set aside"], str(plan)
    assert "not committed" in plan.fixes[1].detail and "a0.tdb" in plan.fixes[1].detail
    report = repair(root, in_place=True, commit_complete=True)
    assert report.complete, str(report)
    assert _cells(root) == {k: v[:20] for k, v in original.items()}
    assert tdbformat.validate(root) == [] and repair(root, commit_complete=True).fixes == []
    _restore(root, report)
    assert _digest(root) == damaged
    copy = repair(root, out=tmp_path / "copy", commit_complete=True)
    assert [f.action for f in copy.fixes] == ["commit", "set aside"] and _digest(root) == damaged
    assert _cells(tmp_path / "copy") == {k: v[:20] for k, v in original.items()}


def test_the_command_line(tmp_path, consolidated):
    src, _ = consolidated
    root = tmp_path / "array"
    shutil.copytree(src, root)
    _append(_one(root, "*.vac"), b"\n")
    r = subprocess.run([sys.executable, "-m", "tdbformat.cli", "repair", str(root), "--json", "--commit-complete"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    doc = json.loads(r.stdout)
    from test_dataset_commands import _validator

    _validator("repair").validate(doc)
    assert [(f["repair"], f["action"]) for f in doc["fixes"]] == [("commit-lists", "rewrite")]


def test_a_dropped_fragment_leaves_the_consolidated_commits(tmp_path, consolidated):
    """A fragment whose data file is cut, its commit held by the .con: dropped with drop_damaged, its readable
    cells rewritten, and its entry leaves the .con (else TileDB-Py fails: "Cannot get file size")."""
    src, original = consolidated
    root = tmp_path / "array"
    shutil.copytree(src, root)
    data = Path(glob.glob(str(root / "__fragments" / "__3_3_*" / "a0.tdb"))[0])
    data.write_bytes(data.read_bytes()[:-8])
    assert _tiledb_py_on(root) == "TileDBError"
    damaged = _digest(root)
    report = repair(root, in_place=True, drop_damaged=True)
    assert report.complete and {f.repair for f in report.fixes} == {"fragments", "commit-lists"}, str(report)
    assert _tiledb_py_on(root) == "ok"
    got = _cells(root)
    assert set(zip(got["d"], got["a"])) < set(zip(original["d"], original["a"])) and len(got["d"]) >= 25
    assert tdbformat.validate(root) == [] and repair(root).fixes == []
    for fix in report.fixes:  # undo: the rewritten fragments out, the backup back
        for name in fix.written:
            shutil.rmtree(root / "__fragments" / name)
            (root / "__commits" / f"{name}.wrt").unlink()
    _restore(root, report)
    assert _digest(root) == damaged


@pytest.fixture(scope="module")
def metadata(tmp_path_factory):
    """Array metadata written three times, consolidated by TileDB-Py (a .vac in __meta names the three files)."""
    root = tmp_path_factory.mktemp("meta") / "array"
    _write(root, stamps=(1,))
    for t, (k, v) in enumerate([("k", 1), ("j", 2), ("k", 3)]):
        with tiledb.open(str(root), "w", timestamp=t + 2) as A:
            A.meta[k] = v
    tiledb.consolidate(str(root), config=tiledb.Config({"sm.consolidation.mode": "array_meta"}))
    return root


def _meta(root: Path) -> str:
    code = ("import sys, tiledb\ntry:\n    with tiledb.open(sys.argv[1]) as A: print(sorted(A.meta.items()))\n"
            "except Exception as e: print(type(e).__name__)\n")
    return subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("line, fails", [(b"\n", True), (f"/__meta/{NAME[:-3]}\n".encode(), False)])
def test_metadata_vacuum_lists(tmp_path, metadata, line, fails):
    """An empty line in __meta's vacuum list: TileDB-Py fails ("Invalid URI"); a line naming a file that is
    gone: it copes (a consistency fix). Rewritten without it, the keys read as before, and TileDB-Py's vacuum
    then removes the three files consolidated."""
    root = tmp_path / "array"
    shutil.copytree(metadata, root)
    want = _meta(root)
    (vac,) = (root / "__meta").glob("*.vac")
    _append(vac, line)
    assert (_meta(root) == "TileDBError") == fails
    damaged = _digest(root)
    report = repair(root, in_place=True)
    assert [(f.repair, f.action) for f in report.fixes] == [("commit-lists", "rewrite")], str(report)
    assert _meta(root) == want == "[('j', 2), ('k', 3)]"
    assert tdbformat.validate(root) == [] and repair(root).fixes == []
    _restore(root, report)
    assert _digest(root) == damaged
    repair(root, in_place=True)
    subprocess.run([sys.executable, "-c", "import sys, tiledb; tiledb.vacuum(sys.argv[1], config=tiledb.Config("
                    "{'sm.vacuum.mode': 'array_meta'}))", str(root)], check=True)
    assert len(list((root / "__meta").iterdir())) == 1 and _meta(root) == want


def test_a_list_repair_killed_at_any_step_reads_as_before_or_after(tmp_path, consolidated):
    """SIGKILL at every write, commit and move of a repair of a .con naming a folder that is gone: TileDB-Py then
    fails as on the damaged input or reads the repaired cells, no byte of the input is lost, and the next repair
    finishes the job."""
    from test_repair import _hashes, _kill_at

    src, original = consolidated
    damaged = tmp_path / "damaged"
    shutil.copytree(src, damaged)
    _third_gone(damaged)
    want = {k: [x for x, d in zip(v, original["d"]) if not 30 <= d < 40] for k, v in original.items()}
    probe = tmp_path / "probe"
    shutil.copytree(damaged, probe)
    total = int(_kill_at(probe, 0).stdout)
    assert total >= 3
    for at in range(1, total + 1):
        root = tmp_path / f"at{at}"
        shutil.copytree(damaged, root)
        assert _kill_at(root, at).returncode == -9
        state = _tiledb_py_on(root)
        assert state == "TileDBError" or state == "ok" and _cells(root) == want, (at, state)
        assert _hashes(damaged) <= _hashes(root), at
        assert repair(root, in_place=True).complete
        assert _cells(root) == want and repair(root).fixes == [], at
