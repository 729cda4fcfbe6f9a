"""The house rules that the code's shape must keep (docs/ARCHITECTURE.md): imports point down the layers and
never go round in a circle, only storage/ touches files, no class or function grows past 120 lines, and the
layer table of docs/ARCHITECTURE.md is the one :data:`LAYERS` generates (``python3 tests/test_architecture.py``
prints it)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tdbformat"
ARCHITECTURE = PACKAGE.parent / "docs" / "ARCHITECTURE.md"

#: bottom up: (layer, its rooms, its job); a module may import from its own room or the rooms of lower layers
#: only. docs/ARCHITECTURE.md's table is generated from this list (``layer_table``), and a test checks it.
LAYERS = [
    ("foundation", ["errors"], "`FormatError` and `located()`"),
    ("foundation", ["versions"], "version gates (`since`/`until`) and named behaviour gates (`FEATURES`)"),
    ("foundation", ["fields"], "the strict construct blocks: `Struct`, `Section`, `Bounded`, `StrictEnum`..."),
    ("foundation", ["enums", "numpy_array"], "the format's enumerations; bulk numbers through numpy"),
    ("codecs", ["filters"], "every filter, both directions, and the pipeline that runs them"),
    ("declarations", ["structs"], "one module per spec page, both directions, no file I/O"),
    ("bytes", ["storage"], "the one door to bytes: local paths, fsspec URLs, lazy file views; atomic commits"),
    ("layout", ["layout"], "which file is what in each era's folders, which are live; `parse_file`; pre-v1 layouts"),
    ("faces", ["show", "schema"], "what people see (reprs, JSON shapes); the schema builder, to and from JSON"),
    ("jobs", ["array"], "reading: fragments, tiles, cells, dense, sparse, order, query conditions, frames, dask"),
    ("jobs", ["write"], "writing: create, fragments, metadata, deletes, convert, groups, cells from CSV/Parquet"),
    ("checks", ["check"], "validate, salvage, coverage, stats"),
    ("spec", ["spec"], "the format as data: fields, diff, pages, .ksy, conformance"),
    ("top", ["cli.cat"], "cells as text: TSV, CSV and JSON, streamed in blocks (`tdbformat cat`, the HTML page)"),
    ("top", ["show.html"], "the `tdbformat html` page: it opens, validates, decodes tiles and walks byte coverage"),
    ("top", ["cli", "testing"], "the command line (arguments and output only); hypothesis strategies"),
    ("top", ["", "__main__"], "the public API (one `__all__`); `python -m tdbformat`"),
]
RANK = {name: i for i, (_, names, _) in enumerate(LAYERS) for name in names}

#: the issue's explicit rules: (importing room, rooms it must never import)
FORBIDDEN = {
    "filters": {"structs", "storage", "layout", "array"},
    "structs": {"storage", "layout", "array"},
}

#: calls that read or write files (or list folders): only storage/ makes them
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
    two = ".".join(dotted.split(".")[:2])
    return two if two in RANK else dotted.split(".")[0]


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
    if parts[:1] == ["storage"]:
        return
    hits = [f"{path.name}:{i}: {line.strip()}" for i, line in enumerate(path.read_text().splitlines(), 1)
            if _IO.search(line.split("#")[0])]
    assert not hits, "file I/O outside storage/:\n" + "\n".join(hits)


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


def _module_graph() -> dict:
    """``{module: modules it imports}`` over the package's modules ("array.dense"; "" the package)."""
    names = {".".join(parts) for _, parts in MODULES}

    def module_of(target):  # "array.Array" names a class in the module "array"
        while target and target not in names:
            target = target.rpartition(".")[0]
        return target
    return {".".join(parts): {module_of(t) for t in _imports(p, parts)} - {".".join(parts)} for p, parts in MODULES}


def _circles(graph: dict) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, without recursion)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    out.append(sorted(group))
    return out


def test_no_import_circles():
    """No module imports (at import time or inside a function) one that imports it back, directly or round
    a circle: a package's modules take what they share from a module of their own (array/options.py), never
    from the package's __init__."""
    assert _circles(_module_graph()) == []
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _shown(room: str) -> str:
    """A room as a path: ``__init__.py``, a module (``cli/cat.py`` for the room ``cli.cat``) or a package."""
    path = room.replace(".", "/")
    if not room:
        return "`__init__.py`"
    return f"`{path}/`" if not room.startswith("_") and (PACKAGE / path).is_dir() else f"`{path}.py`"


def layer_table() -> str:
    """docs/ARCHITECTURE.md's table of layers, from :data:`LAYERS` (top down, as the docs read)."""
    rows = ["| layer | rooms | job |", "|---|---|---|"]
    for layer, rooms, job in reversed(LAYERS):
        shown = ", ".join(_shown(r) for r in rooms)
        rows.append(f"| {layer} | {shown} | {job} |")
    return "\n".join(rows)


def test_architecture_doc_table_is_generated_from_the_layers():
    text = ARCHITECTURE.read_text()
    begin, end = "<!-- layers: begin -->\n", "\n<!-- layers: end -->"
    assert begin in text and end in text, "docs/ARCHITECTURE.md lost its generated table's markers"
    table = text[text.index(begin) + len(begin):text.index(end)]
    assert table == layer_table(), "docs/ARCHITECTURE.md: paste the output of python3 tests/test_architecture.py"


if __name__ == "__main__":
    sys.stdout.write(layer_table() + "\n")
