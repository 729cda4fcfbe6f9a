"""``convert GROUP DST``: a group and every member below it rewritten at another format version under DST
(:func:`convert_group`). Arrays go through :func:`tdbformat.write.convert.convert`; each group gets its marker,
its metadata files (entries and names kept) and one details file listing the members brought along, relative
URIs kept relative.

Everything is checked before the first byte is written: a member that cannot go to the version (the
feature and the first version that has it), or members and metadata below v12 (groups list members from
TileDB 2.8), is a ValueError naming them all. Members the group names outside itself (an absolute URI, a
``..`` path, another bucket) are read, never written: they are not brought along, and the report says so,
as it does for members lost from disk. The source is only read.

``attrs`` (``convert GROUP DST --attrs a,b``): each array keeps the dimensions and those of the named
attributes it has. A name that is an attribute of no array is refused before anything is written, and so
is what refuses one array's copy (a delete naming an attribute left out). An array that has none of the
names is copied whole, never left out: the report lists it (``copied_whole``), so nothing goes silently.
"""

from __future__ import annotations

import posixpath

from .. import layout as directory
from ..array import Array, open_array
from .convert import _plan, attr_names, _write_metadata, convert, convertible
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


def _check(src: GroupReader, version: int, key, attrs=None, until=None) -> tuple[list, dict]:
    """(the members that cannot go to ``version`` as lines naming them and why, [] when all can;
    ``{member uri: the attributes it keeps, None for all}`` of each array, ``attrs`` shared out)."""
    problems, kept = [], {}
    groups = [src] + [g.group(m) for g, m, ok, _ in _walk(src, set()) if ok and m.type == "group"]
    if version < GROUP_DETAILS_SINCE:
        for g in groups:
            if g.members() or directory.read_metadata(g.path, key, storage=g.storage):
                problems.append(f"{g.uri}: group members and metadata need format version {GROUP_DETAILS_SINCE} "
                                f"or later, not {version}")
    named = set()
    for _, m, ok, _ in _walk(src, set()):
        if ok and m.type == "array":
            array = open_array((m.storage, m.path), key=key, timestamp=until)
            reason = convertible(array, version)
            if reason is not None:
                problems.append(f"{m.key}: {reason}")
            elif attrs is not None and isinstance(array, Array):
                has = {a.name for _, s in array.schemas for a in s.attributes} & attrs
                named |= has
                kept[m.uri] = frozenset(has) or None
                try:
                    _plan(array, version, False, None if until is None else array.window[1], kept[m.uri])
                except ValueError as e:
                    problems.append(f"{m.key}: {e}")
    if attrs is not None and (unknown := sorted(attrs - named)):
        problems.append(f"attrs: {', '.join(map(repr, unknown))}: an attribute of no array of {src.uri}")
    return problems, kept


def _copy(src: GroupReader, dst, version: int, key, max_chunk_size: int, report: dict, timestamp=None,
          kept=None) -> None:
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
                attrs = (kept or {}).get(m.uri)
                convert((m.storage, m.path), target, version, key=key, max_chunk_size=max_chunk_size,
                        timestamp=timestamp, attrs=None if attrs is None else sorted(attrs))
                report["arrays"].append(m.key)
                if kept and attrs is None:
                    report["copied_whole"].append(m.key)
            else:
                _copy(src.group(m), target, version, key, max_chunk_size, report, timestamp, kept)
                report["groups"].append(m.key)
            out.add(m.stored_uri, name=m.name, relative=True)


def convert_group(src, dst, version: int, key=None, max_chunk_size: int = MAX_CHUNK, timestamp=None,
                  attrs=None) -> dict:
    """Rewrite the group at ``src`` and every member below it as a new group at ``dst`` in format
    ``version`` (see the module doc); ``timestamp`` (ms): the groups' members and metadata and every array
    as they were then; ``attrs``: the attributes the arrays keep (see the module doc). Returns ``{"arrays":
    [keys], "groups": [keys], "left_behind": [{"key", "uri", "reason"}]}``, with ``attrs`` also
    ``"copied_whole": [keys]``: the arrays that have none of them."""
    version = check_version(version)
    if attrs is not None and not (attrs := attr_names(attrs)):
        raise ValueError("attrs: none given")
    key = normalize_key(key)
    s_storage, s_root = storage_for(src)
    group = GroupReader(s_storage, s_root, key, window=None if timestamp is None else (0, timestamp))
    d_storage, d_root = storage_for(dst)
    if d_storage.is_file(d_root) or d_storage.is_dir(d_root):
        raise ValueError(f"dst: {dst} exists (convert writes a new group)")
    problems, kept = _check(group, version, key, attrs, timestamp)
    if problems:
        raise ValueError(f"version: {len(problems)} member(s) of {src} cannot go to format version {version}: "
                         + "; ".join(problems))
    left = [{"key": m.key, "uri": m.uri, "reason": why} for _, m, ok, why in _walk(group, set()) if not ok]
    report = {"arrays": [], "groups": [], "_seen": set(), **({"copied_whole": []} if attrs is not None else {})}
    _copy(group, dst, version, key, max_chunk_size, report, timestamp, kept)
    report.pop("_seen")
    return {**report, "left_behind": left}
