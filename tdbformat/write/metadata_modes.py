"""The consolidation modes that write no cells, and their vacuums, as TileDB does them:

- ``commits`` (v12+, commits_consolidator.cc): one ``__commits/<name>.con`` holding every commit: those of the
  consolidated commits files already there (sorted), then the ``.ok`` files of the array folder, then the
  ``.wrt`` and ``.del`` files of ``__commits/``; each line relative to the array, each ``.del`` followed by its
  size and bytes. Its vacuum removes the commit files a ``.con`` holds, and, once one ``.con`` holds every
  commit, the other ``.con`` and the ``.ign`` files.
- ``fragment_meta`` (v5+, fragment_meta_consolidator.cc): one ``.meta`` holding every fragment's footer; its
  vacuum removes every ``.meta`` but the newest.
- ``array_meta`` and ``group_meta`` (array_meta_consolidator.cc): the metadata a read sees, one file named for
  the first and last file it replaces, then a ``.vac`` listing them; its vacuum removes them and the ``.vac``.

Names run from the first timestamp of the first file replaced to the last of the last (each name's own
version). Every file is written under a temporary name and renamed into place.
"""

from __future__ import annotations


from construct import Container, ListContainer

from .. import layout as directory
from ..layout import COMMITS_DIR, FRAGMENT_META_DIR, META_DIR
from .create import new_uuid
from .metadata import METADATA_SINCE
from ..filters.pipeline import MAX_CHUNK
from ..storage import storage_for
from ..structs.commits import ConsolidatedCommits, DeleteCommit, IgnoreFile, VacuumFile
from ..structs.consolidated import ConsolidatedFragmentMetadata
from ..structs.metadata import ArrayMetadata, fold_metadata
from ..structs.names import parse_timestamped_name, timestamped_name
from ..versions import FEATURES
from .vacuum_lists import RELATIVE_VACUUM_URIS, VACUUM_FILES, array_uri

__all__ = ["consolidate_mode", "vacuum_mode", "commit_state", "metadata_vacuum_lines"]

#: a .meta names its fragments by name from v9, by absolute URI before (FragmentMetaConsolidator)
_META_NAMES = 9


def _name(first: str, last: str, version) -> str:
    a, b = (parse_timestamped_name(n.rstrip("/").rsplit("/", 1)[-1]) for n in (first, last))
    return timestamped_name(a.t1, b.t2, new_uuid(), version)


def consolidate_mode(uri, cfg, key=None, dry_run: bool = False, max_chunk_size: int = MAX_CHUNK) -> dict:
    """``max_chunk_size``: the chunk bound of the generic tiles written (as :func:`.consolidate`'s)."""
    storage, root = storage_for(uri)
    if cfg.mode == "group_meta":
        if not directory.is_group(storage, root):
            raise ValueError(f"uri: {uri} is not a group (group_meta consolidates a group's metadata)")
        return _metadata(storage, root, None, cfg, key, dry_run, META_DIR, max_chunk_size)
    version = directory.array_format_version(storage, root, key)
    if cfg.mode == "commits":
        return _commits(storage, root, version, key, dry_run)
    if cfg.mode == "fragment_meta":
        return _fragment_meta(uri, storage, root, version, key, dry_run, max_chunk_size)
    return _metadata(storage, root, version, cfg, key, dry_run, META_DIR, max_chunk_size)


# --- commits ---

def commit_state(storage, root, key):
    """(the .con files with their parsed entries, the .ign lines, the commit files of the folders)."""
    cdir = storage.join(root, COMMITS_DIR)
    names = [n for n in storage.list(cdir) if storage.is_file(storage.join(cdir, n))]
    ignored = set()
    for n in names:
        if n.endswith(".ign"):
            p = storage.join(cdir, n)
            ignored |= {_line(u) for u in IgnoreFile.parse(storage.read(p, what="ignore file"), filename=str(p)).uris}
    cons = []
    for n in names:
        if n.endswith(".con"):
            p = storage.join(cdir, n)
            cons.append((p, ConsolidatedCommits.parse(storage.read(p, what="consolidated commits"), key=key,
                                                      filename=str(p)).entries))
    return cons, ignored, names


def _line(entry_uri: str) -> str:
    """A .con line as ArrayDirectory joins it to the array's URI (which ends in a slash): ``__commits/<name>``."""
    return entry_uri.lstrip("/")


def _commits(storage, root, version, key, dry_run) -> dict:
    if not FEATURES["fragments_folder"](version):
        raise ValueError(f"uri: format version {version} has no __commits folder: commits consolidate from v12")
    cons, ignored, names = commit_state(storage, root, key)
    held = {}  # line -> the embedded .del (None for other commits), of the .con files, minus ignored lines
    for _, entries in cons:
        for e in entries:
            if _line(e.uri) not in ignored:
                held[_line(e.uri)] = e.delete
    lines = sorted(held)  # TileDB sorts the URIs (the array's URI is a common prefix)
    lines += [n for n in storage.list(root) if n.endswith(".ok") and n not in held]
    lines += [f"{COMMITS_DIR}/{n}" for n in names
              if (n.endswith(".wrt") or n.endswith(".del")) and f"{COMMITS_DIR}/{n}" not in held]
    if not lines:
        return {"steps": []}
    name = commits_name(lines[0], lines[-1], version)
    if dry_run:
        return {"steps": [{"commits": lines, "file": name}]}
    entries = []
    for line in lines:
        delete = held.get(line)
        if line.endswith(".del") and delete is None:
            p = storage.join(root, *line.split("/"))
            delete = DeleteCommit.parse(storage.read(p, what="delete commit"), key=key, filename=str(p))
        entries.append(Container(uri=line, delete=delete if line.endswith(".del") else None))
    commit_together(storage, root, name, entries, key)
    return {"steps": [{"commits": lines, "file": name}]}


def commit_together(storage, root, name: str, entries: list, key=None) -> None:
    """One consolidated commits file ``__commits/<name>`` holding ``entries`` (Containers of ``uri``, the line,
    and ``delete``, a parsed delete commit or None): everything it names is committed at once
    (Consolidator::write_consolidated_commits_file, which a write of several fragments commits with too)."""
    storage.commit(storage.join(root, COMMITS_DIR, name), ConsolidatedCommits.build(Container(
        entries=ListContainer(entries)), key=key))


def commits_name(first: str, last: str, version) -> str:
    """The name of a ``.con`` holding ``first`` to ``last`` (generate_consolidated_fragment_name)."""
    return _name(first, last, version) + ".con"


def _vacuum_commits(storage, root, key) -> dict:
    cons, ignored, names = commit_state(storage, root, key)
    held = {_line(e.uri) for _, entries in cons for e in entries if _line(e.uri) not in ignored}
    cdir = storage.join(root, COMMITS_DIR)
    present = {f"{COMMITS_DIR}/{n}": storage.join(cdir, n) for n in names}
    present.update({n: storage.join(root, n) for n in storage.list(root) if n.endswith(".ok")})
    commits = [present[line] for line in sorted(held) if line in present and not line.endswith((".con", ".ign"))]
    others = []
    for p, entries in cons:  # one .con holding every commit: the others, and the ignore files, go
        lines = [_line(e.uri) for e in entries]
        if set(lines) == held and all(line in held for line in lines):
            others = [q for q, _ in cons if q != p] + [storage.join(cdir, n) for n in names if n.endswith(".ign")]
            break
    for p in commits + others:
        storage.delete(p)
    return {"commits": [str(p) for p in commits], "files": [str(p) for p in others]}


# --- fragment metadata ---

def _fragment_meta(uri, storage, root, version, key, dry_run, max_chunk_size) -> dict:
    from ..array import open_array

    if not VACUUM_FILES(version):
        raise ValueError(f"uri: format version {version} has no consolidated fragment metadata (from v5)")
    arr = open_array(uri, key=key)
    frags = [f for f in arr.fragments if f.version > 2]
    if len(frags) < 2:
        return {"steps": []}
    name = _name(frags[0].name, frags[-1].name, version) + ".meta"
    folder = storage.join(root, FRAGMENT_META_DIR) if FEATURES["fragments_folder"](version) else root
    step = {"fragments": [f.name for f in frags], "file": name}
    if dry_run:
        return {"steps": [step]}
    prefix = "" if version >= _META_NAMES else array_uri(arr).rstrip("/") + "/" + (
        directory.FRAGMENTS_DIR + "/" if FEATURES["fragments_folder"](version) else "")
    value = Container(fragments=ListContainer(Container(name=prefix + f.name) for f in frags),
                      footers=ListContainer(f.metadata.footer for f in frags))
    schemas = dict(arr.schemas)
    data = ConsolidatedFragmentMetadata.build(value, schema=schemas, key=key, version=version, max_chunk=max_chunk_size)
    storage.makedirs(folder)
    storage.commit(storage.join(folder, name), data, staging=root)
    return {"steps": [step]}


def _vacuum_fragment_meta(storage, root) -> dict:
    found = [storage.join(f, n) for f in (root, storage.join(root, FRAGMENT_META_DIR)) for n in storage.list(f)
             if n.endswith(".meta") and storage.is_file(storage.join(f, n))]
    latest = max((parse_timestamped_name(storage.name(p)).t2 for p in found), default=None)
    gone = [p for p in found if parse_timestamped_name(storage.name(p)).t2 != latest]
    for p in gone:
        storage.delete(p)
    return {"files": [str(p) for p in gone]}


# --- array and group metadata ---

def _metadata(storage, root, version, cfg, key, dry_run, folder, max_chunk_size) -> dict:
    if version is not None and not (version >= METADATA_SINCE and VACUUM_FILES(version)):
        raise ValueError(f"uri: format version {version} has no array metadata consolidation (its vacuum file "
                         f"arrived in v{VACUUM_FILES.since})")
    where = storage.join(root, folder)
    files = directory.metadata_files(storage, where, (cfg.timestamp_start, cfg.timestamp_end))
    if len(files) <= 1:
        return {"steps": []}
    parsed = [(storage.name(p), ArrayMetadata.parse(storage.read(p, what="metadata file"), key=key,
                                                    filename=str(p))) for p in files]
    first, last = (parse_timestamped_name(storage.name(p)) for p in (files[0], files[-1]))
    name = timestamped_name(first.t1, last.t2, new_uuid(), first.version)
    step = {"files": [storage.name(p) for p in files], "file": name}
    if dry_run:
        return {"steps": [step]}
    entries = fold_metadata([(n, m.entries) for n, m in parsed])
    file_version = parsed[-1][1]._generic_tile.version
    storage.commit(storage.join(where, name), staging=root, data=ArrayMetadata.build(
        Container(entries=ListContainer(entries[k] for k in sorted(entries, key=lambda k: k.encode()))),
        version=file_version, key=key, max_chunk=max_chunk_size))
    lines = metadata_vacuum_lines(storage, root, folder, [storage.name(p) for p in files], version)
    storage.commit(storage.join(where, name + ".vac"), VacuumFile.build({"uris": lines}), staging=root)
    return {"steps": [step]}


def metadata_vacuum_lines(storage, root, folder: str, names, version) -> list[str]:
    """The lines of a metadata vacuum file naming ``names`` of ``folder``: a group's (``version`` None) whole
    URIs (GroupMetaConsolidator), an array's relative ones from v19 (``/__meta/<name>``)."""
    if version is not None and RELATIVE_VACUUM_URIS(version):
        base = f"/{folder}/"
    else:
        base = array_uri(storage=storage, path=root).rstrip("/") + f"/{folder}/"
    return [base + n for n in names]


def _vacuum_metadata(storage, root, folder) -> dict:
    where = storage.join(root, folder)
    names = [n for n in storage.list(where) if storage.is_file(storage.join(where, n))]
    vacs = [n for n in names if n.endswith(".vac")]
    listed = set()
    for n in vacs:
        p = storage.join(where, n)
        listed |= {u.rstrip("/").rsplit("/", 1)[-1] for u in VacuumFile.parse(storage.read(p, what="vacuum file"),
                                                                                filename=str(p)).uris}
    gone = [storage.join(where, n) for n in names if n in listed and not n.endswith(".vac")]
    gone += [storage.join(where, n) for n in vacs]
    for p in gone:
        storage.delete(p)
    return {"files": [str(p) for p in gone]}


def vacuum_mode(uri, mode: str, key=None) -> dict:
    storage, root = storage_for(uri)
    if mode == "group_meta":
        if not directory.is_group(storage, root):
            raise ValueError(f"uri: {uri} is not a group")
        return _vacuum_metadata(storage, root, META_DIR)
    directory.array_format_version(storage, root, key)
    if mode == "commits":
        return _vacuum_commits(storage, root, key)
    if mode == "fragment_meta":
        return _vacuum_fragment_meta(storage, root)
    return _vacuum_metadata(storage, root, META_DIR)



