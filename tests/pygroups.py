"""Groups built with TileDB-Py, the oracle, for the dataset commands' tests (open_group, versions, du...):
nested groups, members by relative, ``..`` and absolute URIs, named and unnamed, one lost from disk."""

from __future__ import annotations

import os
import shutil

import numpy as np


def dense(tiledb, path, writes=1, version_ts=None):
    """A 1-D dense int64 array with ``writes`` fragments (timestamps 1, 2, ...)."""
    dim = tiledb.Dim(name="d", domain=(0, 9), tile=5, dtype=np.int32)
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=tiledb.Domain(dim),
                                                      attrs=[tiledb.Attr(name="a", dtype=np.int64)]))
    for t in range(1, writes + 1):
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[:] = np.arange(10, dtype=np.int64) * t
    return path


def sparse(tiledb, path, writes=1):
    """A 2-D sparse array (int64 dims, a float64 and a var string attribute) with ``writes`` fragments."""
    dims = [tiledb.Dim(name="x", domain=(0, 99), tile=10, dtype=np.int64),
            tiledb.Dim(name="y", domain=(0, 99), tile=10, dtype=np.int64)]
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=4,
                                                      attrs=[tiledb.Attr(name="v", dtype=np.float64),
                                                             tiledb.Attr(name="s", dtype=str, var=True)]))
    for t in range(1, writes + 1):
        x = np.arange(t, 40 + t, 3, dtype=np.int64)
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[x, x[::-1]] = {"v": x * 0.5, "s": np.array([f"s{i}" * (i % 4) for i in x], dtype=object)}
    return path


def build(tiledb, tmp_path):
    """``tmp_path/g``: arrays ``A`` (relative, named), ``sub`` (a relative unnamed group holding ``b``), an
    absolute unnamed ``out`` outside, ``sib`` by ``../sib``, ``gone`` deleted after it was added; metadata."""
    g = tmp_path / "g"
    tiledb.Group.create(str(g))
    dense(tiledb, g / "a", writes=2)
    tiledb.Group.create(str(g / "sub"))
    sparse(tiledb, g / "sub" / "b", writes=2)
    dense(tiledb, tmp_path / "out")
    dense(tiledb, tmp_path / "sib")
    dense(tiledb, g / "gone")
    with tiledb.Group(str(g / "sub"), "w") as s:
        s.add("b", name="b", relative=True)
        s.meta["level"] = "sub"
    with tiledb.Group(str(g), "w") as G:
        G.add("a", name="A", relative=True)
        G.add("sub", relative=True)
        G.add(os.path.abspath(tmp_path / "out"))
        G.add("../sib", name="sib", relative=True)
        G.add("gone", name="gone", relative=True)
        G.meta["x"] = 1
        G.meta["f"] = np.array([1.5, 2.5])
    shutil.rmtree(g / "gone")
    return g


def py_members(tiledb, path) -> set:
    """{(name, uri, "array" | "group")} of one group, as TileDB-Py lists them."""
    with tiledb.Group(str(path)) as G:
        return {(m.name, m.uri, "array" if m.type is tiledb.Array else "group") for m in G}


def timed_members(tiledb, group, steps) -> None:
    """Apply ``[(t, names to add, names to remove), ...]`` to ``group``, each at its time (ms) through
    TileDB-Py's ``sm.group.timestamp_end``; members are relative and named as their folder."""
    for t, add, remove in steps:
        with tiledb.Group(str(group), "w", config=tiledb.Config({"sm.group.timestamp_end": str(t)})) as G:
            for n in add:
                G.add(n, name=n, relative=True)
            for n in remove:
                G.remove(n)
