"""Full reads with tdbformat against TileDB-Py: a 128 MiB int32 dense array (zstd) and a 1M-cell sparse array.

Each array is read 5 times with each reader, alternating; the table shows the median times and their
ratio tdbformat / TileDB-Py (goal: <= 1.0). Run: ``python benchmarks/read.py``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import tiledb

from tdbformat.array import open_array

ROUNDS = 5


def write_dense(uri: str):
    n = 128 * 2**20 // 4
    side = int(np.sqrt(n))
    dims = [tiledb.Dim("r", domain=(0, side - 1), tile=1024, dtype=np.int64),
            tiledb.Dim("c", domain=(0, side - 1), tile=1024, dtype=np.int64)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims),
                                attrs=[tiledb.Attr("a", dtype=np.int32, filters=[tiledb.ZstdFilter()])])
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w") as A:
        A[:] = np.arange(side * side, dtype=np.int32).reshape(side, side) % 1000


def write_sparse(uri: str):
    n = 1_000_000
    rng = np.random.default_rng(0)
    dims = [tiledb.Dim("x", domain=(0, 99_999), tile=1000, dtype=np.int64),
            tiledb.Dim("y", domain=(0, 99_999), tile=1000, dtype=np.int64)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=10_000,
                                attrs=[tiledb.Attr("a", dtype=np.float64, filters=[tiledb.ZstdFilter()])])
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w") as A:
        cells = rng.permutation(n)  # distinct coordinates, written unordered
        A[cells // 1000 * 100, cells % 1000 * 100] = rng.random(n)


def tiledb_py(uri: str, sparse: bool):
    with tiledb.open(uri) as A:
        return A.query(order="C")[:] if sparse else A[:]


def timed(fn, *args):
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def main():
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for name, write, sparse in (("dense 128 MiB int32 zstd", write_dense, False),
                                    ("sparse 1M cells", write_sparse, True)):
            uri = str(Path(tmp) / name.split()[0])
            write(uri)
            ours, theirs = [], []
            for _ in range(ROUNDS):
                ours.append(timed(lambda: open_array(uri).read()))
                theirs.append(timed(tiledb_py, uri, sparse))
            rows.append((name, statistics.median(ours), statistics.median(theirs)))
    print("| array | tdbformat (s) | TileDB-Py (s) | ratio |\n|---|---|---|---|")
    for name, a, b in rows:
        print(f"| {name} | {a:.3f} | {b:.3f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
