"""``validate``: zero findings on every corpus array; copies corrupted the way real incidents go, each reported by
the rule meant for it, at the right file and offset, never as a crash; the command's exit codes and its JSON
against docs/json-schema/validate.v1.json."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import corpus
import oracle
from tdbformat import FormatError, open_array, parse_file
from tdbformat.structs.array_schema import ArraySchema
from tdbformat.check.validate import RULES, Finding, validate

ROOT = Path(__file__).resolve().parents[2]
V22 = corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0"


def _copy(tmp_path, case: str) -> Path:
    dst = tmp_path / "array"
    shutil.copytree(corpus.root(V22 / case), dst)
    return dst


def _one(findings, rule) -> Finding:
    hits = [f for f in findings if f.rule == rule]
    assert hits, f"no {rule} finding in {[str(f) for f in findings]}"
    return hits[0]


def _data_file(root: Path, name="a0.tdb") -> Path:
    return next(root.rglob(name))


def _rewrite_metadata(root: Path, edit) -> Path:
    """Edit the parsed fragment metadata of the array's only fragment and write it back with our own build."""
    path = next(Path(root).rglob("__fragment_metadata.tdb"))
    fm = parse_file(path).value
    edit(fm)
    path.write_bytes(fm.build())
    return path


def _tile_offsets(root: Path, idx=0) -> np.ndarray:
    return np.asarray(parse_file(next(root.rglob("__fragment_metadata.tdb"))).value.tile_offsets[idx])


@pytest.mark.parametrize("case", corpus.cases(), ids=corpus.case_id)
def test_every_corpus_case_is_clean(case):
    assert [str(f) for f in validate(corpus.root(case), key=corpus.key(case))] == []


_DATA = Path(__file__).parents[1] / "data"


@pytest.mark.parametrize("root", sorted(p.parent for p in (_DATA / "soma").rglob("__schema"))
                         + sorted(p.parent / "array" for p in (_DATA / "pandas").glob("*/truth.json")),
                         ids=lambda p: str(p.relative_to(_DATA)))
def test_what_tiledbsoma_and_from_pandas_wrote_is_clean(root):
    """A string and an int dimension (the R-tree holds the int's bounds as objects) failed with TypeError."""
    assert [str(f) for f in validate(root)] == []


def test_truncated_data_file(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    a0 = _data_file(root)
    size, last = a0.stat().st_size, int(_tile_offsets(root)[-1])
    a0.write_bytes(a0.read_bytes()[:-100])
    found = validate(root)
    sizes = _one(found, "file-sizes")
    assert (Path(sizes.file), sizes.expected, sizes.found) == (a0, size, size - 100)
    tile = _one(found, "tile-decodes")
    assert Path(tile.file) == a0 and tile.offset == last


def test_bit_flipped_in_a_compressed_tile(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    a0 = _data_file(root)
    start, end = (int(x) for x in _tile_offsets(root)[1:3])
    data = bytearray(a0.read_bytes())
    data[start + 8 + 12 + 4] ^= 0x10  # inside the zstd frame of tile 1 (after the chunk count and header)
    a0.write_bytes(bytes(data))
    found = validate(root)
    tile = _one(found, "tile-decodes")
    assert Path(tile.file) == a0 and start <= tile.offset < end and "tile 1" in tile.message


def test_bit_flipped_under_a_checksum(tmp_path):
    root = _copy(tmp_path, "filter_checksum_sha256")
    a0 = _data_file(root)
    start, end = (int(x) for x in _tile_offsets(root)[:2])
    data = bytearray(a0.read_bytes())
    data[end - 1] ^= 0x01  # the last data byte of tile 0
    a0.write_bytes(bytes(data))
    found = validate(root)
    bad = _one(found, "checksums")
    assert Path(bad.file) == a0 and start <= bad.offset < end
    assert not [f for f in found if f.rule == "tile-decodes"]


def test_tile_offset_past_the_end(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    size = _data_file(root).stat().st_size
    from tdbformat.structs.fragment import _SLOT

    def lie(fm):
        payload = fm._payload(_SLOT["tile_offsets"], 0)
        payload.data = np.append(payload.data[:-1], np.uint64(size + 10))
    _rewrite_metadata(root, lie)
    bad = _one(validate(root), "tile-offsets")
    assert (Path(bad.file), bad.field, bad.offset, bad.found) == (_data_file(root), "tile_offsets[3]", size + 10,
                                                                   size + 10)


def test_footer_offset_past_the_end(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    path = next(root.rglob("__fragment_metadata.tdb"))
    fm = parse_file(path).value
    data = bytearray(path.read_bytes())
    footer_at = len(data) - 8 - int(np.frombuffer(data[-8:], "<u8")[0])
    field_at = footer_at + fm.footer._offsets["tile_max_offsets"]
    assert int(np.frombuffer(data[field_at:field_at + 8], "<u8")[0]) == int(fm.footer.tile_max_offsets[0])
    data[field_at:field_at + 8] = np.uint64(len(data) + 1000).tobytes()
    path.write_bytes(bytes(data))
    bad = _one(validate(root), "file-parses")
    assert (Path(bad.file), bad.field, bad.offset, bad.found) == (path, "tile_max_offsets[0]", field_at,
                                                                   len(data) + 1000)


def test_a_tile_statistic_that_lies(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    truth = np.asarray(parse_file(next(root.rglob("__fragment_metadata.tdb"))).value.tile_maxes[0].fixed)

    def lie(fm):
        fm.tile_maxes[0].fixed = truth + np.array([0, 0, 5, 0], truth.dtype)
    path = _rewrite_metadata(root, lie)
    bad = _one(validate(root), "tile-stats")
    fm = parse_file(path).value
    assert (Path(bad.file), bad.field, bad.offset) == (path, "tile_maxes[0][2]", int(fm.footer.tile_max_offsets[0]))
    assert (bad.expected, bad.found) == (truth[2], truth[2] + 5)


def test_missing_commit_file(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    wrt = next(root.rglob("*.wrt"))
    wrt.unlink()
    bad = _one(validate(root), "uncommitted")
    assert Path(bad.file) == root / "__fragments" / wrt.name[:-4] and bad.found == "uncommitted"
    assert bad.severity == "warning" and "tdbformat clean --uncommitted" in bad.message


def test_wrong_key(tmp_path):
    case = next(c for c in corpus.cases() if c.parent == V22 and corpus.key(c))
    found = validate(corpus.root(case), key="0123456789abcdef0123456789abcdef")
    bad = _one(found, "key")
    assert Path(bad.file).parent.name == "__schema"
    assert _one(validate(corpus.root(case)), "key").file == bad.file  # no key at all
    plain = _one(validate(corpus.root(V22 / "filter_zstd"), key="0123456789abcdef0123456789abcdef"), "key")
    assert "not encrypted" in plain.message


def test_stray_files_and_orphan_commits(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    (root / "notes.txt").write_text("hello")
    frag = next((root / "__fragments").iterdir())
    (frag / "a7.tdb").write_bytes(b"\0" * 8)
    (root / "__commits" / "__1_1_0123456789abcdef0123456789abcdef_22.wrt").write_bytes(b"")
    found = validate(root)
    assert {Path(f.file).name for f in found if f.rule == "stray-files"} == {"notes.txt", "a7.tdb"}
    assert _one(found, "commits").file.endswith("__1_1_0123456789abcdef0123456789abcdef_22.wrt")
    assert {f.severity for f in found if f.rule == "stray-files"} == {"warning"}


def test_rules_select_and_refuse(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    (root / "notes.txt").write_text("hello")
    assert [f.rule for f in validate(root)] == ["stray-files"]
    assert validate(root, rules=["tile-decodes"]) == []
    with pytest.raises(ValueError, match="rules"):
        validate(root, rules=["no-such-rule"])
    with pytest.raises(TypeError, match="rules"):
        validate(root, rules="tile-decodes")


def test_every_truncation_is_a_finding_never_a_crash(tmp_path):
    """Each file of an array cut to half, one at a time: the array validates to findings, never raises."""
    for i, src in enumerate(sorted(p for p in corpus.root(V22 / "sparse_var_string_dim").rglob("*") if p.is_file())):
        root = tmp_path / str(i)
        shutil.copytree(corpus.root(V22 / "sparse_var_string_dim"), root)
        target = root / src.relative_to(corpus.root(V22 / "sparse_var_string_dim"))
        if target.stat().st_size == 0:
            continue
        target.write_bytes(target.read_bytes()[:target.stat().st_size // 2])
        try:
            found = validate(root)
        except Exception as e:  # only a schema cut in half may leave no array to validate
            assert target.parent.name == "__schema" and type(e).__name__ == "FormatError", e
            continue
        assert found and all(f.rule in RULES for f in found), target


# --- arrays written here by TileDB-Py, then corrupted ---

tiledb = pytest.importorskip("tiledb")


def _sparse(uri: Path, dups=False, coords_filters=None, cells=10):
    dims = [tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64),
            tiledb.Dim("y", domain=(0, 99), tile=10, dtype=np.int64)]
    schema = tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=4, allows_duplicates=dups,
                                attrs=[tiledb.Attr("a", dtype=np.int32)],
                                coords_filters=coords_filters if coords_filters is not None else tiledb.FilterList())
    tiledb.Array.create(str(uri), schema)
    x = np.arange(cells) % 7
    with tiledb.open(str(uri), "w") as A:
        A[x, np.zeros(cells, np.int64) if dups else np.arange(cells)] = np.arange(cells, dtype=np.int32)
    return uri


def test_wrong_last_tile_count(tmp_path):
    root = _sparse(tmp_path / "s")  # 10 cells, capacity 4: tiles of 4, 4, 2
    _rewrite_metadata(root, lambda fm: setattr(fm.footer, "last_tile_cell_num", 3))
    found = [f for f in validate(root) if f.rule == "last-tile-cells"]
    assert {Path(f.file).name for f in found} == {"a0.tdb", "d0.tdb", "d1.tdb"}
    for f in found:
        assert (f.expected, f.found, f.field) == (3, 2, "last_tile_cell_num")
        assert f.offset == int(_tile_offsets(root, {"a0.tdb": 0, "d0.tdb": 2, "d1.tdb": 3}[Path(f.file).name])[-1])


def test_duplicated_sparse_cell(tmp_path):
    root = _sparse(tmp_path / "s", dups=True)  # x = 0..6, 0..2 at y = 0: three coordinates written twice
    assert validate(root) == []
    schema_file = next(p for p in (root / "__schema").iterdir() if p.is_file())
    schema = ArraySchema.parse(schema_file.read_bytes())
    schema.allows_dups = False
    schema_file.write_bytes(ArraySchema.build(schema))
    bad = _one(validate(root), "duplicates")
    # global order (row-major tiles and cells): (0,0) (0,0) ... the second (0,0) is cell 1, in tile 0 of d0
    assert (Path(bad.file).name, bad.offset, bad.found) == ("d0.tdb", 0, [0, 0])
    assert "cell 1 " in bad.message


def test_cells_out_of_global_order_and_a_lying_mbr(tmp_path):
    root = _sparse(tmp_path / "s")  # no coordinate filters: the tiles of d0/d1 are raw int64 values
    d1 = _data_file(root, "d1.tdb")
    data = bytearray(d1.read_bytes())
    first = 8 + 12  # tile 0: chunk count, chunk header, then y = 0, 1, 2, 3
    data[first:first + 16] = data[first + 8:first + 16] + data[first:first + 8]  # y of cells 0 and 1 swapped
    d1.write_bytes(bytes(data))
    bad = _one(validate(root), "global-order")
    assert (Path(bad.file).name, bad.offset) == ("d0.tdb", 0)

    root = _sparse(tmp_path / "t")
    from tdbformat.structs.fragment import _SLOT

    def lie(fm):
        mbrs = fm._payload(_SLOT["rtree"]).levels[-1].mbrs
        fixed = mbrs.copy()
        fixed["y"][1] = [50, 60]  # tile 1 holds y = 4..7
        fm._payload(_SLOT["rtree"]).levels[-1].mbrs = fixed
    _rewrite_metadata(root, lie)
    bad = _one(validate(root), "rtree-mbrs")
    assert "tile 1" in bad.message and bad.field == "levels[-1].mbrs[1].y"


def test_fragment_whose_schema_is_gone(tmp_path):
    uri = tmp_path / "e"
    _sparse(uri)
    se = tiledb.ArraySchemaEvolution(tiledb.default_ctx())
    se.add_attribute(tiledb.Attr("b", dtype=np.float64))
    se.array_evolve(str(uri))
    with tiledb.open(str(uri), "w") as A:
        A[[50], [50]] = {"a": np.array([1], np.int32), "b": np.array([2.0])}
    assert validate(uri) == []
    first = sorted(p for p in (uri / "__schema").iterdir() if p.is_file())[0]
    first.unlink()
    found = validate(uri)
    bad = _one(found, "fragment-schema")
    assert first.name in bad.message and Path(bad.file).name == "__fragment_metadata.tdb"
    assert len([f for f in found if f.rule == "fragment-schema"]) == 1  # the newer fragment's schema is there


@pytest.mark.parametrize("other", ["d", "x_tile_5"])
def test_schema_swapped_for_another_arrays(tmp_path, other):
    """An evolved array whose newest schema file holds another array's schema: one of dimension d (fuzz case
    10423 of seed 4012749626, where the read raised numpy's ValueError looking up the MBR field d), or one
    of the same dimensions with x's tile extent 5, by which old fragments would be read wrong. Evolution
    changes neither (ArraySchemaEvolution), so open refuses it, naming both schemas, and validate reports it."""
    uri, swap = tmp_path / "e", tmp_path / "o"
    _sparse(uri)
    se = tiledb.ArraySchemaEvolution(oracle.tiledb_ctx())
    se.add_attribute(tiledb.Attr("b", dtype=np.float64))
    se.array_evolve(str(uri))
    dims = ([tiledb.Dim("d", domain=(1, 9), tile=3, dtype=np.int32)] if other == "d" else
            [tiledb.Dim("x", domain=(0, 99), tile=5, dtype=np.int64),
             tiledb.Dim("y", domain=(0, 99), tile=10, dtype=np.int64)])
    tiledb.Array.create(str(swap), tiledb.ArraySchema(
        domain=tiledb.Domain(*dims), sparse=other != "d", attrs=[tiledb.Attr("a", dtype=np.int32)],
        ctx=oracle.tiledb_ctx()))
    first, newest = sorted(p for p in (uri / "__schema").iterdir() if p.is_file())
    assert sorted(open_array(uri).read()["a"].tolist()) == list(range(10))  # evolved, it reads
    newest.write_bytes(next(p for p in (swap / "__schema").iterdir() if p.is_file()).read_bytes())
    with pytest.raises(FormatError) as err:
        open_array(uri).read()
    ours = "sparse array, tile order ROW_MAJOR, cell order ROW_MAJOR, dimensions x INT64 x1 domain [0, 99] extent 10"
    theirs = ("dense array, tile order ROW_MAJOR, cell order ROW_MAJOR, dimensions d INT32 x1 domain [1, 9] extent 3"
              if other == "d" else "x INT64 x1 domain [0, 99] extent 5; y INT64")
    for words in (first.name, newest.name, ours, theirs, "evolution cannot change them"):
        assert words in str(err.value)
    bad = _one(validate(uri), "schema-evolution")
    assert first.name in bad.message and newest.name in bad.message and Path(bad.file) == uri


# --- the command ---

def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "tdbformat", *argv], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


def test_command_exit_codes_and_json(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "json-schema" / "validate.v1.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    root = _copy(tmp_path, "filter_zstd")
    clean = _cli("validate", str(root), "--json")
    assert clean.returncode == 0, clean.stderr
    jsonschema.validate(json.loads(clean.stdout), schema)
    a0 = _data_file(root)
    a0.write_bytes(a0.read_bytes()[:-100])
    (root / "notes.txt").write_text("x")
    broken = _cli("validate", str(root), "--json")
    assert broken.returncode == 1, broken.stderr
    doc = json.loads(broken.stdout)
    jsonschema.validate(doc, schema)
    assert {f["rule"] for f in doc["findings"]} == {"file-sizes", "tile-decodes", "stray-files"}
    assert (doc["errors"], doc["warnings"]) == (2, 1)
    text = _cli("validate", str(root), "--rules", "stray-files")
    assert text.returncode == 0 and "[stray-files]" in text.stdout and "notes.txt" in text.stdout
    for argv, code in ((["validate", str(root), "--rules", "nope"], 2), (["validate", str(tmp_path / "none")], 1),
                       (["validate", str(tmp_path)], 1)):  # 2: a bad argument; 1: a path that holds no array
        bad = _cli(*argv)
        assert bad.returncode == code and bad.stderr.startswith("tdbformat: ") and "Traceback" not in bad.stderr


def test_dense_offsets_fewer_than_the_domain_implies(tmp_path):
    """TileDB#5655: a dense fragment whose non-empty domain covers 4 tiles but whose offsets list 3."""
    root = _copy(tmp_path, "filter_zstd")
    from tdbformat.structs.fragment import _SLOT

    def drop(fm):
        payload = fm._payload(_SLOT["tile_offsets"], 0)
        payload.data = payload.data[:-1]
    _rewrite_metadata(root, drop)
    bad = _one(validate(root), "dense-tile-count")
    assert (Path(bad.file), bad.expected, bad.found, bad.field) == (_data_file(root), 4, 3, "tile_offsets")


def test_vacuum_list_naming_a_missing_fragment(tmp_path):
    root = _copy(tmp_path, "consolidated_dense")
    vac = next(root.rglob("*.vac"))
    named = sorted(u.rstrip("/").rsplit("/", 1)[-1] for u in vac.read_text().split())
    assert validate(root) == []
    shutil.rmtree(root / "__fragments" / named[0])
    found = validate(root)
    assert _one(found, "vacuum-targets").found == named[0]
    assert _one(found, "commits").file.endswith(named[0] + ".wrt")  # its commit marker now names nothing


def test_fragment_version_its_name_contradicts(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    frag = next((root / "__fragments").iterdir())
    wrt = root / "__commits" / f"{frag.name}.wrt"
    older = frag.name[:-2] + "21"
    frag.rename(frag.parent / older)
    wrt.rename(wrt.parent / f"{older}.wrt")
    bad = _one(validate(root), "fragment-version")
    assert (bad.expected, bad.found) == (21, 22) and Path(bad.file).name == older


def test_var_offsets_that_fall(tmp_path):
    root = _copy(tmp_path, "sparse_var_string_dim")
    frag = sorted((root / "__fragments").iterdir())[0]
    fm = parse_file(frag / "__fragment_metadata.tdb").value
    schema = next(p for p in (root / "__schema").iterdir() if p.is_file())
    assert ArraySchema.parse(schema.read_bytes()).cell_var_offsets_filters.filters[0].type.name == "ZSTD"
    # the offsets are zstd-compressed: rewrite tile 0 of d0.tdb with falling offsets through our own filter
    from tdbformat.filters import filter_tile
    from tdbformat.structs.tile import Tile
    pipeline = ArraySchema.parse(schema.read_bytes()).cell_var_offsets_filters
    d0 = frag / "d0.tdb"
    offsets = np.asarray(fm.tile_offsets[2])
    data = d0.read_bytes()
    from tdbformat.enums import Datatype
    tile = Tile.build(filter_tile(np.array([0, 5, 2], "<u8").tobytes(), pipeline, datatype=Datatype.UINT64,
                                  cell_size=8, version=22))
    d0.write_bytes(data[:offsets[0]] + tile + data[offsets[1]:])
    delta = len(tile) - int(offsets[1])
    from tdbformat.structs.fragment import _SLOT

    def shift(fm):  # the metadata follows the new tile's size, so only the offsets inside it are wrong
        fm._payload(_SLOT["tile_offsets"], 2).data = offsets + np.array([0, delta, delta, delta], "<u8")
        fm.footer.file_sizes = np.asarray(fm.footer.file_sizes) + np.array([0, 0, delta], "<u8")
    _rewrite_metadata(frag, shift)
    found = validate(root)
    assert [f.rule for f in found] == ["tile-decodes"], [str(f) for f in found]
    assert (Path(found[0].file), found[0].offset) == (d0, 0) and "cell 2's offset 2" in found[0].message


def test_a_group_and_a_single_file(tmp_path):
    case = next(c for c in corpus.cases() if c.parent == V22 and c.name == "group")
    root = tmp_path / "g"
    shutil.copytree(corpus.root(case), root)
    assert validate(root) == []
    a0 = next((root / "arr").rglob("a0.tdb"))
    a0.write_bytes(a0.read_bytes()[:-1])
    assert Path(_one(validate(root), "file-sizes").file) == a0
    schema = next(p for p in (root / "arr" / "__schema").iterdir() if p.is_file())
    schema.write_bytes(schema.read_bytes()[:-3])
    bad = _one(validate(schema), "file-parses")
    assert Path(bad.file) == schema and bad.structure


def test_a_broken_chunk_header_is_reported_inside_its_tile(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    a0 = _data_file(root)
    start, end = (int(x) for x in _tile_offsets(root)[1:3])
    data = bytearray(a0.read_bytes())
    data[start + 12:start + 16] = (10**6).to_bytes(4, "little")  # chunk 0's filtered data size of tile 1
    a0.write_bytes(bytes(data))
    bad = _one(validate(root), "tile-decodes")
    assert (Path(bad.file), bad.field) == (a0, "chunks") and start <= bad.offset < end, bad


@pytest.mark.parametrize("writer, stored", [("v14_c-api_core-2.10.4", 0), ("v17_tiledb-py-0.20.0_core-2.14.0", -36)])
def test_dense_statistics_before_and_after_tiledb_2_12(writer, stored):
    """DISCREPANCIES.md: TileDB before 2.12 counted a dense tile's padding in its min/max, 2.12+ does not."""
    from tdbformat import open_array

    arr = open_array(corpus.CORPUS / writer / "dense_2d_multiattr" / "array")
    frag = next(f for f in arr._committed if f.non_empty_domain[0] == (2, 5))
    tile = np.frombuffer(arr.tiles.raw(frag, 0, "", 0), "<i4").reshape(4, 4)
    written = tile[1:, 2:]  # rows 2-4, columns 3-4 of the tile of rows 1-4, columns 1-4 (the domain starts at 1)
    assert frag.metadata.tile_maxes[0].fixed[0] == stored
    assert stored == (tile.max() if writer.startswith("v14") else written.max())
    assert tile.max() != written.max()
    assert validate(corpus.root(corpus.CORPUS / writer / "dense_2d_multiattr")) == []


def test_bytes_no_section_holds(tmp_path):
    root = _copy(tmp_path, "filter_zstd")
    path = next(root.rglob("__fragment_metadata.tdb"))
    data = path.read_bytes()
    footer_at = len(data) - 8 - int(np.frombuffer(data[-8:], "<u8")[0])
    path.write_bytes(data[:footer_at] + b"JUNK!" + data[footer_at:])  # the footer's offsets still hold
    bad = _one(validate(root), "file-parses")
    assert (Path(bad.file), bad.offset, bad.found) == (path, footer_at, f"[{footer_at}, {footer_at + 5})")
    assert _one(validate(path), "file-parses").offset == footer_at  # the file on its own


def test_progress_counts_every_tile():
    from tdbformat import open_array

    calls = []
    root = corpus.root(V22 / "dense_2d_multiattr")
    assert validate(root, progress=lambda done=0, total=0: calls.append((done, total))) == []
    arr = open_array(root)
    expected = sum(f.tile_num() * len(arr.attrs) for f in arr._committed)  # dense: the attributes have tiles
    assert sum(c[0] for c in calls) == sum(c[1] for c in calls) == expected > 0


@pytest.mark.parametrize("section, idx", [("tile_sums", 0), ("tile_null_counts", 3), ("tile_mins", 3)])
def test_a_lying_sum_null_count_or_min(tmp_path, section, idx):
    """dense_2d_multiattr: a_i32 (index 0) and the nullable a_nint64 (index 3); the last fragment's tile 1 lies."""
    from tdbformat.structs.fragment import _SLOT

    root = _copy(tmp_path, "dense_2d_multiattr")
    path = sorted(root.rglob("__fragment_metadata.tdb"))[-1]
    fm = parse_file(path).value
    payload = fm._payload(_SLOT[section], idx)
    if section == "tile_mins":
        truth = payload.fixed.copy()
        payload.fixed = truth - np.array([0, 1] + [0] * (len(truth) - 2), truth.dtype)
    else:
        truth = np.asarray(payload.data).copy()
        payload.data = truth + np.array([0, 1] + [0] * (len(truth) - 2), truth.dtype)
    path.write_bytes(fm.build())
    bad = _one(validate(root), "tile-stats")
    assert (Path(bad.file), bad.structure, bad.field) == (path, section, f"{section}[{idx}][1]")
    assert (bad.expected, bad.found) == (truth[1], truth[1] + (-1 if section == "tile_mins" else 1))


def test_missing_enumeration_file(tmp_path):
    root = _copy(tmp_path, "enumerations")
    gone = next((root / "__schema" / "__enumerations").iterdir())
    gone.unlink()
    bad = _one(validate(root), "file-parses")
    assert (Path(bad.file), bad.found) == (gone, "nothing")


def test_an_rtree_parent_that_does_not_hold_its_children(tmp_path):
    from tdbformat.structs.fragment import _SLOT

    root = _sparse(tmp_path / "s")  # 3 tiles under one root

    def lie(fm):
        rtree = fm._payload(_SLOT["rtree"])
        assert [len(level.mbrs) for level in rtree.levels] == [1, 3]
        top = rtree.levels[0].mbrs.copy()
        top["x"][0] = [1, 6]  # the children hold x = 0..6
        rtree.levels[0].mbrs = top
    _rewrite_metadata(root, lie)
    bad = _one(validate(root), "rtree-mbrs")
    assert bad.field == "levels[0].mbrs[0].x" and bad.found == "[1, 6]" and bad.expected == "[0, 6] inside"


def test_a_var_sized_rtree_parent(tmp_path):
    from tdbformat.structs.fragment import _SLOT

    root = _copy(tmp_path, "sparse_var_string_dim")
    path = sorted(root.rglob("__fragment_metadata.tdb"))[0]
    fm = parse_file(path).value
    rtree = fm._payload(_SLOT["rtree"])
    assert len(rtree.levels) == 2
    rtree.levels[0].mbrs[0][0].start = b"zzz"  # above every key below it
    path.write_bytes(fm.build())
    bad = _one(validate(root), "rtree-mbrs")
    assert bad.field == "levels[0].mbrs[0].key" and "b'zzz'" in bad.found
