"""``versions``: will my reader open it. For an array, or each array of a group: its format version (the
newest of its schemas and fragments: TileDB refuses a file newer than it), the oldest TileDB and TileDB-Py
releases that open it (:mod:`.releases`), and the oldest version ``tdbformat convert`` can rewrite it at,
with the feature that stops it one lower. With a gate (``max_format=N``, or ``reader="tiledb-py==X.Y.Z"``),
the arrays that need a newer reader, each with the ``tdbformat convert`` command that fixes it.
"""

from __future__ import annotations

import posixpath
import shlex

from construct import Container, ListContainer

from .. import layout as directory
from ..array import Array, open_array
from ..write.convert import convertible
from ..write.create import SCHEMA_FEATURES, _as_container
from .stats import versions as array_versions
from ..filters.encryption import normalize_key
from ..versions import KNOWN_VERSIONS
from .dataset import objects, per_array
from .releases import newest_readable, oldest_tiledb_py, reads_since

__all__ = ["versions", "lowest_convertible"]

SOURCE = ("spec array_format_history.md (the TileDB release each format version was introduced in; v23: the "
          "release that opens it) and TileDB-Py's HISTORY.md (the TileDB each release bundles)")


def lowest_convertible(path, key=None, newest: int | None = None) -> tuple[int, dict | None]:
    """(the oldest format version ``convert`` can rewrite the array at ``path`` (or this open Array) at, why not one lower:
    ``{"version": lowest - 1, "reason"}``, the reason naming the feature and the first version with it;
    None at version 1). A version that lacks a feature the array uses leaves it out of every older one too,
    so the versions are bisected: five checks, not twenty."""
    array = path if isinstance(path, Array) else open_array(path, key=key)
    lo, hi = min(KNOWN_VERSIONS), newest or max(KNOWN_VERSIONS)  # hi converts (the array's own version)
    blocked = None
    while lo < hi:
        mid = (lo + hi) // 2
        reason = convertible(array, mid)
        if reason is None:
            hi = mid
        else:
            lo, blocked = mid + 1, {"version": mid, "reason": reason}
    if blocked is not None and blocked["version"] != hi - 1:  # the last refusal was further down: ask at hi - 1
        blocked = {"version": hi - 1, "reason": convertible(array, hi - 1)}
    if blocked is not None:
        blocked["places"] = _places(array, blocked["reason"])
    return hi, blocked if hi > min(KNOWN_VERSIONS) else None


def _places(array, reason: str) -> list[str]:
    """Where a schema feature that ``reason`` names is used: the attributes that bring it alone, else
    "domain" (the dimensions or the schema's own pipelines and orders); [] for features of no schema."""
    found = [(name, test) for name, _, test in SCHEMA_FEATURES if reason.startswith(f"schema: {name} need")]
    if not found:
        return []
    test, schema = found[0][1], _as_container(array.schema)
    # the schema's enumerations belong to the attributes that name them
    bare = Container(schema, attributes=ListContainer(), enumerations=ListContainer())
    if test(bare):
        return ["domain"]
    return [a.name for a in schema.attributes if test(Container(bare, attributes=ListContainer([a])))]


def _array_row(obj, key) -> dict:
    place = (obj.storage, obj.path)  # the group's storage and its listing
    array = open_array(place, key=key)  # first: on an object store, its one round keeps what versions reads
    doc = array_versions(place, key=key)
    newest = doc["newest_format_version"]
    lowest, blocked = lowest_convertible(array, key, newest)
    return {"format_version": newest, "oldest_tiledb_release": reads_since(newest),
            "oldest_tiledb_py_release": oldest_tiledb_py(newest), "lowest_convertible_version": lowest,
            "lower_blocked_by": blocked, "files": doc["files"]}


def _limit(max_format, reader) -> int | None:
    if max_format is not None and reader is not None:
        raise ValueError("max_format, reader: give one gate, not both")
    if reader is not None:
        return newest_readable(reader)
    if max_format is not None and (isinstance(max_format, bool) or not isinstance(max_format, int)):
        raise TypeError(f"max_format: expected an int, not {type(max_format).__name__}")
    return max_format


def _on(places: list) -> str:
    return f" (on {', '.join(places)})" if places else ""


def _failure(row: dict, limit: int) -> dict:
    place = row["key"] or "."
    if row["lowest_convertible_version"] > limit:
        return {"key": place, "uri": row["uri"], "format_version": row["format_version"], "command": None,
                "reason": f"convert cannot go below v{row['lowest_convertible_version']}: "
                          f"{row['lower_blocked_by']['reason']}" + _on(row['lower_blocked_by']['places'])}
    uri = row["uri"]
    src = posixpath.normpath(uri.removeprefix("file://")) if uri.startswith("file://") else uri
    dst = f"{src.rstrip('/')}.v{limit}"
    return {"key": place, "uri": row["uri"], "format_version": row["format_version"],
            "command": shlex.join(["tdbformat", "convert", src, dst, "--version", str(limit)]), "reason": None}


def versions(path, key=None, max_format: int | None = None, reader: str | None = None, progress=None) -> dict:
    """The ``versions`` document of the array or group at ``path``: ``objects`` (one row per array or group,
    see the module doc), the newest format version of any array, and with a gate (``max_format`` or
    ``reader``) ``gate``: ``{"max_format", "reader", "passed", "failures": [{key, uri, format_version,
    command, reason}]}``, a failure per array newer than the gate allows."""
    limit = _limit(max_format, reader)
    found = objects(path, key)
    rows = per_array(path, lambda obj: _array_row(obj, key), key, progress, found)
    for r, obj in zip(rows, found):
        if r["type"] == "group" and r["missing"] is None:  # what its latest details file was written at
            r["details_format_version"] = directory.group_format_version(obj.storage, obj.path, normalize_key(key))
    newest = max((r["format_version"] for r in rows if "format_version" in r), default=None)
    doc = {"kind": rows[0]["type"], "objects": rows, "newest_format_version": newest,
           "oldest_tiledb_release": reads_since(newest) if newest else None,
           "oldest_tiledb_py_release": oldest_tiledb_py(newest) if newest else None, "source": SOURCE}
    if rows[0]["type"] == "array":
        doc["files"] = rows[0]["files"]
    if limit is not None:
        failures = [_failure(r, limit) for r in rows if r.get("format_version", 0) > limit]
        doc["gate"] = {"max_format": limit, "reader": reader, "passed": not failures, "failures": failures}
    return doc
