"""A second language: Kaitai's JavaScript parsers, compiled from every .ksy of spec_versions/ksy with the npm
compiler, read every file of conformance/ to its expected.json (conformance/js/run.js, with the 64-bit reader
shim), leaf by leaf, 0 disagreements; and a changed expected leaf is caught.

The parsers are compiled once per session (about 20 s on one core); running the suite takes a few seconds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "conformance"
JS = SUITE / "js"
KSY = sorted((REPO / "spec_versions" / "ksy").glob("v*/*.ksy"))


@pytest.fixture(scope="session")
def js_parsers(tmp_path_factory):
    """The folder of the compiled JavaScript parsers, after checking that every .ksy compiles."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the Kaitai compiler and runtime run on node")
    if not (JS / "node_modules" / "kaitai-struct").is_dir():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed: it installs conformance/js's packages")
        subprocess.run(["npm", "ci", "--prefix", str(JS)], check=True, capture_output=True)
    out = tmp_path_factory.mktemp("ksc_js")
    run = subprocess.run(["node", str(JS / "compile.js"), str(out), *map(str, KSY)], capture_output=True, text=True)
    errors = {f: e for f, e in json.loads(run.stdout).items() if e is not None}
    assert run.returncode == 0 and not errors, errors
    return out


def run_suite(parsers, *roots, stock_int64=False) -> tuple[int, dict]:
    """conformance/js/run.js over ``roots``: (exit code, summary)."""
    flags = ["--stock-int64"] if stock_int64 else []
    run = subprocess.run(["node", str(JS / "run.js"), *flags, str(parsers), *map(str, roots)], capture_output=True,
                         text=True, cwd=REPO)
    assert run.stdout, run.stderr
    return run.returncode, json.loads(run.stdout)


def test_every_suite_file_reads_to_its_expected_json_in_javascript(js_parsers):
    rc, summary = run_suite(js_parsers, SUITE)
    documents = sorted(SUITE.glob("v*/*/expected.json"))
    files = sum(len(json.loads(d.read_text())["files"]) for d in documents)
    assert summary["files"] == files
    # only empty marker files have no .ksy (a lock, a group's or a 0.x fragment's marker)
    assert set(summary["no_ksy"]) <= {"lock", "group_marker", "fragment_marker", "consolidation_lock"}
    assert summary["compared"] == files - sum(summary["no_ksy"].values())
    assert summary["leaves"] > 100_000
    assert (rc, summary["disagreements"]) == (0, 0), "\n".join(summary["first"])


def test_the_corpus_soma_and_pandas_read_to_their_suite_json_in_javascript(js_parsers, corpus_suite):
    """Beyond the committed suite: the corpus (sampled), a tiledbsoma experiment and pandas frames, every
    structure that has a .ksy; without the 64-bit shim, SOMA's and pandas' values are read wrong."""
    docs = sorted(corpus_suite.glob("v*/*/expected.json"))
    rc, summary = run_suite(js_parsers, corpus_suite)
    assert (rc, summary["disagreements"]) == (0, 0), "\n".join(summary["first"])
    kinds = {e["kind"] for d in docs for e in json.loads(d.read_text())["files"]}
    assert set(summary["kinds"]) == kinds - set(summary["no_ksy"]) and summary["compared"] > 1500
    assert set(summary["no_ksy"]) <= {"lock", "group_marker"}
    rc, stock = run_suite(js_parsers, corpus_suite / "v22_tiledbsoma", corpus_suite / "v22_pandas", stock_int64=True)
    assert rc == 1 and stock["disagreements"] > 10


def _mutate(value, path):
    """``value`` with the leaf at ``path`` (keys and indices) changed into another leaf of the same kind."""
    *head, last = path
    holder = value
    for p in head:
        holder = holder[p]
    leaf = holder[last]
    if isinstance(leaf, dict):  # {"int": ...}, {"bytes_hex": ...}, {"float": ...}
        (k, v), = leaf.items()
        holder[last] = {k: {"int": lambda: str(int(v) - 1), "bytes_hex": lambda: v + "00",
                            "float": lambda: "-inf" if v != "-inf" else "inf"}[k]()}
    elif isinstance(leaf, bool):
        holder[last] = not leaf
    elif isinstance(leaf, (int, float)):
        holder[last] = leaf + 1
    else:
        holder[last] = leaf + "x"


@pytest.mark.parametrize("case, file, path", [
    ("v12_c-api_core-2.8.3/sparse_2d_rtree", "__fragment_metadata.tdb", ["fragment_summary", 0, "sum"]),
    ("v22_tiledb-py-0.36.1_core-2.30.0/array_metadata", "__schema/", ["payload", "cell_order"]),
    ("v22_tiledb-py-0.36.1_core-2.30.0/edge_int64_sparse", "__fragment_metadata.tdb",
     ["footer", "non_empty_domain", 0, 0]),
    ("v1.2_tiledb-1.2.2/sparse_compressed", "__fragment_metadata.tdb", ["payload", "last_tile_cell_num"]),
    ("v0.x_tiledb-0.6.1/dense_compressed", "a2_var.tdb", [1]),
])
def test_a_changed_expected_leaf_is_a_disagreement(js_parsers, tmp_path, case, file, path):
    copy = tmp_path / case
    shutil.copytree(SUITE / case, copy)
    doc = json.loads((copy / "expected.json").read_text())
    entry = next(e for e in doc["files"] if file in e["file"])
    _mutate(entry["value"], path)
    (copy / "expected.json").write_text(json.dumps(doc))
    rc, summary = run_suite(js_parsers, copy)
    assert rc == 1 and summary["disagreements"] == 1, summary
    assert "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path) in summary["first"][0]
    rc, summary = run_suite(js_parsers, SUITE / case)  # the unchanged case still agrees
    assert (rc, summary["disagreements"]) == (0, 0)


def test_without_the_64_bit_shim_the_stock_runtime_rounds_the_edge_cases(js_parsers):
    """The trap the shim exists for: kaitai-struct 0.11 reads u8/s8 as a Number (rounded beyond 2^53, and
    some negative s8 wrong); with the shim the same files agree (the test above)."""
    edges = sorted(SUITE.glob("v*/edge_*"))
    rc, summary = run_suite(js_parsers, *edges, stock_int64=True)
    assert rc == 1 and summary["disagreements"] > 20
    assert all('{"int":' in d for d in summary["first"])
