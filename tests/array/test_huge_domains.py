"""Dense arrays with huge domains and little data (issue #23), as TileDB-Vector-Search, tiledb-cf and
tiledb-bioimg create them: domains of 2**31 cells per dimension, no current domain, a corner written in two
overlapping fragments. TileDB-Py's ``A[:]`` on them dies of std::bad_alloc; tdbformat refuses before
allocating, and ``cat`` streams the non-empty domain."""

from __future__ import annotations

import io
import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tdbformat import open_array
from tdbformat.array import MemoryBudgetError
from tdbformat.cli.cat import write_cells
from tdbformat.show import jsonable

tiledb = pytest.importorskip("tiledb")
ROOT = Path(__file__).resolve().parents[2]
BIG = (0, 2**31 - 1)
#: name: (tile extents, order, first write (box, shape), second write overlapping it)
SHAPES = {
    "1d_tile_1e6": ((1_000_000,), "row-major", ((5, 3005),), ((2000, 4000),)),
    "2d_col_major": ((32, 1000), "col-major", ((10, 40), (100, 200)), ((30, 50), (150, 250))),
    "2d_row_major_tile_1e6": ((2, 1_000_000), "row-major", ((0, 20), (7, 107)), ((15, 25), (50, 90))),
}


@pytest.fixture(scope="module", params=sorted(SHAPES))
def huge(request, tmp_path_factory):
    tiles, order, first, second = SHAPES[request.param]
    uri = str(tmp_path_factory.mktemp("huge") / request.param)
    dims = [tiledb.Dim(f"d{i}", domain=BIG, tile=t, dtype=np.int64) for i, t in enumerate(tiles)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), cell_order=order, tile_order=order,
                                attrs=[tiledb.Attr("v", dtype=np.float32, filters=[tiledb.ZstdFilter()])])
    tiledb.Array.create(uri, schema)
    for ts, box, sign in ((1, first, 1), (2, second, -1)):
        shape = tuple(b - a for a, b in box)
        with tiledb.open(uri, "w", timestamp=ts) as A:
            A[tuple(slice(a, b) for a, b in box)] = sign * np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    return uri


def _tdb_rows(uri, box=None, order="C"):
    """TileDB-Py's cells of ``box`` (default: the non-empty domain) in ``order``, coordinates first."""
    with tiledb.open(uri) as A:
        box = box or A.nonempty_domain()
        v = A.multi_index[tuple(slice(int(a), int(b)) for a, b in box)]["v"]
    grid = np.meshgrid(*[np.arange(a, b + 1) for a, b in box], indexing="ij")
    cols = [g.ravel(order) for g in grid] + [v.ravel(order)]
    names = [f"d{i}" for i in range(len(box))] + ["v"]
    return [dict(zip(names, map(jsonable, row))) for row in zip(*cols)]


def _cat(uri, **kw):
    buf = io.StringIO()
    write_cells(open_array(uri), buf, fmt="json", **kw)
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def test_nonempty_domain_is_tiledb_pys(huge):
    with tiledb.open(huge) as A:
        want = A.nonempty_domain()
    assert open_array(huge).nonempty_domain() == want


def test_cat_prints_exactly_the_nonempty_domain(huge):
    assert _cat(huge) == _tdb_rows(huge)


@pytest.mark.parametrize("limit", [1, 3, 150])
def test_cat_limit(huge, limit):
    assert _cat(huge, limit=limit) == _tdb_rows(huge)[:limit]


def test_cat_order_f_and_ranges(huge):
    with tiledb.open(huge) as A:
        ned = A.nonempty_domain()
    box = [(int(a) + 1, min(int(a) + 3, int(b))) for a, b in ned]
    spec = [f"d{i}={a}:{b}" for i, (a, b) in enumerate(box)]
    assert _cat(huge, order="F", ranges=spec) == _tdb_rows(huge, box, "F")


def test_read_ranges_equals_tiledb_py(huge):
    with tiledb.open(huge) as A:
        ned = A.nonempty_domain()
        want = A.multi_index[tuple(slice(int(a), int(b)) for a, b in ned)]["v"]
    got = open_array(huge).read(ranges={f"d{i}": (int(a), int(b)) for i, (a, b) in enumerate(ned)})["v"]
    np.testing.assert_array_equal(got, want)


def test_read_without_ranges_refuses_before_allocating(huge):
    with pytest.raises(MemoryBudgetError, match=r"ranges=.*nonempty_domain\(\).*memory_budget="):
        open_array(huge).read(memory_budget=64 << 20)
    with pytest.raises(TypeError, match="memory_budget"):
        open_array(huge).read(memory_budget="lots")


def test_cat_limit_peak_memory_under_100_mib(huge):
    """Measured in a fresh process that runs the command, so earlier children do not count."""
    probe = ("import resource, subprocess, sys\n"
             f"r = subprocess.run([sys.executable, '-m', 'tdbformat', 'cat', {huge!r}, '--limit', '3'],"
             " capture_output=True)\n"
             "assert r.returncode == 0, r.stderr\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    peak_kib = int(r.stdout)  # ru_maxrss is in KiB on Linux
    assert peak_kib < 100 * 1024, f"peak {peak_kib} KiB"
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss > 0
