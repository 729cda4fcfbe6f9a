"""The ``tdbformat`` command. Each subcommand is a ``cmd_*`` function registered in :func:`parser`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import FormatError, UsageError

__all__ = ["main", "parser"]


def cmd_inspect(args) -> int:
    from .files import inspect_path
    from .render import files_json, to_tree

    if args.coverage or args.hex:
        return cmd_inspect_bytes(args)
    parsed = inspect_path(args.path, key=args.key, progress=_progress_wanted())
    if args.json:
        _print_json(_doc("inspect", args.path, files=files_json(parsed)))
    else:
        print(to_tree(parsed))
    return 0


# --- people: schema, fragments, meta, ls, cat (tdbformat.show, tdbformat.cat) ---

def _doc(command: str, path: str, **body) -> dict:
    """The envelope of every --json document: its shape is docs/json-schema/<command>.v<N>.json."""
    from .show import JSON_VERSION

    return {"json_schema": f"{command}.v{JSON_VERSION}", "path": path, **body}


def _print_json(doc) -> None:
    import json

    print(json.dumps(doc, ensure_ascii=False, allow_nan=False))


def _progress_wanted() -> bool:
    """Progress bars go to stderr, and only when a person watches both streams (never into a pipe)."""
    return sys.stdout.isatty() and sys.stderr.isatty()


def _console():
    from rich.console import Console

    # piped output keeps whole names and values: a wide page rather than the 80 columns rich assumes
    console = Console(highlight=False)
    return console if console.is_terminal else Console(highlight=False, width=240)


def _table(title: str, columns: list, rows: list):
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*(("" if v is None else str(v)) for v in r))
    return t


def _group_or_array(args):
    """("group", storage, root) when PATH is a group, else ("array", Array)."""
    from .directory import is_group
    from .storage import storage_for

    storage, root = storage_for(args.path)
    if is_group(storage, root):
        return "group", storage, root
    from .array import open_array

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

    return _doc(command, path, kind="group", **group_tree(storage, root, key))


def _show_group(args, storage, root, command: str) -> int:
    """``schema``, ``fragments``, ``cat`` and ``ls`` on a group: the group, named as one, and its members."""
    doc = _group_doc(storage, root, args.key, command, args.path)
    if args.json:
        _print_json(doc)
        return 0
    console = _console()
    console.print(f"{args.path} is a TileDB group" + ("" if command == "ls" else f", not an array ({command} "
                                                      "shows arrays); its members:"))
    rows = []

    def walk(members, depth):
        for m in members:
            rows.append(("  " * depth + m["name"], m["type"], m["uri"]))
            walk(m.get("members", []), depth + 1)
    walk(doc["members"], 0)
    console.print(_table("members", ["name", "type", "uri"], rows))
    if doc["metadata"]:
        console.print(_meta_table(doc["metadata"], "group metadata"))
    return 0


def _meta_table(meta: dict, title: str):
    return _table(title, ["key", "type", "value"], [(k, e["type"], e["value"]) for k, e in meta.items()])


def cmd_schema(args) -> int:
    from .show import schema_json

    found = _group_or_array(args)
    if found[0] == "group":
        return _show_group(args, *found[1:], "schema")
    arr = found[1]
    schemas = arr.schemas if args.all else arr.schemas[-1:]
    enums = arr.enumerations
    docs = [dict(name=name, **schema_json(s, enums if s is arr.schema else {})) for name, s in schemas]
    if args.json:
        _print_json(_doc("schema", args.path, kind="array", schemas=docs))
        return 0
    console = _console()
    for d in docs:
        _print_schema(console, d)
    return 0


def _print_schema(console, d: dict) -> None:
    from .show import jsonable

    console.print(f"[bold]{d['array_type']} array[/bold], schema {d['name']} (format version {d['format_version']})")
    console.print(f"cell order {d['cell_order']}, tile order {d['tile_order']}, capacity {d['capacity']}, "
                  f"duplicates {'allowed' if d['allows_duplicates'] else 'not allowed'}"
                  + (f", current domain {d['current_domain']}" if d["current_domain"] else ""))

    def filters(fs):
        return " → ".join(f["type"] + (f"({', '.join(f'{k}={v}' for k, v in f['options'].items())})"
                                       if f["options"] else "") for f in fs)
    console.print(_table("dimensions", ["name", "type", "domain", "tile", "filters"],
                         [(x["name"], x["type"] + (" (var)" if x["var"] else ""), x["domain"], x["tile"],
                           filters(x["filters"])) for x in d["dimensions"]]))
    console.print(_table("attributes", ["name", "type", "cells", "nullable", "fill", "enumeration", "filters"],
                         [(x["name"], x["type"], x["cell_val_num"], x["nullable"], x["fill"], x["enumeration"],
                           filters(x["filters"])) for x in d["attributes"]]))
    for e in d["enumerations"]:
        console.print(f"enumeration {e['name']}: {jsonable(e['values'])}")
    if d["dimension_labels"]:
        console.print(_table("dimension labels", ["name", "dimension", "type", "order", "uri"],
                             [(x["name"], x["dimension"], x["type"], x["order"], x["uri"])
                              for x in d["dimension_labels"]]))
    console.print(f"coords {filters(d['coords_filters']) or '-'}; offsets {filters(d['offsets_filters']) or '-'}; "
                  f"validity {filters(d['validity_filters']) or '-'}\n")


def cmd_fragments(args) -> int:
    from .show import fragment_rows

    found = _group_or_array(args)
    if found[0] == "group":
        return _show_group(args, *found[1:], "fragments")
    rows = fragment_rows(found[1])
    if args.json:
        _print_json(_doc("fragments", args.path, kind="array", fragments=rows))
        return 0
    columns = ["name", "format_version", "timestamp_range", "type", "cell_num", "non_empty_domain", "bytes", "state"]
    _console().print(_table(f"{len(rows)} fragments", columns, [[r[c] for c in columns] for r in rows]))
    return 0


def cmd_meta(args) -> int:
    from .array.cells import metadata_value, tiledb_py_metadata
    from .directory import read_metadata
    from .show import meta_json

    found = _group_or_array(args)
    if found[0] == "group":
        entries, kind = read_metadata(found[2], key=args.key, storage=found[1]), "group"
    else:
        arr = found[1]
        entries, kind = read_metadata(arr.path, arr.key, arr.window, arr.storage), "array"
    meta = ({k: metadata_value(e) for k, e in sorted(entries.items())} if args.raw else tiledb_py_metadata(entries))
    doc = meta_json(meta)
    if args.json:
        _print_json(_doc("meta", args.path, kind=kind, raw=args.raw, metadata=doc))
    else:
        _console().print(_meta_table(doc, f"{kind} metadata" + (" (stored keys)" if args.raw else "")))
    return 0


def cmd_ls(args) -> int:
    found = _group_or_array(args)
    if found[0] == "group":
        return _show_group(args, *found[1:], "ls")
    arr = found[1]
    kind = "dense" if arr.schema.array_type == 0 else "sparse"
    if args.json:
        _print_json(_doc("ls", args.path, kind="array", array_type=kind, fragments=len(arr.fragments)))
    else:
        _console().print(f"{args.path}: a {kind} TileDB array, {len(arr.fragments)} fragments")
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
    attrs = None if not args.attrs else [a.strip() for x in args.attrs for a in x.split(",") if a.strip()]
    write_cells(found[1], sys.stdout, fmt=fmt, attrs=attrs, order=args.order, ranges=args.range,
                limit=args.limit, labels=not args.codes, progress=_progress_wanted())
    return 0

# --- end people ---


# --- format versions and spec (tdbformat.spec) ---

def cmd_diff_versions(args) -> int:
    from .spec_render import render_diff

    print(render_diff(args.a, args.b, args.struct, "json" if args.json else args.format), end="")
    return 0


def cmd_spec(args) -> int:
    from .spec_render import spec_json, spec_markdown, write_spec_versions

    if args.write:
        from pathlib import Path

        from .ksy import write_ksy

        for path in [*write_spec_versions(args.write), *write_ksy(Path(args.write) / "ksy")]:
            print(path)
        return 0
    print(spec_json(args.version) if args.json or args.format == "json" else spec_markdown(args.version))
    return 0


def cmd_export_ksy(args) -> int:
    from .ksy import export_ksy

    paths = export_ksy(args.version, args.out)
    if args.json:
        _print_json(_doc("export-ksy", args.out, version=args.version, files=[str(p) for p in paths]))
    else:
        for path in paths:
            print(path)
    return 0


def cmd_diff(args) -> int:
    from .files import parse_file
    from .spec_render import dialect_diff, render_file_diff
    from .versions import DIALECTS

    if args.file_a in DIALECTS:  # ``tdbformat diff 1.x 1``: what changed at format version 1
        print(dialect_diff(args.file_a, int(args.file_b) if args.file_b.isdigit() else -1), end="")
        return 0

    a, b = parse_file(args.file_a, key=args.key), parse_file(args.file_b, key=args.key)
    print(render_file_diff(a, b, "json" if args.json else args.format), end="")
    return 0

# --- end format versions and spec ---


# --- writing: create, write, convert (tdbformat.array.create, .writer, .convert) ---

def _read_input(path, what: str) -> bytes:
    from .storage import storage_for

    storage, p = storage_for(path)
    return storage.read(p, what=what)


def _filter_from_json(f: dict):
    """One filter of ``tdbformat schema --json`` as a ``tdbformat.schema`` filter."""
    import inspect

    from .array import schema as S
    from .enums import Datatype

    classes = {cls.type.name: cls for cls in _subclasses(S.Filter) if "type" in vars(cls)}
    if f.get("type") not in classes:
        raise ValueError(f"--schema: unknown filter type {f.get('type')!r} (known: {', '.join(sorted(classes))})")
    o = f.get("options") or {}
    kwargs = {"level": o.get("level"), "window": o.get("max_window_size"), "factor": o.get("scale"),
              "offset": o.get("offset"), "bytewidth": o.get("byte_width"), "quality": o.get("quality"),
              "input_format": o.get("input_format"), "lossless": o.get("lossless"),
              "reinterp_dtype": None if o.get("reinterpret_datatype") in (None, "ANY")
              else Datatype[o["reinterpret_datatype"]]}
    cls = classes[f["type"]]
    accepted = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in kwargs.items() if k in accepted and v is not None})


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _dtype_of(type_name: str, var: bool):
    from .enums import Datatype

    datatype = Datatype[type_name]
    if var and datatype in (Datatype.STRING_ASCII, Datatype.CHAR):
        return "ascii"
    if var and datatype == Datatype.STRING_UTF8:
        return str
    if var and datatype == Datatype.BLOB:
        return "blob"
    return datatype.numpy_dtype


def schema_from_json(doc: dict):
    """A ``tdbformat.schema.ArraySchema`` from the JSON ``tdbformat schema --json`` prints (the document, or
    one of its ``schemas``): dimensions, attributes, filters, orders, duplicates, enumerations, current domain."""
    from .array import schema as S

    d = doc["schemas"][-1] if "schemas" in doc else doc
    if d.get("dimension_labels"):
        raise ValueError("--schema: dimension labels cannot be created from JSON (their label arrays are not in it)")
    fl = lambda fs: [_filter_from_json(f) for f in fs or []]  # noqa: E731
    # the JSON shows a dimension without filters of its own with the coordinate filters (schema_json)
    dims = [S.Dim(x["name"], domain=None if x["var"] else x["domain"], tile=x["tile"],
                  filters=[] if x["filters"] == d.get("coords_filters") else fl(x["filters"]),
                  dtype=_dtype_of(x["type"], x["var"])) for x in d["dimensions"]]
    attrs = []
    for x in d["attributes"]:
        var = x["cell_val_num"] == "var"
        a = S.Attr(x["name"], dtype=_dtype_of(x["type"], var), var=var, nullable=x["nullable"],
                   filters=fl(x["filters"]), enum_label=x.get("enumeration"))
        if not var and x["cell_val_num"] != 1:
            a.cell_val_num = int(x["cell_val_num"])
        attrs.append(a)
    enums = [S.Enumeration(e["name"], False, e["values"]) for e in d.get("enumerations") or []]
    return S.ArraySchema(
        S.Domain(*dims), attrs, cell_order=d["cell_order"], tile_order=d["tile_order"], capacity=d["capacity"],
        coords_filters=fl(d.get("coords_filters")), offsets_filters=fl(d.get("offsets_filters")),
        validity_filters=fl(d.get("validity_filters")), allows_duplicates=d["allows_duplicates"],
        sparse=d["array_type"] == "sparse", enums=enums or None,
        current_domain=S.CurrentDomain(d["current_domain"]) if d.get("current_domain") else None)


def _dict_form(value, key=None):
    """The dict ``ArraySchema.build`` takes, from JSON: enum fields may be given by name ("SPARSE", "INT64",
    "ROW_MAJOR", a filter's "ZSTD" and its compressor's)."""
    from .enums import ArrayType, Compressor, Datatype, FilterType, Layout

    enums = {"array_type": ArrayType, "tile_order": Layout, "cell_order": Layout, "datatype": Datatype,
             "filter": FilterType, "compressor": Compressor}
    if isinstance(value, dict):
        is_filter = "options" in value and "type" in value
        return {k: _dict_form(v, "filter" if is_filter and k == "type" else k) for k, v in value.items()}
    if isinstance(value, list):
        return [_dict_form(v) for v in value]
    if isinstance(value, str) and key in enums:
        try:
            return enums[key][value]
        except KeyError:
            raise ValueError(f"--schema: {key} {value!r} is not one of {', '.join(e.name for e in enums[key])}") \
                from None
    return value


def cmd_create(args) -> int:
    import json

    from .array.create import create
    from .versions import LATEST

    doc = json.loads(_read_input(args.schema, "schema JSON"))
    schema = _dict_form(doc) if "domain" in doc and "attributes" in doc else schema_from_json(doc)
    version = LATEST if args.version is None else args.version
    create(args.path, schema, version, key=args.key, timestamp=args.timestamp)
    if hasattr(schema, "enumeration_dicts") and version >= 20:
        _write_enumerations(args.path, schema, version, args.key)
    if args.json:
        _print_json(_doc("create", args.path, format_version=version))
    else:
        print(f"created {args.path} (format version {version})")
    return 0


def _write_enumerations(path, schema, version: int, key) -> None:
    from construct import Container

    from .directory import enumeration_path
    from .storage import storage_for
    from .structs.enumeration import Enumeration

    storage, root = storage_for(path)
    for name, payload in schema.enumeration_dicts(version).items():
        storage.commit(enumeration_path(storage, root, name), Enumeration.build(Container(payload), version=version,
                                                                                  key=key))


def _columns(path) -> dict:
    """``{column: numpy array}`` of a CSV or Parquet file (strings as objects; empty CSV cells as None)."""
    import io

    import numpy as np

    data = _read_input(path, "input file")
    if str(path).endswith((".parquet", ".pq")):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ValueError("FILE: Parquet input needs pyarrow (pip install pyarrow)") from None
        table = pq.read_table(pa.BufferReader(data))
        return {n: table.column(n).to_numpy(zero_copy_only=False) for n in table.column_names}
    import csv

    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    if not rows:
        raise ValueError(f"FILE: {path} is empty (expected a header row of dimension and attribute names)")
    body = np.array(rows[1:], dtype=object).reshape(len(rows) - 1, len(rows[0]))
    return {n: body[:, j] for j, n in enumerate(rows[0])}


def _typed(column, info, name: str):
    """A CSV/Parquet column as the field's values: numbers parsed, empty cells of nullable fields masked."""
    import numpy as np

    column = np.asarray(column)
    missing = (np.equal(column, None) | (column == "")) if column.dtype == object else None
    if info.var:
        return np.ma.masked_array(column, missing) if info.nullable and missing is not None else column
    if missing is not None and missing.any():
        if not info.nullable:
            raise ValueError(f"FILE: column {name!r} has empty cells, and the field is not nullable")
        column = np.where(missing, "0", column)
    from .array.cells import cell_dtype

    try:
        values = (column.astype(str) if column.dtype == object else column).astype(cell_dtype(info))
    except (TypeError, ValueError) as e:
        raise ValueError(f"FILE: column {name!r} is not {info.datatype.name}: {e}") from None
    return np.ma.masked_array(values, missing) if info.nullable and missing is not None else values


def _cells_from_columns(arr, columns: dict, subarray):
    """(data, write keywords) for a CSV/Parquet file: sparse cells at the dimension columns' coordinates;
    dense cells covering a box exactly (the box their coordinates span), placed in it."""
    import numpy as np

    from .enums import ArrayType

    missing = [f.name for f in arr.dims + arr.attrs if f.name not in columns]
    if missing:
        raise ValueError(f"FILE: no column {missing} (columns: {', '.join(columns)})")
    coords = [_typed(columns[d.name], d, d.name) for d in arr.dims]
    data = {a.name: _typed(columns[a.name], a, a.name) for a in arr.attrs}
    if arr.schema.array_type != ArrayType.DENSE:
        return data, {"coords": coords}
    box = subarray or [(int(c.min()), int(c.max())) for c in coords]
    shape = tuple(hi - lo + 1 for lo, hi in box)
    idx = tuple(np.asarray(c, np.int64) - lo for c, (lo, _) in zip(coords, box))
    flat = np.ravel_multi_index(idx, shape, mode="raise") if all(len(i) for i in idx) else np.zeros(0, np.int64)
    if len(np.unique(flat)) != int(np.prod(shape)) or len(flat) != int(np.prod(shape)):
        raise ValueError(f"FILE: a dense write needs exactly one row per cell of the box {box}, "
                         f"got {len(flat)} rows for {int(np.prod(shape))} cells")
    out = {}
    for name, v in data.items():
        placed = np.empty(len(flat), v.dtype)
        placed[flat] = np.ma.getdata(v)
        if isinstance(v, np.ma.MaskedArray):
            mask = np.empty(len(flat), bool)
            mask[flat] = np.ma.getmaskarray(v)
            placed = np.ma.masked_array(placed, mask)
        out[name] = placed.reshape(shape)
    return out, {"subarray": box}


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

    from .array import open_array
    from .array.writer import write
    from .enums import ArrayType

    arr = open_array(args.path, key=args.key)
    subarray = _subarray_arg(args.subarray)
    if str(args.file).endswith(".npy"):
        if len(arr.attrs) != 1 or arr.schema.array_type != ArrayType.DENSE:
            raise ValueError("FILE: a .npy file holds the cells of a dense array with one attribute; write CSV or "
                             "Parquet (a column per dimension and attribute) to other arrays")
        values = np.load(io.BytesIO(_read_input(args.file, "input file")), allow_pickle=False)
        data, kw = {arr.attrs[0].name: values}, {"subarray": subarray}
    else:
        data, kw = _cells_from_columns(arr, _columns(args.file), subarray)
    name = write(args.path, data, timestamp=args.timestamp, key=args.key, **kw)
    if args.json:
        _print_json(_doc("write", args.path, fragment=name))
    else:
        print(f"wrote fragment {name}")
    return 0


def cmd_convert(args) -> int:
    from .array.convert import convert

    written = convert(args.src, args.dst, args.version, merge=args.merge, key=args.key,
                      max_chunk_size=args.max_chunk_size)
    if args.json:
        _print_json(_doc("convert", args.dst, source=args.src, format_version=args.version,
                         fragments=[str(w) for w in written]))
    else:
        print(f"converted {args.src} to {args.dst} (format version {args.version}, {len(written)} fragment(s))")
    return 0

# --- end writing ---
# --- validate, stats, versions, inspect --coverage/--hex (tdbformat.validate, .stats, .coverage) ---

def _progress():
    """(rich Progress or None, callback for validate(progress=)): a bar on stderr, when a person watches."""
    if not _progress_wanted():
        return None, None
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(console=Console(stderr=True), transient=True)
    task = bar.add_task("validating tiles", total=0)

    def advance(done=0, total=0):
        if total:
            bar.update(task, total=bar.tasks[0].total + total)
        if done:
            bar.update(task, advance=done)
    return bar, advance


def cmd_validate(args) -> int:
    from .validate import validate, validate_many

    rules = None if not args.rules else [r.strip() for x in args.rules for r in x.split(",") if r.strip()]
    if len(args.path) > 1 or args.scheduler:  # several arrays, or a dask cluster: one report per PATH, in order
        found = validate_many(args.path, key=args.key, rules=rules, scheduler=args.scheduler,
                              storage_options=args.storage_options)
        return max(_validate_report(args, path, rules, findings) for path, findings in zip(args.path, found))
    bar, advance = _progress()
    if bar is not None:
        with bar:
            findings = validate(args.path[0], key=args.key, rules=rules, progress=advance)
    else:
        findings = validate(args.path[0], key=args.key, rules=rules)
    return _validate_report(args, args.path[0], rules, findings)


def _validate_report(args, path, rules, findings) -> int:
    """Print one PATH's findings (--json: one document, a line of its own); 1 if any is an error."""
    from .validate import RULES

    errors = sum(f.severity == "error" for f in findings)
    if args.json:
        _print_json(_doc("validate", path, rules=rules or list(RULES), errors=errors,
                         warnings=len(findings) - errors,
                         findings=[{**f.to_json(), "message": _cli_words(f.message)} for f in findings]))
    elif not findings:
        _console().print(f"{path}: no findings ({len(rules or RULES)} rules)")
    else:
        for f in findings:
            print(_cli_words(str(f)))
        print(f"{errors} errors, {len(findings) - errors} warnings")
    return 1 if errors else 0

def cmd_stats(args) -> int:
    from .stats import stats

    doc = stats(args.path, key=args.key)
    if args.json:
        _print_json(_doc("stats", args.path, **doc))
        return 0
    console = _console()
    console.print(_table("fragments", ["name", "version", "type", "timestamp_range", "cells", "tiles"],
                         [(f["name"], f["format_version"], f["type"], f["timestamp_range"], f["cell_num"],
                           f["tile_num"]) for f in doc["fragments"]]))
    console.print(_table("fields", ["field", "file", "filters", "tiles", "disk bytes", "memory bytes", "ratio",
                                    "tile bytes min / median / max"],
                         [(r["field"], r["file"], r["filters"], r["tiles"], r["disk_bytes"], r["memory_bytes"],
                           r["ratio"], "{min} / {median} / {max}".format(**r["tile_bytes"])) for r in doc["fields"]]))
    console.print(_table("filters", ["filters", "fields", "disk bytes", "memory bytes", "ratio"],
                         [(f["filters"], ", ".join(f["fields"]), f["disk_bytes"], f["memory_bytes"], f["ratio"])
                          for f in doc["filters"]]))
    return 0


def cmd_versions(args) -> int:
    from .stats import versions

    doc = versions(args.path, key=args.key)
    if args.json:
        _print_json(_doc("versions", args.path, **doc))
        return 0
    console = _console()
    console.print(_table("format versions", ["kind", "name", "format version"],
                         [(r["kind"], r["name"], r["format_version"]) for r in doc["files"]]))
    console.print(f"newest format version {doc['newest_format_version']}: TileDB {doc['oldest_tiledb_release']} or "
                  f"later reads this array ({doc['source']})")
    return 0



def cmd_inspect_bytes(args) -> int:
    """``inspect --coverage`` and ``inspect --hex`` of a file, or of every file of a folder."""
    from .coverage import coverage, hexdump
    from .storage import storage_for

    storage, p = storage_for(args.path)
    files = storage.walk(p) if storage.is_dir(p) else [p]
    if args.hex:
        for f in files:
            print(f"{f}\n{hexdump(f, key=args.key)}")
        return 0
    found = [(f, storage.size(f), coverage(f, key=args.key)) for f in files]
    if args.json:
        _print_json(_doc("coverage", args.path, files=[
            {"path": str(f), "size": size, "gaps": [{"space": g.space, "start": g.start, "end": g.end} for g in gaps]}
            for f, size, gaps in found]))
        return 0
    for f, size, gaps in found:
        print(f"{f}: {size} bytes, " + ("every byte belongs to a field" if not gaps else
                                       f"{sum(g.end - g.start for g in gaps)} bytes in no field:"))
        for g in gaps:
            print(f"  {g.space} [{g.start}, {g.end}): {g.end - g.start} bytes")
    return 0
# --- end validate, stats, versions ---

# --- salvage (tdbformat.salvage) ---

def cmd_salvage(args) -> int:
    from .salvage import salvage

    report = salvage(args.src, args.dst, key=args.key)
    if args.json:
        _print_json(_doc("salvage", args.src, **report.to_json()))
    else:
        print(report)
    return 0 if report.complete else 1

# --- end salvage ---


def _writing_parsers(sub, key_help: str) -> None:
    """The parsers of create, write and convert."""
    from .versions import KNOWN_VERSIONS

    s = sub.add_parser("create", help="create an empty array from a schema (the JSON of `tdbformat schema --json`)")
    s.add_argument("path")
    s.add_argument("--schema", required=True, metavar="SCHEMA.json", help="`tdbformat schema --json` output of an "
                   "array, or the dict ArraySchema.build takes")
    s.add_argument("--version", type=int, choices=KNOWN_VERSIONS, help="format version (default: the latest)")
    s.add_argument("--timestamp", type=int, metavar="T", help="the schema's timestamp (ms; default now)")
    s.add_argument("--key", help="AES-256-GCM key to encrypt the array with")
    s.add_argument("--json", action="store_true", help="print what was written as JSON (docs/json-schema/create.v1.json)")
    s.set_defaults(func=cmd_create)

    s = sub.add_parser("write", help="write one fragment from a .npy, CSV or Parquet file")
    s.add_argument("path")
    s.add_argument("file", help=".npy (one attribute, dense), .csv or .parquet (a column per dimension and "
                   "attribute; empty CSV cells are null)")
    s.add_argument("--subarray", metavar="LO:HI,...", help="dense: the cells the data covers, inclusive "
                   "(default: the whole domain for .npy, the box of the coordinates for CSV/Parquet)")
    s.add_argument("--timestamp", type=int, metavar="T", help="the fragment's timestamp (ms; default now)")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help="print what was written as JSON (docs/json-schema/write.v1.json)")
    s.set_defaults(func=cmd_write)

    s = sub.add_parser("convert", help="rewrite an array at another format version (a new array at DST)")
    s.add_argument("src")
    s.add_argument("dst", help="must not exist; after a failure, delete what was written there")
    s.add_argument("--version", type=int, choices=KNOWN_VERSIONS, required=True)
    s.add_argument("--merge", action="store_true", help="all cells visible now as one fragment (deletes applied)")
    s.add_argument("--max-chunk-size", type=int, default=65536, metavar="BYTES",
                   help="the writer's chunk bound from v5 (TileDB's 64 KiB; 192 as the tiledb-py 0.19-0.25 wheels)")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help="print what was written as JSON (docs/json-schema/convert.v1.json)")
    s.set_defaults(func=cmd_convert)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tdbformat", description="Inspect TileDB arrays without TileDB.")
    p.add_argument("--version", action="version", version=f"tdbformat {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("inspect", help="print the parsed structure of a file or of every file of an array")
    s.add_argument("path")
    s.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    s.add_argument("--key", help="AES-256-GCM key of an encrypted array (32 characters or 64 hex digits)")
    s.add_argument("--coverage", action="store_true", help="instead, every byte range no field accounts for")
    s.add_argument("--hex", action="store_true", help="instead, a hex dump labelled with the field that holds "
                   "each range")
    s.set_defaults(func=cmd_inspect)

    key_help = "AES-256-GCM key of an encrypted array (32 characters or 64 hex digits)"
    json_help = "print JSON (its shape: docs/json-schema/%s.v1.json)"
    for name, func, help_ in (("schema", cmd_schema, "an array's dimensions, attributes, filters, orders, "
                               "enumerations and labels"),
                              ("fragments", cmd_fragments, "one row per fragment: timestamps, cells, non-empty "
                               "domain, bytes, state"),
                              ("meta", cmd_meta, "array or group metadata, decoded as TileDB-Py decodes it"),
                              ("ls", cmd_ls, "a group's members (recursively) and metadata"),
                              ("cat", cmd_cat, "an array's cells, one row per cell, coordinates first")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("path")
        s.add_argument("--json", action="store_true", help=json_help % name + (" Lines, one object per cell"
                                                                                if name == "cat" else ""))
        s.add_argument("--key", help=key_help)
        s.set_defaults(func=func)
        if name in ("meta", "cat"):
            s.add_argument("--timestamp", metavar="T|T1:T2", help="read as of this time (ms), or a window")
        if name == "schema":
            s.add_argument("--all", action="store_true", help="every schema of the array's history")
        if name == "meta":
            s.add_argument("--raw", action="store_true", help="the stored keys and values (__np_flat_... too)")
    s.add_argument("--csv", action="store_true", help="print CSV")
    s.add_argument("--attrs", action="append", metavar="A[,B...]", help="attributes to print (default: all)")
    s.add_argument("--limit", type=int, help="print at most this many cells (dense arrays read only what they need)")
    s.add_argument("--order", choices=["C", "F", "G", "U"], help="C row-major, F column-major, G global, "
                   "U unordered (default: C for dense arrays, TileDB-Py's A[:] order for sparse ones)")
    s.add_argument("--range", action="append", metavar="DIM=LO:HI", help="only cells with LO <= DIM <= HI "
                   "(inclusive; repeatable; DIM=LO,HI when the bounds hold colons)")
    s.add_argument("--codes", action="store_true", help="enumerated attributes as codes, not labels")

    # --- format versions and spec (tdbformat.spec) ---
    from .versions import KNOWN_VERSIONS, LATEST

    s = sub.add_parser("diff-versions", help="the layouts of two format versions side by side")
    s.add_argument("a", type=int, choices=KNOWN_VERSIONS, metavar="A")
    s.add_argument("b", type=int, choices=KNOWN_VERSIONS, metavar="B")
    s.add_argument("--struct", help="one structure, by title (e.g. 'Array schema')")
    s.add_argument("--format", choices=["text", "markdown", "html", "json"], default="text")
    s.add_argument("--json", action="store_true", help="the same as --format json (docs/json-schema/diff-versions.v1.json)")
    s.set_defaults(func=cmd_diff_versions)

    s = sub.add_parser("spec", help="the whole format at one version as spec tables")
    s.add_argument("--version", type=int, choices=KNOWN_VERSIONS, default=LATEST)
    s.add_argument("--format", choices=["markdown", "json"], default="markdown")
    s.add_argument("--json", action="store_true", help="the same as --format json (docs/json-schema/spec.v1.json)")
    s.add_argument("--write", metavar="DIR", help="instead, regenerate DIR (spec_versions/): v01.md ... CHANGES.md, ksy/vNN/*.ksy")
    s.set_defaults(func=cmd_spec)

    s = sub.add_parser("export-ksy", help="write a Kaitai Struct .ksy per structure of one format version")
    s.add_argument("--version", type=int, choices=KNOWN_VERSIONS, required=True)
    s.add_argument("--out", default=".", metavar="DIR", help="folder to write into (default: the current one)")
    s.add_argument("--json", action="store_true", help="list the written files as JSON (docs/json-schema/export-ksy.v1.json)")
    s.set_defaults(func=cmd_export_ksy)

    s = sub.add_parser("diff", help="compare two files of the same kind field by field, with byte offsets "
                       "(or 'diff 1.x 1': the 1.x dialect's layouts against format version 1's)")
    s.add_argument("file_a")
    s.add_argument("file_b")
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.add_argument("--json", action="store_true", help="the same as --format json (docs/json-schema/diff.v1.json)")
    s.add_argument("--key", help="AES-256-GCM key of an encrypted array (32 characters or 64 hex digits)")
    s.set_defaults(func=cmd_diff)
    # --- end format versions and spec ---

    _writing_parsers(sub, key_help)  # --- writing: create, write, convert ---
    # --- validate, stats, versions ---
    from .validate import RULES

    s = sub.add_parser("validate", help="check an array, a group (recursively) or a file against the format's "
                       "rules; exit 1 if errors are found")
    s.add_argument("path", nargs="+", help="arrays, groups or files (several: one report each, in this order)")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help=json_help % "validate" + " (several PATHs: one document "
                   "per line)")
    s.add_argument("--scheduler", metavar="ADDRESS", help="validate on this dask.distributed cluster "
                   "(tcp://host:port), one task per PATH (needs tdbformat[dask])")
    s.add_argument("--rules", action="append", metavar="ID[,ID...]",
                   help="run only these rules (repeatable): " + ", ".join(RULES))
    s.set_defaults(func=cmd_validate)
    for name, func, help_ in (("stats", cmd_stats, "bytes on disk and in memory, compression ratio and tile sizes "
                               "per field and per filter; cells, times and version per fragment"),
                              ("versions", cmd_versions, "the format version of every schema and fragment, and the "
                               "oldest TileDB release that reads the array")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("path")
        s.add_argument("--key", help=key_help)
        s.add_argument("--json", action="store_true", help=json_help % name)
        s.set_defaults(func=func)
    # --- end validate, stats, versions ---
    # --- salvage ---
    s = sub.add_parser("salvage", help="copy every cell of SRC that can still be read into a new array DST and "
                       "print what was lost; exit 1 if anything was (SRC is only read)")
    s.add_argument("src")
    s.add_argument("dst")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help=json_help % "salvage")
    s.set_defaults(func=cmd_salvage)
    # --- end salvage ---
    # --- remote: --storage-options on every command that takes a path or a URL ---
    for s in sub.choices.values():
        if {a.dest for a in s._actions} & _PATH_ARGS:
            s.add_argument("--storage-options", type=_storage_options, metavar="JSON",
                           help='options of the URLs\' fsspec filesystem, a JSON object (as pandas and dask take '
                           'storage_options), e.g. \'{"anon": true}\'; local paths ignore them')
    # --- end remote ---
    return p


#: the positional arguments that name a path or a URL
_PATH_ARGS = {"path", "src", "dst", "file_a", "file_b"}


def _storage_options(text: str) -> dict:
    """``--storage-options``: a JSON object, else a usage error (argparse names the option, exit 2)."""
    import json

    try:
        options = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(options, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, not {type(options).__name__}")
    return options


def main(argv=None) -> int:
    """Exit codes: 0 success; 1 findings (validate, salvage) or input that breaks the format (FormatError) or
    cannot be read (OSError); 2 a bad argument (argparse's, a UsageError, or a ValueError/TypeError that
    tdbformat raised to refuse an argument); 70 anything else, a bug in tdbformat (its traceback is printed)."""
    from .storage import default_storage_options

    p = parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # a bare `tdbformat`: what it can do
        p.print_help()
        return 0
    args = p.parse_args(argv)
    # a cell that is not valid UTF-8, or a terminal that is not UTF-8, must never end the output
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        with default_storage_options(getattr(args, "storage_options", None) or {}):  # reaches every URL opened
            return args.func(args)
    except BrokenPipeError:  # `tdbformat inspect ... | head`
        return 0
    except FormatError as e:
        print(f"tdbformat: {_cli_words(str(e))}", file=sys.stderr)
        return 1
    except OSError as e:  # an unreadable input, an unwritable output, a full disk
        print(f"tdbformat: {e}", file=sys.stderr)
        return 1
    except (ValueError, TypeError) as e:
        if isinstance(e, UsageError) or _raised_by_tdbformat(e):  # an argument the API refused, by name
            print(f"tdbformat: {_cli_words(str(e))}", file=sys.stderr)
            return 2
        return _bug(e)
    except Exception as e:  # noqa: BLE001 (anything else is ours to fix: say so, with the traceback)
        return _bug(e)


def _cli_words(text: str) -> str:
    """The API's words as the command line says them: ``pass key=`` is ``--key``."""
    return text.replace("pass key=", "pass --key KEY")


def _raised_by_tdbformat(e: BaseException) -> bool:
    """Whether a ``raise`` statement of tdbformat raised ``e`` (a deliberate refusal), not numpy or Python
    inside it (a bug: numpy's C functions raise from the line of ours that called them)."""
    import linecache

    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or not Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(_PACKAGE):
        return False
    return linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).lstrip().startswith("raise ")


_PACKAGE = Path(__file__).resolve().parent


def _bug(e: BaseException) -> int:
    import traceback

    traceback.print_exception(e, file=sys.stderr)
    print(f"tdbformat: this is a bug in tdbformat {_version()} ({type(e).__name__}: {e}); please report it with "
          "the traceback above", file=sys.stderr)
    return 70


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tdbformat")
    except PackageNotFoundError:  # run from a source tree
        return "(source tree)"


if __name__ == "__main__":
    sys.exit(main())
