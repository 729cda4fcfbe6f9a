import sys
from pathlib import Path

import pytest

# tests import the corpus helpers as a plain module
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def one_thread(monkeypatch):
    """Reads decode in the calling thread alone, for tests that start and stop tracemalloc: stopping it while
    another thread's numpy frees or allocates memory is a race in CPython (gh-128679) that corrupts the heap,
    and the process segfaults later, anywhere (three test runs on 2026-11-24)."""
    import tdbformat.array as array_mod
    from tdbformat.filters import pipeline
    monkeypatch.setattr(array_mod, "_pool", lambda threads=None: array_mod._INLINE)
    monkeypatch.setattr(pipeline, "_threads", 1)


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """Every .ksy of spec_versions/ksy compiled to Python once per session (tests/test_ksy.py, tests/spec/):
    (the .ksy files, {file: None or the compiler's error}, {version: folder of the compiled parsers})."""
    import json
    import shutil
    import subprocess

    from tdbformat.versions import KNOWN_VERSIONS

    repo = Path(__file__).resolve().parent.parent
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the Kaitai compiler (npm kaitai-struct-compiler) runs on node")
    if not (repo / "scripts" / "node" / "node_modules" / "kaitai-struct-compiler").is_dir():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed: it installs the Kaitai compiler into scripts/node")
        subprocess.run(["npm", "ci", "--prefix", str(repo / "scripts" / "node")], check=True, capture_output=True)
    pytest.importorskip("kaitaistruct", reason="the compiled parsers need the kaitaistruct runtime (pip)")
    out = tmp_path_factory.mktemp("ksc")
    ksy = sorted((repo / "spec_versions" / "ksy").glob("v*/*.ksy"))
    run = subprocess.run(["node", str(repo / "scripts" / "ksc.js"), "python", str(out), *map(str, ksy)],
                         check=True, capture_output=True, text=True)
    return ksy, json.loads(run.stdout), {v: out / f"v{v:02d}" for v in KNOWN_VERSIONS}
