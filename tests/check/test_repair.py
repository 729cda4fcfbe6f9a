"""``repair``: arrays TileDB-Py wrote, damaged one way each (only damage that makes TileDB-Py fail, plus the
housekeeping cases), repaired in place and into a copy. Afterwards TileDB-Py opens and reads them, every cell it
reads was written, every cell of the undamaged fragments is there, validate is clean, the backup restores the
damaged input byte for byte, and a second repair plans nothing. A dry run and a copy leave the input as it was."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tdbformat
from tdbformat.check.repair import REPAIRS, repair
from tdbformat.errors import FormatError
from oracle import tiledb_ctx

tiledb = pytest.importorskip("tiledb")
ROOT = Path(__file__).resolve().parents[2]
KEY = "0123456789abcdeF0123456789abcdeF"


def _make(path: Path, sparse: bool, key=None) -> dict:
    """Three fragments of ten cells each (timestamps 1-3, disjoint coordinates), two array metadata files,
    consolidated fragment metadata; TileDB-Py's read of it all."""
    ctx = tiledb_ctx(key)
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int64), ctx=ctx)
    schema = tiledb.ArraySchema(domain=dom, sparse=sparse, ctx=ctx,
                                attrs=[tiledb.Attr("a", dtype=np.int32, ctx=ctx),
                                       tiledb.Attr("s", dtype=str, var=True, ctx=ctx)])
    tiledb.Array.create(str(path), schema, ctx=ctx)
    for t in (1, 2, 3):
        with tiledb.open(str(path), "w", timestamp=t, ctx=ctx) as A:
            values = {"a": np.arange(10, dtype=np.int32) + 100 * t, "s": np.array([f"v{t}-{i}" for i in range(10)],
                                                                                   dtype=object)}
            if sparse:
                A[np.arange(10 * t, 10 * t + 10)] = values
            else:
                A[10 * t:10 * t + 10] = values
    with tiledb.open(str(path), "w", timestamp=4, ctx=ctx) as A:
        A.meta["k"] = 1
        A.meta["name"] = "hello"
    with tiledb.open(str(path), "w", timestamp=5, ctx=ctx) as A:
        A.meta["j"] = 2
    config = {"sm.consolidation.mode": "fragment_meta"}
    if key:
        config.update({"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": key})
    tiledb.consolidate(str(path), ctx=ctx, config=tiledb.Config(config))
    return _read(path, key)


def _read(path, key=None) -> dict:
    with tiledb.open(str(path), ctx=tiledb_ctx(key)) as A:
        cells = A[:] if A.schema.sparse else A[10:40]
        return {"cells": cells, "meta": dict(A.meta), "sparse": A.schema.sparse}


def _tiledb_py_on(root: Path, key=None) -> str:
    """What TileDB-Py's read of ``root`` does, in a process of its own (it dies of some damage: a cut data
    file of a dense array is a segmentation fault in TileDB 2.30): "ok", the exception's name, or "crash"."""
    code = ("import sys, tiledb\nkey = sys.argv[2] or None\n"
            "ctx = tiledb.Ctx({'sm.encryption_type': 'AES_256_GCM', 'sm.encryption_key': key} if key else {})\n"
            "try:\n    A = tiledb.open(sys.argv[1], ctx=ctx); A[:] if A.schema.sparse else A[10:40]; dict(A.meta)\n"
            "    print('ok')\nexcept Exception as e:\n    print(type(e).__name__)\n")
    r = subprocess.run([sys.executable, "-c", code, str(root), key or ""], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "crash"


def _digest(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "/"
            for p in sorted(root.rglob("*"))}


def _second(root: Path, pattern: str) -> Path:
    return Path(sorted(glob.glob(str(root / pattern)))[1])


def _cut(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[:len(data) // 2])


def _lie_last_tile_cells(root: Path, key=None) -> None:
    """The second fragment's footer says its last tile holds 4 cells, not 10 (TileDB#4383)."""
    f = _second(root, "__fragments/*/__fragment_metadata.tdb")
    fm = tdbformat.parse_file(f, key=key).value
    for name in ("rtree", "tile_offsets", "tile_var_offsets", "tile_var_sizes", "tile_validity_offsets", "tile_mins",
                 "tile_maxes", "tile_sums", "tile_null_counts", "fragment_min_max_sum_null_count",
                 "processed_conditions"):
        getattr(fm, name, None)
    fm.footer.last_tile_cell_num = 4
    f.write_bytes(fm.build())
    shutil.rmtree(root / "__fragment_meta")  # TileDB would read the true footer from it


#: damage -> (what it does to the array, the fragment whose cells it may cost, does TileDB-Py fail on it)
DAMAGE = {
    "consolidated metadata cut": (lambda r, k: _cut(Path(glob.glob(str(r / "__fragment_meta/*.meta"))[0])), None, True),
    "consolidated metadata garbled": (lambda r, k: _garble(Path(glob.glob(str(r / "__fragment_meta/*.meta"))[0])),
                                      None, True),
    "array metadata cut": (lambda r, k: _cut(Path(sorted(glob.glob(str(r / "__meta/*")))[0])), None, True),
    "commit marker names no folder": (lambda r, k: shutil.rmtree(_second(r, "__fragments/*")), 1, True),
    "data file cut": (lambda r, k: _cut(_second(r, "__fragments/*/a0.tdb")), 1, True),
    "data file missing": (lambda r, k: _second(r, "__fragments/*/a0.tdb").unlink(), 1, True),
    "last tile cell count lies": (_lie_last_tile_cells, None, True),
    "uncommitted folder": (lambda r, k: _second(r, "__commits/*.wrt").unlink(), 1, False),
    "stray file": (lambda r, k: (r / "__fragments" / "notes.txt").write_text("x"), None, False),
}


def _garble(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[20:60] = b"\xff" * 40
    p.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    base = tmp_path_factory.mktemp("originals")
    out = {}
    for kind, sparse, key in (("sparse", True, None), ("dense", False, None), ("encrypted", True, KEY)):
        out[kind] = (base / kind, _make(base / kind, sparse, key), key)
    return out


def _expected(original: dict, lost_fragment) -> dict:
    """The cells a repaired array must hold: all, but those of ``lost_fragment`` (index 0-2) where its data was
    damaged; a dense array reads fill values there."""
    cells = {n: np.array(v, copy=True) for n, v in original["cells"].items()}
    if lost_fragment is None:
        return cells
    lo, hi = 10 * (lost_fragment + 1), 10 * (lost_fragment + 1) + 10
    if original["sparse"]:
        keep = (cells["d"] < lo) | (cells["d"] >= hi)
        return {n: v[keep] for n, v in cells.items()}
    cells["a"][lo - 10:hi - 10] = np.iinfo(np.int32).min
    cells["s"][lo - 10:hi - 10] = ""
    return cells


def _assert_cells(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for name in want:
        assert list(got[name]) == list(want[name]), name


#: dense reads take no last tile count (TileDB reads the lie fine, and validate finds nothing): not damage there
CASES = [(k, d) for k in ("sparse", "dense", "encrypted") for d in DAMAGE
         if (k, d) != ("dense", "last tile cell count lies")]


@pytest.mark.parametrize("kind, damage", CASES)
def test_repair_in_place_then_tiledb_py_reads(tmp_path, originals, kind, damage):
    src, original, key = originals[kind]
    root = tmp_path / "array"
    shutil.copytree(src, root)
    hurt, fragment, fails = DAMAGE[damage]
    hurt(root, key)
    if fails:  # only damage that TileDB-Py fails on counts (the other two are housekeeping)
        assert _tiledb_py_on(root, key) in ("TileDBError", "crash")
    damaged = _digest(root)
    planned = repair(root, key=key)  # a dry run: nothing changes
    assert _digest(root) == damaged and planned.mode == "dry run" and planned.fixes
    report = repair(root, in_place=True, key=key, drop_damaged=True)
    assert report.complete and all(f.applied for f in report.fixes), str(report)
    after = _read(root, key)
    data_lost = damage in ("data file cut", "data file missing")
    _assert_cells(after["cells"], _expected(original, fragment if data_lost else None) if damage not in (
        "commit marker names no folder", "uncommitted folder") else _expected(original, fragment))
    want_meta = {k: v for k, v in original["meta"].items() if damage != "array metadata cut" or k == "j"}
    assert after["meta"] == want_meta
    assert [f for f in tdbformat.validate(root, key=key) if f.severity == "error"] == []
    assert repair(root, key=key).fixes == []  # a repaired array plans nothing
    _restore(root, Path(report.backup), report)
    assert _digest(root) == damaged


def _restore(root: Path, backup: Path, report) -> None:
    """Undo a repair by hand, as docs/checking.md says: remove what it wrote, move the backup back."""
    journal = json.loads((backup / "journal.json").read_text())
    assert [f["paths"] for f in journal["report"]["fixes"]] == [f.paths for f in report.fixes]
    for fix in report.fixes:
        for name in fix.written:
            shutil.rmtree(root / "__fragments" / name)
            (root / "__commits" / f"{name}.wrt").unlink()
    for p in sorted(backup.rglob("*"), key=lambda p: len(p.parts)):
        rel = p.relative_to(backup)
        if rel.parts[0] in ("staging", "journal.json", "done") or not p.exists():
            continue
        if p.is_file() or not (root / rel).exists():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(p, root / rel)
    shutil.rmtree(root / ".tdbformat-backup")


@pytest.mark.parametrize("damage", ["data file cut", "last tile cell count lies", "array metadata cut"])
def test_repair_into_a_copy_leaves_the_source_untouched(tmp_path, originals, damage):
    src, original, key = originals["sparse"]
    root, out = tmp_path / "array", tmp_path / "out"
    shutil.copytree(src, root)
    DAMAGE[damage][0](root, key)
    damaged = _digest(root)
    report = repair(root, out=out, drop_damaged=True)
    assert _digest(root) == damaged and report.complete
    assert not (out / ".tdbformat-backup").exists()
    after = _read(out)
    _assert_cells(after["cells"], _expected(original, 1 if damage == "data file cut" else None))
    assert [f for f in tdbformat.validate(out) if f.severity == "error"] == []


def test_a_fragment_that_loses_cells_is_only_reported_without_drop_damaged(tmp_path, originals):
    src, _, _ = originals["sparse"]
    root = tmp_path / "array"
    shutil.copytree(src, root)
    DAMAGE["data file cut"][0](root, None)
    damaged = _digest(root)
    report = repair(root, in_place=True)
    (fix,) = report.fixes
    assert fix.action == "report" and fix.cells_lost == 10 and not fix.applied and not report.complete
    assert {k: v for k, v in _digest(root).items() if ".tdbformat-backup" not in k} == damaged


def test_rules_choose_the_repairs(tmp_path, originals):
    src, _, _ = originals["sparse"]
    root = tmp_path / "array"
    shutil.copytree(src, root)
    DAMAGE["stray file"][0](root, None)
    DAMAGE["array metadata cut"][0](root, None)
    report = repair(root, rules=["stray-files"])
    assert [f.repair for f in report.fixes] == ["stray-files"]
    assert [f.rule for f in report.unrepaired] == ["file-parses"]
    with pytest.raises(ValueError, match="rules: unknown repair id"):
        repair(root, rules=["everything"])
    with pytest.raises(ValueError, match="in_place, out"):
        repair(root, in_place=True, out=tmp_path / "o")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ValueError, match="out: .* not empty"):
        repair(root, out=tmp_path / "full")


def test_a_link_is_never_followed(tmp_path, originals):
    """A fragments folder that is a link out of the array: repair refuses before moving anything."""
    src, _, _ = originals["sparse"]
    root, outside = tmp_path / "array", tmp_path / "outside"
    shutil.copytree(src, root)
    shutil.move(root / "__fragments", outside)
    (root / "__fragments").symlink_to(outside)
    (outside / "notes.txt").write_text("x")
    before = _digest(outside)
    with pytest.raises(FormatError, match="symbolic link"):
        repair(root, in_place=True)
    assert _digest(outside) == before


def test_the_command_line(tmp_path, originals):
    src, _, _ = originals["sparse"]
    root = tmp_path / "array"
    shutil.copytree(src, root)
    DAMAGE["consolidated metadata cut"][0](root, None)

    def run(*args):
        return subprocess.run([sys.executable, "-m", "tdbformat.cli", "repair", str(root), *args],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})

    dry = run("--json")
    assert dry.returncode == 1
    doc = json.loads(dry.stdout)
    from test_dataset_commands import _validator

    _validator("repair").validate(doc)
    assert [f["repair"] for f in doc["fixes"]] == ["consolidated-fragment-metadata"]
    done = run("--in-place")
    assert done.returncode == 0 and "done" in done.stdout, done.stderr
    assert run().returncode == 0
    assert all(r in run("--help").stdout.replace("\n", "").replace(" ", "") for r in REPAIRS)


def test_without_the_key_nothing_is_planned(tmp_path, originals):
    """Without its key every encrypted file looks damaged: repair refuses rather than set them aside."""
    src, _, key = originals["encrypted"]
    root = tmp_path / "array"
    shutil.copytree(src, root)
    before = _digest(root)
    with pytest.raises(tdbformat.EncryptionError, match="key"):
        repair(root, in_place=True)
    assert _digest(root) == before


@pytest.mark.parametrize("version", [4, 9, 11])
def test_old_layouts(tmp_path, version):
    """Fragments in the array folder, committed by .ok files (v5-11) or by their metadata file (v1-4): a cut data
    file's fragment is dropped, its readable cells rewritten, and TileDB-Py reads the rest."""
    from tdbformat import schema as S
    from tdbformat.write.writer import write

    root = tmp_path / "array"
    sch = S.ArraySchema(domain=S.Domain(S.Dim("d", domain=(0, 99), tile=10, dtype=np.int64)),
                        attrs=[S.Attr("a", np.int32)], sparse=True, capacity=5)
    tdbformat.create(root, sch, version=version)
    for t in (1, 2, 3):
        write(root, {"a": np.arange(10, dtype=np.int32) + 100 * t}, coords=[np.arange(10 * t, 10 * t + 10)],
              timestamp=t)
    whole = _read(root)["cells"]
    frag = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("__") and p.name != "__meta")[1]
    data = frag / ("a.tdb" if version < 9 else "a0.tdb")
    data.write_bytes(data.read_bytes()[:-10])  # the last tile of the second fragment
    assert _tiledb_py_on(root) in ("TileDBError", "crash")
    report = repair(root, in_place=True, drop_damaged=True)
    (fix,) = report.fixes
    assert fix.repair == "fragments" and fix.cells_lost == 5 and fix.applied, str(report)
    got = _read(root)["cells"]
    keep = (whole["d"] < 25) | (whole["d"] >= 30)
    _assert_cells(got, {n: v[keep] for n, v in whole.items()})
    assert repair(root).fixes == []


_KILLER = """
import os, signal, sys
from tdbformat import storage
at, calls = int(sys.argv[2]), [0]
for name in ("write", "commit", "move", "makedirs"):
    def wrapped(self, *a, _orig=getattr(storage.LocalStorage, name), **k):
        calls[0] += 1
        if calls[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)
        return _orig(self, *a, **k)
    setattr(storage.LocalStorage, name, wrapped)
import tdbformat
tdbformat.repair(sys.argv[1], in_place=True, drop_damaged=True)
print(calls[0])
"""


def _kill_at(root: Path, at: int):
    return subprocess.run([sys.executable, "-W", "ignore", "-c", _KILLER, str(root), str(at)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _hashes(root: Path) -> set:
    return {hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}


def test_a_repair_killed_at_any_step_reads_as_before_or_after_and_finishes(tmp_path, originals):
    """SIGKILL at every write, commit, folder and move of a repair in place (a fragment rewritten, a metadata
    file set aside): TileDB-Py then fails as on the damaged input or reads the repaired cells, every byte of the
    input is still in the array or its backup, and the next repair finishes the job."""
    src, original, _ = originals["sparse"]
    damaged = tmp_path / "damaged"
    shutil.copytree(src, damaged)
    _lie_last_tile_cells(damaged)
    _cut(Path(sorted(glob.glob(str(damaged / "__meta/*")))[0]))
    want = _expected(original, None)
    probe = tmp_path / "probe"
    shutil.copytree(damaged, probe)
    total = int(_kill_at(probe, 0).stdout)
    assert total > 5
    for at in range(1, total + 1):
        root = tmp_path / f"at{at}"
        shutil.copytree(damaged, root)
        assert _kill_at(root, at).returncode == -9
        state = _tiledb_py_on(root)
        if state == "ok":
            _assert_cells(_read(root)["cells"], want)
        else:
            assert state in ("TileDBError", "crash"), (at, state)
        assert _hashes(damaged) <= _hashes(root), at  # nothing lost: the array and its backup hold every file
        report = repair(root, in_place=True, drop_damaged=True)
        assert report.complete, (at, str(report))
        _assert_cells(_read(root)["cells"], want)
        assert repair(root).fixes == [], at
