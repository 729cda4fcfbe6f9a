"""Reading a group as TileDB-Py's ``tiledb.Group`` does: :func:`open_group` (group.md,
group_file_hierarchy.md; REFERENCE.md §15).

A :class:`GroupReader` lists its members (:meth:`~GroupReader.members`, iteration, ``len``, ``in`` by name,
``[name or index]``), its metadata (``meta``, decoded as TileDB-Py decodes it) and, with
:meth:`~GroupReader.walk`, every member below it, nested groups included. Member URIs are data from the disk:
a relative one is resolved under the group, an absolute one (``file://``, a path, another bucket) is opened
with the storage its scheme names; nothing here writes or deletes through them. A member that is not there
(or that names a storage tdbformat cannot reach) is listed with ``missing`` set and the reason, never
raised: a dataset with one lost array still shows the rest.
"""

from __future__ import annotations

import posixpath
import types
from dataclasses import dataclass, field

from .. import layout as directory
from ..errors import FormatError
from ..filters.encryption import normalize_key
from ..storage import LocalStorage, storage_for
from .cells import tiledb_py_metadata

__all__ = ["open_group", "GroupReader", "Member", "object_type"]


@dataclass(frozen=True)
class Member:
    """One member, as TileDB-Py's ``tiledb.Object``: ``uri`` (absolute, as TileDB-Py shows it), ``type``
    ("array" or "group", as the group records it), ``name`` (None when unnamed); ``relative`` as stored,
    ``stored_uri`` the URI the details file holds; ``key`` the member's place below the opened group
    ("sub/b"); ``storage``/``path`` where its files are read; ``missing``: why it cannot be read, else None."""

    name: str | None
    uri: str
    type: str
    relative: bool
    stored_uri: str
    key: str
    storage: object = field(repr=False)
    path: object = field(repr=False)
    missing: str | None = None


def _absolute_uri(storage, path) -> str:
    """A folder's URI as TileDB spells it: ``file:///abs/path`` for a local one, else the URL itself."""
    if isinstance(storage, LocalStorage):
        return "file://" + posixpath.normpath(str(path.absolute()))  # "g/../x" is x
    return str(path)


def object_type(storage, path) -> str | None:
    """"group", "array" or None (neither) for the folder at ``path``: a group's marker, else a schema of
    any era."""
    if directory.is_group(storage, path):
        return "group"
    if directory.schema_files(storage, path) or directory.dialect(storage, path):
        return "array"
    return None


def _locate(storage, root, m) -> tuple:
    """(storage, path, reason it cannot be read or None) of stored member ``m`` of the group at ``root``."""
    uri = m.uri
    if m.relative:
        return storage, storage.join(root, uri), None
    if uri.startswith("file://") or "://" not in uri:
        return LocalStorage(), LocalStorage().join(uri.removeprefix("file://")), None
    try:
        found, path = storage_for(uri)
    except ValueError as e:  # a scheme tdbformat does not read
        return None, uri, str(e)
    return found, path, None


class GroupReader:
    """A group open for reading (:func:`open_group`)."""

    def __init__(self, storage, root, key=None, where: str = "", window=None):
        if not directory.is_group(storage, root):
            raise FormatError(f"not a TileDB group (no {directory.GROUP_MARKER})", file=str(root))
        self.storage, self.path, self.key, self._where, self.window = storage, root, key, where, window
        self.uri = _absolute_uri(storage, root)
        self._members = None

    def members(self) -> list[Member]:
        """The members in the order the details files give them, each resolved and checked on disk (TileDB
        iterates its hash map of members instead, an order no file records)."""
        if self._members is None:
            self._members = [self._member(m) for m in directory.group_members(self.path, self.key, self.storage,
                                                                              self.window)]
        return list(self._members)

    def _member(self, m) -> Member:
        storage, path, reason = _locate(self.storage, self.path, m)
        kind = m.object_type.name.lower()
        uri = f"{self.uri}/{m.uri}" if m.relative else m.uri  # as TileDB joins it: "g/../x" stays so
        if reason is None:
            found = object_type(storage, path) if storage.is_dir(path) else None
            if found is None:
                reason = f"no {kind} at {uri}"
            elif found != kind:
                reason = f"the group lists an {kind} but {uri} holds a {found}"
        label = m.name if m.name is not None else m.uri.rstrip("/").rsplit("/", 1)[-1]
        key = f"{self._where}/{label}" if self._where else label
        return Member(m.name, uri, kind, bool(m.relative), m.uri, key, storage, path, reason)

    def __iter__(self):
        return iter(self.members())

    def __len__(self) -> int:
        return len(self.members())

    def __contains__(self, name) -> bool:
        """Whether a member has this name (TileDB-Py's ``in``: names only, never URIs)."""
        return any(m.name == name for m in self.members())

    def __getitem__(self, item) -> Member:
        """The member at this index, or named so (TileDB-Py's ``G[i]``, ``G["name"]``)."""
        members = self.members()
        if isinstance(item, int) and not isinstance(item, bool):
            return members[item]
        for m in members:
            if m.name == item:
                return m
        raise KeyError(f"{item!r}: no member of {self.uri} has this name")

    def is_relative(self, name) -> bool:
        """Whether the member named ``name`` is stored relative to the group (TileDB-Py's ``is_relative``)."""
        return self[name].relative

    @property
    def meta(self):
        """The group's metadata as TileDB-Py's ``G.meta`` decodes it (read only)."""
        return types.MappingProxyType(tiledb_py_metadata(directory.read_metadata(self.path, self.key, self.window,
                                                                                 self.storage)))

    def group(self, member: Member) -> "GroupReader":
        """The member group ``member``, open for reading."""
        return GroupReader(member.storage, member.path, self.key, member.key, self.window)

    def walk(self, seen=None):
        """Every member below this group, depth first (a nested group, then its members); a group reached
        twice (a cycle, or two names for one folder) is listed but not entered again."""
        seen = {_absolute_uri(self.storage, self.path)} if seen is None else seen
        for m in self.members():
            yield m
            place = _absolute_uri(m.storage, m.path) if m.missing is None else m.uri
            if m.type == "group" and m.missing is None and place not in seen:
                seen.add(place)
                yield from self.group(m).walk(seen)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def __repr__(self):
        return f"<GroupReader {self.uri}: {len(self)} members>"


def open_group(uri, key=None, storage_options=None, timestamp=None) -> GroupReader:
    """Open the group at ``uri`` (a local path or an fsspec URL) for reading, as ``tiledb.Group(uri)``;
    ``key``: the AES-256-GCM key of its encrypted files (and its members'); ``timestamp`` (ms, or a
    ``(start, end)`` pair): the members and metadata as of then (TileDB's ``sm.group.timestamp_end``)."""
    from . import read_window  # the package's, as open_array's timestamps

    storage, root = storage_for(uri, storage_options)
    return GroupReader(storage, root, normalize_key(key), window=None if timestamp is None else read_window(timestamp))
