"""``du``: where a dataset's bytes are. Every file under the array or group at a path (and under the members
it names elsewhere) is classed once (:func:`files`): the object that owns it (the innermost array or group
folder holding it; a dimension label's array is an object of its own), its fragment, its field, its kind
(``data``, ``offsets``, ``validity``, ``fragment_metadata``, ``commit``, ``schema``, ``metadata``...) and its
state:

- ``live``: what a read at the current time loads, and what the array needs to stay as it is (schemas,
  delete commits, ignore and consolidated-commit files, locks);
- ``reclaimable``: what a vacuum removes: fragments a consolidated one replaced, commits a consolidated
  commits file holds, metadata and group details files a consolidated one replaced, vacuum files;
- ``uncommitted``: folders of writes that never committed (and those an ignore file names);
- ``stray``: files TileDB ignores: names no format kind has here, files a committed fragment does not name,
  folders under a group that it does not list.

:func:`du` sums them by object, fragment, field, kind and state; the total is the bytes on disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from .. import layout as directory
from ..array import Array, open_array
from ..errors import FormatError
from ..layout import fragment_folders as _folders
from ..show import fragment_rows
from ..storage import LocalStorage
from ..structs.commits import ConsolidatedCommits
from ..structs.fragment import data_files
from .validate.tiles import data_fields
from .dataset import dataset_object, objects, walked

__all__ = ["du", "files", "FileUse", "STATES"]

STATES = ("live", "reclaimable", "uncommitted", "stray")
#: fragment_rows' states as du's
_FRAGMENT_STATE = {"committed": "live", "consolidated": "reclaimable", "uncommitted": "uncommitted",
                   "ignored": "uncommitted"}
_KIND = {"array_schema": "schema", "consolidated_fragment_metadata": "fragment_metadata",
         "consolidated_commits": "commit", "delete_commit": "commit", "update_commit": "commit",
         "ignore": "commit", "vacuum": "vacuum"}


@dataclass(frozen=True)
class FileUse:
    """One file: ``path``, ``size``, the ``object`` it belongs to (its key: "" for PATH), that object's
    ``object_type``, ``fragment`` and ``field`` (None where it has none), ``kind``, ``state``."""

    path: str
    size: int
    object: str
    object_type: str
    fragment: str | None
    field: str | None
    kind: str
    state: str


def _place(storage, path) -> str:
    """A folder's identity: local paths normalized ("g/../x" is x), URLs as they are."""
    return os.path.normpath(str(path)) if isinstance(storage, LocalStorage) else str(path).rstrip("/")


def _with_labels(objs: list) -> list:
    """The objects, each array followed by its dimension labels' arrays (``__labels/<name>``)."""
    out = []
    for o in objs:
        out.append(o)
        labels = o.storage.join(o.path, directory.LABELS_DIR)
        if o.type == "array" and o.missing is None and o.storage.is_dir(labels):
            out += _with_labels([dataset_object(f"{o.key}/{directory.LABELS_DIR}/{n}".lstrip("/"), "array",
                                               f"{o.uri}/{directory.LABELS_DIR}/{n}", o.storage,
                                               o.storage.join(labels, n)) for n in o.storage.list(labels)])
    return out


def _owned(obj, roots: set) -> list:
    """The files under ``obj``'s folder that no deeper object's folder holds."""
    own = _place(obj.storage, obj.path)
    out = []
    for p in obj.storage.walk(obj.path):
        parent = _place(obj.storage, obj.storage.parent(p))
        while parent != own and parent not in roots and len(parent) > len(own):
            parent = _place(obj.storage, obj.storage.parent(parent))
        if parent == own:
            out.append(p)
    return out


def _metadata_states(storage, folder) -> dict:
    """``{file: "live" | "reclaimable"}`` of a ``__meta`` or ``__group`` folder: TileDB loads the first."""
    if not storage.is_dir(folder):
        return {}
    loaded = {str(p) for p in directory.metadata_files(storage, folder)}
    return {str(storage.join(folder, n)): "live" if str(storage.join(folder, n)) in loaded else "reclaimable"
            for n in storage.list(folder)}


def _group_files(obj, owned) -> list[FileUse]:
    storage, root = obj.storage, obj.path
    states = {**_metadata_states(storage, storage.join(root, directory.META_DIR)),
              **_metadata_states(storage, storage.join(root, directory.GROUP_DIR))}
    out = []
    for p in owned:
        try:
            kind = directory.file_kind(storage, p)
        except FormatError:
            kind = None
        state = states.get(str(p), "live" if kind == "group_marker" else "stray")
        out.append(FileUse(str(p), storage.size(p), obj.key, "group", None, None,
                           kind if state != "stray" else "unknown", state))
    return out


def _fragment_fields(arr) -> dict:
    """``{data file path: (field, kind)}`` of every committed fragment."""
    out = {}
    for f in arr._committed:
        fields = f.metadata.index_fields
        for idx in data_fields(f):
            info = fields[idx]
            fixed, var, validity = data_files(f.metadata, idx)
            out[str(arr.storage.join(f.path, fixed))] = (info.name, "offsets" if info.var else "data")
            if info.var:
                out[str(arr.storage.join(f.path, var))] = (info.name, "data")
            if info.nullable:
                out[str(arr.storage.join(f.path, validity))] = (info.name, "validity")
    return out


def _consolidated_commits(arr) -> set:
    """Names of the commit files (``.wrt``, ``.del``) that a consolidated commits file holds."""
    storage, out = arr.storage, set()
    folder = storage.join(arr.path, directory.COMMITS_DIR)
    for n in storage.list(folder) if storage.is_dir(folder) else []:
        if n.endswith(".con") and n not in arr._listing.ignored:
            p = storage.join(folder, n)
            out |= {e.uri.rstrip("/").rsplit("/", 1)[-1] for e in ConsolidatedCommits.parse(
                storage.read(p, what="consolidated commits"), key=arr.key, filename=str(p)).entries}
    return out


def _array_files(obj, owned, key) -> list[FileUse]:
    storage = obj.storage
    arr = open_array((obj.storage, obj.path), key=key)
    if not isinstance(arr, Array):  # before format version 1: every file that has a kind is read
        return [_legacy_file(obj, p) for p in owned]
    states = {r["name"]: _FRAGMENT_STATE.get(r["state"], "reclaimable") for r in fragment_rows(arr)}
    folder_of = {str(p): n for n, p in _folders(storage, obj.path).items()}
    fields, held = _fragment_fields(arr), _consolidated_commits(arr)
    meta = _metadata_states(storage, storage.join(obj.path, directory.META_DIR))
    out = []
    for p in owned:
        frag = folder_of.get(str(storage.parent(p)))
        if frag is not None:
            out.append(_fragment_file(obj, storage, p, frag, states.get(frag, "uncommitted"), fields))
            continue
        try:
            kind = directory.file_kind(storage, p)
        except FormatError:
            out.append(FileUse(str(p), storage.size(p), obj.key, "array", None, None, "unknown", "stray"))
            continue
        name, state, frag = storage.name(p), "live", None
        if kind == "commit":
            frag = name.rsplit(".", 1)[0]
            state = "reclaimable" if name in held else states.get(frag, "reclaimable")
        elif kind in ("delete_commit", "update_commit") and name in held:
            state = "reclaimable"
        elif kind in ("metadata", "vacuum"):
            state = meta.get(str(p), "reclaimable")
        elif kind in ("group_marker", "group_details", "data", "fragment_metadata"):
            state = "stray"  # not where an array keeps such a file
        out.append(FileUse(str(p), storage.size(p), obj.key, "array", frag, None, _KIND.get(kind, kind), state))
    return out


def _fragment_file(obj, storage, p, frag, state, fields) -> FileUse:
    field, kind = fields.get(str(p), (None, None))
    if kind is None:
        if storage.name(p) == directory.FRAGMENT_METADATA:
            kind = "fragment_metadata"
        elif state == "live" or state == "reclaimable":
            kind, state = "unknown", "stray"  # a file the committed fragment does not name
        else:
            kind = "data"
    return FileUse(str(p), storage.size(p), obj.key, "array", frag, field, kind, state)


def _legacy_file(obj, p) -> FileUse:
    kind = "lock" if obj.storage.name(p) == directory.LOCK else directory.legacy_file_kind(obj.storage, p)
    parent = obj.storage.parent(p)
    frag = None if _place(obj.storage, parent) == _place(obj.storage, obj.path) else obj.storage.name(parent)
    return FileUse(str(p), obj.storage.size(p), obj.key, "array", frag, None, kind or "unknown",
                   "live" if kind else "stray")


def files(path, key=None, progress=None) -> list[FileUse]:
    """Every file of the dataset at ``path`` once, classed (see the module doc)."""
    found = objects(path, key)
    with found[0].storage.snapshot(prefetch=[found[0].path]):  # the labels' folders too, from one listing
        objs, seen = [], set()
        for o in _with_labels(found):
            place = _place(o.storage, o.path)
            if o.missing is None and place not in seen:
                seen.add(place)
                objs.append(o)
        roots = {_place(o.storage, o.path) for o in objs}
        out = []
        for o in walked(objs, progress):
            owned = _owned(o, roots)
            found = _group_files(o, owned) if o.type == "group" else _array_files(o, owned, key)
            out += [replace(f, path=_place(o.storage, f.path)) for f in found]  # "g/../sib/x" as "sib/x"
        return out


def du(path, key=None, progress=None) -> dict:
    """``{"bytes", "files", "by_state": {state: bytes}, "rows": [{"object", "object_type", "fragment",
    "field", "kind", "state", "files", "bytes"}]}`` of the dataset at ``path``: rows sum the files by all
    six (docs/json-schema/du.v1.json)."""
    found = files(path, key, progress)
    rows = {}
    for f in found:
        k = (f.object, f.object_type, f.fragment, f.field, f.kind, f.state)
        row = rows.setdefault(k, {"object": f.object, "object_type": f.object_type, "fragment": f.fragment,
                                  "field": f.field, "kind": f.kind, "state": f.state, "files": 0, "bytes": 0})
        row["files"] += 1
        row["bytes"] += f.size
    by_state = {s: sum(f.size for f in found if f.state == s) for s in STATES}
    return {"bytes": sum(f.size for f in found), "files": len(found), "by_state": by_state,
            "rows": list(rows.values())}
