"""Timestamped names of fragments, commits and consolidated files (timestamped_name.md; REFERENCE.md §3.1).

Three naming eras:

- v1-2: ``__<uuid>_<t>`` (consolidated: ``__<uuid>_<t1>_<t2>``); TileDB reads every such name as one
  timestamp range ``[t, t]`` taken from the last token (REFERENCE §17 #33), and the version from the file;
- v3-4: ``__<t1>_<t2>_<uuid>``, no version;
- v5+: ``__<t1>_<t2>_<uuid>_<v>``, ``v`` the format version that wrote it.

An extension after the last ``.`` (``.ok``, ``.wrt``, ``.del``, ``.meta``...) and leading folders are ignored.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from ..errors import FormatError

__all__ = ["TimestampedName", "parse_timestamped_name", "timestamped_name"]

_UUID = r"[0-9a-fA-F]{32}"
_V5 = re.compile(rf"__(\d+)_(\d+)_({_UUID})_(\d+)")
_V3 = re.compile(rf"__(\d+)_(\d+)_({_UUID})")
_V1 = re.compile(rf"__({_UUID})_(\d+)(?:_(\d+))?")


class TimestampedName(NamedTuple):
    """A parsed timestamped name: the timestamp range in ms, the uuid, and the version when the name has one."""

    t1: int
    t2: int
    uuid: str
    version: int | None = None


def parse_timestamped_name(name: str) -> TimestampedName:
    """Parse a fragment, commit or consolidated-file name (a bare name or a path ending in one)."""
    return _parse_base(str(name).rstrip("/").rsplit("/", 1)[-1])


@functools.lru_cache(maxsize=1 << 16)  # an open asks twice for every fragment, each read again
def _parse_base(base: str) -> TimestampedName:
    stem = base.rsplit(".", 1)[0] if "." in base else base
    if m := _V5.fullmatch(stem):
        return TimestampedName(int(m[1]), int(m[2]), m[3], int(m[4]))
    if m := _V3.fullmatch(stem):
        return TimestampedName(int(m[1]), int(m[2]), m[3])
    if m := _V1.fullmatch(stem):
        t = int(m[3] or m[2])  # FragmentID: t1 = t2 = the last token
        return TimestampedName(t, t, m[1])
    raise FormatError(f"{base!r} is not a timestamped name (__t1_t2_uuid_v, __t1_t2_uuid or __uuid_t)")


def timestamped_name(t1: int, t2: int, uuid: str, version: int | None = None) -> str:
    """The v3+ name of a timestamp range and uuid, with the ``_<v>`` suffix when a version is given."""
    return f"__{t1}_{t2}_{uuid}" + ("" if version is None else f"_{version}")
