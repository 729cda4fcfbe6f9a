"""``versions`` as a gate, on arrays and groups: the release table against the spec's history, the corpus
(each folder names the TileDB that wrote it) and the installed TileDB-Py (its TileDB, the version it writes,
what it refuses); the gate's exit codes and convert commands, run and then opened by TileDB-Py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import corpus
import pygroups
from tdbformat.check.gate import lowest_convertible, versions
from tdbformat.check.releases import (READS_SINCE, TILEDB_PY_CORE, newest_readable, oldest_tiledb_py,
                                      parse_reader, release)
from tdbformat.versions import KNOWN_VERSIONS

tiledb = pytest.importorskip("tiledb")
ROOT = Path(__file__).resolve().parents[2]
_FOLDER = re.compile(r"v(\d+)_(?:tiledb-py-([\d.]+)_)?(?:c-api_)?core-(\d+\.\d+\.\d+)$")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tdbformat.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


def test_reads_since_is_the_spec_history_but_v23():
    text = (ROOT / "tests" / "data" / "spec" / "array_format_history.md").read_text()
    spec = {int(v): r for v, r in re.findall(r"## Version (\d+)\s+Introduced in TileDB ([\d.]+)", text)}
    assert {v: r for v, r in READS_SINCE.items() if v != 23} == {v: r for v, r in spec.items() if v != 23}
    assert spec[23] == "2.30" and READS_SINCE[23] == "2.31"  # 2.30.0 refuses v23: test_installed_tiledb_py


def test_table_is_ordered_and_each_release_bundles_a_newer_tiledb():
    py = [release(p) for p, _ in TILEDB_PY_CORE]
    core = [release(c) for _, c in TILEDB_PY_CORE]
    assert py == sorted(py) and len(set(py)) == len(py)
    assert core == sorted(core)


@pytest.mark.parametrize("folder", sorted(p.name for p in corpus.CORPUS.iterdir() if _FOLDER.match(p.name)))
def test_corpus_writers_read_what_they_wrote(folder):
    """Each corpus folder names the format version its TileDB wrote: that TileDB opens exactly up to it, and the
    TileDB-Py release named bundles that TileDB's major.minor."""
    version, py, core = _FOLDER.match(folder).groups()
    assert newest_readable(f"libtiledb=={core}") == int(version)
    if py:
        assert release(parse_reader(f"tiledb-py=={py}")[1])[:2] == release(core)[:2]
        assert newest_readable(f"tiledb-py=={py}") == int(version)
        assert release(oldest_tiledb_py(int(version))) <= release(py)


def test_installed_tiledb_py(tmp_path):
    """The installed TileDB-Py: its TileDB as the table says, writing the newest version the table says it
    reads, and refusing the next one (the v23 corpus), as the gate predicts."""
    core = ".".join(map(str, tiledb.libtiledb.version()))
    assert release(parse_reader(f"tiledb-py=={tiledb.__version__}")[1])[:2] == release(core)[:2]
    newest = newest_readable(f"tiledb-py=={tiledb.__version__}")
    pygroups.dense(tiledb, tmp_path / "a")
    with tiledb.open(str(tmp_path / "a")) as A:
        assert A.schema.version == newest
    newer = next(c for c in corpus.cases() if c.parent.name.startswith(f"v{newest + 1}_")
                 and corpus.truth(c).get("kind", "array") == "array" and corpus.key(c) is None)
    assert versions(corpus.root(newer))["newest_format_version"] == newest + 1
    with pytest.raises(tiledb.TileDBError, match="newer than the library format version"):
        tiledb.open(str(corpus.root(newer)))


def test_oldest_tiledb_py_for_each_version():
    assert oldest_tiledb_py(22) == "0.31.0" and oldest_tiledb_py(18) == "0.21.1" and oldest_tiledb_py(8) == "0.8.1"
    assert oldest_tiledb_py(1) is None  # 0.4.0 bundles 1.5; what read 1.4 the notes do not say
    assert [newest_readable(r) for r in ("tiledb-py==0.21.6", "tiledb==0.21.0", "2.2.2", "2.2.3", "1.3")] == \
        [18, 17, 7, 8, 0]
    for bad in ("tiledb-py==0.3.0", "numpy==1.0", "tiledb-py==x"):
        with pytest.raises(ValueError, match="reader|release"):
            newest_readable(bad)


@pytest.mark.parametrize("case", [c for c in corpus.cases() if corpus.truth(c).get("kind", "array") == "array"
                                  and re.search(r"enumerations|current_domain|dimension_labels", c.name)
                                  and c.parent.name.startswith("v2")], ids=corpus.case_id)
def test_lowest_convertible_names_the_feature(case, tmp_path):
    """One below the lowest, convert refuses before writing, naming that feature; at the lowest it converts
    and TileDB-Py (v22 at most) reads the copy as the source."""
    from tdbformat import convert
    lowest, blocked = lowest_convertible(corpus.root(case), key=corpus.key(case))
    assert blocked is not None and blocked["version"] == lowest - 1
    with pytest.raises(ValueError, match=re.escape(blocked["reason"][:40])):
        convert(corpus.root(case), tmp_path / "low", lowest - 1, key=corpus.key(case))
    assert not (tmp_path / "low").exists()


def test_gate_on_a_tiledb_py_group(tmp_path):
    g = pygroups.build(tiledb, tmp_path)
    doc = versions(g)
    rows = {r["key"]: r for r in doc["objects"]}
    assert rows["gone"]["missing"] and "format_version" not in rows["gone"]
    assert {k for k, r in rows.items() if r.get("format_version") == 22} == {"A", "sub/b", "out", "sib"}
    assert all(r["lowest_convertible_version"] == 1 for r in rows.values() if "format_version" in r)
    r = _cli("versions", g, "--reader", "tiledb-py==0.21.6", "--json")
    assert r.returncode == 1, r.stderr
    gate = json.loads(r.stdout)["gate"]
    assert gate["max_format"] == 18 and {f["key"] for f in gate["failures"]} == {"A", "sub/b", "out", "sib"}
    for f in gate["failures"]:  # run each fix: TileDB-Py opens the copy at v18, equal to the source
        cmd = f["command"].split()
        assert cmd[:2] == ["tdbformat", "convert"] and cmd[-2:] == ["--version", "18"]
        assert _cli(*cmd[1:]).returncode == 0
        with tiledb.open(cmd[3]) as A, tiledb.open(cmd[2]) as B:
            assert A.schema.version == 18
            for k, v in B[:].items():
                np.testing.assert_array_equal(A[:][k], v)
        assert versions(cmd[3], max_format=18)["gate"]["passed"]
    assert _cli("versions", g, "--max-format", "22").returncode == 0
    out = _cli("versions", g, "--max-format", "20")
    assert out.returncode == 1 and "tdbformat convert" in out.stdout and "gone" in out.stdout


def test_json_validates():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "json-schema" / "versions.v1.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for args in (["tests/data/soma/experiment", "--max-format", "21"],
                 ["tests/data/corpus/v22_tiledb-py-0.36.1_core-2.30.0/group/group"],
                 ["tests/data/corpus/v20_tiledb-py-0.23.5_core-2.17.5/dimension_labels/array", "--max-format", "17"]):
        r = _cli("versions", *args, "--json")
        assert r.returncode in (0, 1), r.stderr
        jsonschema.validate(json.loads(r.stdout), schema)


def test_soma_needs_v22_everywhere():
    doc = versions(ROOT / "tests" / "data" / "soma" / "experiment", reader="tiledb-py==0.30.1")
    arrays = [r for r in doc["objects"] if r["type"] == "array"]
    assert arrays and all(r["format_version"] == 22 and r["lowest_convertible_version"] == 22 for r in arrays)
    assert not doc["gate"]["passed"] and all(f["command"] is None and "current domain" in f["reason"]
                                             for f in doc["gate"]["failures"])
    assert KNOWN_VERSIONS[-1] >= 22


def test_a_huge_cell_val_num_is_no_memory_error(tmp_path):
    """A v5 schema whose attribute claims 2**31-1 values per cell (a fuzz case): finding the lowest version
    convert reaches builds the schema at v4..v1, which store no fill value, so none is made (one was: 16 GiB;
    here the process may map 3 GiB)."""
    import shutil
    from tdbformat.structs.array_schema import ArraySchema
    src = corpus.root(corpus.CORPUS / "v5_c-api_core-2.0.8" / "consolidated_dense_vacuumed")
    shutil.copytree(src, tmp_path / "a")
    path = tmp_path / "a" / "__array_schema.tdb"
    schema = ArraySchema.parse(path.read_bytes())
    schema.attributes[0].cell_val_num = 2**31 - 1
    path.write_bytes(ArraySchema.build(schema))
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
            "from tdbformat.check.gate import versions\n"
            "try:\n    versions(sys.argv[1])\nexcept ValueError:\n    pass\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a")], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("case", [c for c in corpus.cases() if c.name in ("enumerations", "fill_values", "filter_delta")
                                  and c.parent.name.startswith("v22")], ids=corpus.case_id)
def test_the_feature_is_placed_on_its_attributes(case):
    """The attributes that carry the feature that stops convert going lower, as TileDB-Py sees them."""
    (row,) = [r for r in versions(corpus.root(case))["objects"]]
    places = row["lower_blocked_by"]["places"]
    with tiledb.open(str(corpus.root(case))) as A:
        attrs = [A.schema.attr(i) for i in range(A.schema.nattr)]
        if case.name == "enumerations":
            want = [a.name for a in attrs if a.enum_label]
        elif case.name == "filter_delta":
            want = [a.name for a in attrs if any(isinstance(f, tiledb.DeltaFilter) for f in a.filters)]
        else:
            want = [a.name for a in attrs if A.schema.attr(a.name).fill is not None]
    assert places and set(places) <= set(want) and (case.name == "fill_values" or places == want)


def test_groups_show_their_details_version():
    """A group's row carries the format version of its latest details file (the generic tile's), as the
    corpus folder that wrote it says; a group of markers only (v12-) has none."""
    for case in [c for c in corpus.cases() if corpus.truth(c).get("kind") == "group"]:
        writer = int(case.parent.name.split("_")[0][1:])
        groups = [r for r in versions(corpus.root(case))["objects"] if r["type"] == "group"]
        assert groups and all(r["details_format_version"] == writer for r in groups), case
