"""A consolidation, a vacuum and a schema evolution killed (SIGKILL) before each of their file writes, renames
and removals: afterwards the array reads exactly as before or exactly as after, to TileDB-Py and to tdbformat,
at now and at every write's timestamp (a dense vacuum: from the consolidated fragment's end on)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tiledb = pytest.importorskip("tiledb")

import tdbformat  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# the child counts the calls that change files and kills itself just before call KILL_AT
_CHILD = r"""
import builtins, os, shutil, signal, sys
kill_at, count = int(os.environ["KILL_AT"]), [0]

def step():
    count[0] += 1
    if count[0] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)

def wrap(module, name):
    real = getattr(module, name)
    def call(*a, **k):
        step()
        return real(*a, **k)
    setattr(module, name, call)

real_open = builtins.open
def opened(file, mode="r", *a, **k):
    if any(c in mode for c in "wax+"):
        step()
    return real_open(file, mode, *a, **k)
builtins.open = opened
import io
io.open = opened  # (pathlib opens through io.open)
for name in ("replace", "rename", "remove", "unlink", "rmdir"):
    wrap(os, name)
wrap(shutil, "rmtree")

import numpy as np
import tdbformat
from tdbformat import schema as S
op, path = sys.argv[1], sys.argv[2]
if op == "consolidate":
    tdbformat.consolidate(path)
elif op == "consolidate-cut":  # several fragments, committed together
    tdbformat.consolidate(path, config={"sm.consolidation.max_fragment_size": os.environ["MAX_SIZE"]})
elif op == "vacuum":
    tdbformat.vacuum(path)
elif op == "evolve":
    ev = tdbformat.ArraySchemaEvolution()
    ev.drop_attribute("b")
    ev.add_attribute(S.Attr("c", dtype=np.int16))
    ev.array_evolve(path)
"""

_TIMES = (10, 20, 25, 30)


def _build(path, dense):
    if dense:
        dom = tiledb.Domain(tiledb.Dim("x", domain=(1, 40), tile=10, dtype=np.int64))
    else:
        dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    attrs = [tiledb.Attr("a", dtype=np.int32), tiledb.Attr("b", dtype=str, var=True)]
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=not dense, attrs=attrs, capacity=3))
    for t, (lo, hi) in zip((10, 20, 30), ((1, 12), (8, 20), (15, 31))):
        xs = np.arange(lo, hi)
        with tiledb.open(str(path), "w", timestamp=t) as A:
            data = {"a": (xs * t).astype(np.int32), "b": np.array([f"v{x}" for x in xs], object)}
            if dense:
                A[lo:hi] = data
            else:
                A[xs] = data
        if t == 20 and not dense:
            with tiledb.open(str(path), "d", timestamp=25) as A:
                A.query(cond="a == 200").submit()


def _reads(path, times=_TIMES) -> list:
    """What TileDB-Py reads at each write's timestamp and now (schema and cells), after checking that
    tdbformat reads the same cells."""
    out = []
    for t in times + (None,):
        with tiledb.open(str(path), timestamp=t) as A:
            theirs = A[:] if A.schema.sparse else A[1:41]
            schema = repr(A.schema)
        ours = tdbformat.open_array(str(path)).read(timestamp=t)
        for k, v in theirs.items():
            assert np.ma.getdata(ours[k]).tolist() == np.ma.getdata(v).tolist(), (path, t, k)
        out.append((schema, repr(theirs)))
    return out


def _run(op, path, kill_at) -> bool:
    """Whether the child ran to its end (False: it was killed)."""
    env = dict(os.environ, KILL_AT=str(kill_at), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _CHILD, op, str(path)], env=env, capture_output=True, timeout=120)
    if done.returncode == -signal.SIGKILL:
        return False
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return True


@pytest.mark.parametrize("dense, ops", [(False, ("consolidate", "vacuum")), (True, ("consolidate", "vacuum")),
                                        (False, ("evolve",)), (False, ("consolidate-cut", "vacuum")),
                                        (True, ("consolidate-cut", "vacuum"))])
def test_killed_at_every_write_the_array_reads_as_before_or_after(tmp_path, dense, ops, monkeypatch):
    monkeypatch.setenv("MAX_SIZE", "400" if dense else "3000")  # (two fragments each)
    base = tmp_path / "base"
    _build(base, dense)
    for op in ops:
        # a dense fragment consolidated across 10-30 is no read's before 30: vacuuming its parts one by one
        # takes the past away part by part (as TileDB's vacuum), so the dense vacuum is checked from 30 on
        times = (30,) if dense and op == "vacuum" else _TIMES
        before = _reads(base, times)
        finished = tmp_path / f"{op}-done"
        shutil.copytree(base, finished)
        assert _run(op, finished, 0)
        after = _reads(finished, times)
        kills = 0
        for kill_at in range(1, 200):
            copy = tmp_path / f"{op}-{kill_at}"
            shutil.copytree(base, copy)
            if _run(op, copy, kill_at):
                break
            kills += 1
            assert _reads(copy, times) in (before, after), (op, kill_at)
            shutil.rmtree(copy)
        assert kills >= 2, op  # it changed files, and was killed before each change
        if op == "consolidate-cut":  # (the cut made two fragments, committed together)
            assert len(tdbformat.open_array(str(finished)).fragments) == 2
        shutil.rmtree(base)
        shutil.copytree(finished, base)  # the next operation starts from this one's result
