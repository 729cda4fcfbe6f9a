"""Global order exact over every integer type's whole range (issue #39 §0): the tile index of an int64
coordinate in a domain spanning 2**63 or more, and of a uint64 one above 2**63, is computed without wrapping
and without float64, so a fragment we write is in TileDB's global order (the order TileDB 2.30 writes), a
no-duplicates array overwritten by us keeps no duplicate in TileDB-Py's reads nor after its consolidation,
and ``validate`` passes TileDB's fragment and ours."""

from __future__ import annotations

import numpy as np
import pytest
import tiledb

import tdbformat
from tdbformat.array import order
from tdbformat.write.writer import write
from tdbformat.enums import Layout

#: (dtype, domain, tile extent): spans of 2**63 and more, uint64 above 2**63, the 8-bit types whole
CASES = [
    (np.int64, (-2**62, 2**62), 2**50),
    (np.int64, (-2**63, 2**63 - 2), 2**61),
    (np.uint64, (0, 2**64 - 2), 2**60),
    (np.uint64, (2**63, 2**64 - 100), 2**40),
    (np.int8, (-128, 126), 16),
    (np.uint8, (0, 254), 16),
    (np.int32, (-2**31, 2**31 - 2), 2**28),
    ("datetime64[ns]", (-2**62, 2**62), 2**50),
]


def _coords(dtype, lo, hi, n, seed=0):
    """``n`` distinct coordinates spread over [lo, hi], its ends included (exact, in Python ints)."""
    rng = np.random.default_rng(seed)
    span = hi - lo
    picks = {lo, hi, lo + span // 2, lo + span // 2 + 1}
    while len(picks) < n:
        picks.add(lo + int(rng.integers(0, 2**62)) * span // 2**62)
    return np.array(sorted(picks), dtype)[rng.permutation(len(picks))]


def _create(path, dtype, domain, extent, dims=1):
    if np.dtype(dtype).kind == "M":
        domain, extent = tuple(np.datetime64(v, "ns") for v in domain), np.timedelta64(extent, "ns")
    ds = [tiledb.Dim(f"d{i}", domain=domain, tile=extent, dtype=dtype) for i in range(dims)]
    tiledb.Array.create(str(path), tiledb.ArraySchema(tiledb.Domain(*ds), [tiledb.Attr("a", np.int64)],
                                                      sparse=True, capacity=7, allows_duplicates=False))


def _stored(path):
    with tiledb.open(str(path)) as A:
        return A.query(order="U")[:]


@pytest.mark.parametrize("dtype,domain,extent", CASES, ids=[f"{np.dtype(c[0]).name}-{c[2]}" for c in CASES])
@pytest.mark.parametrize("dims", [1, 2])
def test_our_fragment_is_in_tiledbs_global_order(tmp_path, dtype, domain, extent, dims):
    coords = [_coords(dtype, *domain, 60, seed=i) for i in range(dims)]
    values = np.arange(60, dtype=np.int64)
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    for p in (theirs, ours):
        _create(p, dtype, domain, extent, dims)
    with tiledb.open(str(theirs), "w") as A:
        A[tuple(coords)] = values
    write(str(ours), values, coords=coords)
    want, got = _stored(theirs), _stored(ours)
    for k in [f"d{i}" for i in range(dims)] + ["a"]:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    with tiledb.open(str(theirs)) as A:  # TileDB's fragment is stored in the order its global-order read gives
        g = A.query(order="G")[:]
    np.testing.assert_array_equal(want["a"], g["a"])
    # validate shares the order code: both fragments pass
    for p in (theirs, ours):
        found = tdbformat.validate(str(p))
        assert not [f for f in found if f.rule in ("global-order", "duplicates")], found


@pytest.mark.parametrize("dtype,domain,extent", CASES[:4], ids=[f"{np.dtype(c[0]).name}-{c[2]}" for c in CASES[:4]])
def test_overwrite_keeps_no_duplicate(tmp_path, dtype, domain, extent):
    """TileDB merges fragments assuming each is in global order: ours out of order left the overwritten cell
    beside the new one, and consolidation made the duplicate permanent."""
    path = tmp_path / "a"
    _create(path, dtype, domain, extent)
    coords = _coords(dtype, *domain, 40)
    with tiledb.open(str(path), "w", timestamp=1) as A:
        A[coords] = np.zeros(40, np.int64)
    write(str(path), np.arange(1, 41, dtype=np.int64), coords=[coords], timestamp=2)
    expect = dict(zip(coords.tolist(), range(1, 41)))

    def check():
        with tiledb.open(str(path)) as A:
            got = A[:]
        assert len(got["d0"]) == 40 and len(set(got["d0"].tolist())) == 40
        assert dict(zip(got["d0"].tolist(), got["a"].tolist())) == expect
        ours = tdbformat.open_array(str(path))[:]
        assert dict(zip(ours["d0"].tolist(), ours["a"].tolist())) == expect

    check()
    tiledb.consolidate(str(path))
    tiledb.vacuum(str(path))
    check()


def test_tile_index_exact():
    """The tile index in uint64 arithmetic, against Python ints."""
    for dtype, (lo, hi), extent in CASES:
        keys = _coords(dtype, lo, hi, 200)
        keys = keys.view(np.int64) if keys.dtype.kind == "M" else keys
        want = [(int(k) - lo) // extent for k in keys.tolist()]
        assert order.tile_index(keys, lo, extent).tolist() == want
    dt = np.array(["1970-01-01", "2262-04-11"], "M8[D]").view(np.int64)
    assert order.tile_index(dt, -2**63, 2**62).tolist() == [(int(k) + 2**63) // 2**62 for k in dt.tolist()]


def test_order_cells_matches_python_sort():
    """order_cells' global order equals a sort by exact (tile, cell) keys in Python ints."""
    lo, hi, extent = -2**63, 2**63 - 1, 2**61
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.integers(-2**63, 2**63 - 1, 300, dtype=np.int64, endpoint=True), [lo, hi]])
    y = rng.integers(-5, 5, len(x), dtype=np.int64)
    perm = order.order_cells([x, y], Layout.GLOBAL_ORDER, dom_lo=[lo, -5], extents=[extent, 4],
                             tile_order=Layout.ROW_MAJOR, cell_order=Layout.COL_MAJOR)
    keys = [((int(a) - lo) // extent, (int(b) + 5) // 4, int(b), int(a)) for a, b in zip(x.tolist(), y.tolist())]
    assert perm.tolist() == sorted(range(len(x)), key=lambda i: (keys[i], i))
