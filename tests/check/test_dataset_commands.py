"""stats, fragments and schema on a group: each array below it (recursively), compared with TileDB-Py's
fragment info and schemas of the same arrays; a member lost from disk is a row, not a failure; --json
documents valid against docs/json-schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pygroups

tiledb = pytest.importorskip("tiledb")
jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")
ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "json-schema"


def _validator(command):
    docs = [json.loads(p.read_text()) for p in SCHEMAS.glob("*.json")]
    registry = referencing.Registry().with_resources([(d["$id"], referencing.Resource.from_contents(d)) for d in docs])
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / f"{command}.v1.json").read_text()), registry=registry)


def _cli(*args):
    r = subprocess.run([sys.executable, "-m", "tdbformat.cli", *map(str, args)], capture_output=True, text=True,
                       cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    return pygroups.build(tiledb, tmp_path_factory.mktemp("ds"))


def _py_uris(group):
    """{key: uri} of the arrays below the group, as TileDB-Py lists them."""
    out = {}
    for name, uri, kind in pygroups.py_members(tiledb, group):
        key = name or uri.rstrip("/").rsplit("/", 1)[-1]
        if kind == "group":
            out.update({f"{key}/{k}": u for k, u in _py_uris(uri.removeprefix("file://")).items()})
        else:
            out[key] = uri
    return out


def test_fragments_of_each_array_are_tiledb_pys(group):
    doc = json.loads(_cli("fragments", group, "--json"))
    _validator("fragments").validate(doc)
    arrays = {a["key"]: a for a in doc["arrays"]}
    assert set(arrays) == set(_py_uris(group))
    assert arrays["gone"]["missing"] and "fragments" not in arrays["gone"]
    for key, uri in _py_uris(group).items():
        if key == "gone":
            continue
        info = tiledb.array_fragments(uri)
        assert [f["name"] for f in arrays[key]["fragments"]] == [u.rsplit("/", 1)[-1] for u in info.uri]
        assert [f["cell_num"] for f in arrays[key]["fragments"]] == list(info.cell_num)
    text = _cli("fragments", group)
    assert "sub/b" in text and "no array at" in text


def test_schema_of_each_array_is_tiledb_pys(group):
    doc = json.loads(_cli("schema", group, "--json"))
    _validator("schema").validate(doc)
    for a in doc["arrays"]:
        if a["missing"]:
            continue
        with tiledb.open(a["uri"]) as A:
            s = a["schemas"][-1]
            assert [d["name"] for d in s["dimensions"]] == [d.name for d in A.schema.domain]
            assert [x["name"] for x in s["attributes"]] == [x.name for x in A.schema]
            assert s["array_type"] == ("sparse" if A.schema.sparse else "dense")


def test_stats_of_each_array(group):
    doc = json.loads(_cli("stats", group, "--json"))
    _validator("stats").validate(doc)
    rows = {r["key"]: r for r in doc["objects"]}
    assert rows[""]["type"] == "group" and rows["sub"]["type"] == "group" and rows["gone"]["missing"]
    for key, uri in _py_uris(group).items():
        if key != "gone":
            assert [f["cell_num"] for f in rows[key]["fragments"]] == list(tiledb.array_fragments(uri).cell_num)
    assert "sub/b" in _cli("stats", group)


def test_progress_hears_of_every_object(group, monkeypatch, capsys):
    """A bar over a large group: ``progress`` learns the number of objects, then each one; the commands run
    under the bar (a person watching) and print what they print without it."""
    from tdbformat import cli
    from tdbformat.check.du import du
    from tdbformat.check.gate import versions

    heard = {"total": 0, "done": 0}

    def progress(done=0, total=0):
        heard["total"] += total
        heard["done"] += done
    n = len(versions(group, progress=progress)["objects"])
    assert heard == {"total": n, "done": n} and n == 7
    heard.update(total=0, done=0)
    du(group, progress=progress)
    assert heard["total"] == heard["done"] == 6  # the lost member has no files
    for command in (["du", str(group)], ["versions", str(group)], ["history", str(group)], ["explain", str(group)],
                    ["stats", str(group)]):
        monkeypatch.setattr(cli.output, "progress_wanted", lambda: False)
        assert cli.main(command) == 0
        plain = capsys.readouterr().out
        monkeypatch.setattr(cli.output, "progress_wanted", lambda: True)
        assert cli.main(command) == 0
        assert capsys.readouterr().out == plain
