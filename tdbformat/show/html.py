"""``tdbformat html``: one self-contained HTML page that shows an array, a group or one file: the file tree
with sizes and states, the schema and its history, the fragment timeline, non-empty domains and MBRs as SVG,
validate's findings, the first cells, and each file's parse tree beside a hex view, linked both ways (its
script, ``page.js``, and style, ``page.css``, are inlined: the page opens from disk and asks no network).

The page holds at most :data:`PAGE_BYTES` of file bytes and :data:`FILE_BYTES` of any one byte space; what
it leaves out (files, bytes, MBRs, tiles, cells) it says so. It reads everything here, so it sits above the
read, validate and coverage layers; the notebook views (:mod:`.notebook`) sit below them.
"""

from __future__ import annotations

import base64
import io
import json
import math
import pkgutil

import numpy as np

from .. import layout as directory
from ..array import MemoryBudgetError, open_array
from ..cli.cat import group_tree, write_cells
from ..check.coverage import spans as file_spans
from ..enums import ArrayType
from ..errors import FormatError
from .render import _scalar
from ..storage import storage_for
from ..check.validate import validate
from ..check.validate.tiles import data_fields, field_offsets
from . import fragment_rows, jsonable, schema_json, text
from .notebook import esc, findings_html, schema_html, table

__all__ = ["page", "write_page", "PAGE_BYTES", "FILE_BYTES"]

#: file bytes (before base64) the page embeds at most, over all files
PAGE_BYTES = 1 << 20
#: bytes of one byte space (a file, or a tile's unfiltered payload) the page embeds at most
FILE_BYTES = 64 << 10
#: files larger than this are listed, never parsed for the page
PARSE_BYTES = 8 << 20
#: MBRs drawn per plot, tiles decoded into the page, cells shown, member arrays of a group shown, files listed,
#: fields of one file linked to its bytes
MBRS, TILES, CELLS, MEMBERS, FILES, FIELDS = 2000, 24, 20, 8, 2000, 5000
#: a sparse read returns every cell before the first ones are cut: the page reads no larger sparse array
SPARSE_CELLS = 1_000_000
#: fragment states of ``fragment_rows`` as the file tree classes their files
_STATES = {"committed": "live", "consolidated": "reclaimable", "uncommitted": "uncommitted", "ignored": "uncommitted",
           "vacuumed": "reclaimable"}
_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]


def _asset(name: str) -> str:
    return pkgutil.get_data(__name__.rsplit(".", 1)[0], name).decode("utf-8")


def _rel(storage, root, p) -> str:
    r, s = str(root).rstrip("/"), str(p)
    return s[len(r) + 1:] if s.startswith(r + "/") else storage.name(p)


# --- the file tree ---

def _file_states(storage, root, rows) -> dict:
    """``{path: state}`` for the files whose state is not "live": those of consolidated, vacuumed or
    uncommitted fragments (folders and commit files), and metadata files a read no longer loads."""
    states = {r["name"]: _STATES[r["state"]] for r in rows if r["state"] != "committed"}
    out = {}
    for p in storage.walk(root):
        rel = _rel(storage, root, p)
        parts = rel.split("/")
        name = parts[-1].rsplit(".", 1)[0] if parts[-1].endswith((".ok", ".wrt")) else None
        for part in parts[:-1] + [name]:
            if part in states:
                out[str(p)] = states[part]
    meta = storage.join(root, directory.META_DIR)
    if storage.is_dir(meta):
        loaded = {str(p) for p in directory.metadata_files(storage, meta)}
        out.update({str(p): "reclaimable" for p in storage.walk(meta) if str(p) not in loaded})
    return out


def _tree(storage, root, states: dict) -> list[dict]:
    """Every file under ``root`` (or the file ``root`` itself): its path from there, size, kind and state."""
    base = root if storage.is_dir(root) else storage.parent(root)
    out = []
    for p in storage.walk(root) if storage.is_dir(root) else [root]:
        try:
            kind = directory.file_kind(storage, p)
        except FormatError:
            kind = "unknown"
        out.append({"path": _rel(storage, base, p), "full": str(p), "size": storage.size(p), "kind": kind,
                    "state": states.get(str(p), "live")})
    return out


def _tree_html(tree: list[dict]) -> str:
    total = {s: sum(f["size"] for f in tree if f["state"] == s) for s in ("live", "reclaimable", "uncommitted")}
    more = f"<p class=note>... and {len(tree) - FILES} more files, not listed</p>" if len(tree) > FILES else ""
    tree = tree[:FILES]
    rows = "".join(f"<tr class='st-{f['state']}'><td><a href='#' class=flink data-file='{esc(f['path'])}'>"
                   f"{esc(f['path'])}</a></td><td class=num>{f['size']}</td><td>{esc(f['kind'])}</td>"
                   f"<td>{f['state']}</td></tr>" for f in tree)
    summary = ", ".join(f"{s}: {n} bytes" for s, n in total.items())
    return (f"<p>{len(tree)} files; {summary}</p><table class=tree><tr><th>file</th><th>bytes</th><th>kind</th>"
            f"<th>state</th></tr>{rows}</table>{more}")


# --- an array: schema history, timeline, domains, cells, tiles ---

def _history_html(arr) -> str:
    rows, before = [], None
    for name, schema in arr.schemas:
        d = schema_json(schema, {})
        attrs = [a["name"] for a in d["attributes"]]
        change = ("first" if before is None else "; ".join(
            x for x in (f"added {', '.join(sorted(set(attrs) - set(before)))}" if set(attrs) - set(before) else "",
                        f"dropped {', '.join(sorted(set(before) - set(attrs)))}" if set(before) - set(attrs) else "")
            if x) or "unchanged attributes")
        rows.append((name, d["format_version"], ", ".join(attrs), change))
        before = attrs
    return table(["schema file", "version", "attributes", "change"], rows, "schema history")


def _timeline_svg(arr, rows) -> str:
    """Fragments as bars from t1 to t2 (one lane each, coloured by state), deletes, vacuums and schemas as
    marks; the axis is the rank of the distinct timestamps (ms apart or years apart, each gets room)."""
    events = [(r["timestamp_range"][0], r["timestamp_range"][1], r["name"], r["state"]) for r in rows]
    marks = ([(d.timestamp, "delete", d.marker) for d in arr._listing.deletes]
             + [(ts.t1, "vacuum", f"vacuum list {ts.t1}-{ts.t2}: {', '.join(sorted(n))}")
                for ts, n in arr._listing.vacuums]
             + [(ts, "schema", name) for name, ts in _schema_times(arr)])
    times = sorted({t for e in events for t in e[:2]} | {m[0] for m in marks})
    if not times:
        return "<p>no fragments, deletes or schemas with timestamps</p>"
    x = {t: 90 + 680 * (i / max(1, len(times) - 1)) for i, t in enumerate(times)}
    lane, height = 18, 18 * (len(events) + 2) + 30
    out = [f"<svg class=timeline width=820 height={height} xmlns='http://www.w3.org/2000/svg'>"]
    color = {"committed": "#2ca02c", "consolidated": "#ff7f0e", "vacuumed": "#999", "uncommitted": "#d62728",
             "ignored": "#d62728"}
    for i, (t1, t2, name, state) in enumerate(events):
        y = 10 + i * lane
        out.append(f"<rect x={x[t1]:.1f} y={y} width={max(4, x[t2] - x[t1]):.1f} height=12 fill='{color[state]}'>"
                   f"<title>{esc(name)} ({state}) {t1}-{t2}</title></rect>"
                   f"<text x=4 y={y + 10} class=lab>{esc(_short(name))}</text>")
    y = 10 + len(events) * lane
    for t, what, label in marks:
        fill = {"delete": "#d62728", "vacuum": "#555", "schema": "#1f77b4"}[what]
        out.append(f"<path d='M{x[t]:.1f},{y} l5,7 l-5,7 l-5,-7 z' fill='{fill}'><title>{what}: {esc(label)} "
                   f"at {t}</title></path>")
    out.append(f"<text x=4 y={y + 12} class=lab>marks</text>")
    out.append(f"<text x=90 y={height - 6} class=lab>{times[0]} ms</text><text x=760 y={height - 6} "
               f"text-anchor=end class=lab>{times[-1]} ms ({len(times)} distinct timestamps)</text></svg>")
    return "".join(out)


def _short(name: str) -> str:
    """A fragment's lane label: the start of its UUID (``__t1_t2_uuid_v``), else of its name."""
    parts = name.split("_")
    return parts[-2][:10] if len(parts) >= 5 else name[:12]


def _schema_times(arr) -> list:
    out = []
    for name, _ in arr.schemas:
        if name != directory.LEGACY_SCHEMA:
            try:
                out.append((name, directory.parse_timestamped_name(name).t1))
            except (FormatError, ValueError):
                continue
    return out


def _scale(values: list, dim):
    """A function from a dimension's value to [0, 1]: integers and datetimes as cells [v, v + 1), floats as
    points, strings by rank. The exact ints are subtracted before the one division to a float."""
    if dim.var or dim.datatype.numpy_dtype.kind == "S":
        ranks = {v: i for i, v in enumerate(sorted(set(values)))}
        return lambda v, end=False: (ranks[v] + end) / len(ranks)
    if dim.datatype.numpy_dtype.kind == "f":
        finite = [float(v) for v in values if math.isfinite(float(v))] or [0.0]
        lo, hi = min(finite), max(finite)
        return lambda v, end=False: (0.5 if hi == lo or not math.isfinite(float(v))
                                     else min(1.0, max(0.0, (float(v) - lo) / (hi - lo))))
    lo, hi = int(min(values)), int(max(values)) + 1
    return lambda v, end=False: (int(v) + end - lo) / (hi - lo)


def _domains_svg(arr) -> list[str]:
    """Per pair of dimensions (the one dimension of a 1-D array against nothing), the non-empty domain of each
    live fragment (filled, translucent: overlaps are darker) and its MBRs (outlined); MBRs sampled to
    :data:`MBRS` per plot."""
    frags, dims = arr.fragments, arr.dims
    if not frags:
        return ["<p>no live fragment</p>"]
    mbrs, notes = [], []
    for f in frags:
        try:
            got = [] if f.dense else f.mbrs(dims)
        except FormatError as e:
            notes.append(f"{f.name}: MBRs unreadable: {e}")
            got = []
        n = len(got[0][0]) if got else 0
        step = max(1, -(-n * len(frags) // MBRS))
        mbrs.append([(lo[::step].tolist(), hi[::step].tolist()) for lo, hi in got])
        if step > 1:
            notes.append(f"{f.name}: {n} MBRs, 1 in every {step} drawn")
    pairs = [(i, j) for i in range(len(dims)) for j in range(i + 1, len(dims))][:6] or [(0, None)]
    bounds = arr.nonempty_domain()
    out = [_pair_svg(frags, dims, mbrs, bounds, i, j) for i, j in pairs]
    return out + [f"<p class=note>{esc(n)}</p>" for n in notes]


def _pair_svg(frags, dims, mbrs, union, i, j) -> str:
    axes = [i] if j is None else [i, j]
    scales = []
    for a in axes:
        vals = [v for f in frags for v in f.non_empty_domain[a]]
        vals += [v for m in mbrs for part in (m[a] if m else ((), ())) for v in part]
        scales.append(_scale(vals, dims[a]))
    size, pad = 300, 40

    def rect(box, color, fill):
        (x0, x1), (y0, y1) = box[0], (box[1] if j is not None else (0, 0))
        sx, sy = scales[0], scales[-1]
        left, right = pad + size * sx(x0), pad + size * sx(x1, True)
        top, bottom = (pad + size * (1 - sy(y1, True)), pad + size * (1 - sy(y0))) if j is not None else (pad, pad + 40)
        style = (f"fill='{color}' fill-opacity=0.25 stroke='{color}'" if fill
                 else f"fill=none stroke='{color}' stroke-width=0.6")
        return (f"<rect x={left:.2f} y={top:.2f} width={max(0.5, right - left):.2f} "
                f"height={max(0.5, bottom - top):.2f} {style}>")
    parts = []
    for k, f in enumerate(frags):
        c = _COLORS[k % len(_COLORS)]
        ned = [f.non_empty_domain[a] for a in axes]
        parts.append(rect(ned, c, True) + f"<title>{esc(f.name)}: {esc(jsonable(ned))}</title></rect>")
        if mbrs[k]:
            lo_hi = [mbrs[k][a] for a in axes]
            for t in range(len(lo_hi[0][0])):
                parts.append(rect([(lh[0][t], lh[1][t]) for lh in lo_hi], c, False) + "</rect>")
    h = size if j is not None else 40
    labels = [dims[a] for a in axes]
    bounds = ", ".join(f"{esc(d.name)} in {esc(jsonable(list(union[a])))}" for d, a in zip(labels, axes))
    return (f"<figure><svg width={size + 2 * pad} height={h + 2 * pad} xmlns='http://www.w3.org/2000/svg'>"
            f"<rect x={pad} y={pad} width={size} height={h} fill=none stroke='#aaa'/>{''.join(parts)}"
            f"<text x={pad} y={h + pad + 16} class=lab>{esc(labels[0].name)} →</text>"
            + (f"<text x=4 y={pad - 8} class=lab>↑ {esc(labels[1].name)}</text>" if j is not None else "")
            + f"</svg><figcaption>{bounds}</figcaption></figure>")


def _cells_html(arr) -> str:
    buf = io.StringIO()
    held = sum(f.cell_num for f in arr.fragments)
    if arr.schema.array_type != ArrayType.DENSE and held > SPARSE_CELLS:
        return (f"<p class=note>{held} cells: the page reads the cells of sparse arrays up to {SPARSE_CELLS} cells; "
                f"`tdbformat cat PATH --limit {CELLS}` prints the first ones</p>")
    try:
        write_cells(arr, buf, fmt="json", limit=CELLS, labels=True)
    except (FormatError, ValueError, MemoryBudgetError) as e:
        return f"<p class=err>the cells could not be read: {esc(e)}</p>"
    rows = [json.loads(line) for line in buf.getvalue().splitlines()]
    if not rows:
        return "<p>no cells</p>"
    cols = list(rows[0])
    return table(cols, [[r.get(c) for c in cols] for r in rows],
                 f"the first {len(rows)} cells (enumerated attributes as their labels)")


def _tiles(arr, root) -> list[dict]:
    """The first tiles of each field of each live fragment, decoded through its filters, up to :data:`TILES`:
    where each one lies (data file, bytes) and its first values."""
    out = []
    for f in arr.fragments:
        try:
            for idx in data_fields(f):
                found = field_offsets(f, "", idx)
                for k in range(min(2, 0 if found is None else len(found[0]))):
                    if len(out) >= TILES:
                        return out
                    out.append(_tile(arr, root, f, idx, k))
        except FormatError:  # validate's findings say why; the page shows the tiles it can
            continue
    return out


def _tile(arr, root, f, idx, k) -> dict:
    name, start, end = f.tile_span("", idx, k)
    entry = {"fragment": f.name, "field": f.metadata.index_fields[idx].name, "tile": k, "start": start, "end": end,
             "file": _rel(arr.storage, root, arr.tiles.plan(f, idx, "").path(arr.storage, name))}
    try:
        values, valid = arr.tiles.cells(f, idx, k)
        shown = values[:16]
        entry["values"] = text(", ".join(_scalar(v) if isinstance(v, bytes) else str(jsonable(v)) for v in shown)
                               + (f" ... ({len(values)} cells)" if len(values) > 16 else f" ({len(values)} cells)"))
        if valid is not None:
            entry["values"] += f"; validity {np.asarray(valid[:16], int).tolist()}"
    except FormatError as e:
        entry["values"] = f"does not decode: {e}"
    return entry


def _array_html(path, root, key, findings_of) -> tuple[str, list, dict]:
    """An array's sections, its tiles for the file views, and the states of its files; what stops the array
    from opening is shown in their place."""
    try:
        arr = open_array(path, key=key)
        rows = fragment_rows(arr)
        live = {f.name for f in arr.fragments}
        body = _sections(arr, root, rows, live)
        tiles, states = _tiles(arr, root), _file_states(arr.storage, root, rows)
    except FormatError as e:
        body, tiles, states = [f"<h2>{esc(root)}</h2><p class=err>the array does not open: {esc(e)}</p>"], [], {}
    if findings_of is not None:
        body += ["<h3>validate</h3>", findings_html(findings_of)]
    return "".join(body), tiles, states


def _sections(arr, root, rows, live) -> list[str]:
    """The schema, fragments, timeline, domains and cells of an open array."""
    body = [f"<h2>{esc(root)}</h2>", "<h3>schema</h3>", schema_html(schema_json(arr.schema, arr.enumerations)),
            _history_html(arr),
            "<h3>fragments</h3>", table(["fragment", "state", "version", "timestamp_range", "type", "cells", "bytes",
                                         "non_empty_domain"],
                                        [(r["name"], r["state"] + (" (read)" if r["name"] in live else ""),
                                          r["format_version"], r["timestamp_range"], r["type"], r["cell_num"],
                                          r["bytes"], r["non_empty_domain"]) for r in rows], limit=500),
            "<h3>timeline</h3>", _timeline_svg(arr, rows),
            "<h3>non-empty domains and MBRs</h3>", "<div class=plots>", *_domains_svg(arr), "</div>",
            "<h3>first cells</h3>", _cells_html(arr)]
    return body


# --- files: bytes, spans ---

def _file_view(storage, root, entry: dict, key, budget: list) -> dict:
    """One file's bytes (each byte space up to :data:`FILE_BYTES`, all within the page's ``budget``) and its
    leaf fields as ``[space, start, end, path, value]``."""
    out = {"path": entry["path"], "kind": entry["kind"], "size": entry["size"], "spaces": [], "spans": [],
           "notes": []}
    if entry["size"] > PARSE_BYTES or budget[0] <= 0:
        out["notes"].append(f"{entry['size']} bytes: over the {PARSE_BYTES}-byte bound, not parsed"
                            if budget[0] > 0 else f"not in the page: its {PAGE_BYTES} bytes of files are spent")
        return out
    try:
        data, found = file_spans(entry["full"], key=key)
    except FormatError as e:
        data, found = storage.read(entry["full"]), []
        out["notes"].append(f"does not parse: {e}")
    spaces = {"file": data} | {s.space: s.value for s in found if s.path is None}
    for name, buf in spaces.items():
        keep = max(0, min(len(buf), FILE_BYTES, budget[0]))
        budget[0] -= keep
        out["spaces"].append({"name": name, "size": len(buf), "b64": base64.b64encode(bytes(buf[:keep])).decode()})
        if keep < len(buf):
            out["notes"].append(f"{name}: the first {keep} of {len(buf)} bytes are in the page")
    kept = {s["name"]: len(base64.b64decode(s["b64"])) for s in out["spaces"]}
    out["spans"] = [[s.space, s.start, s.end, s.path, text(_value(s.value))] for s in found
                    if s.path is not None and s.end <= kept.get(s.space, 0)][:FIELDS]
    if len(out["spans"]) < sum(s.path is not None for s in found):
        out["notes"].append(f"{sum(s.path is not None for s in found) - len(out['spans'])} fields are not linked: "
                            f"past the bytes in the page, or past the first {FIELDS}")
    return out


def _value(v) -> str:
    return "" if isinstance(v, (dict, list)) else _scalar(v)[:200]


# --- the page ---

def _collect(path, key) -> tuple[str, str, list, list]:
    """(title, body HTML, file views, tiles) of an array, a group or one file."""
    storage, root = storage_for(path)
    findings = validate(path, key=key)
    if storage.is_file(root):
        tree = _tree(storage, root, {})
        body, tiles = "<h2>one file</h2>" + "<h3>validate</h3>" + findings_html(findings), []
        title = f"file {storage.name(root)}"
    elif directory.is_group(storage, root):
        body, tiles, states = _group_html(storage, root, key, findings)
        tree, title = _tree(storage, root, states), f"group {storage.name(root)}"
    else:
        body, tiles, states = _array_html(path, root, key, findings)
        tree = _tree(storage, root, states)
        title = f"array {storage.name(root)}"
    budget = [PAGE_BYTES]
    views = [_file_view(storage, root, t, key, budget) for t in tree[:FILES]]
    return title, "<h3>files</h3>" + _tree_html(tree) + body, views, tiles


def _group_html(storage, root, key, findings) -> tuple[str, list, dict]:
    """A group's members and metadata, and the sections, tiles and file states of its first member arrays."""
    doc = group_tree(storage, root, key)
    rows, arrays = [], []

    def walk(members, depth, base):
        for m in members:
            where = m["uri"] if not m["uri"].startswith("file://") else m["uri"][7:]
            full = where if where.startswith("/") else str(storage.join(base, where))
            rows.append(("  " * depth + m["name"], m["type"], m["uri"]))
            if m["type"] == "array" and len(arrays) < MEMBERS:
                arrays.append(full)
            walk(m.get("members", []), depth + 1, full)
    walk(doc["members"], 0, root)
    body = ["<h2>group members</h2>", table(["name", "type", "uri"], rows),
            table(["key", "type", "value"], [(k, e["type"], e["value"]) for k, e in doc["metadata"].items()],
                  "group metadata"), "<h3>validate</h3>", findings_html(findings)]
    tiles, states = [], {}
    for a in arrays:
        html_, t, s = _array_html(a, a, key, None)
        body.append(html_)
        tiles += [x | {"file": _rel(storage, root, storage.join(a, x["file"]))} for x in t]
        states.update(s)
    return "".join(body), tiles[:TILES], states


def page(path, key=None) -> str:
    """The page of the array, group or file at ``path`` (``key``: of an encrypted array), as HTML text."""
    title, body, views, tiles = _collect(path, key)
    # no "<" in the script element's text: "</script" or "<!--" there would end or bend it
    data = json.dumps({"files": views, "tiles": tiles}, ensure_ascii=True).replace("<", "\\u003c")
    return ("<!DOCTYPE html><html><head><meta charset=utf-8>"
            f"<title>tdbformat: {esc(title)}</title><style>{_asset('page.css')}</style></head><body>"
            f"<h1>{esc(title)}</h1><p class=path>{esc(path)}</p>{body}"
            "<h3>file view</h3><div id=fileview><div id=status>select a file above, then a field or a byte</div>"
            "<div class=cols><div id=ptree></div><div id=hex></div></div></div>"
            f"<script type='application/json' id=tdbf-data>{data}</script><script>{_asset('page.js')}</script>"
            "</body></html>")


def write_page(path, out, key=None) -> int:
    """Write :func:`page` of ``path`` to ``out`` (atomically); the bytes written."""
    data = page(path, key=key).encode("utf-8")
    storage, p = storage_for(out)
    storage.commit(p, data)
    return len(data)
