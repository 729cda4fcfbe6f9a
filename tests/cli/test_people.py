"""The commands for people (schema, fragments, meta, ls, cat) on every corpus array and group, their --json
against docs/json-schema/, and their answers against TileDB-Py's (live for v1-v22) and truth.json."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import corpus
from tdbformat import open_array
from tdbformat.cli.cat import write_cells
from tdbformat.show import jsonable
from oracle import tiledb_ctx

jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "json-schema"
COMMANDS = ["schema", "fragments", "meta", "ls", "cat"]
CASES = corpus.cases()
ARRAYS = [c for c in CASES if corpus.truth(c).get("path", "array") != "group"]
GROUPS = [c for c in CASES if c not in ARRAYS]
_DRIVER = """
import contextlib, io, json, sys
from tdbformat.cli import main
out = []
for argv in json.loads(sys.stdin.read()):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    out.append([rc, buf.getvalue()])
print(json.dumps(out))
"""


def _argv(command, case, *extra):
    key = corpus.key(case)
    return [command, str(corpus.root(case)), *extra, *(["--key", key] if key else [])]


@lru_cache(maxsize=None)
def _run_all(command: str, json_out: bool) -> tuple:
    """``command`` on every corpus case, all in one subprocess (a process per case would take minutes)."""
    argvs = [_argv(command, c, *(["--json"] if json_out else [])) for c in CASES]
    r = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(argvs), capture_output=True, text=True,
                       cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return tuple(map(tuple, json.loads(r.stdout)))


@lru_cache(maxsize=None)
def _validator(command: str):
    resources = [(json.loads(p.read_text())["$id"], referencing.Resource.from_contents(json.loads(p.read_text())))
                 for p in SCHEMAS.glob("*.json")]
    registry = referencing.Registry().with_resources(resources)
    schema = json.loads((SCHEMAS / f"{command}.v1.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=registry)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_case_json_validates(command):
    results = _run_all(command, True)
    for case, (rc, out) in zip(CASES, results):
        assert rc == 0, (corpus.case_id(case), out[-500:])
        lines = out.splitlines() if command == "cat" else [out]
        for line in lines:
            _validator(command).validate(json.loads(line))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_case_prints(command):
    for case, (rc, out) in zip(CASES, _run_all(command, False)):
        assert rc == 0 and out, corpus.case_id(case)
        if case in GROUPS:
            assert ("group metadata" if command == "meta" else "is a TileDB group") in out, corpus.case_id(case)


def test_a_real_process_per_command():
    """The command line itself, not only main(): a group named as a group, an encrypted array's --key."""
    group, enc = GROUPS[-1], next(c for c in ARRAYS if corpus.key(c))
    for argv, rc, text in [(["cat", str(corpus.root(group))], 0, "is a TileDB group"),
                           (["schema", str(corpus.root(enc))], 1, "pass --key KEY"),
                           (["cat", str(corpus.root(ARRAYS[0])), "--range", "nope=1:2"], 2, "--range"),
                           (["cat", str(ROOT)], 1, "not a TileDB array")]:
        r = subprocess.run([sys.executable, "-m", "tdbformat", *argv], capture_output=True, text=True, cwd=ROOT,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        assert r.returncode == rc and text in r.stdout + r.stderr and "Traceback" not in r.stderr, (argv, r.stderr)


# --- against truth.json (every case, v23 too) ---

@pytest.mark.parametrize("case", ARRAYS, ids=corpus.case_id)
def test_schema_matches_truth(case):
    want = corpus.truth(case)["schema"]
    rc, out = _run_all("schema", True)[CASES.index(case)]
    got = json.loads(out)["schemas"][-1]
    assert got["array_type"] == want["array_type"]
    assert (got["cell_order"], got["tile_order"]) == (want["cell_order"], want["tile_order"])
    assert got["allows_duplicates"] == want["allows_duplicates"]
    if want["array_type"] == "sparse":
        assert got["capacity"] == want["capacity"]
    if want.get("version") is not None:
        assert got["format_version"] == want["version"]
    assert [(d["name"], d["type"], d["var"]) for d in got["dimensions"]] == [
        (d["name"], d["tiledb_datatype"], d["var"]) for d in want["domain"]["dims"]]
    for d, w in zip(got["dimensions"], want["domain"]["dims"]):
        if not w["var"]:
            assert (d["domain"], d["tile"]) == (jsonable(w["domain"]), jsonable(w["tile"])), d["name"]
        if w.get("filters") is not None:  # v1-v4 truth files record no dimension filters
            # libtiledb before 2.17 reported an empty list where the coordinate filters apply
            filters = w["filters"]["filters"] or want["coords_filters"]["filters"]
            assert [f["type"] for f in d["filters"]] == [f["filter_type"] for f in filters]
    assert [(a["name"], a["type"], a["nullable"]) for a in got["attributes"]] == [
        (a["name"], a["tiledb_datatype"], a["nullable"]) for a in want["attrs"]]
    for a, w in zip(got["attributes"], want["attrs"]):
        assert [f["type"] for f in a["filters"]] == [f["filter_type"] for f in w["filters"]["filters"]]
        assert a["enumeration"] == w.get("enum_label")
        assert (a["cell_val_num"] == "var") == w["var"]


@pytest.mark.parametrize("case", ARRAYS, ids=corpus.case_id)
def test_fragments_match_truth(case):
    t = corpus.truth(case)
    rc, out = _run_all("fragments", True)[CASES.index(case)]
    rows = json.loads(out)["fragments"]
    # without a fragment info API (libtiledb < 2.2) the truth lists every fragment folder, consolidated or not
    folders_only = all("cell_num" not in f for f in t["fragments"])
    committed = [r for r in rows if folders_only or r["state"] == "committed"]
    assert [r["name"] for r in committed] == [f["uri"].rstrip("/").rsplit("/", 1)[-1] for f in t["fragments"]]
    for r, f in zip(committed, t["fragments"]):  # older truth files record fewer fields
        want = {"timestamp_range": f.get("timestamp_range"), "cell_num": f.get("cell_num"),
                "type": None if f.get("sparse") is None else ("sparse" if f["sparse"] else "dense"),
                "non_empty_domain": jsonable(f.get("nonempty_domain")), "format_version": f.get("version")}
        assert {k: r[k] for k, v in want.items() if v is not None} == {k: v for k, v in want.items() if v is not None}
    to_vacuum = {u.rstrip("/").rsplit("/", 1)[-1] for u in t.get("to_vacuum") or []}
    if not folders_only:
        assert {r["name"] for r in rows if r["state"] == "consolidated"} <= to_vacuum


# --- against TileDB-Py, live ---

tiledb = pytest.importorskip("tiledb")


def _tdb(case):
    if corpus.case_id(case).startswith("v23"):
        pytest.skip("TileDB-Py 0.36 (core 2.30) cannot open format v23 arrays")
    key = corpus.key(case)
    ctx = tiledb_ctx(key)
    return tiledb.open(str(corpus.root(case)), ctx=ctx)


def _same(got, want):
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    elif isinstance(want, float) and np.isnan(want):
        assert np.isnan(got)
    else:
        assert type(got) is type(want) and got == want, (got, want)


@pytest.mark.parametrize("case", ARRAYS, ids=corpus.case_id)
def test_meta_and_nonempty_domain_match_tiledb_py(case):
    arr = open_array(corpus.root(case), key=corpus.key(case))
    with _tdb(case) as A:
        # TileDB-Py's metadata arrays view buffers that closing the array frees: copy them while open
        want_meta = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in A.meta.items()}
        want_ned = A.nonempty_domain()
    got = arr.meta
    assert list(got) == list(want_meta)
    for k in want_meta:
        _same(got[k], want_meta[k])
    got_ned = arr.nonempty_domain()
    assert (got_ned is None) == (want_ned is None)
    for g, w in zip(got_ned or (), want_ned or ()):
        assert list(g) == list(w), (g, w)
        assert [isinstance(x, np.datetime64) for x in g] == [isinstance(x, np.datetime64) for x in w]
        assert [isinstance(x, bytes) for x in g] == [isinstance(x, bytes) for x in w]


def _tdb_cells(A, case, **query):
    """TileDB-Py's cells as cat prints them: dense over the non-empty domain, labels for enumerations."""
    ned = A.nonempty_domain()
    if ned is None:
        return []
    if A.schema.sparse:
        cells = A.query(**query)[:] if query else A[:]
    else:
        idx = tuple(slice(lo, hi + 1) for lo, hi in ned)
        cells = A.query(**query)[idx] if query else A[idx]
        cur = A.schema.domain
        grid = np.meshgrid(*[np.arange(lo, hi + 1, dtype=cur.dim(i).dtype if cur.dim(i).dtype.kind not in "mM"
                                       else None) for i, (lo, hi) in enumerate(ned)], indexing="ij")
        order = query.get("order", "C")
        cells = {**{cur.dim(i).name: g.ravel(order) for i, g in enumerate(grid)},
                 **{k: np.ma.ravel(v, order) for k, v in cells.items()}}
    names = list(cells)
    return [dict(zip(names, row)) for row in zip(*(cells[n] for n in names))]


def _cat(case, **kw):
    arr = open_array(corpus.root(case), key=corpus.key(case))
    buf = io.StringIO()
    write_cells(arr, buf, fmt="json", **kw)
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def _rows(cells):
    return [{k: (None if v is np.ma.masked else jsonable(v)) for k, v in row.items()} for row in cells]


@pytest.mark.parametrize("case", ARRAYS, ids=corpus.case_id)
def test_cat_matches_tiledb_py(case):
    with _tdb(case) as A:
        if not A.schema.sparse and any(A.schema.domain.dim(i).dtype.kind in "mM" for i in range(A.ndim)):
            pytest.skip("TileDB-Py's dense slices take datetime bounds; covered by the sparse datetime cases")
        want = _rows(_tdb_cells(A, case))
        dups = A.schema.sparse and A.schema.allows_duplicates
    got = _cat(case)
    key = (lambda r: json.dumps(r, sort_keys=True)) if dups else None
    assert (sorted(got, key=key) if dups else got) == (sorted(want, key=key) if dups else want)


@pytest.mark.parametrize("case", ARRAYS, ids=corpus.case_id)
def test_reprs_name_what_tiledb_py_names(case):
    """print(arr) lays the schema out as TileDB-Py's print(A.schema), and a fragment's repr names it."""
    t = corpus.truth(case)
    arr = open_array(corpus.root(case), key=corpus.key(case))
    text = str(arr)
    assert text.startswith("ArraySchema(") and f"sparse={t['schema']['array_type'] == 'sparse'}" in text
    for kind in ("Dim", "Attr"):
        names = [x["name"] for x in t["schema"]["domain"]["dims"]] if kind == "Dim" else \
            [a["name"] for a in t["schema"]["attrs"]]
        assert all(f"{kind}(name={n!r}" in text for n in names), kind
    assert repr(arr).startswith(("DenseArray(", "SparseArray("))
    # arr.schema prints as TileDB-Py's A.schema, not as the parsed Container it still is
    assert repr(arr.schema) == str(arr.schema) and repr(arr.schema).startswith("ArraySchema(")
    assert all(f"name={d['name']!r}" in repr(arr.schema) for d in t["schema"]["domain"]["dims"])
    assert arr.schema.capacity == t["schema"]["capacity"] and len(repr(arr.schema)) < 3000
    for f in arr.fragments:
        assert repr(f).startswith(f"Fragment(name={f.name!r}, version={f.version}")


def _driver(argvs) -> list:
    r = subprocess.run([sys.executable, "-c", _DRIVER], input=json.dumps(argvs), capture_output=True, text=True,
                       cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def test_format_commands_json_validates(tmp_path):
    """inspect, spec, diff-versions, diff and export-ksy: --json on every version, valid against its schema."""
    by_version = {}
    for c in ARRAYS:
        by_version.setdefault(c.parent.name.split("_")[0], c)
    schema_files = [next(p for p in sorted(corpus.root(c).rglob("*")) if p.is_file() and
                         (p.parent.name == "__schema" or p.name == "__array_schema.tdb")) for c in by_version.values()]
    frag_md = sorted(corpus.root(by_version["v22"]).rglob("__fragment_metadata.tdb"))
    runs = [("inspect", ["inspect", str(corpus.root(c)), "--json",
                         *(["--key", corpus.key(c)] if corpus.key(c) else [])]) for c in by_version.values()]
    runs += [("spec", ["spec", "--version", str(v), "--json"]) for v in range(1, 24)]
    runs += [("diff-versions", ["diff-versions", str(v), str(v + 1), "--json"]) for v in range(1, 23)]
    runs += [("diff", ["diff", str(a), str(b), "--json"]) for a, b in zip(schema_files, schema_files[1:])]
    runs += [("diff", ["diff", str(frag_md[0]), str(frag_md[-1]), "--json"])]
    runs += [("export-ksy", ["export-ksy", "--version", "22", "--out", str(tmp_path), "--json"])]
    for (command, argv), (rc, out) in zip(runs, _driver([argv for _, argv in runs])):
        assert rc == 0, (argv, out[-500:])
        doc = json.loads(out)
        _validator(command).validate(doc)
        if command == "export-ksy":
            assert doc["files"] and all(Path(f).is_file() for f in doc["files"])


def _run_in_terminal(argv) -> tuple[bytes, bytes]:
    """argv run with stdout and stderr on two pseudo-terminals, as a person at a terminal runs it."""
    import os
    import pty
    import select

    (out_m, out_s), (err_m, err_s) = pty.openpty(), pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tdbformat", *argv], stdout=out_s, stderr=err_s, cwd=ROOT,
                            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TERM": "xterm"})
    os.close(out_s), os.close(err_s)
    got, open_fds = {out_m: b"", err_m: b""}, {out_m, err_m}
    while open_fds:  # a pty master reads until the child's side is closed (then EIO or b"")
        for fd in select.select(list(open_fds), [], [], 5)[0] or list(open_fds):
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if data:
                got[fd] += data
            else:
                open_fds.discard(fd)
                os.close(fd)
    proc.wait(timeout=120)
    return got[out_m], got[err_m]


def test_progress_bars_only_at_a_terminal():
    """inspect of a whole array shows a bar on stderr at a terminal, and nothing of it into a pipe."""
    case = max(ARRAYS, key=lambda c: sum(1 for _ in corpus.root(c).rglob("*")))
    argv = ["inspect", str(corpus.root(case)), *(["--key", corpus.key(case)] if corpus.key(case) else [])]
    out, err = _run_in_terminal(argv)
    assert b"parsing" in err and b"array_schema" in out
    piped = subprocess.run([sys.executable, "-m", "tdbformat", *argv], capture_output=True, cwd=ROOT,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "TERM": "xterm"})
    assert piped.returncode == 0 and b"parsing" not in piped.stderr and b"\x1b[" not in piped.stdout
