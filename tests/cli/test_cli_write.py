"""``tdbformat create``, ``write`` and ``convert``: an array's schema JSON and cells, taken from TileDB's corpus
arrays, make a new array in two commands whose ``schema --json`` and ``cat`` equal the originals', and which
TileDB-Py reads as it reads the original."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tdbformat.cli import main

from corpus import CORPUS
from oracle import assert_same, canonical

tiledb = pytest.importorskip("tiledb")

V22 = "v22_tiledb-py-0.36.1_core-2.30.0"


def _run(capsys, *argv) -> str:
    assert main([str(a) for a in argv]) == 0
    return capsys.readouterr().out


def _fails(capsys, *argv) -> str:
    assert main([str(a) for a in argv]) == 2
    return capsys.readouterr().err


def _schema_doc(capsys, path) -> dict:
    doc = json.loads(_run(capsys, "schema", "--json", path))["schemas"][-1]
    doc.pop("name")
    return doc


def _tiledb_cells(path) -> dict:
    with tiledb.open(str(path)) as A:
        return A[:] if not A.schema.sparse else A.query(order="G")[:]


@pytest.mark.parametrize("writer, case, version, codes", [
    (V22, "dense_2d_multiattr", 22, False),   # nullable, var-sized and fixed attributes, 2-D dense
    (V22, "sparse_var_string_dim", 22, False),  # a var-sized string dimension
    (V22, "current_domain", 22, False),
    ("v21_tiledb-py-0.25.1_core-2.19.2", "enumerations", 21, True),
    ("v9_c-api_core-2.3.3", "sparse_2d_rtree", 9, False),
    ("v4_c-api_core-1.7.7", "dense_2d_multiattr", 4, False),
])
def test_create_and_write_from_csv_round_trip(tmp_path, capsys, writer, case, version, codes):
    src = CORPUS / writer / case / "array"
    (tmp_path / "s.json").write_text(_run(capsys, "schema", "--json", src))
    cells = _run(capsys, "cat", "--csv", src, *(["--codes"] if codes else []))
    (tmp_path / "in.csv").write_bytes(cells.encode())
    _run(capsys, "create", tmp_path / "a", "--schema", tmp_path / "s.json", "--version", version)
    _run(capsys, "write", tmp_path / "a", tmp_path / "in.csv", "--timestamp", 7)
    assert _schema_doc(capsys, tmp_path / "a") == _schema_doc(capsys, src)
    assert _run(capsys, "cat", "--csv", tmp_path / "a", *(["--codes"] if codes else [])) == cells
    assert_same(_tiledb_cells(tmp_path / "a"), _tiledb_cells(src))


def test_npy_writes_a_dense_subarray(tmp_path, capsys):
    src = CORPUS / V22 / "filter_zstd" / "array"
    (tmp_path / "s.json").write_text(_run(capsys, "schema", "--json", src))
    _run(capsys, "create", tmp_path / "a", "--schema", tmp_path / "s.json", "--version", 5)
    values = np.arange(10, dtype=np.float64) * 1.5
    np.save(tmp_path / "v.npy", values)
    _run(capsys, "write", tmp_path / "a", tmp_path / "v.npy", "--subarray", "100:109", "--timestamp", 3)
    with tiledb.open(str(tmp_path / "a")) as A:
        name = A.schema.attr(0).name
        np.testing.assert_array_equal(A[100:110][name], values)
        assert A.nonempty_domain() == ((100, 109),)
        assert A.schema.domain.dim(0).domain == tiledb.open(str(src)).schema.domain.dim(0).domain


def test_parquet_writes_sparse_cells(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    src = CORPUS / V22 / "sparse_var_string_dim" / "array"
    (tmp_path / "s.json").write_text(_run(capsys, "schema", "--json", src))
    _run(capsys, "create", tmp_path / "a", "--schema", tmp_path / "s.json", "--version", 22)
    want = _tiledb_cells(src)
    table = pa.table({k: (v.astype(str).tolist() if v.dtype == object else v) for k, v in want.items()})
    pq.write_table(table, tmp_path / "c.parquet")
    _run(capsys, "write", tmp_path / "a", tmp_path / "c.parquet")
    got = _tiledb_cells(tmp_path / "a")
    for name, values in want.items():
        assert np.asarray(got[name]).tolist() == np.asarray(values).tolist(), name


def test_convert_command(tmp_path, capsys):
    src = CORPUS / V22 / "sparse_delete" / "array"
    err = _fails(capsys, "convert", src, tmp_path / "a", "--version", 12)
    assert "delete commits need format version 16 or later, not 12" in err and not (tmp_path / "a").exists()
    _run(capsys, "convert", src, tmp_path / "m", "--version", 12, "--merge")
    _run(capsys, "convert", src, tmp_path / "b", "--version", 18)
    want = _tiledb_cells(src)
    for dst in ("m", "b"):
        got = _tiledb_cells(tmp_path / dst)
        for name, values in want.items():
            np.testing.assert_array_equal(got[name], values, err_msg=f"{dst} {name}")


def test_bad_input_is_refused_with_the_reason(tmp_path, capsys):
    src = CORPUS / V22 / "dense_2d_multiattr" / "array"
    (tmp_path / "s.json").write_text(_run(capsys, "schema", "--json", src))
    _run(capsys, "create", tmp_path / "a", "--schema", tmp_path / "s.json")
    np.save(tmp_path / "v.npy", np.zeros(3))
    assert "a .npy file holds the cells of a dense array with one attribute" in \
        _fails(capsys, "write", tmp_path / "a", tmp_path / "v.npy")
    (tmp_path / "few.csv").write_text("rows,cols,a_i32,a_f64,a_str,a_nint64\n1,1,1,1.0,x,\n1,3,1,1.0,x,\n")
    assert "needs exactly one row per cell of the box" in _fails(capsys, "write", tmp_path / "a", tmp_path / "few.csv")
    (tmp_path / "nocol.csv").write_text("rows,cols,a_i32\n1,1,1\n")
    assert "no column ['a_f64', 'a_str', 'a_nint64']" in _fails(capsys, "write", tmp_path / "a", tmp_path / "nocol.csv")
    (tmp_path / "bad.csv").write_text("rows,cols,a_i32,a_f64,a_str,a_nint64\n1,1,one,1.0,x,\n")
    assert "column 'a_i32' is not INT32" in _fails(capsys, "write", tmp_path / "a", tmp_path / "bad.csv")
    assert "a nullable attribute: needs format version 7 or later, not v6" in \
        _fails(capsys, "create", tmp_path / "b", "--schema", tmp_path / "s.json", "--version", 6)
    assert not list((tmp_path / "a").rglob("*.wrt"))  # nothing was committed by the refused writes


def test_create_from_the_dict_form(tmp_path, capsys):
    """The dict ``ArraySchema.build`` takes, as JSON with enum fields by name; TileDB-Py reads what it made."""
    dims = [{"name": "x", "datatype": "INT64", "cell_val_num": 1, "domain": [0, 99], "tile_extent": 10,
             "filters": {"max_chunk_size": 65536, "filters": [{"type": "ZSTD", "options": {"compressor": "ZSTD", "level": 4}}]}}]
    doc = {"array_type": "SPARSE", "tile_order": "ROW_MAJOR", "cell_order": "COL_MAJOR", "capacity": 3,
           "allows_dups": True, "domain": {"dimensions": dims},
           # create's feature checks need both pipelines before it fills defaults (see the report)
           "coords_filters": {"max_chunk_size": 65536, "filters": []},
           "cell_var_offsets_filters": {"max_chunk_size": 65536, "filters": []},
           "attributes": [{"name": "a", "datatype": "FLOAT32", "cell_val_num": 1,
                           "filters": {"max_chunk_size": 65536, "filters": []}}]}
    (tmp_path / "d.json").write_text(json.dumps(doc))
    _run(capsys, "create", tmp_path / "a", "--schema", tmp_path / "d.json", "--version", 11)
    (tmp_path / "c.csv").write_text("x,a\n5,1.5\n5,2.5\n0,-1\n99,7\n")
    _run(capsys, "write", tmp_path / "a", tmp_path / "c.csv", "--timestamp", 9)
    with tiledb.open(str(tmp_path / "a")) as A:
        assert A.schema.sparse and A.schema.allows_duplicates and A.schema.capacity == 3
        assert A.schema.domain.dim(0).filters[0] == tiledb.ZstdFilter(4)
        got = canonical(A.query(order="U")[:])
    assert got["x"].tolist() == [0, 5, 5, 99] and got["a"].tolist() == [-1, 1.5, 2.5, 7]
    (tmp_path / "e.json").write_text(json.dumps({**doc, "array_type": "SPARSEST"}))
    assert "array_type 'SPARSEST' is not one of DENSE, SPARSE" in \
        _fails(capsys, "create", tmp_path / "b", "--schema", tmp_path / "e.json")


def test_writing_commands_take_json(tmp_path, capsys):
    """create, write and convert --json: documents valid against docs/json-schema, naming what was written."""
    jsonschema = pytest.importorskip("jsonschema")
    schemas = Path(__file__).resolve().parents[2] / "docs" / "json-schema"

    def doc(command, *argv):
        out = json.loads(_run(capsys, command, *argv, "--json"))
        jsonschema.Draft202012Validator(json.loads((schemas / f"{command}.v1.json").read_text())).validate(out)
        return out

    src = CORPUS / V22 / "filter_zstd" / "array"
    (tmp_path / "s.json").write_text(_run(capsys, "schema", "--json", src))
    assert doc("create", tmp_path / "a", "--schema", tmp_path / "s.json", "--version", 12)["format_version"] == 12
    np.save(tmp_path / "v.npy", np.arange(10, dtype=np.float64))
    name = doc("write", tmp_path / "a", tmp_path / "v.npy", "--subarray", "100:109", "--timestamp", 3)["fragment"]
    assert (tmp_path / "a" / "__fragments" / name).is_dir()
    out = doc("convert", tmp_path / "a", tmp_path / "b", "--version", 20)
    assert out["source"] == str(tmp_path / "a") and out["format_version"] == 20 and len(out["fragments"]) == 1


def _labels_of(uri, names) -> list:
    """TileDB-Py's view of the dimension labels ``names`` of an array and of their arrays' schemas."""
    out = []
    with tiledb.open(str(uri)) as A:
        for lab in map(A.schema.dim_label, names):
            with tiledb.open(lab.uri) as L:
                d, a = L.schema.domain.dim(0), L.schema.attr(0)
                out.append((lab.name, lab.dim_index, lab.dtype, lab.order, lab.label_attr_name, lab.isvar,
                            lab.uri.rsplit("/", 2)[-2:], d.name, d.domain, d.tile, d.dtype, a.name, a.dtype))
    return out


def _labelled(uri):
    dims = [tiledb.Dim(name="x", domain=(0, 9), tile=5, dtype=np.int32),
            tiledb.Dim(name="y", domain=(-4, 4), tile=3, dtype=np.int32)]
    labels = {1: {"ly": tiledb.DimLabelSchema("decreasing", np.int16, np.int32)},  # (dimension 1 first: l0)
              0: {"lt": tiledb.DimLabelSchema("increasing", "datetime64[D]", np.int32),
                  "ls": tiledb.DimLabelSchema("decreasing", "ascii", np.int32)}}
    tiledb.Array.create(str(uri), tiledb.ArraySchema(domain=tiledb.Domain(*dims), dim_labels=labels,
                                                     attrs=[tiledb.Attr(name="a", dtype=np.int64)]))


@pytest.mark.parametrize("src", ["here"] + [p.parent.parent.name for p in sorted(CORPUS.glob("v*/dimension_labels"
                                                                                                  "/array"))])
def test_create_from_schema_json_makes_the_dimension_labels(tmp_path, capsys, src):
    """``schema --json`` of a labelled array TileDB-Py made -> ``create --schema``: TileDB-Py opens the new array
    with the same dimension labels (and label arrays), and reads it by label once written."""
    if src == "here":
        path = tmp_path / "theirs"
        _labelled(path)
    else:
        path = CORPUS / src / "dimension_labels" / "array"
    doc = json.loads(_run(capsys, "schema", "--json", path))
    assert doc["schemas"][-1]["dimension_labels"]
    (tmp_path / "s.json").write_text(json.dumps(doc))
    version = doc["schemas"][-1]["format_version"]
    _run(capsys, "create", tmp_path / "ours", "--schema", tmp_path / "s.json", "--version", version)
    names = [lab["name"] for lab in doc["schemas"][-1]["dimension_labels"]]
    assert _labels_of(tmp_path / "ours", names) == _labels_of(path, names)
    assert _schema_doc(capsys, tmp_path / "ours") == _schema_doc(capsys, path)
    if src == "here":
        for uri in (path, tmp_path / "ours"):
            with tiledb.open(str(uri), "w") as A:
                A[:] = {"a": np.arange(90).reshape(10, 9), "lt": np.arange(-5, 5).astype("M8[D]"),
                        "ls": np.array([f"s{9 - i}" for i in range(10)]), "ly": np.arange(40, -5, -5, np.int16)}
        with tiledb.open(str(path)) as T, tiledb.open(str(tmp_path / "ours")) as M:
            sel = (slice(np.datetime64("1969-12-30"), np.datetime64("1970-01-02")), slice(10, 30))
            assert_same(M.label_index(["lt", "ly"])[sel], T.label_index(["lt", "ly"])[sel])


def test_labels_in_schema_json_are_checked(tmp_path, capsys):
    _labelled(tmp_path / "theirs")
    doc = json.loads(_run(capsys, "schema", "--json", tmp_path / "theirs"))["schemas"][-1]
    for i, (change, words) in enumerate([({"uri": "__labels/l7"}, "created, it is __labels/l0"),
                                         ({"dimension": 2}, "an index of the 2 dimensions"),
                                         ({"type": "FLOAT128"}, "unknown type 'FLOAT128'"),
                                         ({"order": "sideways"}, "order: 'increasing' or 'decreasing'")]):
        bad = json.loads(json.dumps(doc))
        bad["dimension_labels"][0].update(change)
        (tmp_path / f"{i}.json").write_text(json.dumps(bad))
        assert words in _fails(capsys, "create", tmp_path / f"b{i}", "--schema", tmp_path / f"{i}.json")
        assert not (tmp_path / f"b{i}").exists()
    (tmp_path / "s.json").write_text(json.dumps(doc))
    assert "dimension labels: needs format version 18 or later, not v17" in \
        _fails(capsys, "create", tmp_path / "v17", "--schema", tmp_path / "s.json", "--version", 17)
