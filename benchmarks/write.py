"""Writing with tdbformat next to TileDB-Py: a 128 MiB dense float64 array (zstd), 1M sparse cells, and the
shapes of issue #46 (64 MiB int64 zstd, 1M strings, 16M int32 RLE + zstd).

Run: python benchmarks/write.py [dense MiB] [sparse cells]. Each run is one write of one fragment into a
fresh array (created by TileDB-Py, so both write the same schema at v22), in its own process so that its
peak memory (ru_maxrss, less the process's baseline after imports and data) is its own; the two libraries
alternate, seven runs each (``ROUNDS``: with three, one write stalled by the disk's writeback of the runs
before it moved a median by half), and the table shows the medians and the time ratio (tdbformat over TileDB-Py:
below 1, tdbformat is faster). tdbformat syncs its files and folders before the commit (as TileDB does); the
"no fsync" column is the same write with ``fsync=False`` (scratch writes), so the difference is what the
syncs cost.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MIB = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "--run" else 128
ROUNDS = 7
CELLS = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] != "--run" else 1_000_000


def _schema(case: str, n: int):
    import numpy as np
    import tiledb
    if case in ("dense", "int64", "rle", "strings"):  # one dimension, 1M-cell tiles
        dim = tiledb.Dim("d", domain=(0, n - 1), tile=max(1, min(n, 1 << 20)), dtype=np.uint64)
        attr = {"dense": tiledb.Attr("a", dtype=np.float64, filters=[tiledb.ZstdFilter(level=3)]),
                "int64": tiledb.Attr("a", dtype=np.int64, filters=[tiledb.ZstdFilter(level=3)]),
                "rle": tiledb.Attr("a", dtype=np.int32, filters=[tiledb.RleFilter(), tiledb.ZstdFilter()]),
                "strings": tiledb.Attr("a", dtype=str, var=True, filters=[tiledb.ZstdFilter()])}[case]
        return tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[attr])
    dims = [tiledb.Dim("x", domain=(0, 9999), tile=1000, dtype=np.int64),
            tiledb.Dim("y", domain=(0, 9999), tile=1000, dtype=np.int64)]
    return tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=10000, attrs=[
        tiledb.Attr("a", dtype=np.float64, filters=[tiledb.ZstdFilter(level=3)])])


def _run(lib: str, case: str, n: int) -> dict:
    """One write in this process: (seconds, peak MiB above the baseline)."""
    import numpy as np
    import tiledb

    import tdbformat  # before the data is made, as a script imports it: where it is imported changes malloc's
    # state when the data is made, and a fresh process's write by up to 10 ms either way (RLE slower, int64 faster)
    rng = np.random.default_rng(0)
    uri = tempfile.mkdtemp(prefix=f"write-{lib}-{case}-")
    os.rmdir(uri)
    tiledb.Array.create(uri, _schema(case, n))
    # made in place, so that the baseline peak is the data itself and not the temporaries that made it
    data = np.empty(n)
    coords = None
    if case == "int64":
        data = np.cumsum(rng.integers(-100, 100, n))
    elif case == "rle":  # runs of 16 equal values
        data = np.repeat(rng.integers(0, 1000, n // 16, dtype=np.int32), 16)
    elif case == "strings":
        data = np.array([f"w{k}-é" * (k % 4) for k in range(1000)], object)[rng.integers(0, 1000, n)]
    elif case == "dense":
        rng.standard_normal(out=data)
        np.cumsum(data, out=data)
    else:
        flat = rng.choice(10000 * 10000, n, replace=False)
        coords = (flat // 10000, flat % 10000)
        del flat
        rng.random(out=data)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    if lib in ("tdbformat", "nosync"):
        tdbformat.write(uri, {"a": data}, coords=coords, timestamp=1, fsync=lib == "tdbformat")
    else:
        with tiledb.open(uri, "w", timestamp=1) as A:
            if coords is None:
                A[:] = {"a": data}
            else:
                A[coords[0], coords[1]] = {"a": data}
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    shutil.rmtree(uri)  # (the runs left 1 GB a case behind them)
    return {"seconds": seconds, "peak_mib": max(0, peak - base) / 1024}


def _child(lib, case, n) -> dict:
    out = subprocess.run([sys.executable, __file__, "--run", lib, case, str(n)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    cases = [("dense", f"dense {MIB} MiB float64, zstd", MIB * 2**20 // 8),
             ("sparse", f"sparse {CELLS:,} cells 2-D, zstd", CELLS),
             ("int64", "dense 64 MiB int64, zstd", 64 * 2**20 // 8),
             ("strings", "dense 1M var UTF-8 strings, zstd", 1_000_000),
             ("rle", "dense 16M int32, RLE + zstd", 16 * 2**20)]
    print("| case | tdbformat s | no fsync s | TileDB-Py s | ratio | tdbformat peak MiB | TileDB-Py peak MiB |")
    print("|---|---|---|---|---|---|---|")
    for case, label, n in cases:
        runs = {"tdbformat": [], "nosync": [], "tiledb": []}
        for _ in range(ROUNDS):
            for lib in runs:  # alternate, so drift in the machine's load hits both
                runs[lib].append(_child(lib, case, n))
        t = {lib: statistics.median(r["seconds"] for r in rs) for lib, rs in runs.items()}
        m = {lib: statistics.median(r["peak_mib"] for r in rs) for lib, rs in runs.items()}
        print(f"| {label} | {t['tdbformat']:.3f} | {t['nosync']:.3f} | {t['tiledb']:.3f} | "
              f"{t['tdbformat'] / t['tiledb']:.2f} | "
              f"{m['tdbformat']:.0f} | {m['tiledb']:.0f} |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--run":
        print(json.dumps(_run(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        main()
