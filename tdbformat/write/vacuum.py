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

from .. import layout as directory
from ..layout import COMMITS_DIR, Listing
from ..errors import FormatError
from ..storage import storage_for
from ..structs.commits import ConsolidatedCommits, IgnoreFile, VacuumFile
from ..structs.names import parse_timestamped_name, timestamped_name
from .create import new_uuid
from ..versions import FEATURES

__all__ = ["vacuum", "vacuum_plan", "delete_fragments"]

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


def _consolidated_commits(storage, root, listing, key) -> set:
    """Names of the commit files that a live consolidated commits file (.con) holds, minus ignored ones."""
    out = set()
    for p in _files(storage, storage.join(root, COMMITS_DIR), ".con"):
        if storage.name(p) in listing.ignored:
            continue
        entries = ConsolidatedCommits.parse(storage.read(p, what="consolidated commits"), key=key,
                                            filename=str(p)).entries
        out |= {_last(e.uri) for e in entries}
    return out - listing.ignored


def _removal(storage, root, listing, names, key) -> dict:
    """What removing the committed fragments ``names`` takes: their folders (as the listing found them, in
    the array's own folders), the commit files to delete, and the commits a .con holds (for a new .ign)."""
    consolidated = _consolidated_commits(storage, root, listing, key)
    commits_dir = storage.join(root, COMMITS_DIR)
    out = {"fragments": [], "commits": [], "ignore": []}
    for entry in listing.fragments:
        if entry.name not in names:
            continue
        v12 = FEATURES["fragments_folder"](parse_timestamped_name(entry.name).version)
        commit = f"{entry.name}.wrt" if v12 else f"{entry.name}.ok"
        if v12 and commit in consolidated:
            out["ignore"].append(commit)
        else:
            path = storage.join(commits_dir if v12 else root, commit)
            if storage.is_file(path) and path not in out["commits"]:
                out["commits"].append(path)
        out["fragments"].append(entry.folder)
    return out


def vacuum_plan(uri, key=None) -> dict:
    """What a fragments vacuum of ``uri`` removes and writes, after reading and checking every file it
    uses: ``{"fragments": [folder], "commits": [file], "ignore": [commit names for a new .ign],
    "vacuum_files": [file]}``."""
    storage, root = storage_for(uri)
    version = directory.array_format_version(storage, root, key)  # a FormatError if no schema parses
    listing = Listing.of(storage, root, key)  # parses every .vac, .ign, .con and .del
    vac_files = _files(storage, root, ".vac") + _files(storage, storage.join(root, COMMITS_DIR), ".vac")
    named = set()
    for p in vac_files:
        named |= {_last(u) for u in VacuumFile.parse(storage.read(p, what="vacuum file"), filename=str(p)).uris}
    out = _removal(storage, root, listing, named, key)
    out.update(vacuum_files=vac_files, version=version)
    return out


def _remove(storage, root, found) -> dict:
    """The .ign first, then each fragment's commit and folder, then the vacuum files."""
    if found["ignore"]:
        _write_ignore_file(storage, root, found["ignore"], found["version"])
    for commit, folder in _pairs(found):
        if commit is not None:
            storage.delete(commit)
        if storage.is_dir(folder) or storage.is_file(folder):
            storage.remove_folder(folder)
    for p in found.get("vacuum_files", []):
        storage.delete(p)
    return {k: [str(p) for p in v] for k, v in found.items() if k != "version"}


def delete_fragments(uri, timestamp_start, timestamp_end, key=None) -> dict:
    """Remove the fragments written wholly within [``timestamp_start``, ``timestamp_end``] (ms), as TileDB-Py's
    ``Array.delete_fragments`` (Array::delete_fragments): each commit, then folder; a commit a .con holds is
    listed in a new .ign first. Fragments a vacuum file already replaces are left to :func:`vacuum`."""
    start = directory.checked_timestamp(timestamp_start, "timestamp_start")
    end = directory.checked_timestamp(timestamp_end, "timestamp_end")
    storage, root = storage_for(uri)
    version = directory.array_format_version(storage, root, key)
    listing = Listing.of(storage, root, key)
    window = (start, end)
    gone = {n for ts, names in listing.vacuums if directory.overlaps(ts.t1, ts.t2, window, False) for n in names}
    names = {e.name for e in listing.fragments if e.name not in gone and directory.overlaps(
        *parse_timestamped_name(e.name)[:2], window, False)}
    found = _removal(storage, root, listing, names, key)
    found["version"] = version
    return _remove(storage, root, found)


def vacuum(uri, config=None, key=None, mode: str | None = None) -> dict:
    """Vacuum the array at ``uri`` as TileDB-Py's ``tiledb.vacuum`` does (``config``'s ``sm.vacuum.mode``, or
    ``mode``; module doc). Returns what it removed (:func:`vacuum_plan`'s shape)."""
    mode = _mode(config, mode)
    if mode != "fragments":
        from . import metadata_modes
        return metadata_modes.vacuum_mode(uri, mode, key=key)
    storage, root = storage_for(uri)
    return _remove(storage, root, vacuum_plan(uri, key=key))


def _pairs(found) -> list:
    """(commit file or None, fragment folder) per fragment: its commit goes first, so a vacuum cut short
    leaves an uncommitted folder, which no reader sees."""
    by_name = {}
    for p in found["commits"]:
        name = str(p).rsplit("/", 1)[-1]
        by_name[name[:name.rfind(".")]] = p
    # (a name the listing found twice, in the array folder and a __fragments folder: its commit goes once)
    return [(by_name.pop(str(f).rstrip("/").rsplit("/", 1)[-1], None), f) for f in found["fragments"]]


def _ignore_name(commits: list, version: int) -> str:
    first, last = (parse_timestamped_name(c[:c.rfind(".")]) for c in (commits[0], commits[-1]))
    return timestamped_name(first.t1, last.t2, new_uuid(), version) + ".ign"


def _write_ignore_file(storage, root, commits: list, version: int) -> None:
    """ArrayDirectory::write_commit_ignore_file: the commits, relative to the array's URI (which ends in a
    slash there), one a line."""
    if not FEATURES["fragments_folder"](version):
        raise FormatError(f"{root}: a consolidated commits file in an array of format version {version}")
    commits = sorted(commits, key=lambda c: (parse_timestamped_name(c[:c.rfind(".")]).t1, c))
    data = IgnoreFile.build({"uris": [f"{COMMITS_DIR}/{c}" for c in commits]})
    storage.commit(storage.join(root, COMMITS_DIR, _ignore_name(commits, version)), data)

