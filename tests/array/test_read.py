"""Reading cells: the corpus against its truth, arrays written here by TileDB-Py against TileDB-Py, the
order arithmetic and query conditions against independent computations, and corrupted tiles."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import corpus
import oracle
from oracle import assert_column, assert_same, canonical
from tdbformat.array import order as _order
from tdbformat.array.evaluate import evaluate
from tdbformat.array import open_array
from tdbformat.enums import CombinationOp, Layout, QueryConditionOp
from tdbformat.errors import FormatError, UnsupportedError
from tdbformat.structs.commits import combination, comparison, negate

tiledb = pytest.importorskip("tiledb")

ARRAY_CASES = [c for c in corpus.cases() if corpus.truth(c).get("kind", "array") == "array"]


def _open(case):
    return open_array(corpus.root(case), key=corpus.key(case))


def _read(case, **kw):
    kw.setdefault("order", "C")  # every truth.json was read row-major (its read.layout)
    try:
        return _open(case).read(**kw)
    except UnsupportedError as e:  # a filter codec this installation lacks (e.g. WebP)
        pytest.skip(f"cannot be read here: {e}")


def _element(v, kind):
    if isinstance(v, dict) and "bytes_hex" in v:
        return bytes.fromhex(v["bytes_hex"])
    return v.encode() if kind == "bytes_as_utf8" else v


def _truth_columns(case):
    out = {}
    for name, d in corpus.truth(case)["columns"].items():
        if d["storage"] == "npy":
            values = np.load(case / d["file"], allow_pickle=False)
        else:
            items = json.loads((case / d["file"]).read_text())
            values = np.empty(len(items), object)
            values[:] = [_element(v, d.get("element_kind")) for v in items]
            values = values.reshape(d["shape"])
        valid = np.load(case / d["validity_file"]).astype(bool) if "validity_file" in d else None
        out[name] = (values, valid)
    return out


@pytest.mark.parametrize("case", ARRAY_CASES, ids=corpus.case_id)
def test_corpus_read_equals_truth(case):
    got = _read(case)
    truth = _truth_columns(case)
    assert set(got) == set(truth)
    for name, (values, valid) in truth.items():
        assert_column(got[name], values, valid, name)


def _half_range(case):
    """The first dimension's name and an inclusive range over the lower half of what the truth holds."""
    t = corpus.truth(case)
    name = t["schema"]["domain"]["dims"][0]["name"]
    if t["schema"]["array_type"] == "dense":
        lo, hi = t["read"]["subarray"][0]
        return name, (lo, (lo + hi) // 2)
    values = sorted(set(_truth_columns(case)[name][0].tolist()))
    if not values:
        return name, (0, 0)
    return name, (values[0], values[(len(values) - 1) // 2])


@pytest.mark.parametrize("case", ARRAY_CASES, ids=corpus.case_id)
def test_corpus_subarray_equals_truth(case):
    t = corpus.truth(case)
    name, (lo, hi) = _half_range(case)
    got = _read(case, ranges={name: (lo, hi)})
    truth = _truth_columns(case)
    if t["schema"]["array_type"] == "dense":
        start = t["read"]["subarray"][0][0]
        rows = slice(lo - start, hi - start + 1)
        truth = {k: (v[rows], None if m is None else m[rows]) for k, (v, m) in truth.items()}
    else:
        coord = truth[name][0]
        keep = np.array([lo <= c <= hi for c in coord.tolist()], bool)
        truth = {k: (v[keep], None if m is None else m[keep]) for k, (v, m) in truth.items()}
    for col, (values, valid) in truth.items():
        assert_column(got[col], values, valid, col)


@pytest.mark.parametrize("case", ARRAY_CASES, ids=corpus.case_id)
def test_corpus_fragments(case):
    t = corpus.truth(case)
    frags = _open(case).fragments
    want = {f["uri"].rsplit("/", 1)[-1]: f for f in t.get("fragments", [])}
    got = {f.name: f for f in frags}
    if t["libtiledb_version"].startswith(("2.0.", "2.1.")):
        # fragment info of cores 2.0/2.1 still lists fragments a consolidation marked for vacuuming
        assert set(got) <= set(want)
    else:
        assert set(got) == set(want)
    for name, f in got.items():
        assert list(f.timestamp_range) == want[name]["timestamp_range"]
        if want[name].get("cell_num") is not None:
            assert f.cell_num == want[name]["cell_num"]
            assert f.version == want[name]["version"]


# --------------------------------------------------------------------------- order arithmetic


def test_tiles_in_order_row_and_col_major():
    assert _order.tiles_in_order([0, 1], [1, 2], Layout.ROW_MAJOR).tolist() == [[0, 1], [0, 2], [1, 1], [1, 2]]
    assert _order.tiles_in_order([0, 1], [1, 2], Layout.COL_MAJOR).tolist() == [[0, 1], [1, 1], [0, 2], [1, 2]]


def test_as_tile_cell_orders():
    cells = np.arange(6)
    assert _order.as_tile(cells, [2, 3], Layout.ROW_MAJOR)[1, 0] == 3
    assert _order.as_tile(cells, [2, 3], Layout.COL_MAJOR)[1, 0] == 1


@given(st.lists(st.tuples(st.integers(0, 19), st.integers(0, 19)), min_size=1, max_size=50))
@settings(max_examples=50, deadline=None)
def test_order_cells_against_python_sort(points):
    xs, ys = (np.array(c, np.int64) for c in zip(*points))
    row = _order.order_cells([xs, ys], Layout.ROW_MAJOR)
    assert [points[i] for i in row] == sorted(points)
    col = _order.order_cells([xs, ys], Layout.COL_MAJOR)
    assert [points[i] for i in col] == sorted(points, key=lambda p: (p[1], p[0]))
    glob = _order.order_cells([xs, ys], Layout.GLOBAL_ORDER, dom_lo=[0, 0], extents=[5, 7],
                              tile_order=Layout.ROW_MAJOR, cell_order=Layout.COL_MAJOR)
    key = lambda p: (p[0] // 5, p[1] // 7, p[1], p[0])  # noqa: E731
    assert [key(points[i]) for i in glob] == sorted(map(key, points))


# --------------------------------------------------------------------------- query conditions


def test_negated_condition_keeps_the_rest():
    a = np.array([1, 600, 500, 501], np.int32)
    s = np.array([b"x", b"y", b"z", b"y"], object)
    cond = combination(CombinationOp.OR, comparison("a", QueryConditionOp.GT, np.int32(500).tobytes()),
                       comparison("s", QueryConditionOp.IN, b"xz", offsets=np.array([0, 1], np.uint64)))
    cols = {"a": a, "s": s}
    assert evaluate(cond, cols, {}, 4).tolist() == [True, True, True, True]
    assert evaluate(negate(cond), cols, {}, 4).tolist() == [False, False, False, False]
    assert evaluate(negate(comparison("a", QueryConditionOp.GT, np.int32(500).tobytes())), cols, {}, 4).tolist() \
        == [True, False, True, False]


def test_null_comparisons():
    a = np.array([1, 2, 3])
    valid = np.array([True, False, True])
    assert evaluate(comparison("a", QueryConditionOp.EQ, b""), {"a": a}, {"a": valid}, 3).tolist() == [False, True, False]
    assert evaluate(comparison("a", QueryConditionOp.GE, np.int64(1).tobytes()), {"a": a}, {"a": valid},
                    3).tolist() == [True, False, True]


# --------------------------------------------------------------------------- TileDB-Py differential


def _py_read(uri, sparse, ranges=None, order="C"):
    with tiledb.open(uri) as A:
        if sparse and order is None:  # TileDB-Py's default read
            return A[:]
        if sparse:
            return A.query(order=order).multi_index[tuple(slice(*ranges[d.name]) if ranges and d.name in ranges
                                                           else slice(None) for d in A.schema.domain)]
        return A[:]


_DTYPES = ["int8", "uint16", "int32", "int64", "float32", "float64", "ascii", "utf8"]


@st.composite
def _array_spec(draw):
    sparse = draw(st.booleans())
    ndim = draw(st.integers(1, 2))
    sizes = [draw(st.integers(4, 12)) for _ in range(ndim)]
    dims = [(f"d{i}", size, draw(st.integers(1, size))) for i, size in enumerate(sizes)]
    # TileDB-Py's dense writes take no masked arrays: nullable attributes only in sparse arrays
    attrs = [(f"a{i}", draw(st.sampled_from(_DTYPES)), sparse and draw(st.booleans()))
             for i in range(draw(st.integers(1, 3)))]
    return dict(sparse=sparse, dims=dims, attrs=attrs, dups=sparse and draw(st.booleans()),
                cell_order=draw(st.sampled_from(["row-major", "col-major"])),
                tile_order=draw(st.sampled_from(["row-major", "col-major"])),
                writes=draw(st.integers(1, 3)), seed=draw(st.integers(0, 2**16)))


def _make(uri, spec):
    dims = [tiledb.Dim(n, domain=(1, size), tile=tile, dtype=np.int32) for n, size, tile in spec["dims"]]
    attrs = []
    for name, dt, nullable in spec["attrs"]:
        kind = {"ascii": "ascii", "utf8": str}.get(dt, dt)
        attrs.append(tiledb.Attr(name, dtype=kind, var=dt in ("ascii", "utf8"), nullable=nullable,
                                 filters=[tiledb.ZstdFilter()]))
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=spec["sparse"],
                                cell_order=spec["cell_order"], tile_order=spec["tile_order"],
                                allows_duplicates=spec["dups"], capacity=4)
    tiledb.Array.create(uri, schema)
    rng = np.random.default_rng(spec["seed"])
    for w in range(spec["writes"]):
        if spec["sparse"]:
            shape = [size for _, size, _ in spec["dims"]]
            n = int(rng.integers(1, min(20, int(np.prod(shape))) + 1))
            cells = rng.choice(int(np.prod(shape)), n, replace=spec["dups"])  # one write has unique cells
            coords = [(c + 1).astype(np.int32) for c in np.unravel_index(cells, shape)]
        else:
            box = [sorted(rng.integers(1, size + 1, 2)) for _, size, _ in spec["dims"]]
            if len(box) > 1:  # TileDB-Py refuses 2-D blocks with a unit axis after a var attribute as
                box = [[a - (a == b == size), b + (a == b < size)]  # "mixed C and Fortran array layouts"
                       for (a, b), (_, size, _) in zip(box, spec["dims"])]
            n = int(np.prod([b - a + 1 for a, b in box]))
        data = {}
        for name, dt, nullable in spec["attrs"]:
            if dt in ("ascii", "utf8"):
                vals = np.array([("é" if dt == "utf8" else "s") * int(k) + str(w) for k in rng.integers(0, 4, n)],
                                object)
                if dt == "ascii":
                    vals = np.array([v.encode() for v in vals], object)
            else:
                vals = (rng.random(n) * 100).astype(dt)
            data[name] = (np.ma.masked_array(vals, mask=rng.random(n) < 0.3) if nullable and dt not in ("ascii", "utf8")
                          else vals)
        with tiledb.open(uri, "w", timestamp=w + 1) as A:
            if spec["sparse"]:
                A[tuple(coords)] = {k: np.ma.getdata(v) for k, v in data.items()} if not any(
                    isinstance(v, np.ma.MaskedArray) for v in data.values()) else data
            else:
                shape = tuple(b - a + 1 for a, b in box)
                A[tuple(slice(int(a), int(b) + 1) for a, b in box)] = {k: v.reshape(shape) for k, v in data.items()}


@given(_array_spec())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_arrays_equal_tiledb_py(tmp_path_factory, spec):
    uri = str(tmp_path_factory.mktemp("arr") / "a")
    _make(uri, spec)
    canon = canonical if spec["dups"] else dict
    assert_same(canon(open_array(uri).read(order="C")), canon(_py_read(uri, spec["sparse"])))
    # the default order is TileDB-Py's A[:] exactly, duplicates included (no canonical sort)
    assert_same(open_array(uri).read(), _py_read(uri, spec["sparse"], order=None))
    if spec["sparse"]:
        ranges = {"d0": (2, spec["dims"][0][1] - 1)}
        for order in ("C", "U"):
            got = open_array(uri).read(ranges=ranges, order=order)
            want = _py_read(uri, True, ranges, order)  # multi_index slices are inclusive
            assert_same(got, want) if order == "U" else assert_same(canon(got), canon(want))


def test_sparse_global_and_timestamp_reads_equal_tiledb_py(tmp_path):
    uri = str(tmp_path / "g")
    spec = dict(sparse=True, dims=[("d0", 30, 4), ("d1", 30, 7)], attrs=[("a0", "int64", False)], dups=False,
                cell_order="col-major", tile_order="row-major", writes=3, seed=7)
    _make(uri, spec)
    with tiledb.open(uri) as A:
        want = A.query(order="G")[:]
    assert_same(open_array(uri).read(order="G"), want)
    with tiledb.open(uri, timestamp=2) as A:
        want = A.query(order="C")[:]
    assert_same(open_array(uri).read(timestamp=2, order="C"), want)


# --------------------------------------------------------------------------- corruption


def test_corrupted_tile_names_fragment_attribute_tile_and_offset(tmp_path):
    case = next(c for c in ARRAY_CASES if c.name == "filter_zstd")
    dst = tmp_path / "a"
    shutil.copytree(corpus.root(case), dst)
    arr = open_array(dst)
    frag = arr.fragments[-1]
    data_file = frag.path / "a0.tdb"
    raw = bytearray(data_file.read_bytes())
    tile1 = int(frag.metadata.tile_offsets[0][1])
    raw[tile1 + 30:tile1 + 40] = bytes(b ^ 0xFF for b in raw[tile1 + 30:tile1 + 40])
    data_file.write_bytes(bytes(raw))
    with pytest.raises(FormatError) as err:
        open_array(dst).read()
    msg = str(err.value)
    assert frag.name in msg and "a" in msg and "tile 1" in msg and f"byte offset {tile1}" in msg
    # another array is unaffected
    other = next(c for c in ARRAY_CASES if c.name == "filter_gzip")
    assert set(_read(other)) == set(corpus.truth(other)["columns"])


def test_deletes_and_consolidation_with_timestamps_equal_tiledb_py(tmp_path):
    uri = str(tmp_path / "d")
    spec = dict(sparse=True, dims=[("d0", 40, 5)], attrs=[("a0", "int32", False), ("a1", "utf8", False)],
                dups=False, cell_order="row-major", tile_order="row-major", writes=3, seed=3)
    _make(uri, spec)
    with tiledb.open(uri, "d", timestamp=4) as A:
        A.query(cond="a0 > 50").submit()
    config = tiledb.Config({"sm.consolidation.with_timestamps": "true", "sm.consolidation.timestamp_end": "3"})
    tiledb.consolidate(uri, config=config)
    for ts in (1, 2, 3, 4):
        with tiledb.open(uri, timestamp=ts) as A:
            want = A.query(order="C")[:]
        assert_same(open_array(uri).read(timestamp=ts), want)


# --------------------------------------------------------------------------- schema evolution


@pytest.mark.parametrize("sparse", [False, True])
def test_evolved_schema_reads_each_fragment_with_its_own_schema(tmp_path, sparse):
    uri = str(tmp_path / "e")
    dim = tiledb.Dim("d", domain=(1, 20), tile=4, dtype=np.int32)
    schema = tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=sparse,
                                attrs=[tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str, var=True)])
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w", timestamp=1) as A:
        if sparse:
            A[np.arange(1, 21, 2, dtype=np.int32)] = {"a": np.arange(10, dtype=np.int32),
                                                      "s": np.array(["x" * k for k in range(10)], object)}
        else:
            A[1:21] = {"a": np.arange(20, dtype=np.int32), "s": np.array(["x" * (k % 5) for k in range(20)], object)}
    evolution = tiledb.ArraySchemaEvolution()
    evolution.add_attribute(tiledb.Attr("b", dtype=np.float64, fill=1.5))
    evolution.add_attribute(tiledb.Attr("t", dtype=str, var=True))
    evolution.drop_attribute("s")
    evolution.timestamp(2)
    evolution.array_evolve(uri)
    with tiledb.open(uri, "w", timestamp=3) as A:
        values = {"a": np.arange(100, 106, dtype=np.int32), "b": np.linspace(0, 1, 6),
                  "t": np.array(["new"] * 6, object)}
        if sparse:
            A[np.arange(5, 11, dtype=np.int32)] = values
        else:
            A[5:11] = values
    arr = open_array(uri)
    assert len(arr.schemas) == 2
    assert [f.schema is arr.schemas[0][1] for f in arr.fragments] == [True, False]
    for ts in (1, 2, 3):  # TileDB opens with the schema in force at the timestamp
        with tiledb.open(uri, timestamp=ts) as A:
            want = A.query(order="C")[:] if sparse else A[:]
        got = arr.read(timestamp=ts)
        assert set(got) == set(want)
        assert_same(got, want)


@pytest.mark.parametrize("version", [5, 9, 10, 14, 19, 22])
@pytest.mark.parametrize("sparse", [False, True])
def test_arrays_of_every_version_read_after_tiledb_evolves_them(tmp_path, sparse, version):
    """An array at an old format version (converted from TileDB-Py's), then evolved by TileDB-Py, keeps the
    old schema file beside TileDB's new one: their dimensions and orders agree (they must: the schema-
    evolution check), and the read equals the data written plus the new attribute's fill. TileDB-Py itself
    reads v10+ back (it fails on the v5-9 ones: bad_alloc, or a crash), so there it is compared too."""
    import tdbformat
    src, uri = str(tmp_path / "src"), str(tmp_path / f"v{version}")
    ctx = oracle.tiledb_ctx()
    dims = ([tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64, ctx=ctx),
             tiledb.Dim("y", domain=(0.0, 100.0), tile=10.0, dtype=np.float64, ctx=ctx)] if sparse else
            [tiledb.Dim("r", domain=(1, 8), tile=4, dtype=np.int32, ctx=ctx)])
    tiledb.Array.create(src, tiledb.ArraySchema(domain=tiledb.Domain(*dims, ctx=ctx), sparse=sparse, ctx=ctx,
                                                attrs=[tiledb.Attr("a", dtype=np.int32, ctx=ctx)]))
    with tiledb.open(src, "w", ctx=ctx) as A:
        if sparse:
            A[np.arange(5), np.arange(5.0)] = np.arange(5, dtype=np.int32)
        else:
            A[:] = np.arange(8, dtype=np.int32)
    tdbformat.convert(src, uri, version=version)
    evolution = tiledb.ArraySchemaEvolution(ctx)
    evolution.add_attribute(tiledb.Attr("b", dtype=np.float64, ctx=ctx))
    evolution.array_evolve(uri)
    arr = open_array(uri)
    assert len(arr.schemas) >= 2
    got = arr.read(order="C")
    n = 5 if sparse else 8
    assert got["a"].tolist() == list(range(n)) and np.isnan(got["b"]).all() and len(got["b"]) == n
    if version >= 10:
        with tiledb.open(uri, ctx=ctx) as A:
            assert_same(got, A.query(order="C")[:] if sparse else A[:])


def test_sparse_fragments_in_dense_array_equal_tiledb_py(tmp_path):
    """Old TileDB wrote unordered writes to dense arrays as sparse fragments. TileDB 2.30 can no longer write
    them but still reads them, so they are made by moving a sparse array's fragments into a dense array of the
    same domain and attributes, under a copy of the dense schema named as the fragments' schema."""
    dense, sparse = tmp_path / "dense", tmp_path / "sparse"
    for uri, is_sparse in ((dense, False), (sparse, True)):
        dims = [tiledb.Dim("r", domain=(1, 8), tile=4, dtype=np.int32),
                tiledb.Dim("c", domain=(1, 6), tile=3, dtype=np.int32)]
        attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("s", dtype=str, var=True)]
        tiledb.Array.create(str(uri), tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=is_sparse))

    def write(uri, ts, where, a, s):
        with tiledb.open(str(uri), "w", timestamp=ts) as A:
            A[where] = {"a": np.asarray(a, np.int32), "s": np.asarray(s, object)}

    write(dense, 1, (slice(1, 9), slice(1, 7)), np.arange(48).reshape(8, 6),
          np.array([f"d{i}" for i in range(48)], object).reshape(8, 6))
    rows, cols = np.array([2, 5, 8], np.int32), np.array([3, 1, 6], np.int32)
    write(sparse, 2, (rows, cols), [-1, -2, -3], ["x", "yy", "zzz"])  # one tile, MBR rows 2-8
    write(dense, 3, (slice(4, 6), slice(1, 3)), np.full((2, 2), 7), np.full((2, 2), "late", object))
    write(sparse, 4, (rows[:1] - 1, cols[:1] - 1), [-4], ["w"])  # MBR (1, 2), covered by the next write
    write(dense, 5, (slice(1, 4), slice(1, 4)), np.full((3, 3), 9), np.full((3, 3), "last", object))
    (dense_schema,) = (p for p in (dense / "__schema").iterdir() if p.is_file())
    (sparse_schema,) = (p for p in (sparse / "__schema").iterdir() if p.is_file())
    shutil.copy(dense_schema, dense / "__schema" / sparse_schema.name)
    for sub in ("__fragments", "__commits"):
        for p in (sparse / sub).iterdir():
            (shutil.copytree if p.is_dir() else shutil.copy)(p, dense / sub / p.name)
    arr = open_array(dense)
    assert [f.dense for f in arr.fragments] == [True, False, True, False, True]
    with tiledb.open(str(dense)) as A:
        want = A[:]
        assert_same(arr.read(), want)
    # TileDB 2.30 leaves a sparse tile out of a subarray read that does not contain its whole MBR (A[2:6, 1:4]
    # shows neither -1 nor -2; DISCREPANCIES.md); tdbformat reads a subarray as that part of the full read
    assert_same(arr.read(ranges={"r": (2, 5), "c": (1, 3)}), {k: v[1:5, 0:3] for k, v in want.items()})
    # the rules, as TileDB applied them: sparse cells beat a later dense write unless it covers their tile
    assert want["a"][1, 2] == -1 and want["a"][4, 0] == -2 and want["a"][0, 1] == 9


def test_dense_read_covers_the_current_domain(tmp_path):
    uri = str(tmp_path / "cd")
    ctx = tiledb.default_ctx()
    dom = tiledb.Domain(tiledb.Dim("r", domain=(0, 99), tile=10, dtype=np.int64),
                        tiledb.Dim("c", domain=(0, 49), tile=10, dtype=np.int64))
    schema = tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.int32)])
    rect = tiledb.NDRectangle(ctx, dom)
    rect.set_range(0, 0, 19)
    rect.set_range(1, 5, 24)
    current = tiledb.CurrentDomain(ctx)
    current.set_ndrectangle(rect)
    schema.set_current_domain(current)
    tiledb.Array.create(uri, schema)
    with tiledb.open(uri, "w") as A:
        A[0:20, 5:15] = np.arange(200, dtype=np.int32).reshape(20, 10)
    with tiledb.open(uri) as A:
        want = A[:]
    got = open_array(uri).read()
    assert got["a"].shape == want["a"].shape == (20, 20)
    assert_same(got, want)


def test_negative_zero_is_its_own_coordinate(tmp_path):
    uri = str(tmp_path / "z")
    dim = tiledb.Dim("x", domain=(-10.0, 10.0), tile=5.0, dtype=np.float64)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True,
                                                attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for ts, (x, a) in enumerate([([-0.0, 1.0], [1, 2]), ([0.0, 1.0], [3, 4])], start=1):
        with tiledb.open(uri, "w", timestamp=ts) as A:
            A[np.array(x)] = np.array(a, np.int32)
    with tiledb.open(uri) as A:
        for order in ("C", "G"):
            want = A.query(order=order)[:]
            got = open_array(uri).read(order=order)
            assert np.signbit(got["x"]).tolist() == np.signbit(want["x"]).tolist()
            assert_same(got, want)


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_dense_var_numeric_fill_cells_are_arrays_as_tiledb_py_gives(tmp_path, dtype):
    """An unwritten cell of a var-sized numeric attribute reads as a one-value array of the fill value, as in
    TileDB-Py, not the bare value (numpy broadcast the fill array into every cell; fuzz case 700642 found it
    when the fill had no values)."""
    import tiledb

    from oracle import tiledb_ctx
    from tdbformat import open_array
    uri, ctx = str(tmp_path / "a"), tiledb_ctx()
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 5), tile=6, dtype=np.int64, ctx=ctx), ctx=ctx)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, ctx=ctx, attrs=[
        tiledb.Attr("a", dtype=dtype, var=True, ctx=ctx)]), ctx=ctx)
    with tiledb.open(uri, "w", ctx=ctx) as A:
        A[1:3] = {"a": np.array([np.array([1, 2], dtype), np.array([3], dtype)], dtype=object)}
    with tiledb.open(uri, ctx=ctx) as A:
        want = A[:]["a"]
    got = open_array(uri).read()["a"]
    assert len(got) == len(want) == 6
    for g, w in zip(got, want):
        assert isinstance(g, np.ndarray) and g.dtype == w.dtype and g.tobytes() == w.tobytes(), (g, w)  # NaN fill


@pytest.mark.parametrize("shape,tile,cell_order", [((40,), (8,), "row-major"), ((6, 8), (2, 8), "row-major"),
                                                   ((6, 8), (2, 8), "col-major"), ((6, 8), (3, 4), "row-major")])
def test_dense_tiles_decoded_into_the_result_equal_tiledb_py(tmp_path, monkeypatch, shape, tile, cell_order):
    """A whole tile whose cells are contiguous in the result (1-D, or row-major tiles of whole rows) decodes
    straight into it; partial tiles, col-major cells and tiles of part of a row are copied. Nullable and
    plain attributes, three overlapping fragments, every timestamp and a box: equal to TileDB-Py, and the
    in-place path is taken exactly where the cells are contiguous."""
    from tdbformat.array import dense
    uri, ctx = str(tmp_path / "d"), oracle.tiledb_ctx()
    dims = [tiledb.Dim(f"d{j}", domain=(0, n - 1), tile=t, dtype=np.int64, ctx=ctx) for j, (n, t) in
            enumerate(zip(shape, tile))]
    tiledb.Array.create(uri, tiledb.ArraySchema(
        domain=tiledb.Domain(*dims, ctx=ctx), cell_order=cell_order, ctx=ctx,
        attrs=[tiledb.Attr("a", dtype=np.int32, ctx=ctx), tiledb.Attr("n", dtype=np.float64, nullable=True, ctx=ctx)]))
    rng = np.random.default_rng(1)
    boxes = [tuple(slice(0, n) for n in shape), tuple(slice(1, n - 1) for n in shape),
             tuple(slice(0, n // 2) for n in shape)]
    for ts, box in enumerate(boxes, 1):
        size = [b.stop - b.start for b in box]
        with tiledb.open(uri, "w", timestamp=ts, ctx=ctx) as A:
            A[box] = {"a": rng.integers(0, 1000, size, dtype=np.int32),
                      "n": np.ma.masked_array(rng.random(size), rng.random(size) < 0.3)}
    placed = []
    slot = dense._Result.slot
    # the tile-by-tile path (small tiles otherwise go in batches: tests/array/test_dense_tiles.py)
    monkeypatch.setattr(dense, "place_batched", lambda arr, frag, g, wanted, *rest: list(wanted))
    monkeypatch.setattr(dense._Result, "slot", lambda self, a, at: placed.append(slot(self, a, at)) or placed[-1])
    for ts in (1, 2, 3):
        with tiledb.open(uri, timestamp=ts, ctx=ctx) as A:
            assert_same(open_array(uri).read(timestamp=ts), A[:])
            ranges = {"d0": (1, shape[0] - 2)}
            assert_same(open_array(uri).read(timestamp=ts, ranges=ranges), A[1:shape[0] - 1])
    contiguous = len(shape) == 1 or (cell_order == "row-major" and tile[1] == shape[1])
    assert any(p is not None for p in placed) == contiguous


def _added_back(tmp_path, sparse, before, after):
    """An array whose attribute ``a`` (made by ``before(ctx)``) holds cells 1-5 written at timestamp 1, is
    dropped at 2 and added back as ``after(ctx)`` at 3, all by TileDB-Py: ``(uri, ctx, the cells of a)``."""
    uri, ctx = str(tmp_path / "e"), oracle.tiledb_ctx()
    dim = tiledb.Dim("d", domain=(1, 10), tile=5, dtype=np.int64, ctx=ctx)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim, ctx=ctx), sparse=sparse, ctx=ctx,
                                                attrs=[before(ctx), tiledb.Attr("b", dtype=np.int32, ctx=ctx)]))
    values = {"a": np.arange(5, dtype=np.int32) * 300, "b": np.arange(5, dtype=np.int32)}
    with tiledb.open(uri, "w", timestamp=1, ctx=ctx) as A:
        if sparse:
            A[np.arange(1, 6)] = values
        else:
            A[1:6] = values
    for ts, change in ((2, lambda se: se.drop_attribute("a")), (3, lambda se: se.add_attribute(after(ctx)))):
        se = tiledb.ArraySchemaEvolution(ctx)
        change(se)
        se.timestamp(ts)
        se.array_evolve(uri)
    return uri, ctx, values["a"]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("nullable_before", [False, True])
def test_attribute_added_back_with_other_nullability_reads_as_tiledb_py(tmp_path, sparse, nullable_before):
    """An attribute dropped and added back with the other nullability. Added back nullable (what fuzz case
    78577 of seed 20261125 made with a flipped flag), the old fragment's cells have no validity: TileDB-Py
    fails, and the read is a FormatError naming the fragment and the attribute, where it raised numpy's
    ValueError. Added back not nullable, TileDB-Py gives the old cells' values, and so do we."""
    uri, ctx, _ = _added_back(tmp_path, sparse,
                              lambda ctx: tiledb.Attr("a", dtype=np.int32, nullable=nullable_before, ctx=ctx),
                              lambda ctx: tiledb.Attr("a", dtype=np.int32, nullable=not nullable_before, ctx=ctx))
    ranges = None if sparse else {"d": (1, 5)}
    if nullable_before:
        with tiledb.open(uri, timestamp=4, ctx=ctx) as A:
            assert_same(open_array(uri).read(timestamp=4, ranges=ranges, order="C"),
                        A.query(order="C")[:] if sparse else A[1:6])
        return
    with pytest.raises(tiledb.TileDBError):
        with tiledb.open(uri, timestamp=4, ctx=ctx) as A:
            A[:]
    with pytest.raises(FormatError) as err:
        open_array(uri).read(timestamp=4, ranges=ranges)
    assert "attribute a is nullable in the schema read with but not in the one it was written with" in str(err.value)
    assert open_array(uri).read(timestamp=2, ranges=ranges)["b"].tolist() == list(range(5))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype, written_as", [(np.int8, "INT8, 1 per cell"), (np.float64, "FLOAT64, 1 per cell"),
                                               (str, "STRING_UTF8, var-sized")])
def test_attribute_added_back_with_another_type_is_a_format_error(tmp_path, sparse, dtype, written_as):
    """Added back with another type, TileDB decodes the old fragment's int32 tiles as the new type: its
    bytes reinterpreted, or read past (DISCREPANCIES.md). No value is right; the read names both types,
    where it gave the int32 values under a float64 schema (sparse) or cast them to int8, wrapping (dense).
    Before the evolution, both read the values written."""
    uri, ctx, written = _added_back(tmp_path, sparse, lambda ctx: tiledb.Attr("a", dtype=np.int32, ctx=ctx),
                                    lambda ctx: tiledb.Attr("a", dtype=dtype, var=dtype is str, ctx=ctx))
    ranges = None if sparse else {"d": (1, 5)}
    if dtype is np.int8:  # the one type TileDB-Py reads without running past the tile
        with tiledb.open(uri, timestamp=4, ctx=ctx) as A:
            assert not np.array_equal(A.query(order="C")[:]["a"] if sparse else A[1:6]["a"], written.astype(np.int8))
    with pytest.raises(FormatError) as err:
        open_array(uri).read(timestamp=4, ranges=ranges)
    assert f"attribute a was written as INT32, 1 per cell and the schema read with has {written_as}" in str(err.value)
    with tiledb.open(uri, timestamp=1, ctx=ctx) as A:
        assert (A.query(order="C")[:] if sparse else A[1:6])["a"].tolist() == written.tolist()
    assert open_array(uri).read(timestamp=1, ranges=ranges, order="C")["a"].tolist() == written.tolist()


@pytest.mark.parametrize("sparse", [False, True])
def test_attribute_added_back_with_other_filters_reads_its_own(tmp_path, sparse):
    """Added back with another pipeline, the old fragment's tiles decode by the pipeline they were written
    with, as its schema says. TileDB decodes them with the new one and fails (DISCREPANCIES.md)."""
    uri, ctx, written = _added_back(
        tmp_path, sparse, lambda ctx: tiledb.Attr("a", dtype=np.int32, filters=[tiledb.ZstdFilter()], ctx=ctx),
        lambda ctx: tiledb.Attr("a", dtype=np.int32, ctx=ctx,
                                filters=[tiledb.DoubleDeltaFilter(), tiledb.GzipFilter()]))
    with pytest.raises(tiledb.TileDBError, match="GZIP"):
        with tiledb.open(uri, timestamp=4, ctx=ctx) as A:
            A.query(order="C")[:]
    got = open_array(uri).read(timestamp=4, ranges=None if sparse else {"d": (1, 5)}, order="C")
    assert got["a"].tolist() == written.tolist()


@pytest.mark.parametrize("offsets", [
    ["DoubleDeltaFilter", "BitWidthReductionFilter", "ZstdFilter"],  # tiledbsoma's, and TileDB-Py's examples'
    ["PositiveDeltaFilter", "BitWidthReductionFilter", "LZ4Filter"], ["DeltaFilter", "BitWidthReductionFilter", "ZstdFilter"],
    ["ByteShuffleFilter", "DeltaFilter", "GzipFilter"]])
@pytest.mark.parametrize("sparse", [False, True])
def test_var_strings_read_through_offsets_pipelines_as_tiledb_py(tmp_path, offsets, sparse):
    """Offsets filtered by a stage after another: double delta got bit width reduction's u8 array, and its
    header arithmetic overflowed a u8 scalar (every tiledbsoma dataframe with a string column failed)."""
    uri, ctx = str(tmp_path / "s"), oracle.tiledb_ctx()
    dim = tiledb.Dim("d", domain=(0, 999), tile=250, dtype=np.int64, ctx=ctx)
    tiledb.Array.create(uri, tiledb.ArraySchema(
        domain=tiledb.Domain(dim, ctx=ctx), sparse=sparse, ctx=ctx,
        attrs=[tiledb.Attr("s", dtype=str, var=True, ctx=ctx)],
        offsets_filters=tiledb.FilterList([getattr(tiledb, f)(ctx=ctx) for f in offsets], ctx=ctx)))
    words = np.array([f"cell-{i}" * (i % 4) for i in range(1000)], dtype=object)
    with tiledb.open(uri, "w", ctx=ctx) as A:
        if sparse:
            A[np.arange(1000)] = {"s": words}
        else:
            A[:] = {"s": words}
    with tiledb.open(uri, ctx=ctx) as A:
        want = A.query(order="C")[:]
    assert_same(open_array(uri).query(order="C")[:], want)
    assert want["s"].tolist() == words.tolist()


@pytest.mark.parametrize("cells", [40, 400])  # below and above the Arrow path's 64 cells
def test_var_strings_of_one_nul_read_empty_as_tiledb_py(tmp_path, cells):
    """Consolidating dense writes with gaps fills the gaps of a var string attribute with its fill value,
    one NUL byte, and TileDB-Py reads a cell of one NUL byte as empty (its unpack_buffer): so do we, for
    strings and bytes. We gave "\\x00"."""
    uri, ctx = str(tmp_path / "a"), oracle.tiledb_ctx()
    dim = tiledb.Dim("x", domain=(0, cells - 1), tile=cells // 2, dtype=np.int64, ctx=ctx)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(dim, ctx=ctx), ctx=ctx, attrs=[
        tiledb.Attr("s", dtype=str, var=True, ctx=ctx), tiledb.Attr("b", dtype=bytes, var=True, ctx=ctx)]))
    for t, (lo, hi) in enumerate([(1, cells // 4), (cells // 2, cells - 3)], start=1):
        words = np.array(["\x00" if i % 5 == 0 else f"w{i}" for i in range(hi - lo)], dtype=object)
        with tiledb.open(uri, "w", timestamp=t, ctx=ctx) as A:
            A[lo:hi] = {"s": words, "b": np.array([w.encode() for w in words], dtype=object)}
    tiledb.consolidate(uri, ctx=ctx)
    for ts in (None, 1):
        with tiledb.open(uri, timestamp=ts, ctx=ctx) as A:
            want = A[:]
        assert "" in want["s"].tolist()
        assert_same(open_array(uri, timestamp=ts)[:], want)
