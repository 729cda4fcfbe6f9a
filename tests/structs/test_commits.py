"""Commit files (.ok/.wrt, .vac, .ign, .con, .del, .upd) and timestamped names."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest
from construct import Container, GreedyBytes

from corpus import CORPUS, case_id, cases, root, truth
from tdbformat.enums import CombinationOp, QueryConditionOp as Op
from tdbformat.errors import FormatError
from tdbformat.fields import Section, Struct
from tdbformat.structs.commits import (
    CommitMarker, ConsolidatedCommits, DeleteCommit, IgnoreFile, UpdateCommit, VacuumFile, combination, comparison,
    condition_text, negate,
)
from tdbformat.structs.generic_tile import generic_tile
from tdbformat.structs.names import parse_timestamped_name, timestamped_name

STRUCTS = {"ok": CommitMarker, "wrt": CommitMarker, "vac": VacuumFile, "ign": IgnoreFile, "con": ConsolidatedCommits,
           "del": DeleteCommit, "upd": UpdateCommit}


def _norm(node):
    """A condition as nested tuples of what it means (no sizes, no bookkeeping keys)."""
    if node.comparison is not None:
        c = node.comparison
        return (c.op, c.field_name, bytes(c.value), None if c.offsets is None else list(c.offsets))
    return (node.expression.combination_op, *map(_norm, node.expression.children))


def _commit_files():
    return [pytest.param(case, p, id=f"{case_id(case)}/{p.relative_to(root(case))}") for case in cases()
            for p in sorted(root(case).rglob("*")) if p.is_file() and p.suffix[1:] in STRUCTS
            and "__meta" not in p.parts]  # array-metadata .vac files are the metadata developer's


COMMITS = _commit_files()


def test_corpus_has_every_commit_kind():
    assert {p.values[1].suffix for p in COMMITS} >= {".ok", ".wrt", ".vac", ".con", ".del"}


@pytest.mark.parametrize("case, path", COMMITS)
def test_commit_file_round_trips(case, path):
    data = path.read_bytes()
    layout = STRUCTS[path.suffix[1:]]
    value = layout.parse(data)
    assert layout.build(value) == data
    name = parse_timestamped_name(path.name)
    assert name.t1 <= name.t2 and len(name.uuid) == 32
    if path.suffix in (".vac", ".con", ".ign"):
        for uri in value.uris if path.suffix != ".con" else [e.uri for e in value.entries]:
            parse_timestamped_name(uri)  # every line names a fragment or a commit


@pytest.mark.parametrize("case, path", [p for p in COMMITS if p.values[1].suffix == ".del"])
def test_delete_condition_is_stored_negated(case, path):
    (field, symbol, number), = {m.groups() for w in truth(case)["writes"] if "delete" in w
                                for m in [re.search(r"(\w+) (>|<|>=|<=|==|!=) (-?\d+)", w)] if m}
    assert (field, symbol, number) == ("a", ">", "500")  # a is int32 (the case's schema)
    stored = DeleteCommit.parse(path.read_bytes()).condition
    a_gt_500 = comparison("a", Op.GT, struct.pack("<i", 500))
    assert _norm(stored) == _norm(negate(a_gt_500))
    assert stored.comparison.op == Op.LE
    assert condition_text(negate(stored), {"a": "<i4"}) == "a > 500"
    # the bytes of REFERENCE §14.1: value node, op, u32 name length, name, u64 value size, value
    payload = bytes([1, Op.LE]) + struct.pack("<I", 1) + b"a" + struct.pack("<Q", 4) + struct.pack("<i", 500)
    assert _norm(DeleteCommit.parse(DeleteCommit.build(Container(condition=a_gt_500))).condition) == _norm(a_gt_500)
    # a fresh tile (TileDB's GZIP level 1 pipeline, the writer's version in its header) is the same file
    version = parse_timestamped_name(path.name).version
    assert DeleteCommit.build(Container(condition=stored), version=version) == path.read_bytes()
    assert DeleteCommit.parse(path.read_bytes())._unfiltered == payload


def _delete_file():
    return sorted(CORPUS.glob("v23_*/sparse_delete/array/__commits/*.del"))[0]


def test_consolidated_commits_embed_delete_files():
    del_path = _delete_file()
    wrt = "__commits/" + timestamped_name(1, 1, "0" * 32, 23) + ".wrt"
    dele = "__commits/" + del_path.name
    entries = [Container(uri=wrt, delete=None), Container(uri=dele, delete=DeleteCommit.parse(del_path.read_bytes()))]
    built = ConsolidatedCommits.build(Container(entries=entries))
    raw = del_path.read_bytes()
    assert built == (wrt + "\n" + dele + "\n").encode() + struct.pack("<Q", len(raw)) + raw
    again = ConsolidatedCommits.parse(built)
    assert again.entries[1].delete_size == len(raw)
    assert _norm(negate(again.entries[1].delete.condition)) == _norm(comparison("a", Op.GT, struct.pack("<i", 500)))
    assert again.entries[0].delete is None


def test_in_condition_and_update_commit_round_trip():
    members = np.array([3, 5, 8], "<i4")
    cond = combination(CombinationOp.AND, comparison("a", Op.IN, members.tobytes(), np.array([0, 4, 8], "<u8")),
                       comparison("s", Op.NE, b"x"))
    negated = negate(cond)
    assert negated.expression.combination_op == CombinationOp.OR
    assert [c.comparison.op for c in negated.expression.children] == [Op.NOT_IN, Op.EQ]
    value = Container(condition=negated, update_values=Container(assignments=[
        Container(field_name="a", value=struct.pack("<i", 7))]))
    data = UpdateCommit.build(value)
    again = UpdateCommit.parse(data)
    assert again.update_values.num == 1 and again.update_values.assignments[0].value == struct.pack("<i", 7)
    node = again.condition.expression.children[0].comparison
    assert node.offsets_size == 24 and list(node.offsets) == [0, 4, 8]
    assert condition_text(again.condition, {"a": "<i4"}) == "(a not in [3, 5, 8]) or (s == 78)"
    assert UpdateCommit.build(again) == data
    assert _norm(negate(combination(CombinationOp.NOT, cond))) == _norm(cond)


# a generic tile around any payload, to make invalid .del files
_RAW = Section("raw payload", "generic_tile.md", generic_tile(Struct("bytes" / GreedyBytes)))


def test_unknown_operator_is_an_error():
    payload = bytearray(DeleteCommit.parse(_delete_file().read_bytes())._unfiltered)
    payload[1] = 99
    with pytest.raises(FormatError, match="QueryConditionOp"):
        DeleteCommit.parse(_RAW.build(Container(bytes=bytes(payload))))
    with pytest.raises(FormatError):
        DeleteCommit.parse(_RAW.build(Container(bytes=bytes(payload[:-1]))))


def test_lines_must_end_in_newline():
    with pytest.raises(FormatError, match="newline"):
        VacuumFile.parse(b"__fragments/__1_1_" + b"0" * 32 + b"_23")
    with pytest.raises(FormatError):
        CommitMarker.parse(b"x")


@pytest.mark.parametrize("name, expected", [
    ("__1_2_0123456789abcdef0123456789abcdef_23", (1, 2, "0123456789abcdef0123456789abcdef", 23)),
    ("__commits/__1_2_0123456789abcdef0123456789abcdef_12.wrt", (1, 2, "0123456789abcdef0123456789abcdef", 12)),
    ("__5_9_0123456789abcdef0123456789abcdef", (5, 9, "0123456789abcdef0123456789abcdef", None)),
    ("__0123456789abcdef0123456789abcdef_77", (77, 77, "0123456789abcdef0123456789abcdef", None)),
    ("__0123456789abcdef0123456789abcdef_70_77", (77, 77, "0123456789abcdef0123456789abcdef", None)),
])
def test_timestamped_names(name, expected):
    assert tuple(parse_timestamped_name(name)) == expected


def test_names_of_every_corpus_fragment():
    for case in cases():
        for fragment in truth(case).get("fragments", []):
            name = parse_timestamped_name(fragment["uri"])
            assert [name.t1, name.t2] == fragment["timestamp_range"]
            assert name.version in (None, fragment["version"])
    with pytest.raises(FormatError):
        parse_timestamped_name("__schema")
