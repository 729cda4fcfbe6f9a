"""``mbrs`` against TileDB-Py's ``array_fragments(include_mbrs=True).mbrs`` on every sparse corpus array it
opens and on arrays and groups it builds; ``--fragment``; --json valid against docs/json-schema/mbrs.v1.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import corpus
import pygroups
from tdbformat.check.mbrs import array_mbrs, mbrs
from tdbformat.show import jsonable

tiledb = pytest.importorskip("tiledb")
ROOT = Path(__file__).resolve().parents[2]
SPARSE = [c for c in corpus.cases() if corpus.truth(c).get("kind", "array") == "array"
          and corpus.truth(c).get("schema", {}).get("array_type") == "sparse" and not c.parent.name.startswith("v23")]


def _py(uri, key=None):
    cfg = tiledb.Config({"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": key}) if key else None
    info = tiledb.array_fragments(str(uri), include_mbrs=True, ctx=tiledb.Ctx(cfg) if cfg else None)
    return [[[[jsonable(lo), jsonable(hi)] for lo, hi in tile] for tile in frag] for frag in info.mbrs], list(info.uri)


@pytest.mark.parametrize("case", SPARSE, ids=corpus.case_id)
def test_corpus_mbrs_are_tiledb_pys(case):
    want, uris = _py(corpus.root(case), corpus.key(case))
    got = array_mbrs(corpus.root(case), key=corpus.key(case))
    assert [f["fragment"] for f in got] == [u.rstrip("/").rsplit("/", 1)[-1] for u in uris]
    assert [f["mbrs"] for f in got] == want


def test_group_and_one_fragment(tmp_path):
    g = pygroups.build(tiledb, tmp_path)
    doc = mbrs(g)
    rows = {r["key"]: r for r in doc["objects"]}
    want, uris = _py(g / "sub" / "b")
    assert [f["mbrs"] for f in rows["sub/b"]["fragments"]] == want and len(want) == 2
    assert all(f["dense"] and f["mbrs"] == [] for f in rows["A"]["fragments"])
    name = uris[1].rsplit("/", 1)[-1]
    assert array_mbrs(g / "sub" / "b", fragment=name) == [rows["sub/b"]["fragments"][1]]
    with pytest.raises(ValueError, match="fragment"):
        array_mbrs(g / "sub" / "b", fragment="__nope")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "json-schema" / "mbrs.v1.json").read_text())
    for args in ([g], [g / "sub" / "b", "--fragment", name]):
        r = subprocess.run([sys.executable, "-m", "tdbformat.cli", "mbrs", *map(str, args), "--json"],
                           capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                           timeout=120)
        assert r.returncode == 0, r.stderr
        jsonschema.validate(json.loads(r.stdout), schema)
