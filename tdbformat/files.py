"""``parse_file``: recognise a TileDB file by its name and place in the folder, and parse it.

Each file kind names the structure it is parsed with and the context that structure needs (the
format version, the array schema next to a fragment, the encryption key). The context is found from the
file's surroundings, so ``parse_file(path)`` needs nothing but the path (and ``key=`` when encrypted).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .errors import FormatError
from .structs.tile import DataFile

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


@dataclass(frozen=True)
class _Kind:
    name: str
    matches: Callable[[Path], bool]
    struct: Callable[[], Any]


def _in(folder: str):
    return lambda p: p.parent.name == folder


def _fragment_dir(p: Path) -> bool:
    return p.parent.name.startswith("__") and p.parent.name not in _SPECIAL_DIRS


_SPECIAL_DIRS = {"__schema", "__meta", "__fragment_meta", "__commits", "__group", "__labels", "__fragments",
                 "__enumerations"}


def _suffix(*suffixes):
    return lambda p: p.suffix in suffixes


def _struct(module: str, name: str):
    """The structure ``name`` of ``tdbformat.structs.<module>``, imported when first needed."""
    def get():
        from importlib import import_module
        return getattr(import_module(f"tdbformat.structs.{module}"), name)
    return get


# Most specific first.
_KINDS = [
    _Kind("lock", lambda p: p.name == "__lock.tdb", lambda: None),
    _Kind("group_marker", lambda p: p.name == "__tiledb_group.tdb", lambda: None),
    _Kind("commit", _suffix(".ok", ".wrt"), _struct("commits", "CommitMarker")),
    _Kind("vacuum", _suffix(".vac"), _struct("commits", "VacuumFile")),
    _Kind("ignore", _suffix(".ign"), _struct("commits", "IgnoreFile")),
    _Kind("consolidated_commits", _suffix(".con"), _struct("commits", "ConsolidatedCommits")),
    _Kind("delete_commit", _suffix(".del"), _struct("commits", "DeleteCommit")),
    _Kind("update_commit", _suffix(".upd"), _struct("commits", "UpdateCommit")),
    _Kind("array_schema", lambda p: p.name == "__array_schema.tdb" or (_in("__schema")(p) and p.is_file()),
          _struct("array_schema", "ArraySchema")),
    _Kind("enumeration", _in("__enumerations"), _struct("enumeration", "Enumeration")),
    _Kind("metadata", _in("__meta"), _struct("metadata", "ArrayMetadata")),
    _Kind("group_details", _in("__group"), _struct("group", "GroupDetails")),
    _Kind("fragment_metadata", lambda p: p.name == "__fragment_metadata.tdb", lambda: _FragmentMetadataFile),
    _Kind("consolidated_fragment_metadata", _suffix(".meta"),
          _struct("fragment", "ConsolidatedFragmentMetadata")),
    _Kind("data", lambda p: p.suffix == ".tdb" and _fragment_dir(p), lambda: DataFile),
]


def _kind(p: Path) -> _Kind:
    for kind in _KINDS:
        if kind.matches(p):
            return kind
    raise FormatError("not a file of a TileDB array or group", file=str(p))


def file_kind(path) -> str:
    """The kind of the file at ``path``, from its name and the folder it is in."""
    return _kind(Path(path)).name


def _array_root(p: Path) -> Path:
    """The array folder a file belongs to: the nearest ancestor holding a schema."""
    for folder in p.parents:
        if (folder / "__schema").is_dir() or (folder / "__array_schema.tdb").is_file():
            return folder
    raise FormatError("no array schema found next to this file (it needs one to be parsed)", file=str(p))


def _schemas(root: Path, key) -> dict:
    """Every schema of the array by file name (``__array_schema.tdb`` for the legacy one)."""
    from .structs.array_schema import ArraySchema
    files = [root / "__array_schema.tdb"] + sorted((root / "__schema").glob("*"))
    return {f.name: ArraySchema.parse(f.read_bytes(), key=key, filename=str(f)) for f in files if f.is_file()}


class _FragmentMetadataFile:
    """``__fragment_metadata.tdb`` parsed with the schemas of its array and the name of its folder."""

    @staticmethod
    def parse(data, filename, key=None, schema=None):
        from .structs.fragment import FragmentMetadata
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


def parse_file(path, key=None) -> ParsedFile:
    """Parse the TileDB file at ``path`` (``key=`` for an encrypted array)."""
    p = Path(path)
    kind = _kind(p)
    data = p.read_bytes()
    struct = kind.struct()
    context = {"filename": str(p)}
    if key is not None:
        context["key"] = key
    if kind.name in _NEEDS_SCHEMA:
        context["schema"] = _schemas(_array_root(p), key)
    if struct is None:
        if data:
            raise FormatError(f"a {kind.name} file is empty, this one has {len(data)} bytes", file=str(p))
        return ParsedFile(p, kind.name, None, _Empty, context)
    return ParsedFile(p, kind.name, struct.parse(data, **context), struct, context)


class _Empty:
    """The empty marker files (.ok, .wrt, __lock.tdb, __tiledb_group.tdb)."""

    @staticmethod
    def build(value, **context) -> bytes:
        return b""


def inspect_path(path, key=None) -> list[ParsedFile]:
    """Every TileDB file at ``path`` (a file, or a folder walked recursively), parsed."""
    p = Path(path)
    if p.is_file():
        return [parse_file(p, key=key)]
    return [parse_file(f, key=key) for f in sorted(p.rglob("*")) if f.is_file()]
