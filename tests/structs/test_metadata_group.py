"""Array and group metadata, group details: byte-exact round trips and the folded view against truth.json."""

from __future__ import annotations

import numpy as np
import pytest
from construct import Container

from corpus import CORPUS, HISTORIC, case_id, cases, files, key, root, truth
from tdbformat.enums import Datatype, ObjectType
from tdbformat.errors import FormatError
from tdbformat.layout import group_members, read_metadata
from tdbformat.structs.group import GroupDetails
from tdbformat.structs.metadata import ArrayMetadata, MetadataEntry, fold_metadata

META_FILES = [(p, key(c)) for c in cases() for p in files(c) if p.parent.name == "__meta" and "." not in p.name]
GROUP_FILES = [p for p in files(CORPUS) if p.parent.name == "__group"]


@pytest.mark.parametrize("path,k", META_FILES, ids=[str(p.relative_to(CORPUS)) for p, _ in META_FILES])
def test_metadata_file_round_trips(path, k):
    data = path.read_bytes()
    assert ArrayMetadata.build(ArrayMetadata.parse(data, key=k), key=k) == data


@pytest.mark.parametrize("path", GROUP_FILES, ids=[str(p.relative_to(CORPUS)) for p in GROUP_FILES])
def test_group_details_round_trip(path):
    data = path.read_bytes()
    assert GroupDetails.build(GroupDetails.parse(data)) == data


def test_corpus_has_metadata_and_group_files():
    assert len(META_FILES) > 50 and len(GROUP_FILES) > 10


# TileDB-Py stores a numpy array under its key prefixed with this marker (tiledb-py metadata.py).
NDARRAY_MARKER = "__np_flat_"
_TEXT = (Datatype.STRING_ASCII, Datatype.STRING_UTF8)
_BYTES = (Datatype.BLOB, Datatype.CHAR)


def user_view(metadata: dict) -> dict:
    """What the user sees: the marker stripped, text decoded, blobs as bytes, numbers as lists."""
    out = {}
    for k, entry in metadata.items():
        datatype = Datatype(entry.datatype)
        if datatype in _TEXT:
            value = entry.value.tobytes().decode()
        elif datatype in _BYTES:
            value = entry.value.tobytes()
        else:
            value = entry.value.tolist()
        out[k.removeprefix(NDARRAY_MARKER)] = (datatype, value)
    return out


def check_metadata(metadata: dict, want: dict):
    got = user_view(metadata)
    assert sorted(got) == sorted(want)
    for k, w in want.items():
        datatype, value = got[k]
        if "tiledb_datatype" in w:
            assert datatype.name == w["tiledb_datatype"]
            assert len(value) == w["value_num"]
        wvalue = w["value"]
        if isinstance(wvalue, dict):
            assert value == bytes.fromhex(wvalue["bytes_hex"])
        elif isinstance(wvalue, (str, list)):
            assert value == wvalue
        else:
            assert value == [wvalue]


def _metadata_cases():
    out = []
    for c in cases():
        t = truth(c)
        if "metadata" in t:
            out.append((case_id(c), root(c), t["metadata"], key(c)))
        for name, sub in (t.get("label_arrays") or {}).items():
            uri = next(lb["uri"] for lb in t["dimension_labels"] if lb["name"] == name)
            out.append((f"{case_id(c)}/{name}", root(c) / uri, sub["metadata"], key(c)))
        for name, sub in (t.get("member_arrays") or {}).items():
            out.append((f"{case_id(c)}/{name}", root(c) / name, sub["metadata"], key(c)))
        if t.get("group"):
            out.append((f"{case_id(c)}/group", root(c), t["group"]["metadata"], key(c)))
            for name, sub in t["subgroups"].items():
                out.append((f"{case_id(c)}/{name}", root(c) / name, sub["metadata"], key(c)))
    return out


METADATA_CASES = _metadata_cases()


@pytest.mark.parametrize("name,where,want,k", METADATA_CASES, ids=[m[0] for m in METADATA_CASES])
def test_metadata_matches_truth(name, where, want, k):
    check_metadata(read_metadata(where, key=k), want)


def test_metadata_cases_include_consolidation():
    names = {m[0].split("/")[1] for m in METADATA_CASES}
    assert {"array_metadata", "array_metadata_consolidated", "array_metadata_consolidated_vacuumed"} <= names


GROUP_CASES = [c for c in cases() if truth(c).get("group")]


@pytest.mark.parametrize("case", GROUP_CASES, ids=[case_id(c) for c in GROUP_CASES])
def test_group_members_match_truth(case):
    t = truth(case)
    for where, want in [(root(case), t["group"]), *((root(case) / n, s) for n, s in t["subgroups"].items())]:
        got = {(m.uri, m.object_type.name.lower(), m.name) for m in group_members(where)}
        assert got == {(w["uri"], w["type"], w["name"]) for w in want["members"]}
        assert all(m.relative for m in group_members(where))


def test_historic_v1_group():
    (member,) = group_members(HISTORIC / "groups/group_v1")
    assert (member.uri, member.object_type, member.name, member.deleted) == ("subgroup1", ObjectType.GROUP,
                                                                            "subgroup1", None)


def _put(k, datatype, values):
    return Container(key=k, deleted=False, datatype=datatype, value=np.asarray(values, datatype.numpy_dtype))


def test_fold_applies_later_files_and_deletions():
    first = [_put("a", Datatype.INT64, [1]), _put("b", Datatype.INT64, [2])]
    second = [Container(key="a", deleted=True, datatype=None, value=None), _put("b", Datatype.FLOAT64, [2.5])]
    folded = fold_metadata([("f1", first), ("f2", second)])
    assert list(folded) == ["b"] and folded["b"].value.tolist() == [2.5]


def test_entry_layout_by_hand():
    # key_len u32, key, del u8, type u8, value_num u32, values (spec §10 worked by hand)
    data = b"\x02\x00\x00\x00ab\x00\x01\x02\x00\x00\x00" + (7).to_bytes(8, "little") + (-1).to_bytes(8, "little", signed=True)
    entry = MetadataEntry.parse(data)
    assert (entry.key, entry.deleted, entry.datatype, entry.value.tolist()) == ("ab", False, Datatype.INT64, [7, -1])
    assert MetadataEntry.build(entry) == data
    deletion = b"\x01\x00\x00\x00k\x01"
    assert MetadataEntry.parse(deletion).deleted and MetadataEntry.build(MetadataEntry.parse(deletion)) == deletion


def test_corrupt_files_raise_format_error():
    path, k = next((p, k) for p, k in META_FILES if k is None)
    with pytest.raises(FormatError):
        ArrayMetadata.parse(path.read_bytes()[:-5])
    details = GroupDetails.parse(GROUP_FILES[0].read_bytes())
    details.version = 9  # no such details version
    with pytest.raises(FormatError, match="group version 9"):
        GroupDetails.build(details)
