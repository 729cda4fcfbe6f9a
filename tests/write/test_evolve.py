"""Schema evolution against TileDB-Py's: the same changes on two copies of an array, one evolved by TileDB-Py,
the other by tdbformat, give the same schema (every field, the file's bytes with the enumeration file names
swapped) and the same reads."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

tiledb = pytest.importorskip("tiledb")

import tdbformat  # noqa: E402
from tdbformat import schema as S  # noqa: E402
from tdbformat.structs.array_schema import ArraySchema  # noqa: E402
from tdbformat.structs.enumeration import Enumeration, enumeration_values  # noqa: E402
from tdbformat.write.evolve import ArraySchemaEvolution, _plain  # noqa: E402


def _base(path, current_domain=False):
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 999), tile=10, dtype=np.int64))
    kw = {}
    if current_domain:
        cd = tiledb.CurrentDomain(tiledb.Ctx())
        nd = tiledb.NDRectangle(tiledb.Ctx(), dom)
        nd.set_range(0, 0, 99)
        cd.set_ndrectangle(nd)
        kw["current_domain"] = cd
    schema = tiledb.ArraySchema(domain=dom, sparse=True, attrs=[tiledb.Attr("a", dtype=np.int32),
                                                                tiledb.Attr("old", dtype=np.float32)],
                                enums=[tiledb.Enumeration("colors", False, ["red", "green"])])
    if current_domain:
        schema.set_current_domain(kw["current_domain"])
    tiledb.Array.create(str(path), schema)
    with tiledb.open(str(path), "w") as A:
        A[np.array([1, 2])] = {"a": np.array([1, 2], np.int32), "old": np.array([0.5, 1.5], np.float32)}


def _schema_files(path):
    folder = path / "__schema"
    return sorted(n for n in os.listdir(folder) if n.startswith("__") and (folder / n).is_file())


def _evolved(path):
    name = _schema_files(path)[-1]
    data = (path / "__schema" / name).read_bytes()
    return name, data, ArraySchema.parse(data)


def _reads(path):
    """The schema and the cells TileDB-Py reads (enumerated attributes aside: TileDB-Py 0.36 cannot map the
    fill value of one added after cells were written, -128 for int8, to a label, and raises IndexError)."""
    with tiledb.open(str(path)) as A:
        attrs = [A.schema.attr(i).name for i in range(A.schema.nattr) if A.schema.attr(i).enum_label is None]
        return repr(A.schema), repr(A.query(attrs=attrs)[:])


def _pair(tmp_path, **kw):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    _base(theirs, **kw)
    shutil.copytree(theirs, ours)
    return ours, theirs


def _normalized(path, parsed) -> bytes:
    """The schema rebuilt with its enumerations by name, each named by its values: TileDB lists them from an
    unordered_map (their order is no format rule) under files named by fresh uuids."""
    value = _plain(parsed)
    refs = sorted(value.get("enumerations") or [], key=lambda r: r.name)
    for r in refs:
        data = (path / "__schema" / "__enumerations" / r.filename).read_bytes()
        r.filename = repr(enumeration_values(Enumeration.parse(data)))
    if refs:
        value.enumerations = refs
    return ArraySchema.build(value, version=parsed.version)


def _same(ours, theirs):
    _, mine, parsed_mine = _evolved(ours)
    _, other, parsed_other = _evolved(theirs)
    if len(parsed_other.get("enumerations") or []) <= 1:  # one order: every byte, enumeration names swapped
        for a, b in zip(parsed_mine.get("enumerations") or [], parsed_other.get("enumerations") or []):
            mine = mine.replace(a.filename.encode(), b.filename.encode())
        assert mine == other
    assert _normalized(ours, parsed_mine) == _normalized(theirs, parsed_other)
    assert _reads(ours) == _reads(theirs)
    assert not [f for f in tdbformat.validate(str(ours)) if f.severity == "error"]


def test_add_and_drop_attributes_as_tiledb(tmp_path):
    ours, theirs = _pair(tmp_path)
    se = tiledb.ArraySchemaEvolution()
    se.drop_attribute("old")
    se.add_attribute(tiledb.Attr("b", dtype=np.int16, nullable=True, fill=7))
    se.add_attribute(tiledb.Attr("s", dtype=str, var=True))
    se.array_evolve(str(theirs))
    ev = ArraySchemaEvolution()
    ev.drop_attribute("old")
    ev.add_attribute(S.Attr("b", dtype=np.int16, nullable=True, fill=7))
    ev.add_attribute(S.Attr("s", dtype=str, var=True))
    ev.array_evolve(str(ours))
    _same(ours, theirs)
    for path in (ours, theirs):  # both take writes of the evolved schema
        with tiledb.open(str(path), "w") as A:
            A[np.array([5])] = {"a": np.array([5], np.int32), "b": np.array([1], np.int16),
                                "s": np.array(["x"], object)}
    assert _reads(ours) == _reads(theirs)


def test_enumerations_as_tiledb(tmp_path):
    ours, theirs = _pair(tmp_path)
    se = tiledb.ArraySchemaEvolution()
    se.add_enumeration(tiledb.Enumeration("sizes", True, [1, 2, 3], dtype=np.int32))
    se.add_attribute(tiledb.Attr("size", dtype=np.int8, enum_label="sizes"))
    with tiledb.open(str(theirs)) as A:
        se.extend_enumeration(A.enum("colors").extend(["blue"]))
    se.array_evolve(str(theirs))
    ev = ArraySchemaEvolution()
    ev.add_enumeration(S.Enumeration("sizes", True, [1, 2, 3], dtype=np.int32))
    ev.add_attribute(S.Attr("size", dtype=np.int8, enum_label="sizes"))
    ev.extend_enumeration(S.Enumeration("colors", False, ["red", "green", "blue"]))
    ev.array_evolve(str(ours))
    _same(ours, theirs)
    with tiledb.open(str(ours)) as A:
        assert list(A.enum("colors").values()) == ["red", "green", "blue"]


def test_drop_enumeration_as_tiledb(tmp_path):
    ours, theirs = _pair(tmp_path)
    se = tiledb.ArraySchemaEvolution()
    se.drop_enumeration("colors")
    se.array_evolve(str(theirs))
    ev = ArraySchemaEvolution()
    ev.drop_enumeration("colors")
    ev.array_evolve(str(ours))
    _same(ours, theirs)


def test_expand_current_domain_as_tiledb(tmp_path):
    ours, theirs = _pair(tmp_path, current_domain=True)
    se = tiledb.ArraySchemaEvolution()
    with tiledb.open(str(theirs)) as A:
        cd = tiledb.CurrentDomain(tiledb.Ctx())
        nd = tiledb.NDRectangle(tiledb.Ctx(), A.schema.domain)
        nd.set_range(0, 0, 499)
        cd.set_ndrectangle(nd)
    se.expand_current_domain(cd)
    se.array_evolve(str(theirs))
    ev = ArraySchemaEvolution()
    ev.expand_current_domain(S.CurrentDomain([(0, 499)]))
    ev.array_evolve(str(ours))
    _same(ours, theirs)


@pytest.mark.parametrize("change, error", [
    (lambda ev: ev.drop_attribute("nope"), ValueError),
    (lambda ev: ev.add_attribute(S.Attr("a", dtype=np.int8)), ValueError),
    (lambda ev: ev.add_attribute(S.Attr("e", dtype=np.int8, enum_label="nope")), ValueError),
    (lambda ev: ev.extend_enumeration(S.Enumeration("colors", False, ["blue"])), ValueError),
    (lambda ev: ev.drop_enumeration("nope"), ValueError),
])
def test_bad_changes_are_refused_before_anything_is_written(tmp_path, change, error):
    ours, _ = _pair(tmp_path)
    before = sorted(p for p in ours.rglob("*"))
    ev = ArraySchemaEvolution()
    change(ev)
    with pytest.raises(error):
        ev.array_evolve(str(ours))
    assert sorted(p for p in ours.rglob("*")) == before


_CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


@pytest.mark.parametrize("writer", ["v10_c-api_core-2.5.4", "v14_c-api_core-2.10.4", "v19_tiledb-py-0.22.3_core-2.16.3"])
def test_an_old_array_evolves_at_its_own_version_and_tiledb_py_reads_it(tmp_path, writer):
    path = tmp_path / "a"
    shutil.copytree(_CORPUS / writer / "sparse_var_string_dim" / "array", path)
    with tiledb.open(str(path)) as A:
        before = A[:]
    old = ArraySchema.parse(next(p for p in sorted((path / "__schema").iterdir()) if p.is_file()).read_bytes())
    ev = ArraySchemaEvolution()
    ev.add_attribute(S.Attr("added", dtype=np.int16, fill=-5))
    ev.array_evolve(str(path))
    _, _, new = _evolved(path)
    assert new.version == old.version  # the array's own version, not the library's
    with tiledb.open(str(path)) as A:
        after = A[:]
        assert A.schema.has_attr("added")
    for k, v in before.items():
        assert np.array_equal(after[k], v), k
    assert after["added"].tolist() == [-5] * len(after["added"])
    ours = tdbformat.open_array(str(path)).read()
    assert ours["added"].tolist() == after["added"].tolist()


def test_an_array_with_one_schema_file_is_refused_naming_its_version(tmp_path):
    path = tmp_path / "a"
    shutil.copytree(_CORPUS / "v9_c-api_core-2.3.3" / "dense_2d_multiattr" / "array", path)
    before = sorted(p for p in path.rglob("*"))
    ev = ArraySchemaEvolution()
    ev.add_attribute(S.Attr("added", dtype=np.int16))
    with pytest.raises(ValueError, match="format version 9 "):
        ev.array_evolve(str(path))
    assert sorted(p for p in path.rglob("*")) == before
