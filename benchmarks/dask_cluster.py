"""A 1 GiB dense array read by ``to_dask`` on a ``dask.distributed.LocalCluster`` of two one-thread workers:
its throughput against a read in one process, the results compared, and each worker's peak memory.

    python benchmarks/dask_cluster.py [--gib 1] [--tile 2048] [--dir /dev/shm] [--repeat 3]

tdbformat's writer makes the array (int32, zstd, square tiles of ``--tile`` cells a side, one fragment per
band of tile rows, so the writer never holds the whole array); its values are an independent function of
the cell. Throughput: ``to_dask(arr)["v"].compute()`` on the cluster (the tiles decoded by the workers and
gathered into the client) against ``open_array(path).read()["v"]`` in this process (one thread per core),
alternating, median of ``--repeat``; the two results must be equal, and equal to the values written. Memory:
each worker opens the array once (its baseline), a thread samples its RSS every 2 ms, and the array is
summed (the sum checked against numpy's); the table gives each worker's peak growth over its baseline
(ru_maxrss would count what the forking parent held). Not a test: it takes a minute and a GiB of disk.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import numpy as np


def _values(r0: int, rows: int, side: int) -> np.ndarray:
    """Rows ``r0`` to ``r0 + rows`` of the array: (cell number mod 9973) as int32."""
    return ((np.arange(r0 * side, (r0 + rows) * side, dtype=np.int64) % 9973).astype(np.int32)
            .reshape(rows, side))


def _write(path: str, side: int, tile: int) -> int:
    """The array at ``path``, written band by band; returns the sum of its cells."""
    import tdbformat
    from tdbformat import schema

    dims = [schema.Dim(n, (0, side - 1), tile=tile, dtype=np.int64) for n in ("r", "c")]
    tdbformat.create(path, schema.ArraySchema(schema.Domain(*dims), attrs=[
        schema.Attr("v", np.int32, filters=schema.FilterList([schema.ZstdFilter()]))]), version=22)
    total = 0
    for r0 in range(0, side, tile):
        band = _values(r0, tile, side)
        tdbformat.write(path, band, subarray=[(r0, r0 + tile - 1), (0, side - 1)])
        total += int(band.sum(dtype=np.int64))
    return total


def _open(spec) -> None:
    """The array opened in this worker (nothing sent back: an Array holds open storage and is not pickled)."""
    from tdbformat.array.dask import _opened
    _opened(spec)


def _start_sampling(dask_worker):
    import threading

    import psutil
    proc = psutil.Process()
    state = dask_worker.tdbformat_memory = {"base": proc.memory_info().rss, "peak": 0, "run": True}

    def sample():
        while state["run"]:
            state["peak"] = max(state["peak"], proc.memory_info().rss)
            time.sleep(0.002)
    threading.Thread(target=sample, daemon=True).start()


def _stop_sampling(dask_worker) -> tuple[int, int]:
    state = dask_worker.tdbformat_memory
    state["run"] = False
    return state["base"], state["peak"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=1.0, help="array size in GiB (int32 cells)")
    ap.add_argument("--tile", type=int, default=2048, help="tile side in cells (2048: 16 MiB tiles)")
    ap.add_argument("--dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="where to write the array (default /dev/shm)")
    ap.add_argument("--repeat", type=int, default=3, help="timed reads of each kind (median)")
    args = ap.parse_args()

    import distributed

    import tdbformat
    from tdbformat.array.dask import _spec, to_dask

    side = int(np.sqrt(args.gib * 2**30 / 4)) // args.tile * args.tile
    tile_bytes = args.tile * args.tile * 4
    folder = tempfile.mkdtemp(prefix="tdbformat-dask-", dir=args.dir)
    try:
        t0 = time.perf_counter()
        expected = _write(os.path.join(folder, "a"), side, args.tile)
        written = time.perf_counter() - t0
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                      memory_limit="4GiB") as cluster, distributed.Client(cluster) as client:
            arr = tdbformat.open_array(os.path.join(folder, "a"))
            x = to_dask(arr)["v"]
            client.run(_open, _spec(arr))  # each worker opens the array once: that is its baseline
            client.run(_start_sampling)
            t0 = time.perf_counter()
            got = int(x.sum(dtype=np.int64).compute())
            summed = time.perf_counter() - t0
            memory = client.run(_stop_sampling)
            times = _throughput(x, os.path.join(folder, "a"), side, args.repeat)
        if got != expected:
            raise SystemExit(f"sum {got} != numpy's {expected}")
        print(f"dense {side}x{side} int32 ({side * side * 4 / 2**30:.2f} GiB, zstd), {x.npartitions} tiles of "
              f"{tile_bytes / 2**20:.0f} MiB; written in {written:.1f} s, summed in {summed:.1f} s "
              f"on LocalCluster(n_workers=2, threads_per_worker=1): sum equals numpy's")
        print(f"{'worker':<24} {'baseline MiB':>13} {'peak MiB':>9} {'growth MiB':>11} {'growth / 4 tiles':>17}")
        for worker, (base, peak) in memory.items():
            grown = peak - base
            print(f"{worker:<24} {base / 2**20:>13.0f} {peak / 2**20:>9.0f} {grown / 2**20:>11.0f} "
                  f"{grown / (4 * tile_bytes):>17.2f}")
        gib = side * side * 4 / 2**30
        print(f"\nreading it whole, median of {args.repeat}, alternating; both results equal to each other and "
              "to the values written")
        print(f"{'read':<52} {'s':>6} {'GiB/s':>6} {'vs one process':>15}")
        for name, t in times.items():
            print(f"{name:<52} {t:>6.2f} {gib / t:>6.2f} {t / times[ONE]:>15.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


ONE = "open_array(path).read() in one process"
CLUSTER = "to_dask(arr).compute() on the 2-worker LocalCluster"


def _throughput(x, path: str, side: int, repeat: int) -> dict:
    """Median seconds of a whole read each way (alternating); exits unless both equal the values written."""
    import tdbformat

    times = {CLUSTER: [], ONE: []}
    for _ in range(repeat):
        t0 = time.perf_counter()
        clustered = x.compute()
        times[CLUSTER].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        alone = tdbformat.open_array(path).read()["v"]
        times[ONE].append(time.perf_counter() - t0)
        if not np.array_equal(clustered, alone):
            raise SystemExit("the cluster's read differs from the one-process read")
        del clustered
    for r0 in range(0, side, 4096):  # against the values written, a band at a time
        if not np.array_equal(alone[r0:r0 + 4096], _values(r0, min(4096, side - r0), side)):
            raise SystemExit(f"the read differs from the values written in rows {r0}..")
    return {k: statistics.median(v) for k, v in times.items()}


if __name__ == "__main__":
    main()
