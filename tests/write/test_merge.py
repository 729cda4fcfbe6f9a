"""Consolidation in bounded memory (write/merge.py): arrays ten times larger than the budget consolidate with a
peak (tracemalloc) under the budget plus a bound on what is not cells, and the merged fragment is the one
TileDB-Py writes, byte for byte; a budget too small is refused before anything is written."""

from __future__ import annotations

import os
import shutil
import tracemalloc

import numpy as np
import pytest

tiledb = pytest.importorskip("tiledb")

from tdbformat.write.consolidate import consolidate  # noqa: E402
from test_consolidate import _new_fragment, _tree_hash  # noqa: E402

MiB = 2**20


def _peak(call) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _bound(budget: int, tiles: int) -> int:
    """What a merge holds beyond its budget of cells: the new fragment's metadata, kept to its end as TileDB
    keeps it (each tile's offsets, statistics and MBR: under 1 KiB a tile of these four fields, in Python
    objects), and 1 MiB of tiles being decoded and filtered (a tile a thread) and of the inputs' metadata."""
    return budget + tiles * 1024 + MiB


def _same_fragment(ours, theirs, rng):
    mine, other = _new_fragment(ours, rng), _new_fragment(theirs, rng)
    assert sorted(os.listdir(mine)) == sorted(os.listdir(other))
    for name in os.listdir(other):
        assert (mine / name).read_bytes() == (other / name).read_bytes(), name


def _read(path):
    with tiledb.open(str(path)) as A:
        return A[:] if A.schema.sparse else A.query()[:]


def test_a_sparse_array_ten_times_the_budget_consolidates_within_it(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 10**9), tile=10**6, dtype=np.int64))
    tiledb.Array.create(str(ours), tiledb.ArraySchema(domain=dom, sparse=True, capacity=1000, attrs=[
        tiledb.Attr("a", dtype=np.float64), tiledb.Attr("b", dtype=np.int32)]))
    rng = np.random.default_rng(7)
    for t in range(1, 5):  # interleaved coordinates: every round merges every fragment
        x = np.arange(135_000, dtype=np.int64) * 4000 + t * 7
        with tiledb.open(str(ours), "w", timestamp=t) as A:
            A[x] = {"a": rng.random(len(x)), "b": rng.integers(0, 1000, len(x), dtype=np.int32)}
    shutil.copytree(ours, theirs)
    before = _read(ours)
    cells = sum(v.nbytes for v in before.values())
    budget = MiB
    assert cells > 10 * budget
    done = {}
    peak = _peak(lambda: done.update(consolidate(str(ours), memory_budget=budget)))
    assert peak < _bound(budget, tiles=len(before["x"]) // 1000 + 1), peak
    tiledb.consolidate(str(theirs))
    _same_fragment(ours, theirs, done["steps"][0]["timestamp_range"])
    after = _read(ours)
    assert all(np.array_equal(after[k], before[k]) for k in before)


def test_a_dense_array_ten_times_the_budget_consolidates_within_it(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    dom = tiledb.Domain(tiledb.Dim("r", domain=(1, 1024), tile=64, dtype=np.int32),
                        tiledb.Dim("c", domain=(1, 1024), tile=64, dtype=np.int32))
    tiledb.Array.create(str(ours), tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.float64),
                                                                         tiledb.Attr("n", dtype=np.int32)]))
    rng = np.random.default_rng(8)
    for t, (r0, r1) in enumerate([(1, 300), (301, 700), (701, 1024), (200, 900)], start=1):
        shape = (r1 - r0 + 1, 1024)
        with tiledb.open(str(ours), "w", timestamp=t) as A:
            A[r0:r1 + 1, 1:1025] = {"a": rng.random(shape), "n": rng.integers(0, 9, shape, dtype=np.int32)}
    shutil.copytree(ours, theirs)
    before = _read(ours)
    budget = MiB
    assert sum(v.nbytes for v in before.values()) > 10 * budget
    done = {}
    peak = _peak(lambda: done.update(consolidate(str(ours), memory_budget=budget)))
    assert peak < _bound(budget, tiles=(1024 // 64) ** 2), peak
    tiledb.consolidate(str(theirs))
    _same_fragment(ours, theirs, done["steps"][0]["timestamp_range"])
    after = _read(ours)
    assert all(np.array_equal(after[k], before[k]) for k in before)


@pytest.mark.parametrize("sparse", [True, False])
def test_a_budget_without_room_for_a_tile_of_each_fragment_is_refused_before_any_write(tmp_path, sparse):
    path = tmp_path / "a"
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 9999), tile=1000, dtype=np.int64))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=sparse, capacity=1000,
                                                      attrs=[tiledb.Attr("a", dtype=np.float64)]))
    for t in (1, 2, 3):
        with tiledb.open(str(path), "w", timestamp=t) as A:
            if sparse:
                A[np.arange(t, 9999, 3)] = np.ones(len(range(t, 9999, 3)))
            else:
                A[t * 1000:t * 1000 + 2000] = np.ones(2000)
    before = _tree_hash(path)
    what = r"these 3 fragments: .* a tile of each at once, \d+ bytes" if sparse else "a dense tile of 1000 cells"
    with pytest.raises(ValueError, match=rf"memory_budget: 4096 bytes cannot merge {what}.* it needs \d+ bytes"):
        consolidate(str(path), memory_budget=4096)
    assert _tree_hash(path) == before
    with pytest.raises(ValueError, match="memory_budget: expected a positive number of bytes"):
        consolidate(str(path), memory_budget=0)
