"""tdbformat.spec against the official spec: table field order at v23, the version history, the generated
spec_versions/ folder, the HTML side-by-side page in a real browser, and `tdbformat diff` on corpus files.

Expected values come from tests/data/spec (the official spec pages), truth.json and raw bytes. Structures
not declared yet are skipped with a message, so these tests grow as declarations land.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from corpus import CORPUS, cases, files, key, root, truth
from tdbformat import spec
from tdbformat.cli import main
from tdbformat.layout.files import file_kind, parse_file
from tdbformat.spec.render import render_diff, write_spec_versions
from tdbformat.structs import commits, enumeration, fragment, group, metadata

SPEC = Path(__file__).parents[1] / "data" / "spec"
REPO = Path(__file__).parents[2]


def _find(*words):
    """The registered structure titled so, or whose title holds every word (case-insensitive), else skip."""
    exact = {t.lower(): s for t, s in spec.structures().items()}
    if " ".join(words) in exact:
        return exact[" ".join(words)]
    for title, s in spec.structures().items():
        if all(w.lower() in title.lower() for w in words):
            return s
    pytest.skip(f"no structure titled with {words} is declared yet")


# ---------------------------------------------------------------------------------------------------------
# The official spec tables

def _tables(page: str) -> dict[str, list[list[tuple[str, str]]]]:
    """Heading -> its tables, each a list of (field, description) rows, from a spec page."""
    out, heading, table = {}, None, None
    for line in (SPEC / page).read_text().splitlines():
        if line.startswith("#"):
            heading, table = line.lstrip("#").strip(), None
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if table is None:
                table = []
                out.setdefault(heading, []).append(table)
            elif not set(cells[0]) <= set(":- "):
                table.append((cells[0], cells[-1]))
        else:
            table = None
    return out


def _snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _spec_fields(rows, version: int) -> list[str]:
    """Field names of a spec table at ``version``: repeated groups ("X 1", "…", "X N") once, as "X"."""
    out = []
    for name, doc in rows:
        removed = re.search(r"_Removed in version (\d+)_", doc)
        new = re.search(r"_New in version (\d+)_", doc)
        if name in ("…", "...") or re.search(r" [NL]$", name) or (removed and version >= int(removed[1])) \
                or (new and version < int(new[1])):
            continue
        out.append(_snake(re.sub(r" 1$", "", name)))
    return out


def _declared(struct, prefix: str, case: str | None, version: int) -> list[str]:
    """Names of the direct fields under ``prefix`` (in the layout for switch case ``case``), in order."""
    names = []
    for f in spec.fields(struct, version):
        head, _, name = f.path.rpartition(".") if "." in f.path else ("", "", f.path)
        if head != prefix or (case and not re.search(rf"\b{case}\b", f.case)):
            continue
        if name not in names:
            names.append(name)
    return names


_COMPRESSORS = ("GZIP", "ZSTD", "LZ4", "RLE", "BZIP2", "DICTIONARY")

# (page, heading, table #, structure title words, path prefix, switch cases, spec name -> declared name,
#  known difference: (REFERENCE.md §17 item or reason, the declared order it documents)).
SPEC_TABLES = [
    ("filter_pipeline.md", "Main Structure", 0, ("filter pipeline",), "", (None,), {"filter": "filters"}, None),
    ("filter_pipeline.md", "Filter", 0, ("filter pipeline",), "filters[]", (None,),
     {"filter_type": "type", "filter_options_size": "options_size", "filter_options": "options"}, None),
    ("filter_pipeline.md", "Main Compressor Options", 0, ("filter pipeline",), "filters[].options", _COMPRESSORS,
     {"compressor_type": "compressor", "compression_level": "level"}, None),
    ("filter_pipeline.md", "Delta Compressor Options", 0, ("filter pipeline",), "filters[].options",
     ("DELTA", "DOUBLE_DELTA"), {"compressor_type": "compressor", "compression_level": "level"}, None),
    ("filter_pipeline.md", "Bit-width Reduction Options", 0, ("filter pipeline",), "filters[].options",
     ("BIT_WIDTH_REDUCTION",), {}, None),
    ("filter_pipeline.md", "Positive Delta Options", 0, ("filter pipeline",), "filters[].options",
     ("POSITIVE_DELTA",), {}, None),
    ("filter_pipeline.md", "Float Scale Filter Reduction Options", 0, ("filter pipeline",), "filters[].options",
     ("SCALE_FLOAT",), {}, None),
    ("generic_tile.md", None, 0, ("generic tile",), "", (None,), {"version_number": "version", "tile_data": "tile"},
     None),
    ("tile.md", "Main Structure", 0, ("tile",), "", (None,), {"chunk": "chunks"}, None),
    ("tile.md", "Chunk Format", 0, ("tile",), "chunks[]", (None,),
     {"original_length_of_chunk": "unfiltered_size", "filtered_chunk_length": "filtered_data_size",
      "chunk_metadata_length": "filtered_metadata_size", "chunk_metadata": "metadata",
      "chunk_filtered_data": "data"}, None),
    ("tile.md", "Compression Filters", 0, ("gzip", "chunk metadata"), "", (None,),
     {"number_of_metadata_parts": "num_metadata_parts", "number_of_data_parts": "num_data_parts",
      "metadata_part": "parts", "data_part": "parts"}, None),
    ("tile.md", "Compression Filters", 1, ("gzip", "chunk metadata"), "parts[]", (None,),
     {"part_original_length": "orig_size", "part_compressed_length": "compressed_size"}, None),
    ("array_schema.md", "Array Schema File", 0, ("array schema",), "", (None,),
     {"array_version": "version", "coords_filters": "coords_filters", "offsets_filters": "cell_var_offsets_filters",
      "validity_filters": "cell_validity_filters", "num_attributes": "attribute_num", "attribute": "attributes",
      "num_labels": "label_num", "label": "labels", "num_enumerations": "enumeration_num",
      "enumeration_name_length": "enumerations", "enumeration_name": "enumerations",
      "enumeration_filename_length": "enumerations", "enumeration_filename": "enumerations"}, None),
    ("array_schema.md", "Domain", 0, ("array schema",), "domain", (None,),
     {"num_dimensions": "dim_num", "dimension": "dimensions"}, None),
    ("array_schema.md", "Dimension", 0, ("array schema",), "domain.dimensions[]", (None,),
     {"dimension_name_length": "name_len", "dimension_name": "name", "dimension_datatype": "datatype",
      "null_tile_extent": "null_tile_extent"}, None),
    ("array_schema.md", "Attribute", 0, ("array schema",), "attributes[]", (None,),
     {"attribute_name_length": "name_len", "attribute_name": "name", "attribute_datatype": "datatype"},
     ("§17 #2: the enumeration name (v20) is missing from the table",
      ["name_len", "name", "datatype", "cell_val_num", "filters", "fill_value_size", "fill_value", "nullable",
       "fill_value_validity", "order", "enumeration_name_len", "enumeration_name"])),
    ("array_schema.md", "Dimension Label", 0, ("array schema",), "labels[]", (None,), {},
     ("§17 #1: the code writes dim_id, name, relative, uri, attr name, order, datatype, cell_val_num, is_external",
      ["dim_index", "name_len", "name", "relative_uri", "uri_len", "uri", "label_attr_name_len", "label_attr_name",
       "label_order", "label_datatype", "label_cell_val_num", "is_external"])),
    ("enumeration.md", "Main Structure", 0, ("enumeration",), "", (None,), {"version_number": "version"},
     ("§17 #3: name and path name sit between the version and the datatype",
      ["version", "name_len", "name", "path_name_len", "path_name", "datatype", "cell_val_num", "ordered",
       "data_size", "data", "offsets_size", "offsets"])),
    ("metadata.md", "Metadata File", 0, ("metadata",), "entries[]", (None,),
     {"key_length": "key_len", "deletion": "deleted", "value_type": "datatype", "number_of_values": "value_num"},
     None),
    ("fragment.md", "Footer", 0, ("fragment metadata footer",), "", (None,),
     {"version_number": "version", "array_schema_name_size": "array_schema_name_len",
      "null_non_empty_domain": "null_non_empty_domain", "number_of_sparse_tiles": "sparse_tile_num",
      "includes_timestamps": "has_timestamps", "includes_delete_metadata": "has_delete_meta",
      "r_tree_offset": "rtree_offset", "tile_offset_for_attribute_dimension": "tile_offsets_offsets",
      "tile_var_offset_for_attribute_dimension": "tile_var_offsets_offsets",
      "tile_var_sizes_offset_for_attribute_dimension": "tile_var_sizes_offsets",
      "tile_validity_offset_for_attribute_dimension": "tile_validity_offsets_offsets",
      "tile_mins_offset_for_attribute_dimension": "tile_min_offsets",
      "tile_maxes_offset_for_attribute_dimension": "tile_max_offsets",
      "tile_sums_offset_for_attribute_dimension": "tile_sum_offsets",
      "tile_null_counts_offset_for_attribute_dimension": "tile_null_count_offsets",
      "fragment_min_max_sum_null_count_offset": "fragment_min_max_sum_null_count_offset",
      "number_of_optional_sections": "optional_section_count", "optional_section": "optional_sections"},
     ("footer_length is read back from the end of the file to find the footer, so the file-level reader "
      "holds it, not the Footer structure",
      ["version", "array_schema_name_len", "array_schema_name", "dense", "null_non_empty_domain",
       "non_empty_domain", "sparse_tile_num", "last_tile_cell_num", "has_timestamps", "has_delete_meta",
       "file_sizes", "file_var_sizes", "file_validity_sizes", "rtree_offset", "tile_offsets_offsets",
       "tile_var_offsets_offsets", "tile_var_sizes_offsets", "tile_validity_offsets_offsets", "tile_min_offsets",
       "tile_max_offsets", "tile_sum_offsets", "tile_null_count_offsets", "fragment_min_max_sum_null_count_offset",
       "processed_conditions_offset", "optional_section_count", "optional_sections"])),
    ("fragment.md", "Optional section", 0, ("fragment metadata footer",), "optional_sections[]", (None,),
     {"data_size": "data_size"}, None),
]


@pytest.mark.parametrize("page,heading,index,words,prefix,cases,names,known", SPEC_TABLES,
                         ids=[f"{t[0]}:{t[1] or 'main'}:{t[2]}" for t in SPEC_TABLES])
def test_field_order_matches_the_spec_at_v23(page, heading, index, words, prefix, cases, names, known):
    tables = _tables(page)
    rows = (tables[heading] if heading else next(iter(tables.values())))[index]
    documented = [names.get(n, n) for n in _spec_fields(rows, 23)]
    documented = [n for i, n in enumerate(documented) if i == 0 or n != documented[i - 1]]  # one per group
    struct = _find(*words)
    if known is not None:
        reason, code_order = known
        assert documented != code_order, f"the spec now agrees ({reason}): drop the known difference"
        documented = code_order
    for case in cases:
        assert _declared(struct, prefix, case, 23) == documented, (page, heading, case)


def test_filter_pipeline_and_generic_tile_are_declared():
    titles = {t.lower() for t in spec.structures()}
    assert {"filter pipeline", "generic tile", "tile"} <= titles


# ---------------------------------------------------------------------------------------------------------
# The version history

def _history() -> dict[int, str]:
    text = (SPEC / "array_format_history.md").read_text()
    parts = re.split(r"^## Version (\d+)$", text, flags=re.M)
    return {int(v): body for v, body in zip(parts[1::2], parts[2::2])}


# (version, phrase of array_format_history.md, structure title words, kind, path pattern, switch case)
HISTORY = [
    (23, "optional sections", ("fragment metadata footer",), "added", r"optional_section_count", None),
    (23, "optional sections", ("fragment metadata footer",), "added", r"optional_sections", None),
    (22, "_Current domain_ field was added", ("array schema",), "added", r"current_domain", None),
    (20, "Arrays can have [enumerations]", ("array schema",), "added", r"enumeration_num", None),
    (20, "Arrays can have [enumerations]", ("array schema",), "added", r"enumerations", None),
    (20, "for the double-delta filter contain the _Reinterpret datatype_",
     ("filter pipeline",), "added", r"filters\[\]\.options\.reinterpret_datatype", "DOUBLE_DELTA"),
    (19, "for the delta filter contain the _Reinterpret datatype_",
     ("filter pipeline",), "added", r"filters\[\]\.options\.reinterpret_datatype", "DELTA"),
    (18, "Arrays can have [dimension labels]", ("array schema",), "added", r"label_num", None),
    (18, "Arrays can have [dimension labels]", ("array schema",), "added", r"labels", None),
    (17, "The _Order_ field was added to [attributes]", ("array schema",), "added", r"attributes\[\]\.order", None),
    (16, "Fragment metadata contain [tile processed conditions]", ("fragment metadata footer",), "added",
     r"processed_conditions_offset", None),
    (15, "The _Includes delete metadata_ field was added", ("fragment metadata footer",), "added",
     r"has_delete_meta", None),
    (14, "The _Includes timestamps_ field was added", ("fragment metadata footer",), "added", r"has_timestamps", None),
    (11, "Fragment metadata contain [metadata]", ("fragment metadata footer",), "added", r"tile_min_offsets", None),
    (11, "Fragment metadata contain [metadata]", ("fragment metadata footer",), "added", r"tile_max_offsets", None),
    (11, "Fragment metadata contain [metadata]", ("fragment metadata footer",), "added", r"tile_sum_offsets", None),
    (11, "Fragment metadata contain [metadata]", ("fragment metadata footer",), "added",
     r"tile_null_count_offsets", None),
    (10, "The _Array schema name_ field was added", ("fragment metadata footer",), "added", r"array_schema_name",
     None),
    (7, "The _Nullable_ and _Fill value validity_ fields were added", ("array schema",), "added",
     r"attributes\[\]\.nullable", None),
    (7, "The _Nullable_ and _Fill value validity_ fields were added", ("array schema",), "added",
     r"attributes\[\]\.fill_value_validity", None),
    (7, "The _Validity filters_ field was added", ("array schema",), "added", r"cell_validity_filters", None),
    (7, "Fragment metadata contain validity [tile offsets]", ("fragment metadata footer",), "added",
     r"tile_validity_offsets\w*", None),
    (6, "The _Fill value_ field was added", ("array schema",), "added", r"attributes\[\]\.fill_value", None),
    (5, "The _Dimension datatype_, _Cell val num_ and _Filters_ fields were added", ("array schema",), "added",
     r"domain\.dimensions\[\]\.datatype", None),
    (5, "The _Dimension datatype_, _Cell val num_ and _Filters_ fields were added", ("array schema",), "added",
     r"domain\.dimensions\[\]\.cell_val_num", None),
    (5, "The _Dimension datatype_, _Cell val num_ and _Filters_ fields were added", ("array schema",), "added",
     r"domain\.dimensions\[\]\.filters", None),
    (5, "The _Domain size_ field was added", ("array schema",), "added", r"domain\.dimensions\[\]\.domain_size", None),
    (5, "The _Domain datatype_ field was removed", ("array schema",), "removed", r"domain\.\w*(type|datatype)", None),
    (5, "The _Allows dups_ field was added", ("array schema",), "added", r"allows_dups", None),
    (5, "The _Dimension number_ and _R-Tree datatype_ fields have been removed", ("r-tree",), "removed",
     r"\w*dim\w*", None),
    (5, "The _Dimension number_ and _R-Tree datatype_ fields have been removed", ("r-tree",), "removed",
     r"\w*type", None),
]


@pytest.mark.parametrize("version,phrase,words,kind,path,case", HISTORY,
                         ids=[f"v{h[0]}:{h[4]}:{h[5] or ''}" for h in HISTORY])
def test_adjacent_diff_names_each_byte_change_of_the_history(version, phrase, words, kind, path, case):
    assert phrase in _history()[version], "the expectation must quote the history file"
    struct = _find(*words)
    changes = [c for c in spec.diff(version - 1, version) if c.structure == struct.title and c.kind == kind
               and re.fullmatch(path, c.path) and (case is None or re.search(rf"\b{case}\b", (c.new or c.old).case))]
    assert changes, f"v{version - 1}->v{version}: no {kind} field {path} in {struct.title}"
    assert {c.version for c in changes} == {version}


def test_no_byte_change_from_20_to_21():
    assert "does not contain any changes to the storage format" in _history()[21]
    assert spec.diff(20, 21) == []


def test_diff_gives_the_version_a_change_arrived_in():
    changes = [c for c in spec.diff(18, 23, "Filter pipeline") if c.kind == "added"]
    arrived = {(re.search(r"\b(DOUBLE_DELTA|DELTA)\b", c.new.case)[1]): c.version for c in changes}
    assert arrived == {"DELTA": 19, "DOUBLE_DELTA": 20}


# ---------------------------------------------------------------------------------------------------------
# The walker on constructs it does not know, and the generated folder

def test_unknown_constructs_are_opaque_not_errors():
    import construct

    from tdbformat.fields import Struct

    class Mystery(construct.Construct):
        def _parse(self, stream, context, path):
            return None

    rows = spec.fields(Struct("a" / construct.Int16ul * "doc a", "b" / Mystery() * "doc b",
                              "c" / construct.Prefixed(construct.Int8ul, construct.GreedyBytes)), 23)
    assert [(f.path, f.type, f.size, f.doc) for f in rows] == [
        ("a", "u16", "2", "doc a"), ("b", "<Mystery>", "var", "doc b"), ("c", "u8[]", "u8 length prefix", "")]


def test_spec_versions_are_up_to_date(tmp_path):
    written = write_spec_versions(tmp_path)
    committed = REPO / "spec_versions"
    stale = [p.name for p in written if p.name != "DISCREPANCIES.md"
             and (not (committed / p.name).exists() or (committed / p.name).read_text() != p.read_text())]
    assert not stale, f"spec_versions/ is stale ({', '.join(stale)}): run tdbformat spec --write spec_versions"
    assert (committed / "DISCREPANCIES.md").exists()


def test_the_generator_keeps_discrepancies(tmp_path):
    (tmp_path / "DISCREPANCIES.md").write_text("# Discrepancies\n\n## Someone's section\n")
    write_spec_versions(tmp_path)
    assert (tmp_path / "DISCREPANCIES.md").read_text() == "# Discrepancies\n\n## Someone's section\n"


# ---------------------------------------------------------------------------------------------------------
# The HTML side-by-side page in a browser

def test_html_diff_renders_in_chromium(tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no Chromium here: apt-get install -y chromium")
    page = tmp_path / "diff_22_23.html"
    page.write_text(render_diff(22, 23, fmt="html"))
    shot = tmp_path / "diff_22_23.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1400,1000",
                    page.as_uri()], check=True, capture_output=True, timeout=120)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1400, 1000)


# ---------------------------------------------------------------------------------------------------------
# tdbformat diff on two files

def _schema(writer_glob: str, case: str) -> tuple[Path, dict]:
    folder = next(CORPUS.glob(f"{writer_glob}/{case}"))
    return next((folder / "array" / "__schema").iterdir()), truth(folder)


def test_diff_of_one_schema_at_two_versions(capsys):
    (path_a, truth_a), (path_b, truth_b) = _schema("v21_*", "dense_2d_multiattr"), \
        _schema("v22_tiledb-py-0.31.1_*", "dense_2d_multiattr")
    # The two arrays are the same array (truth.json) but for their format version, and v22 adds the
    # current domain (array_format_history.md); the generic tile headers differ where their raw bytes do.
    assert {k: v for k, v in truth_a["schema"].items() if k != "version"} == \
        {k: v for k, v in truth_b["schema"].items() if k != "version"}
    raw_a, raw_b = path_a.read_bytes(), path_b.read_bytes()
    header = ("version", "persisted_size", "tile_size")
    values_a, values_b = struct.unpack_from("<IQQ", raw_a), struct.unpack_from("<IQQ", raw_b)
    expected = {f"generic_tile.{n}" for n, x, y in zip(header, values_a, values_b) if x != y}
    expected |= {"version", "current_domain"}

    assert main(["diff", str(path_a), str(path_b), "--format", "json"]) == 0
    import json
    rows = json.loads(capsys.readouterr().out)["differences"]
    assert {r["path"] for r in rows} == expected
    by_path = {r["path"]: r for r in rows}
    assert (by_path["version"]["value_a"], by_path["version"]["value_b"]) == \
        (str(truth_a["schema"]["version"]), str(truth_b["schema"]["version"]))
    assert by_path["version"]["offset_a"] == "GT@0 payload+0"  # the payload starts with the version
    assert by_path["generic_tile.version"]["offset_a"] == "0"
    assert by_path["current_domain"]["value_a"] == "(absent)" or by_path["current_domain"]["value_a"] == "None"


def test_diff_of_one_file_with_itself_is_empty(capsys):
    path, _ = _schema("v21_*", "dense_2d_multiattr")
    assert main(["diff", str(path), str(path)]) == 0
    assert "0 fields differ" in capsys.readouterr().out
    assert parse_file(path).kind == "array_schema"


def test_whole_structures_exist_in_the_versions_of_the_corpus_files():
    """A structure's since/until gate holds for every file a writer of that format version wrote."""
    sections = {"commit": commits.CommitMarker, "vacuum": commits.VacuumFile, "ignore": commits.IgnoreFile,
                "consolidated_commits": commits.ConsolidatedCommits, "delete_commit": commits.DeleteCommit,
                "update_commit": commits.UpdateCommit, "enumeration": enumeration.Enumeration,
                "metadata": metadata.ArrayMetadata, "group_details": group.GroupDetails,
                "consolidated_fragment_metadata": fragment.ConsolidatedFragmentMetadata}
    seen = set()
    for case in cases():
        version = int(case.parent.name[1:case.parent.name.index("_")])
        for p in files(root(case)):
            kind = file_kind(p)
            if kind == "fragment_metadata":
                meta = parse_file(p, key=key(case)).value
                section = fragment.LegacyFragmentMetadataFile if meta.legacy is not None else fragment.Footer
            else:
                section = sections.get(kind)
            if section is not None:
                assert section.exists(version), (section.title, version, p)
                seen.add(section.title)
    assert len(seen) == 10  # every gated structure but .upd and .ign, which no corpus writer left


def test_diff_lists_behaviour_gates_where_they_switch():
    """Each Feature shows up in diff() between the versions around its bounds, and nowhere else."""
    from tdbformat.versions import FEATURES
    for f in FEATURES.values():
        for bound, kind in ((f.since, "added"), (f.until, "removed")):
            if bound is None:
                continue
            got = [c for c in spec.diff(bound - 1, bound) if c.structure == spec.BEHAVIOUR
                   and (c.new or c.old).path == f.name]
            assert [(c.kind, c.version) for c in got] == [(kind, bound)], f.name
    quiet = [v for v in range(1, 23) if not any(v + 1 in (f.since, f.until) for f in FEATURES.values())]
    assert all(not any(c.structure == spec.BEHAVIOUR for c in spec.diff(v, v + 1)) for v in quiet)


def test_diff_of_two_fragment_metadata_files(capsys):
    """Fragment metadata is compared footer and sections, not as one opaque object; each footer offset the
    diff reports holds, in the file's own bytes, the u64 it reports."""
    import json

    frags = sorted(CORPUS.glob("v22_tiledb-py-0.31.1_*/dense_2d_multiattr/array/__fragments/*/__fragment_metadata.tdb"))
    path_a, path_b = frags[:2]
    assert main(["diff", str(path_a), str(path_b), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["differences"]
    paths = {r["path"] for r in rows}
    assert {"footer.non_empty_domain[0][0]", "footer.file_sizes[1]"} <= paths
    assert any(p.startswith("tile_offsets[") for p in paths)
    raw_a, raw_b = path_a.read_bytes(), path_b.read_bytes()
    sizes = [r for r in rows if r["path"].startswith("footer.file_sizes[")]
    assert sizes
    for r in sizes:
        assert struct.unpack_from("<Q", raw_a, int(r["offset_a"]))[0] == int(r["value_a"])
        assert struct.unpack_from("<Q", raw_b, int(r["offset_b"]))[0] == int(r["value_b"])
