"""A 1 GiB dense array summed by ``to_dask`` on a ``dask.distributed.LocalCluster`` of two one-thread workers:
each worker's peak memory against its baseline and against four tiles.

    python benchmarks/dask_cluster.py [--gib 1] [--tile 2048] [--dir /dev/shm]

tdbformat's writer makes the array (int32, zstd, square tiles of ``--tile`` cells a side, one fragment per
band of tile rows, so the writer never holds the whole array); its values are an independent function of
the cell, and the sum is checked against numpy's. Each worker opens the array once (its baseline), a thread
samples its RSS every 2 ms, and the sum runs; the table gives each worker's peak growth over its baseline
(ru_maxrss would count what the forking parent held). Not a test: it takes a minute and a GiB of disk.
"""

from __future__ import annotations

import argparse
import os
import shutil
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
    args = ap.parse_args()

    import distributed

    import tdbformat
    from tdbformat.array.dask import _opened, _spec, to_dask

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
            client.run(_opened, _spec(arr))  # each worker opens the array once: that is its baseline
            client.run(_start_sampling)
            t0 = time.perf_counter()
            got = int(x.sum(dtype=np.int64).compute())
            summed = time.perf_counter() - t0
            memory = client.run(_stop_sampling)
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
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
