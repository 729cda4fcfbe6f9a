"""parse_file on every file of every corpus array and group, and the inspect command."""

import json
import os
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from corpus import HISTORIC, case_id, cases, files, key, root, truth
from tdbformat import FormatError, parse_file
from tdbformat.cli import main

# What each file of an array is, by TileDB's own layout (array_file_hierarchy.md); the corpus holds them all.
EXPECTED_KINDS = {"array_schema", "data", "fragment_metadata", "metadata", "commit", "vacuum",
                  "consolidated_commits", "delete_commit", "consolidated_fragment_metadata", "group_details",
                  "enumeration", "lock", "group_marker"}


@pytest.mark.parametrize("case", cases(), ids=case_id)
def test_every_file_parses_and_builds_back_exactly(case):
    listed = {f["path"]: f["size"] for f in truth(case)["files"]}
    for p in files(root(case)):
        pf = parse_file(p, key=key(case))
        data = p.read_bytes()
        assert len(data) == listed[str(p.relative_to(root(case)))]
        assert pf.build() == data, p


def test_the_corpus_has_every_kind_of_file():
    kinds = Counter(parse_file(p, key=key(c)).kind for c in cases()[::7] for p in files(root(c)))
    assert EXPECTED_KINDS - {"enumeration", "group_details", "group_marker"} <= set(kinds)
    assert {"enumeration", "group_details", "group_marker"} <= {
        parse_file(p, key=key(c)).kind for c in cases() if c.name in ("enumerations", "group") for p in files(root(c))}


def test_historic_arrays_parse():
    for name in ("non_split_coords_v1_4_0", "zero_var_chunks_v10", "sparse_array_v11"):
        for p in files(HISTORIC / "arrays" / name):
            assert parse_file(p).build() == p.read_bytes(), p


def test_files_before_format_version_1_are_parsed_in_their_dialect():
    schema = HISTORIC / "arrays/dense_array_v1_3_0/__array_schema.tdb"  # TileDB 1.3.0 (issue #20)
    parsed = parse_file(schema)
    assert (parsed.kind, parsed.value.version) == ("array_schema_1x", (1, 3, 0))


def test_a_wrong_key_is_a_clear_error():
    case = next(c for c in cases() if c.name == "encrypted_dense" and c.parent.name.startswith("v22"))
    schema = next((root(case) / "__schema").iterdir())
    with pytest.raises(FormatError, match="wrong key"):
        parse_file(schema, key="x" * 32)
    with pytest.raises(FormatError, match="key="):
        parse_file(schema)


def test_inspect_prints_a_tree_with_offsets(capsys):
    case = next(c for c in cases() if c.name == "sparse_delete" and c.parent.name.startswith("v23"))
    assert main(["inspect", str(root(case) / "__schema")]) == 0
    out = capsys.readouterr().out
    # The generic tile header starts at 0; its filter pipeline at 34 (generic_tile.md).
    assert "@0 version = 23" in out and "@34 filter_pipeline:" in out
    assert "dimensions:" in out and "'d'" in out


def test_inspect_json_of_a_whole_array():
    case = next(c for c in cases() if c.name == "sparse_delete" and c.parent.name.startswith("v23"))
    out = subprocess.run([sys.executable, "-m", "tdbformat", "inspect", "--json", str(root(case))],
                         capture_output=True, text=True, check=True).stdout
    doc = json.loads(out)
    parsed = doc["files"]
    assert doc["json_schema"] == "inspect.v1" and len(parsed) == len(truth(case)["files"])
    footers = [p["value"]["footer"] for p in parsed if p["kind"] == "fragment_metadata"]
    schema = next(p["value"] for p in parsed if p["kind"] == "array_schema")
    assert schema["generic_tile"]["version"] == 23 and schema["payload"]["capacity"] == truth(case)["schema"]["capacity"]
    assert sorted(f["non_empty_domain"][0] for f in footers) == \
        sorted(fr["nonempty_domain"][0] for fr in truth(case)["fragments"])


def test_inspect_reports_a_format_error_without_a_traceback(tmp_path, capsys):
    bad = tmp_path / "__schema" / "__1_1_00000000000000000000000000000000"
    bad.parent.mkdir()
    bad.write_bytes(b"\x17\x00\x00\x00" + b"\xff" * 40)
    assert main(["inspect", str(bad)]) == 1
    assert "Array schema" in capsys.readouterr().err


def test_cat_prints_a_string_cell_that_is_not_utf8(tmp_path):
    """A UTF-8 attribute cell holding a byte that is not UTF-8 prints it as \\xNN (it raised UnicodeEncodeError)."""
    case = next(c for c in cases() if c.name == "sparse_2d_rtree" and c.parent.name.startswith("v12"))
    copy = tmp_path / "array"
    shutil.copytree(root(case), copy)
    var = next(copy.rglob("a1_var.tdb"))  # unfiltered: its last byte is the last byte of a string cell
    var.write_bytes(var.read_bytes()[:-1] + b"\xff")
    out = subprocess.run([sys.executable, "-m", "tdbformat", "cat", str(copy)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    assert out.returncode == 0, out.stderr
    assert "\\xff" in out.stdout and "Traceback" not in out.stderr  # the byte, escaped: nothing lost


def test_cat_reports_a_folder_in_place_of_a_data_file_in_one_line(tmp_path, capsys):
    """An unreadable file of the array is bad input: exit code 2 and one line (it was a traceback)."""
    case = next(c for c in cases() if c.name == "sparse_2d_rtree" and c.parent.name.startswith("v12"))
    copy = tmp_path / "array"
    shutil.copytree(root(case), copy)
    var = next(copy.rglob("a1_var.tdb"))
    var.unlink()
    var.mkdir()
    assert main(["cat", str(copy)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tdbformat: ") and err.count("\n") == 1
