"""Consolidation time and peak memory, tdbformat against TileDB-Py, in one run, alternating:

- 100 sparse fragments of 10,000 cells (int64 dimension, int64 and float64 attributes, zstd);
- 1,000 sparse fragments of 100 cells;
- a dense array of 64 MiB (float64) in 16 fragments (bands of rows).

    python benchmarks/consolidate.py [--rounds 2] [--dir /dev/shm] [--only sparse100,sparse1000,dense]

TileDB-Py writes each array once; every run consolidates a fresh copy in a child process of its own, whose
peak RSS (VmHWM of the child) and wall time are reported (median of the rounds), with the memory of a
child that only imports the library as its baseline. ``tdbformat-least`` is tdbformat within the least
``memory_budget`` it takes for the array (a tile of each fragment at once; the "budget MiB" column). The
results are checked to read the same. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r"""
import json, re, resource, sys, time
which, path = sys.argv[1], sys.argv[2]
budget = None
if which.startswith("tdbformat"):
    import tdbformat
    if which == "tdbformat-least" and path != "-":  # the least budget the merge takes, which it names
        try:
            tdbformat.consolidate(path, memory_budget=1)
        except ValueError as e:
            budget = int(re.search(r"needs (\d+) bytes", str(e)).group(1))
    run = (lambda: tdbformat.consolidate(path, memory_budget=budget)) if path != "-" else (lambda: None)
else:
    import tiledb
    run = (lambda: tiledb.consolidate(path)) if path != "-" else (lambda: None)
t = time.perf_counter()
run()
# VmHWM: the peak RSS of this program (ru_maxrss also counts the parent's RSS at the fork, which exec keeps)
hwm = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")]
peak = hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": time.perf_counter() - t, "budget_mib": (budget or 0) / 2**20, "peak_mib": peak / 1024}))
"""


def _sparse(path, fragments: int, cells: int):
    import tiledb

    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 2**40), tile=2**20, dtype=np.int64))
    attrs = [tiledb.Attr("a", dtype=np.int64, filters=[tiledb.ZstdFilter()]),
             tiledb.Attr("b", dtype=np.float64, filters=[tiledb.ZstdFilter()])]
    tiledb.Array.create(path, tiledb.ArraySchema(domain=dom, sparse=True, attrs=attrs, capacity=10_000))
    rng = np.random.default_rng(7)
    for t in range(1, fragments + 1):
        xs = np.sort(rng.choice(2**40, cells, replace=False))
        with tiledb.open(path, "w", timestamp=t) as A:
            A[xs] = {"a": xs, "b": xs / 3.0}


def _dense(path, mib: int = 64, fragments: int = 16):
    import tiledb

    side = int((mib * 2**20 / 8) ** 0.5)
    dom = tiledb.Domain(tiledb.Dim("r", domain=(0, side - 1), tile=256, dtype=np.int64),
                        tiledb.Dim("c", domain=(0, side - 1), tile=256, dtype=np.int64))
    tiledb.Array.create(path, tiledb.ArraySchema(domain=dom, attrs=[
        tiledb.Attr("v", dtype=np.float64, filters=[tiledb.ZstdFilter()])]))
    band = side // fragments
    for i in range(fragments):
        lo, hi = i * band, side if i == fragments - 1 else (i + 1) * band
        with tiledb.open(path, "w", timestamp=i + 1) as A:
            A[lo:hi, :] = np.arange(lo * side, hi * side, dtype=np.float64).reshape(hi - lo, side)


LAYOUTS = {"sparse100": lambda p: _sparse(p, 100, 10_000), "sparse1000": lambda p: _sparse(p, 1000, 100),
           "dense": _dense}


def _child(which: str, path: str) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", _CHILD, which, path], env=env, capture_output=True, check=True)
    return json.loads(out.stdout)


def _cells(path):
    import tiledb

    with tiledb.open(path) as A:
        return A[:] if A.schema.sparse else A.query()[:]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--dir", default=tempfile.gettempdir())
    p.add_argument("--only", default=",".join(LAYOUTS))
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(dir=args.dir)
    try:
        libraries = ("tdbformat", "tiledb", "tdbformat-least")
        base = {w: _child(w, "-")["peak_mib"] for w in libraries}
        print(f"{'layout':<11} {'library':<15} {'seconds':>8} {'peak MiB':>9} {'over import':>12} {'budget MiB':>11}")
        for name in args.only.split(","):
            src = os.path.join(work, name)
            LAYOUTS[name](src)
            runs = {w: [] for w in libraries}
            for r in range(args.rounds):
                for which in (libraries if r % 2 == 0 else libraries[::-1]):
                    copy = os.path.join(work, f"{name}-{which}-{r}")
                    shutil.copytree(src, copy)
                    runs[which].append(_child(which, copy))
                    if r == args.rounds - 1:
                        runs[which + "_cells"] = _cells(copy)
                    shutil.rmtree(copy) if r < args.rounds - 1 else None
            theirs = runs.pop("tiledb_cells")
            for mine in (runs.pop("tdbformat_cells"), runs.pop("tdbformat-least_cells")):
                assert all(np.array_equal(mine[k], theirs[k]) for k in theirs), name
            for which, got in runs.items():
                secs = statistics.median(g["seconds"] for g in got)
                peak = statistics.median(g["peak_mib"] for g in got)
                budget = statistics.median(g["budget_mib"] for g in got)
                print(f"{name:<11} {which:<15} {secs:>8.2f} {peak:>9.0f} {peak - base[which]:>12.0f} "
                      + (f"{budget:>11.1f}" if budget else ""))
            shutil.rmtree(src)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
