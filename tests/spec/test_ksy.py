"""The Kaitai Struct export: committed .ksy files are current (v01-v23 and the pre-v1 dialects), and every one
compiles with Kaitai's own compiler (the npm package kaitai-struct-compiler, driven by scripts/ksc.js; all
are compiled once per session, tests/conftest.py). What the compiled parsers read is compared with the
conformance suite's JSON in tests/spec/ (Python and JavaScript).
"""

from __future__ import annotations

from pathlib import Path

from tdbformat.spec.ksy import write_ksy
from tdbformat.spec.ksy_prev1 import DIALECT_VERSIONS, write_prev1_ksy
from tdbformat.versions import KNOWN_VERSIONS

REPO = Path(__file__).resolve().parents[2]
KSY = REPO / "spec_versions" / "ksy"


def test_committed_ksy_files_are_up_to_date(tmp_path):
    written = write_ksy(tmp_path) + write_prev1_ksy(tmp_path)
    stale = [str(p.relative_to(tmp_path)) for p in written
             if not (KSY / p.relative_to(tmp_path)).exists()
             or (KSY / p.relative_to(tmp_path)).read_text() != p.read_text()]
    extra = {p.relative_to(KSY) for p in KSY.rglob("*.ksy")} - {p.relative_to(tmp_path) for p in written}
    assert not stale and not extra, (f"spec_versions/ksy is stale ({', '.join(stale + sorted(map(str, extra)))}): "
                                     "run tdbformat spec --write spec_versions")


def test_every_ksy_compiles_for_every_version(compiled):
    ksy, errors, _ = compiled
    folders = {f"v{v:02d}" for v in KNOWN_VERSIONS} | {f"v{label}" for label in DIALECT_VERSIONS}
    assert {p.parent.name for p in ksy} == folders
    failed = {f: e for f, e in errors.items() if e is not None}
    assert len(errors) == len(ksy) and not failed, failed
