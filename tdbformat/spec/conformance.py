"""The conformance suite for other implementations (conformance/README.md): for a few corpus arrays of every
format version, each file's bytes, the context its parse needs, and the parse tdbformat expects, as JSON.

Generated from the corpus by :func:`write_conformance` (``python3 scripts/conformance.py``); a test fails
when the committed suite is stale.
"""

from __future__ import annotations

import json

from ..layout.files import parse_file
from ..show.render import plain
from ..storage import storage_for
from ..structs.fragment import FragmentMetadata, fragment_sections

__all__ = ["SUITE_VERSION", "select_cases", "case_document", "write_conformance"]

SUITE_VERSION = 1
#: per format version, the first case of each group that the version's corpus has
_PREFERENCES = (("dense_2d_multiattr", "fill_values", "consolidated_dense"),
                ("sparse_2d_rtree", "sparse_delete", "sparse_var_string_dim", "consolidated_sparse_with_timestamps"),
                ("array_metadata", "array_metadata_consolidated"),
                ("commits_consolidated", "commits_consolidated_vacuumed"),
                ("enumerations",), ("current_domain",), ("dimension_labels",), ("group",))
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
    return plain(fragment_sections(value) if isinstance(value, FragmentMetadata) else value)


def case_document(storage, array, files) -> dict:
    """The expected parse of each of ``files`` (paths under ``array``): kind, size, context, value."""
    schemas = [storage.name(f) for f in files if storage.name(storage.parent(f)) == "__schema"
               or storage.name(f) in ("__array_schema.tdb", "__array_metadata.tdb")]
    out = []
    for f in files:
        parsed = parse_file(f)
        rel = str(f)[len(str(array)) + 1:]
        entry = {"file": rel, "kind": parsed.kind, "size": storage.size(f)}
        if "schema" in parsed.context:
            entry["context"] = {"schemas": schemas, "fragment": storage.name(storage.parent(f))}
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
        target = storage.join(dest, writer, case)
        for f in files:
            path = storage.join(target, "array", str(f)[len(str(array)) + 1:])
            storage.write(path, storage.read(f))
            written.append(path)
        doc = case_document(storage, array, files)
        path = storage.join(target, "expected.json")
        storage.write(path, (json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode())
        written.append(path)
    return written
