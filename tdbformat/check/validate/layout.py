"""The rules about an array's folder: every file parses, the schemas and the key, commits, stray files, vacuum
lists, each fragment's schema and format version; then each fragment's tiles (:mod:`.tiles`)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from ... import layout
from ...array.fragment import load_fragments
from ...array.tiles import Tiles
from ..coverage import gaps, metadata_spans
from ...enums import EncryptionType
from ...errors import FormatError, located
from ...layout.files import parse_file
from ...write.metadata_modes import metadata_vacuum_lines
from ...structs.array_schema import ArraySchema, evolution_mismatch, schema_version
from ...structs.fragment import SECTIONS, Footer, find_footer
from ...structs.generic_tile import GENERIC_TILE_BASE_SIZE
from ...structs.names import parse_timestamped_name
from ...versions import FEATURES, KNOWN_VERSIONS
from .tiles import check_fragment

__all__ = ["validate_array", "validate_group", "validate_file"]

#: kinds checked by their own rules, not by parsing the file alone
_OWN_RULES = {"array_schema", "fragment_metadata", "data"}


def validate_file(storage, path, key, report) -> None:
    """One file: it parses (a fragment metadata file: with every section)."""
    try:
        parsed = parse_file(path, key=key)
        if parsed.kind == "fragment_metadata":
            _sections(parsed.value, path, storage.name(storage.parent(path)), report)
    except FormatError as e:
        report.error(e, file=path)


def validate_group(storage, root, key, report, seen=None) -> None:
    """A group's own files, then each member on disk: groups recursively, arrays."""
    seen = set() if seen is None else seen
    seen.add(str(root))
    for folder in (root, storage.join(root, layout.GROUP_DIR), storage.join(root, layout.META_DIR)):
        for name in storage.list(folder):
            p = storage.join(folder, name)
            if not storage.is_dir(p):
                validate_file(storage, p, key, report)
    _metadata_vacuums(storage, root, report, group=True)
    try:
        members = layout.group_members(root, key=key, storage=storage)
    except FormatError as e:
        report.error(e)
        return
    for m in members:
        where = (str(storage.join(root, m.uri)) if m.relative else m.uri).removeprefix("file://")
        if where in seen or not storage.is_dir(where):
            continue  # a member elsewhere (another storage) or already seen
        if layout.is_group(storage, where):
            validate_group(storage, where, key, report, seen)
        else:
            validate_array(storage, where, key, report)


def validate_array(storage, root, key, report) -> None:
    schemas = _schemas(storage, root, key, report)
    data_files = _files(storage, root, key, report)
    if not schemas:
        return
    if reason := evolution_mismatch(list(schemas.items())):
        report.add("schema-evolution", reason, file=root, structure="Array schema", field="domain")
    try:
        listing = layout.Listing.of(storage, root, key)
    except FormatError as e:
        report.error(e)
        return
    _commits(storage, root, listing, report)
    _metadata_vacuums(storage, root, report)
    frags = _fragments(storage, listing, schemas, key, report)
    encrypted = next(iter(schemas.values()))["_generic_tile"].encryption_type != EncryptionType.NO_ENCRYPTION
    tiles = Tiles(storage, key, encrypted)
    expected = set()
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        for frag in frags:
            _version(frag, schemas, report)
            _sections(frag.metadata, storage.join(frag.path, layout.FRAGMENT_METADATA), frag.name, report)
            expected |= {str(p) for p in check_fragment(storage, frag, tiles, report, pool)}
    committed = {str(f.path) for f in frags}
    for p in data_files:
        if str(storage.parent(p)) in committed and str(p) not in expected:
            report.add("stray-files", "a data file that no field of the fragment names", file=p)
    for label in storage.list(storage.join(root, layout.LABELS_DIR)):  # dimension labels are arrays
        validate_array(storage, storage.join(root, layout.LABELS_DIR, label), key, report)


def _schemas(storage, root, key, report) -> dict:
    """``{file name: schema}`` of every schema that parses (the others are findings)."""
    out = {}
    for p in layout.schema_files(storage, root):
        try:
            out[storage.name(p)] = ArraySchema.parse(storage.read(p, what="array schema"), key=key, filename=str(p))
        except FormatError as e:
            report.error(e, file=p)
    for name, schema in out.items():  # the enumeration files a schema names (the walk parses the ones there)
        for ref in schema.get("enumerations") or []:
            p = layout.enumeration_path(storage, root, ref.filename)
            if not storage.is_file(p):
                report.add("file-parses", f"schema {name} names enumeration {ref.name!r} in a file that is not there",
                           file=p, structure="Array schema", field="enumerations", expected="an enumeration file",
                           found="nothing")
    # TileDB refuses a key for tiles that are not encrypted (GenericTileIO::read_generic: "tile is encrypted
    # with NO_ENCRYPTION but given key is for AES_256_GCM"), so such a key is an error too
    if out and key is not None and all(s["_generic_tile"].encryption_type == EncryptionType.NO_ENCRYPTION
                                       for s in out.values()):
        report.add("key", "a key was given but the array is not encrypted", file=root)
    return out


def _files(storage, root, key, report) -> list:
    """Parse every file of the array but schemas, fragment metadata and data (their rules parse them);
    report files no format kind names. The data files, for the stray check."""
    data = []
    skipped = tuple(str(storage.join(root, d)) + os.sep for d in (layout.LABELS_DIR, layout.BACKUP_DIR))
    for p in storage.walk(root):
        if str(p).startswith(skipped):
            continue
        try:
            kind = layout.file_kind(storage, p)
        except FormatError:
            report.add("stray-files", "not a file of a TileDB array: no format kind has this name here", file=p)
            continue
        if kind == "data":
            data.append(p)
        elif kind not in _OWN_RULES:
            validate_file(storage, p, key, report)
    return data


def _commits(storage, root, listing, report) -> None:
    """Fragment folders without a commit, commit markers without a folder, vacuum lists naming nothing."""
    folders = layout.fragment_folders(storage, root)
    committed = {f.name for f in listing.fragments}
    for name, folder in folders.items():
        if name in committed or f"{name}.wrt" in listing.ignored:
            continue
        version = parse_timestamped_name(name).version
        what = ("commit marker (.ok or .wrt)" if version is not None and FEATURES["commit_markers"](version)
                else layout.FRAGMENT_METADATA)
        report.add("uncommitted", f"fragment {name} has no {what} (a write that stopped): readers ignore its "
                   "cells; `tdbformat clean --uncommitted` removes it", file=folder, expected="committed",
                   found="uncommitted")
    for folder in (root, storage.join(root, layout.COMMITS_DIR)):
        for name in storage.list(folder):
            stem, _, suffix = name.rpartition(".")
            if suffix in ("ok", "wrt") and stem not in folders:
                report.add("commits", f"commit marker {name} names no fragment folder",
                           file=storage.join(folder, name))
    _lists(listing, folders, report)


def _lists(listing, folders, report) -> None:
    """Vacuum lists naming what is not on disk or holding a line TileDB refuses; consolidated commits naming a
    fragment whose folder is gone (TileDB: "Cannot get file size" of its metadata)."""
    for path, lines in listing.lists.items():
        ts = parse_timestamped_name(path)
        if path.endswith(".vac"):
            for line in lines:
                name = layout.name_from_uri(line)
                if layout.unreadable_list_line(line):
                    report.add("commits", f"the vacuum list of {ts.t1}-{ts.t2} holds a line TileDB refuses "
                               "(Invalid URI)", file=path, expected="a URI", found=line)
                elif name not in folders:
                    report.add("vacuum-targets", f"the vacuum list of {ts.t1}-{ts.t2} names fragment {name}, which "
                               "is not on disk (a vacuum stopped halfway, or the list points nowhere)", file=path,
                               found=name)
        elif path.endswith(".con"):
            for line in lines:
                name = layout.name_from_uri(line)
                if name.endswith(".wrt") and name not in listing.ignored and name[:-4] not in folders:
                    report.add("commits", f"consolidated commits name fragment {name[:-4]}, whose folder is gone",
                               file=path, found=line)


def _metadata_vacuums(storage, root, report, group: bool = False) -> None:
    """The vacuum lists of ``__meta``: a line TileDB refuses ("Invalid URI"), a line naming no file there. A
    group's lines are whole URIs that TileDB matches as they are (GroupDirectory::compute_uris_to_vacuum): one
    of another place names nothing (an array's are matched by the path after its URI)."""
    names, lists = layout.metadata_vacuum_lists(storage, root)
    here = set(metadata_vacuum_lines(storage, root, layout.META_DIR, names, None)) if group else None
    for n, lines in lists.items():
        p = storage.join(root, layout.META_DIR, n)
        for line in lines:
            if not group and layout.unreadable_list_line(line):
                report.add("commits", "a metadata vacuum list holds a line TileDB refuses (Invalid URI)", file=p,
                           expected="a URI", found=line)
            elif layout.name_from_uri(line) not in names or group and line not in here:
                report.add("vacuum-targets", f"a metadata vacuum list names {layout.name_from_uri(line)}, which is "
                           "not in __meta", file=p, found=line)


def _fragments(storage, listing, schemas, key, report) -> list:
    """The committed fragments whose metadata parses; each that does not is a finding."""
    def parsed(frags):  # fragment metadata is parsed on first use: use it now, so a bad one fails here
        for f in frags:
            f.metadata
        return frags

    try:
        return parsed(load_fragments(storage, listing, schemas, key))
    except FormatError:
        pass
    out = []
    for entry in listing.fragments:
        try:
            out += parsed(load_fragments(storage, replace(listing, fragments=[entry]), schemas, key))
        except FormatError as e:
            if _footer_offsets(storage, entry, schemas, report):
                continue
            if e.reason.startswith("no schema named"):
                report.add("fragment-schema", f"fragment {entry.name} names a schema that is not in __schema: "
                           f"{e.reason}", file=e.file or entry.metadata_file, structure=e.structure,
                           field=e.path, offset=e.offset)
            else:
                report.error(e, file=entry.metadata_file)
    return out


def _footer_offsets(storage, entry, schemas, report) -> bool:
    """Whether the footer of a fragment that failed to load points a section past the sections' end (reported
    at the footer field that holds the offset)."""
    try:
        data = storage.read(entry.metadata_file, what="fragment metadata file")
        start, size, _ = find_footer(data, schemas, None, entry.name)
        footer = Footer.parse(data[start:start + size], schema=schemas, filename=str(entry.metadata_file))
    except FormatError:
        return False
    found = False
    for slot in SECTIONS:
        field_at = None if slot.sub else footer._offsets.get(slot.key)
        for i, at in enumerate(slot.offsets(footer) or []):
            if at + GENERIC_TILE_BASE_SIZE > start:
                found = True
                report.add("file-parses", f"fragment {entry.name}: the footer puts section {slot.name}[{i}] at "
                           f"byte {at}, past the sections, which end where the footer starts ({start})",
                           file=entry.metadata_file, structure="Fragment metadata footer",
                           field=slot.key if slot.fields is None else f"{slot.key}[{i}]",
                           offset=None if field_at is None else start + field_at + (8 * i if slot.fields else 0),
                           expected=f"< {start}", found=at)
    return found


def _sections(fm, path, name, report) -> None:
    """Parse every section of a fragment metadata file (a reader parses them only when it needs them), then
    report the bytes that neither a section nor the footer holds."""
    if fm.legacy is not None:
        return
    for slot in SECTIONS:
        offsets = slot.offsets(fm.footer) or []
        for i, at in enumerate(offsets):
            try:
                fm._payload(slot, i)
            except FormatError as e:
                report.error(located(e, where=f"section {slot.name}[{i}] at byte offset {at}",
                                     base=at if e.within is None else None), file=path)
                return
    try:
        found = metadata_spans(fm, fm._data, name)
    except FormatError as e:
        report.error(e, file=path)
        return
    for g in gaps(found, "file", len(fm._data)):
        report.add("file-parses", f"{g.end - g.start} bytes that no section and no footer field holds", file=path,
                   offset=g.start, expected="every byte in a section or the footer", found=f"[{g.start}, {g.end})")


def _version(frag, schemas, report) -> None:
    """The fragment's version is known, is the one its name carries, and is not older than its schema's."""
    path = frag.path
    named = parse_timestamped_name(frag.name).version
    if frag.version not in KNOWN_VERSIONS:
        report.add("fragment-version", f"fragment {frag.name} has an unknown format version", file=path,
                   expected=f"one of {KNOWN_VERSIONS[0]}..{KNOWN_VERSIONS[-1]}", found=frag.version)
    if named is not None and named != frag.version:
        report.add("fragment-version", f"fragment {frag.name}: its name and its metadata disagree on its format "
                   "version", file=path, expected=named, found=frag.version)
    if frag.version < schema_version(frag.schema):
        report.add("fragment-version", f"fragment {frag.name} is older than the schema it was written with",
                   file=path, expected=f">= {schema_version(frag.schema)}", found=frag.version)
