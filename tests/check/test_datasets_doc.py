"""docs/datasets.md runs: each `tdbformat ...` line of its sh blocks exits as documented (0, or 1 for a gate
that fails), and its python block runs."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "datasets.md").read_text()
LINES = [line for block in re.findall(r"```sh\n(.*?)```", DOC, re.S) for line in block.splitlines() if line.strip()]


@pytest.mark.parametrize("line", LINES)
def test_sh_lines_run(line):
    argv = shlex.split(line.split("  #")[0])
    assert argv[0] == "tdbformat"
    shutil.rmtree("/tmp/tdbformat-docs-experiment", ignore_errors=True)
    r = subprocess.run([sys.executable, "-m", "tdbformat.cli", *argv[1:]], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert r.returncode == (1 if "exit 1" in line or "--max-format" in line else 0), r.stderr
    assert r.stdout
    shutil.rmtree("/tmp/tdbformat-docs-experiment", ignore_errors=True)


def test_python_block_runs(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    (code,) = re.findall(r"```python\n(.*?)```", DOC, re.S)
    exec(compile(code, "docs/datasets.md", "exec"), {})
    assert "ms/RNA/X/data array" in capsys.readouterr().out
