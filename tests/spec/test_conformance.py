"""conformance/: fresh (regenerated from the corpus, byte for byte), self-contained (each copied file parses to
its expected value from the suite's own files), and agreeing with TileDB's truth files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import corpus
from tdbformat import parse_file
from tdbformat.spec.conformance import EDGE_PREFIX, _value, edge_cases, edge_expected, select_cases, \
    write_conformance, write_prev1_cases

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "conformance"
DOCS = sorted(SUITE.glob("v*/*/expected.json"))
CORPUS_DOCS = [d for d in DOCS if (corpus.CORPUS / d.parent.parent.name / d.parent.name).is_dir()]


def _id(doc: Path) -> str:
    return f"{doc.parent.parent.name}/{doc.parent.name}"


def _generated(p: Path) -> bool:
    """A file of a case copied from the corpus or tests/data/prev1 (not the JS runner, the README, an edge case)."""
    parts = p.relative_to(SUITE).parts
    return len(parts) > 2 and parts[0].startswith("v") and not parts[1].startswith(EDGE_PREFIX)


def test_the_suite_is_fresh(tmp_path):
    write_conformance(corpus.CORPUS, tmp_path)
    write_prev1_cases(ROOT / "tests" / "data" / "prev1", tmp_path)
    fresh = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    kept = {p.relative_to(SUITE): p.read_bytes() for p in SUITE.rglob("*") if p.is_file() and _generated(p)}
    assert sorted(fresh) == sorted(kept), "conformance/ is stale: run python3 scripts/conformance.py"
    stale = [str(p) for p in fresh if fresh[p] != kept[p]]
    assert not stale, f"conformance/ is stale ({stale[:5]}): run python3 scripts/conformance.py"


def test_edge_cases_are_fresh():
    cases = edge_cases(SUITE)
    assert {Path(c).name for c in cases} == {"edge_int64_sparse", "edge_int64_dense"}
    stale = [str(c) for c in cases if edge_expected(c) != (Path(c) / "expected.json").read_bytes()]
    assert not stale, f"{stale}: run python3 scripts/conformance.py"


def test_every_version_is_covered():
    versions = {d.parent.parent.name.split("_")[0][1:] for d in DOCS}
    # every format version, and the pre-v1 dialects that TileDB-written arrays exist for (none of 1.0/1.1)
    assert versions == {str(v) for v in range(1, 24)} | {"0.x", "1.2", "1.3"}
    assert len(CORPUS_DOCS) == len([c for c in select_cases(corpus.CORPUS)
                             if not corpus.truth(corpus.CORPUS / c[0] / c[1]).get("encryption")])


@pytest.mark.parametrize("doc", DOCS, ids=_id)
def test_each_file_parses_to_its_value_from_the_suite_alone(doc):
    expected = json.loads(doc.read_text())
    assert expected["suite_version"] == 2 and expected["files"]
    for entry in expected["files"]:
        path = doc.parent / "array" / entry["file"]
        assert path.stat().st_size == entry["size"]
        parsed = parse_file(path)
        assert parsed.kind == entry["kind"]
        # through JSON, as an implementer reads it
        assert json.loads(json.dumps(_value(parsed))) == entry["value"], entry["file"]


_ORDER = {"ROW_MAJOR": "row-major", "COL_MAJOR": "col-major", "HILBERT": "hilbert", "GLOBAL_ORDER": "global"}


def _fragment_truth(truth: dict, file: str):
    folder = file.split("/")[-2]
    return next((f for f in truth.get("fragments", []) if f["uri"].rstrip("/").split("/")[-1] == folder), None)


@pytest.mark.parametrize("doc", CORPUS_DOCS, ids=_id)
def test_expected_values_agree_with_truth(doc):
    """Schema fields, non-empty domains and sparse cell counts, where truth.json records them."""
    truth = json.loads((corpus.CORPUS / doc.parent.parent.name / doc.parent.name / "truth.json").read_text())
    entries = json.loads(doc.read_text())["files"]
    checked, neds = 0, []
    for e in entries:
        top = e["file"].startswith("__schema/") or e["file"] == "__array_schema.tdb"  # not a label's schema
        if e["kind"] == "array_schema" and top and "schema" in truth:
            schema, want = e["value"]["payload"], truth["schema"]
            if want.get("version") is not None and schema["version"] != want["version"]:
                continue  # an older schema of the array's history
            assert _ORDER[schema["cell_order"]] == want["cell_order"]
            assert schema["array_type"].lower() == want["array_type"]
            if want["array_type"] == "sparse":
                assert schema["capacity"] == want["capacity"]
            dims = schema["domain"]["dimensions"]
            assert [d["name"] for d in dims] == [d["name"] for d in want["domain"]["dims"]]
            checked += 1
        if e["kind"] == "fragment_metadata" and e["file"].startswith("__"):
            frag = _fragment_truth(truth, e["file"])
            if frag is None:
                continue
            value = e["value"]
            meta = value["footer"] if "footer" in value else value["legacy"]["payload"]
            ned = meta["non_empty_domain"]
            if isinstance(ned, list) and ned and all(isinstance(x, list) for x in ned):
                flat = [x for pair in ned for x in pair]
            else:
                flat = ned
            neds.append(flat)
            want = [x for pair in frag.get("nonempty_domain", []) for x in pair]
            if want and all(isinstance(x, (int, float)) for x in want) and isinstance(flat, list):
                assert flat == want, e["file"]
                checked += 1
            if not frag.get("sparse") or "cell_num" not in frag:
                continue
            tiles = meta.get("sparse_tile_num", meta.get("mbr_num"))
            schema = next(x["value"]["payload"] for x in entries if x["kind"] == "array_schema")
            assert (tiles - 1) * schema["capacity"] + meta["last_tile_cell_num"] == frag["cell_num"], e["file"]
            checked += 1
    union = truth.get("nonempty_domain")
    if union and neds and all(isinstance(x, (int, float)) for pair in union for x in pair) \
            and all(isinstance(n, list) and len(n) == 2 * len(union) for n in neds):
        # the array's non-empty domain is the union of its fragments'
        bounds = [(max if i % 2 else min)(n[i] for n in neds) for i in range(len(neds[0]))]
        assert bounds == [x for pair in union for x in pair]
        checked += 1
    if "schema" in truth:
        assert checked, "nothing of this case was checked against truth.json"
