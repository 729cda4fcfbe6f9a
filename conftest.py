"""Every ``python`` block of README.md and docs/ runs as a test, in order, one namespace per page, from the
repository's root (Sybil). Blocks that are not Python carry their own fence (``text``, ``console``, ``sh``)."""

import os
from pathlib import Path

from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser

ROOT = Path(__file__).resolve().parent


def _at_root(namespace):
    """Each page starts from the repository's root, where its paths point, with a scratch folder for writes."""
    import tempfile
    namespace["_cwd"] = os.getcwd()
    os.chdir(ROOT)
    namespace["scratch"] = tempfile.mkdtemp(prefix="tdbformat-docs-")


def _back(namespace):
    import shutil
    os.chdir(namespace["_cwd"])
    shutil.rmtree(namespace["scratch"], ignore_errors=True)


pytest_collect_file = Sybil(parsers=[PythonCodeBlockParser()], patterns=["README.md", "docs/*.md"],
                            setup=_at_root, teardown=_back).pytest()
