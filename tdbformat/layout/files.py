"""``parse_file``: recognise a TileDB file by its name and place in the folder, and parse it.

Each file kind names the structure it is parsed with and the context that structure needs (the
format version, the array schema next to a fragment, the encryption key). The context is found from the
file's surroundings, so ``parse_file(path)`` needs nothing but the path (and ``key=`` when encrypted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import layout
from ..errors import FormatError
from ..storage import storage_for
from ..structs.tile import DataFile

__all__ = ["ParsedFile", "parse_file", "inspect_path", "file_kind"]


@dataclass
class ParsedFile:
    """One parsed file: ``kind`` (e.g. ``"array_schema"``), ``value`` (the parsed Container)."""

    path: Path
    kind: str
    value: Any
    struct: Any = field(repr=False)
    context: dict = field(default_factory=dict, repr=False)

    def build(self) -> bytes:
        """The file's bytes rebuilt from ``value``."""
        return self.struct.build(self.value, **self.context)

    @property
    def view(self):
        """What ``tdbformat inspect`` shows: the value, or a summary where the value is an object."""
        show = getattr(self.struct, "view", None)
        return show(self.value) if show else self.value


def _struct(module: str, name: str):
    """The structure ``name`` of ``tdbformat.structs.<module>``, imported when first needed."""
    def get():
        from importlib import import_module
        return getattr(import_module(f"tdbformat.structs.{module}"), name)
    return get


# The structure that parses each kind of file (layout.file_kind says which kind a path is).
_STRUCTS = {
    "lock": lambda: None,
    "group_marker": lambda: None,
    "commit": _struct("commits", "CommitMarker"),
    "vacuum": _struct("commits", "VacuumFile"),
    "ignore": _struct("commits", "IgnoreFile"),
    "consolidated_commits": _struct("commits", "ConsolidatedCommits"),
    "delete_commit": _struct("commits", "DeleteCommit"),
    "update_commit": _struct("commits", "UpdateCommit"),
    "array_schema": _struct("array_schema", "ArraySchema"),
    "enumeration": _struct("enumeration", "Enumeration"),
    "metadata": _struct("metadata", "ArrayMetadata"),
    "group_details": _struct("group", "GroupDetails"),
    "fragment_metadata": lambda: _FragmentMetadataFile,
    "consolidated_fragment_metadata": _struct("consolidated", "ConsolidatedFragmentMetadata"),
    "data": lambda: DataFile,
    # the dialects from before format version 1 (prev1.md); layout.legacy_file_kind names them
    "array_schema_0x": _struct("prev1_0x", "ArraySchema0x"),
    "book_keeping_0x": _struct("prev1_0x", "BookKeeping0x"),
    "data_0x": _struct("prev1_0x", "DataFile0x"),
    "fragment_marker": lambda: None,
    "consolidation_lock": lambda: None,
    "workspace_marker": lambda: None,
    "array_schema_1x": _struct("prev1_1x", "ArraySchema1x"),
    "fragment_metadata_1x": _struct("prev1_1x", "FragmentMetadata1x"),
    "data_1x": _struct("prev1_1x", "DataFile1x"),
}


def file_kind(path, storage_options=None) -> str:
    """The kind of the file at ``path``, from its name and the folder it is in."""
    storage, p = storage_for(path, storage_options)
    return layout.file_kind(storage, p)


class _FragmentMetadataFile:
    """``__fragment_metadata.tdb`` parsed with the schemas of its array and the name of its folder."""

    @staticmethod
    def parse(data, filename, key=None, schema=None):
        from ..structs.fragment import FragmentMetadata
        p = Path(filename)
        return FragmentMetadata.parse(data, schema=schema, key=key, name=p.parent.name, filename=filename)

    @staticmethod
    def build(value, **context) -> bytes:
        return value.build()

    @staticmethod
    def view(value):
        return {"footer": value.footer if value.legacy is None else value.legacy, "summary": value.summary()}


# Kinds whose structure needs the array's schemas.
_NEEDS_SCHEMA = {"fragment_metadata", "consolidated_fragment_metadata"}


def parse_file(path, key=None, storage_options=None) -> ParsedFile:
    """Parse the TileDB file at ``path``, a local path or a URL (``key=`` for an encrypted array;
    ``storage_options=`` for the URL's fsspec filesystem, e.g. ``{"endpoint_url": ...}``)."""
    storage, p = storage_for(path, storage_options)
    kind = layout.file_kind(storage, p)
    data = storage.read(p, what=f"{kind.replace('_', ' ')} file")
    struct = _STRUCTS[kind]()
    context = {"filename": str(p)}
    if key is not None:
        context["key"] = key
    if kind in _NEEDS_SCHEMA:
        context["schema"] = dict(layout.load_schemas(storage, layout.array_root(storage, p), key))
    context.update(layout.legacy_file_context(storage, p, kind))
    if struct is None:
        if data:
            raise FormatError(f"a {kind} file is empty, this one has {len(data)} bytes", file=str(p))
        return ParsedFile(p, kind, None, _Empty, context)
    return ParsedFile(p, kind, struct.parse(data, **context), struct, context)


class _Empty:
    """The empty marker files (.ok, .wrt, __lock.tdb, __tiledb_group.tdb; 0.x fragment, lock and workspace
    markers)."""

    @staticmethod
    def build(value, **context) -> bytes:
        return b""


def inspect_path(path, key=None, progress: bool = False, storage_options=None) -> list[ParsedFile]:
    """Every TileDB file at ``path`` (a file, or a folder walked recursively; a local path or a URL), parsed;
    ``progress`` shows a bar on stderr while a folder is parsed."""
    storage, p = storage_for(path, storage_options)
    if not storage.is_dir(p):
        return [parse_file(p, key=key, storage_options=storage_options)]
    files = storage.walk(p)
    if progress:
        from rich.console import Console
        from rich.progress import track

        files = track(files, description="parsing", transient=True, console=Console(stderr=True))
    return [parse_file(f, key=key, storage_options=storage_options) for f in files]
