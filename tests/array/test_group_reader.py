"""open_group against TileDB-Py's tiledb.Group, the oracle: members (names, URIs, types), len, in, [name],
is_relative, meta, nested groups by walk(); lost members reported, not raised; the corpus groups' truth."""

from __future__ import annotations

import numpy as np
import pytest

import corpus
import pygroups
from tdbformat.array.group import open_group
from tdbformat.errors import FormatError

tiledb = pytest.importorskip("tiledb")
GROUPS = [c for c in corpus.cases() if corpus.truth(c).get("kind") == "group"]


@pytest.fixture
def built(tmp_path):
    return pygroups.build(tiledb, tmp_path)


def test_members_are_tiledb_pys(built):
    G = open_group(built)
    assert {(m.name, m.uri, m.type) for m in G} == pygroups.py_members(tiledb, built)
    with tiledb.Group(str(built)) as P:
        assert len(G) == len(P) == 5
        assert G.uri == P.uri
        for name in ("A", "sib", "gone", "sub", P["A"].uri, "nope"):
            assert (name in G) == (name in P), name  # names only: an unnamed member is not "in"
        for name in ("A", "sib", "gone"):
            assert G[name].uri == P[name].uri and G.is_relative(name) == P.is_relative(name)
        assert set(G.meta) == set(P.meta)
        for k in P.meta:
            np.testing.assert_array_equal(G.meta[k], P.meta[k])
    with pytest.raises(KeyError, match="nope"):
        G["nope"]


def test_walk_enters_nested_groups_and_reports_lost_members(built):
    found = {m.key: m for m in open_group(built).walk()}
    assert set(found) == {"A", "sub", "sub/b", "out", "sib", "gone"}
    assert {(m.name, m.uri, m.type) for m in found.values() if m.key.startswith("sub/")} == \
        pygroups.py_members(tiledb, built / "sub")
    assert found["gone"].missing and "no array" in found["gone"].missing
    assert all(m.missing is None for k, m in found.items() if k != "gone")
    assert str(found["sib"].path.resolve()) == str((built.parent / "sib").resolve())
    assert dict(open_group(built / "sub").meta) == {"level": "sub"}


def test_walk_stops_at_a_cycle(tmp_path):
    tiledb.Group.create(str(tmp_path / "a"))
    tiledb.Group.create(str(tmp_path / "a" / "b"))
    with tiledb.Group(str(tmp_path / "a"), "w") as G:
        G.add("b", name="b", relative=True)
    with tiledb.Group(str(tmp_path / "a" / "b"), "w") as G:
        G.add("..", name="up", relative=True)
    assert [m.key for m in open_group(tmp_path / "a").walk()] == ["b", "b/up"]


def test_a_member_of_another_kind_is_reported(built):
    """A folder the group lists as an array that now holds a group (replaced behind its back)."""
    import shutil
    shutil.rmtree(built / "a")
    tiledb.Group.create(str(built / "a"))
    assert "holds a group" in open_group(built)["A"].missing


def test_not_a_group(tmp_path):
    pygroups.dense(tiledb, tmp_path / "arr")
    with pytest.raises(FormatError, match="not a TileDB group"):
        open_group(tmp_path / "arr")


@pytest.mark.parametrize("case", GROUPS, ids=corpus.case_id)
def test_corpus_groups_are_their_truth(case):
    t = corpus.truth(case)
    G = open_group(corpus.root(case))
    assert sorted((m.stored_uri, m.type, m.name) for m in G) == sorted(
        (m["uri"], m["type"], m["name"]) for m in t["group"]["members"])
    for m in G.walk():
        if m.key in t.get("subgroups", {}):
            want = t["subgroups"][m.key]["members"]
            assert sorted(x.name for x in G.group(m)) == sorted(x["name"] for x in want)
    assert sorted(G.meta) == sorted(t["group"]["metadata"])


def test_soma_experiment_walks_as_tiledb_py_does():
    root = corpus.CORPUS.parent / "soma" / "experiment"

    def py_walk(uri):
        with tiledb.Group(uri) as G:
            for m in G:
                yield m.uri, "array" if m.type is tiledb.Array else "group"
                if m.type is tiledb.Group:
                    yield from py_walk(m.uri)
    ours = open_group(root).walk()
    assert sorted((m.uri, m.type) for m in ours if not m.missing) == sorted(py_walk(str(root)))


def test_short_unnamed_members(tmp_path):
    """Unnamed members with short relative URIs: a member can be 17 bytes (version, type, relative flag, the
    URI's length and one byte, name_set, deleted); the member count's size check must not assume more."""
    g = tmp_path / "g"
    tiledb.Group.create(str(g))
    for n in "ab":
        pygroups.dense(tiledb, g / n)
    with tiledb.Group(str(g), "w") as G:
        G.add("a", relative=True)
        G.add("b", relative=True)
    assert {(m.name, m.uri, m.type) for m in open_group(g)} == pygroups.py_members(tiledb, g)


def test_open_group_at_a_timestamp(tmp_path):
    """Members added and removed at times 10, 20, 30, metadata at 15: open_group(timestamp=T) lists what
    TileDB-Py's Group lists with sm.group.timestamp_end=T."""
    g = tmp_path / "g"
    tiledb.Group.create(str(g))
    for n in "abc":
        pygroups.dense(tiledb, g / n)
    pygroups.timed_members(tiledb, g, ((10, "ab", ""), (20, "c", ""), (30, "", "a")))
    with tiledb.Group(str(g), "w", config=tiledb.Config({"sm.group.timestamp_end": "15"})) as G:
        G.meta["at15"] = 1
    for t in (10, 15, 20, 25, 30):
        with tiledb.Group(str(g), config=tiledb.Config({"sm.group.timestamp_end": str(t)})) as P:
            want = ({m.name for m in P}, set(P.meta.keys()))
        G = open_group(g, timestamp=t)
        assert ({m.name for m in G}, set(G.meta)) == want, t
