"""The ``tdbformat`` subcommands: each ``cmd_*`` parses nothing itself (:func:`tdbformat.cli.parser` did), calls
the package and prints through :mod:`.output`."""

from __future__ import annotations

import sys

from ..errors import UsageError
from .output import (
    cli_words, envelope, meta_table, new_console, new_table, print_json, print_schema, progress, progress_wanted,
    walking,
)

__all__ = ["cmd_inspect", "cmd_schema", "cmd_fragments", "cmd_meta", "cmd_ls", "cmd_cat", "cmd_diff_versions", "cmd_spec", "cmd_export_ksy", "cmd_diff", "cmd_create", "cmd_write", "cmd_convert", "cmd_validate", "cmd_stats", "cmd_versions", "cmd_inspect_bytes", "cmd_salvage",
           "cmd_repair", "cmd_html", "cmd_du", "cmd_mbrs", "cmd_history", "cmd_explain",
           "cmd_consolidate", "cmd_vacuum", "cmd_clean"]


def cmd_inspect(args) -> int:
    from ..layout.files import inspect_path
    from ..show.render import files_json, to_tree

    if args.coverage or args.hex:
        return cmd_inspect_bytes(args)
    parsed = inspect_path(args.path, key=args.key, progress=progress_wanted())
    if args.json:
        print_json(envelope("inspect", args.path, files=files_json(parsed)))
    else:
        print(to_tree(parsed))
    return 0


def _group_or_array(args):
    """("group", storage, root) when PATH is a group, else ("array", Array)."""
    from ..layout import is_group
    from ..storage import storage_for

    storage, root = storage_for(args.path)
    if is_group(storage, root):
        return "group", storage, root
    from ..array import open_array

    return "array", open_array(args.path, key=args.key, timestamp=_timestamp(getattr(args, "timestamp", None)))


def _timestamp(value):
    """``--timestamp T`` or ``T1:T2`` (ms) as ``open_array(timestamp=)`` takes it."""
    if value is None:
        return None
    try:
        parts = [int(p) if p else None for p in value.split(":")]
    except ValueError:
        raise ValueError(f"--timestamp: expected T or T1:T2 in ms, not {value!r}") from None
    if len(parts) > 2:
        raise ValueError(f"--timestamp: expected T or T1:T2 in ms, not {value!r}")
    return parts[0] if len(parts) == 1 else tuple(parts)


def _group_doc(storage, root, key, command: str, path: str) -> dict:
    from .cat import group_tree

    return envelope(command, path, kind="group", **group_tree(storage, root, key))


def _group_arrays(args, what) -> list:
    """``what(array)`` of each array of the group at PATH, recursively: ``[{"key", "uri", "missing", ...}]``."""
    from ..array import open_array
    from ..check.dataset import per_array

    rows = per_array(args.path, lambda obj: what(open_array(obj.path, key=args.key)), args.key)
    return [{k: v for k, v in r.items() if k != "type"} for r in rows if r["type"] == "array"]


def _show_group(args, storage, root, command: str) -> int:
    """``schema``, ``fragments``, ``cat`` and ``ls`` on a group: the group, named as one, and its members;
    ``schema`` and ``fragments`` then each array below it."""
    from ..show import fragment_rows

    doc = _group_doc(storage, root, args.key, command, args.path)
    if command in ("schema", "fragments"):
        doc["arrays"] = _group_arrays(args, (lambda arr: {"schemas": _schema_docs(arr, args.all)}) if command == "schema"
                                      else (lambda arr: {"fragments": fragment_rows(arr)}))
    if args.json:
        print_json(doc)
        return 0
    console = new_console()
    console.print(f"{args.path} is a TileDB group" + (
        "" if command == "ls" else f"; its members, then each array's {command}:" if "arrays" in doc
        else f", not an array ({command} shows arrays); its members:"))
    rows = []

    def walk(members, depth):
        for m in members:
            rows.append(("  " * depth + m["name"], m["type"], m["uri"]))
            walk(m.get("members", []), depth + 1)
    walk(doc["members"], 0)
    console.print(new_table("members", ["name", "type", "uri"], rows))
    if doc["metadata"]:
        console.print(meta_table(doc["metadata"], "group metadata"))
    for a in doc.get("arrays", []):
        console.print(f"\n[bold]{a['key']}[/bold] ({a['uri']})" + (f": {a['missing']}" if a["missing"] else ""))
        for d in a.get("schemas", []):
            print_schema(console, d)
        if "fragments" in a:
            _print_fragments(console, a["fragments"])
    return 0


def cmd_schema(args) -> int:
    found = _group_or_array(args)
    if found[0] == "group":
        return _show_group(args, *found[1:], "schema")
    docs = _schema_docs(found[1], args.all)
    if args.json:
        print_json(envelope("schema", args.path, kind="array", schemas=docs))
        return 0
    console = new_console()
    for d in docs:
        print_schema(console, d)
    return 0


def _schema_docs(arr, every: bool) -> list:
    from ..show import schema_json

    enums = arr.enumerations
    return [dict(name=name, **schema_json(s, enums if s is arr.schema else {}))
            for name, s in (arr.schemas if every else arr.schemas[-1:])]


def cmd_fragments(args) -> int:
    from ..show import fragment_rows

    found = _group_or_array(args)
    if found[0] == "group":
        return _show_group(args, *found[1:], "fragments")
    rows = fragment_rows(found[1])
    if args.json:
        print_json(envelope("fragments", args.path, kind="array", fragments=rows))
        return 0
    _print_fragments(new_console(), rows)
    return 0


def _print_fragments(console, rows: list) -> None:
    columns = ["name", "format_version", "timestamp_range", "type", "cell_num", "non_empty_domain", "bytes", "state"]
    console.print(new_table(f"{len(rows)} fragments", columns, [[r[c] for c in columns] for r in rows]))


def cmd_meta(args) -> int:
    from ..array.cells import metadata_value, tiledb_py_metadata
    from ..layout import read_metadata
    from ..show import meta_json

    found = _group_or_array(args)
    if found[0] == "group":
        entries, kind = read_metadata(found[2], key=args.key, storage=found[1]), "group"
    else:
        arr = found[1]
        entries, kind = read_metadata(arr.path, arr.key, arr.window, arr.storage), "array"
    meta = ({k: metadata_value(e) for k, e in sorted(entries.items())} if args.raw else tiledb_py_metadata(entries))
    doc = meta_json(meta)
    if args.json:
        print_json(envelope("meta", args.path, kind=kind, raw=args.raw, metadata=doc))
    else:
        new_console().print(meta_table(doc, f"{kind} metadata" + (" (stored keys)" if args.raw else "")))
    return 0


def cmd_ls(args) -> int:
    found = _group_or_array(args)
    if found[0] == "group":
        return _show_group(args, *found[1:], "ls")
    arr = found[1]
    kind = "dense" if arr.schema.array_type == 0 else "sparse"
    if args.json:
        print_json(envelope("ls", args.path, kind="array", array_type=kind, fragments=len(arr.fragments)))
    else:
        new_console().print(f"{args.path}: a {kind} TileDB array, {len(arr.fragments)} fragments")
    return 0


def cmd_cat(args) -> int:
    from .cat import write_cells

    found = _group_or_array(args)
    if found[0] == "group":
        if args.csv and not args.json:  # a table is no CSV: `cat --csv GROUP > x.csv` must not write one
            members = sorted(m["name"] for m in _group_doc(*found[1:], args.key, "cat", args.path)["members"])
            raise UsageError(f"{args.path} is a TileDB group, not an array: --csv prints an array's cells; its "
                             f"members: {', '.join(members) or 'none'} (`tdbformat ls {args.path}` lists them)")
        return _show_group(args, *found[1:], "cat")
    fmt = "json" if args.json else "csv" if args.csv else "tsv"
    if args.fragment:  # what one fragment wrote: the array opened at that fragment's timestamps alone
        from ..array import open_array
        from ..check.history import fragment_window

        found = ("array", open_array(args.path, key=args.key, timestamp=fragment_window(args.path, args.fragment,
                                                                                         args.key)))
    attrs = None if not args.attrs else [a.strip() for x in args.attrs for a in x.split(",") if a.strip()]
    write_cells(found[1], sys.stdout, fmt=fmt, attrs=attrs, order=args.order, ranges=args.range,
                limit=args.limit, labels=not args.codes, progress=progress_wanted())
    return 0


def cmd_diff_versions(args) -> int:
    from ..spec.render import render_diff

    print(render_diff(args.a, args.b, args.struct, "json" if args.json else args.format), end="")
    return 0


def cmd_spec(args) -> int:
    from ..spec.render import spec_json, spec_markdown, write_spec_versions

    if args.write:
        from pathlib import Path

        from ..spec.ksy import write_ksy
        from ..spec.ksy_prev1 import write_prev1_ksy

        ksy = Path(args.write) / "ksy"
        for path in [*write_spec_versions(args.write), *write_ksy(ksy), *write_prev1_ksy(ksy)]:
            print(path)
        return 0
    print(spec_json(args.version) if args.json or args.format == "json" else spec_markdown(args.version))
    return 0


def cmd_export_ksy(args) -> int:
    from ..spec.ksy import export_ksy

    paths = export_ksy(args.version, args.out)
    if args.json:
        print_json(envelope("export-ksy", args.out, version=args.version, files=[str(p) for p in paths]))
    else:
        for path in paths:
            print(path)
    return 0


def cmd_diff(args) -> int:
    from ..layout.files import parse_file
    from ..spec.render import dialect_diff, render_file_diff
    from ..versions import DIALECTS

    if args.file_a in DIALECTS:  # ``tdbformat diff 1.x 1``: what changed at format version 1
        print(dialect_diff(args.file_a, int(args.file_b) if args.file_b.isdigit() else -1), end="")
        return 0

    a, b = parse_file(args.file_a, key=args.key), parse_file(args.file_b, key=args.key)
    print(render_file_diff(a, b, "json" if args.json else args.format), end="")
    return 0


def _read_input(path, what: str) -> bytes:
    from ..storage import storage_for

    storage, p = storage_for(path)
    return storage.read(p, what=what)


def cmd_create(args) -> int:
    import json

    from ..schema import from_json
    from ..write.create import create

    schema = from_json(json.loads(_read_input(args.schema, "schema JSON")))
    version = args.version
    create(args.path, schema, version, key=args.key, timestamp=args.timestamp)
    if args.json:
        print_json(envelope("create", args.path, format_version=version))
    else:
        print(f"created {args.path} (format version {version})")
    return 0


def _subarray_arg(text):
    if text is None:
        return None
    try:
        return [tuple(int(x) for x in r.split(":")) for r in text.split(",")]
    except ValueError:
        raise ValueError(f"--subarray: expected LO:HI per dimension, comma-separated, not {text!r}") from None


def cmd_write(args) -> int:
    import io

    import numpy as np

    from ..array import open_array
    from ..enums import ArrayType
    from ..write.tables import cells_from_columns, read_columns
    from ..write.writer import write

    arr = open_array(args.path, key=args.key)
    subarray = _subarray_arg(args.subarray)
    if str(args.file).endswith(".npy"):
        if len(arr.attrs) != 1 or arr.schema.array_type != ArrayType.DENSE:
            raise ValueError("FILE: a .npy file holds the cells of a dense array with one attribute; write CSV or "
                             "Parquet (a column per dimension and attribute) to other arrays")
        values = np.load(io.BytesIO(_read_input(args.file, "input file")), allow_pickle=False)
        data, kw = {arr.attrs[0].name: values}, {"subarray": subarray}
    else:
        data, kw = cells_from_columns(arr, read_columns(args.file), subarray)
    name = write(args.path, data, timestamp=args.timestamp, key=args.key, **kw)
    if args.json:
        print_json(envelope("write", args.path, fragment=name))
    else:
        print(f"wrote fragment {name}")
    return 0


def cmd_convert(args) -> int:
    from ..write.convert import convert
    from ..check.dataset import is_group

    if is_group(args.src):  # the group and every member below it
        from ..write.convert_group import convert_group

        done = convert_group(args.src, args.dst, args.version, key=args.key, max_chunk_size=args.max_chunk_size,
                             timestamp=args.timestamp, attrs=args.attrs)
        if args.json:
            print_json(envelope("convert", args.dst, source=args.src, format_version=args.version, kind="group",
                             fragments=[], **done))
        else:
            print(f"converted {args.src} to {args.dst} (format version {args.version}, {len(done['arrays'])} "
                  f"array(s), {len(done['groups'])} group(s) below it)")
            for m in done["left_behind"]:
                print(f"  not brought along: {m['key']} ({m['uri']}): {m['reason']}")
            for k in done.get("copied_whole", []):
                print(f"  copied whole: {k} has none of the attributes {', '.join(args.attrs)}")
        return 0
    written = convert(args.src, args.dst, args.version, merge=args.merge, key=args.key,
                      max_chunk_size=args.max_chunk_size, timestamp=args.timestamp, attrs=args.attrs)
    if args.json:
        print_json(envelope("convert", args.dst, source=args.src, format_version=args.version,
                         fragments=[str(w) for w in written]))
    else:
        print(f"converted {args.src} to {args.dst} (format version {args.version}, {len(written)} fragment(s))")
    return 0


def cmd_validate(args) -> int:
    from ..check.validate import validate, validate_many

    rules = None if not args.rules else [r.strip() for x in args.rules for r in x.split(",") if r.strip()]
    if len(args.path) > 1 or args.scheduler:  # several arrays, or a dask cluster: one report per PATH, in order
        found = validate_many(args.path, key=args.key, rules=rules, scheduler=args.scheduler,
                              storage_options=args.storage_options)
        return max(_validate_report(args, path, rules, findings) for path, findings in zip(args.path, found))
    bar, advance = progress()
    if bar is not None:
        with bar:
            findings = validate(args.path[0], key=args.key, rules=rules, progress=advance)
    else:
        findings = validate(args.path[0], key=args.key, rules=rules)
    return _validate_report(args, args.path[0], rules, findings)


def _validate_report(args, path, rules, findings) -> int:
    """Print one PATH's findings (--json: one document, a line of its own); 1 if any is an error."""
    from ..check.validate import RULES

    errors = sum(f.severity == "error" for f in findings)
    if args.json:
        print_json(envelope("validate", path, rules=rules or list(RULES), errors=errors,
                            warnings=len(findings) - errors,
                            findings=[{**f.to_json(), "message": cli_words(f.message)} for f in findings]))
    elif not findings:
        new_console().print(f"{path}: no findings ({len(rules or RULES)} rules)")
    else:
        for f in findings:
            print(cli_words(str(f)))
        print(f"{errors} errors, {len(findings) - errors} warnings")
    return 1 if errors else 0


def cmd_stats(args) -> int:
    from ..check.dataset import is_group, per_array
    from ..check.stats import stats

    if is_group(args.path):  # each array of the group, recursively
        rows = walking("stats", lambda progress: per_array(args.path, lambda obj: stats(obj.path, key=args.key),
                                                           args.key, progress))
        if args.json:
            print_json(envelope("stats", args.path, kind="group", objects=rows))
            return 0
        for r in rows:
            new_console().print(f"\n[bold]{r['key'] or '.'}[/bold] ({r['type']}, {r['uri']})"
                                + (f": {r['missing']}" if r["missing"] else ""))
            if "fields" in r:
                _print_stats(r)
        return 0
    doc = stats(args.path, key=args.key)
    if args.json:
        print_json(envelope("stats", args.path, **doc))
        return 0
    _print_stats(doc)
    return 0


def _print_stats(doc: dict) -> None:
    console = new_console()
    console.print(new_table("fragments", ["name", "version", "type", "timestamp_range", "cells", "tiles"],
                            [(f["name"], f["format_version"], f["type"], f["timestamp_range"], f["cell_num"],
                              f["tile_num"]) for f in doc["fragments"]]))
    console.print(new_table("fields", ["field", "file", "filters", "tiles", "disk bytes", "memory bytes", "ratio",
                                       "tile bytes min / median / max"],
                            [(r["field"], r["file"], r["filters"], r["tiles"], r["disk_bytes"], r["memory_bytes"],
                              r["ratio"], "{min} / {median} / {max}".format(**r["tile_bytes"])) for r in doc["fields"]]))
    console.print(new_table("filters", ["filters", "fields", "disk bytes", "memory bytes", "ratio"],
                            [(f["filters"], ", ".join(f["fields"]), f["disk_bytes"], f["memory_bytes"], f["ratio"])
                             for f in doc["filters"]]))


def _blocked_text(blocked) -> str | None:
    if blocked is None:
        return None
    return blocked["reason"] + (f" (on {', '.join(blocked['places'])})" if blocked["places"] else "")


def cmd_versions(args) -> int:
    from ..check.gate import versions

    doc = walking("versions", lambda progress: versions(args.path, key=args.key, max_format=args.max_format,
                                                        reader=args.reader, progress=progress))
    gate = doc.get("gate")
    if args.json:
        print_json(envelope("versions", args.path, **doc))
        return 0 if gate is None or gate["passed"] else 1
    console = new_console()
    if doc["kind"] == "array":
        console.print(new_table("format versions", ["kind", "name", "format version"],
                             [(r["kind"], r["name"], r["format_version"]) for r in doc["files"]]))
    console.print(new_table("readers", ["object", "type", "format version", "oldest TileDB", "oldest TileDB-Py",
                                     "convertible down to", "stopped by"],
                         [(r["key"] or ".", r["type"], r.get("format_version", r.get("details_format_version")),
                           r.get("oldest_tiledb_release"),
                           r.get("oldest_tiledb_py_release"), r.get("lowest_convertible_version"),
                           r["missing"] or _blocked_text(r.get("lower_blocked_by")))
                          for r in doc["objects"]]))
    if doc["newest_format_version"] is not None:
        console.print(f"newest format version {doc['newest_format_version']}: TileDB {doc['oldest_tiledb_release']} "
                      f"or later reads this {doc['kind']}, TileDB-Py {doc['oldest_tiledb_py_release'] or '?'} or later "
                      f"({doc['source']})")
    if gate is None:
        return 0
    who = gate["reader"] or f"format version {gate['max_format']}"
    if gate["passed"]:
        console.print(f"every array opens with {who} (format version {gate['max_format']} or older)")
        return 0
    console.print(f"{len(gate['failures'])} array(s) need a newer reader than {who}:")
    for f in gate["failures"]:
        console.print(f"  {f['key']} (v{f['format_version']}): " + (f["command"] or f["reason"]), soft_wrap=True)
    return 1


def cmd_inspect_bytes(args) -> int:
    """``inspect --coverage`` and ``inspect --hex`` of a file, or of every file of a folder."""
    from ..check.coverage import coverage, hexdump
    from ..storage import storage_for

    storage, p = storage_for(args.path)
    files = storage.walk(p) if storage.is_dir(p) else [p]
    if args.hex:
        for f in files:
            print(f"{f}\n{hexdump(f, key=args.key)}")
        return 0
    found = [(f, storage.size(f), coverage(f, key=args.key)) for f in files]
    if args.json:
        print_json(envelope("coverage", args.path, files=[
            {"path": str(f), "size": size, "gaps": [{"space": g.space, "start": g.start, "end": g.end} for g in gaps]}
            for f, size, gaps in found]))
        return 0
    for f, size, gaps in found:
        print(f"{f}: {size} bytes, " + ("every byte belongs to a field" if not gaps else
                                       f"{sum(g.end - g.start for g in gaps)} bytes in no field:"))
        for g in gaps:
            print(f"  {g.space} [{g.start}, {g.end}): {g.end - g.start} bytes")
    return 0


def cmd_salvage(args) -> int:
    from ..check.salvage import salvage

    report = salvage(args.src, args.dst, key=args.key)
    if args.json:
        print_json(envelope("salvage", args.src, **report.to_json()))
    else:
        print(report)
    return 0 if report.complete else 1


def cmd_repair(args) -> int:
    """Exit 0: nothing left to fix (or all of it fixed); 1: fixes planned in a dry run, or findings left."""
    from ..check.repair import repair

    rules = None if args.rules is None else [r for part in args.rules for r in part.split(",") if r]
    report = repair(args.path, in_place=args.in_place, out=args.out, dry_run=args.dry_run or None, rules=rules,
                    key=args.key, drop_damaged=args.drop_damaged, commit_complete=args.commit_complete)
    if args.json:
        print_json(envelope("repair", args.path, **report.to_json()))
    else:
        print(report)
    left = report.unrepaired or any(not f.applied for f in report.fixes)
    return 1 if left else 0


def cmd_html(args) -> int:
    from ..show.html import write_page

    size = write_page(args.path, args.output, key=args.key)
    print(f"{args.output}: {size} bytes")
    return 0
# --- datasets (tdbformat.check): versions' gate, du, history, mbrs, explain ---

def cmd_du(args) -> int:
    from ..check.du import STATES, du

    doc = walking("du", lambda progress: du(args.path, key=args.key, progress=progress))
    if args.what_if:
        from ..check.whatif import what_if

        doc["what_if"] = walking("re-encoding samples", lambda progress: what_if(
            args.path, key=args.key, sample=args.sample, progress=progress))
    if args.json:
        print_json(envelope("du", args.path, **doc))
        return 0
    levels = ["object", "object_type", "fragment", "field", "kind"]
    keep = levels[:levels.index(args.by) + 1] if args.by != "object" else levels[:2]
    rows = {}
    for r in doc["rows"]:
        row = rows.setdefault(tuple(r[k] for k in keep), dict.fromkeys(STATES, 0))
        row[r["state"]] += r["bytes"]
    console = new_console()
    console.print(new_table(f"{doc['bytes']} bytes in {doc['files']} files", [*keep, *STATES, "bytes"],
                         [(*(("." if k == "object" and v == "" else v) for k, v in zip(keep, key)),
                           *(b[s] or "" for s in STATES), sum(b.values())) for key, b in rows.items()]))
    console.print(", ".join(f"{s} {doc['by_state'][s]}" for s in STATES))
    for r in doc.get("what_if", []):
        cur = r["current"]
        console.print(new_table(f"{r['object'] or '.'} {r['field']} ({r['datatype']}): {r['tiles']} tiles, "
                             f"{r['memory_bytes']} bytes unfiltered, {cur['bytes']} on disk", ["filters", "bytes",
                                                                                              "vs now", "decode MB/s"],
                             [("(now)", cur["bytes"], 1.0, cur["decode_mb_s"])] +
                             [(c["filters"], c["bytes"], c["vs_current"], c["decode_mb_s"]) for c in r["candidates"]]))
    return 0

def cmd_mbrs(args) -> int:
    from ..check.mbrs import mbrs

    doc = mbrs(args.path, key=args.key, fragment=args.fragment)
    if args.json:
        print_json(envelope("mbrs", args.path, **doc))
        return 0
    console = new_console()
    arrays = [("", doc["fragments"])] if doc["kind"] == "array" else [
        (r["key"], r.get("fragments", [])) for r in doc["objects"] if r["type"] == "array"]
    for key, frags in arrays:
        for f in frags:
            console.print(new_table(f"{key + ': ' if key else ''}{f['fragment']}" + (" (dense: no MBRs)" if f["dense"] else
                                                                              f", {len(f['mbrs'])} tiles"),
                                 ["tile", "MBR (lo, hi per dimension)"],
                                 [(i, " × ".join(f"[{lo}, {hi}]" for lo, hi in m)) for i, m in enumerate(f["mbrs"])]))
    return 0

def cmd_history(args) -> int:
    from ..check.history import history

    doc = walking("history", lambda progress: history(args.path, key=args.key, progress=progress))
    if args.json:
        print_json(envelope("history", args.path, **doc))
        return 0
    common = {"timestamp", "kind", "object"}
    new_console().print(new_table(f"{len(doc['events'])} events", ["timestamp", "object", "kind", "what"],
                            [(e["timestamp"], e["object"] or ".", e["kind"],
                              "; ".join(f"{k} {v}" for k, v in e.items() if k not in common)) for e in doc["events"]]))
    return 0

def cmd_explain(args) -> int:
    from .cat import parse_range
    from ..check.dataset import is_group
    from ..check.explain import explain

    ranges = None
    if args.range is not None:
        if is_group(args.path):
            raise ValueError("--range: PATH is a group; give one of its arrays")
        from ..array import open_array

        arr = open_array(args.path, key=args.key)
        ranges = dict(parse_range(arr, r) for r in args.range)
    budget = {} if args.read_budget is None else {"read_budget": args.read_budget}
    doc = walking("explain", lambda progress: explain(args.path, key=args.key, ranges=ranges, progress=progress,
                                                      **budget))
    if args.json:
        print_json(envelope("explain", args.path, **doc))
        return 0
    console = new_console()
    for r in doc["objects"]:
        if r["type"] != "array":
            continue
        title = f"{r['key'] or args.path}" + (f": {r['missing']}" if r["missing"] else "")
        console.print(new_table(title, ["finding", "value", "what", "action"],
                             [(f["id"], f["value"], f["message"], f["action"] or "") for f in r.get("findings", [])]))
        if "read_estimate" in r:
            console.print("a read of the range touches {fragments} fragments, {tiles} tiles, {bytes} bytes"
                          .format(**r["read_estimate"]))
    return 0

# --- end datasets ---


# --- consolidate, vacuum, clean (tdbformat.write: consolidate.py, vacuum.py, clean.py) ---

def cmd_consolidate(args) -> int:
    from ..write.consolidate import consolidate

    config = {"sm.consolidation.mode": args.mode}
    for item in args.config or []:
        k, sep, v = item.partition("=")
        if not sep:
            raise ValueError(f"--config: expected KEY=VALUE, not {item!r}")
        config[k.strip()] = v.strip()
    done = consolidate(args.path, config=config, key=args.key, dry_run=args.dry_run, memory_budget=args.memory_budget)
    if args.json:
        print_json(envelope("consolidate", args.path, dry_run=args.dry_run, **done))
    elif not done.get("steps") and args.mode == "fragments":
        print("nothing to consolidate under this config")
    for i, step in enumerate(done.get("steps", []) if not args.json else []):
        made = f" -> {step['fragment']}" if "fragment" in step else ""
        print(f"step {i + 1}: {len(step['fragments'])} fragments, {step['timestamp_range']}{made}")
        for name in step["fragments"]:
            print(f"  {name}")
    return 0


def cmd_vacuum(args) -> int:
    from ..write.vacuum import vacuum

    done = vacuum(args.path, key=args.key, mode=args.mode)
    if args.json:
        print_json(envelope("vacuum", args.path, **done))
    else:
        for kind, paths in done.items():
            print(f"{kind}: {len(paths)} removed" if kind != "ignore" else f"ignored commits: {len(paths)}")
    return 0


def cmd_clean(args) -> int:
    from ..write.clean import clean_uncommitted

    if not args.uncommitted:
        raise ValueError("clean: say what to clean (--uncommitted)")
    found = clean_uncommitted(args.path, key=args.key, dry_run=args.dry_run)
    if args.json:
        print_json(envelope("clean", args.path, dry_run=args.dry_run, uncommitted=found))
    else:
        for path in found:
            print(f"{'would remove' if args.dry_run else 'removed'} {path}")
    return 0
