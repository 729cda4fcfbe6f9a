"""A dataset: the array at a path, or the group there and every member below it (:func:`objects`), so that
each command that reads one array reads a whole group too (``versions``, ``stats``, ``fragments``,
``schema``, ``du``...), a member lost from disk reported in its row, never fatal."""

from __future__ import annotations

from .. import layout as directory
from ..array.group import GroupReader, Member, object_type
from ..errors import FormatError
from ..filters.encryption import normalize_key
from ..storage import storage_for

__all__ = ["dataset_object", "objects", "is_group", "per_array", "counted", "walked"]


def dataset_object(key: str, type: str, uri: str, storage, path, missing: str | None = None) -> Member:
    """One object of a dataset, as a :class:`~tdbformat.array.group.Member`: ``key`` its place ("" for the
    path itself, "obs", "ms/RNA/X/data"), ``type`` "array" or "group", ``storage``/``path`` where its files
    are read, ``missing`` why it cannot be read (None when it can)."""
    return Member(None, uri, type, False, uri, key, storage, path, missing)


def is_group(path) -> bool:
    storage, root = storage_for(path)
    return directory.is_group(storage, root)


def objects(path, key=None) -> list[Member]:
    """The array at ``path`` alone, or the group there, then every member below it in walk order (nested
    groups entered once)."""
    storage, root = storage_for(path)
    found = object_type(storage, root)
    if found is None:
        raise FormatError("not a TileDB array or group: no schema and no group marker", file=str(root))
    if found == "array":
        return [dataset_object("", "array", str(path), storage, root)]
    with storage.snapshot(prefetch=[root]):  # an object store: one listing of the whole tree
        group = GroupReader(storage, root, normalize_key(key))
        return [dataset_object("", "group", group.uri, storage, root)] + list(group.walk())


def counted(items: list, progress=None):
    """``items``, telling ``progress`` (a callback ``(done=0, total=0)``, or None) their number, then each."""
    if progress is not None:
        progress(total=len(items))
    for item in items:
        yield item
        if progress is not None:
            progress(done=1)


def walked(found: list, progress=None):
    """The objects ``found`` (:func:`objects`), each in turn (see :func:`counted`), read through one view of
    the dataset's folders: on an object store one recursive listing of the whole group, not a listing per
    array and a HEAD per file (every function reading an object passes it ``(obj.storage, obj.path)``).
    What an open fetched ahead for one object is dropped before the next."""
    with found[0].storage.snapshot(prefetch=[found[0].path]):
        for obj in counted(found, progress):
            try:
                yield obj
            finally:
                obj.storage.forget_kept()


def per_array(path, fn, key=None, progress=None, found: list | None = None) -> list[dict]:
    """``{"key", "type", "uri", "missing", **fn(obj)}`` for each object of the dataset at ``path``: ``fn``
    runs on the arrays that are there; a group's row and a lost member's carry no more; a member that
    raises FormatError is reported with its error in ``missing``. ``progress(done=, total=)`` hears of each
    object (a bar over a large group). ``found``: :func:`objects` of ``path``, when the caller has them.
    ``fn`` reads each array through ``(obj.storage, obj.path)`` (:func:`walked`)."""
    rows = []
    for obj in walked(objects(path, key) if found is None else found, progress):
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
