"""Issue #39 §1 and §3: what the writers write when no version is given (an array released TileDB opens), and
``create()`` writing the enumeration files its schema names, compared with TileDB-Py 0.36.1 (TileDB 2.30)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import tdbformat
from tdbformat import schema as S
from tdbformat.cli import main
from tdbformat.versions import DEFAULT_WRITE_VERSION, FIRST_RELEASE, LATEST

tiledb = pytest.importorskip("tiledb")


def _library_version() -> int:
    """The newest format version the installed TileDB writes, from an array it makes."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        dom = tiledb.Domain(tiledb.Dim("d", domain=(1, 2), tile=2, dtype=np.int64))
        tiledb.Array.create(d + "/a", tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.int64)]))
        return tiledb.ArraySchema.load(d + "/a").version


def test_the_default_is_what_released_tiledb_writes():
    assert DEFAULT_WRITE_VERSION == _library_version() == 22 < LATEST
    assert FIRST_RELEASE[DEFAULT_WRITE_VERSION] == "2.25"


def _schema(enums=()):
    dom = S.Domain(S.Dim("d", domain=(1, 6), tile=3, dtype=np.int64))
    return S.ArraySchema(domain=dom, attrs=[S.Attr("a", dtype=np.int32)], sparse=True, enums=list(enums))


def _equal_to_tiledb(path, want_a):
    with tiledb.open(str(path)) as A:
        assert A.schema.version == DEFAULT_WRITE_VERSION
        got = A[:]
    np.testing.assert_array_equal(got["d"], np.arange(1, 7))
    np.testing.assert_array_equal(got["a"], want_a)


def test_api_defaults_make_arrays_tiledb_opens(tmp_path):
    tdbformat.create(tmp_path / "a", _schema())
    tdbformat.write(tmp_path / "a", {"a": np.arange(6, dtype=np.int32)}, coords=[np.arange(1, 7)])
    _equal_to_tiledb(tmp_path / "a", np.arange(6))
    tdbformat.convert(tmp_path / "a", tmp_path / "b")
    _equal_to_tiledb(tmp_path / "b", np.arange(6))
    assert tdbformat.open_array(tmp_path / "b").schema.version == DEFAULT_WRITE_VERSION
    group = tdbformat.create_group(tmp_path / "g")
    group.add(str(tmp_path / "a"), name="a")
    group.close()
    with tiledb.Group(str(tmp_path / "g")) as g:
        assert [m.name for m in g] == ["a"]


def test_cli_defaults_make_arrays_tiledb_opens(tmp_path, capsys):
    src = tmp_path / "src"
    tdbformat.create(src, _schema(), version=LATEST)  # `version=23` stays possible
    assert tdbformat.open_array(src).schema.version == LATEST
    assert main(["schema", "--json", str(src)]) == 0
    (tmp_path / "s.json").write_text(capsys.readouterr().out)
    pd.DataFrame({"d": np.arange(1, 7), "a": np.arange(6) * 2}).to_csv(tmp_path / "in.csv", index=False)
    assert main(["create", str(tmp_path / "a"), "--schema", str(tmp_path / "s.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["format_version"] == DEFAULT_WRITE_VERSION
    assert main(["write", str(tmp_path / "a"), str(tmp_path / "in.csv")]) == 0
    _equal_to_tiledb(tmp_path / "a", np.arange(6) * 2)
    tdbformat.write(src, {"a": np.arange(6, dtype=np.int32)}, coords=[np.arange(1, 7)])
    assert main(["convert", str(src), str(tmp_path / "b")]) == 0
    _equal_to_tiledb(tmp_path / "b", np.arange(6))


@pytest.mark.parametrize("command", ["create", "convert"])
def test_help_says_which_release_reads_each_version(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"default {DEFAULT_WRITE_VERSION}" in text
    for v in range(1, 23):
        assert f"v{v}: TileDB {FIRST_RELEASE[v]}+" in text
    assert "v23: no released TileDB yet" in text


def _enum_schema(version):
    dom = S.Domain(S.Dim("d", domain=(1, 6), tile=3, dtype=np.int64))
    enums = [S.Enumeration("color", False, ["red", "green", "blue"]),
             S.Enumeration("size", True, [10, 20, 30], dtype=np.int64),
             S.Enumeration("score", False, [0.5, 1.5], dtype=np.float64),
             S.Enumeration("none", False, [], dtype=str)]
    attrs = [S.Attr("c", dtype=np.uint8, enum_label="color"), S.Attr("s", dtype=np.int16, enum_label="size"),
             S.Attr("f", dtype=np.int32, enum_label="score"), S.Attr("plain", dtype=np.int64)]
    return S.ArraySchema(domain=dom, attrs=attrs, sparse=True, enums=enums)


def _enum_data():
    return {"c": np.array([0, 1, 2, 2, 1, 0], np.uint8), "s": np.array([2, 1, 0, 0, 1, 2], np.int16),
            "f": np.array([0, 1, 1, 0, 0, 1], np.int32), "plain": np.arange(6)}


def _tiledb_labels(path) -> dict:
    """TileDB-Py's cells with labels (its ``.df`` refuses pandas 3, so ``multi_index``, which gives labels too)."""
    with tiledb.open(str(path)) as A:
        return A.query(order="G").multi_index[:]


@pytest.mark.parametrize("version", [20, 21, 22, 23])
def test_create_writes_enumeration_files(tmp_path, version):
    tdbformat.create(tmp_path / "a", _enum_schema(version), version=version)
    tdbformat.write(tmp_path / "a", _enum_data(), coords=[np.arange(1, 7)])
    df = tdbformat.open_array(tmp_path / "a").df[:]
    if version <= DEFAULT_WRITE_VERSION:
        want = _tiledb_labels(tmp_path / "a")
    else:  # released TileDB cannot open v23: v22's answer, from TileDB-Py
        tdbformat.create(tmp_path / "b", _enum_schema(22), version=22)
        tdbformat.write(tmp_path / "b", _enum_data(), coords=[np.arange(1, 7)])
        want = _tiledb_labels(tmp_path / "b")
    assert want["c"].tolist() == ["red", "green", "blue", "blue", "green", "red"]
    assert want["s"].tolist() == [30, 20, 10, 10, 20, 30] and want["f"].tolist() == [0.5, 1.5, 1.5, 0.5, 0.5, 1.5]
    assert df.reset_index()["d"].tolist() == want["d"].tolist()
    for name in ("c", "s", "f", "plain"):
        assert df[name].tolist() == want[name].tolist(), name
    assert df["c"].dtype.name == df["s"].dtype.name == "category"
    if version <= DEFAULT_WRITE_VERSION:  # the empty one, which no attribute uses, is there too
        with tiledb.open(str(tmp_path / "a")) as A:
            assert list(A.enum("none").values()) == [] and A.enum("score").values().tolist() == [0.5, 1.5]
            assert A.enum("size").ordered and not A.enum("color").ordered


def test_enumerations_need_version_20(tmp_path):
    with pytest.raises(ValueError, match="20 or later, not v19"):
        tdbformat.create(tmp_path / "a", _enum_schema(19), version=19)
    assert not (tmp_path / "a").exists()


def test_the_docs_say_which_release_reads_each_version():
    from pathlib import Path

    from tdbformat.versions import KNOWN_VERSIONS, first_reader
    text = (Path(__file__).resolve().parents[2] / "docs" / "format-versions.md").read_text()
    assert f"format version **{DEFAULT_WRITE_VERSION}**" in text
    for v in KNOWN_VERSIONS:
        assert f"| {v} | {first_reader(v)} |" in text
