"""``du --what-if``: the sample's unfiltered and on-disk bytes against the data files split into tiles by an
independent parse; every candidate's tiles decode back to the same bytes; --json valid."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tdbformat import schema as S
from tdbformat.check.whatif import CANDIDATES, array_what_if
from tdbformat.filters.pipeline import FilterPlan
from tdbformat.structs.tile import DataFile, tile_nbytes

tiledb = pytest.importorskip("tiledb")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    a = tmp_path_factory.mktemp("wi") / "a"
    dim = tiledb.Dim(name="d", domain=(0, 9999), tile=1000, dtype=np.int64)
    tiledb.Array.create(str(a), tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[
        tiledb.Attr(name="i", dtype=np.int32, filters=tiledb.FilterList([tiledb.ZstdFilter(level=1)])),
        tiledb.Attr(name="f", dtype=np.float64, filters=tiledb.FilterList([tiledb.LZ4Filter()]))]))
    with tiledb.open(str(a), "w") as A:
        A[:] = {"i": (np.arange(10000) // 7).astype(np.int32), "f": np.sin(np.arange(10000) / 100.0)}
    return a


def test_sample_sizes_are_the_data_files(dense):
    rows = {r["field"]: r for r in array_what_if(dense, sample=100)}  # every tile
    (frag,) = (dense / "__fragments").iterdir()
    for name, stem in (("i", "a0.tdb"), ("f", "a1.tdb")):
        tiles = DataFile.parse((frag / stem).read_bytes())
        r = rows[name]
        assert r["tiles"] == len(tiles) == 10
        assert r["current"]["bytes"] == sum(tile_nbytes(t) for t in tiles) == (frag / stem).stat().st_size
        assert r["memory_bytes"] == sum(int(c.unfiltered_size) for t in tiles for c in t.chunks)
    assert {c["filters"] for c in rows["i"]["candidates"]} == {c[0] for c in CANDIDATES}
    assert "double delta" not in {c["filters"] for c in rows["f"]["candidates"]}  # integers only


@pytest.mark.parametrize("name,filters,_", CANDIDATES, ids=[c[0] for c in CANDIDATES])
def test_candidates_round_trip(name, filters, _):
    data = (np.arange(5000) // 3).astype(np.int32).tobytes()
    from tdbformat.enums import Datatype
    plan = FilterPlan(S.FilterList(filters).to_dict(22), datatype=Datatype.INT32, version=22, cell_size=4)
    assert bytes(plan.unfilter(plan.filter(data))) == data


def test_cli_json(dense):
    jsonschema = pytest.importorskip("jsonschema")
    r = subprocess.run([sys.executable, "-m", "tdbformat.cli", "du", str(dense), "--what-if", "--sample", "3",
                        "--json"], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "json-schema" / "du.v1.json").read_text()))
    assert {w["field"] for w in doc["what_if"]} == {"i", "f"}  # a dense array stores no coordinates
    assert all(w["tiles"] == 3 for w in doc["what_if"])
