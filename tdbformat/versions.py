"""Format versions, and the version gates that declarations are written with.

A field that exists only in some format versions is declared once, wrapped in :func:`since`,
:func:`until` or :func:`between`. The wrapper records its bounds, so that ``tdbformat.spec`` can list a
structure's fields at any version without parsing anything.

Bounds follow Python ranges: ``since(7, x)`` is present from version 7 on, ``until(5, x)`` up to and
including version 4 (it was removed in 5), ``between(3, 5, x)`` in versions 3 and 4.

The governing version is the nearest one a structure stores itself (a field declared with
:data:`FormatVersion`), looked up from the innermost structure outwards; failing that, the
``version=`` keyword given to ``parse``/``build``.
"""

from __future__ import annotations

from construct import Int32ul, Subconstruct

from .errors import FormatError, VersionError

__all__ = ["LATEST", "KNOWN_VERSIONS", "checked_version", "since", "until", "between", "format_version", "FormatVersion",
           "Feature", "FEATURES", "DIALECTS", "DIALECT_1X_LABELS", "dialect_label", "since_library", "LibraryVersion"]

#: The newest format version, written by TileDB 2.30 and later.
LATEST = 23
#: Every format version TileDB has written, oldest first.
KNOWN_VERSIONS = tuple(range(1, LATEST + 1))

_KEY = "_format_version"


def checked_version(version, argument: str = "version") -> int:
    """``version`` as an int if it is a known format version, else ValueError naming ``argument``."""
    if isinstance(version, bool) or version not in KNOWN_VERSIONS:
        raise ValueError(f"{argument}: expected a format version from 1 to {LATEST}, not {version!r}")
    return int(version)


def format_version(context, required: bool = True):
    """The format version governing ``context``: the nearest stored one, else the ``version=`` argument."""
    ctx = context
    while ctx is not None:
        v = ctx.get(_KEY)
        if v is not None:
            return v
        ctx = ctx.get("_")
    v = context.get("_params", {}).get("version")
    if v is None and required:
        raise FormatError("no format version in force: the structure stores none, so pass version=")
    return v


def _span(lo: int | None, hi: int | None) -> str:
    """``lo <= v < hi`` as the docs write it: "v7+", "v1-v4", "v3-v4"."""
    if hi is None:
        return f"v{lo}+"
    if lo is None:
        return f"v1-v{hi - 1}"
    return f"v{lo}-v{hi - 1}"


class Versioned(Subconstruct):
    """A field that exists only for ``lo <= version < hi`` (``None`` is unbounded)."""

    def __init__(self, lo: int | None, hi: int | None, subcon):
        super().__init__(subcon)
        self.lo, self.hi = lo, hi
        self.flagbuildnone = True

    def present(self, version: int) -> bool:
        return (self.lo is None or version >= self.lo) and (self.hi is None or version < self.hi)

    def span(self) -> str:
        return _span(self.lo, self.hi)

    def _parse(self, stream, context, path):
        if self.present(format_version(context)):
            return self.subcon._parsereport(stream, context, path)
        return None

    def _build(self, obj, stream, context, path):
        version = format_version(context)
        if self.present(version):
            if obj is None and not self.subcon.flagbuildnone:
                raise VersionError(f"this field is required in format v{version} (it exists in {self.span()})",
                                   path=path, version=version)
            return self.subcon._build(obj, stream, context, path)
        if obj is not None:
            raise VersionError(f"this field exists only in format versions {self.span()}, not in v{version}",
                               path=path, version=version)
        return None

    def _sizeof(self, context, path):
        return self.subcon._sizeof(context, path) if self.present(format_version(context)) else 0


def since(version: int, subcon) -> Versioned:
    """``subcon`` is present from format ``version`` on."""
    return Versioned(version, None, subcon)


def until(version: int, subcon) -> Versioned:
    """``subcon`` is present in format versions before ``version`` (it was removed in ``version``)."""
    return Versioned(None, version, subcon)


def between(lo: int, hi: int, subcon) -> Versioned:
    """``subcon`` is present for ``lo <= version < hi``."""
    return Versioned(lo, hi, subcon)


class _FormatVersionField(Subconstruct):
    """A stored u32 format version that governs the structure holding it and everything nested in it."""

    def __init__(self, strict: bool):
        super().__init__(Int32ul)
        self.strict = strict

    def _check(self, value, path):
        if self.strict and not (1 <= value <= LATEST):
            raise VersionError(f"format version {value} is not one of the known versions 1 to {LATEST}",
                               path=path, version=value)

    def _parse(self, stream, context, path):
        value = self.subcon._parsereport(stream, context, path)
        self._check(value, path)
        context[_KEY] = value
        return value

    def _build(self, obj, stream, context, path):
        self._check(obj, path)
        context[_KEY] = obj
        return self.subcon._build(obj, stream, context, path)

    def _sizeof(self, context, path):
        return 4


#: A u32 format version (1 to 23) that governs its structure.
FormatVersion = _FormatVersionField(strict=True)
#: The same, for headers that TileDB writes with any library version (even experimental ones).
AnyFormatVersion = _FormatVersionField(strict=False)


class Feature:
    """A behaviour gate: something readers and writers do differently from (``since``) or before (``until``)
    a format version, that no field declares (a file naming rule, a chunking rule, a codec detail). Declared
    here once, so ``spec.diff`` and the generated docs list it under the version that changed it."""

    def __init__(self, name: str, doc: str, since: int | None = None, until: int | None = None):
        self.name, self.doc, self.since, self.until = name, doc, since, until

    def __call__(self, version: int | None) -> bool:
        """Whether the behaviour holds at ``version`` (None: a name without a version, v1-4 era: as v4)."""
        v = 4 if version is None else version
        return (self.since is None or v >= self.since) and (self.until is None or v < self.until)

    def span(self) -> str:
        return _span(self.since, self.until)

    def __repr__(self):
        return f"<Feature {self.name} ({self.span()})>"


def _features(*features: Feature) -> dict[str, Feature]:
    return {f.name: f for f in features}


#: Every behaviour gate, by name (see :class:`Feature`).
FEATURES = _features(
    Feature("zipped_coordinates", "sparse coordinates of a tile are stored zipped (x1 y1 x2 y2 ...) unless the "
            "coordinate pipeline compresses them (REFERENCE §4.3)", until=2),
    Feature("coordinates_per_dimension", "each dimension's coordinates are a field with its own data file, "
            "not one __coords file (REFERENCE §11)", since=5),
    Feature("dimension_filters", "a dimension has a filter pipeline of its own (empty: the schema's coords_filters "
            "apply); before, it has none, so the per-dimension tiles of fragments that TileDB 2.x appends to a "
            "v1-4 array are stored unfiltered (Dimension::deserialize; read at the schema's version)", since=5),
    Feature("commit_markers", "a fragment is committed by a marker file (.ok, later __commits/*.wrt), not by "
            "the presence of its metadata file", since=5),
    Feature("schema_folder", "schemas are files of __schema/, named by timestamp, not one __array_schema.tdb",
            since=10),
    Feature("footer_length", "a u64 footer length ends every fragment metadata file (v5-9: only with "
            "var-sized dimensions)", since=10),
    Feature("footer_length_with_var_dimensions", "a u64 footer length ends the fragment metadata file when a "
            "dimension is var-sized", since=5),
    Feature("fragments_folder", "fragments are folders of __fragments/, commits files of __commits/", since=12),
    Feature("partial_time_overlap", "a sparse fragment whose timestamp range overlaps a read's window only in "
            "part is read (consolidation with timestamps)", since=15),
    Feature("field_name_files", "data files are named after their field", until=8),
    Feature("escaped_field_name_files", "data files are named after their field, percent-encoded", since=8,
            until=9),
    Feature("indexed_field_files", "data files are named a<i>, d<j>, t, dt, dci", since=9),
    Feature("pipeline_chunk_bound", "tiles are chunked by the filter pipeline's max_chunk_size (0: one cell a "
            "chunk), not by the writer's bound (REFERENCE §4.1)", until=5),
    Feature("var_chunking", "var data is chunked without splitting a cell (get_var_chunk_sizes)", since=11),
    Feature("ascii_rle_offsets", "RLE of ASCII strings carries the offsets: no offsets tile data (§4.2)", since=12),
    Feature("ascii_dictionary_offsets", "dictionary encoding of ASCII strings carries the offsets", since=13),
    Feature("utf8_string_offsets", "RLE and dictionary encoding of UTF-8 strings carry the offsets", since=17),
    Feature("delta_overrun", "DELTA writes one difference past the end of its input (TileDB 2.16)", since=19,
            until=20),
    Feature("windowed_datetimes", "bit-width reduction and positive delta work on datetimes and times as int64 "
            "(before, they pass them through)", since=20),
    Feature("double_delta_first_delta_bits", "double delta sizes its bit width over the first delta too",
            since=23),
    Feature("vacuum_files", "consolidation lists the fragments it replaced in a .vac file (before, TileDB "
            "deleted them at once)", since=5),
    Feature("consolidation_with_timestamps", "sparse consolidation keeps every cell version and its timestamp "
            "(constants::consolidation_with_timestamps_min_version); before, the newest of each cell", since=15),
    Feature("consolidation_delete_meta", "sparse consolidation keeps the delete metadata of the cells a delete "
            "removed (constants::deletes_min_version)", since=16),
    Feature("consolidation_max_fragment_size", "consolidation cuts its fragment at "
            "sm.consolidation.max_fragment_size (TileDB 2.13)", since=16),
    Feature("relative_vacuum_uris", "vacuum file lines are relative to the array (absolute URIs before)",
            since=19),
)


# --- Dialects from before format version 1 (prev1.md): read-only, labelled by the library that wrote them ---

#: The two pre-v1 dialects: TileDB 0.1-0.6 (raw structs, no version anywhere) and 1.0-1.3 (generic tiles
#: that store the library version). Format versions 1 and later stay plain integers.
DIALECTS = ("0.x", "1.x")
#: The sub-labels of the 1.x dialect, by library minor version.
DIALECT_1X_LABELS = ("1.0", "1.1", "1.2", "1.3")


def dialect_label(library_version) -> str:
    """``"0.x"`` for a 0.x array (it stores no version: ``(0,)``), ``"1.0"`` to ``"1.3"`` for the library
    version ``(1, minor, patch)`` a 1.x file stores."""
    v = tuple(library_version)
    if v[:1] == (0,):
        return "0.x"
    label = f"{v[0]}.{v[1]}" if len(v) > 1 else ""
    if label not in DIALECT_1X_LABELS:
        raise VersionError(f"library version {'.'.join(map(str, v))} is not one of TileDB 1.0 to 1.3",
                           version=".".join(map(str, v)))
    return label


class LibraryGate(Versioned):
    """A field of a pre-v1 dialect that exists only for library versions ``lo <= (major, minor) < hi``
    (tuples; the governing "version" is the library version the structure stores, or ``version=``)."""

    def present(self, version) -> bool:
        return isinstance(version, tuple) and super().present(version)  # no format version (1+) has it

    def span(self) -> str:
        def text(v):
            return ".".join(map(str, v))
        if self.hi is None:
            return f"{text(self.lo)}+"
        return f"{text(self.lo) if self.lo else '0.x'}-{text(self.hi)} (excl.)"


def since_library(version: tuple, subcon) -> LibraryGate:
    """``subcon`` is present from library ``version`` (e.g. ``(1, 2)``) on, in the pre-v1 dialects."""
    return LibraryGate(tuple(version), None, subcon)


class _LibraryVersionField(Subconstruct):
    """The ``int32[3]`` library version (major, minor, patch) of the 1.x dialect; it governs its structure,
    as :data:`FormatVersion` does for v1+."""

    def __init__(self):
        from construct import Array as _Array, Int32sl
        super().__init__(_Array(3, Int32sl))

    def _parse(self, stream, context, path):
        value = tuple(self.subcon._parsereport(stream, context, path))
        dialect_label(value)
        context[_KEY] = value
        return value

    def _build(self, obj, stream, context, path):
        value = tuple(obj)
        dialect_label(value)
        context[_KEY] = value
        self.subcon._build(list(value), stream, context, path)
        return value

    def _sizeof(self, context, path):
        return 12


#: The library version ``int32[3]`` a 1.x file stores (1.0 to 1.3).
LibraryVersion = _LibraryVersionField()
#: The first TileDB release that writes (and so reads) each format version: spec/array_format_history.md
#: ("Introduced in TileDB X"). A release reads every format version up to its own.
FIRST_RELEASE = {1: "1.4", 2: "1.5", 3: "1.6", 4: "1.7", 5: "2.0", 6: "2.1", 7: "2.2", 8: "2.2.3", 9: "2.3",
                 10: "2.4", 11: "2.7", 12: "2.8", 13: "2.9", 14: "2.10", 15: "2.11", 16: "2.12", 17: "2.14",
                 18: "2.15", 19: "2.16", 20: "2.17", 21: "2.19", 22: "2.25", 23: "2.30"}
#: Format versions that the spec's history gives a release which does not write them: v23 ("Introduced in
#: TileDB 2.30") is on TileDB's main branch only; 2.30.0 and 2.30.1 (TileDB-Py 0.36.1) write and read up to 22
#: (their constants.cc: ``format_version = 22``) and refuse 23 ("newer than the library format version").
UNRELEASED = (23,)
#: What every writer writes when no version is given: the newest version a released TileDB writes, so that
#: the array opens in released TileDB (``version=LATEST`` stays possible).
DEFAULT_WRITE_VERSION = max(v for v in FIRST_RELEASE if v not in UNRELEASED)


def first_reader(version: int) -> str:
    """The TileDB releases that read format ``version``: "TileDB 2.25+", or that none released does yet."""
    if version in UNRELEASED:
        return f"no released TileDB yet (the spec names {FIRST_RELEASE[version]}, which writes {DEFAULT_WRITE_VERSION})"
    return f"TileDB {FIRST_RELEASE[version]}+"


def readers_text() -> str:
    """One line per format version and the releases that read it, for ``--help`` texts."""
    return "; ".join(f"v{v}: {first_reader(v)}" for v in KNOWN_VERSIONS)


__all__ += ["FIRST_RELEASE", "UNRELEASED", "DEFAULT_WRITE_VERSION", "first_reader", "readers_text"]
