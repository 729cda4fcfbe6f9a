"""Group details files (group.md, group_file_hierarchy.md; REFERENCE.md §15, §17 #13).

A group folder holds ``__tiledb_group.tdb`` (an empty marker), ``__meta/`` (metadata, the same files as an
array's: :mod:`.metadata`) and ``__group/``, whose details files ``__<t1>_<t2>_<uuid>[_<details version>]``
are each one generic tile. The details and member versions are the group's own (1 or 2), not the array
format version: a member of version 2 ends in a ``deleted`` flag. The member count is a u64 and the name
is present only when ``name_set`` (the prose spec says otherwise).

:func:`merge_members` merges the details files the way TileDB's ``Group::load_group_details`` does:
a version-1 latest file is read alone; otherwise every file is applied in timestamp order, members keyed
by name (or URI when unnamed), ``deleted`` members removed.
"""

from __future__ import annotations

from construct import Adapter, Flag, If, Int32ul, Int64ul, Rebuild, this

from ..enums import ObjectTypeEnum
from ..errors import FormatError
from ..fields import Counted, Section, Struct, Text, text_field
from .generic_tile import generic_tile

__all__ = ["GroupDetails", "GroupMember", "merge_members"]


class _GroupVersion(Adapter):
    """A group details or member version: 1 or 2, the only ones TileDB reads (group_details.cc)."""

    spec_type = "u32 (1 or 2)"

    def __init__(self):
        super().__init__(Int32ul)

    def _decode(self, obj, context, path):
        if obj not in (1, 2):
            raise FormatError(f"group version {obj} is not 1 or 2", path=path)
        return obj

    def _encode(self, obj, context, path):
        return self._decode(obj, context, path)


# Group member (group.md; REFERENCE.md §15)
GroupMember = Struct(
    "version" / _GroupVersion() * "member version: 1, or 2 (2.15+, adds deleted)",
    "object_type" / ObjectTypeEnum * "GROUP or ARRAY",
    "relative" / Flag * "1 = uri is relative to the group",
    *text_field("uri", Int64ul, "URI of the member"),
    "name_set" / Rebuild(Flag, lambda ctx: ctx.name is not None) * "1 = the member has a name",
    "name_len" / If(this.name_set, Rebuild(Int64ul, lambda ctx: len(ctx.name.encode("utf-8", "surrogateescape"))))
    * "bytes of name (only if name_set)",
    "name" / If(this.name_set, Text(this.name_len)) * "member name, or None",
    "deleted" / If(this.version >= 2, Flag) * "1 = the member was removed (member version 2 only)",
)

# Group details payload (group.md; REFERENCE.md §15)
GroupDetailsPayload = Struct(
    "version" / _GroupVersion() * "group details version: 1 (2.8-2.14) or 2 (2.15+)",
    "member_count" / Rebuild(Int64ul, lambda ctx: len(ctx.members)) * "number of members (u64)",
    # the smallest member: version, type, relative, an empty URI's u64 length, name_set (v1: 15 bytes)
    "members" / Counted(this.member_count, GroupMember, min_size=15) * "the members",
)

#: A whole group details file (a generic tile).
GroupDetails = Section("Group details", "group.md", generic_tile(GroupDetailsPayload), since=12)


def merge_members(details) -> list:
    """The members TileDB lists from details files given in load order (GroupMember containers, in merge
    order): a version-1 latest file is read alone; otherwise members are keyed by name (or URI when
    unnamed), later files overriding earlier ones, ``deleted`` members removed."""
    if details and details[-1].version == 1:
        details = details[-1:]  # a v1 file holds every member: only the latest counts
    members = {}
    for d in details:
        for m in d.members:
            member_key = m.name if m.name is not None else m.uri
            if m.deleted:
                members.pop(member_key, None)
            else:
                members[member_key] = m
    return list(members.values())
