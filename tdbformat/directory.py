"""Which file is what in each format era's folder layout, and which files are live (REFERENCE.md §3).

The only module that knows folder and suffix names. It reads through a :class:`~tdbformat.storage.Storage`:

- :func:`file_kind`: the role of a file from its name and folder (schema, fragment metadata, data file,
  commit marker, vacuum list...);
- :func:`array_root`, :func:`schema_files`, :func:`load_schemas`: an array's schemas in TileDB's order
  (the ``__array_schema.tdb`` of v1-9, the files of ``__schema/`` from v10);
- :class:`Listing`: an array's fragments (folders in the root up to v11, under ``__fragments/`` from v12),
  what commits them (the metadata file itself v1-4, ``.ok`` v5-11, ``__commits/*.wrt`` and ``.con`` lists
  v12+), vacuum and ignore lists, delete commits, consolidated fragment metadata, and which of them a read
  of a timestamp window sees (ArrayDirectory);
- :func:`metadata_files`: the ``__meta/`` (or ``__group/``) files TileDB loads, in the order it applies them.
"""

from __future__ import annotations

import numbers
import time
import uuid
from dataclasses import dataclass, field

from .errors import FormatError
from .storage import Storage, storage_for
from .structs import commits
from .structs.array_schema import ArraySchema
from .structs.group import GroupDetails, merge_members
from .structs.metadata import ArrayMetadata, fold_metadata
from .structs.names import parse_timestamped_name, timestamped_name
from .versions import FEATURES

__all__ = ["file_kind", "array_root", "schema_files", "load_schemas", "is_group", "Listing", "Delete",
           "metadata_files", "enumeration_path", "FRAGMENT_METADATA", "overlaps", "read_metadata",
           "group_members",
           "new_name", "checked_timestamp", "array_format_version", "group_format_version", "metadata_path", "delete_commit_path",
           "group_details_path", "group_marker_path"]

FRAGMENT_METADATA = "__fragment_metadata.tdb"
LEGACY_SCHEMA = "__array_schema.tdb"
SCHEMA_DIR, FRAGMENTS_DIR, COMMITS_DIR = "__schema", "__fragments", "__commits"
META_DIR, FRAGMENT_META_DIR, GROUP_DIR, LABELS_DIR = "__meta", "__fragment_meta", "__group", "__labels"
ENUMERATIONS_DIR = "__enumerations"
GROUP_MARKER, LOCK = "__tiledb_group.tdb", "__lock.tdb"
#: folders of an array or group that are not fragments
SPECIAL_DIRS = {SCHEMA_DIR, META_DIR, FRAGMENT_META_DIR, COMMITS_DIR, GROUP_DIR, LABELS_DIR, FRAGMENTS_DIR,
                 ENUMERATIONS_DIR}

# (kind, test on (name, parent folder name, suffix)); most specific first.
_KINDS = [
    ("lock", lambda n, d, s: n == LOCK),
    ("group_marker", lambda n, d, s: n == GROUP_MARKER),
    ("commit", lambda n, d, s: s in (".ok", ".wrt")),
    ("vacuum", lambda n, d, s: s == ".vac"),
    ("ignore", lambda n, d, s: s == ".ign"),
    ("consolidated_commits", lambda n, d, s: s == ".con"),
    ("delete_commit", lambda n, d, s: s == ".del"),
    ("update_commit", lambda n, d, s: s == ".upd"),
    ("array_schema", lambda n, d, s: n == LEGACY_SCHEMA or d == SCHEMA_DIR),
    ("enumeration", lambda n, d, s: d == ENUMERATIONS_DIR),
    ("metadata", lambda n, d, s: d == META_DIR),
    ("group_details", lambda n, d, s: d == GROUP_DIR),
    ("fragment_metadata", lambda n, d, s: n == FRAGMENT_METADATA),
    ("consolidated_fragment_metadata", lambda n, d, s: s == ".meta"),
    ("data", lambda n, d, s: s == ".tdb" and d.startswith("__") and d not in SPECIAL_DIRS),
]


def _suffix(name: str) -> str:
    return name[name.rfind("."):] if "." in name else ""


def file_kind(storage: Storage, path) -> str:
    """The role of the file at ``path`` from its name and the folder it is in."""
    name, folder = storage.name(path), storage.name(storage.parent(path))
    for kind, test in _KINDS:
        if test(name, folder, _suffix(name)):
            return kind
    raise FormatError("not a file of a TileDB array or group", file=str(path))


def array_root(storage: Storage, path):
    """The array folder a file belongs to: the nearest ancestor holding a schema."""
    folder = storage.parent(path)
    while True:
        if storage.is_dir(storage.join(folder, SCHEMA_DIR)) or storage.is_file(storage.join(folder, LEGACY_SCHEMA)):
            return folder
        up = storage.parent(folder)
        if up == folder:
            raise FormatError("no array schema found next to this file (it needs one to be parsed)", file=str(path))
        folder = up


def schema_files(storage: Storage, root) -> list:
    """The schema files of the array at ``root`` in TileDB's order: the legacy ``__array_schema.tdb``,
    then ``__schema/`` files by name (a listing: by name, not by timestamp; DISCREPANCIES.md)."""
    legacy = storage.join(root, LEGACY_SCHEMA)
    folder = storage.join(root, SCHEMA_DIR)
    found = [legacy] if storage.is_file(legacy) else []
    return found + [p for p in (storage.join(folder, n) for n in storage.list(folder)) if not storage.is_dir(p)]


def load_schemas(storage: Storage, root, key=None) -> list[tuple]:
    """``[(file name, parsed schema)]`` of the array at ``root``, in :func:`schema_files` order."""
    found = schema_files(storage, root)
    if not found:
        raise FormatError("not a TileDB array: no array schema (no __array_schema.tdb, and __schema/ holds no "
                          "schema file)", file=str(root))
    return [(storage.name(p), ArraySchema.parse(storage.read(p, what="array schema"), key=key, filename=str(p)))
            for p in found]


def enumeration_path(storage: Storage, root, filename: str):
    return storage.join(root, SCHEMA_DIR, ENUMERATIONS_DIR, filename)


def is_group(storage: Storage, root) -> bool:
    return storage.is_file(storage.join(root, GROUP_MARKER)) or storage.is_dir(storage.join(root, GROUP_DIR))


def overlaps(t1: int, t2: int, window, partial: bool) -> bool:
    """Whether ``[t1, t2]`` falls in ``window``: wholly, or with ``partial`` at all
    (ArrayDirectory::timestamps_overlap)."""
    if partial:
        return t1 <= window[1] and window[0] <= t2
    return window[0] <= t1 and t2 <= window[1]


def _name_from_uri(uri: str) -> str:
    """The fragment or commit name of a vacuum/ignore/consolidated-commits line (absolute before v19)."""
    return uri.rstrip("/").rsplit("/", 1)[-1]


@dataclass
class Delete:
    """A delete (or update) commit: cells written at or before ``timestamp`` that match the condition are
    deleted (``condition`` is stored negated: it holds for the cells that stay). TileDB's readers treat an
    update's condition the same way and ignore its values (array_operations.cc,
    load_delete_and_update_conditions)."""

    marker: str
    timestamp: int
    condition: object


@dataclass
class FragmentEntry:
    """A committed fragment's folder, before its metadata is read."""

    name: str
    folder: object
    metadata_file: object


@dataclass
class Listing:
    """What an array folder holds, and what a read of a window sees of it."""

    storage: Storage
    root: object
    key: object = None
    fragments: list = field(default_factory=list)  # FragmentEntry, committed
    vacuums: list = field(default_factory=list)  # (TimestampedName of the .vac, {fragment names})
    deletes: list = field(default_factory=list)  # Delete, by timestamp
    consolidated_metadata: list = field(default_factory=list)  # .meta files, oldest first
    ignored: set = field(default_factory=set)  # names of commit files listed in .ign files

    @classmethod
    def of(cls, storage: Storage, root, key=None) -> "Listing":
        out = cls(storage, root, key)
        out._load()
        return out

    def _files(self, folder):
        return [(n, self.storage.join(folder, n)) for n in self.storage.list(folder)]

    def _parse(self, struct, path, what, **kw):
        return struct.parse(self.storage.read(path, what=what), filename=str(path), **kw)

    def _load(self):
        root, commit_dir = self.root, self.storage.join(self.root, COMMITS_DIR)
        committed, ignored, deletes = set(), set(), {}
        for name, p in self._files(root) + self._files(commit_dir):
            suffix = _suffix(name)
            if suffix in (".ok", ".wrt"):
                committed.add(name[:-len(suffix)])
            elif suffix == ".vac":
                uris = self._parse(commits.VacuumFile, p, "vacuum file").uris
                self.vacuums.append((parse_timestamped_name(name), {_name_from_uri(u) for u in uris}))
            elif suffix == ".ign":
                ignored.update(_name_from_uri(u) for u in self._parse(commits.IgnoreFile, p, "ignore file").uris)
            elif suffix == ".del":
                deletes[name] = self._parse(commits.DeleteCommit, p, "delete commit", key=self.key).condition
            elif suffix == ".upd":  # TileDB's readers apply an update's condition as a delete, not its values
                deletes[name] = self._parse(commits.UpdateCommit, p, "update commit", key=self.key).condition
        for name, p in self._files(commit_dir):
            if _suffix(name) == ".con" and name not in ignored:
                for entry in self._parse(commits.ConsolidatedCommits, p, "consolidated commits", key=self.key).entries:
                    entry_name = _name_from_uri(entry.uri)
                    if entry_name in ignored:
                        continue
                    if entry_name.endswith(".wrt"):
                        committed.add(entry_name[:-4])
                    elif entry_name.endswith(".del"):
                        deletes.setdefault(entry_name, entry.delete.condition)
        self.ignored = ignored
        self.deletes = sorted((Delete(f"{COMMITS_DIR}/{n}", parse_timestamped_name(n).t1, c) for n, c in deletes.items()),
                              key=lambda d: d.timestamp)
        self._load_fragments(committed)
        meta = [(n, p) for n, p in self._files(root) + self._files(self.storage.join(root, FRAGMENT_META_DIR))
                if _suffix(n) == ".meta"]
        self.consolidated_metadata = [p for n, p in sorted(meta, key=lambda e: (parse_timestamped_name(e[0]).t1, e[0]))]

    def _load_fragments(self, committed):
        folders = [(n, p) for n, p in self._files(self.root) if n not in SPECIAL_DIRS and self.storage.is_dir(p)]
        folders += [(n, p) for n, p in self._files(self.storage.join(self.root, FRAGMENTS_DIR))
                    if self.storage.is_dir(p)]
        for name, folder in folders:
            marked = FEATURES["commit_markers"](parse_timestamped_name(name).version)
            if marked and name not in committed:
                continue
            meta = self.storage.join(folder, FRAGMENT_METADATA)
            if marked:  # committed, so its metadata must be there
                self.storage.size_of(meta, "fragment metadata file of a committed fragment")
            elif not self.storage.is_file(meta):  # v1-4: the metadata file is the commit
                continue
            self.fragments.append(FragmentEntry(name, folder, meta))

    def live(self, window, sparse: bool) -> set[str]:
        """Names of the fragments a read of ``window`` sees (ArrayDirectory::filtered_fragment_uris): those
        inside it, or for sparse arrays partly inside it when their name allows consolidation with
        timestamps; minus those listed in vacuum files that the same rule admits."""
        def seen(ts):
            return overlaps(ts.t1, ts.t2, window, sparse and ts.version is not None
                            and FEATURES["partial_time_overlap"](ts.version))
        gone = {name for ts, names in self.vacuums if seen(ts) for name in names}
        return {f.name for f in self.fragments if f.name not in gone and seen(parse_timestamped_name(f.name))}

    def live_deletes(self, window) -> list[Delete]:
        """Delete commits wholly inside ``window``, oldest first."""
        return [d for d in self.deletes if overlaps(d.timestamp, d.timestamp, window, False)]


def metadata_files(storage: Storage, folder, window=None) -> list:
    """The timestamped files of a ``__meta`` (or ``__group``) folder that TileDB loads, in the order it
    applies them (array_directory.cc ``load_array_meta_uris``, ``compute_uris_to_vacuum``): files listed in
    a vacuum file are skipped whether or not they were vacuumed yet, the rest are applied in order of their
    first timestamp; with ``window``, only vacuum files and files wholly inside it count."""
    names = [n for n in storage.list(folder) if not storage.is_dir(storage.join(folder, n))]

    def seen(name):
        if window is None:
            return True
        ts = parse_timestamped_name(name)
        return overlaps(ts.t1, ts.t2, window, False)
    replaced = {_name_from_uri(uri)
                for n in names if n.endswith(".vac") and seen(n)
                for uri in commits.VacuumFile.parse(storage.read(storage.join(folder, n), what="vacuum file"),
                                                    filename=str(storage.join(folder, n))).uris}
    loaded = [n for n in names if "." not in n and n not in replaced and seen(n)]  # skips .vac and partial .tmp
    # TileDB sorts by the first timestamp only; ties are broken here by name, to be deterministic.
    loaded.sort(key=lambda n: (parse_timestamped_name(n).t1, n))
    return [storage.join(folder, n) for n in loaded]


def read_metadata(folder, key=None, window=None, storage: Storage | None = None) -> dict:
    """The metadata of the array or group at ``folder``: ``{key: entry}`` with ``entry.datatype`` and
    ``entry.value`` (numpy); with ``window``, as a read opened at that window sees it."""
    if storage is None:
        storage, folder = storage_for(folder)
    files = metadata_files(storage, storage.join(folder, META_DIR), window)
    return fold_metadata([(storage.name(p), ArrayMetadata.parse(storage.read(p, what="metadata file"), key=key,
                                                                 filename=str(p)).entries) for p in files])


def group_members(folder, key=None, storage: Storage | None = None) -> list:
    """The members of the group at ``folder`` as TileDB lists them (GroupMember containers, in merge order;
    Group::load_group_details)."""
    if storage is None:
        storage, folder = storage_for(folder)
    return merge_members([GroupDetails.parse(storage.read(p, what="group details file"), key=key, filename=str(p))
                          for p in metadata_files(storage, storage.join(folder, GROUP_DIR))])


# --- names and places of new files (the write side) ---

def new_name(timestamp=None, version: int | None = None, t2=None) -> str:
    """A fresh timestamped name ``__<t1>_<t2>_<uuid>[_<version>]`` (REFERENCE.md §3.1): ``timestamp`` in ms
    (None: now), ``t2`` defaults to it; a random uuid, 32 lowercase hex as TileDB writes them."""
    t1 = checked_timestamp(timestamp)
    return timestamped_name(t1, t1 if t2 is None else checked_timestamp(t2, "t2"), uuid.uuid4().hex, version)


def checked_timestamp(timestamp, argument: str = "timestamp") -> int:
    """``timestamp`` as an int of ms (None: now), or ValueError naming the argument."""
    if timestamp is None:
        return time.time_ns() // 1_000_000
    if isinstance(timestamp, bool) or not isinstance(timestamp, numbers.Integral) or not 0 <= int(timestamp) < 2**64 - 1:
        raise ValueError(f"{argument}: expected an int of milliseconds in [0, 2**64-1), not {timestamp!r}")
    return int(timestamp)


def array_format_version(storage: Storage, root, key=None) -> int:
    """The format version of the array at ``root``: its latest schema's."""
    return load_schemas(storage, root, key)[-1][1].version


def group_format_version(storage: Storage, root, key=None) -> int | None:
    """The format version of the group at ``root``: that of its latest details file's generic tile; None
    when it has none (a group's marker does not say)."""
    files = metadata_files(storage, storage.join(root, GROUP_DIR))
    if not files:
        return None
    return GroupDetails.parse(storage.read(files[-1], what="group details file"), key=key,
                              filename=str(files[-1]))._generic_tile.version


def metadata_path(storage: Storage, root, name: str):
    """Where a metadata file named ``name`` of the array or group at ``root`` goes."""
    return storage.join(root, META_DIR, name)


def delete_commit_path(storage: Storage, root, name: str):
    """Where the delete commit named ``name`` (without ``.del``) of the array at ``root`` goes (v16+)."""
    return storage.join(root, COMMITS_DIR, name + ".del")


def group_details_path(storage: Storage, root, name: str):
    """Where a group details file named ``name`` of the group at ``root`` goes."""
    return storage.join(root, GROUP_DIR, name)


def group_marker_path(storage: Storage, root):
    return storage.join(root, GROUP_MARKER)
