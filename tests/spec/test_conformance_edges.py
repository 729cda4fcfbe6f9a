"""The suite's edge cases (scripts/make_conformance_edges.py: TileDB-Py arrays with int64/uint64 values beyond
2^53, pre-1970 datetimes, NaN and infinities, empty and NUL strings) hold what TileDB-Py reads from the same
files, through the suite's JSON conventions: integers beyond 2^53 - 1 as {"int": "..."}, NaN and infinities as
{"float": ...}, CHAR and string bytes whole (a NUL is not an empty value)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

tiledb = pytest.importorskip("tiledb")

SUITE = Path(__file__).resolve().parents[2] / "conformance"
CASES = sorted(SUITE.glob("v*/edge_*"))
SAFE = 2**53 - 1


def number(x):
    """A suite JSON number as Python's: {"int"} and {"float"} decoded, plain numbers as they are."""
    if isinstance(x, dict):
        return int(x["int"]) if "int" in x else float(x["float"])
    return x


def entries(case: Path, kind: str) -> list:
    return [e for e in json.loads((case / "expected.json").read_text())["files"] if e["kind"] == kind]


def _leaves(x):
    if isinstance(x, dict):
        if set(x) in ({"int"}, {"float"}, {"bytes_hex"}):
            yield x
        else:
            for v in x.values():
                yield from _leaves(v)
    elif isinstance(x, list):
        for v in x:
            yield from _leaves(v)
    else:
        yield x


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_integers_are_plain_exactly_when_every_json_reader_keeps_them(case):
    leaves = list(_leaves(json.loads((case / "expected.json").read_text())))
    big = [int(x["int"]) for x in leaves if isinstance(x, dict) and "int" in x]
    plain = [x for x in leaves if isinstance(x, int) and not isinstance(x, bool)]
    assert big and all(abs(v) > SAFE for v in big)
    assert all(abs(v) <= SAFE for v in plain)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_non_empty_domain_and_schema_domain_are_tiledbs(case):
    array = str(case / "array")
    with tiledb.open(array) as a:
        want = [list(map(int, d)) for d in a.nonempty_domain()]
        dims = [a.schema.domain.dim(i) for i in range(a.schema.ndim)]
        domains = [list(map(int, d.domain)) for d in dims]
    (fm,) = entries(case, "fragment_metadata")
    assert [[number(x) for x in r] for r in fm["value"]["footer"]["non_empty_domain"]] == want
    levels = fm["value"]["rtree"]["payload"]["levels"]  # a dense fragment has none
    assert [[[number(x) for x in r] for r in level["mbrs"][0]] for level in levels[:1]] == [want][:len(levels)]
    (schema,) = entries(case, "array_schema")
    assert [[number(x) for x in d["domain"]] for d in schema["value"]["payload"]["domain"]["dimensions"]] == domains


def test_dense_current_domain_is_tiledbs():
    case = next(c for c in CASES if c.name == "edge_int64_dense")
    with tiledb.open(str(case / "array")) as a:
        want = [int(x) for x in a.schema.current_domain.ndrectangle.range(0)]
    (schema,) = entries(case, "array_schema")
    (rng,) = schema["value"]["payload"]["current_domain"]["ndrectangle"]
    assert [number(rng["start"]), number(rng["end"])] == want == [2**53 + 1, 2**62 + 3]


def test_sparse_sums_mins_and_metadata_are_tiledbs():
    case = next(c for c in CASES if c.name == "edge_int64_sparse")
    with tiledb.open(str(case / "array")) as a:
        cells = a[:]
        meta = {k: a.meta[k] for k in a.meta.keys()}
        names = [a.schema.attr(i).name for i in range(a.schema.nattr)]
    (fm,) = entries(case, "fragment_metadata")
    summary = dict(zip(names, fm["value"]["fragment_summary"]))
    # TileDB sums each tile (capacity 2, cells in coordinate order), saturating, then adds the tile sums
    order = np.lexsort((cells["u"], cells["soma_joinid"]))
    tiles = [order[i:i + 2] for i in range(0, len(order), 2)]

    def saturated(values, lo, hi):
        total = 0
        for v in values:
            total = min(max(total + int(v), lo), hi)
        return total

    for name, lo, hi in (("i64", -2**63, 2**63 - 1), ("u64", 0, 2**64 - 1)):
        per_tile = [saturated(cells[name][t], lo, hi) for t in tiles]
        assert [number(x) for x in fm["value"]["tile_sums"][names.index(name)]] == per_tile
        assert number(summary[name]["sum"]) == saturated(per_tile, lo, hi)
    assert per_tile[0] == 2**64 - 1 and number(summary["i64"]["sum"]) < -2**53  # saturated; beyond 2^53
    assert math.isnan(number(summary["f64"]["sum"]))
    ts = summary["ts"]
    assert int.from_bytes(bytes.fromhex(ts["min"]["bytes_hex"]), "little", signed=True) \
        == cells["ts"].astype(np.int64).min() < 0  # pre-1970
    (md,) = entries(case, "metadata")
    got = {e["key"]: e for e in md["value"]["payload"]["entries"] if not e["deleted"]}
    assert number(got["big"]["value"][0]) == meta["big"] == 2**62 + 1
    assert number(got["ubig"]["value"][0]) == meta["ubig"] == 2**64 - 1
    assert number(got["min"]["value"][0]) == meta["min"] == -2**63
    assert math.isnan(number(got["nan"]["value"][0])) and math.isnan(meta["nan"])
    assert number(got["ninf"]["value"][0]) == meta["ninf"] == -math.inf
    assert bytes(got["empty"]["value"]).decode() == meta["empty"] == ""
    assert bytes(got["nul"]["value"]).decode() == meta["nul"] == "\x00"
