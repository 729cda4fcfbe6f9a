"""FormatError and its subclasses, and the single place where construct's errors become ours.

Every failure to parse or build raises :class:`FormatError` (or a subclass). Its message names the file,
the structure, the field path, the absolute byte offset, the format version in force and the reason.
Code deep inside a parse raises ``FormatError(reason)`` with whatever it knows; the enclosing fields
fill in the rest as the error travels outwards (:func:`located`), and :func:`as_format_error` turns a
construct error into ours at the top-level boundary.
"""

from __future__ import annotations

from construct import ConstructError

__all__ = ["FormatError", "ChecksumError", "EncryptionError", "VersionError", "UnsupportedError", "FormatWarning",
           "UsageError", "located", "StorageError"]


class FormatError(ValueError):
    """A TileDB file (or a value to build) does not follow the format."""

    def __init__(self, reason: str, *, file=None, structure=None, path=None, offset=None, version=None,
                 within=None):
        super().__init__(reason)
        self.reason = reason
        self.file = file
        self.structure = structure
        self.path = _clean_path(path)
        self.offset = offset
        self.version = version
        #: where ``offset`` counts from when it is not the file: e.g. a generic tile's unfiltered payload
        self.within = within

    def __str__(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.structure is not None:
            where.append(self.structure)
        if self.path:
            where.append(f"field {self.path}")
        if self.offset is not None:
            where.append(f"byte offset {self.offset}" + (f" of {self.within}" if self.within else ""))
        if self.version is not None:
            where.append(f"format version {self.version}")
        return f"{', '.join(where)}: {self.reason}" if where else self.reason


class ChecksumError(FormatError):
    """A checksum filter's stored digest does not match the data."""


class EncryptionError(FormatError):
    """A missing or wrong key, or encrypted bytes that fail authentication."""


class VersionError(FormatError):
    """A field or value does not exist at the format version in force."""


class UnsupportedError(FormatError):
    """Valid bytes that need an optional extra (for example WebP) that is not installed."""


class StorageError(OSError):
    """The storage failed (a full disk, an I/O error, no permission, a store out of reach), not the format: the
    bytes may be fine. An ``OSError``, so ``except OSError`` catches it: ``errno`` is the system's (None where
    the store gives none) and ``filename`` the file."""

    def __init__(self, errno, reason: str, file):
        super().__init__(errno, reason, str(file))

    @property
    def file(self) -> str:
        return self.filename


def _clean_path(path: str | None) -> str | None:
    if not path:
        return None
    parts = [p.strip() for p in path.split("->")]
    parts = [p for p in parts if p and p not in ("(parsing)", "(building)", "(sizeof)", "(size)")]
    # `"name" / field * "doc"` wraps a field twice, and construct names it at both levels.
    parts = [p for i, p in enumerate(parts) if i == 0 or p != parts[i - 1]]
    return ".".join(parts) or None


def located(err: FormatError, *, where: str | None = None, base: int | None = None, **known) -> FormatError:
    """The one way to add a location to ``err``: ``where`` prefixes the reason (e.g. "fragment X, field a,
    tile 3"); ``base`` is where the error's offset counts from (an offset within a tile becomes one within
    its file); the other fields (``file``, ``structure``, ``path``, ``offset``, ``version``, ``within``) fill
    in what is still unknown, so the innermost caller wins."""
    if where:
        err.reason = f"{where}: {err.reason}"
        err.args = (err.reason,)
    if base is not None:
        err.offset = base + (err.offset or 0)
    for name, value in known.items():
        if value is not None and getattr(err, name) is None:
            setattr(err, name, _clean_path(value) if name == "path" else value)
    return err


def as_format_error(err: Exception, **known) -> FormatError:
    """Turn a construct error (or one of ours) into a FormatError carrying everything known."""
    if isinstance(err, FormatError):
        return located(err, **known)
    assert isinstance(err, ConstructError)
    reason = str(err)
    # construct prefixes its message with "Error in path ..."; the path is reported separately.
    if reason.startswith("Error in path"):
        reason = reason.split("\n", 1)[-1].strip()
    out = FormatError(reason or type(err).__name__)
    located(out, path=getattr(err, "path", None), offset=getattr(err, "_tdb_offset", None),
            version=getattr(err, "_tdb_version", None), within=getattr(err, "_tdb_within", None))
    return located(out, **known)


class FormatWarning(UserWarning):
    """A file that is wrong but redundant, read around: e.g. a consolidated ``.meta`` whose footers each
    fragment's own metadata file also holds."""


class UsageError(ValueError):
    """A command-line argument that cannot be acted on (the command line exits 2 with its message)."""
