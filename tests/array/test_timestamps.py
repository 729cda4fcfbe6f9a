"""Reads at every timestamp that can go wrong, against TileDB-Py on arrays it writes here: the default
(TileDB opens at the current time), 0, 1, each write time, 2**63, 2**64-1 and (start, end) pairs, after
deletes, consolidation (with and without cell timestamps), vacuum, and writes stamped in the future."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from oracle import assert_same, canonical
from tdbformat.array import open_array, read_window

tiledb = pytest.importorskip("tiledb")

FUTURE = 2**62  # a write stamped after "now": invisible to a default read
TIMESTAMPS = [None, 0, 1, 2, 3, 4, 5, 6, FUTURE, 2**63, 2**64 - 1,
              (2, 3), (None, 2), (3, None), (5, FUTURE), (0, 2**64 - 1)]


def _sparse(uri, dups=False):
    dim = tiledb.Dim("d", domain=(1, 1000), tile=10, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(
        domain=tiledb.Domain(dim), sparse=True, allows_duplicates=dups, capacity=8,
        attrs=[tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str, var=True)]))
    for t in (1, 2, 3):  # overlapping coordinates: later writes overwrite earlier cells
        coords = np.arange(1, 21) + 5 * t
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[coords] = {"a": (np.arange(20) * t).astype(np.int32), "s": np.array([f"w{t}c{c}" for c in coords])}
    with tiledb.open(uri, "d", timestamp=4) as A:
        A.query(cond="a > 30").submit()
    with tiledb.open(uri, "w", timestamp=5) as A:  # a write in the same millisecond as the next delete
        A[np.array([500, 501])] = {"a": np.array([100, 1], np.int32), "s": np.array(["x", "y"])}
    with tiledb.open(uri, "d", timestamp=5) as A:
        A.query(cond="a >= 100").submit()
    with tiledb.open(uri, "w", timestamp=FUTURE) as A:
        A[np.array([999])] = {"a": np.array([7], np.int32), "s": np.array(["future"])}


def _dense(uri):
    dim = tiledb.Dim("d", domain=(1, 40), tile=8, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=False,
                                                attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for t, (lo, hi) in zip((1, 2, 3, FUTURE), ((1, 20), (10, 30), (25, 40), (1, 5))):
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[lo:hi + 1] = np.full(hi - lo + 1, t % 1000, np.int32)


_STEPS = {
    "none": [],
    "consolidate": [("consolidate", {})],
    "consolidate+vacuum": [("consolidate", {}), ("vacuum", {})],
    "consolidate-no-timestamps": [("consolidate", {"sm.consolidation.with_timestamps": "false"})],
    "consolidate-no-timestamps+vacuum": [("consolidate", {"sm.consolidation.with_timestamps": "false"}),
                                         ("vacuum", {})],
    "consolidate-window": [("consolidate", {"sm.consolidation.timestamp_start": "2",
                                            "sm.consolidation.timestamp_end": "4"})],
}


def _build(uri, kind, steps):
    {"sparse": _sparse, "dups": lambda u: _sparse(u, dups=True), "dense": _dense}[kind](uri)
    for step, config in _STEPS[steps]:
        getattr(tiledb, step)(uri, config=tiledb.Config(config))


def _py(uri, ts, sparse):
    with tiledb.open(uri, timestamp=ts) as A:
        return A.query(order="C")[:] if sparse else A[:]


@pytest.mark.parametrize("steps", list(_STEPS))
@pytest.mark.parametrize("kind", ["sparse", "dups", "dense"])
def test_reads_at_every_timestamp_equal_tiledb_py(tmp_path, kind, steps):
    uri = str(tmp_path / "a")
    _build(uri, kind, steps)
    sparse = kind != "dense"
    canon = canonical if kind == "dups" else dict
    for ts in TIMESTAMPS:
        want = _py(uri, ts, sparse)
        got_read = open_array(uri).read(timestamp=ts, order="C")
        got_open = open_array(uri, timestamp=ts).read(order="C")
        for got in (got_read, got_open):
            assert set(got) == set(want), ts
            try:
                assert_same(canon(got), canon(want))
            except AssertionError as e:
                raise AssertionError(f"timestamp={ts!r}: {e}") from e


def test_delete_consolidate_vacuum_keeps_live_cells_in_cat(tmp_path):
    """The issue's case: the consolidated fragment stamps never-deleted cells UINT64_MAX."""
    uri = str(tmp_path / "a")
    _build(uri, "sparse", "consolidate+vacuum")
    want = _py(uri, None, True)
    assert len(want["a"]) > 0
    frag = open_array(uri).fragments[-1]
    assert frag.has_delete_meta
    out = subprocess.run([sys.executable, "-m", "tdbformat", "cat", uri], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert sum(1 for line in out.stdout.splitlines() if line.strip()) >= len(want["a"])


def test_read_window():
    assert read_window(7) == (0, 7)
    assert read_window((3, 9)) == (3, 9)
    start, end = read_window(None)
    assert start == 0 and 0 < end < 2**63
    assert read_window((4, 2**64 - 1))[1] < 2**63
    for bad in (-1, 2**64, 1.5, "3", (1, -2)):
        with pytest.raises(ValueError, match="timestamp"):
            read_window(bad)


@pytest.mark.parametrize("trial", range(4))  # the fragments' UUIDs decide which write sorts last
@pytest.mark.parametrize("consolidate", [False, True])
def test_two_writes_in_one_millisecond_read_as_tiledbs_global_order(tmp_path, trial, consolidate):
    """Two writes at one timestamp over some of the same coordinates: the cell of the fragment whose name
    sorts last, and once consolidated (the fragment keeps both cells, with one timestamp) the later of the
    two, as TileDB's global-order read keeps them; its row-major read differs from it for some cells
    (DISCREPANCIES.md), so the row-major oracle is the global-order read, sorted."""
    uri = str(tmp_path / "a")
    dim = tiledb.Dim("x", domain=(0, 99), tile=4, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True, capacity=4,
                                                attrs=[tiledb.Attr("a", dtype=np.int32)]))
    rng = np.random.default_rng(trial)
    for value in (1, 2):
        xs = np.unique(rng.integers(0, 100, 30))
        with tiledb.open(uri, "w", timestamp=5) as A:
            A[xs] = {"a": np.full(len(xs), value, np.int32)}
    if consolidate:
        tiledb.consolidate(uri)
        tiledb.vacuum(uri)
    with tiledb.open(uri) as A:
        want = A.query(order="G")[:]
    arr = open_array(uri)
    assert_same(arr.read(order="G"), want)
    assert_same(arr.read(order="C"), want)  # 1-D: global order is sorted


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("writes, commits", [(5, False), (20, False), (20, True)])
def test_many_writes_in_one_millisecond_win_as_in_tiledb(tmp_path, sparse, writes, commits):
    """Writes at one timestamp over the same cells: TileDB orders fragments by their first timestamp with
    std::sort, which is not stable past 16 of them, after listing those a .con file commits before the rest;
    the last in that order wins (tdbformat/stdsort.py emulates it). Each write's value is its number."""
    uri = str(tmp_path / "a")
    dim = tiledb.Dim("x", domain=(0, 7), tile=4, dtype=np.int64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=sparse,
                                                attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for i in range(writes):
        if commits and i == writes // 2:  # the first half committed by a .con, the rest by their .wrt
            tiledb.consolidate(uri, config=tiledb.Config({"sm.consolidation.mode": "commits"}))
        with tiledb.open(uri, "w", timestamp=7) as A:
            cells = np.full(4, i, np.int32)
            if sparse:
                A[np.arange(i % 3, i % 3 + 4)] = {"a": cells}
            else:
                A[i % 3:i % 3 + 4] = cells
    for ts in (None, 7):
        with tiledb.open(uri, timestamp=ts) as A:
            want = A.query(order="G")[:] if sparse else A[:]
        assert_same(open_array(uri).read(timestamp=ts, order="G" if sparse else "C"), want)
