"""Array schemas and enumerations: every corpus schema against its truth.json, byte-exact round trips,
version gates, hypothesis round trips, and schemas written on the spot by TileDB-Py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpus import CORPUS, HISTORIC, case_id, cases, files, key, root, truth
from tdbformat.enums import ArrayType, Datatype, FilterType, Layout
from tdbformat.errors import FormatError, VersionError
from tdbformat.testing.strategies import array_schemas
from tdbformat.structs.array_schema import (
    VAR_NUM, ArraySchema, Attribute, attributes, check_not_pre_v1, dimensions, fill_value,
)
from tdbformat.structs.enumeration import Enumeration, enumeration_values
from tdbformat.versions import KNOWN_VERSIONS


def is_schema_file(path) -> bool:
    return path.name == "__array_schema.tdb" or (path.parent.name == "__schema" and path.name.startswith("__"))


def schema_files(where):
    return [p for p in files(where) if is_schema_file(p)]


def all_schema_files():
    out = [(case_id(c), p, key(c)) for c in cases() for p in schema_files(c)]
    out += [("historic", p, None) for p in schema_files(HISTORIC)
            if "dense_array_v1_3_0" not in p.parts and "experimental_array_vUINT32_MAX" not in p.parts]
    return out


SCHEMA_FILES = all_schema_files()


@pytest.mark.parametrize("name,path,key", SCHEMA_FILES, ids=[str(p.relative_to(CORPUS)) for _, p, _ in SCHEMA_FILES])
def test_schema_round_trips_byte_for_byte(name, path, key):
    data = path.read_bytes()
    schema = ArraySchema.parse(data, key=key)
    assert ArraySchema.build(schema, key=key) == data


def test_corpus_covers_schema_versions():
    # the corpus reaches every layout change of the schema: v1, v5, v10, v11, v18 labels, v20 enums, v22, v23
    versions = {ArraySchema.parse(p.read_bytes(), key=k).version for _, p, k in SCHEMA_FILES}
    assert {1, 5, 10, 11, 18, 20, 22, 23} <= versions


# --- comparison with truth.json -------------------------------------------------------------------

_OPTION_NAMES = {"level": "level", "window": "max_window_size", "factor": "scale", "offset": "offset",
                 "bytewidth": "byte_width", "quality": "quality", "lossless": "lossless"}


#: TileDB-Py 0.20 (core 2.14) reads WebP options back as the defaults, whatever was stored (the case's
#: description and the bytes say RGB, lossless)
WEBP_DEFAULTS = {"input_format": "WEBP_NONE", "lossless": 0, "quality": 100.0}


def check_filters(pipeline, expected, webp_options_reported=True):
    if expected is None:
        return
    assert pipeline.max_chunk_size == expected["chunksize"]
    assert [f.type.name for f in pipeline.filters] == [f["filter_type"] for f in expected["filters"]]
    for got, want in zip(pipeline.filters, expected["filters"]):
        if got.type == FilterType.WEBP and not webp_options_reported:
            assert want["options"] == WEBP_DEFAULTS
            continue
        for name, value in want["options"].items():
            if name == "reinterp_dtype":
                assert value is None and got.options.get("reinterpret_datatype") in (None, Datatype.ANY)
            elif name == "input_format":
                assert got.options.input_format.name == value
            else:
                assert got.options[_OPTION_NAMES[name]] == value, name


def plain(value):
    """A truth.json value as a Python value (NaN markers decoded)."""
    if isinstance(value, dict) and "float" in value:
        return float(value["float"])
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def fill_bytes(wfill) -> bytes:
    """The bytes of a var or char fill as truth.json records it: text, ``bytes_hex``, or (older TileDB-Py)
    a list of numpy S1 items, one per byte, where a NUL byte shows as empty."""
    if isinstance(wfill, str):
        return wfill.encode()
    if isinstance(wfill, dict):
        return bytes.fromhex(wfill["bytes_hex"])
    return b"".join(fill_bytes(x) or b"\0" for x in wfill)


def same(a, b):
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def check_schema(schema, want, array_root, labels=None, webp_options_reported=True):
    assert ArrayType(schema.array_type).name.lower() == want["array_type"]
    assert Layout(schema.cell_order).name.lower().replace("_", "-") == want["cell_order"]
    assert Layout(schema.tile_order).name.lower().replace("_", "-") == want["tile_order"]
    assert schema.capacity == want["capacity"]
    assert bool(schema.allows_dups) == want["allows_duplicates"]
    if want.get("version") is not None:
        assert schema.version == want["version"]
    check_filters(schema.coords_filters, want["coords_filters"])
    check_filters(schema.cell_var_offsets_filters, want["offsets_filters"])
    if schema.version >= 7:
        check_filters(schema.cell_validity_filters, want["validity_filters"])

    dims, wdims = dimensions(schema), want["domain"]["dims"]
    assert len(dims) == want["domain"]["ndim"] == len(wdims)
    for info, dim, w in zip(dims, schema.domain.dimensions, wdims):
        assert info.name == w["name"]
        assert info.datatype.name == w["tiledb_datatype"]
        assert info.var == w["var"]
        assert info.cell_val_num == (VAR_NUM if w["cell_val_num"] == "var" else w["cell_val_num"])
        assert not info.nullable
        if w["var"]:
            assert dim.domain == [] and dim.tile_extent is None
        else:
            assert dim.domain == w["domain"]
            assert dim.tile_extent == w["tile"]
        if w["filters"] is None:  # cores before 2.0 have no dimension pipelines
            assert dim.filters is None
        elif w["filters"]["filters"]:
            check_filters(info.filters, w["filters"])
        else:  # the C API reports a dimension's own pipeline, TileDB-Py the inherited coords pipeline
            assert dim.filters is None or not dim.filters.filters

    attrs, wattrs = attributes(schema), want["attrs"]
    assert [a.name for a in attrs] == [w["name"] for w in wattrs]
    for info, attr, w in zip(attrs, schema.attributes, wattrs):
        assert info.datatype.name == w["tiledb_datatype"]
        assert info.var == w["var"]
        assert info.cell_val_num == (VAR_NUM if w["cell_val_num"] == "var" else w["cell_val_num"])
        assert info.nullable == w["nullable"]
        check_filters(info.filters, w["filters"], webp_options_reported)
        fill, wfill = fill_value(attr), w["fill"]
        if fill is not None and not (isinstance(wfill, dict) and "unavailable" in wfill):
            if info.var or info.datatype in (Datatype.CHAR, Datatype.STRING_ASCII):
                assert fill.tobytes() == fill_bytes(wfill)
            else:
                assert same(fill.tolist(), plain(wfill))
        if "enum_label" in w:
            assert (attr.enumeration_name or None) == w["enum_label"]

    wenums = want.get("enumerations") or {}
    refs = schema.get("enumerations") or []
    assert sorted(e.name for e in refs) == sorted(wenums)
    for ref in refs:
        data = (array_root / "__schema" / "__enumerations" / ref.filename).read_bytes()
        enum = Enumeration.parse(data)
        assert Enumeration.build(enum) == data
        w = wenums[ref.name]
        assert enum.name == w["name"] and enum.path_name == ref.filename
        assert enum.ordered == w["ordered"] and enum.cell_val_num == w["cell_val_num"]
        assert enumeration_values(enum) == w["values"]

    if labels is not None:
        got = sorted(schema.labels, key=lambda lb: lb.name)
        assert [lb.name for lb in got] == sorted(w["name"] for w in labels)
        for lb, w in zip(got, sorted(labels, key=lambda w: w["name"])):
            assert (lb.uri, lb.dim_index, lb.label_attr_name) == (w["uri"], w["dim_index"], w["label_attr_name"])
            assert lb.label_datatype.numpy_dtype == np.dtype(w["numpy_dtype"])
            assert lb.relative_uri

    wcd = want.get("current_domain")
    if schema.version >= 22:
        cd = schema.current_domain
        assert cd.empty == (wcd is None)
        if wcd is not None:
            assert cd.type.name == wcd["type"]
            assert {d.name: [r.start, r.end] for d, r in zip(schema.domain.dimensions, cd.ndrectangle)} \
                == wcd["ndrectangle"]


def latest_schema(array_root, k):
    paths = schema_files(array_root)
    paths = [p for p in paths if p.parent == array_root / "__schema" or p.parent == array_root]
    assert paths, array_root
    return ArraySchema.parse(max(paths, key=lambda p: p.name).read_bytes(), key=k)


ARRAYS = []
for _c in cases():
    _t = truth(_c)
    if _t.get("schema"):
        ARRAYS.append((case_id(_c), root(_c), _t["schema"], _t.get("dimension_labels"), key(_c),
                       _t.get("tiledb_py_version") != "0.20.0"))
    for _lb in _t.get("dimension_labels") or []:
        ARRAYS.append((case_id(_c) + "/" + _lb["name"], root(_c) / _lb["uri"], _t["label_arrays"][_lb["name"]]["schema"],
                       None, key(_c), True))
    for _name, _sub in (_t.get("member_arrays") or {}).items():
        ARRAYS.append((case_id(_c) + "/" + _name, root(_c) / _name, _sub["schema"], None, key(_c), True))


@pytest.mark.parametrize("name,array_root,want,labels,k,webp", ARRAYS, ids=[a[0] for a in ARRAYS])
def test_schema_matches_truth(name, array_root, want, labels, k, webp):
    check_schema(latest_schema(array_root, k), want, array_root, labels, webp)


def test_group_inner_arrays_parse():
    # arrays inside subgroups have no truth schema of their own: they must parse and round-trip
    inner = [p for c in cases() if c.name == "group" for p in schema_files(c) if "inner" in p.parts]
    assert inner
    for p in inner:
        assert ArraySchema.build(ArraySchema.parse(p.read_bytes())) == p.read_bytes()


def test_historic_schemas():
    v1 = ArraySchema.parse((HISTORIC / "arrays/non_split_coords_v1_4_0/__array_schema.tdb").read_bytes())
    assert v1.version == 1 and v1.array_type == ArrayType.SPARSE and v1.allows_dups is None
    assert [d.datatype for d in dimensions(v1)] == [Datatype(v1.domain.domain_type)] * len(v1.domain.dimensions)
    v11 = latest_schema(HISTORIC / "arrays/sparse_array_v11", None)
    v10 = latest_schema(HISTORIC / "arrays/zero_var_chunks_v10", None)
    assert (v11.version, v10.version) == (11, 10)
    assert dimensions(v10)[0].var  # d0 is a var-sized dimension
    (experimental,) = schema_files(HISTORIC / "arrays/experimental_array_vUINT32_MAX")
    with pytest.raises(VersionError, match="4294967295"):  # an experimental build's schema is not a known format
        ArraySchema.parse(experimental.read_bytes())


def test_pre_v1_schema_is_refused():
    data = (HISTORIC / "arrays/dense_array_v1_3_0/__array_schema.tdb").read_bytes()
    with pytest.raises(FormatError, match="predates format version 1"):
        check_not_pre_v1(data)
    with pytest.raises(FormatError, match="predates format version 1"):
        ArraySchema.parse(data)


def test_corrupt_schema_raises_format_error():
    data = bytearray(SCHEMA_FILES[0][1].read_bytes())
    schema = ArraySchema.parse(bytes(data))
    schema.array_type = 7  # not an ArrayType
    with pytest.raises(FormatError, match="ArrayType"):
        ArraySchema.build(schema)
    with pytest.raises(FormatError):
        ArraySchema.parse(bytes(data[:-3]))


@pytest.mark.parametrize("change,reason", [
    (dict(cell_val_num=0), "at least one value per cell"),
    (dict(cell_val_num=2), "fill value is one cell"),  # a 4-byte fill for 2 INT32 values
    (dict(datatype=Datatype.INT64), "fill value is one cell"),
], ids=["no values per cell", "fill shorter than a cell", "fill of another datatype"])
def test_attribute_whose_cells_cannot_be_read_is_refused(change, reason):
    """Found by the fuzzer: such schemas parsed, then reads failed with numpy's TypeError or ValueError."""
    path = next(p for _, p, k in SCHEMA_FILES if k is None and "v22_" in str(p) and "dense_2d_multiattr" in str(p))
    schema = ArraySchema.parse(path.read_bytes())
    assert schema.attributes[0].datatype == Datatype.INT32 and len(schema.attributes[0].fill_value) == 4
    schema.attributes[0].update(change)
    with pytest.raises(FormatError, match=reason):
        ArraySchema.parse(ArraySchema.build(schema))


def test_dimension_with_several_values_per_coordinate_is_refused():
    """Found by the fuzzer: cell_val_num 2**31-1 on a dimension parsed, then a read allocated without bound."""
    path = next(p for _, p, k in SCHEMA_FILES if k is None and "v22_" in str(p) and "dense_2d_multiattr" in str(p))
    schema = ArraySchema.parse(path.read_bytes())
    schema.domain.dimensions[0].cell_val_num = 2**31 - 1
    with pytest.raises(FormatError, match="one value per coordinate"):
        ArraySchema.parse(ArraySchema.build(schema))


def _enumeration(var: bool):
    """The v22 corpus enumeration that is (or is not) var-sized, parsed."""
    folder = next(CORPUS.glob("v22_tiledb-py-0.36.1*/enumerations/array/__schema/__enumerations"))
    return next(e for e in (Enumeration.parse(p.read_bytes()) for p in sorted(folder.iterdir()))
                if (e.cell_val_num == VAR_NUM) == var)


@pytest.mark.parametrize("var,change,reason", [
    (False, dict(cell_val_num=164), "whole entries"),  # 24 bytes of INT32: not whole entries of 164 values
    (False, dict(cell_val_num=0), "at least one value per entry"),
    (False, dict(datatype=Datatype.INT64, data=b"\1" * 12), "whole entries"),
    (True, dict(offsets=np.array([0, 9, 4], "<u8")), "offsets rise"),
    (True, dict(offsets=np.array([0, 4, 99], "<u8")), "offsets rise"),
], ids=["entries too long", "no values per entry", "part of an entry", "offsets fall", "offset past the data"])
def test_enumeration_whose_values_cannot_be_read_is_refused(var, change, reason):
    """Found by the fuzzer: enumeration_values() failed with numpy's ValueError, or sliced nonsense."""
    enum = _enumeration(var)
    enum.update(change)
    with pytest.raises(FormatError, match=reason):
        Enumeration.parse(Enumeration.build(enum))


# --- version gates ---------------------------------------------------------------------------------

def _attribute(version, **extra):
    """An INT32 attribute with every field ``version`` has, plus ``extra``."""
    out = dict(name="a", datatype=Datatype.INT32, cell_val_num=1, filters=dict(max_chunk_size=65536, filters=[]))
    for since, fields in [(6, dict(fill_value=b"\1\0\0\0")), (7, dict(nullable=False, fill_value_validity=False)),
                          (17, dict(order=0)), (20, dict(enumeration_name=""))]:
        if version >= since:
            out.update(fields)
    return {**out, **extra}


@pytest.mark.parametrize("field,value,version,span", [
    ("fill_value", b"\0\0\0\0", 5, "v6+"),
    ("nullable", True, 6, "v7+"),
    ("order", 0, 16, "v17+"),
    ("enumeration_name", "", 19, "v20+"),
])
def test_field_at_wrong_version_is_refused(field, value, version, span):
    with pytest.raises(VersionError) as err:
        Attribute.build(_attribute(version, **{field: value}), version=version)
    assert field in str(err.value) and span in str(err.value)
    assert Attribute.parse(Attribute.build(_attribute(version), version=version), version=version).name == "a"


def assert_holds(parsed, given, path="schema"):
    """Every field of the generated value comes back equal (parsed adds only length and count fields)."""
    if isinstance(given, dict):
        for name, value in given.items():
            assert_holds(parsed[name], value, f"{path}.{name}")
    elif isinstance(given, list) and given and isinstance(given[0], (dict, list)):
        assert len(parsed) == len(given), path
        for i, (p, g) in enumerate(zip(parsed, given)):
            assert_holds(p, g, f"{path}[{i}]")
    else:
        assert parsed == given, path


@given(st.data())
@settings(max_examples=80, deadline=None)
def test_any_schema_round_trips(data):
    version = data.draw(st.sampled_from(KNOWN_VERSIONS))
    schema = data.draw(array_schemas(version))
    built = ArraySchema.build(schema)
    parsed = ArraySchema.parse(built)
    assert_holds(parsed, schema)
    assert ArraySchema.build(parsed) == built


@pytest.mark.parametrize("field,value,since", [
    ("allows_dups", True, 5), ("cell_validity_filters", dict(max_chunk_size=0, filters=[]), 7),
    ("labels", [], 18), ("enumerations", [], 20),
    ("current_domain", dict(version=0, empty=True, type=None, ndrectangle=None), 22),
])
@given(st.data())
@settings(max_examples=5, deadline=None)
def test_schema_field_before_its_version_is_refused(field, value, since, data):
    version = data.draw(st.integers(1, since - 1))
    schema = data.draw(array_schemas(version))
    schema[field] = value
    with pytest.raises(VersionError, match=rf"{field}.*v{since}\+|v{since}\+.*{field}"):
        ArraySchema.build(schema)


# --- differential: TileDB-Py writes, we parse and rebuild ----------------------------------------

def test_tiledb_py_schemas(tmp_path):
    tiledb = pytest.importorskip("tiledb")
    dims = [tiledb.Dim("i", domain=(-5, 100), tile=7, dtype=np.int16),
            tiledb.Dim("s", dtype="ascii"),
            tiledb.Dim("t", domain=(np.datetime64(0, "D"), np.datetime64(99, "D")), tile=np.timedelta64(10, "D"),
                       dtype="datetime64[D]")]
    attrs = [tiledb.Attr("f", dtype=np.float32, fill=1.5, filters=[tiledb.ZstdFilter(3)]),
             tiledb.Attr("u", dtype=np.uint64, nullable=True),
             tiledb.Attr("v", dtype=str, var=True, fill="x")]
    uri = str(tmp_path / "a")
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, sparse=True,
                                                allows_duplicates=True, capacity=17))
    (path,) = schema_files(tmp_path / "a")
    data = path.read_bytes()
    schema = ArraySchema.parse(data)
    assert ArraySchema.build(schema) == data
    assert [(d.name, d.datatype, d.var) for d in dimensions(schema)] == [
        ("i", Datatype.INT16, False), ("s", Datatype.STRING_ASCII, True), ("t", Datatype.DATETIME_DAY, False)]
    assert schema.domain.dimensions[0].domain == [-5, 100] and schema.domain.dimensions[2].tile_extent == 10
    assert schema.capacity == 17 and schema.allows_dups
    f, u, v = schema.attributes
    assert fill_value(f).tolist() == [1.5] and f.filters.filters[0].type == FilterType.ZSTD
    assert u.nullable and fill_value(v).tobytes() == b"x"


def test_tiledb_py_enumerations_and_current_domain(tmp_path):
    tiledb = pytest.importorskip("tiledb")
    uri = str(tmp_path / "e")
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 999), tile=10, dtype=np.int64))
    schema = tiledb.ArraySchema(domain=dom, sparse=True, enums=[tiledb.Enumeration("e", True, ["lo", "hi"])],
                                attrs=[tiledb.Attr("a", dtype=np.uint8, enum_label="e")])
    ndrect = tiledb.NDRectangle(tiledb.default_ctx(), dom)
    ndrect.set_range(0, 5, 50)
    cd = tiledb.CurrentDomain(tiledb.default_ctx())
    cd.set_ndrectangle(ndrect)
    schema.set_current_domain(cd)
    tiledb.Array.create(uri, schema)
    (path,) = schema_files(tmp_path / "e")
    data = path.read_bytes()
    parsed = ArraySchema.parse(data)
    assert ArraySchema.build(parsed) == data
    assert parsed.attributes[0].enumeration_name == "e"
    (ref,) = parsed.enumerations
    enum_file = tmp_path / "e" / "__schema" / "__enumerations" / ref.filename
    enum = Enumeration.parse(enum_file.read_bytes())
    assert enumeration_values(enum) == ["lo", "hi"] and enum.ordered
    assert Enumeration.build(enum) == enum_file.read_bytes()
    (rng,) = parsed.current_domain.ndrectangle
    assert (rng.start, rng.end) == (5, 50)

    # what we build, TileDB reads: change the capacity and the range, write a fresh tile
    parsed.capacity, rng.end = 77, 60
    path.write_bytes(ArraySchema.build(parsed))
    loaded = tiledb.ArraySchema.load(uri)
    assert loaded.capacity == 77
    assert loaded.current_domain.ndrectangle.range(0) == (5, 60)


def test_opening_again_gives_each_array_its_own_schema(tmp_path):
    """Opens keep parsed schemas by their bytes (directory.load_schemas): what one caller edits, the next open
    must not see, and two arrays whose schema files share a name (v1-9: __array_schema.tdb) keep their own."""
    tiledb = pytest.importorskip("tiledb")
    from tdbformat import open_array
    uri = str(tmp_path / "a")
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.int32)], sparse=True))
    first = open_array(uri).schema
    first.attributes[0].name = "edited"
    first.domain.dimensions.clear()
    again = open_array(uri).schema
    assert again.attributes[0].name == "a" and len(again.domain.dimensions) == 1
    assert again == ArraySchema.parse(schema_files(tmp_path / "a")[0].read_bytes())
    legacy = [r for r in (root(c) for c in cases() if c.parent.name.startswith("v9_") and not key(c))
              if (r / "__array_schema.tdb").exists()]
    assert len({(r / "__array_schema.tdb").read_bytes() for r in legacy}) > 1
    for r in legacy:
        assert open_array(str(r)).schema == ArraySchema.parse((r / "__array_schema.tdb").read_bytes())
