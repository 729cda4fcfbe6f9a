"""Vacuum as TileDB does it (FragmentConsolidator::vacuum, ArrayDirectory::filtered_fragment_uris):
:func:`vacuum` with TileDB-Py's arguments and ``sm.vacuum.mode``.

Fragments mode removes the committed fragments that vacuum files (``.vac``) list, each by its commit first
(``.ok`` v5-11, ``__commits/*.wrt`` v12+) and then its folder, and then the vacuum files. A commit that a
consolidated commits file (``.con``) holds cannot be removed from it: it is listed in an ignore file
(``.ign``) written before anything is removed. A line of a vacuum file names a fragment by its last path
component (its absolute URI before v19 may be of another machine): only fragment folders found in the
array's own folder are ever removed, and a folder that is a link is unlinked, never followed.

Everything is read and checked before the first change: a vacuum, ignore, consolidated commits or delete
file that does not parse is a FormatError, and nothing is written then.
"""

from __future__ import annotations

from .. import directory
from ..directory import COMMITS_DIR, Listing
from ..errors import FormatError
from ..storage import storage_for
from ..structs.commits import ConsolidatedCommits, IgnoreFile, VacuumFile
from ..structs.names import parse_timestamped_name, timestamped_name
from ..array.create import new_uuid
from ..versions import FEATURES

__all__ = ["vacuum", "vacuum_plan"]

_MODES = ("fragments", "commits", "fragment_meta", "array_meta", "group_meta")


def _mode(config, mode) -> str:
    if mode is None:
        items = {} if config is None else dict(config.items()) if hasattr(config, "items") else None
        if items is None:
            raise TypeError(f"config: expected a mapping of TileDB config keys, not {type(config).__name__}")
        mode = str(items.get("sm.vacuum.mode", "fragments"))
    if mode not in _MODES:
        raise ValueError(f"mode: sm.vacuum.mode must be one of {', '.join(_MODES)}, not {mode!r}")
    return mode


def _last(line: str) -> str:
    return line.rstrip("/").rsplit("/", 1)[-1]


def _files(storage, folder, suffix: str) -> list:
    return [storage.join(folder, n) for n in storage.list(folder)
            if n.endswith(suffix) and storage.is_file(storage.join(folder, n))]


def vacuum_plan(uri, key=None) -> dict:
    """What a fragments vacuum of ``uri`` removes and writes, after reading and checking every file it
    uses: ``{"fragments": [folder], "commits": [file], "ignore": [commit names for a new .ign],
    "vacuum_files": [file]}``."""
    storage, root = storage_for(uri)
    version = directory.array_format_version(storage, root, key)  # a FormatError if no schema parses
    listing = Listing.of(storage, root, key)  # parses every .vac, .ign, .con and .del
    commits_dir = storage.join(root, COMMITS_DIR)
    vac_files = _files(storage, root, ".vac") + _files(storage, commits_dir, ".vac")
    named = set()
    for p in vac_files:
        named |= {_last(u) for u in VacuumFile.parse(storage.read(p, what="vacuum file"), filename=str(p)).uris}
    consolidated = set()
    for p in _files(storage, commits_dir, ".con"):
        if storage.name(p) in listing.ignored:
            continue
        entries = ConsolidatedCommits.parse(storage.read(p, what="consolidated commits"), key=key,
                                            filename=str(p)).entries
        consolidated |= {_last(e.uri) for e in entries}
    consolidated -= listing.ignored
    out = {"fragments": [], "commits": [], "ignore": [], "vacuum_files": vac_files}
    for entry in listing.fragments:  # committed fragments found in the array's own folders only
        if entry.name not in named:
            continue
        v12 = FEATURES["fragments_folder"](parse_timestamped_name(entry.name).version)
        commit = f"{entry.name}.wrt" if v12 else f"{entry.name}.ok"
        if v12 and commit in consolidated:
            out["ignore"].append(commit)
        else:
            path = storage.join(commits_dir if v12 else root, commit)
            if storage.is_file(path):
                out["commits"].append(path)
        out["fragments"].append(entry.folder)
    out["version"] = version
    return out


def vacuum(uri, config=None, key=None, mode: str | None = None) -> dict:
    """Vacuum the array at ``uri`` as TileDB-Py's ``tiledb.vacuum`` does (``config``'s ``sm.vacuum.mode``, or
    ``mode``; module doc). Returns what it removed (:func:`vacuum_plan`'s shape)."""
    mode = _mode(config, mode)
    if mode != "fragments":
        from . import metadata_modes
        return metadata_modes.vacuum_mode(uri, mode, key=key)
    storage, root = storage_for(uri)
    found = vacuum_plan(uri, key=key)
    if found["ignore"]:
        _write_ignore_file(storage, root, found["ignore"], found["version"])
    for commit, folder in _pairs(found):
        if commit is not None:
            storage.delete(commit)
        if storage.is_dir(folder) or storage.is_file(folder):
            storage.remove_tree(folder)
    for p in found["vacuum_files"]:
        storage.delete(p)
    return {k: [str(p) for p in v] for k, v in found.items() if k != "version"}


def _pairs(found) -> list:
    """(commit file or None, fragment folder) per fragment: its commit goes first, so a vacuum cut short
    leaves an uncommitted folder, which no reader sees."""
    by_name = {}
    for p in found["commits"]:
        name = str(p).rsplit("/", 1)[-1]
        by_name[name[:name.rfind(".")]] = p
    return [(by_name.get(str(f).rstrip("/").rsplit("/", 1)[-1]), f) for f in found["fragments"]]


def write_ignore_name(commits: list, version: int) -> str:
    first, last = (parse_timestamped_name(c[:c.rfind(".")]) for c in (commits[0], commits[-1]))
    return timestamped_name(first.t1, last.t2, new_uuid(), version) + ".ign"


def _write_ignore_file(storage, root, commits: list, version: int) -> None:
    """ArrayDirectory::write_commit_ignore_file: the commits, relative to the array's URI (which ends in a
    slash there), one a line."""
    if not FEATURES["fragments_folder"](version):
        raise FormatError(f"{root}: a consolidated commits file in an array of format version {version}")
    commits = sorted(commits, key=lambda c: (parse_timestamped_name(c[:c.rfind(".")]).t1, c))
    data = IgnoreFile.build({"uris": [f"{COMMITS_DIR}/{c}" for c in commits]})
    storage.commit(storage.join(root, COMMITS_DIR, write_ignore_name(commits, version)), data)

