"""``convert GROUP DST``: a group and every member below it rewritten at another format version under DST
(:func:`convert_group`). Arrays go through :func:`tdbformat.write.convert.convert`; each group gets its marker,
its metadata files (entries and names kept) and one details file listing the members brought along, relative
URIs kept relative.

Everything is checked before the first byte is written: a member that cannot go to the version (the
feature and the first version that has it), or members and metadata below v12 (groups list members from
TileDB 2.8), is a ValueError naming them all. Members the group names outside itself (an absolute URI, a
``..`` path, another bucket) are read, never written: they are not brought along, and the report says so,
as it does for members lost from disk. The source is only read.
"""

from __future__ import annotations

import posixpath

from .. import layout as directory
from ..array import open_array
from .convert import _write_metadata, convert, convertible
from .create import check_version
from ..array.group import GroupReader
from ..filters.encryption import normalize_key
from ..filters.pipeline import MAX_CHUNK
from .groups import GROUP_DETAILS_SINCE, Group, create_group
from ..storage import storage_for

__all__ = ["convert_group"]


def _inside(stored_uri: str) -> bool:
    """Whether a relative member URI stays below its group (``a``, ``x/y``; not ``..``, ``../x``, ``/x``)."""
    p = posixpath.normpath(stored_uri)
    return not (p.startswith("..") or p.startswith("/") or p == ".")


def _walk(group: GroupReader, seen: set):
    """(group, member, brought along: bool, why not) of every member below ``group``, depth first."""
    for m in group.members():
        if m.missing is not None:
            yield group, m, False, m.missing
        elif not m.relative or not _inside(m.stored_uri):
            yield group, m, False, f"outside the group ({m.stored_uri}): convert it on its own"
        elif m.uri in seen:
            yield group, m, False, "already brought along under another name"
        else:
            seen.add(m.uri)
            yield group, m, True, None
            if m.type == "group":
                yield from _walk(group.group(m), seen)


def _check(src: GroupReader, version: int, key) -> list:
    """The members that cannot go to ``version``, as lines naming them and why; [] when all can."""
    problems = []
    groups = [src] + [g.group(m) for g, m, ok, _ in _walk(src, set()) if ok and m.type == "group"]
    if version < GROUP_DETAILS_SINCE:
        for g in groups:
            if g.members() or directory.read_metadata(g.path, key, storage=g.storage):
                problems.append(f"{g.uri}: group members and metadata need format version {GROUP_DETAILS_SINCE} "
                                f"or later, not {version}")
    for _, m, ok, _ in _walk(src, set()):
        if ok and m.type == "array":
            reason = convertible(open_array(m.path, key=key), version)
            if reason is not None:
                problems.append(f"{m.key}: {reason}")
    return problems


def _copy(src: GroupReader, dst, version: int, key, max_chunk_size: int, report: dict, timestamp=None) -> None:
    """``src`` as a new group at ``dst``: members first (a details file names what exists), then its list."""
    create_group(dst, version, key=key)
    storage, root = storage_for(dst)
    meta = src.storage.join(src.path, directory.META_DIR)
    for p in directory.metadata_files(src.storage, meta, src.window) if src.storage.is_dir(meta) else []:
        _write_metadata(src.storage, dst, p, version, key)
    if version < GROUP_DETAILS_SINCE:
        return
    with Group(dst, version=version, key=key) as out:
        for m in src.members():
            if m.missing is not None or not m.relative or not _inside(m.stored_uri) or m.uri in report["_seen"]:
                continue
            report["_seen"].add(m.uri)
            target = storage.join(root, *posixpath.normpath(m.stored_uri).split("/"))
            if m.type == "array":
                convert(m.path, target, version, key=key, max_chunk_size=max_chunk_size, timestamp=timestamp)
                report["arrays"].append(m.key)
            else:
                _copy(src.group(m), target, version, key, max_chunk_size, report, timestamp)
                report["groups"].append(m.key)
            out.add(m.stored_uri, name=m.name, relative=True)


def convert_group(src, dst, version: int, key=None, max_chunk_size: int = MAX_CHUNK, timestamp=None) -> dict:
    """Rewrite the group at ``src`` and every member below it as a new group at ``dst`` in format
    ``version`` (see the module doc); ``timestamp`` (ms): the groups' members and metadata and every array
    as they were then. Returns ``{"arrays": [keys], "groups": [keys], "left_behind":
    [{"key", "uri", "reason"}]}``."""
    version = check_version(version)
    key = normalize_key(key)
    s_storage, s_root = storage_for(src)
    group = GroupReader(s_storage, s_root, key, window=None if timestamp is None else (0, timestamp))
    d_storage, d_root = storage_for(dst)
    if d_storage.is_file(d_root) or d_storage.is_dir(d_root):
        raise ValueError(f"dst: {dst} exists (convert writes a new group)")
    problems = _check(group, version, key)
    if problems:
        raise ValueError(f"version: {len(problems)} member(s) of {src} cannot go to format version {version}: "
                         + "; ".join(problems))
    left = [{"key": m.key, "uri": m.uri, "reason": why} for _, m, ok, why in _walk(group, set()) if not ok]
    report = {"arrays": [], "groups": [], "_seen": set()}
    _copy(group, dst, version, key, max_chunk_size, report, timestamp)
    report.pop("_seen")
    return {**report, "left_behind": left}
