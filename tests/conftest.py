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


#: Of the corpus, every file of these format versions is in :func:`corpus_suite`; of the others, every 4th.
KAITAI_ALL_FILES_OF = {1, 3, 11, 16, 22, 23}


@pytest.fixture(scope="session")
def corpus_suite(tmp_path_factory):
    """The corpus (sampled: :data:`KAITAI_ALL_FILES_OF`), tests/data/soma and tests/data/pandas as conformance
    cases, built on the fly: ``<writer>/<case>/expected.json`` (tdbformat.spec.conformance.case_document: the suite's
    JSON) beside ``array``, a link to the array. What the Kaitai runners read beyond the committed suite."""
    import os

    import corpus
    from tdbformat.spec.conformance import expected_json
    from tdbformat.storage import storage_for

    data = Path(__file__).parent / "data"
    cases = [(c.parent.name, c.name, c / corpus.truth(c).get("path", "array"),
              int(c.parent.name[1:].split("_")[0]) in KAITAI_ALL_FILES_OF)
             for c in corpus.cases() if corpus.key(c) is None]  # encrypted: Kaitai cannot decrypt
    cases += [("v22_tiledbsoma", "experiment", data / "soma" / "experiment", True)]
    cases += [("v22_pandas", p.name, p / "array", True) for p in sorted((data / "pandas").iterdir()) if p.is_dir()]
    out = tmp_path_factory.mktemp("corpus_suite")
    for writer, name, array, every_file in cases:
        storage, root = storage_for(array)
        files = storage.walk(root) if every_file else storage.walk(root)[::4]
        target = out / writer / name
        target.mkdir(parents=True)
        os.symlink(Path(array).resolve(), target / "array")
        storage.commit(target / "expected.json", expected_json(storage, root, files))
    return out
