"""Reads with tdbformat against TileDB-Py, in the shapes issues #15 and #46 name.

Every read runs once untimed (first-use costs), then ``ROUNDS`` times with each reader, alternating in one
process; then each reader alone, in fresh processes of its own (``--alone``: one untimed call, ``ROUNDS``
timed; two processes each, alternating). Alternating in one process, each library's read faults in afresh the
pages the other's freed memory gave back to the system (a 4 MB dense result: 1,000 page faults, 2 ms of a
4 ms read), which no user of one library sees; alone, each reuses its own. The table shows median times,
their ratio tdbformat / TileDB-Py (goal: <= 1.0) both ways, and the peak memory each read added (VmHWM after a reset through /proc/self/clear_refs, Linux; "-" elsewhere). Run:
``python benchmarks/read.py [WORDS...]`` (only the rows whose name holds one of the words).

The peaks are only real if memory a read frees leaves the process, and if the heap holds no free memory
from earlier reads for the read to reuse unseen. So the times are taken first, with the allocator as users
run it; then each peak is taken in a fresh process (``--peak``) that fixes glibc's mmap threshold (and sends
pyarrow, which keeps freed memory in its own pool, to the system allocator), makes the read once untimed, and
measures the second. Measured in the timing process, the peaks depended on which reads ran before (a
20-fragment read showed 39 MiB there, 31 MiB in every fresh process).
"""

from __future__ import annotations

import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import tiledb
from rich.console import Console
from rich.table import Table

from tdbformat import open_array

ROUNDS = 7  # timed calls of each reader (the first calls after a large free still fault their pages in)
PEAK_ROUNDS = 2
N = 1_000_000


def write_sparse(uri: str, fragments: int = 1, n: int = N):
    """``n`` cells over 2 int64 dims with a float64, in ``fragments`` fragments (distinct coordinates each)."""
    rng = np.random.default_rng(0)
    dims = [tiledb.Dim("x", domain=(0, 99_999), tile=1000, dtype=np.int64),
            tiledb.Dim("y", domain=(0, 99_999), tile=1000, dtype=np.int64)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=10_000,
                                attrs=[tiledb.Attr("a", dtype=np.float64, filters=[tiledb.ZstdFilter()])])
    tiledb.Array.create(uri, schema)
    per = n // fragments
    for f in range(fragments):
        with tiledb.open(uri, "w", timestamp=f + 1) as A:
            cells = rng.choice(N, per, replace=False) if fragments > 1 else rng.permutation(N)
            A[cells // 1000 * 100, cells % 1000 * 100] = rng.random(per)


def write_strings(uri: str):
    dim = tiledb.Dim("i", domain=(0, N - 1), tile=100_000, dtype=np.int64)
    schema = tiledb.ArraySchema(domain=tiledb.Domain(dim), attrs=[
        tiledb.Attr("s", dtype=str, var=True, filters=[tiledb.ZstdFilter()])])
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(0)
    words = np.array([f"w{k}-é" * (k % 4) for k in range(1000)], object)
    with tiledb.open(uri, "w") as A:
        A[:] = {"s": words[rng.integers(0, 1000, N)]}


def write_dense(uri: str, side: int = 1000):
    dims = [tiledb.Dim("r", domain=(0, side - 1), tile=100, dtype=np.int64),
            tiledb.Dim("c", domain=(0, side - 1), tile=100, dtype=np.int64)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims),
                                attrs=[tiledb.Attr("a", dtype=np.int32, filters=[tiledb.ZstdFilter()])])
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w") as A:
        A[:] = np.arange(side * side, dtype=np.int32).reshape(side, side)


def write_small_tiles(uri: str):
    """A dense 2,000 x 2,000 int32 array (zstd) in 20 x 20 tiles: 10,000 of them."""
    dims = [tiledb.Dim(n, domain=(0, 1999), tile=20, dtype=np.int64) for n in "rc"]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims),
                                attrs=[tiledb.Attr("a", dtype=np.int32, filters=[tiledb.ZstdFilter()])])
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w") as A:
        A[:] = np.arange(2000 * 2000, dtype=np.int32).reshape(2000, 2000)


def _rss_reset():
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status("VmRSS")
    except OSError:
        return None


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def measure(fn):
    """(seconds, peak bytes added or None) of one call."""
    base = _rss_reset()
    t = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - t
    return elapsed, (None if base is None else max(_status("VmHWM") - base, 0))


def _peak(tmp: str, name: str, reader: str):
    """The largest peak of ``PEAK_ROUNDS`` fresh processes, each reading row ``name`` with ``reader``."""
    runs = [subprocess.run([sys.executable, __file__, "--peak", tmp, name, reader], capture_output=True, text=True,
                           check=True).stdout for _ in range(PEAK_ROUNDS)]
    return None if "-" in runs else max(int(r) for r in runs)


def _peak_here(tmp: str, name: str, reader: str):
    """One peak, in this fresh process: the read once untimed, then measured."""
    row = next(r for r in cases(Path(tmp)) if r[0] == name)
    fn = row[3] if reader == "ours" else row[4]
    _release_freed_memory()
    fn()
    peak = measure(fn)[1]
    print("-" if peak is None else peak, end="")


def _alone(tmp: str, name: str, reader: str) -> list:
    """``ROUNDS`` times of row ``name`` read by ``reader`` in a fresh process of its own, after an untimed read."""
    out = subprocess.run([sys.executable, __file__, "--alone", tmp, name, reader], capture_output=True, text=True,
                         check=True).stdout
    return [float(t) for t in out.split()]


def _alone_here(tmp: str, name: str, reader: str):
    row = next(r for r in cases(Path(tmp)) if r[0] == name)
    fn = row[3] if reader == "ours" else row[4]
    fn()
    print(" ".join(str(measure(fn)[0]) for _ in range(ROUNDS)))


def with_open(uri, read):
    with tiledb.open(uri) as A:
        return read(A)


def decode_alone(uri: str):
    """Every tile of every field of the array's one fragment decoded (in the read's pool, the fields at once
    as a read decodes them: Tiles.columns), nothing else: the floor a one-fragment "U" or "G" read stands on
    (issue #15: such reads within 1.5x of it)."""
    arr = open_array(uri)
    frag = arr.fragments[0]
    tiles = list(range(frag.tile_num()))
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        arr.tiles.columns(frag, arr.dims, [frag.index(a.name) for a in arr.attrs], tiles, pool)


def cases(tmp: Path):
    """(name, uri, writer, tdbformat read, TileDB-Py read) of each row."""
    def py(uri, **kw):
        return lambda: with_open(uri, lambda A: A.query(**kw)[:])

    one, twenty, many = str(tmp / "one"), str(tmp / "twenty"), str(tmp / "many")
    yield "sparse 1M, 1 fragment, order U", one, write_sparse, lambda: open_array(one).query(order="U")[:], py(one, order="U")
    yield "sparse 1M, 1 fragment, order G", one, None, lambda: open_array(one).query(order="G")[:], py(one, order="G")
    yield ("sparse 1M, 1 fragment, its tiles decoded alone (vs TileDB-Py order U)", one, None,
           lambda: decode_alone(one), py(one, order="U"))
    yield "sparse 1M, 1 fragment, order C", one, None, lambda: open_array(one).query(order="C")[:], py(one, order="C")
    yield ("open 200 sparse fragments (5,000 cells each)", many, lambda u: write_sparse(u, 200, 200 * 5000),
           lambda: open_array(many), lambda: tiledb.open(many).close())
    strings = str(tmp / "strings")
    yield ("1M var UTF-8 strings, dense, zstd", strings, write_strings, lambda: open_array(strings)[:],
           lambda: with_open(strings, lambda A: A[:]))
    rng = (40_000, 40_399)  # rows 400..403 of the 1000 x 1000 coordinate grid: 0.4% of the cells
    yield ("sparse 1M, ~0.4% by a range", one, None, lambda: open_array(one).multi_index[rng[0]:rng[1]],
           lambda: with_open(one, lambda A: A.multi_index[rng[0]:rng[1]]))
    for order in "UGC":
        yield (f"sparse 1M in 20 fragments, order {order}", twenty, (lambda u: write_sparse(u, 20)) if order == "U"
               else None, lambda o=order: open_array(twenty).query(order=o)[:], py(twenty, order=order))
    dense = str(tmp / "dense")
    yield ("dense 1000x1000 int32, a 10x10 slice", dense, write_dense, lambda: open_array(dense)[500:510, 500:510],
           lambda: with_open(dense, lambda A: A[500:510, 500:510]))
    yield ("dense 1000x1000 int32, all", dense, None, lambda: open_array(dense)[:],
           lambda: with_open(dense, lambda A: A[:]))
    small = str(tmp / "small_tiles")
    yield ("dense 2000x2000 int32 in 20x20 tiles (10,000), all", small, write_small_tiles,
           lambda: open_array(small)[:], lambda: with_open(small, lambda A: A[:]))
    yield ("dense 2000x2000 int32 in 20x20 tiles, a 500x500 box off the tiles", small, None,
           lambda: open_array(small)[255:755, 1010:1510], lambda: with_open(small, lambda A: A[255:755, 1010:1510]))


def _release_freed_memory():
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD: fixed, so large blocks are unmapped when freed
    libc.mallopt(-1, 128 * 1024)  # M_TRIM_THRESHOLD: the heap's free top goes back to the system
    pa.set_memory_pool(pa.system_memory_pool())


def main():
    table = Table(title=f"tdbformat vs TileDB-Py, median of {ROUNDS}, alternating in one run")
    for col in ("read", "tdbformat ms", "TileDB-Py ms", "ratio", "alone: tdbformat ms", "TileDB-Py ms", "ratio",
                "tdbformat peak MiB", "TileDB-Py peak MiB"):
        table.add_column(col, justify="left" if col == "read" else "right")
    with tempfile.TemporaryDirectory() as tmp:
        rows = list(cases(Path(tmp)))  # every array is written; the rows timed hold one of the arguments
        keep = {r[0] for r in rows if not sys.argv[1:] or any(a in r[0] for a in sys.argv[1:])}
        times = {}
        for name, uri, write, ours, theirs in rows:  # times with the allocator as users run it
            if write is not None:
                write(uri)
            if name not in keep:
                continue
            ours(), theirs()  # untimed: first-use costs (pyarrow's first array, some 250 ms) are not a read's
            a, b = [], []
            for _ in range(ROUNDS):
                a.append(measure(ours)[0])
                b.append(measure(theirs)[0])
            times[name] = statistics.median(a), statistics.median(b)
            print(name, f"{times[name][0] * 1e3:.1f} ms vs {times[name][1] * 1e3:.1f} ms", flush=True)
        for name in (r[0] for r in rows if r[0] in keep):  # then each alone, and the peaks, in fresh processes
            alone = {"ours": [], "theirs": []}
            for who in ("ours", "theirs", "theirs", "ours"):
                alone[who] += _alone(tmp, name, who)
            sa, sb = statistics.median(alone["ours"]), statistics.median(alone["theirs"])
            (ta, tb), peaks = times[name], [_peak(tmp, name, who) for who in ("ours", "theirs")]
            print(name, f"alone: {sa * 1e3:.1f} ms vs {sb * 1e3:.1f} ms", flush=True)
            table.add_row(name, f"{ta * 1e3:.1f}", f"{tb * 1e3:.1f}", f"{ta / tb:.2f}", f"{sa * 1e3:.1f}",
                          f"{sb * 1e3:.1f}", f"{sa / sb:.2f}", *("-" if m is None else f"{m / 2**20:.1f}" for m in peaks))
    Console(width=170).print(table)
    alone = next((v[0] for k, v in times.items() if "decoded alone" in k), None)
    if alone is None or any(f"sparse 1M, 1 fragment, order {o}" not in times for o in "UG"):
        return
    print("one fragment, read / its tiles decoded alone (goal: <= 1.5): " + ", ".join(
        f"order {o} {times[f'sparse 1M, 1 fragment, order {o}'][0] / alone:.2f}" for o in "UG"))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peak"]:
        _peak_here(*sys.argv[2:5])
    elif sys.argv[1:2] == ["--alone"]:
        _alone_here(*sys.argv[2:5])
    else:
        main()
