"""Writing groups (group.md, group_file_hierarchy.md; REFERENCE.md §15).

:func:`create_group` writes the empty ``__tiledb_group.tdb`` marker. A :class:`Group` queues member
additions and removals as TileDB's ``Group`` does while open for writing, and :meth:`Group.close` (or leaving
a ``with`` block) writes them as one details file ``__group/__<t>_<t>_<uuid>[_2]``, a generic tile of the
group's format version:

- details version 2 (TileDB 2.15+, format v18+): the members known so far (every details file merged) with
  this session's changes applied by key (name, or URI when unnamed), removals kept with ``deleted`` set
  (``GroupDetailsV2::members_to_serialize``);
- details version 1 (TileDB 2.8-2.14, format v12-v17): the whole member list, removals dropped (a reader
  reads only the latest file).

Before format v12 a group is only its marker: it has no member list to write.

An absolute local member path is stored as a ``file://`` URI, as TileDB's ``URI`` spells it; a relative one
as given, resolved against the group to find whether it is an array or a group.
"""

from __future__ import annotations

import os

from construct import Container, ListContainer

from .. import layout
from ..enums import ObjectType
from ..show.notebook import group_html
from ..storage import storage_for
from ..structs.group import GroupDetails
from ..structs.names import parse_timestamped_name
from ..versions import DEFAULT_WRITE_VERSION, checked_version

__all__ = ["create_group", "Group", "GROUP_DETAILS_SINCE"]

#: the first format version whose groups list their members (TileDB 2.8)
GROUP_DETAILS_SINCE = 12
#: the first format version that writes group details version 2 (TileDB 2.15)
DETAILS_V2_SINCE = 18


def create_group(path, version: int = DEFAULT_WRITE_VERSION, key=None) -> "Group":
    """Make a group at ``path`` (its marker file) and return it open for adding members at ``version``."""
    version = checked_version(version)
    storage, root = storage_for(path)
    if layout.is_group(storage, root) or layout.schema_files(storage, root):
        raise ValueError(f"path: {root} already holds a TileDB group or array")
    storage.commit(layout.group_marker_path(storage, root), b"")
    return Group(path, version=version, key=key)


def _member_key(member) -> str:
    return member.name if member.name is not None else member.uri


def _uri(uri: str, relative: bool) -> str:
    """The URI TileDB stores: relative ones as given, local paths as absolute ``file://`` URIs."""
    if relative or "://" in uri:
        return uri
    return "file://" + os.path.abspath(uri)


def _object_type(storage, group, uri: str, relative: bool) -> ObjectType:
    """Whether ``uri`` (relative to ``group`` when ``relative``) is an array or a group."""
    local = storage.join(group, uri) if relative else uri.removeprefix("file://")
    if "://" in str(local):
        raise ValueError(f"uri: {uri!r} is not local, so its object type cannot be found")
    if layout.is_group(storage, local):
        return ObjectType.GROUP
    if layout.schema_files(storage, local):
        return ObjectType.ARRAY
    raise ValueError(f"uri: {uri!r} is neither a TileDB array nor a group")


class Group:
    """A group open for writing: :meth:`add` and :meth:`remove` queue changes, :meth:`close` writes them.

    ``version`` is the format version of the details files (None: that of the group's latest details
    file, else the newest); ``timestamp`` (ms, None: now) stamps the file :meth:`close` writes."""

    def __init__(self, path, version: int | None = None, key=None, timestamp=None):
        self.storage, self.path = storage_for(path)
        if not layout.is_group(self.storage, self.path):
            raise ValueError(f"path: {self.path} is not a TileDB group (no {layout.GROUP_MARKER})")
        self.key, self.timestamp = key, timestamp
        layout.checked_timestamp(timestamp)
        if version is None:
            version = layout.group_format_version(self.storage, self.path, key) or DEFAULT_WRITE_VERSION
        self.version = checked_version(version)
        self._changes = {}  # member key -> (GroupMember Container, removed), in the order they were queued

    @property
    def members(self) -> list:
        """The members as written so far (GroupMember containers; queued changes not included)."""
        if self.version < GROUP_DETAILS_SINCE:
            return []
        return layout.group_members(self.path, self.key, self.storage)

    def _member(self, uri, object_type, relative, name, deleted):
        v = 2 if self.version >= DETAILS_V2_SINCE else 1
        return Container(version=v, object_type=ObjectType(object_type), relative=bool(relative), uri=uri,
                         name=name, deleted=bool(deleted) if v >= 2 else None)

    def _require_details(self, what: str):
        if self.version < GROUP_DETAILS_SINCE:
            raise ValueError(f"{what}: group members are listed from format version {GROUP_DETAILS_SINCE}; "
                             f"this group is written at v{self.version}")

    def add(self, uri, name: str | None = None, relative: bool = False) -> None:
        """Queue ``uri`` (an array or group; relative to this group when ``relative``) as a member."""
        self._require_details("add")
        if not isinstance(uri, (str, os.PathLike)) or (name is not None and not isinstance(name, str)):
            raise TypeError("add: uri is a str or path, name a str or None")
        uri = _uri(os.fspath(uri), relative)
        member = self._member(uri, _object_type(self.storage, self.path, uri, relative), relative, name, False)
        if _member_key(member) in self._changes:
            raise ValueError(f"add: a member named {_member_key(member)!r} was already added or removed")
        self._changes[_member_key(member)] = (member, False)

    def remove(self, name_or_uri) -> None:
        """Queue the removal of the member named ``name_or_uri``, or with that URI (if only one has it)."""
        self._require_details("remove")
        if not isinstance(name_or_uri, (str, os.PathLike)):
            raise TypeError(f"remove: name_or_uri is a str, not {type(name_or_uri).__name__}")
        wanted = {os.fspath(name_or_uri), _uri(os.fspath(name_or_uri), False)}
        members = self.members
        found = [m for m in members if _member_key(m) in wanted] or [m for m in members if m.uri in wanted]
        if len(found) != 1:
            reason = "no member has that name or URI" if not found else "several members have that URI; remove by name"
            raise ValueError(f"remove: {name_or_uri!r}: {reason}")
        old = found[0]
        if _member_key(old) in self._changes:
            raise ValueError(f"remove: member {_member_key(old)!r} was already added or removed")
        self._changes[_member_key(old)] = (self._member(old.uri, old.object_type, old.relative, old.name, True), True)

    def _details(self) -> list:
        known = {_member_key(m): m for m in self.members}
        if self.version < DETAILS_V2_SINCE:  # v1: the whole list, removals dropped
            for k, (m, removed) in self._changes.items():
                known.pop(k, None)
                if not removed:
                    known[k] = m
            return [self._member(m.uri, m.object_type, m.relative, m.name, False) for m in known.values()]
        known = {k: self._member(m.uri, m.object_type, m.relative, m.name, False) for k, m in known.items()}
        known.update((k, m) for k, (m, _) in self._changes.items())
        return list(known.values())

    def _timestamp(self) -> int:
        """The given timestamp; by default now, but after the latest details file: files of one millisecond
        apply in no fixed order, and two sessions a millisecond apart must not swap."""
        if self.timestamp is not None:
            return layout.checked_timestamp(self.timestamp)
        files = layout.metadata_files(self.storage, self.storage.join(self.path, layout.GROUP_DIR))
        latest = parse_timestamped_name(self.storage.name(files[-1])).t1 if files else -1
        return max(layout.checked_timestamp(None), latest + 1)

    def close(self) -> str | None:
        """Write the queued changes as one details file (none if nothing was queued); returns its path."""
        if not self._changes:
            return None
        members = self._details()
        details_version = 2 if self.version >= DETAILS_V2_SINCE else 1
        data = GroupDetails.build(Container(version=details_version, members=ListContainer(members)),
                                  version=self.version, key=self.key)
        # TileDB 2.8-2.14 named v1 files without a suffix (the v13-v17 corpus groups); 2.15+ append "_2"
        name = layout.new_name(self._timestamp(), 2 if details_version == 2 else None)
        target = layout.group_details_path(self.storage, self.path, name)
        self.storage.commit(target, data)
        self._changes = {}
        return str(target)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()

    def __repr__(self):
        return f"<Group {self.path} v{self.version}: {len(self.members)} members, {len(self._changes)} queued>"

    def _repr_html_(self) -> str:
        return group_html(self)
