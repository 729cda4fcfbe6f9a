"""Notebook views: the ``_repr_html_`` of an array, a group, a fragment, a schema, a parsed file and a list of
validate findings. Compact tables in the spirit of TileDB-Py's schema view; no script, and no link that leaves
the notebook. Callers pass the objects in; nothing here reads a file."""

from __future__ import annotations

import html

from ..enums import ArrayType
from ..layout.files import ParsedFile
from .render import to_tree
from . import Schema, jsonable, schema_json, text

__all__ = ["esc", "table", "schema_html", "array_html", "fragment_html", "group_html", "parsed_file_html",
           "findings_html"]

#: rows a notebook table shows before it says how many it left out
ROWS = 50
_STYLE = ("<style>.tdbf table{border-collapse:collapse;margin:2px 0 8px}.tdbf th,.tdbf td{border:1px solid #ccc;"
          "padding:1px 6px;text-align:left;font:12px monospace;vertical-align:top}.tdbf th{background:#f2f2f2}"
          ".tdbf .cap{font-weight:bold;margin-top:4px}</style>")


def esc(value) -> str:
    """Any value as HTML text: bytes that are not UTF-8 as ``\\xNN``, markup escaped."""
    return html.escape(text(value) if isinstance(value, (str, bytes)) else str(value))


def table(columns: list, rows: list, caption: str = "", limit: int = ROWS) -> str:
    """An HTML table of ``rows`` (each a list of values, shown as text), at most ``limit`` of them."""
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{'' if v is None else esc(v)}</td>" for v in r) + "</tr>"
                   for r in rows[:limit])
    more = (f"<tr><td colspan={len(columns)}>... {len(rows) - limit} more rows</td></tr>"
            if len(rows) > limit else "")
    cap = f"<div class=cap>{esc(caption)}</div>" if caption else ""
    return f"{cap}<table><tr>{head}</tr>{body}{more}</table>"


def _filters(filters: list) -> str:
    return ", ".join(f["type"] + (f"({', '.join(f'{k}={v}' for k, v in f['options'].items())})" if f["options"]
                                  else "") for f in filters)


def schema_html(d: dict) -> str:
    """A schema as :func:`~tdbformat.show.schema_json` describes it: its settings, dimensions, attributes,
    enumerations and labels as tables."""
    settings = [("array type", d["array_type"]), ("format version", d["format_version"]),
                ("cell order", d["cell_order"]), ("tile order", d["tile_order"]), ("capacity", d["capacity"]),
                ("allows duplicates", d["allows_duplicates"]), ("current domain", d["current_domain"]),
                ("coordinate filters", _filters(d["coords_filters"])),
                ("offsets filters", _filters(d["offsets_filters"])),
                ("validity filters", _filters(d["validity_filters"]))]
    out = [table(["setting", "value"], [s for s in settings if s[1] not in (None, "")], "schema"),
           table(["dimension", "type", "domain", "tile", "filters"],
                 [(x["name"], x["type"] + (" (var)" if x["var"] else ""), x["domain"], x["tile"],
                   _filters(x["filters"])) for x in d["dimensions"]], "dimensions"),
           table(["attribute", "type", "cell_val_num", "nullable", "fill", "enumeration", "filters"],
                 [(x["name"], x["type"], x["cell_val_num"], x["nullable"], x["fill"], x["enumeration"],
                   _filters(x["filters"])) for x in d["attributes"]], "attributes")]
    if d["enumerations"]:
        out.append(table(["enumeration", "values"], [(e["name"], e["values"]) for e in d["enumerations"]],
                         "enumerations"))
    if d["dimension_labels"]:
        out.append(table(["label", "dimension", "type", "order", "uri"],
                         [(x["name"], x["dimension"], x["type"], x["order"], x["uri"]) for x in d["dimension_labels"]],
                         "dimension labels"))
    return "".join(out)


def _box(inner: str) -> str:
    return f"{_STYLE}<div class=tdbf>{inner}</div>"


def fragment_row(f) -> list:
    """One fragment as a row of :data:`FRAGMENT_COLUMNS`."""
    return [f.name, f.version, list(f.timestamp_range), "dense" if f.dense else "sparse", f.cell_num,
            jsonable(f.non_empty_domain)]


FRAGMENT_COLUMNS = ["fragment", "version", "timestamp_range", "type", "cells", "non_empty_domain"]


def array_html(arr) -> str:
    """An opened array (``array.Array``): what it is, its schema, and the fragments a read sees."""
    kind = "dense" if arr.schema.array_type == ArrayType.DENSE else "sparse"
    frags = arr.fragments
    head = f"<div class=cap>{esc(arr.path)}: a {kind} array, {len(frags)} fragments</div>"
    return _box(head + schema_html(schema_json(arr.schema, arr.enumerations))
                + table(FRAGMENT_COLUMNS, [fragment_row(f) for f in frags], "fragments"))


def fragment_html(frag) -> str:
    """A fragment (``array.Fragment``) as a one-row table."""
    return _box(table(FRAGMENT_COLUMNS, [fragment_row(frag)]))


def group_html(group) -> str:
    """A group (``groups.Group``): its members as written."""
    rows = [(text(m.name) if m.name else "", m.uri, m.object_type.name.lower()) for m in group.members]
    return _box(f"<div class=cap>{esc(group.path)}: a group, {len(rows)} members</div>"
                + table(["name", "uri", "type"], rows))


def parsed_file_html(pf, lines: int = 200) -> str:
    """A parsed file (``files.ParsedFile``): its kind and the first ``lines`` of its tree, with byte offsets."""
    tree = to_tree([pf]).splitlines()[1:]
    more = f"\n... {len(tree) - lines} more lines" if len(tree) > lines else ""
    shown = "\n".join(tree[:lines]) + more
    return _box(f"<div class=cap>{esc(pf.path)} ({esc(pf.kind)})</div><pre>{esc(shown)}</pre>")


def findings_html(findings: list) -> str:
    """Validate findings as a table (or a line saying there are none)."""
    if not findings:
        return _box("<div class=cap>validate: no findings</div>")
    errors = sum(f.severity == "error" for f in findings)
    rows = [(f.severity, f.rule, f.file, f.structure, f.field, f.offset, f.message,
             None if f.expected is None else jsonable(f.expected), None if f.found is None else jsonable(f.found))
            for f in findings]
    return _box(table(["severity", "rule", "file", "structure", "field", "offset", "message", "expected", "found"],
                      rows, f"validate: {errors} errors, {len(findings) - errors} warnings"))


# The records these views show are declared elsewhere (ParsedFile a floor below, in layout/; Schema in show/'s
# __init__, which this module imports): each view attaches itself from here, where the views live
ParsedFile._repr_html_ = parsed_file_html
Schema._repr_html_ = lambda self: schema_html(schema_json(self, {}))
