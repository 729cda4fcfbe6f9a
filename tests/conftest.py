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
