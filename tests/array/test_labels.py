"""Dimension labels both ways, against TileDB-Py (format v18+): arrays TileDB-Py writes (here and in the corpus,
v18-v22) read by label as TileDB-Py reads them; arrays tdbformat creates and writes (v18, v20, v21, v22) read by
label in TileDB-Py as the same writes made by TileDB-Py; v23 (which TileDB-Py cannot open) through convert;
what TileDB-Py refuses, refused; a label read reads only the label tiles it needs."""

from __future__ import annotations

import numpy as np
import pytest
import tiledb

from corpus import CORPUS
from oracle import assert_same
import tdbformat
from tdbformat import open_array, schema as S
from tdbformat.array import RangeError


def _schema(lib):
    dims = [lib.Dim(name="x", domain=(0, 9), tile=5, dtype=np.int32),
            lib.Dim(name="y", domain=(1, 4), tile=2, dtype=np.int32)]
    labels = {0: {"lx": lib.DimLabelSchema("increasing", np.float64, np.int32),
                  "ls": lib.DimLabelSchema("decreasing", "ascii", np.int32)},
              1: {"ly": lib.DimLabelSchema("decreasing", np.int16, np.int32)}}
    return lib.ArraySchema(domain=lib.Domain(*dims), attrs=[lib.Attr(name="a", dtype=np.int64),
                                                            lib.Attr(name="b", dtype=np.float32)], dim_labels=labels)


# two writes: the whole array with every label, then rows 2-4 with new x labels (still in order)
WRITES = [
    (slice(None), {"a": np.arange(40).reshape(10, 4), "b": np.arange(40, dtype=np.float32).reshape(10, 4) / 2,
                   "lx": np.arange(10) * 1.5, "ls": np.array([f"s{9 - i}" for i in range(10)]),
                   "ly": np.array([40, 30, 20, 10], np.int16)}),
    (slice(2, 5), {"a": -np.arange(12).reshape(3, 4), "b": np.zeros((3, 4), np.float32),
                   "lx": np.array([3.5, 4.0, 4.2]), "ls": np.array(["s75", "s65", "s55"])}),
]

# (labels, selection)
SELECTIONS = [
    (["lx"], slice(3.0, 7.5)), (["lx"], slice(-100.0, 100.0)), (["lx"], 4.2), (["lx"], [3.5, 12.0]),
    (["lx"], [(0.0, 1.5), (9.0, 12.0)]), (["lx"], slice(99.0, 150.0)),
    (["lx"], 3.1), (["lx"], slice(5.0, 3.0)), (["lx"], slice(np.nan, 3.0)), (["lx"], slice(None)),
    (["ls"], slice("s3", "s7")), (["ls"], slice("a", "z")), (["ls"], "s65"),
    (["ly"], (slice(2, 3), slice(15, 35))), (["ly"], (slice(None), slice(10, 40))), (["ly"], (1, 30)),
    (["lx", "ly"], (slice(3.0, 9.0), slice(15, 35))), (["ly", "lx"], (slice(3.0, 9.0), slice(15, 35))),
    (["ls", "ly"], (slice("s3", "s7"), [20, (30, 40)])),
    (["lx", "ls"], slice(3.0, 4.0)), (["nope"], 1.0),
]


def _write(lib, uri):
    for i, (sel, data) in enumerate(WRITES):
        with lib.open_array(uri, "w", timestamp=i + 1) if lib is tdbformat else tiledb.open(uri, "w", timestamp=i + 1) as A:
            A[sel] = data


@pytest.fixture(scope="module")
def theirs(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("labels") / "theirs")
    tiledb.Array.create(uri, _schema(tiledb))
    _write(tiledb, uri)
    return uri


def _answer(run):
    try:
        return "read", run()
    except (tiledb.TileDBError, NotImplementedError) as e:
        return "refused", e


def _same_as_tiledb_py(uri, names, sel, ours_uri=None, query=(("attrs", ["b"]), ("dims", ["x"]))):
    """tdbformat's label read of ``ours_uri`` (default ``uri``) equals TileDB-Py's of ``uri``, key order too,
    or both refuse; also through ``query(**query)``."""
    query = dict(query)
    with tiledb.open(uri) as T:
        want = _answer(lambda: T.label_index(names)[sel])
        query_want = _answer(lambda: T.query(**query).label_index(names)[sel])
    A = open_array(ours_uri or uri)
    for (kind, value), run in ((want, lambda: A.label_index(names)[sel]),
                               (query_want, lambda: A.query(**query).label_index(names)[sel])):
        if kind == "read":
            got = run()
            assert list(got) == list(value)
            assert_same(got, value)
        elif isinstance(value, NotImplementedError):
            with pytest.raises(NotImplementedError):
                run()
        elif "nope" in str(value) or "same dimension" in str(value):
            with pytest.raises(ValueError, match="nope" if "nope" in str(value) else "same dimension"):
                run()
        else:
            with pytest.raises(RangeError) as e:
                run()
            for words in ("Range contained no values", "cannot be larger", "NaN"):
                if words in str(value):
                    assert words in str(e.value)


@pytest.mark.parametrize("names,sel", SELECTIONS, ids=[f"{'+'.join(n)}-{i}" for i, (n, _) in enumerate(SELECTIONS)])
def test_tiledb_py_writes_we_read_by_label(theirs, names, sel):
    _same_as_tiledb_py(theirs, names, sel)


@pytest.mark.parametrize("version", [18, 20, 21, 22])
def test_we_write_tiledb_py_reads_by_label(theirs, tmp_path, version):
    uri = str(tmp_path / f"v{version}")
    tdbformat.create(uri, _schema(S), version=version)
    _write(tdbformat, uri)
    assert open_array(uri).schema.version == version
    assert open_array(f"{uri}/__labels/l0").schema.version == version
    with tiledb.open(uri) as T, tiledb.open(theirs) as W:
        assert_same(T[:], W[:])
        for i, name in enumerate(["lx", "ls", "ly"]):  # the label arrays hold what TileDB-Py's hold
            assert T.schema.dim_label(name).uri.endswith(f"__labels/l{i}")
            with tiledb.open(f"{uri}/__labels/l{i}") as L, tiledb.open(f"{theirs}/__labels/l{i}") as M:
                assert_same(L[:], M[:])
    for names, sel in SELECTIONS:  # TileDB-Py reads ours by label as it reads its own, and we read ours alike
        with tiledb.open(uri) as T, tiledb.open(theirs) as W:
            mine, want = _answer(lambda: T.label_index(names)[sel]), _answer(lambda: W.label_index(names)[sel])
        assert mine[0] == want[0], (names, sel)
        if mine[0] == "read":
            assert list(mine[1]) == list(want[1])
            assert_same(mine[1], want[1])
        _same_as_tiledb_py(theirs, names, sel, ours_uri=uri)


def test_an_array_of_labels_is_a_list_of_points(theirs):
    """TileDB-Py means an array of labels as points (``label_ranges_from_selection``) and fails building them
    (``tuple(x, x)``: TypeError; DISCREPANCIES.md); tdbformat reads the points, as the list form reads them."""
    with tiledb.open(theirs) as T:
        with pytest.raises(TypeError):
            T.label_index(["lx"])[np.array([0.0, 13.5])]
        want = T.label_index(["lx"])[[0.0, 13.5]]
    got = open_array(theirs).label_index(["lx"])[np.array([0.0, 13.5])]
    assert list(got) == list(want)
    assert_same(got, want)


CORPUS_LABELS = sorted(CORPUS.glob("v*/dimension_labels/array"))


@pytest.mark.parametrize("array", CORPUS_LABELS, ids=[p.parent.parent.name for p in CORPUS_LABELS])
def test_corpus_arrays_read_by_label(array):
    with tiledb.open(str(array)) as T:
        names = [T.schema.dim_label(lab.name).name for lab in open_array(array).schema.labels]
        with tiledb.open(T.schema.dim_label(names[0]).uri) as L:
            labels = L[:]["label"]
        dim = T.schema.domain.dim(0).name
    assert len(labels) > 3
    for sel in (slice(labels[1], labels[-2]), labels[2], [labels[0], labels[-1]], slice(labels[0], labels[0])):
        _same_as_tiledb_py(str(array), names[:1], sel, query=(("dims", [dim]),))


def test_batches_by_label_are_refused(theirs):
    with tiledb.open(theirs) as T, pytest.raises(tiledb.TileDBError, match="only supported for sparse arrays"):
        T.query(return_incomplete=True).label_index(["lx"])[1.0:2.6]
    with pytest.raises(ValueError, match="only supported for sparse arrays"):
        open_array(theirs).query(return_incomplete=True).label_index(["lx"])[1.0:2.6]


def test_a_label_absent_after_an_overwrite_is_refused(tmp_path):
    """TileDB 2.30 answers 5.0 and 6.0 with the cell of label 4.2 when the labels come from two fragments, and
    refuses them when the same labels are one fragment (DISCREPANCIES.md); tdbformat refuses both, as the
    meaning of a label point says."""
    dims = [tiledb.Dim(name="x", domain=(0, 9), tile=5, dtype=np.int32)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=[tiledb.Attr(name="a", dtype=np.int64)],
                                dim_labels={0: {"lx": tiledb.DimLabelSchema("increasing", np.float64, np.int32)}})
    writes = {"two": [(slice(None), np.arange(10) * 1.5), (slice(2, 5), [3.5, 4.0, 4.2])],
              "one": [(slice(None), [0, 1.5, 3.5, 4.0, 4.2, 7.5, 9, 10.5, 12, 13.5])]}
    for name, steps in writes.items():
        uri = str(tmp_path / name)
        tiledb.Array.create(uri, schema)
        for t, (sel, labels) in enumerate(steps, 1):
            with tiledb.open(uri, "w", timestamp=t) as A:
                A[sel] = {"a": np.arange(len(labels)), "lx": np.asarray(labels, np.float64)}
        with tiledb.open(uri) as T:
            if name == "two":
                assert T.label_index(["lx"])[6.0]["lx"].tolist() == [4.2]  # TileDB's answer
            else:
                with pytest.raises(tiledb.TileDBError, match="Range contained no values"):
                    T.label_index(["lx"])[6.0]
            assert_same(open_array(uri).label_index(["lx"])[0.0:100.0], T.label_index(["lx"])[0.0:100.0])
        for point in (5.0, 6.0, 3.7):
            with pytest.raises(RangeError, match="Range contained no values"):
                open_array(uri).label_index(["lx"])[point]


def test_label_values_out_of_order_are_refused_and_nothing_is_written(theirs, tmp_path):
    uri = str(tmp_path / "ours")
    tdbformat.create(uri, _schema(S), version=22)
    _write(tdbformat, uri)

    def fragments():
        return [len(open_array(p).fragments) for p in (uri, f"{uri}/__labels/l0", f"{uri}/__labels/l1")]
    before = fragments()
    base = {"a": np.zeros((3, 4), np.int64), "b": np.zeros((3, 4), np.float32)}
    with tiledb.open(theirs, "w") as T, pytest.raises(tiledb.TileDBError, match="not in the expected order"):
        T[2:5] = {**base, "lx": np.array([3.5, 3.0, 4.2])}  # TileDB refuses values out of order
    with pytest.raises(ValueError, match="strictly increasing"), open_array(uri, "w") as A:
        A[2:5] = {**base, "lx": np.array([3.5, 3.0, 4.2])}
    with pytest.raises(ValueError, match="strictly decreasing"), open_array(uri, "w") as A:
        A[2:5] = {**base, "ls": np.array(["s7", "s7", "s5"])}
    # in order, but past the label written beside them (7.5 at x = 5): TileDB takes it, then reads nothing by label
    with pytest.raises(ValueError, match="beside them"), open_array(uri, "w") as A:
        A[2:5] = {**base, "lx": np.array([3.5, 4.0, 100.0])}
    with pytest.raises(ValueError, match="one value per index"), open_array(uri, "w") as A:
        A[2:5] = {**base, "lx": np.array([3.5, 4.0])}
    assert fragments() == before


def test_tiledb_py_reads_nothing_by_a_label_out_of_order(tmp_path):
    """Why the write above is refused: TileDB-Py takes it, and every read by that label fails afterwards."""
    uri = str(tmp_path / "broken")
    tiledb.Array.create(uri, _schema(tiledb))
    _write(tiledb, uri)
    with tiledb.open(uri, "w", timestamp=3) as T:
        T[2:5] = {"a": np.zeros((3, 4), np.int64), "b": np.zeros((3, 4), np.float32), "lx": np.array([3.5, 4.0, 100.0])}
    with tiledb.open(uri) as T, pytest.raises(tiledb.TileDBError, match="out of order"):
        T.label_index(["lx"])[3.0:4.0]
    with pytest.raises(tdbformat.FormatError, match="not in increasing order"):
        open_array(uri).label_index(["lx"])[3.0:4.0]


def test_labels_need_version_18_and_sparse_arrays_take_consecutive_points(tmp_path):
    with pytest.raises(ValueError, match="dimension labels: needs format version 18 or later, not v17"):
        tdbformat.create(str(tmp_path / "v17"), _schema(S), version=17)
    assert not (tmp_path / "v17").exists()

    def sparse_schema(lib):
        dims = [lib.Dim(name="x", domain=(0, 9), tile=5, dtype=np.int32)]
        return lib.ArraySchema(domain=lib.Domain(*dims), attrs=[lib.Attr(name="a", dtype=np.int64)], sparse=True,
                               dim_labels={0: {"lx": lib.DimLabelSchema("increasing", np.float64, np.int32)}})
    tiledb.Array.create(str(tmp_path / "theirs"), sparse_schema(tiledb))
    tdbformat.create(str(tmp_path / "ours"), sparse_schema(S), version=22)
    for coords, labels, theirs, ours in [([5, 2, 7], [1.0, 2.0, 3.0], "consecutive points", "consecutive points"),
                                         ([3, 4], [1.0, 2.0, 3.0], "Invalid number of cells", "one value per index")]:
        with tiledb.open(str(tmp_path / "theirs"), "w") as T, pytest.raises(tiledb.TileDBError, match=theirs):
            T[np.array(coords, np.int32)] = {"a": np.arange(len(coords)), "lx": np.array(labels)}
        with pytest.raises(ValueError, match=ours), open_array(str(tmp_path / "ours"), "w") as A:
            A[np.array(coords, np.int32)] = {"a": np.arange(len(coords)), "lx": np.array(labels)}
    for name, lib in (("theirs", tiledb), ("ours", tdbformat)):  # consecutive points: the labels go there
        with (tiledb.open if lib is tiledb else open_array)(str(tmp_path / name), "w", timestamp=1) as A:
            A[np.array([1, 2, 3], np.int32)] = {"a": np.array([1, 2, 3]), "lx": np.array([1.0, 2.0, 2.5])}
    with tiledb.open(str(tmp_path / "ours/__labels/l0")) as L, tiledb.open(str(tmp_path / "theirs/__labels/l0")) as M:
        assert L.nonempty_domain() == M.nonempty_domain() == ((1, 3),)
        assert_same(L[1:4], M[1:4])
    with tiledb.open(str(tmp_path / "ours")) as T, pytest.raises(NotImplementedError, match="sparse arrays by label"):
        T.label_index(["lx"])[1.0:2.0]
    with pytest.raises(NotImplementedError, match="sparse arrays by label"):
        open_array(str(tmp_path / "ours")).label_index(["lx"])[1.0:2.0]


def test_a_hostile_label_is_a_format_error(tmp_path):
    """Found by the fuzzer: a label array whose schema is another array's, a label reference of another type than
    its array's, a labelled var-sized dimension and a label of a dimension that does not exist raise FormatError
    (they raised ValueError, TypeError and IndexError)."""
    from tdbformat.structs.array_schema import ArraySchema
    uri = tmp_path / "ours"
    tdbformat.create(str(uri), _schema(S), version=22)
    _write(tdbformat, str(uri))
    [main] = [p for p in (uri / "__schema").iterdir() if p.is_file()]
    [label] = [p for p in (uri / "__labels" / "l0" / "__schema").iterdir() if p.is_file()]
    orig = label.read_bytes()
    label.write_bytes(main.read_bytes())
    with pytest.raises(tdbformat.FormatError, match="attribute 'label' of the label's type"):
        open_array(uri).label_index(["lx"])[1.0:2.0]
    with pytest.raises(tdbformat.FormatError, match="attribute 'label'"), open_array(uri, "w") as A:
        A[2:5] = {"a": np.zeros((3, 4), np.int64), "b": np.zeros((3, 4), np.float32), "lx": [3.5, 4.0, 4.2]}
    parsed = ArraySchema.parse(main.read_bytes())
    parsed.labels[0].label_cell_val_num = 2**32 - 1  # the reference says var-sized, its array holds float64
    main.write_bytes(ArraySchema.build(parsed, version=22))
    label.write_bytes(orig)
    with pytest.raises(tdbformat.FormatError, match="of the label's type"):
        open_array(uri).label_index(["lx"])[b"a":b"b"]
    parsed.labels[0].label_cell_val_num = 1
    parsed.domain.dimensions[1].cell_val_num = 2**32 - 1  # a var-sized dimension labelled (and in a dense array)
    main.write_bytes(ArraySchema.build(parsed, version=22))
    with pytest.raises(tdbformat.FormatError, match="dimension y is var-sized"):
        open_array(uri).label_index(["ly"])[1:2]
    parsed.domain.dimensions[1].cell_val_num = 1
    parsed.labels[2].dim_index = 7
    main.write_bytes(ArraySchema.build(parsed, version=22))
    with pytest.raises(tdbformat.FormatError, match="dimension 7 of 2 does not exist"):
        open_array(uri).label_index(["ly"])[1:2]
    with pytest.raises(tdbformat.FormatError, match="dimension 7 of 2 does not exist"), open_array(uri, "w") as A:
        A[2:5] = {"a": np.zeros((3, 4), np.int64), "b": np.zeros((3, 4), np.float32)}


def test_encrypted_labels_both_ways(tmp_path):
    """The label arrays of an encrypted array are encrypted with its key, by either side."""
    from oracle import tiledb_ctx
    key = "0123456789abcdeF0123456789abcdeF"
    ctx = tiledb_ctx(key)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    tiledb.Array.create(theirs, _schema(tiledb), ctx=ctx)
    tdbformat.create(ours, _schema(S), version=22, key=key)
    for i, (sel, data) in enumerate(WRITES):
        with tiledb.open(theirs, "w", timestamp=i + 1, ctx=ctx) as T, \
                open_array(ours, "w", timestamp=i + 1, key=key) as A:
            T[sel] = data
            A[sel] = data
    for names, sel in ((["lx"], slice(3.0, 7.5)), (["ls", "ly"], (slice("s3", "s7"), slice(15, 35)))):
        with tiledb.open(theirs, ctx=ctx) as T, tiledb.open(ours, ctx=ctx) as M:
            want = T.label_index(names)[sel]
            assert_same(M.label_index(names)[sel], want)
        got = open_array(theirs, key=key).label_index(names)[sel]
        assert list(got) == list(want)
        assert_same(got, want)
    with pytest.raises(tdbformat.EncryptionError):
        open_array(f"{ours}/__labels/l0")


def _many_tiles(ours: bool, uri):
    """1,000 labels in tiles of 10 (100 tiles per label array), then 300 of them overwritten (two fragments)."""
    lib = S if ours else tiledb
    dims = [lib.Dim(name="x", domain=(0, 999), tile=500, dtype=np.int32)]
    schema = lib.ArraySchema(domain=lib.Domain(*dims), attrs=[lib.Attr(name="a", dtype=np.int64)], dim_labels={
        0: {"lf": lib.DimLabelSchema("increasing", np.float64, np.int32, dim_tile=10),
            "ls": lib.DimLabelSchema("decreasing", "ascii", np.int32, dim_tile=10)}})
    tdbformat.create(uri, schema, version=22) if ours else tiledb.Array.create(uri, schema)
    writes = [(slice(0, 1000), np.arange(1000) * 2.0, [f"s{9999 - 2 * i:05d}" for i in range(1000)]),
              (slice(405, 705), np.arange(810, 1410, 2) + 0.5, [f"s{9188 - 2 * i:05d}" for i in range(300)])]
    for t, (sel, lf, ls) in enumerate(writes, 1):
        with open_array(uri, "w", timestamp=t) if ours else tiledb.open(uri, "w", timestamp=t) as A:
            A[sel] = {"a": np.arange(sel.stop - sel.start), "lf": lf, "ls": np.array(ls)}


@pytest.fixture(scope="module")
def many_tiles(tmp_path_factory):
    root = tmp_path_factory.mktemp("many_tiles")
    for ours in (False, True):
        _many_tiles(ours, str(root / ("ours" if ours else "theirs")))
    return root


def _label_tiles_read(uri, label: str, run) -> tuple[int, int, object]:
    """(tiles of the label array ``label`` that ``run(array)`` reads, its tiles, its result): the storage's
    reads of its data files, mapped to the tiles they touch."""
    spans = []
    for f in open_array(f"{uri}/__labels/{label}").fragments:
        for kind in ("", "_var"):
            if kind == "" or f.metadata.index_fields[0].var:
                spans += [((f.name, k), f"{label}/__fragments/{f.name}/{name}", a, b)
                          for k, (name, a, b) in enumerate(f.tile_span(kind, 0, k) for k in range(f.tile_num()))]
    A, reads = open_array(uri), []
    real = A.storage.read

    def recording(path, start=0, end=None, what="file"):
        reads.append((str(path), start, A.storage.checked(path, start, end, what)))
        return real(path, start, end, what)
    A.storage.read = recording
    got = run(A)
    touched = {tile for tile, name, a, b in spans for p, start, end in reads
               if p.endswith(name) and start < b and a < end}
    return len(touched), len({tile for tile, *_ in spans}), got


@pytest.mark.parametrize("label,sel", [("lf", slice(100.0, 103.0)), ("lf", slice(1000.5, 1004.0)),
                                       ("lf", [6.0, (1990.0, 5000.0)]), ("ls", slice("s09000", "s09010")),
                                       ("ls", "s09178"), ("lf", slice(810.0, 812.0)), ("ls", slice("a", "b"))])
@pytest.mark.parametrize("who", ["theirs", "ours"])
def test_a_label_read_reads_only_the_tiles_its_bounds_lie_in(many_tiles, who, label, sel):
    """TileDB's OrderedDimLabelReader reads the tiles whose bounds may hold a range's ends, not the whole label
    array: so does tdbformat, for label arrays of TileDB-Py and its own (a fragment over another included)."""
    uri = str(many_tiles / who)
    with tiledb.open(uri) as T:
        want = _answer(lambda: T.label_index([label])[sel])

    def ours(A):
        try:
            return "read", A.label_index([label])[sel]
        except RangeError as e:
            return "refused", e
    touched, total, got = _label_tiles_read(uri, "l0" if label == "lf" else "l1", ours)
    assert total == 131  # 100 + 31
    assert got[0] == want[0] == ("refused" if sel == slice("a", "b") else "read")
    if want[0] == "read":
        assert list(got[1]) == list(want[1])
        assert_same(got[1], want[1])
    # per range end: the tile it lies in and the one beside it, in each fragment the range read meets; where
    # the fragments meet (two places), the two tiles of each side; the labels returned: their own tiles
    returned = -(-len(got[1][label]) // 10) + 1 if got[0] == "read" else 0
    assert touched <= 8 * len(sel if isinstance(sel, list) else [sel]) + 8 + 2 * returned, touched


def _label_refs(schema) -> list:
    return [{k: v for k, v in dict(lab).items() if not k.startswith("_")} for lab in schema.labels]


def test_labels_at_version_23(tmp_path):
    """TileDB-Py (core 2.30) cannot open v23. TileDB's code at v23 writes a label reference as at v22
    (``DimensionLabel::serialize`` takes no version) and a label array's fragments as dense ones, whose footer
    then ends in an empty list of optional sections (``write_optional_sections``: only sparse fragments have
    one). tdbformat creates, writes and reads labels at v23 so, and converts them to v23 and back."""
    theirs = str(tmp_path / "theirs")  # (the module's is written to by the tests above)
    tiledb.Array.create(theirs, _schema(tiledb))
    _write(tiledb, theirs)
    ours = str(tmp_path / "v23")
    tdbformat.create(ours, _schema(S), version=23)
    _write(tdbformat, ours)
    tdbformat.convert(theirs, str(tmp_path / "to23"), version=23)
    tdbformat.convert(str(tmp_path / "to23"), str(tmp_path / "back22"), version=22)
    v22 = open_array(theirs).schema
    for uri in (ours, str(tmp_path / "to23")):
        A = open_array(uri)
        assert A.schema.version == 23 and _label_refs(A.schema) == _label_refs(v22)
        for i in range(3):
            L = open_array(f"{uri}/__labels/l{i}")
            assert L.schema.version == 23 and L.fragments
            for f in L.fragments:
                assert f.version == 23 and f.dense
                assert f.metadata.footer.optional_section_count == 0 and not f.metadata.footer.optional_sections
            with tiledb.open(f"{theirs}/__labels/l{i}") as M:
                assert_same(L.read(), M[:])
        for names, sel in SELECTIONS[::2]:
            _same_as_tiledb_py(theirs, names, sel, ours_uri=uri)
    assert open_array(str(tmp_path / "back22")).schema.version == 22
    for names, sel in SELECTIONS:  # back at v22, TileDB-Py reads it by label as it reads its own
        with tiledb.open(str(tmp_path / "back22")) as T, tiledb.open(theirs) as W:
            mine, want = _answer(lambda: T.label_index(names)[sel]), _answer(lambda: W.label_index(names)[sel])
        assert mine[0] == want[0], (names, sel)
        if mine[0] == "read":
            assert list(mine[1]) == list(want[1])
            assert_same(mine[1], want[1])


def test_indices_without_a_label_and_tile_bounds_out_of_order_are_refused(tmp_path):
    """Labels written over x 0-2 and 6-9 leave 3-5 without one: TileDB-Py refuses every read by that label
    ("Discontinuity found in array domain"), and so does tdbformat. Tile bounds that break the label's order
    (a hostile fragment metadata) are a FormatError, before any tile is trusted."""
    dims = [tiledb.Dim(name="x", domain=(0, 9), tile=5, dtype=np.int32)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=[tiledb.Attr(name="a", dtype=np.int64)],
                                dim_labels={0: {"l": tiledb.DimLabelSchema("increasing", np.int64, np.int32,
                                                                           dim_tile=2)}})
    gap, whole = str(tmp_path / "gap"), str(tmp_path / "whole")
    for uri, writes in ((gap, [(slice(0, 3), [1, 2, 3]), (slice(6, 10), [10, 20, 30, 40])]),
                        (whole, [(slice(0, 10), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])])):
        tiledb.Array.create(uri, schema)
        for t, (sel, labels) in enumerate(writes, 1):
            with tiledb.open(uri, "w", timestamp=t) as A:
                A[sel] = {"a": np.arange(len(labels)), "l": np.array(labels)}
    for sel in (slice(2, 3), 30):
        with tiledb.open(gap) as T, pytest.raises(tiledb.TileDBError, match="Discontinuity found"):
            T.label_index(["l"])[sel]
        with pytest.raises(tdbformat.FormatError, match="indices 3 to 5 have no label"):
            open_array(gap).label_index(["l"])[sel]
    from tdbformat.structs.fragment import FragmentMetadata
    [meta] = (tmp_path / "whole" / "__labels" / "l0" / "__fragments").glob("*/__fragment_metadata.tdb")
    parsed = FragmentMetadata.parse(meta.read_bytes(), schema=open_array(f"{whole}/__labels/l0").schema)
    assert parsed.tile_maxes[0].fixed.tolist() == [2, 4, 6, 8, 10]
    parsed.tile_maxes[0].fixed = np.array([100, 4, 6, 8, 10])  # tile 0's maximum now above tile 1's minimum
    meta.write_bytes(parsed.build())
    with pytest.raises(tdbformat.FormatError, match="tile minimums and maximums"):
        open_array(whole).label_index(["l"])[1:2]
