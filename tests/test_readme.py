"""The README's commands run and the docs site builds, so neither can go stale. (Every ``python`` block of
README.md and docs/ runs through Sybil: the root conftest.py.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _commands() -> list[str]:
    """Every ``tdbformat ...`` line of the README's sh blocks (the install line's command too)."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        for line in block.splitlines():
            line = line.split("#")[0].strip()
            if "tdbformat " in line:
                out.append(line[line.index("tdbformat "):])
    return out


def test_the_readme_is_a_door():
    """One screen: what, who, the two set-up commands, three commands, one example, links to docs/."""
    assert len(README.splitlines()) <= 150
    three = README.split("## Three commands\n", 1)[1].split("\n## ", 1)[0]
    assert [c.split()[1] for c in _commands() if c in three] == ["schema", "fragments", "validate"]
    assert "python3 -m pytest" in README and 'pip install -e ".[test]"' in README


@pytest.mark.parametrize("command", _commands())
def test_readme_command_runs(command):
    args = command.split()[1:]
    r = subprocess.run([sys.executable, "-m", "tdbformat.cli", *args], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert r.returncode == 0 and r.stdout, (command, r.stderr[-2000:])


def test_the_docs_site_builds_strictly(tmp_path):
    """mkdocs (material, mkdocstrings for the API reference) in strict mode: a broken link, a missing page or a
    docstring mkdocstrings cannot render fails the build."""
    pytest.importorskip("mkdocs")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                       capture_output=True, text=True, cwd=ROOT, timeout=300,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "index.html").read_text().count('id="tdbformat.open_array"') == 1
