"""Reads and writes of many small tiles and of var cells, next to TileDB-Py: the shapes where a step a tile
(a thread's round trip, a write call, a tile's values made alone) cost more than the tile's own work.

Run: python benchmarks/small_tiles.py [rounds]. Each case is timed in this process, the two libraries
alternating, after one untimed call of each; the table shows the medians of ``rounds`` (default 7) and the
time ratio (tdbformat over TileDB-Py: below 1, tdbformat is faster). Writes go to fresh arrays made by
TileDB-Py (both libraries write the same schema at v22), each removed once timed; tdbformat syncs its files.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import tiledb

import tdbformat

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
N = 1_000_000
RNG = np.random.default_rng(0)
WORDS = np.array([f"w{k}-é" * (k % 4) for k in range(1000)], object)
STRINGS = WORDS[RNG.integers(0, 1000, N)]
FLAT = RNG.choice(10_000 * 10_000, N, replace=False)
COORDS = (FLAT // 10_000, FLAT % 10_000)


def _zstd():
    return [tiledb.ZstdFilter()]


def _dense(shape, tile, attr) -> tiledb.ArraySchema:
    dims = [tiledb.Dim(f"d{j}", domain=(0, s - 1), tile=t, dtype=np.int64) for j, (s, t) in enumerate(zip(shape, tile))]
    return tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=[attr])


def _sparse(capacity, attr) -> tiledb.ArraySchema:
    dims = [tiledb.Dim(n, domain=(0, 9_999), tile=1_000, dtype=np.int64) for n in "xy"]
    return tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=capacity, attrs=[attr])


def _str_attr():
    return tiledb.Attr("a", dtype=str, var=True, filters=_zstd())


def writes():
    """(name, schema, the values, coordinates or None) of each write case."""
    ints = np.cumsum(RNG.integers(-100, 100, N))
    grid = (np.arange(1_000_000) % 1_000).astype(np.int32).reshape(1_000, 1_000)
    yield "1M int64 in 1,000-cell tiles, zstd", _dense((N,), (1_000,), tiledb.Attr("a", np.int64, filters=_zstd())), \
        ints, None
    yield "1M int64 in 10,000-cell tiles, zstd", _dense((N,), (10_000,), tiledb.Attr("a", np.int64, filters=_zstd())), \
        ints, None
    yield "1M strings in 10,000-cell tiles, zstd", _dense((N,), (10_000,), _str_attr()), STRINGS, None
    yield "1M strings in 100,000-cell tiles, zstd", _dense((N,), (100_000,), _str_attr()), STRINGS, None
    yield "1000 x 1000 int32 in 100 x 100 tiles, zstd", \
        _dense((1_000, 1_000), (100, 100), tiledb.Attr("a", np.int32, filters=_zstd())), grid, None
    yield "sparse 1M cells, capacity 1,000, zstd", _sparse(1_000, tiledb.Attr("a", np.float64, filters=_zstd())), \
        RNG.random(N), COORDS


def reads(tmp):
    """(name, path, tdbformat's read, TileDB-Py's read) of each read case, the arrays written by TileDB-Py."""
    def made(name, schema, values, coords=None, fragments=None):
        uri = os.path.join(tmp, name)
        tiledb.Array.create(uri, schema)
        for t, (box, part) in enumerate(fragments or [(None, values)], start=1):
            with tiledb.open(uri, "w", timestamp=t) as A:
                A[coords if coords is not None else box if box is not None else slice(None)] = {"a": part}
        return uri
    for tile in (1_000, 10_000):
        uri = made(f"strings{tile}", _dense((N,), (tile,), _str_attr()), STRINGS)
        yield f"1M strings in {tile:,}-cell tiles, zstd", uri, np.s_[:]
    yield "1M strings in one tile, zstd", made("strings1", _dense((N,), (N,), _str_attr()), STRINGS), np.s_[:]
    uri = made("sparse_strings", _sparse(10_000, _str_attr()), STRINGS, COORDS)
    yield "sparse 1M strings, capacity 10,000", uri, np.s_[:]
    bands = [((slice(t * 50, (t + 1) * 50), slice(None)), RNG.integers(0, 1_000, (50, 1_000)).astype(np.int32))
             for t in range(20)]
    uri = made("bands", _dense((1_000, 1_000), (100, 100), tiledb.Attr("a", np.int32, filters=_zstd())), None,
               fragments=bands)
    yield "1000 x 1000 int32 in 20 fragments of 50 rows, 100 x 100 tiles", uri, np.s_[:]


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _write_once(lib, schema, values, coords) -> float:
    uri = tempfile.mkdtemp(prefix=f"small-{lib}-")
    os.rmdir(uri)
    tiledb.Array.create(uri, schema)
    if lib == "tdbformat":
        seconds = _timed(lambda: tdbformat.write(uri, {"a": values}, coords=coords, timestamp=1))
    else:
        def theirs():
            with tiledb.open(uri, "w", timestamp=1) as A:
                A[coords if coords is not None else slice(None)] = {"a": values}
        seconds = _timed(theirs)
    shutil.rmtree(uri)
    return seconds


def _row(kind, name, ours: list, theirs: list) -> str:
    a, b = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
    return f"| {kind} | {name} | {a:.1f} | {b:.1f} | {a / b:.2f} |"


def main():
    print(f"tdbformat vs TileDB-Py {tiledb.__version__}, in one process, alternating, median of {ROUNDS}\n")
    print("| | case | tdbformat ms | TileDB-Py ms | ratio |\n|---|---|---|---|---|")
    for name, schema, values, coords in writes():
        runs = {"tdbformat": [], "tiledb": []}
        for _ in range(ROUNDS + 1):
            for lib in runs:
                runs[lib].append(_write_once(lib, schema, values, coords))
        print(_row("write", name, runs["tdbformat"][1:], runs["tiledb"][1:]), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, uri, box in reads(tmp):
            def theirs():
                with tiledb.open(uri) as A:
                    return A[box]
            ours = (lambda: tdbformat.open_array(uri)[box])
            got, want = ours(), theirs()
            assert got["a"].tolist() == want["a"].tolist(), name
            runs = {"tdbformat": [], "tiledb": []}
            for _ in range(ROUNDS):
                runs["tdbformat"].append(_timed(ours))
                runs["tiledb"].append(_timed(theirs))
            print(_row("read", name, runs["tdbformat"], runs["tiledb"]), flush=True)


if __name__ == "__main__":
    main()
