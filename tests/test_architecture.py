"""The house rules that the code's shape must keep (docs/ARCHITECTURE.md): imports point down the layers,
only storage.py touches files, and no class or function grows past 120 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tdbformat"

#: bottom up; a module may import from its own rank (inside its own package) or lower ranks only
LAYERS = [
    ["errors", "render", "stdsort"],
    ["versions"],
    ["fields"],
    ["enums", "numpy_array"],
    ["filters"],
    ["structs", "strategies"],
    ["storage"],
    ["directory"],
    ["show"],
    ["files", "array", "groups"],
    ["coverage"],
    ["validate"],
    ["stats", "salvage"],
    ["spec"],
    ["ksy", "spec_render", "cat", "conformance"],
    ["cli"],
    [""],  # the package's __init__: the public API
    ["__main__"],  # python -m tdbformat
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}

#: the issue's explicit rules: (importing room, rooms it must never import)
FORBIDDEN = {
    "filters": {"structs", "storage", "directory", "array", "files"},
    "structs": {"storage", "directory", "files", "array"},
}

#: calls that read or write files (or list folders): only storage.py makes them
_IO = re.compile(r"(?<![\w.])open\(|\.read_bytes\(|\.write_bytes\(|\.read_text\(|\.write_text\(|os\.listdir|"
                 r"os\.stat\(|\.iterdir\(|\.r?glob\(|\.mkdir\(|os\.replace\(|(?<!storage)\.is_(file|dir)\(")


def _modules():
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = list(p.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield p, parts


def _imports(p: Path, parts: list[str]) -> set[str]:
    """The tdbformat modules ``p`` imports, as paths relative to the package ("structs.tile")."""
    pkg = parts if p.name == "__init__.py" else parts[:-1]
    out = set()
    for n in ast.walk(ast.parse(p.read_text())):
        if isinstance(n, ast.ImportFrom) and n.level:
            base = pkg[:len(pkg) - (n.level - 1)]
            target = base + (n.module.split(".") if n.module else [])
            out |= {".".join(target + ([a.name] if not n.module else [])) for a in n.names}
        elif isinstance(n, ast.ImportFrom) and (n.module or "").startswith("tdbformat"):
            out.add(n.module.removeprefix("tdbformat").lstrip("."))
        elif isinstance(n, ast.Import):
            out |= {a.name.removeprefix("tdbformat").lstrip(".") for a in n.names if a.name.startswith("tdbformat")}
    return out


def _room(dotted: str) -> str:
    return dotted.split(".")[0]


MODULES = list(_modules())


def test_every_room_has_a_layer():
    assert {_room(".".join(parts)) for _, parts in MODULES} <= set(RANK)


@pytest.mark.parametrize("path,parts", MODULES, ids=lambda x: ".".join(x) if isinstance(x, list) else None)
def test_imports_point_down(path, parts):
    room = _room(".".join(parts))
    for target in _imports(path, parts):
        other = _room(target)
        if other == room:
            continue
        assert other not in FORBIDDEN.get(room, ()), f"{'.'.join(parts)} imports {target}: {room}/ never imports {other}"
        assert RANK[other] < RANK[room], f"{'.'.join(parts)} imports {target}, which is not below it"


@pytest.mark.parametrize("path,parts", MODULES, ids=lambda x: ".".join(x) if isinstance(x, list) else None)
def test_only_storage_touches_files(path, parts):
    if parts == ["storage"]:
        return
    hits = [f"{path.name}:{i}: {line.strip()}" for i, line in enumerate(path.read_text().splitlines(), 1)
            if _IO.search(line.split("#")[0])]
    assert not hits, "file I/O outside storage.py:\n" + "\n".join(hits)


@pytest.mark.parametrize("path,parts", MODULES, ids=lambda x: ".".join(x) if isinstance(x, list) else None)
def test_no_unit_over_120_lines(path, parts):
    long = [f"{n.name}: {n.end_lineno - n.lineno + 1} lines" for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and n.end_lineno - n.lineno + 1 > 120]
    assert not long, f"{path.name}: " + ", ".join(long)


def test_the_rules_catch_a_violation(tmp_path):
    """The checks are not vacuous: a structs module that lists a folder and imports storage fails them."""
    bad = tmp_path / "bad.py"
    bad.write_text("from ..storage import LocalStorage\nnames = os.listdir('.')\n")
    assert "storage" in {_room(t) for t in _imports(bad, ["structs", "bad"])}
    assert _IO.search(bad.read_text().splitlines()[1])
    assert not _IO.search("storage.is_dir(p)") and _IO.search("p.is_dir()")
