"""The README's commands run, so its examples cannot go stale."""

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


def test_the_readme_has_its_three_commands():
    assert [c.split()[1] for c in _commands()[:3]] == ["schema", "fragments", "cat"]


@pytest.mark.parametrize("command", _commands())
def test_readme_command_runs(command):
    args = command.split()[1:]
    r = subprocess.run([sys.executable, "-m", "tdbformat.cli", *args], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert r.returncode == 0 and r.stdout, (command, r.stderr[-2000:])


def _section_python(title: str) -> list[str]:
    """The python blocks of the README section ``## title``."""
    body = README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, re.S)


def test_reading_like_tiledb_py_examples_run():
    blocks = _section_python("Reading like TileDB-Py")
    assert blocks
    for code in blocks:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
        assert r.returncode == 0, (code, r.stderr[-2000:])
