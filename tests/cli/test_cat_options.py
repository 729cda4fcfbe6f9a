"""`cat` with each of its options, and `schema --all`, against TileDB-Py's answers for arrays it writes here:
labels and codes of enumerations, attribute subsets, timestamps and windows, orders, ranges, CSV, and a
schema history made by schema evolution."""

from __future__ import annotations

import csv
import io
import json
import re
import time

import numpy as np
import pytest

from tdbformat.cli import main

tiledb = pytest.importorskip("tiledb")


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    """Three writes (timestamps 10, 20, 30) to a sparse array with an enumeration, a nullable float and a
    string; the third overwrites a cell of the first."""
    uri = str(tmp_path_factory.mktemp("cat") / "sparse")
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int64))
    schema = tiledb.ArraySchema(domain=dom, sparse=True, enums=[tiledb.Enumeration("colors", False,
                                                                                  ["red", "green", "blue"])],
                                attrs=[tiledb.Attr("color", dtype=np.uint8, enum_label="colors"),
                                       tiledb.Attr("x", dtype=np.float64, nullable=True),
                                       tiledb.Attr("s", dtype=str, var=True)])
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(7)
    for ts, coords in [(10, [1, 5, 9, 40]), (20, [3, 7, 60]), (30, [5, 80])]:
        n = len(coords)
        with tiledb.open(uri, "w", timestamp=ts) as A:
            A[coords] = {"color": rng.integers(0, 3, n).astype(np.uint8),
                         "x": np.ma.masked_array(rng.random(n), mask=[i % 2 == 1 for i in range(n)]),
                         "s": np.array([f"s{ts}-{c}\t\u00e9" for c in coords], dtype=object)}
    return uri


def _cat(capsys, uri, *argv):
    assert main(["cat", uri, "--json", *argv]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _want(cells) -> list:
    """TileDB-Py's result as cat's JSON rows: dimensions first, nulls as None, numpy scalars as Python."""
    names = ["d", *[k for k in cells if k != "d"]]
    rows = []
    for i in range(len(cells["d"])):
        row = {}
        for n in names:
            v = cells[n][i]
            row[n] = None if v is np.ma.masked else (v.item() if isinstance(v, np.generic) else v)
        rows.append(row)
    return rows


def test_labels_by_default_codes_with_codes(capsys, sparse):
    with tiledb.open(sparse) as A:
        labels, codes = A[:], A.query()[:]
    assert [r["color"] for r in _cat(capsys, sparse)] == list(labels["color"])
    assert [r["color"] for r in _cat(capsys, sparse, "--codes")] == codes["color"].tolist()
    assert set(labels["color"]) <= {"red", "green", "blue"}


def test_attrs(capsys, sparse):
    with tiledb.open(sparse) as A:
        want = A[:]
    got = _cat(capsys, sparse, "--attrs", "s,color")
    assert all(list(r) == ["d", "s", "color"] for r in got)
    assert [(r["d"], r["s"], r["color"]) for r in got] == list(zip(want["d"].tolist(), want["s"], want["color"]))


@pytest.mark.parametrize("stamp", ["0", "10", "15", "20", "30", str(2**63), "15:25", "10:20", ":20", "20:"])
def test_timestamps(capsys, sparse, stamp):
    parts = [int(p) if p else None for p in stamp.split(":")]
    ts = parts[0] if len(parts) == 1 else (parts[0] or 0, parts[1])
    with tiledb.open(sparse, timestamp=ts) as A:
        want = _want(A[:])
    assert _cat(capsys, sparse, "--timestamp", stamp) == want


@pytest.mark.parametrize("order", ["C", "F", "G", "U"])
def test_orders(capsys, sparse, order):
    with tiledb.open(sparse) as A:
        want = _want(A.query(order=order)[:])  # query() gives enumeration codes
    assert _cat(capsys, sparse, "--order", order, "--codes") == want


def test_ranges(capsys, sparse):
    with tiledb.open(sparse) as A:
        want = _want(A.multi_index[3:60])
    assert _cat(capsys, sparse, "--range", "d=3:60") == want


def test_csv(capsys, sparse):
    with tiledb.open(sparse) as A:
        want = A[:]
    assert main(["cat", sparse, "--csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["d", "color", "x", "s"]
    body = rows[1:]
    assert [int(r[0]) for r in body] == want["d"].tolist()
    assert [r[1] for r in body] == list(want["color"])
    assert [None if r[2] == "" else float(r[2]) for r in body] == \
        [None if v is np.ma.masked else float(v) for v in want["x"]]
    # the tab stays a tab inside a quoted CSV field? no: cat escapes it as \t in every text format
    assert [r[3].replace("\\t", "\t") for r in body] == list(want["s"])


def test_schema_all_follows_schema_evolution(capsys, tmp_path):
    uri = str(tmp_path / "evolved")
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 9), tile=5, dtype=np.int32))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.int64)]))
    ctx = tiledb.Ctx()
    time.sleep(0.01)  # each schema at a millisecond of its own: opening "as of" a shared one is ambiguous
    se = tiledb.ArraySchemaEvolution(ctx)
    se.add_attribute(tiledb.Attr("b", dtype=np.float32))
    se.array_evolve(uri)
    time.sleep(0.01)
    se = tiledb.ArraySchemaEvolution(ctx)
    se.drop_attribute("a")
    se.array_evolve(uri)
    assert main(["schema", uri, "--all", "--json"]) == 0
    schemas = json.loads(capsys.readouterr().out)["schemas"]
    assert len(schemas) == 3
    for s in schemas:
        t = int(s["name"].split("_")[2])  # __t1_t2_uuid: open TileDB-Py as of the schema's own time
        with tiledb.open(uri, timestamp=t) as A:
            want = [A.schema.attr(i).name for i in range(A.schema.nattr)]
        assert [a["name"] for a in s["attributes"]] == want, s["name"]
    assert [[a["name"] for a in s["attributes"]] for s in schemas] == [["a"], ["a", "b"], ["b"]]


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    """A dense array of 150,000 cells (more than one slice of rows): a nullable float with NaN and
    infinities, a bool, a var string with tabs, newlines and a non-UTF-8 byte string."""
    uri = str(tmp_path_factory.mktemp("cat") / "dense")
    n = 150_000
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, n - 1), tile=50_000, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[
        tiledb.Attr("f", dtype=np.float32, nullable=True), tiledb.Attr("b", dtype=np.bool_),
        tiledb.Attr("s", dtype=str, var=True)]))
    rng = np.random.default_rng(11)
    f = rng.random(n).astype(np.float32)
    f[rng.integers(0, n, 300)] = np.nan
    f[rng.integers(0, n, 300)] = np.inf
    f[rng.integers(0, n, 300)] = -np.inf
    words = np.array(["", "a\tb", "line\nbreak", "back\\slash", "\u00e9t\u00e9"], dtype=object)
    with tiledb.open(uri, "w") as A:
        A[:] = {"f": np.ma.masked_array(f, mask=rng.random(n) < 0.1), "b": rng.random(n) < 0.5,
                "s": words[rng.integers(0, len(words), n)]}
    return uri


def _number(text: str):
    return {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}.get(text) if text in (
        "NaN", "Infinity", "-Infinity") else float(text)


def test_dense_block_in_every_format(capsys, dense):
    """Each format's text of every cell, decoded independently, is TileDB-Py's value (nulls, NaN and
    infinities, booleans, escaped text)."""
    with tiledb.open(dense) as A:
        want = A[:]
    f = [None if v is np.ma.masked else float(v) for v in want["f"]]
    b, s = want["b"].tolist(), list(want["s"])
    rows = _cat(capsys, dense)
    assert [r["d"] for r in rows] == list(range(len(rows))) and len(rows) == len(b)
    assert [None if r["f"] is None else _number(r["f"]) if isinstance(r["f"], str) else r["f"] for r in rows] == \
        pytest.approx(f, nan_ok=True)
    assert [r["b"] for r in rows] == b and [r["s"] for r in rows] == s
    unescape = {"\\t": "\t", "\\n": "\n", "\\\\": "\\"}
    for argv, null in (([], "null"), (["--csv"], "")):
        assert main(["cat", dense, *argv]) == 0
        out = capsys.readouterr().out
        body = list(csv.reader(io.StringIO(out))) if argv else [line.split("\t") for line in out.splitlines()]
        assert body[0] == ["d", "f", "b", "s"] and len(body) == len(b) + 1
        assert [None if r[1] == null else _number(r[1]) for r in body[1:]] == pytest.approx(f, nan_ok=True)
        assert [r[2] for r in body[1:]] == [str(v) for v in b]
        assert [re.sub(r"\\[tn\\]", lambda m: unescape[m.group()], r[3]) for r in body[1:]] == s
