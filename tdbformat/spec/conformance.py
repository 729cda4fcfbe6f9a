"""The conformance suite for other implementations (conformance/README.md): for a few corpus arrays of every
format version, each file's bytes, the context its parse needs, and the parse tdbformat expects, as JSON.

Generated from the corpus by :func:`write_conformance` (``python3 scripts/conformance.py``); a test fails
when the committed suite is stale.
"""

from __future__ import annotations

import json

from ..layout import array_root, schema_files
from ..enums import LegacyCompressor
from ..layout.files import parse_file
from ..storage import storage_for
from ..structs.footer import has_footer_length
from ..structs.fragment import FragmentMetadata, fragment_sections
from .suite_json import to_suite_json

__all__ = ["SUITE_VERSION", "select_cases", "case_document", "expected_json", "write_conformance", "write_prev1_cases",
           "edge_cases", "edge_expected"]

SUITE_VERSION = 2
#: per format version, the first case of each group that the version's corpus has
_PREFERENCES = (("dense_2d_multiattr", "fill_values", "consolidated_dense"),
                ("sparse_2d_rtree", "sparse_delete", "sparse_var_string_dim", "consolidated_sparse_with_timestamps"),
                ("array_metadata", "array_metadata_consolidated"),
                ("commits_consolidated", "commits_consolidated_vacuumed"),
                ("enumerations",), ("current_domain",), ("dimension_labels",), ("group",))
#: the case names of the cases made with TileDB-Py by scripts/make_conformance_edges.py
EDGE_PREFIX = "edge_"
#: data files above this size stay out (the suite is for parsers, and small on disk)
MAX_FILE = 16384


def select_cases(corpus) -> list:
    """(writer folder name, case name) pairs: per writer of the corpus, one case of each preference group."""
    storage, root = storage_for(corpus)
    out = []
    for writer in sorted(storage.list(root)):
        if not writer.startswith("v") or not storage.is_dir(storage.join(root, writer)):
            continue
        names = set(storage.list(storage.join(root, writer)))
        for group in _PREFERENCES:
            pick = next((n for n in group if n in names), None)
            if pick:
                out.append((writer, pick))
    return out


def _value(parsed):
    value = parsed.value
    return to_suite_json(fragment_sections(value) if isinstance(value, FragmentMetadata) else value)


def _cut(context) -> dict:
    """How a pre-v1 data file is cut into tiles (its parse context): tile offsets, or (0.x, uncompressed) the
    bytes of a tile, and (1.x) the field's compressor."""
    out = {k: [int(o) for o in context[k]] if k == "tile_offsets" else context[k]
           for k in ("tile_offsets", "tile_bytes") if k in context}
    if "compressor" in context:
        out["compressor"] = LegacyCompressor(context["compressor"]).name
    return out


def _fragment_context(storage, array, f, parsed) -> dict:
    """Of fragment metadata: the schema file it is parsed with (a path under array/) and (v3+) where its
    footer is, which needs the schema to compute before v10 (fragment.md): given so that a parser can start
    with the footer."""
    fm, schemas = parsed.value, schema_files(storage, array_root(storage, f))
    if not isinstance(fm, FragmentMetadata):  # pre-v1 (book-keeping, 1.x fragment metadata): the one schema
        return {"schema": str(schemas[0])[len(str(array)) + 1:]}
    name = next(n for n, s in parsed.context["schema"].items() if s is fm.schema)
    path = next(p for p in schemas if storage.name(p) == name)
    out = {"schema": str(path)[len(str(array)) + 1:]}
    if fm.legacy is None:
        trailer = 8 if has_footer_length(fm.version, fm.schema) else 0
        out["footer"] = {"offset": fm.footer_offset, "size": storage.size(f) - fm.footer_offset - trailer}
    return out


def case_document(storage, array, files) -> dict:
    """The expected parse of each of ``files`` (paths under ``array``): kind, size, context, value."""
    schemas = [storage.name(f) for f in files if storage.name(storage.parent(f)) == "__schema"
               or storage.name(f) in ("__array_schema.tdb", "__array_metadata.tdb")]
    out = []
    for f in files:
        parsed = parse_file(f)
        rel = str(f)[len(str(array)) + 1:]
        entry = {"file": rel, "kind": parsed.kind, "size": storage.size(f)}
        if parsed.kind in ("data_0x", "data_1x"):  # where the tiles start: the fragment metadata's offsets
            entry["context"] = _cut(parsed.context)
        if "schema" in parsed.context:
            entry["context"] = {"schemas": schemas, "fragment": storage.name(storage.parent(f)),
                                **_fragment_context(storage, array, f, parsed)}
        entry["value"] = _value(parsed)
        out.append(entry)
    return {"suite_version": SUITE_VERSION, "files": out}


def write_conformance(corpus, out) -> list:
    """Regenerate the suite at ``out`` from ``corpus`` (tests/data/corpus); returns the files written."""
    storage, root = storage_for(corpus)
    _, dest = storage_for(out)
    written = []
    for writer, case in select_cases(corpus):
        truth = json.loads(storage.read(storage.join(root, writer, case, "truth.json")))
        if truth.get("encryption"):
            continue
        array = storage.join(root, writer, case, truth.get("path", "array"))
        files = [f for f in storage.walk(array) if storage.size(f) <= MAX_FILE]
        written += _write_case(storage, array, files, storage.join(dest, writer, case))
    return written


def _write_case(storage, array, files, target) -> list:
    """Copy ``files`` of ``array`` to ``target/array`` and write ``target/expected.json``; the paths written."""
    written = []
    for f in files:
        written.append(storage.join(target, "array", str(f)[len(str(array)) + 1:]))
        storage.write(written[-1], storage.read(f))
    written.append(storage.join(target, "expected.json"))
    storage.write(written[-1], expected_json(storage, array, files))
    return written


def write_prev1_cases(prev1, out) -> list:
    """The pre-v1 cases of the suite at ``out``, from the TileDB-written arrays at ``prev1`` (tests/data/prev1):
    ``v0.x_tiledb-0.6.1``, ``v1.2_tiledb-1.2.2``, ``v1.3_tiledb-1.3.0`` (no 1.0/1.1 array exists)."""
    storage, root = storage_for(prev1)
    _, dest = storage_for(out)
    written = []
    for writer, case, folder in _PREV1_CASES:
        array = storage.join(root, *folder.split("/"))
        written += _write_case(storage, array, storage.walk(array), storage.join(dest, writer, case))
    return written


_PREV1_CASES = (
    ("v0.x_tiledb-0.6.1", "dense_compressed", "tiledb-0.6.1/my_workspace/dense_arrays/my_array_A"),
    ("v0.x_tiledb-0.6.1", "sparse_two_fragments", "tiledb-0.6.1/my_workspace/sparse_arrays/sparse_two_fragments"),
    ("v1.2_tiledb-1.2.2", "dense_compressed", "tiledb-1.2.2/my_dense_array"),
    ("v1.2_tiledb-1.2.2", "sparse_compressed", "tiledb-1.2.2/my_sparse_array"),
    ("v1.3_tiledb-1.3.0", "dense_upstream", "tiledb-1.3.0_upstream-test-input/dense_array_v1_3_0"),
)


def expected_json(storage, array, files) -> bytes:
    """The expected.json of ``files`` of the array (or group) at ``array``, as the suite writes it."""
    doc = case_document(storage, array, files)
    return (json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode()


def edge_cases(suite) -> list:
    """The suite's cases made by scripts/make_conformance_edges.py (``<writer>/edge_*``), not from the corpus."""
    storage, root = storage_for(suite)
    return [storage.join(root, w, c) for w in sorted(storage.list(root)) if w.startswith("v")
            and storage.is_dir(storage.join(root, w)) for c in sorted(storage.list(storage.join(root, w)))
            if c.startswith(EDGE_PREFIX)]


def edge_expected(case) -> bytes:
    """The expected.json of an edge case, from the array files committed in ``case/array``."""
    storage, case = storage_for(case)
    array = storage.join(case, "array")
    return expected_json(storage, array, storage.walk(array))
