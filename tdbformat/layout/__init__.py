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

from ..errors import FormatError
from ..fields import ParseMemo
from ..storage import Storage, storage_for
from ..structs import commits
from ..structs import enumeration as enumeration_mod
from ..structs.array_schema import ArraySchema
from ..structs.group import GroupDetails, merge_members
from ..structs.metadata import ArrayMetadata, fold_metadata
from ..structs.names import parse_timestamped_name, timestamped_name
from ..versions import FEATURES

__all__ = ["file_kind", "array_root", "schema_files", "load_schemas", "read_schemas", "load_enumerations", "is_group",
           "Listing", "Delete", "metadata_files", "metadata_bytes", "enumeration_path", "FRAGMENT_METADATA", "overlaps",
           "read_metadata", "fragment_folders", "fragment_states", "name_from_uri", "unreadable_list_line",
           "metadata_vacuum_lists",
           "group_members", "new_name", "checked_timestamp", "array_format_version", "group_format_version",
           "metadata_path", "delete_commit_path", "group_details_path", "group_marker_path",
           "dialect", "schema_structure", "legacy_file_kind", "legacy_fragments", "legacy_schema_path",
           "legacy_array_root"]

FRAGMENT_METADATA = "__fragment_metadata.tdb"
LEGACY_SCHEMA = "__array_schema.tdb"
SCHEMA_DIR, FRAGMENTS_DIR, COMMITS_DIR = "__schema", "__fragments", "__commits"
META_DIR, FRAGMENT_META_DIR, GROUP_DIR, LABELS_DIR = "__meta", "__fragment_meta", "__group", "__labels"
ENUMERATIONS_DIR = "__enumerations"
#: where ``repair --in-place`` keeps what it sets aside: TileDB lists only names that start with "__" there
BACKUP_DIR = ".tdbformat-backup"
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
    legacy = legacy_file_kind(storage, path)  # a pre-v1 array's files first: they reuse v1's names
    if legacy is not None:
        return legacy
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


class _Joined:
    """A listed entry: its ``name``, and its ``path``, joined when first asked for (also as ``(name, path)``)."""

    __slots__ = ("storage", "folder", "name", "_path")

    def __init__(self, storage, folder, name: str):
        self.storage, self.folder, self.name, self._path = storage, folder, name, None

    @property
    def path(self):
        if self._path is None:
            self._path = self.storage.join(self.folder, self.name)
        return self._path

    def __iter__(self):
        return iter((self.name, self.path))


def schema_files(storage: Storage, root) -> list:
    """The schema files of the array at ``root`` in TileDB's order: the legacy ``__array_schema.tdb``,
    then ``__schema/`` files by name (a listing: by name, not by timestamp; DISCREPANCIES.md)."""
    legacy = storage.join(root, LEGACY_SCHEMA)
    folder = storage.join(root, SCHEMA_DIR)
    found = [legacy] if storage.is_file(legacy) else []
    return found + [p for p in (storage.join(folder, n) for n in storage.list(folder)) if not storage.is_dir(p)]


def load_enumerations(storage: Storage, root, schema, key=None) -> dict:
    """``{enumeration name: (values, ordered)}`` of the array at ``root`` with ``schema`` (v20+)."""
    out = {}
    for r in schema.get("enumerations") or []:
        p = enumeration_path(storage, root, r.filename)
        parsed = enumeration_mod.Enumeration.parse(storage.read(p, what="enumeration file"), key=key, filename=str(p))
        out[r.name] = (enumeration_mod.enumeration_values(parsed), bool(parsed.ordered))
    return out


def load_schemas(storage: Storage, root, key=None) -> list[tuple]:
    """``[(file name, parsed schema)]`` of the array at ``root``, in :func:`schema_files` order."""
    return [(name, schema) for name, _, schema in read_schemas(storage, root, key)]


def read_schemas(storage: Storage, root, key=None) -> list[tuple]:
    """``[(file name, bytes, parsed schema)]`` of the array at ``root``, in :func:`schema_files` order."""
    found = schema_files(storage, root)
    if not found:
        raise FormatError(f"not a TileDB array: {not_an_array(storage, root, key)}", file=str(root))
    out = []
    for p in found:
        data = storage.read(p, what="array schema")
        out.append((storage.name(p), data, _parse_schema(data, key, str(p))))
    return out


_SCHEMAS = ParseMemo(ArraySchema)  # opening an array parses its schemas: kept by their bytes


def _parse_schema(data, key, filename):
    if key is not None:  # an encrypted schema (or a key given for a plain one): no key is ever kept
        return ArraySchema.parse(data, key=key, filename=filename)
    return _SCHEMAS.parse(data, filename=filename)


def enumeration_path(storage: Storage, root, filename: str):
    return storage.join(root, SCHEMA_DIR, ENUMERATIONS_DIR, filename)


def is_group(storage: Storage, root) -> bool:
    return storage.is_file(storage.join(root, GROUP_MARKER)) or storage.is_dir(storage.join(root, GROUP_DIR))


def not_an_array(storage: Storage, root, key=None) -> str:
    """What ``root``, which holds no array schema, is instead, in words a user can act on."""
    if storage.is_file(root):
        return f"a file, not an array folder (`tdbformat inspect {root}` parses one file)"
    if not storage.is_dir(root):
        return "no such file or folder"
    if is_group(storage, root):
        try:
            names = sorted(m.name if m.name_set else m.uri for m in group_members(root, key, storage))
        except FormatError as e:
            names = [f"(its members cannot be listed: {e})"]
        return (f"a TileDB group (members: {', '.join(names) or 'none'}); `tdbformat ls {root}` lists them, "
                "open one of them")
    arrays = [n for n in sorted(storage.list(root)) if storage.is_dir(storage.join(root, n, SCHEMA_DIR))
              or storage.is_file(storage.join(root, n, LEGACY_SCHEMA))]
    if arrays:
        return f"a folder holding arrays: {', '.join(arrays)}; open one of them"
    return "no array schema (no __array_schema.tdb, and __schema/ holds no schema file)"


def overlaps(t1: int, t2: int, window, partial: bool) -> bool:
    """Whether ``[t1, t2]`` falls in ``window``: wholly, or with ``partial`` at all
    (ArrayDirectory::timestamps_overlap)."""
    if partial:
        return t1 <= window[1] and window[0] <= t2
    return window[0] <= t1 and t2 <= window[1]


def name_from_uri(uri: str) -> str:
    """The fragment or commit name of a vacuum/ignore/consolidated-commits line (absolute before v19)."""
    return uri.rstrip("/").rsplit("/", 1)[-1]


def metadata_vacuum_lists(storage: Storage, root) -> tuple[list, dict]:
    """The names of the files in ``root``'s ``__meta`` folder, and ``{name: its lines}`` of each vacuum list
    there that parses (one that does not is the file-parses rule's finding)."""
    folder = storage.join(root, META_DIR)
    names = [n for n in storage.list(folder) if storage.is_file(storage.join(folder, n))]
    lists = {}
    for n in names:
        if n.endswith(".vac"):
            p = storage.join(folder, n)
            try:
                lists[n] = commits.VacuumFile.parse(storage.read(p, what="vacuum file"), filename=str(p)).uris
            except FormatError:
                continue
    return names, lists


def unreadable_list_line(uri: str) -> bool:
    """Whether TileDB refuses a vacuum list's line (ArrayDirectory::get_full_vac_uri: "Invalid URI"): one
    with no slash that names no __fragments or __meta path, an empty line among them."""
    return "/" not in uri and FRAGMENTS_DIR not in uri and META_DIR not in uri


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
    fragments: list = field(default_factory=list)  # FragmentEntry, committed, in TileDB's listing order
    vacuums: list = field(default_factory=list)  # (TimestampedName of the .vac, {fragment names})
    deletes: list = field(default_factory=list)  # Delete, by timestamp
    consolidated_metadata: list = field(default_factory=list)  # .meta files, oldest first
    ignored: set = field(default_factory=set)  # names of commit files listed in .ign files
    lists: dict = field(default_factory=dict)  # path of each .vac, .ign and .con file -> its lines (URIs)
    _listed: dict = field(default_factory=dict, repr=False, compare=False)  # folder -> _files of it

    @classmethod
    def of(cls, storage: Storage, root, key=None) -> "Listing":
        out = cls(storage, root, key)
        folders = [root] + [storage.join(root, d) for d in (COMMITS_DIR, FRAGMENTS_DIR, FRAGMENT_META_DIR)]
        with storage.snapshot(prefetch=folders):  # one view of the folders (one request each, at once, remote)
            out._load()
        return out

    def _files(self, folder):
        """(name, path) of each entry of ``folder``, listed once; a path is joined when first used (a
        ``_Joined``: the open of 200 fragments spent 0.2 ms joining the names of their commits)."""
        key = str(folder)
        if key not in self._listed:
            self._listed[key] = [_Joined(self.storage, folder, n) for n in self.storage.list(folder)]
        return self._listed[key]

    def _parse(self, struct, path, what, **kw):
        return struct.parse(self.storage.read(path, what=what), filename=str(path), **kw)

    def _load(self):
        root, commit_dir = self.root, self.storage.join(self.root, COMMITS_DIR)
        committed, ignored, deletes = set(), set(), {}
        for entry in self._files(root) + self._files(commit_dir):
            name = entry.name
            suffix = _suffix(name)
            if suffix in (".ok", ".wrt"):  # (their paths are never used: not joined)
                committed.add(name[:-len(suffix)])
                continue
            p = entry.path
            if suffix == ".vac":
                uris = self.lists[str(p)] = self._parse(commits.VacuumFile, p, "vacuum file").uris
                self.vacuums.append((parse_timestamped_name(name), {name_from_uri(u) for u in uris}))
            elif suffix == ".ign":
                self.lists[str(p)] = self._parse(commits.IgnoreFile, p, "ignore file").uris
                ignored.update(name_from_uri(u) for u in self.lists[str(p)])
            elif suffix == ".del":
                deletes[name] = self._parse(commits.DeleteCommit, p, "delete commit", key=self.key).condition
            elif suffix == ".upd":  # TileDB's readers apply an update's condition as a delete, not its values
                deletes[name] = self._parse(commits.UpdateCommit, p, "update commit", key=self.key).condition
        consolidated = set()
        for listed in self._files(commit_dir):
            name = listed.name
            if _suffix(name) == ".con" and name not in ignored:
                entries = self._parse(commits.ConsolidatedCommits, listed.path, "consolidated commits",
                                      key=self.key).entries
                self.lists[str(listed.path)] = [e.uri for e in entries]
                for entry in entries:
                    entry_name = name_from_uri(entry.uri)
                    if entry_name in ignored:
                        continue
                    if entry_name.endswith(".wrt"):
                        committed.add(entry_name[:-4])
                        consolidated.add(entry_name[:-4])
                    elif entry_name.endswith(".del"):
                        deletes.setdefault(entry_name, entry.delete.condition)
        self.ignored = ignored
        self.deletes = sorted((Delete(f"{COMMITS_DIR}/{n}", parse_timestamped_name(n).t1, c) for n, c in deletes.items()),
                              key=lambda d: d.timestamp)
        self._load_fragments(committed, consolidated)
        meta = [(e.name, e.path) for e in self._files(root) + self._files(self.storage.join(root, FRAGMENT_META_DIR))
                if _suffix(e.name) == ".meta"]
        self.consolidated_metadata = [p for n, p in sorted(meta, key=lambda e: (parse_timestamped_name(e[0]).t1, e[0]))]

    def _load_fragments(self, committed, consolidated):
        """The committed fragments in TileDB's list before its sort by timestamp (ArrayDirectory,
        load_commits_dir_uris_v12_or_higher): those in the array folder (v1-v11), those a .con file commits,
        then those their own .wrt does, each group by name."""
        folders = self.storage.folders_in(self.root)
        root = sorted(((e.name, e.path) for e in self._files(self.root)
                       if e.name not in SPECIAL_DIRS and e.name.startswith("__") and e.name in folders),
                      key=lambda e: e[0])
        fragments_dir = self.storage.join(self.root, FRAGMENTS_DIR)
        folders = self.storage.folders_in(fragments_dir)
        v12 = [(n, p) for n, p in self._files(fragments_dir) if n in folders]
        v12.sort(key=lambda e: (e[0] not in consolidated, e[0]))
        for name, folder in root + v12:
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


def fragment_folders(storage: Storage, root) -> dict:
    """Every fragment folder of an array, committed or not: ``{name: path}``."""
    out = {}
    for folder in (root, storage.join(root, FRAGMENTS_DIR)):
        if storage.is_dir(folder):
            out.update({n: storage.join(folder, n) for n in storage.list(folder)
                        if n not in SPECIAL_DIRS and n.startswith("__") and storage.is_dir(storage.join(folder, n))})
    return out


def fragment_states(listing: Listing, committed: list, live: set, folders: dict) -> dict:
    """``{fragment name: state}`` of every fragment an array holds or held: "committed" (a read sees it),
    "consolidated" (committed, replaced by a consolidated fragment, on disk until vacuumed), "vacuumed" (named in
    a vacuum list and gone), "ignored" (a folder whose commit an ignore file names) or "uncommitted" (a folder
    without a commit). ``committed``: the committed fragments' names; ``live``: those a read sees;
    ``folders``: :func:`fragment_folders`."""
    states = {name: "committed" if name in live else "consolidated" for name in committed}
    for name in sorted({n for _, names in listing.vacuums for n in names} - set(folders) - states.keys()):
        states[name] = "vacuumed"
    for name in sorted(set(folders) - states.keys()):
        states[name] = "ignored" if f"{name}.wrt" in listing.ignored else "uncommitted"
    return states


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
    replaced = {name_from_uri(uri)
                for n in names if n.endswith(".vac") and seen(n)
                for uri in commits.VacuumFile.parse(storage.read(storage.join(folder, n), what="vacuum file"),
                                                    filename=str(storage.join(folder, n))).uris}
    loaded = [n for n in names if "." not in n and n not in replaced and seen(n)]  # skips .vac and partial .tmp
    # TileDB sorts by the first timestamp only; ties are broken here by name, to be deterministic.
    loaded.sort(key=lambda n: (parse_timestamped_name(n).t1, n))
    return [storage.join(folder, n) for n in loaded]


def read_metadata(folder, key=None, window=None, storage: Storage | None = None, fetched=None) -> dict:
    """The metadata of the array or group at ``folder``: ``{key: entry}`` with ``entry.datatype`` and
    ``entry.value`` (numpy); with ``window``, as a read opened at that window sees it. ``fetched``: what
    :func:`metadata_bytes` gave for it already (an open on an object store fetches it with its listing)."""
    if storage is None:
        storage, folder = storage_for(folder)
    files = metadata_bytes(storage, folder, window) if fetched is None else fetched
    return fold_metadata([(storage.name(p), ArrayMetadata.parse(data, key=key, filename=str(p)).entries)
                          for p, data in files])


def metadata_bytes(storage: Storage, folder, window=None) -> list:
    """``[(path, bytes)]`` of the metadata files :func:`read_metadata` folds for the array or group at
    ``folder``, in order."""
    return [(p, storage.read(p, what="metadata file")) for p in metadata_files(storage, storage.join(folder, META_DIR),
                                                                               window)]


def group_members(folder, key=None, storage: Storage | None = None, window=None) -> list:
    """The members of the group at ``folder`` as TileDB lists them (GroupMember containers, in merge order;
    Group::load_group_details); with ``window``, as a group opened at that window lists them."""
    if storage is None:
        storage, folder = storage_for(folder)
    return merge_members([GroupDetails.parse(storage.read(p, what="group details file"), key=key, filename=str(p))
                          for p in metadata_files(storage, storage.join(folder, GROUP_DIR), window)])


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
# --- The dialects from before format version 1 (prev1.md §1, §2.4): their files and how to tell them ---

#: 1.0/1.1 schema, 0.x book-keeping, 0.x commit marker, 0.x consolidation lock, 0.x workspace, 1.0/1.1 lock
ARRAY_METADATA_1X, BOOK_KEEPING_0X = "__array_metadata.tdb", "__book_keeping.tdb.gz"
FRAGMENT_MARKER_0X, CONSOLIDATION_LOCK_0X = "__tiledb_fragment.tdb", ".__consolidation_lock"
WORKSPACE_MARKER_0X, ARRAY_LOCK_1X = "__tiledb_workspace.tdb", "__array_lock.tdb"
#: empty marker files of the pre-v1 dialects, by kind
LEGACY_MARKERS = {FRAGMENT_MARKER_0X: "fragment_marker", CONSOLIDATION_LOCK_0X: "consolidation_lock",
                  WORKSPACE_MARKER_0X: "workspace_marker", ARRAY_LOCK_1X: "lock"}


def _u(data: bytes, at: int, n: int) -> int:
    return int.from_bytes(data[at:at + n], "little")


def schema_structure(data: bytes) -> str | None:
    """Which layout a schema file's bytes follow, by structure, never by the first four bytes alone:
    ``"v1+"`` (a generic tile whose header, pipeline and body add up to the file), ``"1.x"`` (a 30-byte
    1.x header that does), ``"0.x"`` (a raw 0.x schema that parses whole), or None."""
    from ..structs.prev1_0x import ArraySchema0x
    from ..versions import LATEST
    n = len(data)
    if n >= 34 and (1 <= _u(data, 0, 4) <= LATEST or _u(data, 0, 4) == 2**32 - 1) \
            and 34 + _u(data, 30, 4) + _u(data, 4, 8) == n:
        return "v1+"
    if n >= 30 and 30 + _u(data, 0, 8) == n and _u(data, 17, 8) == 1 and data[16] == 4 and data[25] <= 12:
        return "1.x"
    try:
        ArraySchema0x.parse(data)
        return "0.x"
    except FormatError:
        return None


def dialect(storage: Storage, root) -> str | None:
    """``"0.x"`` or ``"1.x"`` for an array folder of a pre-v1 dialect, None for v1+ (or no array): by the
    files present (1.0/1.1's ``__array_metadata.tdb``; 0.x's lock and book-keeping) and the schema's
    structure (:func:`schema_structure`). A schema that follows no layout belongs to the dialect its files
    say (so that dialect's parser reports what is wrong), else to v1+."""
    if storage.is_file(storage.join(root, ARRAY_METADATA_1X)):
        return "1.x"
    legacy = storage.join(root, LEGACY_SCHEMA)
    if not storage.is_file(legacy) or storage.is_dir(storage.join(root, SCHEMA_DIR)):
        return None
    data = storage.read(legacy, what="array schema")
    found = schema_structure(data)
    if found in DIALECTS_FOUND:
        return found
    if found is None and _has_0x_files(storage, root):
        return "0.x"
    return None


DIALECTS_FOUND = ("0.x", "1.x")


def _has_0x_files(storage: Storage, root) -> bool:
    """Whether the folder holds 0.x's consolidation lock or a fragment with a book-keeping file."""
    if storage.is_file(storage.join(root, CONSOLIDATION_LOCK_0X)):
        return True
    return any(storage.is_file(storage.join(root, n, BOOK_KEEPING_0X)) for n in storage.list(root)
               if n.startswith("__") and storage.is_dir(storage.join(root, n)))


def legacy_schema_path(storage: Storage, root):
    """The schema file of a pre-v1 array: ``__array_metadata.tdb`` (1.0/1.1) or ``__array_schema.tdb``."""
    old = storage.join(root, ARRAY_METADATA_1X)
    return old if storage.is_file(old) else storage.join(root, LEGACY_SCHEMA)


def legacy_array_root(storage: Storage, path):
    """The pre-v1 array folder ``path`` belongs to (itself, its parent or grandparent), or None."""
    folder = path if storage.is_dir(path) else storage.parent(path)
    for _ in range(2):
        if storage.is_file(storage.join(folder, ARRAY_METADATA_1X)) or storage.is_file(
                storage.join(folder, LEGACY_SCHEMA)):
            return folder if dialect(storage, folder) else None
        folder = storage.parent(folder)
    return None


def legacy_fragments(storage: Storage, root, found: str) -> list[tuple[str, object, object]]:
    """``[(name, folder, metadata file)]`` of the committed fragments of a pre-v1 array, oldest first (by
    the timestamp that ends the name, then the name): 0.x fragments carry ``__tiledb_fragment.tdb``, 1.x ones
    are committed by their ``__fragment_metadata.tdb``."""
    meta_name = BOOK_KEEPING_0X if found == "0.x" else FRAGMENT_METADATA
    out = []
    for name in storage.list(root):
        folder = storage.join(root, name)
        if not name.startswith("__") or not storage.is_dir(folder):
            continue  # 0.x writes a fragment as .__name and renames it when done
        if found == "0.x" and not storage.is_file(storage.join(folder, FRAGMENT_MARKER_0X)):
            continue
        if storage.is_file(storage.join(folder, meta_name)):
            out.append((name, folder, storage.join(folder, meta_name)))

    def timestamp(entry):
        tail = entry[0].rsplit("_", 1)[-1]
        return (int(tail) if tail.isdigit() else -1, entry[0])
    return sorted(out, key=timestamp)


def legacy_file_kind(storage: Storage, path) -> str | None:
    """The kind of a file of a pre-v1 array, workspace or group (None if it is not one): ``array_schema_0x``,
    ``array_schema_1x``, ``book_keeping_0x``, ``fragment_metadata_1x``, ``data_0x``, ``data_1x``, or a marker
    (lock, consolidation_lock, fragment_marker, workspace_marker, group_marker)."""
    name = storage.name(path)
    if name in LEGACY_MARKERS:
        return LEGACY_MARKERS[name]
    if name == BOOK_KEEPING_0X:
        return "book_keeping_0x"
    root = legacy_array_root(storage, path)
    if root is None:
        return None
    found = dialect(storage, root)
    suffix = found.replace(".", "")
    if name in (LEGACY_SCHEMA, ARRAY_METADATA_1X) and storage.parent(path) == root:
        return f"array_schema_{suffix}"
    if storage.parent(path) == root:
        return None
    if name == FRAGMENT_METADATA:
        return "fragment_metadata_1x"
    return f"data_{suffix}" if name.endswith(".tdb") else None


def load_legacy_schema(storage: Storage, root, found: str | None = None):
    """The parsed schema of the pre-v1 array at ``root`` (:data:`ArraySchema0x` or :data:`ArraySchema1x`)."""
    from ..structs.prev1_0x import ArraySchema0x
    from ..structs.prev1_1x import ArraySchema1x
    found = found or dialect(storage, root)
    p = legacy_schema_path(storage, root)
    struct = ArraySchema0x if found == "0.x" else ArraySchema1x
    return struct.parse(storage.read(p, what="array schema"), filename=str(p))


def legacy_metadata_context(schema) -> dict:
    """What a pre-v1 fragment's metadata is parsed with: the schema, and the version that governs it."""
    from ..structs.prev1_0x import VERSION_0X
    return {"schema": schema, "version": schema.get("version") or VERSION_0X}


def load_legacy_metadata(storage: Storage, path, schema):
    """The parsed book-keeping (0.x) or fragment metadata (1.x) at ``path``."""
    from ..structs.prev1_0x import BookKeeping0x
    from ..structs.prev1_1x import FragmentMetadata1x
    struct = BookKeeping0x if storage.name(path) == BOOK_KEEPING_0X else FragmentMetadata1x
    return struct.parse(storage.read(path, what="fragment metadata"), filename=str(path),
                        **legacy_metadata_context(schema))


def legacy_field_files(schema) -> dict:
    """``{file name: (field index, is var data)}`` of a pre-v1 fragment; the coordinates are index N."""
    names = [a.name for a in schema.attributes]
    out = {"__coords.tdb": (len(names), False)}
    for i, name in enumerate(names):
        out[f"{name}.tdb"], out[f"{name}_var.tdb"] = (i, False), (i, True)
    return out


def legacy_file_context(storage: Storage, path, kind: str) -> dict:
    """The context a file of a pre-v1 array is parsed with (``parse_file``): schema and version for the
    fragment metadata, and where its tiles start for a data file."""
    if kind.startswith("array_schema") or kind not in ("book_keeping_0x", "fragment_metadata_1x", "data_0x",
                                                        "data_1x"):
        return {}
    root = legacy_array_root(storage, path)
    if root is None:
        raise FormatError("a fragment file of a pre-v1 array needs the array's schema two folders up",
                          file=str(path))
    schema = load_legacy_schema(storage, root)
    if not kind.startswith("data"):
        return legacy_metadata_context(schema)
    folder = storage.parent(path)
    meta = storage.join(folder, BOOK_KEEPING_0X if kind == "data_0x" else FRAGMENT_METADATA)
    fm = load_legacy_metadata(storage, meta, schema)
    index, var = legacy_field_files(schema).get(storage.name(path), (None, None))
    if index is None:
        raise FormatError("not a data file of this fragment: no attribute of the schema is named so",
                          file=str(path))
    from ..structs.prev1_1x import legacy_field_layout
    return legacy_field_layout(schema, fm, index, var)
