"""Behaviours of TileDB's code that the shared corpus does not show, on real files TileDB-Py 0.36 wrote
(scripts/make_behaviours.py, tests/data/behaviours/): each file parses and rebuilds byte for byte, reads equal
TileDB-Py's (its truth.json, and TileDB-Py itself when installed), and shows its behaviour."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from tdbformat import FormatError, FormatWarning, open_array, parse_file
from tdbformat.enums import NodeType

DATA = Path(__file__).parent / "data" / "behaviours"
CASES = sorted(p.parent for p in DATA.glob("*/truth.json"))


def _truth(case: Path) -> dict:
    return json.loads((case / "truth.json").read_text())


def _key(case: Path):
    """The AES-256-GCM key of an encrypted case (truth.json has it), else None."""
    return _truth(case).get("key")


def _files(case: Path) -> list:
    return sorted(p for p in (case / "array").rglob("*") if p.is_file())


#: files TileDB wrote wrong: they raise FormatError, and reads go around them (tests below)
BROKEN = {"back_compat_v11": ".meta"}
#: arrays TileDB 2.30 cannot open (truth.json records its error)
UNOPENABLE = {"back_compat_v11", "evolved_pre_v10_array", "evolved_encrypted_array"}
#: arrays TileDB-Py reads only before this timestamp (truth.json records its error after)
UNREADABLE_FROM = {"attribute_added_back": 3}


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_every_file_rebuilds_byte_for_byte(case):
    for path in _files(case):
        if path.suffix == BROKEN.get(case.name):
            with pytest.raises(FormatError):
                parse_file(path)
            continue
        parsed = parse_file(path, key=_key(case))
        if parsed.kind != "data":
            assert parsed.build() == path.read_bytes(), path.name


def _read(case, **kw) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if case.name in BROKEN else "error", FormatWarning)
        return open_array(case / "array", key=_key(case), **kw).read(order="G")


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_reads_equal_tiledb_py(case):
    want = _truth(case)["read_global_order"]
    got = _read(case)
    assert sorted(got) == sorted(want)
    for name, values in want.items():
        column = got[name]
        assert (column.tolist() if column.dtype != object else [str(v) for v in column]) == values, name


def _ops(node, out):
    if node.node_type == NodeType.EXPRESSION:
        out.append(node.expression.combination_op.name)
        for child in node.expression.children:
            _ops(child, out)
    else:
        out.append(node.comparison.op.name)
    return out


def test_delete_conditions_hold_in_not_in_and_expressions():
    case = DATA / "delete_conditions"
    dels = sorted((case / "array" / "__commits").glob("*.del"))
    ops = [_ops(parse_file(p).value.condition, []) for p in dels]
    # TileDB stores the negated condition: IN becomes NOT_IN, AND becomes OR of negations (De Morgan)
    assert ops[0] == ["NOT_IN"] and ops[1] == ["IN"]
    assert ops[2][0] == "OR" and set(ops[2][1:]) == {"LE", "GE"}
    assert ops[3][0] == "AND" and set(ops[3][1:]) == {"NE"}
    first = parse_file(dels[0]).value.condition.comparison
    members = np.frombuffer(first.value, "<i4").tolist()
    assert members == [1, 5] and first.offsets.tolist() == [0, 4]


def test_consolidated_commits_embed_the_whole_delete_file():
    case = DATA / "consolidated_commits_with_delete"
    con = next((case / "array" / "__commits").glob("*.con"))
    entries = parse_file(con).value.entries
    embedded = [e for e in entries if e.uri.endswith(".del")]
    assert len(embedded) == 1
    raw = con.read_bytes()
    start = raw.index(embedded[0].uri.encode()) + len(embedded[0].uri) + 1 + 8
    del_file = case / "array" / embedded[0].uri
    assert raw[start:start + embedded[0].delete_size] == del_file.read_bytes()


def test_a_fragment_newer_than_its_schema():
    """TileDB 2.30 writes to a v5 array at its own version (ArraySchema::write_version: schemas older than v7
    get the library's), so a v22 fragment names the v5 __array_schema.tdb."""
    arr = open_array(DATA / "fragment_newer_than_schema" / "array")
    assert [(n, s["version"]) for n, s in arr.schemas] == [("__array_schema.tdb", 5)]
    frags = sorted(arr.fragments, key=lambda f: f.version)
    assert [f.version for f in frags] == [5, 22]
    assert frags[1].metadata.footer.array_schema_name == "__array_schema.tdb"


def test_an_evolved_pre_v10_array_that_tiledb_cannot_open():
    """After schema evolution the array has a v5 schema, a v22 one, a v5 fragment and a v22 fragment naming
    the v5 schema; TileDB 2.30 fails to open it (truth.json records the error) and we read every cell, the new
    attribute filled."""
    case = DATA / "evolved_pre_v10_array"
    assert "past end" in _truth(case)["tiledb_error_after_evolution"]
    arr = open_array(case / "array")
    assert [s["version"] for _, s in arr.schemas] == [5, 22]
    assert sorted(f.version for f in arr.fragments) == [5, 22]


def test_an_attribute_added_back_with_another_pipeline():
    """Fragment 1's tile of ``a`` is zstd (its schema's pipeline), fragment 4's double delta + gzip (the new
    schema's); TileDB decodes both with the new one and fails (truth.json), we each with its own."""
    case = DATA / "attribute_added_back"
    assert "GZipException" in _truth(case)["tiledb_error_reading"]
    arr = open_array(case / "array")
    pipelines = {f.name.split("_")[2]: [x.type.name for x in f.metadata.index_fields[f.index("a")].filters.filters]
                 for f in arr.fragments}
    assert pipelines == {"1": ["ZSTD"], "4": ["DOUBLE_DELTA", "GZIP"]}
    assert _read(case, timestamp=2)["b"].tolist() == list(range(5)) and "a" not in _read(case, timestamp=2)


def test_two_writes_at_the_same_timestamp():
    """Of equal coordinates, the cell of the fragment whose name sorts last, in every order: TileDB's
    global-order read gives that, its row-major read another for some cells (truth.json, DISCREPANCIES.md)."""
    truth = _truth(DATA / "same_timestamp_writes")
    arr = open_array(DATA / "same_timestamp_writes" / "array")
    rows, cells = arr.read(order="C"), truth["read_global_order"]
    assert rows["x"].tolist() == sorted(cells["x"]) and rows["a"].tolist() == cells["a"]  # 1-D: G is sorted
    assert rows["a"].tolist() != truth["tiledb_row_major_read"]["a"]


def test_an_encrypted_array_evolved_into_a_plain_schema():
    """TileDB 2.30 evolves an encrypted array into an unencrypted schema and then cannot open it (truth.json);
    the fragment written before is encrypted, as its own schema says, and reads with the key."""
    case = DATA / "evolved_encrypted_array"
    assert "encrypted with NO_ENCRYPTION" in _truth(case)["tiledb_error_after_evolution"]
    names = sorted(p for p in (case / "array" / "__schema").iterdir() if p.is_file())
    assert [parse_file(p, key=_key(case)).value["_generic_tile"].encryption_type.name for p in names] == [
        "AES_256_GCM", "NO_ENCRYPTION"]
    assert _read(case)["a"].tolist() == [10, 40, 70]


def test_a_back_compat_v11_write_and_its_broken_meta():
    """TileDB 2.30 keeps writing v11 into a v11 array, with 8 more footer bytes (the fragment summary offset);
    consolidating the fragment metadata then writes each v11 footer with those 8 bytes but offsets the table
    by the shorter loaded size, so the second footer's offset points 8 bytes early. TileDB cannot open the
    array; we warn, read each fragment's own footer, and return every cell (truth: TileDB before the .meta)."""
    case = DATA / "back_compat_v11"
    assert _truth(case)["tiledb_error_after_consolidation"]
    with pytest.warns(FormatWarning, match="reading each fragment's own metadata file instead"):
        arr = open_array(case / "array")
    frags = sorted(arr.fragments, key=lambda f: f.timestamp_range)
    assert [f.version for f in frags] == [11, 11]
    footers = [f.metadata.footer for f in frags]
    assert footers[0].get("backcompat_fragment_summary_offset") is None  # TileDB 2.7 wrote it
    assert footers[1].get("backcompat_fragment_summary_offset")  # TileDB 2.30 did
    meta = next((case / "array").glob("*.meta"))
    with pytest.raises(FormatError, match="footers"):
        parse_file(meta)


def test_v8_escapes_field_names_in_file_names():
    """TileDB 2.30 writing to a v8 schema percent-encodes attribute names in data file names, with its odd
    codes for <, >, backslash and | (REFERENCE.md §17 #23)."""
    case = DATA / "escaped_names_v8"
    folder = next(p for p in (case / "array").iterdir() if p.is_dir())
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(["__fragment_metadata.tdb", "a%20b%2D%26c.tdb", "s%2Fx%3F%3C%22%30.tdb",
                            "s%2Fx%3F%3C%22%30_var.tdb", "x.tdb", "y.tdb"])
    assert sorted(_read(case)) == sorted(["a<b>&c", 's/x?|"\\', "x", "y"])


def test_an_update_commit_deletes_what_it_matches():
    """TileDB's readers apply an update's (negated) condition as a delete and ignore its values; truth.json
    is TileDB-Py's read: the cells with a < 3 are gone and b is unchanged."""
    case = DATA / "update_commit"
    upd = parse_file(next((case / "array" / "__commits").glob("*.upd"))).value
    assert upd.condition.comparison.op.name == "GE" and upd.condition.comparison.field_name == "a"
    assert [(a.field_name, np.frombuffer(a.value, "<f8").tolist()) for a in upd.update_values.assignments] == \
        [("b", [9.5])]
    got = _read(case)
    assert len(got["a"]) == 30 and got["a"].min() >= 3
    assert got["b"].tolist() == (got["d"] / 4.0).tolist()  # as written: the update's value is not applied


tiledb = pytest.importorskip("tiledb")


@pytest.mark.parametrize("case", [c for c in CASES if c.name not in UNOPENABLE], ids=lambda p: p.name)
def test_reads_equal_live_tiledb_py_at_every_timestamp(case):
    stamps = sorted({int(p.name.split("_")[2]) for p in _files(case) if p.parent.name in ("__commits", "__fragments")
                     or p.name.endswith(".ok")} | {0})
    for ts in [*stamps, None]:
        with tiledb.open(str(case / "array"), timestamp=ts) as A:
            if case.name in UNREADABLE_FROM and (ts is None or ts >= UNREADABLE_FROM[case.name]):
                with pytest.raises(tiledb.TileDBError):
                    A.query(order="G")[:]
                continue
            want = A.query(order="G")[:]
        got = _read(case, timestamp=ts)
        assert sorted(got) == sorted(want), ts
        for name in want:
            assert np.asarray(got[name]).tolist() == np.asarray(want[name]).tolist(), (ts, name)
