"""Write the conformance suite's edge cases with TileDB-Py: values that break naive readers, in real arrays.

    python3 scripts/make_conformance_edges.py     (needs tiledb; then python3 scripts/conformance.py)

Into conformance/<writer>/edge_*/array (the writer folder names the format version and TileDB-Py release):
- ``edge_int64_sparse``: a SOMA-like sparse array, an int64 dimension over [-2^63 + 1, 2^63 - 2] and a uint64 one
  over [0, 2^64 - 2], with coordinates beyond 2^53 (MBRs, non-empty domain, tile mins/maxes); int64 and uint64
  attributes whose sums saturate or pass 2^63; pre-1970 DATETIME_MS values (negative int64); NaN and infinities
  in a float64 attribute's mins, maxes and sums; empty, NUL-only and NUL-holding strings; metadata with int64
  and uint64 values beyond 2^53, -2^63, NaN, -inf, an empty string and a NUL.
- ``edge_int64_dense``: a SOMA-like dense array, an int64 dimension over [0, 2^63 - 5] with a current domain
  beyond 2^53, four float32 cells (NaN, inf, -inf, 2.5) written there.
Each run makes new arrays (new timestamps and UUIDs): the committed ones are the suite's; their expected.json
is regenerated from the committed files by scripts/conformance.py.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import tiledb

ROOT = Path(__file__).resolve().parent.parent
I64, U64 = np.iinfo(np.int64), np.iinfo(np.uint64)


def writer(array: Path) -> str:
    """The writer folder: the format version (of the array's first commit's name), TileDB-Py's and core's
    releases, as the corpus names its writers."""
    commit = next((array / "__commits").iterdir()).name
    core = ".".join(map(str, tiledb.libtiledb.version()))
    return f"v{commit.rsplit('_', 1)[1].split('.')[0]}_tiledb-py-{tiledb.__version__}_core-{core}"


def sparse(uri: str):
    dom = tiledb.Domain(
        tiledb.Dim("soma_joinid", domain=(I64.min + 1, I64.max - 1), dtype=np.int64),
        tiledb.Dim("u", domain=(0, U64.max - 1), dtype=np.uint64))
    attrs = [tiledb.Attr("i64", dtype=np.int64), tiledb.Attr("u64", dtype=np.uint64),
             tiledb.Attr("ts", dtype="datetime64[ms]"), tiledb.Attr("f64", dtype=np.float64),
             tiledb.Attr("s", dtype=str, var=True)]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, capacity=2, attrs=attrs))
    with tiledb.open(uri, "w") as a:
        a[np.array([I64.min + 1, -2**62 - 3, -1, 2**53 + 1, I64.max - 1]),
          np.array([0, 2**53 + 1, 2**63, U64.max - 2, U64.max - 1], dtype=np.uint64)] = {
            "i64": np.array([I64.max, I64.max, -2**62, 2**53 + 1, I64.min + 5]),
            "u64": np.array([U64.max, 2**63 + 7, 0, 2**53 + 1, 1], dtype=np.uint64),
            "ts": np.array(["1969-12-31T23:59:59.999", "1900-01-01", "1970-01-01", "2262-01-01", "1677-09-22"],
                           dtype="datetime64[ms]"),
            "f64": np.array([np.nan, np.inf, -np.inf, -0.0, 1.5]),
            "s": np.array(["", "\x00", "a\x00b", "", "z"], dtype=object)}
        a.meta["big"] = np.int64(2**62 + 1)
        a.meta["ubig"] = np.uint64(U64.max)
        a.meta["min"] = np.int64(I64.min)
        a.meta["nan"] = float("nan")
        a.meta["ninf"] = float("-inf")
        a.meta["empty"] = ""
        a.meta["nul"] = "\x00"


def dense(uri: str):
    ctx = tiledb.Ctx()
    dom = tiledb.Domain(tiledb.Dim("soma_dim_0", domain=(0, I64.max - 4), tile=4, dtype=np.int64), ctx=ctx)
    schema = tiledb.ArraySchema(domain=dom, sparse=False, attrs=[tiledb.Attr("f32", dtype=np.float32)], ctx=ctx)
    rectangle = tiledb.NDRectangle(ctx, dom)
    rectangle.set_range(0, 2**53 + 1, 2**62 + 3)
    current = tiledb.CurrentDomain(ctx)
    current.set_ndrectangle(rectangle)
    schema.set_current_domain(current)
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w") as a:
        a[2**53 + 1:2**53 + 5] = np.array([np.nan, np.inf, -np.inf, 2.5], dtype=np.float32)


CASES = {"edge_int64_sparse": sparse, "edge_int64_dense": dense}

if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "conformance"
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in CASES.items():
            make(str(Path(tmp) / name))
            case = out / writer(Path(tmp) / name) / name
            shutil.rmtree(case, ignore_errors=True)
            shutil.move(str(Path(tmp) / name), str(case / "array"))
            print(f"{case} written")
