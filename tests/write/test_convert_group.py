"""``convert GROUP DST``: every member rewritten at the version, TileDB-Py opening the new group and reading
each array equal to the source; members outside the group or lost left behind and reported; a member that
cannot go to the version refused before anything is written; the SOMA experiment converted and read back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pygroups
from tdbformat.check.dataset import objects
from tdbformat.write.convert_group import convert_group

tiledb = pytest.importorskip("tiledb")
ROOT = Path(__file__).resolve().parents[2]
SOMA = ROOT / "tests" / "data" / "soma" / "experiment"


def _same_arrays(src, dst):
    """Every array below ``src`` that ``dst`` has at the same place reads equal with TileDB-Py; the places."""
    places, source = set(), {o.key: o.path for o in objects(src)}
    for obj in objects(dst):
        if obj.type != "array":
            continue
        places.add(obj.key)
        with tiledb.open(str(obj.path)) as B, tiledb.open(str(source[obj.key])) as A:
            got, want = B.query()[:], A.query()[:]
            assert set(got) == set(want)
            for k in want:
                np.testing.assert_array_equal(got[k], want[k], err_msg=f"{obj.key}.{k}")
            assert dict(B.meta) == dict(A.meta)
    return places


def test_tiledb_py_group_at_v18(tmp_path):
    g = pygroups.build(tiledb, tmp_path)
    done = convert_group(g, tmp_path / "copy", 18)
    assert sorted(done["arrays"]) == ["A", "sub/b"] and done["groups"] == ["sub"]
    assert {m["key"] for m in done["left_behind"]} == {"out", "sib", "gone"}
    assert pygroups.py_members(tiledb, tmp_path / "copy") == {
        ("A", f"file://{tmp_path}/copy/a", "array"), (None, f"file://{tmp_path}/copy/sub", "group")}
    with tiledb.Group(str(tmp_path / "copy")) as G, tiledb.Group(str(g)) as S:
        assert G.is_relative("A") and dict(G.meta).keys() == dict(S.meta).keys()
        np.testing.assert_array_equal(G.meta["f"], S.meta["f"])
    with tiledb.Group(str(tmp_path / "copy" / "sub")) as G:
        assert G.meta["level"] == "sub" and [m.name for m in G] == ["b"]
    assert _same_arrays(g, tmp_path / "copy") == {"A", "sub/b"}
    with tiledb.open(str(tmp_path / "copy" / "a")) as A:
        assert A.schema.version == 18
    assert not (tmp_path / "out").with_name("copy").joinpath("out").exists()  # nothing written outside DST


def test_soma_experiment_same_version_cli(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tdbformat.cli", "convert", str(SOMA), str(tmp_path / "exp"),
                        "--version", "22", "--json"], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "json-schema" / "convert.v1.json").read_text()))
    assert doc["kind"] == "group" and doc["left_behind"] == []
    assert _same_arrays(SOMA, tmp_path / "exp") == {o.key for o in objects(SOMA) if o.type == "array"}
    try:
        import tiledbsoma
    except ImportError:
        return
    with tiledbsoma.Experiment.open(str(tmp_path / "exp")) as E:
        assert len(E.obs.read().concat()) > 0


def test_refused_before_writing(tmp_path):
    with pytest.raises(ValueError, match=r"5 member\(s\).*obs: schema: a current domain need format version 22"):
        convert_group(SOMA, tmp_path / "low", 21)
    assert not (tmp_path / "low").exists()
    g = pygroups.build(tiledb, tmp_path)
    with pytest.raises(ValueError, match="group members and metadata need format version 12"):
        convert_group(g, tmp_path / "old", 11)
    assert not (tmp_path / "old").exists()
    with pytest.raises(ValueError, match="exists"):
        convert_group(g, g / "sub", 22)


def _history_array(path):
    """Sparse writes at t 1-3, a delete at 4, metadata at 2 and 5, an attribute added now."""
    pygroups.sparse(tiledb, path, writes=3)
    with tiledb.open(str(path), "d", timestamp=4) as A:
        A.query(cond="v > 5.0").submit()
    for t in (2, 5):
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A.meta[f"m{t}"] = t
    se = tiledb.ArraySchemaEvolution()
    se.add_attribute(tiledb.Attr("c", dtype=np.int32))
    se.array_evolve(str(path))
    return path


def _read(path, timestamp=None):
    with tiledb.open(str(path), timestamp=timestamp) as A:
        cells = A.query(order="G")[:]
        return {k: v.tolist() for k, v in cells.items()}, dict(A.meta), [a.name for a in A.schema]


@pytest.mark.parametrize("t", [1, 3, 4])
def test_timestamp_is_a_rollback(tmp_path, t):
    from tdbformat import convert
    a = _history_array(tmp_path / "a")
    convert(a, tmp_path / "b", 22, timestamp=t)
    assert _read(tmp_path / "b") == _read(a, t)


def test_timestamp_through_a_consolidated_fragment(tmp_path):
    """Fragments consolidated with timestamps: the copy at 2 keeps the cells stamped 1 and 2, with their
    timestamps (a read of the copy at 1 is the source's at 1)."""
    from tdbformat import convert
    a = tmp_path / "a"
    pygroups.sparse(tiledb, a, writes=4)
    tiledb.consolidate(str(a))
    tiledb.vacuum(str(a))
    assert len(tiledb.array_fragments(str(a))) == 1
    for version in (22, 13):  # v13: no cell timestamps, the cells up to 2 in one fragment
        convert(a, tmp_path / f"b{version}", version, timestamp=2)
        assert _read(tmp_path / f"b{version}")[0] == _read(a, 2)[0]
    assert _read(tmp_path / "b22", 1)[0] == _read(a, 1)[0]


def test_group_timestamp_cli(tmp_path):
    g = tmp_path / "g"
    tiledb.Group.create(str(g))
    _history_array(g / "a")
    with tiledb.Group(str(g), "w", config=tiledb.Config({"sm.group.timestamp_end": "1"})) as G:
        G.add("a", name="a", relative=True)  # a member since 1 (one added now was not there at 3)
    r = subprocess.run([sys.executable, "-m", "tdbformat.cli", "convert", str(g), str(tmp_path / "h"), "--version",
                        "21", "--timestamp", "3"], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert r.returncode == 0, r.stderr
    assert _read(tmp_path / "h" / "a") == _read(g / "a", 3)


def test_attrs_keeps_some_attributes(tmp_path):
    """--attrs: the copy has the dimensions and those attributes, read equal to TileDB-Py's read of them; a
    delete naming a left-out attribute, an unknown name, and a dense array left without any are refused
    before writing."""
    from tdbformat import convert
    a = tmp_path / "a"
    pygroups.sparse(tiledb, a, writes=2)
    r = subprocess.run([sys.executable, "-m", "tdbformat.cli", "convert", str(a), str(tmp_path / "b"), "--version",
                        "20", "--attrs", "s"], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert r.returncode == 0, r.stderr
    with tiledb.open(str(tmp_path / "b")) as B, tiledb.open(str(a)) as A:
        assert [x.name for x in B.schema] == ["s"] and B.schema.version == 20
        got, want = B.query(order="G")[:], A.query(order="G", attrs=["s"])[:]
        assert {k: v.tolist() for k, v in got.items()} == {k: v.tolist() for k, v in want.items()}
    convert(a, tmp_path / "m", 22, attrs=["v"], merge=True)
    with tiledb.open(str(tmp_path / "m")) as B:
        assert [x.name for x in B.schema] == ["v"] and len(tiledb.array_fragments(str(tmp_path / "m"))) == 1
    with tiledb.open(str(a), "d", timestamp=9) as A:
        A.query(cond="v > 5.0").submit()
    for attrs, match in ((["s"], "names v"), (["nope"], "not attributes"), ([], "none given")):
        with pytest.raises(ValueError, match=match):
            convert(a, tmp_path / "x", 22, attrs=attrs)
        assert not (tmp_path / "x").exists()


def _kept_equal(src, dst, attrs):
    """Every array of ``dst`` has, of its source's attributes, those in ``attrs`` (all where it has none of
    them), and TileDB-Py reads it equal to its source read on them; {key: kept attributes}."""
    source, out = {o.key: o.path for o in objects(src)}, {}
    for obj in objects(dst):
        if obj.type != "array":
            continue
        with tiledb.open(str(obj.path)) as B, tiledb.open(str(source[obj.key])) as A:
            names = [a.name for a in A.schema]
            kept = [n for n in names if n in attrs] or names
            assert [a.name for a in B.schema] == kept, obj.key
            got, want = B.query(order="G")[:], A.query(order="G", attrs=kept)[:]
            assert list(got) == list(want)
            for k in want:
                np.testing.assert_array_equal(got[k], want[k], err_msg=f"{obj.key}.{k}")
        out[obj.key] = kept
    return out


def test_group_attrs_each_array_keeps_those_it_has(tmp_path):
    """--attrs on a group: each array keeps the named attributes it has; one with none of them is copied
    whole and reported (not left out); a name in no array, or a delete naming a left-out attribute, is refused
    naming it before anything is written."""
    g = pygroups.build(tiledb, tmp_path)
    done = convert_group(g, tmp_path / "s", 22, attrs=["s"])
    assert sorted(done["arrays"]) == ["A", "sub/b"] and done["copied_whole"] == ["A"]
    assert _kept_equal(g, tmp_path / "s", {"s"}) == {"A": ["a"], "sub/b": ["s"]}
    assert "copied_whole" not in convert_group(g, tmp_path / "all", 22)
    for attrs, match in ((["s", "zz", "yy"], "'yy', 'zz': an attribute of no array"), ([], "none given")):
        with pytest.raises(ValueError, match=match):
            convert_group(g, tmp_path / "x", 22, attrs=attrs)
        assert not (tmp_path / "x").exists()
    with pytest.raises(TypeError, match="attrs"):
        convert_group(g, tmp_path / "x", 22, attrs="s")
    with tiledb.open(str(g / "sub" / "b"), "d", timestamp=9) as A:
        A.query(cond="v > 5.0").submit()
    with pytest.raises(ValueError, match="sub/b: attrs: the delete .* names v"):
        convert_group(g, tmp_path / "x", 22, attrs=["s", "a"])
    assert not (tmp_path / "x").exists()


def test_soma_experiment_attrs_cli(tmp_path):
    """The SOMA experiment with --attrs soma_data,cell_type: the matrices keep soma_data, obs cell_type, var
    (neither) is copied whole and the report says so; TileDB-Py reads every member equal on what it kept."""
    r = subprocess.run([sys.executable, "-m", "tdbformat.cli", "convert", str(SOMA), str(tmp_path / "exp"),
                        "--version", "22", "--attrs", "soma_data,cell_type", "--json"], capture_output=True,
                       text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "json-schema" / "convert.v1.json").read_text()))
    assert doc["copied_whole"] == ["ms/RNA/var"]
    kept = _kept_equal(SOMA, tmp_path / "exp", {"soma_data", "cell_type"})
    assert kept["obs"] == ["cell_type"] and kept["ms/RNA/X/data"] == ["soma_data"]
    assert kept["ms/RNA/var"] == ["var_id", "kind"]


def test_group_as_it_was(tmp_path):
    """A group whose member b was added at 20 and a removed at 30: converted at 25 it lists a and b, with
    the arrays as they were at 25."""
    g = tmp_path / "g"
    tiledb.Group.create(str(g))
    for n in "ab":
        pygroups.dense(tiledb, g / n, writes=3)  # writes at 1, 2, 3
    pygroups.timed_members(tiledb, g, ((10, "a", ""), (20, "b", ""), (30, "", "a")))
    done = convert_group(g, tmp_path / "at25", 22, timestamp=25)
    assert sorted(done["arrays"]) == ["a", "b"]
    with tiledb.Group(str(tmp_path / "at25")) as G:
        assert {m.name for m in G} == {"a", "b"}
    assert sorted(convert_group(g, tmp_path / "now", 22)["arrays"]) == ["b"]
    done = convert_group(g, tmp_path / "at2", 22, timestamp=2)  # before any member: an empty group
    assert done["arrays"] == [] and pygroups.py_members(tiledb, tmp_path / "at2") == set()


def test_the_write_package_leaves_tdbformat_write_the_function():
    """Importing tdbformat/write/ (this file does) must not rebind ``tdbformat.write`` to the package."""
    import tdbformat
    import tdbformat.write.convert_group  # noqa: F401
    assert callable(tdbformat.write) and tdbformat.write.__name__ == "write"
