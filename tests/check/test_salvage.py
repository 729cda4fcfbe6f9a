"""``salvage``: for each corruption test_validate.py makes, the copy opens in TileDB-Py and holds exactly the cells
TileDB-Py reads from the uncorrupted original, minus those the report names; the source is never touched; the
command's exit codes and its JSON against docs/json-schema/salvage.v1.json."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import corpus
from tdbformat import parse_file, salvage
from tdbformat.structs.array_schema import ArraySchema
from test_validate import V22, _cli, _copy, _data_file, _rewrite_metadata, _sparse, _tile_offsets
from oracle import tiledb_ctx

tiledb = pytest.importorskip("tiledb")
ROOT = Path(__file__).resolve().parents[2]


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode() + (p.read_bytes() if p.is_file() else b"/"))
    return h.hexdigest()


def _read(uri, key=None):
    with tiledb.open(str(uri), ctx=tiledb_ctx(key)) as A:
        return A[:], A.schema


def _salvage(src: Path, dst: Path, key=None):
    """Salvage ``src`` into ``dst``, proving ``src`` untouched."""
    before = _digest(src)
    report = salvage(src, dst, key=key)
    assert _digest(src) == before
    return report


def _inside(cell, box) -> bool:
    return box is not None and all(lo <= c <= hi for c, (lo, hi) in zip(cell, box))


def _check_dense(original, dst, report, key=None):
    """The copy equals ``original`` (TileDB-Py's read of the uncorrupted array) except in the lost boxes,
    which read as fill values, as cells never written do."""
    got, schema = _read(dst, key)
    lo = schema.domain.dim(0).domain[0]
    for name, values in original.items():
        want = np.array(values, copy=True)
        for loss in report.lost:
            assert loss.box is not None and loss.count == int(np.prod([b - a + 1 for a, b in loss.box]))
            want[tuple(slice(a - lo, b - lo + 1) for a, b in loss.box)] = schema.attr(name).fill
        np.testing.assert_array_equal(got[name], want)


def _cells(data, names) -> Counter:
    return Counter(zip(*(data[n].tolist() for n in names)))


def _check_sparse(original, dst, report, dims):
    """The copy's cells are the original's minus cells that lie in lost boxes, as many as the losses count."""
    got, schema = _read(dst)
    names = dims + [schema.attr(i).name for i in range(schema.nattr)]
    want, have = _cells(original, names), _cells(got, names)
    assert not have - want
    missing = list((want - have).elements())
    assert len(missing) == sum(loss.count for loss in report.lost)
    for cell in missing:
        assert any(_inside(cell[:len(dims)], loss.box) for loss in report.lost), cell


_CLEAN = [c for c in corpus.cases() if corpus.truth(c).get("kind") == "array" and c.parent == V22 or
          c.name == "consolidated_sparse_with_timestamps" and c.parent.name.startswith("v16_")]


@pytest.mark.parametrize("case", _CLEAN, ids=corpus.case_id)
def test_a_clean_array_is_copied_whole(tmp_path, case):
    """Every cell and metadata value TileDB-Py reads, after deletes, cell timestamps and enumerations."""
    key = corpus.key(case)
    report = _salvage(corpus.root(case), tmp_path / "out", key=key)
    assert report.complete and report.lost == [] and report.findings == [], str(report)
    with tiledb.open(str(corpus.root(case)), ctx=tiledb_ctx(key)) as A, \
            tiledb.open(str(tmp_path / "out"), ctx=tiledb_ctx(key)) as B:
        original, got = A[:], B[:]
        assert set(got) == set(original)
        for name in original:
            assert repr(np.ravel(got[name]).tolist()) == repr(np.ravel(original[name]).tolist()), name
        assert {k: repr(v) for k, v in B.meta.items()} == {k: repr(v) for k, v in A.meta.items()}


def test_an_encrypted_array_with_its_key_and_with_a_wrong_one(tmp_path):
    case = V22 / "encrypted_dense"
    key = corpus.key(case)
    report = _salvage(corpus.root(case), tmp_path / "ok", key=key)
    assert report.complete, str(report)
    original, _ = _read(corpus.root(case), key)
    _check_dense(original, tmp_path / "ok", report, key)
    wrong = _salvage(corpus.root(case), tmp_path / "wrong", key="0123456789abcdef0123456789abcdef")
    assert [(loss.fragment, loss.tile) for loss in wrong.lost] == [(None, None)]
    assert "cannot be opened" in wrong.lost[0].reason and not (tmp_path / "wrong").exists()
    assert any(f.rule == "key" for f in wrong.findings)


def test_truncated_data_file(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    original, _ = _read(root)
    a0 = _data_file(root)
    a0.write_bytes(a0.read_bytes()[:-100])
    report = _salvage(root, tmp_path / "out")
    assert [(loss.tile, loss.field, loss.box) for loss in report.lost] == [(3, "a", [(750, 999)])]
    assert "a0.tdb" in report.lost[0].reason
    _check_dense(original, tmp_path / "out", report)


def test_bit_flipped_in_a_compressed_tile(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    original, _ = _read(root)
    a0 = _data_file(root)
    start = int(_tile_offsets(root)[1])
    data = bytearray(a0.read_bytes())
    data[start + 8 + 12 + 4] ^= 0x10
    a0.write_bytes(bytes(data))
    report = _salvage(root, tmp_path / "out")
    assert [(loss.tile, loss.box, loss.count) for loss in report.lost] == [(1, [(250, 499)], 250)]
    _check_dense(original, tmp_path / "out", report)
    # the three good tiles went back as three fragments at the fragment's own timestamp
    [(name, copies)] = report.fragments.items()
    assert len(copies) == 3 and {c.split("_")[2] for c in copies} == {name.split("_")[2]}


def test_bit_flipped_under_a_checksum(tmp_path):
    root = _copy(tmp_path, "filter_checksum_sha256")
    original, _ = _read(root)
    a0 = _data_file(root)
    end = int(_tile_offsets(root)[1])
    data = bytearray(a0.read_bytes())
    data[end - 1] ^= 0x01  # the last data byte of tile 0: it still decodes, but its checksum fails
    a0.write_bytes(bytes(data))
    report = _salvage(root, tmp_path / "out")
    assert [(loss.tile, loss.field) for loss in report.lost] == [(0, "a")] and "SHA" in report.lost[0].reason.upper()
    _check_dense(original, tmp_path / "out", report)


def test_footer_offset_past_the_end_loses_the_fragment(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    original, _ = _read(root)
    path = next(root.rglob("__fragment_metadata.tdb"))
    fm = parse_file(path).value
    data = bytearray(path.read_bytes())
    footer_at = len(data) - 8 - int(np.frombuffer(data[-8:], "<u8")[0])
    field_at = footer_at + fm.footer._offsets["tile_max_offsets"]
    data[field_at:field_at + 8] = np.uint64(len(data) + 1000).tobytes()
    path.write_bytes(bytes(data))
    report = _salvage(root, tmp_path / "out")
    [loss] = report.lost
    assert (loss.fragment, loss.tile) == (path.parent.name, None)
    assert str(path) in loss.reason and f"offset {len(data) + 1000}" in loss.reason
    assert len(original["a"]) == 1000
    with tiledb.open(str(tmp_path / "out")) as B:  # nothing survives
        assert B.nonempty_domain() is None


def test_missing_commit_file(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    wrt = next(root.rglob("*.wrt"))
    wrt.unlink()
    report = _salvage(root, tmp_path / "out")
    assert [(loss.fragment, loss.tile) for loss in report.lost] == [(wrt.name[:-4], None)]
    assert report.fragments == {} and not report.complete
    with tiledb.open(str(tmp_path / "out")) as B:
        assert B.nonempty_domain() is None


def test_a_tile_statistic_that_lies_loses_nothing(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    original, _ = _read(root)
    truth = np.asarray(parse_file(next(root.rglob("__fragment_metadata.tdb"))).value.tile_maxes[0].fixed)

    def lie(fm):
        fm.tile_maxes[0].fixed = truth + np.array([0, 0, 5, 0], truth.dtype)
    _rewrite_metadata(root, lie)
    report = _salvage(root, tmp_path / "out")
    assert report.complete and [f.rule for f in report.findings] == ["tile-stats"]
    _check_dense(original, tmp_path / "out", report)
    copied = parse_file(next((tmp_path / "out").rglob("__fragment_metadata.tdb"))).value
    np.testing.assert_array_equal(np.asarray(copied.tile_maxes[0].fixed), truth)  # recomputed, not copied


def test_wrong_last_tile_count_loses_nothing(tmp_path):
    root = _sparse(tmp_path / "s")  # tiles of 4, 4, 2 cells; the footer will claim 3 in the last
    original, _ = _read(root)
    _rewrite_metadata(root, lambda fm: setattr(fm.footer, "last_tile_cell_num", 3))
    report = _salvage(root, tmp_path / "out")
    assert report.complete and {f.rule for f in report.findings} == {"last-tile-cells"}
    _check_sparse(original, tmp_path / "out", report, ["x", "y"])


def test_duplicated_sparse_cell(tmp_path):
    root = _sparse(tmp_path / "s", dups=True)  # x = 0..6, 0..2 at y = 0: three coordinates written twice
    original, _ = _read(root)
    schema_file = next(p for p in (root / "__schema").iterdir() if p.is_file())
    schema = ArraySchema.parse(schema_file.read_bytes())
    schema.allows_dups = False
    schema_file.write_bytes(ArraySchema.build(schema))
    report = _salvage(root, tmp_path / "out")
    assert sorted(loss.box[0][0] for loss in report.lost) == [0, 1, 2] and {loss.count for loss in report.lost} == {1}
    _check_sparse(original, tmp_path / "out", report, ["x", "y"])
    got, _ = _read(tmp_path / "out")
    assert sorted(got["a"].tolist()) == [0, 1, 2, 3, 4, 5, 6]  # the first copy of each coordinate is kept


def test_a_broken_sparse_tile_loses_its_cells_only(tmp_path):
    root = _sparse(tmp_path / "s")  # 10 cells, capacity 4: tiles of 4, 4, 2; a0.tdb holds raw int32 tiles
    original, _ = _read(root)
    a0 = _data_file(root)
    offsets = _tile_offsets(root)
    data = bytearray(a0.read_bytes())
    data[int(offsets[1]) + 8 + 4:int(offsets[1]) + 8 + 8] = (10**6).to_bytes(4, "little")  # tile 1's chunk size
    a0.write_bytes(bytes(data))
    report = _salvage(root, tmp_path / "out")
    assert [(loss.tile, loss.field, loss.cells, loss.count) for loss in report.lost] == [(1, "a", (4, 7), 4)]
    _check_sparse(original, tmp_path / "out", report, ["x", "y"])


def test_fragment_whose_schema_is_gone(tmp_path):
    uri = tmp_path / "e"
    _sparse(uri)
    se = tiledb.ArraySchemaEvolution(tiledb.default_ctx())
    se.add_attribute(tiledb.Attr("b", dtype=np.float64))
    se.array_evolve(str(uri))
    with tiledb.open(str(uri), "w") as A:
        A[[50], [50]] = {"a": np.array([1], np.int32), "b": np.array([2.0])}
    first_fragment = sorted(p.name for p in (uri / "__fragments").iterdir())[0]
    sorted(p for p in (uri / "__schema").iterdir() if p.is_file())[0].unlink()
    report = _salvage(uri, tmp_path / "out")
    assert [(loss.fragment, loss.tile) for loss in report.lost] == [(first_fragment, None)]
    got, _ = _read(tmp_path / "out")
    assert (got["x"].tolist(), got["y"].tolist(), got["a"].tolist(), got["b"].tolist()) == ([50], [50], [1], [2.0])


def test_command_exit_codes_and_json(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from referencing import Registry, Resource

    docs = ROOT / "docs" / "json-schema"
    schema = json.loads((docs / "salvage.v1.json").read_text())
    validate_schema = json.loads((docs / "validate.v1.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    registry = Registry().with_resource(validate_schema["$id"], Resource.from_contents(validate_schema))
    check = jsonschema.Draft202012Validator(schema, registry=registry).validate
    clean = _cli("salvage", str(corpus.root(V22 / "filter_zstd")), str(tmp_path / "clean"), "--json")
    assert clean.returncode == 0, clean.stderr
    check(json.loads(clean.stdout))
    root = _copy(tmp_path, "filter_zstd")
    a0 = _data_file(root)
    a0.write_bytes(a0.read_bytes()[:-100])
    broken = _cli("salvage", str(root), str(tmp_path / "broken"), "--json")
    assert broken.returncode == 1, broken.stderr
    doc = json.loads(broken.stdout)
    check(doc)
    assert [(x["tile"], x["box"]) for x in doc["lost"]] == [(3, [[750, 999]])]
    assert {f["rule"] for f in doc["findings"]} == {"file-sizes", "tile-decodes"}
    text = _cli("salvage", str(root), str(tmp_path / "text"))
    assert text.returncode == 1 and "lost: fragment " in text.stdout and "tile 3" in text.stdout
    # 2: a bad argument; 1: a path that holds no array
    for argv, code in ((["salvage", str(root), str(tmp_path / "text")], 2), (["salvage", str(root), str(root)], 2),
                       (["salvage", str(tmp_path / "none"), str(tmp_path / "x")], 1), (["salvage", str(root)], 2),
                       (["salvage", str(corpus.root(V22 / "group")), str(tmp_path / "g")], 2)):
        bad = _cli(*argv)
        assert bad.returncode == code and "Traceback" not in bad.stderr, (argv, bad.stderr)


def test_an_evolved_sparse_array_fills_the_attributes_an_old_fragment_lacks(tmp_path):
    """A sparse fragment written before an attribute was added: its cells are copied with the attribute's fill
    value, as the truth file's global-order read has them (the fill value was taken from the field summary, not
    the schema's attribute: an AttributeError, found by the repair fuzz target). TileDB 2.30 cannot open the
    source (truth.json: tiledb_error_after_evolution); it opens the copy."""
    case = ROOT / "tests" / "data" / "behaviours" / "evolved_pre_v10_array"
    want = json.loads((case / "truth.json").read_text())["read_global_order"]
    report = _salvage(case / "array", tmp_path / "out")
    assert report.complete, str(report)
    with tiledb.open(str(tmp_path / "out")) as B:
        got = B.query(order="G")[:]
    assert set(got) == set(want)
    for name in want:
        assert [x if not isinstance(x, bytes) else x.decode() for x in got[name].tolist()] == want[name], name
