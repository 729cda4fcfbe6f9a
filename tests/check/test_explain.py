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


def _points(path, dups, writes, far=True, names=("x", "y"), dtype=np.int64):
    """A sparse array (capacity 4) of ``writes`` random writes on a 12 x 12 corner (duplicates within a write
    where ``dups``), then one far away that overlaps none of them."""
    dims = [tiledb.Dim(n, dtype="ascii") if dtype is str else tiledb.Dim(n, (0, 99), tile=10, dtype=dtype)
            for n in names]
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=4,
                                                      allows_duplicates=dups,
                                                      attrs=[tiledb.Attr("v", np.float64)]))
    rng = np.random.default_rng(len(str(path)))
    cast = (lambda a: np.array([f"k{i:02d}".encode() for i in a], dtype=object)) if dtype is str else (lambda a: a)
    for t in range(1, writes + 1):
        x, y = rng.integers(0, 12, 30), rng.integers(0, 12, 30)
        if not dups:
            k = np.unique(x * 100 + y)
            x, y = k // 100, k % 100
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[cast(x), cast(y)] = {"v": np.arange(len(x), dtype=np.float64)}
    if far:
        with tiledb.open(str(path), "w", timestamp=writes + 1) as A:
            A[cast(np.array([90, 91])), cast(np.array([90, 95]))] = {"v": np.array([1.0, 2.0])}
    return path


def _py_shared(path):
    """(cells a read with TileDB-Py returns, distinct coordinates among them, cells per fragment alone as
    TileDB-Py reads them at its timestamps, distinct coordinates of each)."""
    def read(**kw):
        with tiledb.open(str(path), **kw) as A:
            r = A.query(dims=True, attrs=[])[:]
        coords = list(zip(*(r[n].tolist() for n in r)))
        return len(coords), len(set(coords))
    each = [read(timestamp=tuple(ts)) for ts in tiledb.array_fragments(str(path)).timestamp_range]
    return (*read(), each)


def _coordinate_reads(monkeypatch):
    """The (fragment, field) of every tile tdbformat decodes from here on (fields of v5+ fragments)."""
    from tdbformat.array.tiles import Tiles
    seen, field = [], Tiles.field

    def record(self, frag, idx, tiles, pool):
        seen.extend((frag.name, frag.metadata.index_fields[idx].name) for _ in tiles)
        return field(self, frag, idx, tiles, pool)
    monkeypatch.setattr(Tiles, "field", record)
    return seen


@pytest.mark.parametrize("dtype", [np.int64, str], ids=["int64", "string"])
def test_duplicates_counted_as_tiledb_py_reads_them(tmp_path, dtype, monkeypatch):
    """Duplicates allowed: TileDB-Py returns every cell; the cells past the distinct coordinates are the
    finding's value, within each fragment (read alone at its timestamps) and across; only dimension tiles
    are decoded; TileDB-Py's consolidation keeps them all (the action says what does not)."""
    a = _points(tmp_path / "a", True, 3, dtype=dtype)
    rows, distinct, each = _py_shared(a)
    seen = _coordinate_reads(monkeypatch)
    f = _by_id(explain_array(a))["duplicates"]
    within = sum(n - d for n, d in each)
    assert rows > distinct and within > 0
    assert f["value"] == rows - distinct and f["counted"]["within_fragments"] == within
    assert f["counted"]["across_fragments"] == rows - distinct - within
    assert {field for _, field in seen} == {"x", "y"} and "sm.dedup_coords" in f["action"]
    tiledb.consolidate(str(a))
    tiledb.vacuum(str(a))
    assert len(tiledb.array_fragments(str(a))) == 1 and _py_shared(a)[:2] == (rows, distinct)
    after = _by_id(explain_array(a))["duplicates"]
    assert after["value"] == rows - distinct and after["counted"]["within_fragments"] == rows - distinct


def test_overwritten_cells_counted_from_overlapping_tiles_only(tmp_path, monkeypatch):
    """No duplicates: the cells the fragments hold past what TileDB-Py's read returns are overwritten ones;
    the far fragment (its domain meets no other) and tiles whose MBR meets no other fragment's are not read.
    Consolidated with timestamps, the one fragment keeps every version: counted within it."""
    a = _points(tmp_path / "a", False, 3)
    cells = sum(tiledb.array_fragments(str(a)).cell_num)
    rows, distinct, _ = _py_shared(a)
    assert rows == distinct < cells
    seen = _coordinate_reads(monkeypatch)
    f = _by_id(explain_array(a))["overwritten"]
    assert f["value"] == f["counted"]["across_fragments"] == cells - rows and f["counted"]["within_fragments"] == 0
    info = tiledb.array_fragments(str(a), include_mbrs=True)
    far = Path(info.uri[-1]).name
    assert far not in {frag for frag, _ in seen} and {field for _, field in seen} == {"x", "y"}
    assert len(seen) == 2 * f["counted"]["coordinate_tiles"]

    def meets(p, q):
        return all(lo1 <= hi2 and lo2 <= hi1 for (lo1, hi1), (lo2, hi2) in zip(p, q))
    wanted = sum(any(meets(m, o) for j, other in enumerate(info.mbrs) if j != i for o in other)
                 for i, frag in enumerate(info.mbrs) for m in frag)
    assert f["counted"]["coordinate_tiles"] == wanted < sum(len(m) for m in info.mbrs)
    assert "consolidate" in f["action"]
    tiledb.consolidate(str(a), config=tiledb.Config({"sm.consolidation.with_timestamps": "true"}))
    tiledb.vacuum(str(a))
    assert len(tiledb.array_fragments(str(a))) == 1 and _py_shared(a)[0] == rows
    f = _by_id(explain_array(a))["overwritten"]
    assert f["value"] == f["counted"]["within_fragments"] == cells - rows
    s = _points(tmp_path / "strings", False, 3, dtype=str)  # MBRs of string dimensions
    assert _by_id(explain_array(s))["overwritten"]["value"] == \
        sum(tiledb.array_fragments(str(s)).cell_num) - _py_shared(s)[0] > 0


def test_shared_coordinates_stay_in_the_read_budget(tmp_path, monkeypatch):
    """The coordinate tiles of a whole explain read at most read_budget bytes: past it an array says 'not
    counted' with the bytes it needs and reads no tile; a group's arrays share the budget."""
    a = _points(tmp_path / "a", True, 2)
    need = _by_id(explain_array(a))["duplicates"]["counted"]["coordinate_bytes"]
    seen = _coordinate_reads(monkeypatch)
    f = _by_id(explain_array(a, read_budget=need - 1))["duplicates"]
    assert f["value"] is None and f["message"].startswith(f"not counted: it needs {need} bytes") and seen == []
    assert _by_id(explain_array(a, read_budget=need))["duplicates"]["value"] is not None
    assert _by_id(explain_array(_points(tmp_path / "n", False, 1, far=False), read_budget=0))["overwritten"]["value"] == 0
    g = tmp_path / "g"
    tiledb.Group.create(str(g))
    _points(g / "one", True, 2)
    _points(g / "two", True, 2)
    with tiledb.Group(str(g), "w") as G:
        G.add("one", name="one", relative=True)
        G.add("two", name="two", relative=True)
    budget = _by_id(explain_array(g / "one"))["duplicates"]["counted"]["coordinate_bytes"]
    rows = [_by_id(r["findings"])["duplicates"] for r in explain(g, read_budget=budget)["objects"][1:]]
    assert len(rows) == 2 and rows[0]["value"] is not None and rows[1]["value"] is None  # the same arrays
    with pytest.raises(ValueError, match="read_budget"):
        explain(g, read_budget=-1)
    z = tmp_path / "z"  # coordinates that compress 100-fold: the budget counts them decoded
    dims = [tiledb.Dim(n, (0, 99), tile=10, dtype=np.int64, filters=[tiledb.ZstdFilter()]) for n in "xy"]
    tiledb.Array.create(str(z), tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=1000,
                                                   allows_duplicates=True, attrs=[tiledb.Attr("v", np.int8)]))
    with tiledb.open(str(z), "w") as A:
        A[np.zeros(1000, np.int64), np.zeros(1000, np.int64)] = {"v": np.zeros(1000, np.int8)}
    f = _by_id(explain_array(z))["duplicates"]
    assert f["value"] == 999 and f["counted"]["coordinate_bytes"] == 1000 * 16
    assert _by_id(explain_array(z, read_budget=1000 * 16 - 1))["duplicates"]["value"] is None
