"""``du``: every file under a corpus array or group (and the prev1 arrays) counted once, the total the bytes
on disk; what it calls reclaimable is exactly what TileDB-Py's vacuum then removes, its reclaimable fragments
TileDB-Py's ``to_vacuum``; failed writes uncommitted, foreign files stray; groups built by TileDB-Py walked,
members outside the folder counted, lost ones skipped; --json valid against docs/json-schema/du.v1.json."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import corpus
import pygroups
from tdbformat.check.du import du, files

tiledb = pytest.importorskip("tiledb")
ROOT = Path(__file__).resolve().parents[2]
PREV1 = sorted(p for p in (ROOT / "tests" / "data" / "prev1").glob("*/*") if p.is_dir() and "workspace" not in p.name)


def _disk(where) -> dict:
    return {str(p): p.stat().st_size for p in Path(where).rglob("*") if p.is_file()}


def _counted_once(where, key=None, also=()):
    found = files(where, key=key)
    paths = [f.path for f in found]
    disk = _disk(where)
    for extra in also:
        disk.update(_disk(extra))
    assert len(paths) == len(set(paths)) and set(paths) == set(disk)
    assert {f.path: f.size for f in found} == disk
    doc = du(where, key=key)
    assert doc["bytes"] == sum(disk.values()) == sum(doc["by_state"].values()) == sum(r["bytes"] for r in doc["rows"])
    return found


@pytest.mark.parametrize("case", corpus.cases(), ids=corpus.case_id)
def test_every_corpus_file_once(case):
    found = _counted_once(corpus.root(case), corpus.key(case))
    if "vacuumed" in case.name or "consolidated" not in case.name:
        assert all(f.state == "live" for f in found)


@pytest.mark.parametrize("where", PREV1, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_prev1_arrays(where):
    assert all(f.state == "live" for f in _counted_once(where))


def _sparse_with_history(path):
    pygroups.sparse(tiledb, path, writes=4)
    for t in range(1, 4):
        with tiledb.open(str(path), "w", timestamp=10 + t) as A:
            A.meta[f"k{t}"] = t
    for mode in ("fragment_meta", "array_meta", "commits", "fragments"):
        tiledb.consolidate(str(path), config=tiledb.Config({"sm.consolidation.mode": mode}))


@pytest.mark.parametrize("modes", [("fragments", "array_meta", "commits", "fragment_meta"), ("commits",)])
def test_reclaimable_is_what_vacuum_removes(tmp_path, modes):
    a = tmp_path / "a"
    if modes == ("commits",):  # commits consolidated alone: the .wrt files the .con holds go
        pygroups.sparse(tiledb, a, writes=3)
        tiledb.consolidate(str(a), config=tiledb.Config({"sm.consolidation.mode": "commits"}))
    else:
        _sparse_with_history(a)
        to_vacuum = {u.rsplit("/", 1)[-1] for u in tiledb.array_fragments(str(a)).to_vacuum}
        found = files(a)
        assert {f.fragment for f in found if f.state == "reclaimable" and f.kind == "fragment_metadata"} == to_vacuum
    found = _counted_once(a)
    before = set(_disk(a))
    reclaimable = {f.path for f in found if f.state == "reclaimable"}
    assert reclaimable
    for mode in modes:
        tiledb.vacuum(str(a), config=tiledb.Config({"sm.vacuum.mode": mode}))
    assert before - set(_disk(a)) == reclaimable
    assert du(a)["by_state"]["reclaimable"] == 0


def test_failed_writes_and_foreign_files(tmp_path):
    a = pygroups.dense(tiledb, tmp_path / "a", writes=2)
    wrt = sorted((a / "__commits").iterdir())[0]
    wrt.unlink()  # the first write never committed
    (a / "notes.txt").write_text("mine")
    frag = sorted((a / "__fragments").iterdir())[1]
    (frag / "a7.tdb").write_bytes(b"x" * 10)
    found = {f.path: f for f in _counted_once(a)}
    uncommitted = [f for f in found.values() if f.state == "uncommitted"]
    assert uncommitted and {f.fragment for f in uncommitted} == {wrt.name.removesuffix(".wrt")}
    assert found[str(a / "notes.txt")].state == found[str(frag / "a7.tdb")].state == "stray"
    assert du(a)["by_state"]["stray"] == 14


def test_tiledb_py_group(tmp_path):
    g = pygroups.build(tiledb, tmp_path)
    (g / "unlisted").mkdir()
    (g / "unlisted" / "x.bin").write_bytes(b"12345")
    found = _counted_once(g, also=[tmp_path / "out", tmp_path / "sib"])
    owners = {f.object for f in found}
    assert owners == {"", "A", "sub", "sub/b", "out", "sib"}
    assert next(f for f in found if f.path.endswith("x.bin")).state == "stray"
    fields = {(f.object, f.field, f.kind) for f in found if f.field}
    assert ("sub/b", "s", "offsets") in fields and ("sub/b", "s", "data") in fields and ("A", "a", "data") in fields


def test_soma_and_labels():
    _counted_once(ROOT / "tests" / "data" / "soma" / "experiment")
    labels = next(c for c in corpus.cases() if c.name == "dimension_labels" and c.parent.name.startswith("v22"))
    found = _counted_once(corpus.root(labels))
    assert any(f.object.startswith("__labels/") and f.kind == "data" for f in found)
    assert all(f.state == "live" for f in found)


def test_cli_prints_and_json_validates(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "json-schema" / "du.v1.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    a = tmp_path / "a"
    _sparse_with_history(a)
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for extra in (["--json"], [], ["--by", "object"]):
        r = subprocess.run([sys.executable, "-m", "tdbformat.cli", "du", str(a), *extra], capture_output=True,
                           text=True, cwd=ROOT, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        if extra == ["--json"]:
            doc = json.loads(r.stdout)
            jsonschema.validate(doc, schema)
            assert doc["bytes"] == sum(_disk(a).values()) and doc["by_state"]["reclaimable"] > 0
        else:
            assert "reclaimable" in r.stdout
    shutil.rmtree(a)


def test_a_group_on_an_object_store():
    """The SOMA experiment copied to fsspec's memory://: the walk, du (every byte), versions and history
    answer as on disk."""
    import uuid

    fsspec = pytest.importorskip("fsspec")
    from tdbformat import open_group
    from tdbformat.check.gate import versions
    from tdbformat.check.history import history
    src = ROOT / "tests" / "data" / "soma" / "experiment"
    root = f"exp{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    for p in src.rglob("*"):
        if p.is_file():
            fs.pipe(f"/{root}/{p.relative_to(src).as_posix()}", p.read_bytes())
    url = f"memory://{root}"
    try:
        assert [m.key for m in open_group(url).walk()] == [m.key for m in open_group(src).walk()]
        local, remote = du(src), du(url)
        assert remote["bytes"] == local["bytes"] == sum(_disk(src).values())
        assert remote["by_state"] == local["by_state"] and len(remote["rows"]) == len(local["rows"])
        assert [r.get("format_version") for r in versions(url)["objects"]] == \
            [r.get("format_version") for r in versions(src)["objects"]]
        assert len(history(url)["events"]) == len(history(src)["events"])
    finally:
        fs.rm(f"/{root}", recursive=True)
