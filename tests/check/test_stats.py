"""``stats`` and ``versions`` against the corpus truth (fragments, versions, file sizes as TileDB-Py listed them),
the data files parsed tile by tile (tile counts, sizes, unfiltered bytes), and the spec's version history."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import corpus
from tdbformat.structs.tile import DataFile, tile_nbytes
from tdbformat.check.stats import stats, versions
from tdbformat.versions import FIRST_RELEASE

ROOT = Path(__file__).resolve().parents[2]
ARRAYS = [c for c in corpus.cases() if corpus.truth(c).get("kind", "array") == "array"]
#: data files whose every tile holds the bytes the metadata counts (string RLE/dictionary keep no offsets)
PLAIN = [c for c in ARRAYS if c.parent.name.startswith("v22_tiledb-py-0.36.1") and "string" not in c.name
         and "dictionary" not in c.name and "timestamps" not in c.name]


def _committed(case, doc):
    names = {f["name"] for f in doc["fragments"]}
    return [f for f in corpus.truth(case)["fragments"] if f["uri"].rstrip("/").rsplit("/", 1)[-1] in names]


@pytest.mark.parametrize("case", ARRAYS, ids=corpus.case_id)
def test_fragments_and_bytes_match_the_truth(case):
    doc = stats(corpus.root(case), key=corpus.key(case))
    ours = {f["name"]: f for f in doc["fragments"]}
    for t in _committed(case, doc):
        f = ours[t["uri"].rstrip("/").rsplit("/", 1)[-1]]
        assert (f["format_version"], f["timestamp_range"]) == (t["version"], t["timestamp_range"])
        if "sparse" in t:  # the truth of older writers does not say
            assert f["type"] == ("sparse" if t["sparse"] else "dense")
    # reclaimable: the fragments TileDB-Py lists to vacuum; fields count the others alone
    if "to_vacuum" in corpus.truth(case):  # older truth files do not list it
        to_vacuum = {u.rstrip("/").rsplit("/", 1)[-1] for u in corpus.truth(case)["to_vacuum"]}
        assert {n for n, f in ours.items() if f["state"] == "reclaimable"} == to_vacuum & set(ours)
    # disk bytes: the data files of the live fragments, as TileDB-Py's file listing sized them
    sizes = {f["path"]: f["size"] for f in corpus.truth(case)["files"]}
    live = {n for n, f in ours.items() if f["state"] == "live"}
    data = sum(s for p, s in sizes.items() if Path(p).parent.name in live and Path(p).name != "__fragment_metadata.tdb")
    assert sum(r["disk_bytes"] for r in doc["fields"]) == data
    assert sum(f["disk_bytes"] for f in doc["filters"]) == data


@pytest.mark.parametrize("case", PLAIN, ids=corpus.case_id)
def test_tiles_and_memory_match_the_data_files(case):
    """Tile counts, sizes on disk and unfiltered bytes, against the data files split into tiles and chunks."""
    doc = stats(corpus.root(case), key=corpus.key(case))
    frags = [p for p in corpus.root(case).rglob("__fragment_metadata.tdb") if p.parent.name in
             {f["name"] for f in doc["fragments"] if f["state"] == "live"}]  # the tiles a read touches
    for row in doc["fields"]:
        tiles = []
        stem = _stem(row, corpus.root(case), corpus.key(case))
        for meta in frags:
            path = meta.parent / stem
            if path.exists():
                tiles += DataFile.parse(path.read_bytes())
        assert row["tiles"] == len(tiles), row
        assert row["memory_bytes"] == sum(int(c.unfiltered_size) for t in tiles for c in t.chunks), row
        on_disk = [tile_nbytes(t) for t in tiles]
        assert (row["tile_bytes"]["min"], row["tile_bytes"]["max"]) == ((min(on_disk), max(on_disk)) if on_disk
                                                                        else (None, None))
        assert row["tile_bytes"]["median"] == (float(np.median(on_disk)) if on_disk else None)


def _stem(row, root, key):
    """The data file of a stats row (v9+ names: a<i> for attributes, d<j> for dimensions)."""
    from tdbformat import open_array

    arr = open_array(root, key=key)
    attrs = [a.name for a in arr.attrs]
    stem = f"a{attrs.index(row['field'])}" if row["field"] in attrs else f"d{[d.name for d in arr.dims].index(row['field'])}"
    return stem + {"fixed": "", "offsets": "", "var": "_var", "validity": "_validity"}[row["file"]] + ".tdb"


def _history() -> dict:
    text = (ROOT / "tests" / "data" / "spec" / "array_format_history.md").read_text()
    return {int(v): r for v, r in re.findall(r"## Version (\d+)\s+Introduced in TileDB ([\d.]+)", text)}


def test_first_releases_are_the_spec_history():
    assert FIRST_RELEASE == _history()


@pytest.mark.parametrize("case", ARRAYS, ids=corpus.case_id)
def test_versions_match_the_truth(case):
    doc = versions(corpus.root(case), key=corpus.key(case))
    t = corpus.truth(case)
    schemas = [r for r in doc["files"] if r["kind"] == "schema"]
    if t["schema"].get("version") is not None:  # encrypted cases' truth has no schema
        assert schemas[-1]["format_version"] == t["schema"]["version"]
    frags = {r["name"]: r["format_version"] for r in doc["files"] if r["kind"] == "fragment"}
    for f in t["fragments"]:
        name = f["uri"].rstrip("/").rsplit("/", 1)[-1]
        if name in frags:
            assert frags[name] == f["version"]
    newest = max([t["schema"].get("version") or 0] + [f["version"] for f in t["fragments"]])
    assert doc["newest_format_version"] >= newest
    assert doc["oldest_tiledb_release"] == _history()[doc["newest_format_version"]]


def test_commands_print_and_json_validates():
    jsonschema = pytest.importorskip("jsonschema")
    case = corpus.root(corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "sparse_var_string_dim")
    for command in ("stats", "versions"):
        schema = json.loads((ROOT / "docs" / "json-schema" / f"{command}.v1.json").read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        for extra in ([], ["--json"]):
            r = subprocess.run([sys.executable, "-m", "tdbformat", command, str(case), *extra], capture_output=True,
                               text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
            assert r.returncode == 0, r.stderr
            if extra:
                jsonschema.validate(json.loads(r.stdout), schema)
            else:
                assert ("ZSTD(level=-1)" if command == "stats" else "TileDB 2.25 or later") in r.stdout
