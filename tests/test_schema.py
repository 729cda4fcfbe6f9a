"""The schema helpers (tdbformat.schema) against TileDB-Py, the oracle: the same schema written with
tiledb.ArraySchema and with our helpers gives the same schema payload, byte for byte; features a version
lacks are refused naming that version."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tdbformat
from tdbformat import schema as S
from tdbformat.structs.array_schema import ArraySchema
from tdbformat.structs.enumeration import Enumeration

from common import same

tiledb = pytest.importorskip("tiledb")


def _theirs(tmp_path, schema):
    """TileDB-Py's schema file for ``schema``, parsed; and the array folder."""
    path = tmp_path / "theirs"
    tiledb.Array.create(str(path), schema)
    [f] = [p for p in (path / "__schema").iterdir() if p.is_file()]
    return ArraySchema.parse(f.read_bytes()), path


def _ours(schema, version=22):
    return ArraySchema.parse(ArraySchema.build(schema.to_dict(version), version=version))


def _both(tmp_path, make):
    """(TileDB-Py's parsed schema, ours) for ``make(lib)`` called with tiledb and with tdbformat.schema."""
    theirs, _ = _theirs(tmp_path, make(tiledb))
    return theirs, _ours(make(S))


def test_defaults(tmp_path):
    """No tile extent (the domain's range), capacity, orders, fill values, default filter lists."""
    theirs, ours = _both(tmp_path, lambda lib: lib.ArraySchema(
        domain=lib.Domain(lib.Dim(name="d", domain=(0, 99), dtype=np.int64),
                          lib.Dim(name="e", domain=(-5, 5), dtype=np.int64)),
        attrs=[lib.Attr(name="a", dtype=np.float32), lib.Attr(name="u", dtype=np.uint32), lib.Attr()]))
    assert ours._unfiltered == theirs._unfiltered
    assert [d.tile_extent for d in ours.domain.dimensions] == [100, 11]


def test_default_extent_wraps_as_tiledbs(tmp_path):
    """int8 [-100, 100] has 201 values: TileDB's extent, computed in int8, is -55; ours too."""
    theirs, ours = _both(tmp_path, lambda lib: lib.ArraySchema(
        domain=lib.Domain(lib.Dim(name="d", domain=(-100, 100), dtype=np.int8)),
        attrs=[lib.Attr(name="a", dtype=np.int8)], sparse=True))
    assert ours._unfiltered == theirs._unfiltered and ours.domain.dimensions[0].tile_extent == -55


def test_datatypes_var_nullable_fill(tmp_path):
    def make(lib):
        dims = [lib.Dim(name="d", domain=(0, 99), dtype=np.int64), lib.Dim(name="s", dtype="ascii")]
        attrs = [lib.Attr(name="a", dtype=str), lib.Attr(name="b", dtype=np.int32, var=True, nullable=True),
                 lib.Attr(name="c", dtype=np.uint8, fill=3), lib.Attr(name="e", dtype=bytes),
                 lib.Attr(name="f", dtype="S3"), lib.Attr(name="g", dtype=np.complex64),
                 lib.Attr(name="h", dtype="blob"), lib.Attr(name="i", dtype=bool),
                 lib.Attr(name="j", dtype="datetime64[ms]"), lib.Attr(name="k", dtype="ascii"),
                 lib.Attr(name="l", dtype=str, fill="xy"), lib.Attr(name="m", dtype=np.float64, fill=-2.5),
                 lib.Attr(name="n", dtype="timedelta64[ns]", nullable=True), lib.Attr(name="o", dtype=np.int8)]
        return lib.ArraySchema(domain=lib.Domain(*dims), sparse=True, attrs=attrs)
    theirs, ours = _both(tmp_path, make)
    assert ours._unfiltered == theirs._unfiltered


def test_every_filter_and_orders(tmp_path):
    def make(lib):
        dims = [lib.Dim(name="t", domain=(np.datetime64("2020-01-01"), np.datetime64("2021-01-01")),
                        tile=np.timedelta64(7, "D"), dtype="datetime64[D]"),
                lib.Dim(name="f", domain=(0.0, 1.0), tile=0.5, dtype=np.float64, filters=[lib.GzipFilter()])]
        attrs = [
            lib.Attr(name="a", dtype=np.int8, filters=lib.FilterList(
                [lib.ZstdFilter(), lib.GzipFilter(5), lib.LZ4Filter(), lib.Bzip2Filter(), lib.RleFilter()],
                chunksize=1000)),
            lib.Attr(name="b", dtype=np.int32, filters=[
                lib.DoubleDeltaFilter(), lib.BitShuffleFilter(), lib.ByteShuffleFilter(),
                lib.BitWidthReductionFilter(128), lib.PositiveDeltaFilter(), lib.ChecksumMD5Filter(),
                lib.ChecksumSHA256Filter(), lib.XORFilter(), lib.NoOpFilter()]),
            lib.Attr(name="c", dtype=np.int64, filters=[lib.DeltaFilter(reinterp_dtype=np.int32)]),
            lib.Attr(name="s", dtype=str, filters=[lib.DictionaryFilter()]),
            lib.Attr(name="fl", dtype=np.float32, fill=2.5, filters=[lib.FloatScaleFilter(0.5, 1.0, 2)]),
        ]
        return lib.ArraySchema(domain=lib.Domain(*dims), sparse=True, cell_order="hilbert", attrs=attrs,
                               allows_duplicates=True, capacity=77, offsets_filters=[],
                               validity_filters=lib.FilterList([lib.LZ4Filter()]))
    theirs, ours = _both(tmp_path, make)
    assert ours._unfiltered == theirs._unfiltered


def test_webp_takes_the_tile_extents(tmp_path):
    def make(lib):
        fmt = tiledb.libtiledb.WebpInputFormat.WEBP_RGB if lib is tiledb else 1
        dims = [lib.Dim(name="y", domain=(1, 100), tile=10, dtype=np.uint32),
                lib.Dim(name="x", domain=(1, 300), tile=30, dtype=np.uint32)]
        return lib.ArraySchema(domain=lib.Domain(*dims), cell_order="col-major", tile_order="col-major",
                               attrs=[lib.Attr(name="rgb", dtype=np.uint8, filters=[lib.WebpFilter(fmt, 50.0, True)])])
    theirs, ours = _both(tmp_path, make)
    assert ours._unfiltered == theirs._unfiltered
    assert ours.attributes[0].filters.filters[0].options.x_extent == 30


def test_enumerations_and_current_domain(tmp_path):
    def make(lib):
        dom = lib.Domain(lib.Dim(name="d", domain=(0, 99), tile=10, dtype=np.int64))
        enums = [lib.Enumeration("e1", True, ["aa", "b", "ccc"]), lib.Enumeration("e2", False, [1.5, 2.5]),
                 lib.Enumeration("e3", False, np.array([3, 4], dtype=np.int16))]
        attrs = [lib.Attr(name="a", dtype=np.int8, enum_label="e1"),
                 lib.Attr(name="b", dtype=np.uint16, enum_label="e2")]
        if lib is tiledb:
            cd, rect = tiledb.CurrentDomain(tiledb.default_ctx()), tiledb.NDRectangle(tiledb.default_ctx(), dom)
            rect.set_range(0, 5, 20)
            cd.set_ndrectangle(rect)
            schema = tiledb.ArraySchema(domain=dom, sparse=True, attrs=attrs, enums=enums)
            schema.set_current_domain(cd)
            return schema
        return S.ArraySchema(domain=dom, sparse=True, attrs=attrs, enums=enums,
                             current_domain=S.CurrentDomain([(5, 20)]))
    theirs, path = _theirs(tmp_path, make(tiledb))
    helpers = make(S)
    ours = _ours(helpers)
    for key in ("attributes", "current_domain", "domain"):
        assert same(ours[key], theirs[key]), key
    # TileDB lists enumerations in hash-map order under random file names: compare by name
    their_files = {e.name: e.filename for e in theirs.enumerations}
    our_files = {e.name: e.filename for e in ours.enumerations}
    assert sorted(their_files) == sorted(our_files) == ["e1", "e2", "e3"]
    payloads = helpers.enumeration_dicts(22)
    for name, filename in our_files.items():
        theirs_e = Enumeration.parse((path / "__schema" / "__enumerations" / their_files[name]).read_bytes())
        ours_e = Enumeration.parse(Enumeration.build(payloads[filename], version=22))
        assert ours_e.path_name == filename and filename.endswith("_0") and len(filename) == 36
        ours_e.path_name = theirs_e.path_name
        assert same(ours_e, theirs_e), name


def _corpus_schema(case):
    from corpus import CORPUS
    root = CORPUS / case / "array"
    files = [root / "__array_schema.tdb"] if (root / "__array_schema.tdb").exists() else \
        [p for p in (root / "__schema").iterdir() if p.is_file()]
    return ArraySchema.parse(files[0].read_bytes())


@pytest.mark.parametrize("case,version", [("v4_c-api_core-1.7.7/array_metadata", 4),
                                          ("v10_c-api_core-2.5.4/array_metadata", 10)])
def test_old_versions_match_tiledb(case, version):
    """A corpus schema written by TileDB 1.7 and 2.5: one int32 dimension [0, 9] tile 5, one int32 attribute."""
    theirs = _corpus_schema(case)
    assert theirs.version == version
    ours = _ours(S.ArraySchema(S.Domain(S.Dim("d", (0, 9), 5, dtype=np.int32)), [S.Attr("a", np.int32)]), version)
    assert ours._unfiltered == theirs._unfiltered


@pytest.mark.parametrize("make,version,match", [
    (lambda: S.Attr("a", np.int32, nullable=True), 6, "version 7"),
    (lambda: S.Attr("a", np.int32, fill=3), 5, "version 6"),
    (lambda: S.Attr("a", np.int32, enum_label="e"), 19, "version 20"),
    (lambda: S.Attr("a", "blob"), 10, "version 11"),
    (lambda: S.Attr("a", bool), 13, "version 14"),
    (lambda: S.Dim("s", dtype="ascii"), 4, "version 5"),
    (lambda: S.Dim("d", (0, 9), filters=[S.ZstdFilter()]), 4, "version 5"),
    (lambda: S.XORFilter(), 15, "version 16"),
    (lambda: S.DeltaFilter(), 18, "version 19"),
    (lambda: S.DictionaryFilter(), 12, "version 13"),
    (lambda: S.FloatScaleFilter(), 14, "version 15"),
    (lambda: S.ChecksumMD5Filter(), 3, "version 4"),
    (lambda: S.DoubleDeltaFilter(reinterp_dtype=np.int32), 19, "version 20"),
    (lambda: S.Enumeration("e", False, [1, 2]), 19, "version 20"),
])
def test_features_a_version_lacks(make, version, match):
    with pytest.raises(ValueError, match=match):
        make().to_dict(version)


def test_schema_level_gates():
    dom = S.Domain(S.Dim("d", (0, 9), 5, dtype=np.int32), S.Dim("e", (0, 9), 5, dtype=np.int64))
    with pytest.raises(ValueError, match="version 5"):  # one domain_type before v5
        S.ArraySchema(dom, [S.Attr("a")], sparse=True).to_dict(4)
    with pytest.raises(ValueError, match="version 5"):
        S.ArraySchema(dom, [S.Attr("a")], sparse=True, allows_duplicates=True).to_dict(4)
    with pytest.raises(ValueError, match="version 22"):
        S.ArraySchema(dom, [S.Attr("a")], sparse=True, current_domain=S.CurrentDomain([(0, 1), (0, 1)])).to_dict(21)
    with pytest.raises(ValueError, match="version 7"):
        S.ArraySchema(dom, [S.Attr("a")], sparse=True, cell_order="hilbert").to_dict(6)
    v4 = S.ArraySchema(S.Domain(S.Dim("d", (0, 9), 5, dtype=np.int32)), [S.Attr("a")]).to_dict(4)
    assert v4.domain.domain_type == tdbformat.enums.Datatype.INT32 and v4.attributes[0].fill_value is None


@pytest.mark.parametrize("call,error", [
    (lambda: S.Dim("d", (9, 0)), ValueError), (lambda: S.Dim("d"), ValueError), (lambda: S.Dim(3, (0, 1)), TypeError),
    (lambda: S.Attr("a", object), TypeError), (lambda: S.Attr("a", np.int32, fill=[1, 2]), ValueError),
    (lambda: S.ZstdFilter("high"), TypeError), (lambda: S.FilterList(["zstd"]), TypeError),
    (lambda: S.ArraySchema(S.Domain(S.Dim("d", (0, 1))), [S.Attr("d")]), ValueError),
    (lambda: S.ArraySchema(S.Domain(S.Dim("d", (0, 1))), cell_order="z"), ValueError),
    (lambda: S.ArraySchema(S.Domain(S.Dim("d", (0, 1))), allows_duplicates=True), ValueError),
    (lambda: S.ArraySchema(S.Domain(S.Dim("d", (0, 1))), [S.Attr("a", np.int8, enum_label="x")]), ValueError),
    (lambda: S.ArraySchema(S.Domain(S.Dim("d", (0, 1))), [S.Attr("a")]).to_dict(24), ValueError),
    (lambda: S.ArraySchema(S.Domain(S.Dim("d", (0, 1)), S.Dim("e", (0, 1), dtype=np.int8))).to_dict(), ValueError),
    (lambda: S.ArraySchema(S.Domain(S.Dim("d", (0.0, 1.0), dtype=np.float32))).to_dict(), ValueError),
])
def test_bad_arguments(call, error):
    with pytest.raises(error):
        call()


def test_tiledb_py_opens_an_array_made_from_our_dict(tmp_path):
    """The dict builds a schema file TileDB-Py opens as the schema it would have made itself."""
    helpers = S.ArraySchema(S.Domain(S.Dim("d", (1, 8), 4, dtype=np.uint64)),
                            [S.Attr("a", np.int32, nullable=True, filters=[S.ZstdFilter(3)]), S.Attr("s", str)],
                            sparse=True, allows_duplicates=True)
    root = tmp_path / "ours"
    (root / "__schema").mkdir(parents=True)
    Path(root / "__schema" / "__1_1_0123456789abcdef0123456789abcdef").write_bytes(
        ArraySchema.build(helpers.to_dict(22), version=22))
    with tiledb.open(str(root)) as A:
        schema = A.schema
    assert schema.sparse and schema.allows_duplicates and schema.attr("a").isnullable
    assert schema.attr("s").dtype == np.dtype("<U") and schema.domain.dim("d").tile == 4
    assert isinstance(schema.attr("a").filters[0], tiledb.ZstdFilter) and schema.attr("a").filters[0].level == 3


# ---- every corpus schema, rebuilt from its truth.json with the helpers ----

_FILTERS = {name: getattr(S, name) for name in S.__all__ if name.endswith("Filter") and name != "Filter"}


def _filter_list(t):
    if t is None:
        return None
    out = []
    for f in t["filters"]:
        options = dict(f.get("options", {}))
        if isinstance(options.get("input_format"), str):
            options["input_format"] = tdbformat.enums.WebpInputFormat[options["input_format"]]
        if options.get("reinterp_dtype") in tdbformat.enums.Datatype.__members__:
            options["reinterp_dtype"] = tdbformat.enums.Datatype[options["reinterp_dtype"]]
        out.append(_FILTERS[f["class"]](**options))
    return S.FilterList(out, chunksize=t["chunksize"])


def _dtype(field):
    datatype, cells = tdbformat.enums.Datatype[field["tiledb_datatype"]], field["cell_val_num"]
    if cells in (1, "var"):
        return datatype
    return f"S{cells}" if datatype == tdbformat.enums.Datatype.CHAR else np.dtype([("", datatype.numpy_dtype)] * cells)


def _fill(attr):
    fill = attr["fill"]
    if isinstance(fill, list) and fill and all(isinstance(v, dict) and "bytes_hex" in v for v in fill):
        # TileDB-Py 0.19-0.20 list a string fill byte by byte as numpy "S1", which drops a NUL byte
        return b"".join(bytes.fromhex(v["bytes_hex"]) or b"\0" for v in fill)
    if isinstance(fill, list):
        return [float(v["float"]) if isinstance(v, dict) else v for v in fill]
    if isinstance(fill, dict):  # {"bytes_hex": ...}, or {"unavailable": ...} before fill values existed
        return bytes.fromhex(fill["bytes_hex"]) if "bytes_hex" in fill else None
    return fill


def _from_truth(s, labels=()) -> S.ArraySchema:
    coords = s["coords_filters"]
    # TileDB-Py >= 0.23 reports a dimension without filters as having the coords filters it inherits
    dims = [S.Dim(d["name"], None if d["var"] else d["domain"], d["tile"],
                  None if d["filters"] == coords else _filter_list(d["filters"]), _dtype(d), var=d["var"])
            for d in s["domain"]["dims"]]
    attrs = [S.Attr(a["name"], _dtype(a), _fill(a), var=a["var"], nullable=a["nullable"],
                    filters=_filter_list(a["filters"]), enum_label=a.get("enum_label")) for a in s["attrs"]]
    enums = [S.Enumeration(e["name"], e["ordered"], e["values"], e["numpy_dtype"])
             for e in (s.get("enumerations") or {}).values()]
    cd = s.get("current_domain")
    dim_labels = {}
    for label in labels:
        dim = dims[label["dim_index"]]
        dim_labels.setdefault(label["dim_index"], {})[label["name"]] = S.DimLabelSchema(
            label["label_order"] or "increasing", label["numpy_dtype"], dim.datatype)
    return S.ArraySchema(S.Domain(*dims), attrs, s["cell_order"], s["tile_order"], s["capacity"], _filter_list(coords),
                         _filter_list(s["offsets_filters"]), _filter_list(s.get("validity_filters")),
                         allows_duplicates=s["allows_duplicates"], sparse=s["array_type"] == "sparse",
                         dim_labels=dim_labels, enums=enums,
                         current_domain=S.CurrentDomain(cd["ndrectangle"]) if cd else None)


def _schema_cases():
    from corpus import cases, case_id, truth
    out = []
    for case in cases():
        t = truth(case)
        if t.get("kind") != "array" or "schema" not in t:
            continue
        marks = []
        if case_id(case) == "v17_tiledb-py-0.20.0_core-2.14.0/filter_webp":
            marks.append(pytest.mark.skip(reason="truth.json: TileDB-Py 0.20 reports WebP options as defaults"))
        out.append(pytest.param(case, id=case_id(case), marks=marks))
    return out


@pytest.mark.parametrize("case", _schema_cases())
def test_every_corpus_schema_from_its_truth(case):
    """The schema TileDB wrote (v1 to v23) equals, byte for byte, what the helpers make from truth.json's
    description at that version; enumerations (random file names, hash-map order) are compared by name."""
    from corpus import key, root, truth
    folder = root(case)
    files = [folder / "__array_schema.tdb"] if (folder / "__array_schema.tdb").exists() else \
        sorted(p for p in (folder / "__schema").iterdir() if p.is_file())
    theirs = ArraySchema.parse(files[-1].read_bytes(), key=key(case))
    helpers = _from_truth(truth(case)["schema"], truth(case).get("dimension_labels") or ())
    ours = ArraySchema.parse(ArraySchema.build(helpers.to_dict(theirs.version), version=theirs.version))
    for uri, label in helpers.label_schemas().items():  # each label array's own schema, too
        [f] = [p for p in (folder / uri / "__schema").iterdir() if p.is_file()]
        label_theirs = ArraySchema.parse(f.read_bytes())
        assert ArraySchema.parse(ArraySchema.build(label.to_dict(label_theirs.version), version=label_theirs.version)
                                 )._unfiltered == label_theirs._unfiltered, uri
    if not theirs.get("enumerations"):
        assert ours._unfiltered == theirs._unfiltered
        return
    assert sorted(e.name for e in ours.enumerations) == sorted(e.name for e in theirs.enumerations)
    for k in theirs:
        if k not in ("enumerations", "enumeration_num") and not k.startswith("_"):
            assert same(ours[k], theirs[k]), k


def test_dimension_labels(tmp_path):
    """The label references and each label array's schema, as TileDB-Py makes them (v18+)."""
    def make(lib):
        dims = [lib.Dim(name="x", domain=(0, 9), tile=5, dtype=np.int32),
                lib.Dim(name="y", domain=(1, 8), tile=4, dtype=np.int32)]
        labels = {0: {"lx": lib.DimLabelSchema("increasing", np.float64, np.int32)},
                  1: {"ly": lib.DimLabelSchema("decreasing", np.int16, np.int32, dim_tile=2,
                                               label_filters=[lib.ZstdFilter(2)]),
                      "lz": lib.DimLabelSchema("increasing", "ascii", np.int32)}}
        return lib.ArraySchema(domain=lib.Domain(*dims), attrs=[lib.Attr(name="a", dtype=np.int64)], dim_labels=labels)
    theirs, path = _theirs(tmp_path, make(tiledb))
    helpers = make(S)
    assert _ours(helpers)._unfiltered == theirs._unfiltered
    assert sorted(helpers.label_schemas()) == ["__labels/l0", "__labels/l1", "__labels/l2"]
    for uri, label in helpers.label_schemas().items():
        [f] = [p for p in (path / uri / "__schema").iterdir() if p.is_file()]
        assert _ours(label)._unfiltered == ArraySchema.parse(f.read_bytes())._unfiltered, uri
    with pytest.raises(ValueError, match="version 18"):
        helpers.to_dict(17)


# ---- hypothesis: random schemas written by TileDB-Py and made by the helpers ----

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

_INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
_ATTR_DTYPES = _INT_DTYPES + [np.float32, np.float64, str, bytes, "ascii", bool, "datetime64[s]", np.complex128]
_ANY_FILTERS = ["ZstdFilter", "GzipFilter", "LZ4Filter", "Bzip2Filter", "ByteShuffleFilter",
                "BitShuffleFilter", "ChecksumMD5Filter", "ChecksumSHA256Filter", "NoOpFilter"]


@st.composite
def _schema_recipes(draw):
    """A schema as plain data, for both libraries: (dims, attrs, options)."""
    sparse = draw(st.booleans())
    ndim = draw(st.integers(1, 3))
    dim_dtype = draw(st.sampled_from(_INT_DTYPES))
    dims = []
    for i in range(ndim):
        dtype = draw(st.sampled_from(_INT_DTYPES)) if sparse else dim_dtype
        info = np.iinfo(dtype)
        low = draw(st.integers(max(info.min, -200), 50))
        high = draw(st.integers(low, min(int(info.max) - 1, low + 300)))  # never the whole type: it needs a tile
        tile = draw(st.none() | st.integers(1, min(high - low + 1, int(info.max))))
        dims.append(dict(name=f"d{i}", domain=(low, high), tile=tile, dtype=dtype))
    attrs = []
    for i in range(draw(st.integers(1, 4))):
        dtype = draw(st.sampled_from(_ATTR_DTYPES))
        filters = draw(st.lists(st.tuples(st.sampled_from(_ANY_FILTERS), st.integers(-1, 9)), max_size=3))
        attrs.append(dict(name=f"a{i}", dtype=dtype, nullable=draw(st.booleans()), filters=filters,
                          chunksize=draw(st.sampled_from([None, 1024, 65536]))))
    options = dict(sparse=sparse, capacity=draw(st.sampled_from([0, 1, 100, 10000])),
                   allows_duplicates=sparse and draw(st.booleans()),
                   cell_order=draw(st.sampled_from(["row-major", "col-major"] + (["hilbert"] if sparse else []))),
                   tile_order=draw(st.sampled_from(["row-major", "col-major"])))
    return dims, attrs, options


def _make_recipe(lib, recipe):
    dims, attrs, options = recipe
    def filters(spec):
        out = [getattr(lib, name)(level) if name in ("ZstdFilter", "GzipFilter", "LZ4Filter", "Bzip2Filter")
               else getattr(lib, name)() for name, level in spec["filters"]]
        return lib.FilterList(out, chunksize=spec["chunksize"]) if spec["chunksize"] else out
    return lib.ArraySchema(domain=lib.Domain(*[lib.Dim(**d) for d in dims]),
                           attrs=[lib.Attr(name=a["name"], dtype=a["dtype"], nullable=a["nullable"], filters=filters(a))
                                  for a in attrs], **options)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recipe=_schema_recipes())
def test_random_schemas_equal_tiledb_pys(tmp_path_factory, recipe):
    theirs, _ = _theirs(tmp_path_factory.mktemp("h"), _make_recipe(tiledb, recipe))
    assert _ours(_make_recipe(S, recipe))._unfiltered == theirs._unfiltered


@pytest.mark.parametrize("version", tdbformat.KNOWN_VERSIONS)
def test_a_plain_schema_builds_at_every_version(version):
    """What every version can hold builds and parses back at that version, the gated fields absent before
    their version (allows_dups v5, fill values v6, labels v18; one domain_type before v5)."""
    helpers = S.ArraySchema(S.Domain(S.Dim("x", (1, 10), 5, dtype=np.int32), S.Dim("y", (1, 4), 2, dtype=np.int32)),
                            [S.Attr("a", np.float64, filters=[S.GzipFilter(6)]), S.Attr("s", "S4"),
                             S.Attr("v", np.int16, var=True)], sparse=True, capacity=3)
    parsed = _ours(helpers, version)
    assert parsed.version == version and parsed.capacity == 3
    assert [a.name for a in parsed.attributes] == ["a", "s", "v"]
    assert (parsed.allows_dups is None) == (version < 5) and (parsed.labels is None) == (version < 18)
    assert (parsed.attributes[0].fill_value is None) == (version < 6)
    assert (parsed.domain.domain_type is None) == (version >= 5)
    # the dict itself serves the structs' readers (a writer can ask it what it asks a parsed schema)
    from tdbformat.structs.array_schema import attributes, dimensions

    def plain(fields):
        return [(f.name, f.datatype, f.cell_val_num, f.var, f.nullable) for f in fields]
    as_dict = helpers.to_dict(version)
    assert plain(dimensions(as_dict)) == plain(dimensions(parsed)) and plain(attributes(as_dict)) == plain(attributes(parsed))
