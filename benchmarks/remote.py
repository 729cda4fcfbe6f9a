"""Open and full read of a dense array over a loopback S3 server (moto), tdbformat against TileDB-Py.

    python benchmarks/remote.py [--mib 64] [--repeat 3]

TileDB-Py writes the array (float64, zstd, 1 MiB tiles) to the server; then each run opens it and reads it
whole with either library, alternating, and the table gives the median of ``--repeat`` runs and the ratio
tdbformat / TileDB-Py (below 1.0: tdbformat is faster). Both talk to the same server over HTTP, so the
server's own speed is in both numbers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from s3server import MotoProcess  # noqa: E402 (moto in a process of its own: s3server.py says why)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=64, help="array size in MiB (float64 cells)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import fsspec
    import tiledb

    import tdbformat

    server = MotoProcess()
    # fsspec's per-protocol defaults: every s3:// filesystem tdbformat makes talks to the loopback server
    fsspec.config.conf["s3"] = dict(server.options)
    fsspec.filesystem("s3").mkdir("bench")
    ctx = tiledb.Ctx(server.tiledb_config())
    side = int(np.sqrt(args.mib * 2**20 / 8))
    uri = "s3://bench/dense"
    dom = tiledb.Domain(*(tiledb.Dim(f"d{i}", (0, side - 1), tile=362, dtype=np.int64) for i in range(2)))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("v", np.float64,
                                                                           filters=[tiledb.ZstdFilter()])]), ctx=ctx)
    values = np.random.default_rng(0).random((side, side)).round(3)
    with tiledb.open(uri, "w", ctx=ctx) as a:
        a[:] = values

    def ours():
        t0 = time.perf_counter()
        arr = tdbformat.open_array(uri)
        t1 = time.perf_counter()
        got = arr.read()["v"]
        return t1 - t0, time.perf_counter() - t0, got

    def theirs():
        t0 = time.perf_counter()
        with tiledb.open(uri, ctx=ctx) as a:
            t1 = time.perf_counter()
            got = a[:]["v"]
        return t1 - t0, time.perf_counter() - t0, got

    times = {"tdbformat": [], "TileDB-Py": []}
    try:
        for _ in range(args.repeat):
            for name, run in (("tdbformat", ours), ("TileDB-Py", theirs)):
                opened, total, got = run()
                if not np.array_equal(got, values):
                    raise SystemExit(f"{name} read different values")
                times[name].append((opened, total))
    finally:
        server.stop()
    print(f"dense {side}x{side} float64 ({values.nbytes / 2**20:.0f} MiB, zstd, {(side // 362 + 1) ** 2} tiles), "
          f"moto S3 on loopback, median of {args.repeat}")
    print(f"{'step':<10} {'tdbformat s':>12} {'TileDB-Py s':>12} {'ratio':>7}")
    for i, step in enumerate(("open", "open+read")):
        a = statistics.median(t[i] for t in times["tdbformat"])
        b = statistics.median(t[i] for t in times["TileDB-Py"])
        print(f"{step:<10} {a:>12.3f} {b:>12.3f} {a / b:>7.2f}")

if __name__ == "__main__":
    main()
