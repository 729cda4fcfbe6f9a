"""``history``: what happened to an array or group, one time-ordered list of events read from the names and
contents of its files (nothing else records it):

- ``write``: a fragment a write made (its non-empty domain, cells, format version), on disk or not;
- ``delete``: a delete (or update) commit and its condition;
- ``schema``: a schema file (the first creates the array) and what changed since the one before;
- ``metadata``: a metadata file's puts and deletes (a consolidated one: ``consolidated`` set);
- ``consolidation``: a consolidated fragment (the fragments it replaced), a consolidated commits file, a
  consolidated fragment metadata file;
- ``vacuum``: an ignore file (the commits a vacuum removed) and fragments a vacuum list names that are gone;
- ``group``: a group details file, the members it added and removed.

A consolidation's timestamp is the end of the range it covers (TileDB records no other); fragments and
files that carry one timestamp pair show its start.
"""

from __future__ import annotations

from .. import layout as directory
from ..array import Array, open_array
from ..layout import fragment_folders as _folders
from ..show import jsonable
from ..structs.commits import ConsolidatedCommits, IgnoreFile, condition_text, negate
from ..structs.group import GroupDetails
from ..structs.metadata import ArrayMetadata
from ..structs.names import parse_timestamped_name
from .dataset import objects, walked

__all__ = ["history"]


def _t(name: str) -> tuple[int, int]:
    ts = parse_timestamped_name(name.rsplit("/", 1)[-1].split(".")[0])
    return ts.t1, ts.t2


def _fields(schema) -> dict:
    from ..structs.array_schema import attributes, dimensions

    return {f.name: f for f in dimensions(schema) + attributes(schema)}


def _schema_events(arr) -> list[dict]:
    out, before = [], None
    for name, schema in arr.schemas:
        t = _t(name)[0] if name != directory.LEGACY_SCHEMA else 0
        now = _fields(schema)
        event = {"timestamp": t, "kind": "schema", "name": name, "format_version": int(schema.get("version") or 0)}
        if before is None:
            event["change"] = "created"
        else:
            event.update(added=[n for n in now if n not in before], dropped=[n for n in before if n not in now],
                         enumerations=[e.name for e in schema.get("enumerations") or []],
                         current_domain=jsonable(schema.get("current_domain") is not None))
        out.append(event)
        before = now
    return out


def _fragment_events(arr) -> list[dict]:
    """A write per committed fragment; a consolidation for one that covers a time range, with the fragments
    its vacuum file (named after it) lists until a vacuum removes them."""
    listing, out = arr._listing, []
    replaced = dict(listing.vacuums)  # the .vac's parsed name (the consolidated fragment's) -> names it replaced
    for f in arr._committed:
        t1, t2 = f.timestamp_range
        event = {"timestamp": int(t1), "kind": "write", "fragment": f.name, "timestamp_range": [int(t1), int(t2)],
                 "format_version": int(f.version), "type": "dense" if f.dense else "sparse",
                 "cells": int(f.cell_num), "non_empty_domain": jsonable(f.non_empty_domain)}
        names = replaced.get(parse_timestamped_name(f.name))
        if names or t1 < t2:  # a write stamps one time; a consolidated fragment the range it covers
            event.update(kind="consolidation", timestamp=int(t2), what="fragments", replaced=sorted(names or ()))
        out.append(event)
    on_disk = set(_folders(arr.storage, arr.path))
    gone = sorted({n for _, names in listing.vacuums for n in names} - on_disk)
    if gone:
        out.append({"timestamp": max(_t(n)[1] for n in gone), "kind": "vacuum", "what": "fragments", "removed": gone})
    return out


def _commit_events(arr) -> list[dict]:
    storage, out = arr.storage, []
    dtypes = {n: f.datatype.numpy_dtype for n, f in _fields(arr.schema).items() if not f.var and f.cell_val_num == 1}
    for d in arr._listing.deletes:
        out.append({"timestamp": int(d.timestamp), "kind": "delete", "commit": d.marker,
                    "condition": condition_text(negate(d.condition), dtypes)})
    folder = storage.join(arr.path, directory.COMMITS_DIR)
    for n in storage.list(folder) if storage.is_dir(folder) else []:
        p = storage.join(folder, n)
        if n.endswith(".con"):
            entries = ConsolidatedCommits.parse(storage.read(p, what="consolidated commits"), key=arr.key,
                                                filename=str(p)).entries
            out.append({"timestamp": _t(n)[1], "kind": "consolidation", "what": "commits", "file": n,
                        "commits": [e.uri.rsplit("/", 1)[-1] for e in entries]})
        elif n.endswith(".ign"):
            uris = IgnoreFile.parse(storage.read(p, what="ignore file"), filename=str(p)).uris
            out.append({"timestamp": _t(n)[1], "kind": "vacuum", "what": "commits", "file": n,
                        "removed": [u.rsplit("/", 1)[-1] for u in uris]})
    for p in arr._listing.consolidated_metadata:
        out.append({"timestamp": _t(storage.name(p))[1], "kind": "consolidation", "what": "fragment_metadata",
                    "file": storage.name(p)})
    return out


def _metadata_events(storage, root, key) -> list[dict]:
    folder = storage.join(root, directory.META_DIR)
    if not storage.is_dir(folder):
        return []
    loaded = {str(p) for p in directory.metadata_files(storage, folder)}
    out = []
    for n in storage.list(folder):
        p = storage.join(folder, n)
        if "." in n:  # vacuum lists: their consolidated file tells the story
            continue
        entries = ArrayMetadata.parse(storage.read(p, what="metadata file"), key=key, filename=str(p)).entries
        t1, t2 = _t(n)
        out.append({"timestamp": t1 if t1 == t2 else t2, "kind": "metadata", "file": n, "consolidated": t1 != t2,
                    "put": [jsonable(e.key) for e in entries if not e.deleted],
                    "deleted": [jsonable(e.key) for e in entries if e.deleted],
                    "loaded": str(p) in loaded})
    return out


def _group_events(storage, root, key) -> list[dict]:
    folder = storage.join(root, directory.GROUP_DIR)
    if not storage.is_dir(folder):
        return []
    out, members = [], {}
    for p in directory.metadata_files(storage, folder):
        details = GroupDetails.parse(storage.read(p, what="group details file"), key=key, filename=str(p))
        now = {} if details.version == 1 else dict(members)  # a v1 file lists every member
        for m in details.members:
            k = m.name if m.name is not None else m.uri
            if m.deleted:
                now.pop(k, None)
            else:
                now[k] = m.uri
        out.append({"timestamp": _t(storage.name(p))[0], "kind": "group", "file": storage.name(p),
                    "added": sorted(set(now) - set(members)), "removed": sorted(set(members) - set(now))})
        members = now
    return out


def _array_events(obj, key) -> list[dict]:
    arr = open_array((obj.storage, obj.path), key=key)
    if not isinstance(arr, Array):
        return [{"timestamp": 0, "kind": "write", "fragment": f.name, "format_version": 0}
                for f in getattr(arr, "fragments", [])]
    return (_schema_events(arr) + _fragment_events(arr) + _commit_events(arr)
            + _metadata_events(arr.storage, arr.path, arr.key))


def history(path, key=None, progress=None) -> dict:
    """``{"events": [{"timestamp", "kind", "object", ...}]}`` of the array or group at ``path`` and every
    member below it, oldest first (docs/json-schema/history.v1.json); lost members are ``missing`` events."""
    events = []
    for obj in walked(objects(path, key), progress):
        if obj.missing is not None:
            found = [{"timestamp": None, "kind": "missing", "reason": obj.missing}]
        elif obj.type == "group":
            found = _group_events(obj.storage, obj.path, key) + _metadata_events(obj.storage, obj.path, key)
        else:
            found = _array_events(obj, key)
        events += [{**e, "object": obj.key} for e in found]
    order = {"schema": 0, "group": 0, "write": 1, "consolidation": 2, "metadata": 3, "delete": 4, "vacuum": 5,
             "missing": 6}
    events.sort(key=lambda e: (e["timestamp"] is None, e["timestamp"] or 0, order[e["kind"]], e["object"]))
    return {"events": events}


def fragment_window(path, name: str, key=None) -> tuple[int, int]:
    """The timestamp window that shows the fragment ``name`` of the array at ``path`` alone (``cat
    --fragment``): its own range, when no other fragment a read would see lies in it (a ValueError names
    them, or the fragments there are when none has that name)."""
    arr = open_array(path, key=key)
    if not isinstance(arr, Array):
        raise ValueError(f"--fragment: {path} is from before format version 1: its fragments have no timestamps")
    found = [f for f in arr._committed if f.name == name]
    if not found:
        raise ValueError(f"--fragment: {name!r} is not a committed fragment of {path} "
                         f"({', '.join(f.name for f in arr._committed) or 'none'})")
    window = tuple(int(t) for t in found[0].timestamp_range)
    # a fragment consolidated with timestamps shows only its cells stamped inside the window: the same ones
    others = [f.name for f in arr.live_fragments(window) if f.name != name and not f.has_timestamps]
    if others:
        raise ValueError(f"--fragment: {name} shares its timestamps with {', '.join(others)}: a read cannot "
                         "show it alone")
    return window
