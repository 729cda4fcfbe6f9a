"""Random user workflows, built by TileDB-Py: an array (dense or sparse, duplicates or not, row- or
column-major or Hilbert, an int, string, float or datetime second dimension, encrypted or not), then a few
of writes, deletes, schema evolutions (not of encrypted arrays, which TileDB 2.30 breaks, DISCREPANCIES.md),
consolidations and vacuums at rising (sometimes equal) timestamps.
Every read at every timestamp equals TileDB-Py's. Each seed is one workflow; more of them with
``TDBFORMAT_WORKFLOWS=N`` (the suite runs 24), others from seed ``TDBFORMAT_WORKFLOWS_FROM``."""

from __future__ import annotations

import os

import numpy as np
import pytest

from oracle import assert_same, canonical, tiledb_ctx
from tdbformat import open_array

tiledb = pytest.importorskip("tiledb")
KEY = "0123456789abcdeF0123456789abcdeF"
FIRST = int(os.environ.get("TDBFORMAT_WORKFLOWS_FROM", "0"))
SEEDS = range(FIRST, FIRST + int(os.environ.get("TDBFORMAT_WORKFLOWS", "24")))


class _Workflow:
    """One seed's array and steps; ``ctx`` and ``config`` carry the key when encrypted."""

    def __init__(self, seed: int, uri: str):
        self.rng, self.uri, self.extra = np.random.default_rng(seed), uri, 0
        rng = self.rng
        self.key = KEY if rng.random() < 0.3 else None
        self.ctx = tiledb_ctx(self.key)
        self.sparse = rng.random() < 0.7
        self.dups = self.sparse and rng.random() < 0.3
        self.second = rng.choice(["none", "int", "str", "float", "time"] if self.sparse else ["none", "int"])
        orders = ["row-major", "col-major"] + (["hilbert"] if self.sparse and self.second != "str" else [])
        self.order = str(rng.choice(orders))
        self.last = 1

    def config(self, **kw) -> tiledb.Config:
        if self.key:
            kw.update({"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": self.key})
        return tiledb.Config(kw)

    def create(self):
        rng, ctx = self.rng, self.ctx
        dims = [tiledb.Dim("x", domain=(0, 99), tile=int(rng.choice([4, 10, 50])), dtype=np.int64, ctx=ctx)]
        second = {"int": lambda: tiledb.Dim("y", domain=(-5, 14), tile=3, ctx=ctx,  # dense: both int64
                                            dtype=np.int32 if self.sparse else np.int64),
                  "str": lambda: tiledb.Dim("y", domain=(None, None), tile=None, dtype="ascii", ctx=ctx),
                  "float": lambda: tiledb.Dim("y", domain=(-5.0, 15.0), tile=2.5, dtype=np.float64, ctx=ctx),
                  "time": lambda: tiledb.Dim("y", domain=(np.datetime64(-5, "s"), np.datetime64(14, "s")),
                                             tile=np.timedelta64(4, "s"), dtype="datetime64[s]", ctx=ctx)}
        if self.second != "none":
            dims.append(second[self.second]())
        order = (dict(cell_order="hilbert") if self.order == "hilbert" else
                 dict(cell_order=self.order, tile_order=str(rng.choice(["row-major", "col-major"]))))
        attrs = [tiledb.Attr("a", dtype=np.int32, ctx=ctx),
                 tiledb.Attr("s", dtype=str, var=True, ctx=ctx,  # TileDB-Py cannot write 2-D nullable strings
                             nullable=bool(rng.random() < 0.5) and (self.sparse or self.second == "none"))]
        tiledb.Array.create(self.uri, tiledb.ArraySchema(
            domain=tiledb.Domain(*dims, ctx=ctx), sparse=self.sparse, allows_duplicates=self.dups, ctx=ctx,
            capacity=int(rng.choice([4, 16, 1000])), attrs=attrs, **order), ctx=ctx)

    def _coords(self, n: int) -> list:
        rng = self.rng
        xs, ys = rng.integers(0, 100, n), rng.integers(-5, 15, n)
        coords = [xs] + ({"int": [ys.astype(np.int32)], "str": [np.array([f"k{v}" for v in ys], dtype=object)],
                          "float": [ys / 2.0 + 0.25], "time": [ys.astype("datetime64[s]")]}.get(self.second, []))
        if not self.dups:  # one cell per coordinate in a write
            _, first = np.unique(np.array([[str(c[i]) for c in coords] for i in range(n)]), axis=0,
                                 return_index=True)
            coords = [c[np.sort(first)] for c in coords]
        return coords

    def write(self, ts: int):
        rng = self.rng
        with tiledb.open(self.uri, "w", timestamp=ts, ctx=self.ctx) as A:
            names = [a.name for a in A.schema]
            if self.sparse:
                coords = self._coords(int(rng.integers(1, 30)))
                where, shape = tuple(coords), (len(coords[0]),)
            else:
                lo, n = int(rng.integers(0, 90)), int(rng.integers(1, 10))
                where, shape = slice(lo, lo + n), (n,)
                if self.second == "int":
                    lo2, n2 = int(rng.integers(0, 10)), int(rng.integers(1, 5))  # TileDB-Py: -1 is the end
                    where, shape = (where, slice(lo2, lo2 + n2)), (n, n2)
            count = int(np.prod(shape))
            data = {n: rng.integers(0, 50, shape).astype(np.int32) if n != "s" else
                    np.array([f"v{ts}_{i}" * int(rng.integers(0, 3)) for i in range(count)], dtype=object).reshape(shape)
                    for n in names}
            data.update({n: v.astype(np.float32) for n, v in data.items() if n.startswith("e")})
            A[where] = data

    def step(self, ts: int):
        rng = self.rng
        op = rng.choice(["write"] * 4 + (["delete"] if self.sparse else []) + ["consolidate", "vacuum"]
                        + ([] if self.key else ["evolve"]))  # TileDB cannot open an encrypted array it evolved
        if op == "write":
            self.write(ts)
        elif op == "delete":
            with tiledb.open(self.uri, "d", timestamp=ts, ctx=self.ctx) as A:
                A.query(cond=f"a > {int(rng.integers(10, 50))}").submit()
        elif op == "evolve":
            self.evolve(ts)
        else:
            mode = str(rng.choice(["fragments", "fragment_meta", "commits"]))
            kw = {"sm.consolidation.with_timestamps": "false"} if op == "consolidate" and rng.random() < 0.3 else {}
            getattr(tiledb, op)(self.uri, ctx=self.ctx, config=self.config(
                **{f"sm.{'consolidation' if op == 'consolidate' else 'vacuum'}.mode": mode}, **kw))

    def evolve(self, ts: int):
        se = tiledb.ArraySchemaEvolution(self.ctx)
        with tiledb.open(self.uri, ctx=self.ctx) as A:
            names = [a.name for a in A.schema]
        if len(names) > 2 and self.rng.random() < 0.5:
            se.drop_attribute(names[-1])
        else:
            self.extra += 1
            se.add_attribute(tiledb.Attr(f"e{self.extra}", dtype=np.float32, fill=float(self.extra), ctx=self.ctx))
        se.timestamp(ts)
        se.array_evolve(self.uri)

    def run(self, ties: bool = True):
        """Create, then 3 to 9 steps at rising timestamps (``ties``: some equal)."""
        self.create()
        for _ in range(int(self.rng.integers(3, 10))):
            self.last += int(self.rng.integers(0 if ties else 1, 3))
            self.step(self.last)


def _built(wf: _Workflow, ties: bool) -> _Workflow:
    """``wf`` run, or the test skipped where TileDB 2.30 fails a consolidation of it ("Error generating
    timestamped name; start timestamp cannot be after end timestamp": about 1 workflow in 100)."""
    try:
        wf.run(ties=ties)
    except tiledb.TileDBError as e:
        pytest.skip(f"TileDB cannot run this workflow: {e}")
    return wf


def _tiledb_py(wf: _Workflow, ts) -> tuple[dict, dict | None]:
    """TileDB-Py's row-major read (its global-order read, sorted: its row-major reader breaks ties of equal
    timestamps its own way, DISCREPANCIES.md) and its ``A[:]`` (sparse arrays without duplicates)."""
    with tiledb.open(wf.uri, timestamp=ts, ctx=wf.ctx) as A:
        if not wf.sparse:
            return A[:], None
        cells = A.query(order="G")[:]
        dims = [d.name for d in A.schema.domain]
        rows = {k: v[np.lexsort([cells[d] for d in dims[::-1]])] for k, v in cells.items()}
        return rows, None if wf.dups else A[:]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_workflow_reads_as_tiledb_py_at_every_timestamp(tmp_path, seed):
    wf = _built(_Workflow(seed, str(tmp_path / "a")), ties=True)
    for ts in [None, 0, 1, *range(2, wf.last + 2), 2**63, (2, wf.last), (None, 3)]:
        rows, default = _tiledb_py(wf, ts)
        arr = open_array(wf.uri, timestamp=ts, key=wf.key)
        got = arr.query(order="C")[:] if wf.sparse else arr[:]
        assert sorted(got) == sorted(rows), ts
        assert_same(canonical(got) if wf.dups else got, canonical(rows) if wf.dups else rows)
        if default is not None:
            assert_same(arr[:], default)


def _bound(wf: _Workflow, dim: str, rng):
    """A random coordinate of ``dim`` as TileDB-Py takes it (sometimes outside what was written)."""
    if dim == "x":
        return int(rng.integers(-3, 103)) if wf.sparse else int(rng.integers(0, 100))
    v = int(rng.integers(-6, 16)) if wf.sparse else int(rng.integers(-5, 15))
    return {"str": f"k{v}", "float": v / 2.0 + float(rng.choice([0.0, 0.25, 0.3])), "time": np.datetime64(v, "s"),
            "int": v}.get(wf.second, v)


def _selection(wf: _Workflow, dims: list, rng, disjoint: bool) -> list:
    """Per dimension, for ``multi_index``: everything, a scalar, a range, or a list of ranges and scalars
    (``disjoint``: ascending and apart)."""
    out = []
    for d in dims:
        kind = rng.integers(0, 4)
        if kind == 0:
            out.append(slice(None))
            continue
        picks = []
        for _ in range(1 if kind < 3 else int(rng.integers(2, 4))):
            a, b = sorted([_bound(wf, d, rng), _bound(wf, d, rng)])
            picks.append(a if kind == 1 or rng.random() < 0.2 else slice(a, b))
        if disjoint:
            kept = []
            for p in sorted(picks, key=lambda p: p.start if isinstance(p, slice) else p):
                if not kept or (p.start if isinstance(p, slice) else p) > (
                        kept[-1].stop if isinstance(kept[-1], slice) else kept[-1]):
                    kept.append(p)
            picks = kept
        out.append(picks[0] if len(picks) == 1 else picks)
    return out


def _merged(picks):
    """String ranges merged as TileDB means to before an unordered or global-order read: its merge takes the
    later range's end where the earlier one's is larger (DISCREPANCIES.md), so the test merges them first."""
    if not isinstance(picks, list):
        return picks
    out = []
    for lo, hi in sorted((p.start, p.stop) if isinstance(p, slice) else (p, p) for p in picks):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return [slice(lo, hi) for lo, hi in out]


@pytest.mark.parametrize("seed", SEEDS[:len(SEEDS) // 2])
def test_a_workflows_selections_read_as_tiledb_py(tmp_path, seed):
    """Random ``multi_index`` selections (scalars, ranges, lists of them), attribute subsets, conditions and
    orders, at random timestamps, on a random workflow's array: each equal to TileDB-Py's. No two steps share
    a timestamp: of two cells written at once, TileDB's row-major reader keeps another than its global-order
    one (DISCREPANCIES.md), and the test above covers those. A sparse read's cells are also TileDB-Py's
    global-order read of everything, cut to the ranges here: TileDB's own range reads drop cells now and then
    (DISCREPANCIES.md), and where they do, that is the answer."""
    wf = _built(_Workflow(1000 + seed, str(tmp_path / "a")), ties=False)
    rng = np.random.default_rng(seed)
    for _ in range(12):
        ts = [None, int(rng.integers(0, wf.last + 2)), (1, int(rng.integers(1, wf.last + 2)))][rng.integers(0, 3)]
        with tiledb.open(wf.uri, timestamp=ts, ctx=wf.ctx) as A:
            dims = [d.name for d in A.schema.domain]
            names = [a.name for a in A.schema]
            attrs = rng.choice(names, int(rng.integers(1, len(names) + 1)), replace=False).tolist()  # any order
            # the coordinates asked for, in any order (None: TileDB-Py's default)
            fields = rng.choice(dims, int(rng.integers(0, len(dims) + 1)), replace=False).tolist()
            fields = {"dims": fields} if rng.random() < 0.3 else {}
            # TileDB 2.30 corrupts its heap on a dense read of a var attribute by overlapping or descending ranges
            sel = tuple(_selection(wf, dims, rng, disjoint=not wf.sparse and "s" in attrs))
            cond = f"a {rng.choice(['<', '>=', '=='])} {int(rng.integers(0, 50))}" if rng.random() < 0.4 else None
            order = str(rng.choice(["C", "F"] + (["G", "U"] if wf.sparse else [])))
            theirs = tuple(_merged(s) if wf.second == "str" and j == 1 and order in "GU" else s
                           for j, s in enumerate(sel))
            # or A[...] on the first dimension: a half-open slice or a point
            lo = int(rng.integers(0, 99))
            item = slice(lo, int(rng.integers(lo + 1, 101))) if rng.random() < 0.8 else lo
            index = rng.random() < 0.3
            if index:
                sel = theirs = (slice(item.start, item.stop - 1) if isinstance(item, slice) else item,)
            pick = (lambda q: q[item]) if index else (lambda q: q.multi_index[theirs])
            try:
                want = pick(A.query(attrs=attrs, cond=cond, order=order, **fields))
            except tiledb.TileDBError:
                continue  # a selection TileDB refuses (out of a dense domain)
            cut = _cut(A.query(attrs=attrs, cond=cond, order="G")[:], dims, sel, order) if wf.sparse else None
        mine = open_array(wf.uri, timestamp=ts, key=wf.key).query(attrs=attrs, cond=cond, order=order, **fields)
        got = mine[item] if index else mine.multi_index[sel]
        what = (ts, f"[{item}]" if index else sel, attrs, fields, cond, order)
        assert list(got) == list(want), what  # the columns asked for, in the order asked
        try:
            if cut is not None:
                cut = {k: cut[k] for k in got}  # the cut holds every field
                assert_same(canonical(got), canonical(cut))
                if not _alike(canonical(want), canonical(cut)):
                    continue  # TileDB's range read lost cells its global-order read has
            if wf.sparse and (wf.dups or order in "GU"):  # ties and duplicates come in TileDB's heap order
                got, want = canonical(got), canonical(want)
            assert_same(got, want)
        except AssertionError as e:
            raise AssertionError(f"{what}: {e}") from None


def _cut(cells: dict, dims: list, sel: tuple, order: str) -> dict:
    """Sparse ``cells`` in the selection ``sel`` (an entry per dimension of ``dims``), each as often as the
    ranges hold it in a row- or column-major read (once per combination of ranges), else once."""
    times = np.ones(len(next(iter(cells.values()))), np.int64)
    for dim, s in zip(dims, sel):
        if s == slice(None):
            continue
        column = cells[dim]
        held = np.zeros(len(column), np.int64)
        for p in (s if isinstance(s, list) else [s]):
            lo, hi = (p.start, p.stop) if isinstance(p, slice) else (p, p)
            if isinstance(lo, str):  # TileDB-Py gives ASCII dimensions' cells as bytes
                lo, hi = lo.encode(), hi.encode()
            held += (column >= lo) & (column <= hi)
        times *= held if order in "CF" else held > 0
    return {k: np.repeat(v, times) for k, v in cells.items()}


def _alike(a: dict, b: dict) -> bool:
    try:
        assert_same(a, b)
        return True
    except AssertionError:
        return False


def test_string_ranges_where_tiledbs_range_read_loses_cells(tmp_path):
    """A workflow's array (duplicates, an ASCII dimension, a consolidation not yet vacuumed, a later write)
    on which TileDB 2.30's range reads of the string dimension give too few or too many cells: 11 for
    'k11'..'k15', where its own global-order read of everything holds 14 there (DISCREPANCIES.md).
    tdbformat gives the 14, and for each range what that read holds in it."""
    wf = _Workflow(1142, str(tmp_path / "a"))
    wf.run(ties=False)
    with tiledb.open(wf.uri, ctx=wf.ctx) as A:
        everything = A.query(order="G")[:]
        ranged = {r: A.query(order="U").multi_index[:, r[0]:r[1]] for r in [("k11", "k15"), ("k0", "k3")]}
    ours = open_array(wf.uri, key=wf.key)
    assert len(ranged["k11", "k15"]["y"]) == 11  # TileDB's answer: three cells short
    for (lo, hi), theirs in ranged.items():
        cut = _cut(everything, ["x", "y"], (slice(None), slice(lo, hi)), "U")
        assert len(cut["y"]) != len(theirs["y"])
        assert_same(canonical(ours.query(order="U").multi_index[:, lo:hi]), canonical(cut))
