"""Rendering for tdbformat.spec: the format at one version as spec tables, version diffs side by side
(text, Markdown, HTML, JSON), the generated ``spec_versions/`` folder, and structural diffs of two files.
"""

from __future__ import annotations

import enum
import html
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..errors import FormatError
from ..fields import Section
from ..structs.fragment import FragmentMetadata, fragment_sections
from ..show.render import _scalar
from ..show import JSON_VERSION
from . import (
    BEHAVIOUR, KNOWN_VERSIONS, aligned, diff, feature_changes, features, fields, footer_lookup,
    metadata_file_layout, structure, structures,
)
from ..storage import LocalStorage

__all__ = ["spec_markdown", "spec_json", "side_by_side", "render_diff", "changes_markdown",
           "write_spec_versions", "diff_values", "render_file_diff", "dialect_markdown", "dialect_diff"]

REGENERATE = "tdbformat spec --write spec_versions"
_GENERATED = f"Generated from the declarations in `tdbformat/` by `{REGENERATE}`: do not edit by hand."
_DISCREPANCIES_HEADER = """# Discrepancies

Where TileDB's published format spec and what TileDB writes disagree. Each section is kept by hand by
whoever found the discrepancy (the spec generator never rewrites this file); REFERENCE.md §17 is the
source list.
"""


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header, rows) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


# ---------------------------------------------------------------------------------------------------------
# One version

def spec_markdown(version: int) -> str:
    """The whole format at ``version``: one table per structure (field, type, size, condition, description)."""
    out = [f"# TileDB on-disk format, version {version}", "", _GENERATED, "",
           "Sizes are in bytes; a name in the size column is the field that holds the length or count. "
           "`[]` marks the element of a repeated field. Conditions name the version gate (`v`) or the "
           "field a layout depends on.", ""]
    out += _metadata_file_markdown(version)
    absent = []
    for title, s in structures().items():
        rows = fields(s, version)
        if getattr(s.construct, "dialect", None):  # a pre-v1 dialect's structure: on its own page (0.x.md, 1.x.md)
            continue
        if isinstance(s.construct, Section) and not s.construct.exists(version):
            absent.append(title)
            continue
        out += [f"## {title}", "", f"Spec page: `{s.page}`", ""]
        if rows:
            out += _table(["Field", "Type", "Size", "Condition", "Description"],
                          [(f"`{f.path}`", f.type, f.size, f.condition, f.doc) for f in rows])
        else:
            out.append("No bytes: the file is empty.")
        out.append("")
    if absent:
        out += ["## Not in this version", "", *(f"- {title}" for title in absent), ""]
    out += ["## Behaviour in force", "", "Rules that no field declares (`tdbformat.versions.FEATURES`).", ""]
    out += _table(["Behaviour", "Versions", "What"], [(f"`{f.name}`", f.span(), f.doc) for f in features(version)])
    return "\n".join(out) + "\n"


def _metadata_file_markdown(version: int) -> list[str]:
    """The fragment metadata file's layout and footer lookup (v3+), ahead of the structures' tables."""
    parts = metadata_file_layout(version)
    if not parts:
        return []
    out = ["## Fragment metadata file layout", "",
           f"`__fragment_metadata.tdb` at v{version}, from its first byte to its last (TileDB writes the sections "
           "in this order; a reader finds each by its offset in the footer).", ""]
    out += _table(["#", "Part", "Holds", "How many", "Where"],
                  [(i, f"`{p.name}`", p.what, p.count, p.where) for i, p in enumerate(parts, 1)])
    rule, summed = footer_lookup(version)
    out += ["", "### Footer length and footer lookup", "", rule, ""]
    if summed:
        out += _table(["Footer field", "Bytes", "Condition"], [(f"`{f.path}`", f.size, f.condition) for f in summed])
        out.append("")
    return out


def _schema_id(command: str) -> str:
    """The ``json_schema`` of a --json document: its shape is docs/json-schema/<command>.v<N>.json."""
    return f"{command}.v{JSON_VERSION}"


def spec_json(version: int) -> str:
    return json.dumps({"json_schema": _schema_id("spec"), "version": version, "structures": {
        title: {"page": s.page, "fields": [asdict(f) for f in fields(s, version)]}
        for title, s in structures().items()}}, indent=1)


# ---------------------------------------------------------------------------------------------------------
# Two versions

_MARK = {"same": " ", "added": "+", "removed": "-", "changed": "~"}


def side_by_side(a: int, b: int, struct: str | None = None):
    """[(title, [(mark, left, right, since)])] for each structure whose layout differs between a and b."""
    changed = {}
    for c in diff(a, b, struct):
        changed.setdefault(c.structure, {})[(c.old or c.new).key] = c
    out = []
    for title in changed:
        if title == BEHAVIOUR:  # gates, not fields of a structure: one row each
            out.append((title, [(c.kind, c.old, c.new, c.version) for c in changed[title].values()]))
            continue
        rows = []
        for left, right in aligned(structure(title), a, b):
            c = changed[title].get((left or right).key)
            rows.append((c.kind if c else "same", left, right, c.version if c else None))
        out.append((title, rows))
    return out


def _col(f) -> tuple[str, str, str, str]:
    return (f.path, f.type, f.size, f.condition) if f else ("", "", "", "")


def _diff_text(a, b, blocks) -> str:
    out = [f"Format v{a} -> v{b}: " + (f"{len(blocks)} structures differ" if blocks else "no layout changes")]
    for title, rows in blocks:
        cells = [(_MARK[k], *_col(l)[:3], *_col(r)[:3], f"v{v}" if v else "") for k, l, r, v in rows]
        widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
        out += ["", f"== {title}", ""]
        out += ["  ".join(c[i].ljust(widths[i]) for i in range(len(c))).rstrip() for c in cells]
    return "\n".join(out) + "\n"


def _diff_markdown(a, b, blocks) -> str:
    out = [f"# Format v{a} → v{b}", ""]
    if not blocks:
        out.append("No layout changes.")
    for title, rows in blocks:
        out += [f"## {title}", ""]
        out += _table(["", f"v{a} field", "type", "size", f"v{b} field", "type", "size", "since"],
                      [(_MARK[k].strip(), *(f"`{x}`" if i == 0 and x else x for i, x in enumerate(_col(l)[:3])),
                        *(f"`{x}`" if i == 0 and x else x for i, x in enumerate(_col(r)[:3])), f"v{v}" if v else "")
                       for k, l, r, v in rows])
        out.append("")
    return "\n".join(out)


_CSS = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
th, td { border: 1px solid #ddd; padding: 2px 6px; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f0f0f0; text-align: left; }
td.path { font-family: ui-monospace, monospace; }
td.gap { border: none; text-align: center; font-weight: bold; }
tr.added td.right { background: #e6ffec; }
tr.removed td.left { background: #ffebe9; }
tr.changed td.left, tr.changed td.right { background: #fff8c5; }
tr.added td.left, tr.removed td.right { background: #f6f8fa; }
.legend span { padding: 1px 6px; margin-right: 8px; }
"""


def _diff_html(a, b, blocks) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>TileDB format v{a} vs v{b}</title><style>{_CSS}</style></head><body>",
           f"<h1>TileDB on-disk format: v{a} (left) vs v{b} (right)</h1>",
           '<p class="legend"><span style="background:#e6ffec">+ added</span>'
           '<span style="background:#ffebe9">- removed</span><span style="background:#fff8c5">~ changed</span>'
           "Only structures whose layout changed are shown, each in full.</p>"]
    if not blocks:
        out.append("<p>No layout changes.</p>")
    for title, rows in blocks:
        widths = (20, 11, 8, 8, 2, 20, 11, 8, 8, 4)  # percent: left layout, mark, right layout, since
        out += [f"<h2>{e(title)}</h2>",
                "<table><colgroup>" + "".join(f"<col style='width:{w}%'>" for w in widths) + "</colgroup>",
                f"<tr><th>v{a} field</th><th>type</th><th>size</th><th>condition</th><th></th>"
                f"<th>v{b} field</th><th>type</th><th>size</th><th>condition</th><th>since</th></tr>"]
        for kind, left, right, since in rows:
            cells = []
            for side, f in (("left", left), ("right", right)):
                cols = _col(f)
                cells.append(f'<td class="{side} path">{e(cols[0])}</td>'
                             + "".join(f'<td class="{side}">{e(c)}</td>' for c in cols[1:]))
            mark = _MARK[kind].strip()
            out.append(f'<tr class="{kind}">{cells[0]}<td class="gap">{mark}</td>{cells[1]}'
                       f'<td class="gap">{f"v{since}" if since else ""}</td></tr>')
        out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)


def _diff_json(a, b, blocks) -> str:
    return json.dumps({"json_schema": _schema_id("diff-versions"), "from": a, "to": b, "structures": {
        title: [{"kind": k, "old": asdict(l) if l else None, "new": asdict(r) if r else None, "since": v}
                for k, l, r, v in rows] for title, rows in blocks}}, indent=1)


_DIFF_FORMATS = {"text": _diff_text, "markdown": _diff_markdown, "html": _diff_html, "json": _diff_json}


def render_diff(a: int, b: int, struct: str | None = None, fmt: str = "text") -> str:
    """The layouts of every structure that changed from ``a`` to ``b``, side by side, in ``fmt``."""
    return _DIFF_FORMATS[fmt](a, b, side_by_side(a, b, struct))


def changes_markdown() -> str:
    """CHANGES.md: what changed in the bytes from each version to the next."""
    out = ["# Layout changes between adjacent format versions", "", _GENERATED, ""]
    for a, b in zip(KNOWN_VERSIONS, KNOWN_VERSIONS[1:]):
        out += [f"## v{a} → v{b}", ""]
        changes = [c for c in diff(a, b) if c.structure != BEHAVIOUR]
        switched = feature_changes(a, b)
        if not changes:
            out += ["No layout change in the declared structures.", ""]
        for title in dict.fromkeys(c.structure for c in changes):
            whole = _arrived_or_left(structure(title), a, b)
            out.append(f"- **{title}**" + (f": {whole}" if whole else ""))
            for c in changes if not whole else ():
                if c.structure == title:
                    f = c.new or c.old
                    what = f"{c.old.type} ({c.old.size}) → {c.new.type} ({c.new.size})" if c.kind == "changed" \
                        else f"{f.type} ({f.size})"
                    when = f" [{f.condition}]" if f.condition else ""
                    out.append(f"  - {_MARK[c.kind]} `{f.path}`: {what}{when}")
        if changes:
            out.append("")
        out += [f"- Behaviour {'from' if on == 'on' else 'no longer'}: `{f.name}`: {f.doc}" for on, f in switched]
        if switched:
            out.append("")
    return "\n".join(out)


def _arrived_or_left(s, a: int, b: int) -> str:
    """"new structure" or "no longer written" if ``s`` exists in only one of ``a`` and ``b``, else ""."""
    if not isinstance(s.construct, Section) or s.construct.exists(a) == s.construct.exists(b):
        return ""
    n = len(fields(s, b))
    return f"new structure ({n} field{'s' * (n != 1)}, see v{b:02d}.md)" if s.construct.exists(b) \
        else "no longer written"


def write_spec_versions(folder) -> list[Path]:
    """Write v01.md ... v23.md, CHANGES.md, 0.x.md and 1.x.md into ``folder``; create DISCREPANCIES.md only if missing."""
    storage, folder = LocalStorage(), Path(folder)
    pages = {f"v{v:02d}.md": spec_markdown(v) for v in KNOWN_VERSIONS}
    pages["CHANGES.md"] = changes_markdown()
    pages.update({f"{label}.md": dialect_markdown(label) for label in DIALECT_PAGES})
    if not storage.is_file(folder / "DISCREPANCIES.md"):  # others append their sections: never rewrite it
        pages["DISCREPANCIES.md"] = _DISCREPANCIES_HEADER
    for name, text in pages.items():
        storage.commit(folder / name, text.encode())
    return [folder / name for name in pages]


# ---------------------------------------------------------------------------------------------------------
# Two files

def _hidden(key) -> bool:
    return isinstance(key, str) and key.startswith("_")


def diff_values(a, b, path="", at_a=None, at_b=None, base_a=None, base_b=None):
    """Rows (path, where in A, value in A, where in B, value in B) for every leaf that differs.

    Offsets come from the parsed Containers (``_offsets``); inside a generic tile's payload they count
    from the payload, and are shown with the offset of the generic tile. The generic tile header is
    compared too (as ``generic_tile.*``), but not its filtered chunks, which follow from the payload.
    """
    out = []
    if isinstance(a, dict) and isinstance(b, dict):
        gt_a, gt_b = a.get("_generic_tile"), b.get("_generic_tile")
        if gt_a is not None and gt_b is not None:
            header_a = {k: v for k, v in gt_a.items() if k != "tile"}
            header_b = {k: v for k, v in gt_b.items() if k != "tile"}
            out += diff_values(header_a, header_b, _sub(path, "generic_tile"), None, None, base_a, base_b)
        inner_a, inner_b = _payload_base(gt_a, base_a), _payload_base(gt_b, base_b)
        offs_a, offs_b = a.get("_offsets") or {}, b.get("_offsets") or {}
        for key in dict.fromkeys([*a, *b]):
            if _hidden(key):
                continue
            p = _sub(path, key)
            wa = (inner_a, offs_a[key]) if key in offs_a else None
            wb = (inner_b, offs_b[key]) if key in offs_b else None
            if key not in b:
                out.append((p, wa, _brief(a[key]), None, "(absent)"))
            elif key not in a:
                out.append((p, None, "(absent)", wb, _brief(b[key])))
            else:
                out += diff_values(a[key], b[key], p, wa, wb, inner_a, inner_b)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            p = f"{path}[{i}]"
            if i >= len(b):
                out.append((p, None, _brief(a[i]), None, "(absent)"))
            elif i >= len(a):
                out.append((p, None, "(absent)", None, _brief(b[i])))
            else:
                out += diff_values(a[i], b[i], p, None, None, base_a, base_b)
    elif isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape:
        for i in np.flatnonzero(a.reshape(-1) != b.reshape(-1)).tolist():
            out.append((f"{path}[{i}]", _element(at_a, i, a.itemsize), repr(a.reshape(-1)[i].item()),
                        _element(at_b, i, b.itemsize), repr(b.reshape(-1)[i].item())))
    elif not _equal(a, b):
        out.append((path, at_a, _brief(a), at_b, _brief(b)))
    return out


def _payload_base(gt, base):
    """Where a generic tile starts, if the value is its payload (offsets inside count from the payload)."""
    if gt is None:
        return base
    return (gt.get("_offsets") or {}).get("version", 0)


def _element(at, i, itemsize):
    return None if at is None else (at[0], at[1] + i * itemsize)


def _where(at) -> str:
    if at is None:
        return ""
    base, offset = at
    if isinstance(base, tuple):  # a part at base[1] of the file, or one whose place is not tracked
        return "" if base[1] is None else str(base[1] + offset)
    return str(offset) if base is None else f"GT@{base} payload+{offset}"


def _brief(value) -> str:
    if isinstance(value, dict):
        return f"{{{sum(not _hidden(k) for k in value)} fields}}"
    if isinstance(value, list):
        return f"[{len(value)} items]"
    return _scalar(value)


def _sub(path, key):
    return f"{path}.{key}" if path else str(key)


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:  # NaN fill values are equal
        return True
    return type(a) is type(b) and a == b if isinstance(a, enum.Enum) else a == b


def _parts(value) -> list:
    """(name, value, base) to diff. Fragment metadata is its footer, whose offsets count from where the footer
    starts in the file, and its sections, shown without offsets (each counts from its own generic tile)."""
    if not isinstance(value, FragmentMetadata):
        return [("", value, None)]
    return [(name, part, ("file", getattr(value, "footer_offset", 0)) if name == "footer" else ("unplaced", None))
            for name, part in fragment_sections(value).items()]


def render_file_diff(a, b, fmt: str = "text") -> str:
    """Two ParsedFiles compared field by field."""
    if a.kind != b.kind:
        raise FormatError(f"the files are of different kinds: {a.kind} and {b.kind}")
    parts_a, parts_b = ({n: (v, base) for n, v, base in _parts(f.value)} for f in (a, b))
    rows = []
    for name in dict.fromkeys([*parts_a, *parts_b]):
        (va, base_a), (vb, base_b) = parts_a.get(name, (None, None)), parts_b.get(name, (None, None))
        rows += [(p, _where(wa), x, _where(wb), y)
                 for p, wa, x, wb, y in diff_values(va, vb, name, base_a=base_a, base_b=base_b)]
    if fmt == "json":
        keys = ("path", "offset_a", "value_a", "offset_b", "value_b")
        return json.dumps({"json_schema": _schema_id("diff"), "kind": a.kind, "a": str(a.path), "b": str(b.path),
                           "differences": [dict(zip(keys, r)) for r in rows]}, indent=1)
    out = [f"A: {a.path}", f"B: {b.path}", f"{a.kind}: {len(rows)} fields differ"]
    if rows:
        cells = [("field", "offset A", "value A", "offset B", "value B"), *rows]
        widths = [min(60, max(len(c[i]) for c in cells)) for i in range(5)]
        out += ["  ".join(c[i][:60].ljust(widths[i]) for i in range(5)).rstrip() for c in cells]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------------------
# The dialects from before format version 1 (prev1.md)

#: the library version each dialect's page is drawn at (gates of 1.0/1.1 vs 1.2/1.3 show as conditions)
DIALECT_PAGES = {"0.x": (0,), "1.x": (1, 3, 0)}
#: each 1.x structure and the v1 structure that replaced it, for ``tdbformat diff 1.x 1``
DIALECT_SUCCESSORS = {"Generic tile (1.x)": "Generic tile", "Array schema (1.x)": "Array schema",
                      "Fragment metadata (1.x)": "Fragment metadata v1-2", "Compressed tile (1.x)": "Tile",
                      "Data file (1.x)": "Data file"}


def dialect_markdown(label: str) -> str:
    """The page of a pre-v1 dialect ("0.x" or "1.x"): one table per structure that exists in it."""
    version = DIALECT_PAGES[label]
    out = [f"# TileDB on-disk format before version 1: the {label} dialect", "", _GENERATED, "",
           "Read-only: tdbformat reads these arrays (`open_array`, `tdbformat cat`) and parses every file "
           "(`tdbformat inspect`); the layouts, with the TileDB source files they come from, are in "
           "`prev1.md`. No version is stored in 0.x; 1.x stores the library version (`int32[3]`) and the "
           "condition `library 1.2+` marks what 1.0 and 1.1 lack.", ""]
    for title, s in structures().items():
        if not (getattr(s.construct, "dialect", None) and s.construct.exists(version)):
            continue
        out += [f"## {title}", "", f"Spec page: `{s.page}`", ""]
        out += _table(["Field", "Type", "Size", "Condition", "Description"],
                      [(f"`{f.path}`", f.type, f.size, f.condition, f.doc) for f in fields(s, version)])
        out.append("")
    return "\n".join(out) + "\n"


def dialect_diff(label: str, version: int) -> str:
    """What changed from the 1.x dialect to format ``version`` (1): each 1.x structure against the v1
    structure that replaced it, fields aligned by path (``-`` only in 1.x, ``+`` only in v1, ``~`` changed)."""
    import difflib
    if label != "1.x" or version not in KNOWN_VERSIONS:
        raise ValueError(f"diff: compare the 1.x dialect with a format version 1 to {KNOWN_VERSIONS[-1]}, "
                         f"not {label} with {version}")
    out = [f"Dialect {label} (TileDB 1.0-1.3) -> format v{version}"]
    for old_title, new_title in DIALECT_SUCCESSORS.items():
        left, right = fields(structure(old_title), DIALECT_PAGES[label]), fields(structure(new_title), version)
        cells = []
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, [f.path for f in left], [f.path for f in right],
                                                           autojunk=False).get_opcodes():
            pairs = list(zip(left[i1:i2], right[j1:j2])) if op == "equal" else \
                [(f, None) for f in left[i1:i2]] + [(None, f) for f in right[j1:j2]]
            for a, b in pairs:
                mark = "-" if b is None else "+" if a is None else "~" if a.layout != b.layout else " "
                cells.append((mark, *_col(a)[:3], *_col(b)[:3]))
        widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
        out += ["", f"== {old_title} -> {new_title}", ""]
        out += ["  ".join(c[i].ljust(widths[i]) for i in range(len(c))).rstrip() for c in cells]
    return "\n".join(out) + "\n"
