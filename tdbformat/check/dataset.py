"""A dataset: the array at a path, or the group there and every member below it (:func:`objects`), so that
each command that reads one array reads a whole group too (``versions``, ``stats``, ``fragments``,
``schema``, ``du``...), a member lost from disk reported in its row, never fatal."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import directory
from ..array.group import GroupReader, object_type
from ..errors import FormatError
from ..filters.encryption import normalize_key
from ..storage import storage_for

__all__ = ["DatasetObject", "objects", "is_group", "per_array"]


@dataclass(frozen=True)
class DatasetObject:
    """One object of a dataset: ``key`` its place ("" for the path itself, "obs", "ms/RNA/X/data"), ``type``
    "array" or "group", ``uri``, ``storage``/``path`` where its files are read, ``missing`` why it cannot be
    read (None when it can)."""

    key: str
    type: str
    uri: str
    storage: object = field(repr=False)
    path: object = field(repr=False)
    missing: str | None = None


def is_group(path) -> bool:
    storage, root = storage_for(path)
    return directory.is_group(storage, root)


def objects(path, key=None) -> list[DatasetObject]:
    """The array at ``path`` alone, or the group there, then every member below it in walk order (nested
    groups entered once)."""
    storage, root = storage_for(path)
    found = object_type(storage, root)
    if found is None:
        raise FormatError("not a TileDB array or group: no schema and no group marker", file=str(root))
    if found == "array":
        return [DatasetObject("", "array", str(path), storage, root)]
    group = GroupReader(storage, root, normalize_key(key))
    return [DatasetObject("", "group", group.uri, storage, root)] + [
        DatasetObject(m.key, m.type, m.uri, m.storage, m.path, m.missing) for m in group.walk()]


def per_array(path, fn, key=None) -> list[dict]:
    """``{"key", "type", "uri", "missing", **fn(obj)}`` for each object of the dataset at ``path``: ``fn``
    runs on the arrays that are there; a group's row and a lost member's carry no more; a member that
    raises FormatError is reported with its error in ``missing``."""
    rows = []
    for obj in objects(path, key):
        row = {"key": obj.key, "type": obj.type, "uri": obj.uri, "missing": obj.missing}
        if obj.type == "array" and obj.missing is None:
            try:
                row.update(fn(obj))
            except FormatError as e:
                if obj.key == "":
                    raise
                row["missing"] = f"unreadable: {e}"
        rows.append(row)
    return rows
