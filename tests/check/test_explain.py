"""``explain``: findings against TileDB-Py's view of the same arrays (fragment info, non-empty domains,
deletes, schema evolutions, consolidated fragment metadata); ``--range``'s read estimate equal to the tiles
tdbformat's read then decodes, to the MBRs TileDB-Py's ``array_fragments(include_mbrs=True)`` gives, and to
the bytes of those tiles in the data files; --json valid against docs/json-schema/explain.v1.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tdbformat.array import dense_tiles

import corpus
import pygroups
from tdbformat import open_array
from tdbformat.check.explain import explain, explain_array, read_estimate
from tdbformat.structs.tile import DataFile, tile_nbytes

tiledb = pytest.importorskip("tiledb")
ROOT = Path(__file__).resolve().parents[2]


def _by_id(findings):
    return {f["id"]: f for f in findings}


def _touched(path, ranges):
    """(fragments, tiles) tdbformat's read of ``ranges`` decodes: the tiles its Tiles hands out."""
    arr = open_array(path)
    seen = set()
    columns, cells = arr.tiles.columns, arr.tiles.cells

    def rec_columns(frag, dims, idxs, tiles, pool):
        seen.update((frag.name, int(k)) for k in tiles)
        return columns(frag, dims, idxs, tiles, pool)

    def rec_cells(frag, idx, k, *a, **kw):
        seen.add((frag.name, int(k)))
        return cells(frag, idx, k, *a, **kw)
    arr.tiles.columns, arr.tiles.cells = rec_columns, rec_cells
    run_tiles = dense_tiles.run_tiles  # small dense tiles decode in batches (dense_tiles.place_batched)

    def rec_run(reader, frag, idx, kind, tiles, *a, **kw):
        seen.update((frag.name, int(k)) for k in tiles)
        return run_tiles(reader, frag, idx, kind, tiles, *a, **kw)
    dense_tiles.run_tiles = rec_run
    try:
        arr.read(ranges=ranges)
    finally:
        dense_tiles.run_tiles = run_tiles
    return len({f for f, _ in seen}), len(seen)


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    a = tmp_path_factory.mktemp("ex") / "s"
    pygroups.sparse(tiledb, a, writes=3)
    return a


@pytest.mark.parametrize("box", [{}, {"x": (1, 10)}, {"x": (5, 20), "y": (20, 40)}, {"y": (90, 99)}])
def test_sparse_estimate_is_what_the_read_decodes_and_tiledb_pys_mbrs(sparse, box):
    est = read_estimate(sparse, box)
    assert (est["fragments"], est["tiles"]) == _touched(sparse, box)
    info = tiledb.array_fragments(str(sparse), include_mbrs=True)
    hits = [[all(box.get(d, (-10**9, 10**9))[0] <= hi and lo <= box.get(d, (-10**9, 10**9))[1]
                 for d, (lo, hi) in zip("xy", mbr)) for mbr in frag] for frag in info.mbrs]
    assert est["tiles"] == sum(map(sum, hits)) and est["fragments"] == sum(map(any, hits))
    nbytes = 0  # the same tiles' bytes, from the data files split into tiles
    for uri, frag_hits in zip(info.uri, hits):
        folder = Path(uri.removeprefix("file://"))
        for f in folder.glob("*.tdb"):
            if f.name != "__fragment_metadata.tdb":
                tiles = DataFile.parse(f.read_bytes())
                nbytes += sum(tile_nbytes(t) for t, hit in zip(tiles, frag_hits) if hit)
    assert est["bytes"] == nbytes


@pytest.mark.parametrize("box", [{}, {"d": (2, 3)}, {"d": (4, 9)}])
def test_dense_estimate_is_what_the_read_decodes(tmp_path, box):
    a = pygroups.dense(tiledb, tmp_path / "d", writes=2)
    est = read_estimate(a, box)
    assert (est["fragments"], est["tiles"]) == _touched(a, box)
    lo, hi = box.get("d", (0, 9))
    assert est["tiles"] == 2 * (hi // 5 - lo // 5 + 1)  # tile extent 5, two fragments over the whole domain


def test_findings_follow_tiledb_py(tmp_path):
    a = tmp_path / "s"
    pygroups.sparse(tiledb, a, writes=3)
    with tiledb.open(str(a), "d", timestamp=9) as A:
        A.query(cond="v > 10.0").submit()
    se = tiledb.ArraySchemaEvolution()
    se.add_attribute(tiledb.Attr("c", dtype=np.int32))
    se.array_evolve(str(a))
    f = _by_id(explain_array(a))
    info = tiledb.array_fragments(str(a))
    neds = list(info.nonempty_domain)
    overlapping = sum(any(i != j and all(p[0] <= q[1] and q[0] <= p[1] for p, q in zip(neds[i], neds[j]))
                          for j in range(len(neds))) for i in range(len(neds)))
    assert f["fragments"]["value"] == len(info) == 3 and f"{overlapping} of them overlapping" in f["fragments"]["message"]
    assert f["fragment_metadata"]["value"] == 3 and f["fragment_metadata"]["action"]
    assert f["deletes"]["value"] == 1 and f["schemas"]["value"] == 2
    assert f["capacity"]["value"] == round(sum(info.cell_num) / (sum(-(-n // 4) for n in info.cell_num) * 4), 3)
    tiledb.consolidate(str(a), config=tiledb.Config({"sm.consolidation.mode": "fragment_meta"}))
    assert _by_id(explain_array(a))["fragment_metadata"]["value"] == 0
    tiledb.consolidate(str(a))
    tiledb.vacuum(str(a))
    after = _by_id(explain_array(a))
    assert after["fragments"]["value"] == len(tiledb.array_fragments(str(a))) == 1 and after["fragments"]["action"] is None


def test_current_domain_and_padding():
    cd = corpus.root(corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "current_domain")
    assert _by_id(explain_array(cd))["current_domain"]["value"] == 0
    dense = corpus.root(corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "dense_2d_multiattr")
    with tiledb.open(str(dense)) as A:  # each fragment's tiles span whole tiles around what it wrote
        dom = A.schema.domain
    spanned = written = 0
    for ned in tiledb.array_fragments(str(dense)).nonempty_domain:
        spanned += np.prod([(-(-(hi - d.domain[0] + 1) // d.tile) - (lo - d.domain[0]) // d.tile) * d.tile
                            for (lo, hi), d in zip(ned, dom)])
        written += np.prod([hi - lo + 1 for lo, hi in ned])
    assert spanned > written
    assert _by_id(explain_array(dense))["dense_padding"]["value"] == round(spanned / written - 1, 3)


def test_group_and_cli(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "json-schema" / "explain.v1.json").read_text())
    g = pygroups.build(tiledb, tmp_path)
    rows = {r["key"]: r for r in explain(g)["objects"]}
    assert rows["gone"]["missing"] and _by_id(rows["sub/b"]["findings"])["fragments"]["value"] == 2
    for args in ([g], [g / "sub" / "b", "--range", "x=1:10"]):
        r = subprocess.run([sys.executable, "-m", "tdbformat.cli", "explain", *map(str, args), "--json"],
                           capture_output=True, text=True, cwd=ROOT,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        jsonschema.validate(doc, schema)
    assert doc["read_estimate"] == read_estimate(g / "sub" / "b", {"x": (1, 10)})
