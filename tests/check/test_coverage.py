"""Byte coverage and the hex view: every byte of the corpus files belongs to a field, each field's bytes decode to
its parsed value (so the recorded positions are right), a gap is found where one is, and the hex dump shows each
byte exactly once."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from construct import Int8ul, Int32ul, Padding

import corpus
from tdbformat.check.coverage import Span, coverage, field_spans, gaps, hexdump, spans
from tdbformat.fields import Section, Struct

ROOT = Path(__file__).resolve().parents[2]
#: cases that hold every kind of file, for every writer
KINDS = {"dense_2d_multiattr", "sparse_2d_rtree", "fragment_meta_consolidated", "array_metadata_consolidated",
         "encrypted_dense", "consolidated_sparse_with_timestamps", "sparse_var_string_dim", "commits_consolidated",
         "enumerations", "group", "sparse_delete", "filter_rle_string", "consolidated_dense"}
CASES = [c for c in corpus.cases() if c.name in KINDS]


@pytest.mark.parametrize("case", CASES, ids=corpus.case_id)
def test_every_byte_belongs_to_a_field_and_decodes_to_its_value(case):
    for f in corpus.files(corpus.root(case)):
        data, found = spans(f, key=corpus.key(case))
        assert coverage(f, key=corpus.key(case)) == [], f
        spaces = {"file": data} | {s.space: s.value for s in found if s.path is None}
        for s in found:
            v = s.value
            if s.path is None or isinstance(v, bool) or not isinstance(v, (int, np.integer)) or hasattr(v, "name"):
                continue
            raw = spaces[s.space][s.start:s.end]
            assert len(raw) in (1, 2, 4, 8), (f, s)
            assert int.from_bytes(raw, "little", signed=int(v) < 0) == int(v), (f, s)


def test_a_gap_between_fields_is_found():
    value = Section("test", "none", Struct("a" / Int8ul, Padding(2), "b" / Int32ul)).parse(b"\x01\0\0\x02\0\0\0")
    found = field_spans(value)
    assert [(s.path, s.start, s.end, s.value) for s in found] == [("a", 0, 1, 1), ("b", 3, 7, 2)]
    assert gaps(found, "file", 7) == [Span("file", 1, 3, None)]
    assert gaps(found, "file", 9) == [Span("file", 1, 3, None), Span("file", 7, 9, None)]


def test_bytes_no_section_and_no_footer_field_hold(tmp_path):
    src = next((corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "filter_zstd").rglob("__fragment_metadata.tdb"))
    folder = tmp_path / "array"
    import shutil

    shutil.copytree(corpus.root(src.parents[3]), folder)
    path = next(folder.rglob("__fragment_metadata.tdb"))
    data = path.read_bytes()
    footer_at = len(data) - 8 - int(np.frombuffer(data[-8:], "<u8")[0])
    path.write_bytes(data[:footer_at] + b"JUNK!" + data[footer_at:])  # the footer's offsets still hold
    assert coverage(path) == [Span("file", footer_at, footer_at + 5, None)]
    assert re.search(rf"{footer_at:08x}  4a 55 4e 4b 21 +\(no field\)", hexdump(path))


@pytest.mark.parametrize("name", ["__fragment_metadata.tdb", "a0.tdb", "__schema"])
def test_the_hex_dump_shows_each_byte_once(name):
    root = corpus.root(corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "dense_2d_multiattr")
    f = next(p for p in root.rglob("*") if p.is_file() and (p.name == name or p.parent.name == name))
    text = hexdump(f, max_bytes=1 << 30).split("\n-- ")[0]  # the file's own space
    seen = b"".join(bytes.fromhex(line[10:57]) for line in text.splitlines() if re.match(r"[0-9a-f]{8}  ", line))
    assert seen == f.read_bytes()
    first = text.splitlines()[0]
    assert first.startswith("00000000  ") and ("version = 22" in first or "num_chunks" in first)


def test_commands(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "json-schema" / "coverage.v1.json").read_text())
    root = corpus.root(corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "filter_zstd")

    def run(*argv):
        r = subprocess.run([sys.executable, "-m", "tdbformat", "inspect", *argv], capture_output=True, text=True,
                           cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stdout
    doc = json.loads(run(str(root), "--coverage", "--json"))
    jsonschema.validate(doc, schema)
    assert doc["files"] and all(f["gaps"] == [] for f in doc["files"])
    assert "every byte belongs to a field" in run(str(root), "--coverage")
    assert "generic_tile.tile.chunks[0].data" in run(str(root), "--hex")
