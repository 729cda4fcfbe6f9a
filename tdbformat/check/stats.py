"""``stats`` and ``versions``: what an array's bytes are spent on, and which TileDB can read it.

:func:`stats`: per field file (fixed, offsets, var, validity) and per filter pipeline, the bytes on disk, the
bytes in memory (unfiltered, from the fragment metadata: cells times the cell size, or the recorded var tile
sizes), the compression ratio, the tile count and the distribution of tile sizes on disk; per fragment, the
cell count, the time range and the format version. :func:`versions`: the format version of every schema and
fragment, and the oldest TileDB release that reads them all (:data:`tdbformat.versions.FIRST_RELEASE`).
"""

from __future__ import annotations

import numpy as np

from .. import layout
from ..array.fragment import load_fragments
from ..errors import UnsupportedError
from ..show import filters_json
from ..storage import storage_for
from ..structs.array_schema import schema_version
from .validate.tiles import data_fields, field_offsets
from ..versions import FIRST_RELEASE

__all__ = ["stats", "versions"]

_FILES = {"": "fixed", "_var": "var", "_validity": "validity"}


def _open(path, key):
    """(storage, schemas, every committed fragment, names of those a read now sees)."""
    from ..array import read_window
    from ..enums import ArrayType
    from ..filters.encryption import normalize_key

    storage, root = storage_for(path)
    key = normalize_key(key)
    schemas = layout.load_schemas(storage, root, key)
    listing = layout.Listing.of(storage, root, key)
    frags = load_fragments(storage, listing, dict(schemas), key)
    live = listing.live(read_window(None), sparse=schemas[-1][1].array_type != ArrayType.DENSE) if schemas else set()
    return storage, schemas, frags, live


def _pipeline_text(pipeline) -> str:
    return " → ".join(f["type"] + (f"({', '.join(f'{k}={v}' for k, v in f['options'].items())})" if f["options"]
                                   else "") for f in filters_json(pipeline)) or "none"


def _memory(frag, idx, kind) -> int:
    """Unfiltered bytes of one data file, from the metadata alone."""
    info, cells = frag.metadata.index_fields[idx], int(frag.cell_num)
    if kind == "_validity":
        return cells
    if kind == "_var":
        return int(np.sum(np.asarray(frag.metadata.tile_var_sizes[idx], np.uint64)))
    return cells * (8 if info.var else info.datatype.size * info.cell_val_num)


def _pipeline(frag, idx, kind):
    info = frag.metadata.index_fields[idx]
    if kind == "_validity":
        return frag.schema.cell_validity_filters
    if info.var and kind == "":
        return frag.schema.cell_var_offsets_filters
    return info.filters


def _distribution(sizes: np.ndarray) -> dict:
    if not len(sizes):
        return {"min": None, "median": None, "max": None, "mean": None}
    return {"min": int(sizes.min()), "median": float(np.median(sizes)), "max": int(sizes.max()),
            "mean": float(sizes.mean())}


def _ratio(memory: int, disk: int):
    return round(memory / disk, 3) if disk else None


def stats(path, key=None) -> dict:
    """``{"fragments": [...], "fields": [...], "filters": [...]}`` of the array at ``path``: every committed
    fragment, its state "live" (a read now sees it) or "reclaimable" (a consolidated fragment replaced it and a
    vacuum removes it); fields and filters count the live ones alone, the tiles and bytes a read touches."""
    storage, _, frags, live = _open(path, key)
    rows, fragments = {}, []
    for frag in frags:
        fragments.append({"name": frag.name, "format_version": int(frag.version),
                          "type": "dense" if frag.dense else "sparse", "timestamp_range": list(frag.timestamp_range),
                          "cell_num": int(frag.cell_num), "tile_num": int(frag.tile_num()),
                          "state": "live" if frag.name in live else "reclaimable"})
        if frag.name not in live:
            continue
        for idx in data_fields(frag):
            info = frag.metadata.index_fields[idx]
            for kind in [""] + (["_var"] if info.var else []) + (["_validity"] if info.nullable else []):
                offsets, size = field_offsets(frag, kind, idx)
                file = "offsets" if info.var and kind == "" else _FILES[kind]
                row = rows.setdefault((info.name, file), {"field": info.name, "file": file, "filters": _pipeline_text(
                    _pipeline(frag, idx, kind)), "tiles": 0, "disk_bytes": 0, "memory_bytes": 0, "_sizes": []})
                row["tiles"] += len(offsets)
                row["disk_bytes"] += size
                row["memory_bytes"] += _memory(frag, idx, kind)
                row["_sizes"].append(np.diff(np.append(offsets.astype(np.int64), size)))
    fields = []
    for row in rows.values():
        sizes = np.concatenate(row.pop("_sizes")) if row["_sizes"] else np.empty(0, np.int64)
        fields.append({**row, "ratio": _ratio(row["memory_bytes"], row["disk_bytes"]), "tile_bytes": _distribution(sizes)})
    filters = {}
    for r in fields:
        f = filters.setdefault(r["filters"], {"filters": r["filters"], "fields": [], "disk_bytes": 0, "memory_bytes": 0})
        f["fields"].append(f"{r['field']} ({r['file']})")
        f["disk_bytes"] += r["disk_bytes"]
        f["memory_bytes"] += r["memory_bytes"]
    for f in filters.values():
        f["ratio"] = _ratio(f["memory_bytes"], f["disk_bytes"])
    return {"fragments": fragments, "fields": fields, "filters": list(filters.values())}


def versions(path, key=None) -> dict:
    """The format version of every schema and committed fragment, the newest of them, and the oldest TileDB
    release that reads the array (the first release of that newest version)."""
    storage, root = storage_for(path)
    if found := layout.dialect(storage, root):
        raise UnsupportedError(f"{root}: an array of the {found} dialect, from before format version 1, has no format "
                               "version: tdbformat reads it (`tdbformat cat`, `open_array`; `tdbformat convert` "
                               "rewrites it at a format version), and so does TileDB up to 1.3; no later TileDB does")
    _, schemas, frags, _ = _open(path, key)
    found = ([{"kind": "schema", "name": name, "format_version": int(schema_version(s))} for name, s in schemas]
             + [{"kind": "fragment", "name": f.name, "format_version": int(f.version)} for f in frags])
    newest = max(r["format_version"] for r in found)
    return {"files": found, "newest_format_version": newest, "oldest_tiledb_release": FIRST_RELEASE.get(newest),
            "source": "spec array_format_history.md: the TileDB release each format version was introduced in"}

