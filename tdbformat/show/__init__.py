"""What people see: schemas, fragments and metadata as JSON-able dicts (the ``--json`` shapes that
docs/json-schema/ documents) and as text in the spirit of TileDB-Py's reprs. Callers pass parsed schemas,
fragments and values in; only :func:`fragment_rows` asks an array's storage for folder names and sizes."""

from __future__ import annotations

import math

import numpy as np
from construct import Container

from ..enums import ArrayType, Datatype, FilterType, Layout
from ..layout import fragment_folders, fragment_states
from ..structs import array_schema as schema_mod
from ..structs.names import parse_timestamped_name

__all__ = ["JSON_VERSION", "Schema", "jsonable", "text", "filters_json", "schema_json", "field_repr", "schema_repr",
           "fragment_repr", "fragment_rows", "meta_json"]

#: the version of every command's --json shape (docs/json-schema/<command>.v<N>.json); bump on a change
JSON_VERSION = 1

_LAYOUTS = {Layout.ROW_MAJOR: "row-major", Layout.COL_MAJOR: "col-major", Layout.GLOBAL_ORDER: "global",
            Layout.UNORDERED: "unordered", Layout.HILBERT: "hilbert"}


def text(value: str | bytes) -> str:
    """Text that any terminal or JSON encoder takes: bytes that are not UTF-8 (as bytes, or smuggled in a str
    as surrogates) become ``\\xNN`` escapes instead of an error."""
    data = value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")
    return data.decode("utf-8", "backslashreplace")


def jsonable(v):
    """``v`` (numpy scalars and arrays, bytes, tuples, datetimes) as plain JSON values: NaN and infinities
    as the strings "NaN", "Infinity", "-Infinity", bytes and str as escaped text, datetimes as ISO text."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist()) if v.dtype.kind not in "mMO" else [jsonable(x) for x in v]
    if isinstance(v, (np.datetime64, np.timedelta64)):
        return str(v)
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, (str, bytes)):
        return text(v)
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return v


def _options(options) -> dict:
    return {k: (v.name if hasattr(v, "name") else jsonable(v)) for k, v in (options or {}).items()
            if not k.startswith("_") and k != "compressor"}


def filters_json(pipeline) -> list[dict]:
    """A filter pipeline as ``[{"type": "ZSTD", "options": {"level": -1}}, ...]`` (None: no pipeline)."""
    return [{"type": FilterType(f.type).name, "options": _options(f.options)}
            for f in (pipeline.filters if pipeline is not None else [])]


def _domain(dim) -> list | None:
    return None if dim.domain is None else jsonable(list(dim.domain))


def schema_json(schema, enumerations: dict) -> dict:
    """An array schema's content as the ``schema`` command prints it (docs/json-schema/schema.v1.json). A
    dimension's filters are those its tiles are filtered with: the coordinate filters where its own list is
    empty (libtiledb 2.17+ and TileDB-Py report them so too)."""
    attrs = {a.name: a for a in schema.attributes}
    current = schema.get("current_domain")
    return {
        "format_version": int(schema_mod.schema_version(schema)),
        "array_type": ArrayType(schema.array_type).name.lower(),
        "cell_order": _LAYOUTS[Layout(schema.cell_order)], "tile_order": _LAYOUTS[Layout(schema.tile_order)],
        "capacity": int(schema.capacity), "allows_duplicates": bool(schema.allows_dups),
        "dimensions": [{"name": d.name, "type": d.datatype.name, "var": d.var, "domain": _domain(raw),
                        "tile": jsonable(raw.tile_extent), "filters": filters_json(d.filters)}
                       for d, raw in zip(schema_mod.dimensions(schema), schema.domain.dimensions)],
        "attributes": [{"name": a.name, "type": a.datatype.name, "cell_val_num": "var" if a.var else a.cell_val_num,
                        "nullable": a.nullable, "fill": jsonable(_fill(a, attrs[a.name])),
                        "enumeration": attrs[a.name].get("enumeration_name") or None,
                        "filters": filters_json(a.filters)} for a in schema_mod.attributes(schema)],
        "coords_filters": filters_json(schema.get("coords_filters")),
        "offsets_filters": filters_json(schema.get("cell_var_offsets_filters")),
        "validity_filters": filters_json(schema.get("cell_validity_filters")),
        "current_domain": (None if current is None or current.empty
                           else [jsonable([r.start, r.end]) for r in current.ndrectangle]),
        "enumerations": [{"name": n, "values": jsonable(list(v))} for n, v in enumerations.items()],
        "dimension_labels": [{"name": lb.name, "dimension": int(lb.dim_index), "uri": lb.uri,
                              "type": Datatype(lb.label_datatype).name, "order": _label_order(lb.label_order)}
                             for lb in schema.get("labels") or []],
    }


def _label_order(order: int) -> str:
    return {1: "increasing", 2: "decreasing"}.get(int(order), "unordered")


def _fill(info, attribute):
    fill = schema_mod.fill_value(attribute)
    if fill is None:
        return None
    if info.var or info.datatype.is_string or info.datatype == Datatype.CHAR:
        return bytes(fill)
    return np.frombuffer(fill.tobytes(), info.datatype.numpy_dtype).tolist()


def _filters_repr(filters: list) -> str:
    inner = ", ".join(f"{f['type']}({', '.join(f'{k}={v!r}' for k, v in f['options'].items())})" for f in filters)
    return f"FilterList([{inner}])"


def field_repr(d: dict, kind: str) -> str:
    """One dimension (``kind`` "Dim") or attribute ("Attr") of :func:`schema_json` as TileDB-Py prints it."""
    if kind == "Dim":
        body = f"name={d['name']!r}, domain={d['domain']}, tile={d['tile']!r}, dtype={d['type']!r}"
        body += ", var=True" if d["var"] else ""
    else:
        var = d["cell_val_num"] == "var"
        body = f"name={d['name']!r}, dtype={d['type']!r}, var={var}, nullable={d['nullable']}"
        body += f", enum_label={d['enumeration']!r}"
    return f"{kind}({body}" + (f", filters={_filters_repr(d['filters'])}" if d["filters"] else "") + ")"


def schema_repr(d: dict) -> str:
    """A schema as :func:`schema_json` describes it, in the layout of TileDB-Py's ``print(A.schema)``."""
    lines = ["ArraySchema(", "  domain=Domain(*["]
    lines += [f"    {field_repr(x, 'Dim')}," for x in d["dimensions"]]
    lines += ["  ]),", "  attrs=["]
    lines += [f"    {field_repr(x, 'Attr')}," for x in d["attributes"]]
    lines += ["  ],", f"  cell_order={d['cell_order']!r},", f"  tile_order={d['tile_order']!r},"]
    if d["array_type"] == "sparse":
        lines += [f"  capacity={d['capacity']},", f"  allows_duplicates={d['allows_duplicates']},"]
    if d["current_domain"]:
        lines.append(f"  current_domain={d['current_domain']},")
    lines += [f"  sparse={d['array_type'] == 'sparse'},", f"  format_version={d['format_version']},", ")"]
    return "\n".join(lines)


def fragment_repr(f) -> str:
    """A fragment (``array.Fragment``) in one line."""
    kind = "dense" if f.dense else "sparse"
    return (f"Fragment(name={f.name!r}, version={f.version}, timestamp_range={f.timestamp_range}, {kind}, "
            f"cell_num={f.cell_num}, non_empty_domain={jsonable(f.non_empty_domain)})")


def fragment_rows(arr) -> list[dict]:
    """One row per fragment an array holds or held (docs/json-schema/fragments.v1.json): the committed
    fragments a read sees ("committed"), those a consolidated fragment replaced, still on disk until vacuumed
    ("consolidated"), those named in a vacuum list and gone ("vacuumed"), and folders without a commit
    ("uncommitted", or "ignored" when an ignore file names their commit)."""
    storage = arr.storage
    folders = fragment_folders(storage, arr.path)
    states = fragment_states(arr._listing, [f.name for f in arr._committed], {f.name for f in arr.fragments},
                             folders)
    rows = []
    for f in arr._committed:
        rows.append({"name": f.name, "format_version": int(f.version), "timestamp_range": list(f.timestamp_range),
                     "type": "dense" if f.dense else "sparse", "cell_num": int(f.cell_num),
                     "non_empty_domain": jsonable(f.non_empty_domain),
                     "bytes": sum(storage.size(p) for p in storage.walk(folders.get(f.name, f.path))),
                     "state": states[f.name]})
    for name in states.keys() - {f.name for f in arr._committed}:
        ts = parse_timestamped_name(name)
        rows.append({"name": name, "format_version": ts.version, "timestamp_range": [ts.t1, ts.t2],
                     "type": None, "cell_num": None, "non_empty_domain": None,
                     "bytes": sum(storage.size(p) for p in storage.walk(folders[name])) if name in folders else 0,
                     "state": states[name]})
    rows.sort(key=lambda r: (r["timestamp_range"], r["name"]))
    return rows


def meta_json(meta: dict) -> dict:
    """Decoded metadata (``Array.meta``) as ``{key: {"type", "dtype", "shape", "value"}}``: type is the
    Python type TileDB-Py gives (int64, float64, ... for numpy scalars, "ndarray", "tuple", "str", "bytes");
    bytes values are text with ``\\xNN`` escapes."""
    out = {}
    for k, v in meta.items():
        entry = {"type": type(v).__name__}
        if isinstance(v, (np.ndarray, np.generic)):
            entry["dtype"] = str(v.dtype)
            entry["type"] = "ndarray" if isinstance(v, np.ndarray) else str(v.dtype)
        if isinstance(v, np.ndarray):
            entry["shape"] = list(v.shape)
        entry["value"] = jsonable(v)
        out[text(k)] = entry
    return out


class Schema(Container):
    """A parsed array schema that prints as TileDB-Py prints ``A.schema`` (enumerations by name; their values
    are in ``Array.enumerations``), not as the whole Container. It is the same Container otherwise."""

    __slots__ = ()

    def __repr__(self) -> str:
        return schema_repr(schema_json(self, {}))

    __str__ = __repr__
