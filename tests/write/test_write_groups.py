"""Groups (create_group, Group.add / remove) against TileDB-Py, the oracle: tiledb.Group lists the members we
wrote, and we list what it wrote, after additions and removals by either side."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import tdbformat
from tdbformat.structs.group import GroupDetails

from corpus import CORPUS
from oracle import tiledb_ctx

tiledb = pytest.importorskip("tiledb")


def _array(path):
    dim = tiledb.Dim(name="d", domain=(0, 9), tile=10, dtype=np.int32)
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=tiledb.Domain(dim),
                                                      attrs=[tiledb.Attr(name="a", dtype=np.int64)]))
    return path


def _py_members(path):
    """{key: (uri, name, 'array' or 'group')} as TileDB-Py lists them."""
    with tiledb.Group(str(path)) as G:
        return {m.name or m.uri: (m.uri, m.name, "array" if m.type is tiledb.Array else "group") for m in G}


def _our_members(path):
    """The same, from our reader; URIs resolved as TileDB-Py shows them (relative ones under the group)."""
    out = {}
    for m in tdbformat.layout.group_members(path):
        uri = f"file://{path.resolve()}/{m.uri}" if m.relative else m.uri
        out[m.name or m.uri] = (uri, m.name, m.object_type.name.lower())
    return out


@pytest.fixture
def group(tmp_path):
    root = tmp_path / "g"
    tdbformat.create_group(root, version=22)
    _array(root / "arr")
    tiledb.Group.create(str(root / "sub"))
    _array(tmp_path / "outside")
    return root


def test_tiledb_py_lists_what_we_add_and_remove(group, tmp_path):
    assert tiledb.object_type(str(group)) == "group"
    with tdbformat.Group(group) as g:
        g.add("arr", name="A", relative=True)
        g.add(group / "sub")
        g.add(str(tmp_path / "outside"), name="out")
    want = {"A": (f"file://{group}/arr", "A", "array"), f"file://{group}/sub": (f"file://{group}/sub", None, "group"),
            "out": (f"file://{tmp_path}/outside", "out", "array")}
    assert _py_members(group) == want
    with tdbformat.Group(group) as g:
        g.remove("A")
        g.remove(str(group / "sub"))  # by URI: an unnamed member
    assert _py_members(group) == {"out": want["out"]}
    assert _our_members(group) == _py_members(group)


def test_the_files_are_tiledb_pys_v2_details(group):
    """One file per session, named __t_t_uuid_2, holding every member known with removals flagged deleted."""
    g = tdbformat.Group(group, version=22, timestamp=7)  # a marker alone does not say its version
    g.add("arr", name="A", relative=True)
    first = g.close()
    g = tdbformat.Group(group, timestamp=8)  # a later session (files of one millisecond apply in any order)
    g.remove("A")
    second = g.close()
    assert first.rsplit("/", 1)[-1].startswith("__7_7_") and first.endswith("_2")
    a, b = (GroupDetails.parse(open(p, "rb").read()) for p in (first, second))
    assert a._generic_tile.version == 22 and a.version == 2
    assert [(m.version, m.uri, m.name, m.relative, m.deleted) for m in a.members] == [(2, "arr", "A", True, False)]
    assert [(m.uri, m.deleted) for m in b.members] == [("arr", True)]
    assert _py_members(group) == {}


def test_we_list_what_tiledb_py_wrote_and_add_to_it(group, tmp_path):
    with tiledb.Group(str(group), "w") as G:
        G.add("arr", name="A", relative=True)
        G.add(str(group / "sub"), name="S")
    with tiledb.Group(str(group), "w") as G:
        G.remove("S")
    assert _our_members(group) == _py_members(group)
    g = tdbformat.Group(group)
    assert g.version == 22  # TileDB-Py's details files are v22 generic tiles
    g.add(str(tmp_path / "outside"), name="out")
    g.remove("A")
    g.close()
    assert _py_members(group) == {"out": (f"file://{tmp_path}/outside", "out", "array")}
    with tiledb.Group(str(group), "w") as G:  # and TileDB-Py goes on from our file
        G.add("sub", name="S2", relative=True)
    assert sorted(_py_members(group)) == ["S2", "out"] == sorted(_our_members(group))


@pytest.mark.parametrize("version", [12, 17])
def test_details_version_1(tmp_path, version):
    """v12-v17: details version 1, the whole list in each file, no name suffix; TileDB-Py reads the latest."""
    root = tmp_path / "g"
    tdbformat.create_group(root, version=version)
    _array(root / "arr")
    tiledb.Group.create(str(root / "sub"))
    with tdbformat.Group(root, version=version) as g:
        g.add("arr", name="arr", relative=True)
        g.add("sub", name="sub", relative=True)
    with tdbformat.Group(root) as g:
        assert g.version == version
        g.remove("sub")
    files = sorted((root / "__group").iterdir(), key=lambda p: int(p.name.split("_")[2]))
    assert all(len(p.name.split("_")) == 5 for p in files)  # __t1_t2_uuid: no suffix
    first = GroupDetails.parse(files[0].read_bytes())
    assert first.version == 1 and first._generic_tile.version == version
    assert [(m.version, m.uri, m.name, m.relative, m.object_type.name) for m in first.members] == [
        (1, "arr", "arr", True, "ARRAY"), (1, "sub", "sub", True, "GROUP")]
    assert _py_members(root) == {"arr": (f"file://{root}/arr", "arr", "array")}


def test_a_v16_corpus_group_takes_a_member(tmp_path):
    root = tmp_path / "g"
    shutil.copytree(CORPUS / "v16_tiledb-py-0.19.1_core-2.13.1/group/group", root)
    before = _py_members(root)
    with tdbformat.Group(root) as g:
        assert g.version == 16
        g.remove("sub")
    assert _py_members(root) == {k: v for k, v in before.items() if k != "sub"}


def test_before_v12_a_group_is_its_marker(tmp_path):
    root = tmp_path / "g"
    g = tdbformat.create_group(root, version=11)
    assert [p.name for p in root.iterdir()] == ["__tiledb_group.tdb"]
    assert (root / "__tiledb_group.tdb").read_bytes() == b""
    assert tiledb.object_type(str(root)) == "group"
    with pytest.raises(ValueError, match="version 12"):
        g.add("x")


def test_errors(group, tmp_path):
    with pytest.raises(ValueError, match="already holds"):
        tdbformat.create_group(group)
    with pytest.raises(ValueError, match="already holds"):
        tdbformat.create_group(group / "arr")
    with pytest.raises(ValueError, match="version"):
        tdbformat.create_group(tmp_path / "new", version=24)
    with pytest.raises(ValueError, match="not a TileDB group"):
        tdbformat.Group(group / "arr")
    g = tdbformat.Group(group)
    with pytest.raises(ValueError, match="neither"):
        g.add("nothing", relative=True)
    g.add("arr", name="A", relative=True)
    with pytest.raises(ValueError, match="already added"):
        g.add("sub", name="A", relative=True)
    with pytest.raises(ValueError, match="no member"):
        g.remove("B")
    with pytest.raises(TypeError):
        g.add(3)
    g.close()
    assert list((group / "__group").iterdir())[0].name.endswith("_2")
    assert not [p for p in (group / "__group").iterdir() if p.name.endswith(".tmp")]


def test_a_failed_write_leaves_nothing(group, monkeypatch):
    def no_space(*args):
        raise OSError(28, "No space left on device")
    g = tdbformat.Group(group)
    g.add("arr", name="A", relative=True)
    with monkeypatch.context() as m:
        m.setattr("tdbformat.storage.os.replace", no_space)
        with pytest.raises(tdbformat.StorageError, match="No space left"):
            g.close()
    assert not (group / "__group").exists() or not list((group / "__group").iterdir())
    assert _py_members(group) == {}
    g.close()  # the queued change is still there, and now written
    assert list(_py_members(group)) == ["A"]


def test_one_member_file_equals_tiledb_pys(tmp_path):
    """With one member (no hash-map order to differ), the details file is TileDB-Py's byte for byte, for an
    addition and for a removal."""
    made = {}
    for who in ("ours", "theirs"):
        root = tmp_path / who
        tiledb.Group.create(str(root))
        _array(root / "arr")
        if who == "ours":
            with tdbformat.Group(root, version=22, timestamp=10) as g:
                g.add("arr", name="A", relative=True)
            with tdbformat.Group(root, timestamp=11) as g:
                g.remove("A")
        else:
            with tiledb.Group(str(root), "w") as G:
                G.add("arr", name="A", relative=True)
            with tiledb.Group(str(root), "w") as G:
                G.remove("A")
        made[who] = sorted(p.read_bytes() for p in (root / "__group").iterdir())  # TileDB-Py's may share a ms
    assert made["ours"] == made["theirs"] and len(made["ours"]) == 2


def test_encrypted(tmp_path):
    """An encrypted group: our details file is encrypted with its key, and TileDB-Py lists both sides' members."""
    key = "0123456789abcdeF0123456789abcdeF"
    ctx = tiledb_ctx(key)
    root = tmp_path / "g"
    tiledb.Group.create(str(root), ctx=ctx)
    tiledb.Group.create(str(root / "sub"), ctx=ctx)
    with tiledb.Group(str(root), "w", ctx=ctx) as G:
        G.add("sub", name="S", relative=True)
    with tdbformat.Group(root, key=key) as g:
        g.add("sub", name="T", relative=True)
    written = max((root / "__group").iterdir(), key=lambda p: int(p.name.split("_")[2]))
    with pytest.raises(tdbformat.EncryptionError):
        GroupDetails.parse(written.read_bytes())
    assert GroupDetails.parse(written.read_bytes(), key=key)._generic_tile.encryption_type == 1
    with tiledb.Group(str(root), ctx=ctx) as G:
        assert sorted(m.name for m in G) == ["S", "T"]
