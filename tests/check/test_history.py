"""``history`` and ``cat --fragment`` on arrays and groups TileDB-Py builds: writes as its fragment info lists
them, the delete's condition, the schema evolution, metadata puts and deletes, the consolidation and what it
replaced (TileDB-Py's to_vacuum), the vacuum; group member changes; one fragment's cells as TileDB-Py reads
the array at that fragment's timestamps; --json valid against docs/json-schema/history.v1.json."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import corpus
import pygroups
from tdbformat.check.history import fragment_window, history

tiledb = pytest.importorskip("tiledb")
ROOT = Path(__file__).resolve().parents[2]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tdbformat.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)


@pytest.fixture
def lived(tmp_path):
    """A sparse array: 3 writes (t 1-3), a delete (t 5), metadata put (t 6) and deleted (t 7), an attribute
    added, fragments and commits consolidated."""
    a = tmp_path / "a"
    pygroups.sparse(tiledb, a, writes=3)
    with tiledb.open(str(a), "d", timestamp=5) as A:
        A.query(cond="v > 10.0").submit()
    with tiledb.open(str(a), "w", timestamp=6) as A:
        A.meta["note"] = "hi"
    with tiledb.open(str(a), "w", timestamp=7) as A:
        del A.meta["note"]
    se = tiledb.ArraySchemaEvolution()
    se.add_attribute(tiledb.Attr("c", dtype=np.int32))
    se.array_evolve(str(a))
    frags_before = {u.rsplit("/", 1)[-1] for u in tiledb.array_fragments(str(a)).uri}
    tiledb.consolidate(str(a), config=tiledb.Config({"sm.consolidation.mode": "commits"}))
    tiledb.consolidate(str(a))
    return a, frags_before


def _of(events, kind):
    return [e for e in events if e["kind"] == kind]


def test_an_arrays_life(lived):
    a, before = lived
    events = history(a)["events"]
    stamps = [e["timestamp"] for e in events]
    assert stamps == sorted(stamps)
    info = tiledb.array_fragments(str(a))
    to_vacuum = {u.rsplit("/", 1)[-1] for u in info.to_vacuum}
    assert to_vacuum == before
    writes = {e["fragment"]: e for e in _of(events, "write")}
    assert set(writes) == before
    for f in info:  # the consolidated fragment: as TileDB-Py lists it, and what it replaced
        name = f.uri.rsplit("/", 1)[-1]
        (cons,) = [e for e in _of(events, "consolidation") if e.get("fragment") == name]
        assert cons["replaced"] == sorted(to_vacuum) and cons["timestamp_range"] == list(f.timestamp_range)
        assert cons["cells"] == f.cell_num
    with tiledb.open(str(a), timestamp=(1, 1)) as A:  # the cells of the first write (the consolidated
        first = next(e for e in writes.values() if e["timestamp_range"] == [1, 1])  # fragment keeps their times)
        cells = A[:]
        assert first["cells"] == len(cells["v"])
        assert first["non_empty_domain"] == [[int(cells[d].min()), int(cells[d].max())] for d in ("x", "y")]
    (delete,) = _of(events, "delete")
    assert delete["timestamp"] == 5 and delete["condition"] == "v > 10.0"
    schemas = _of(events, "schema")
    assert len(schemas) == 2 and schemas[0]["change"] == "created" and schemas[1]["added"] == ["c"]
    meta = _of(events, "metadata")
    # the stored keys: TileDB-Py's put also deletes the __np_flat_/__np_shape_ keys of an array value
    assert [(e["timestamp"], e["put"], "note" in e["deleted"]) for e in meta] == [(6, ["note"], False), (7, [], True)]
    assert any(e["what"] == "commits" for e in _of(events, "consolidation"))
    tiledb.vacuum(str(a))
    after = history(a)["events"]
    assert {w["fragment"] for w in _of(after, "write")} == set()  # vacuumed: gone from disk and from history
    (vacuum,) = [e for e in _of(after, "vacuum") if e["what"] == "commits"]  # the .ign file TileDB left
    assert {n.removesuffix(".wrt") for n in vacuum["removed"]} == before


def test_cat_fragment_is_what_tiledb_py_reads_at_its_timestamps(lived):
    a, before = lived
    for name in sorted(before):
        t1, t2 = fragment_window(a, name)
        r = _cli("cat", a, "--fragment", name, "--json")
        assert r.returncode == 0, r.stderr
        got = [json.loads(line) for line in r.stdout.splitlines()]
        with tiledb.open(str(a), timestamp=(t1, t2)) as A:
            want = A.query(order="G")[:]
        assert sorted((c["x"], c["y"], c["v"]) for c in got) == sorted(zip(want["x"].tolist(), want["y"].tolist(),
                                                                         want["v"].tolist()))
    r = _cli("cat", a, "--fragment", "__nope")
    assert r.returncode == 2 and "not a committed fragment" in r.stderr


def test_group_member_changes(tmp_path):
    g = pygroups.build(tiledb, tmp_path)
    with tiledb.Group(str(g), "w") as G:
        G.remove("sib")
    events = history(g)["events"]
    groups = [e for e in _of(events, "group") if e["object"] == ""]
    assert "sib" in groups[0]["added"] and groups[-1]["removed"] == ["sib"]
    assert {e["object"] for e in events} >= {"", "A", "sub", "sub/b", "out", "gone"}
    assert next(e for e in events if e["object"] == "gone")["kind"] == "missing"


def test_corpus_cases_and_json(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "json-schema" / "history.v1.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for case in corpus.cases():
        if case.parent.name.startswith("v22_tiledb-py-0.36"):
            doc = history(corpus.root(case), key=corpus.key(case))
            jsonschema.validate({"json_schema": "history.v1", "path": "x", **doc}, schema)
            t = corpus.truth(case)
            if t.get("kind", "array") == "array":
                names = {f["uri"].rstrip("/").rsplit("/", 1)[-1] for f in t["fragments"]}
                assert names <= {e.get("fragment") for e in doc["events"]}, case.name
    r = _cli("history", corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "sparse_delete" / "array", "--json")
    assert r.returncode == 0 and any(e["kind"] == "delete" for e in json.loads(r.stdout)["events"])
    assert "delete" in _cli("history", corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "sparse_delete" / "array").stdout
