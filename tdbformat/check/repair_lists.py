"""``repair``'s plans for the lists that name fragments and commits, and for folders no marker commits.

- A vacuum list (``.vac``): its lines that name a fragment folder of this array are kept, matched by the path
  after the array's URI as TileDB matches them (ArrayDirectory::get_full_vac_uri), so the absolute lines of
  another machine (before v19) count; the rest go (fragments that are gone, lines TileDB refuses). What is
  left is written as TileDB writes it at the list's version (relative from v19, this array's URI before); a
  list left empty is set aside.
- A consolidated commits file (``.con``): its entries that commit a fragment whose folder is gone go (TileDB
  fails on them: "Cannot get file size"); delete commits, whose bytes it holds, and ignored entries stay.
- An ignore file (``.ign``): its lines that name no commit (no file, no ``.con`` entry) go.

A rewritten list is a new file (same timestamps, a new uuid) put beside the old one, which is then set aside:
either state reads. ``commit_complete``: a fragment folder no marker commits is committed when a copy of it,
committed beside the array's schemas, validates without an error.
"""

from __future__ import annotations

import tempfile

from construct import Container, ListContainer

from .. import layout
from ..errors import FormatError
from ..storage import storage_for
from ..structs.commits import ConsolidatedCommits, IgnoreFile, VacuumFile
from ..structs.names import parse_timestamped_name, timestamped_name
from .validate import validate
from ..write.create import new_uuid
from ..write.metadata_modes import commit_state, metadata_vacuum_lines
from ..write.repair import fragment_parts, fragment_version, parts_below, stage
from ..write.vacuum_lists import vacuum_lines

__all__ = ["list_rewrites", "uncommitted_complete"]


def _renamed(name: str) -> str:
    """``name`` with a new uuid: same timestamps, version and suffix."""
    stem, _, suffix = name.rpartition(".")
    ts = parse_timestamped_name(stem)
    return timestamped_name(ts.t1, ts.t2, new_uuid(), ts.version) + "." + suffix


def _vacuum(storage, root, dest, lines, folders, version) -> list:
    parts = []
    for line in lines:
        name = layout.name_from_uri(line)
        if not layout.unreadable_list_line(line) and name in folders:
            where = parts_below(storage, root, folders[name])
            if where not in parts:
                parts.append(where)
    return vacuum_lines(*dest, parts, version)


def list_rewrites(storage, root, key, version, gone=frozenset(), dest=None) -> list[tuple]:
    """(path parts of a list, what it becomes: None to set it aside, else (new parts, bytes), why) for each
    vacuum list, consolidated commits and ignore file of the array that is not consistent with its folders
    (``gone``: fragment names this repair sets aside; ``dest``: (storage, path) where the array will be, for
    absolute vacuum lines). Lists that do not parse are left to their findings."""
    dest = dest or (storage, root)
    out = _metadata_vacuums(storage, root, version, dest)
    if version is None:  # a group: only its metadata has lists
        return out
    try:
        listing = layout.Listing.of(storage, root, key)
        cons, ignored, names = commit_state(storage, root, key)
    except FormatError:
        return []
    folders = {n: p for n, p in layout.fragment_folders(storage, root).items() if n not in gone}
    held = {layout.name_from_uri(e.uri) for _, entries in cons for e in entries} | set(names) | {
        n for n in storage.list(root) if n.endswith(".ok")}
    for path, lines in listing.lists.items():
        parts = parts_below(storage, root, path)
        if path.endswith(".vac"):
            own = parse_timestamped_name(path).version or version
            kept = _vacuum(storage, root, dest, lines, folders, own)
            why = f"{len(lines) - len(kept)} of {len(lines)} line(s) name no fragment folder of this array (or are " \
                  f"lines TileDB refuses); the rest written as TileDB writes them at v{own}"
            data = VacuumFile.build({"uris": kept})
        elif path.endswith(".ign"):
            kept = [u for u in lines if layout.name_from_uri(u) in held]
            why = f"{len(lines) - len(kept)} of {len(lines)} line(s) name no commit"
            data = IgnoreFile.build({"uris": kept})
        else:
            continue
        if kept != list(lines) or not kept:
            out.append((parts, (parts[:-1] + (_renamed(parts[-1]),), data) if kept else None, why))
    for path, entries in cons:
        kept = [Container(uri=e.uri, delete=e.delete) for e in entries
                if _keeps(layout.name_from_uri(e.uri), ignored, folders)]
        if len(kept) != len(entries):
            data = ConsolidatedCommits.build(Container(entries=ListContainer(kept)), key=key)
            parts = parts_below(storage, root, path)
            out.append((parts, (parts[:-1] + (_renamed(parts[-1]),), data) if kept else None,
                        f"{len(entries) - len(kept)} of {len(entries)} entries commit a fragment whose folder is "
                        "gone"))
    return out


def _metadata_vacuums(storage, root, version, dest) -> list[tuple]:
    """:func:`list_rewrites` of the vacuum lists of ``__meta`` (of an array, or a group: ``version`` None):
    their lines that name a metadata file there are kept, written as consolidation writes them."""
    names, lists = layout.metadata_vacuum_lists(storage, root)
    files = {n for n in names if "." not in n}
    out = []
    for n, lines in lists.items():
        named = [layout.name_from_uri(u) for u in lines if not layout.unreadable_list_line(u)]
        kept = metadata_vacuum_lines(*dest, layout.META_DIR, [m for i, m in enumerate(named) if m in files
                                                               and m not in named[:i]], version)
        if kept != list(lines) or not kept:
            parts = (layout.META_DIR, n)
            out.append((parts, (parts[:-1] + (_renamed(n),), VacuumFile.build({"uris": kept})) if kept else None,
                        f"{len(lines) - len(kept)} of {len(lines)} line(s) name no metadata file here (or are lines "
                        "TileDB refuses); the rest written as consolidation writes them"))
    return out


def _keeps(name: str, ignored, folders) -> bool:
    """A .con entry stays unless it commits a fragment (``.wrt``, ``.ok``) whose folder is gone."""
    stem, _, suffix = name.rpartition(".")
    return suffix not in ("wrt", "ok") or name in ignored or stem in folders


def uncommitted_complete(storage, root, key, name, version) -> tuple[tuple | None, list]:
    """(the commit marker's path parts, the errors that keep it from being committed) of the uncommitted
    fragment ``name``: a copy of its folder, committed beside the array's schemas in a scratch folder, is
    validated; committable when every file is there and no rule finds an error."""
    folder = layout.fragment_folders(storage, root)[name]
    marker = fragment_parts(name, fragment_version(name, version))[1]
    if marker is None:
        return None, [f"fragment {name}: before v5 its metadata file commits it, and it has none"]
    if not storage.is_file(storage.join(folder, layout.FRAGMENT_METADATA)):
        return marker, [f"fragment {name}: no {layout.FRAGMENT_METADATA}"]
    with tempfile.TemporaryDirectory(prefix="tdbformat-commit-") as scratch:
        s = storage_for(scratch)[0]
        stage(storage, root, s, scratch)
        for p in storage.walk(folder):
            s.write(s.join(scratch, *parts_below(storage, root, p)), storage.read(p, what="fragment file"))
        s.write(s.join(scratch, *marker), b"")
        errors = [str(f).replace(scratch, str(root)) for f in validate(scratch, key=key) if f.severity == "error"]
    return marker, errors
