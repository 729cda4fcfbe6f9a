"""Messages that say what happened: what a path is when it is not an array, groups on the command line,
``cat --attrs``, ``--version``, a bare ``tdbformat``, ``python -m tdbformat``, ``--key`` in validate's words,
what reads a pre-v1 array, and exit codes (2 a bad argument, 1 bad input, 70 a bug in tdbformat)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tiledb

from tdbformat import FormatError, open_array
from tdbformat.cli import main

ROOT = Path(__file__).resolve().parents[2]
PREV1 = ROOT / "tests" / "data" / "prev1" / "tiledb-1.2.2" / "dense_nocomp"
KEY = "0123456789abcdeF0123456789abcdeF"


def _array(uri, ctx=None):
    dom = tiledb.Domain(tiledb.Dim("d", domain=(1, 4), tile=2, dtype=np.int64, ctx=ctx), ctx=ctx)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.int32, ctx=ctx),
                                                                  tiledb.Attr("b", dtype=np.float64, ctx=ctx),
                                                                  tiledb.Attr("c", dtype=np.int8, ctx=ctx)],
                                                ctx=ctx), ctx=ctx)
    with tiledb.open(uri, "w", ctx=ctx) as A:
        A[:] = {"a": np.arange(4, dtype=np.int32), "b": np.arange(4) / 2, "c": np.arange(4, dtype=np.int8)}
    return uri


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    root = tmp_path_factory.mktemp("messages")
    for name in ("x", "y"):
        _array(str(root / "parent" / name))
    tiledb.Group.create(str(root / "group"))
    _array(str(root / "group" / "arr"))
    _array(str(root / "group" / "other"))
    with tiledb.Group(str(root / "group"), "w") as G:
        G.add("arr", name="arr", relative=True)
        G.add("other", name="second", relative=True)
    (root / "plain.txt").write_text("not an array")
    from oracle import tiledb_ctx
    _array(str(root / "enc"), ctx=tiledb_ctx(KEY))
    return root


def _members(uri) -> list:
    """The group's member names as TileDB-Py lists them, sorted (TileDB keeps them in a hash map)."""
    with tiledb.Group(str(uri)) as G:
        return sorted(m.name for m in G)


def _cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("where, says", [
    ("nosuch", "not a TileDB array: no such file or folder"),
    ("plain.txt", "a file, not an array folder (`tdbformat inspect "),
    ("parent", "a folder holding arrays: x, y"),
    ("group", "a TileDB group (members: {members}); `tdbformat ls "),
])
def test_not_an_array_says_what_it_is(places, where, says, capsys):
    says = says.format(members=", ".join(_members(places / "group")))
    with pytest.raises(FormatError) as e:
        open_array(places / where)
    assert says in str(e.value)
    if where == "group":  # `cat GROUP` shows the group (exit 0)
        return
    rc, out, err = _cli(capsys, "cat", places / where)
    assert (rc, out) == (1, "") and says in err and "Traceback" not in err


def test_cat_csv_of_a_group_is_a_usage_error_naming_its_members(places, capsys):
    rc, out, err = _cli(capsys, "cat", "--csv", places / "group")
    assert (rc, out) == (2, "")
    assert "is a TileDB group" in err and ", ".join(_members(places / "group")) in err and "tdbformat ls" in err
    rc, out, _ = _cli(capsys, "cat", "--json", places / "group")
    import json
    doc = json.loads(out)
    assert rc == 0 and doc["kind"] == "group" and sorted(m["name"] for m in doc["members"]) == _members(places / "group")
    for command in ("schema", "fragments"):  # they take no --csv: argparse says so
        with pytest.raises(SystemExit) as e:
            main([command, "--csv", str(places / "group")])
        assert e.value.code == 2


@pytest.mark.parametrize("argv, columns", [
    (["--attrs", "a"], ["d", "a"]),
    (["--attrs", "a,b"], ["d", "a", "b"]),
    (["--attrs", "c", "--attrs", "a"], ["d", "c", "a"]),
])
def test_cat_attrs_takes_commas_and_never_the_path(places, argv, columns, capsys):
    rc, out, err = _cli(capsys, "cat", "--csv", *argv, places / "group" / "arr")
    assert rc == 0, err
    assert out.splitlines()[0].split(",") == columns
    assert len(out.splitlines()) == 5


def test_version_and_bare_command(capsys):
    from importlib.metadata import version
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"tdbformat {version('tdbformat')}"
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tdbformat") and "cat" in out and "validate" in out


def test_python_dash_m_tdbformat(places):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "tdbformat", "cat", "--csv", "--attrs", "a", str(places / "group" / "arr")],
                       capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.splitlines() == ["d,a", "1,0", "2,1", "3,2", "4,3"], r.stderr
    r = subprocess.run([sys.executable, "-m", "tdbformat"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.startswith("usage: tdbformat")


def test_validate_of_an_encrypted_array_names_key_option(places, capsys):
    rc, out, _ = _cli(capsys, "validate", places / "enc")
    assert rc == 1 and "--key" in out and "key=" not in out
    rc, out, _ = _cli(capsys, "validate", "--json", places / "enc")
    import json
    [finding] = json.loads(out)["findings"]
    assert rc == 1 and "--key" in finding["message"] and "key=" not in finding["message"]
    rc, out, _ = _cli(capsys, "validate", places / "enc", "--key", KEY)
    assert rc == 0, out


def test_versions_of_a_pre_v1_array_says_what_reads_it(capsys):
    rc, out, err = _cli(capsys, "versions", PREV1)
    assert rc == 1 and "not supported" not in err
    assert "tdbformat reads it" in err and "TileDB up to 1.3" in err
    assert main(["cat", str(PREV1), "--limit", "1"]) == 0  # as it says


def test_exit_codes(places, tmp_path, capsys, monkeypatch):
    arr = places / "group" / "arr"
    assert _cli(capsys, "cat", arr, "--range", "nope=1:2")[0] == 2  # an argument the API refused
    assert _cli(capsys, "cat", arr, "--range", "d=0:9")[0] == 2  # out of the domain
    bad = tmp_path / "__schema" / "__1_1_00000000000000000000000000000000"
    bad.parent.mkdir()
    bad.write_bytes(b"\x17\x00\x00\x00" + b"\xff" * 40)
    rc, _, err = _cli(capsys, "inspect", bad)
    assert rc == 1 and "Array schema" in err and "Traceback" not in err  # input that breaks the format
    import tdbformat.cli.cat as cat_mod

    def broken(*args, **kwargs):
        return np.zeros(2).reshape(3)  # numpy's ValueError: ours to fix, not the user's argument
    monkeypatch.setattr(cat_mod, "write_cells", broken)
    rc, _, err = _cli(capsys, "cat", arr)
    assert rc == 70 and "Traceback" in err and "a bug in tdbformat" in err and "cannot reshape" in err
    monkeypatch.setattr(cat_mod, "write_cells", lambda *a, **k: {}["missing"])
    rc, _, err = _cli(capsys, "cat", arr)
    assert rc == 70 and "KeyError" in err and "a bug in tdbformat" in err
    monkeypatch.undo()
    import tdbformat.array.ranges as ranges
    monkeypatch.setattr(ranges, "range_bound", int)  # a TypeError from Python, raised on a line of ours
    rc, _, err = _cli(capsys, "cat", arr, "--range", "d=1:2")
    assert rc == 70 and "TypeError" in err and "a bug in tdbformat" in err
