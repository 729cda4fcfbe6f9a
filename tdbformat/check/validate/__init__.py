"""``validate``: named rules run over an array, a group (recursively) or one file, each failure a
:class:`Finding` that names the rule, the file, the structure, the field path, the byte offset, and expected
against found.

The rules reuse the read path (``layout.Listing``, ``array.fragment``, ``array.tiles.Tiles``,
``array.order``): a rule turns the :class:`~tdbformat.errors.FormatError` a reader would raise into a finding
at its location, and checks what a reader takes on trust (offsets, counts, statistics, order) with numpy.

- :mod:`.layout`: files parse, schemas, the key, commits, stray files, vacuum lists;
- :mod:`.tiles`: per fragment, file sizes, tile offsets, tile decoding and cell counts, statistics;
- :mod:`.sparse`: R-tree MBRs, global order and duplicates of sparse fragments.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import partial

from ...errors import ChecksumError, EncryptionError, FormatError, UnsupportedError
from ...show.notebook import findings_html

__all__ = ["Finding", "Findings", "RULES", "Report", "validate", "validate_many"]

#: rule id -> (severity, what it checks); ids are stable: scripts and --rules name them
RULES = {
    "file-parses": ("error", "every file parses and leaves nothing unread"),
    "file-sizes": ("error", "the file sizes the fragment metadata records equal the sizes on disk"),
    "tile-offsets": ("error", "tile offsets start at 0, increase, and stay inside their file; one per tile"),
    "tile-decodes": ("error", "each tile decodes, and its size matches the tile sizes and cell counts"),
    "last-tile-cells": ("error", "the last tile holds the cell count the metadata records (TileDB#4383)"),
    "dense-tile-count": ("error", "a dense fragment's non-empty domain implies the number of tiles its offsets "
                                  "have (TileDB#5655)"),
    "rtree-mbrs": ("error", "R-tree leaf MBRs contain their tiles' coordinates, and parents contain children"),
    "global-order": ("error", "a sparse fragment's cells are in global order"),
    "duplicates": ("error", "a sparse fragment has no duplicate coordinates unless the schema allows them"),
    "tile-stats": ("error", "tile mins, maxes, sums and null counts equal the values recomputed from the data"),
    "checksums": ("error", "MD5 and SHA-256 checksum filters verify"),
    "commits": ("error", "every commit marker and consolidated commits entry names a fragment folder; no vacuum "
                         "list line is one TileDB refuses"),
    "uncommitted": ("warning", "every fragment folder is committed (one that is not, a write that stopped, "
                               "readers ignore; `tdbformat clean --uncommitted` removes it)"),
    "stray-files": ("warning", "every file is part of the format"),
    "vacuum-targets": ("warning", "vacuum lists name fragments (metadata files, in __meta) that are on disk"),
    "fragment-schema": ("error", "the schema each fragment names exists"),
    "schema-evolution": ("error", "every schema has the array type and dimensions of the latest (evolution "
                                  "changes attributes only)"),
    "key": ("error", "the key decrypts the array, or the array is not encrypted"),
    "fragment-version": ("error", "each fragment's format version is one the array's other files allow"),
}


@dataclass
class Finding:
    """One rule that failed, and where."""

    rule: str
    severity: str
    message: str
    file: str | None = None
    structure: str | None = None
    field: str | None = None
    offset: int | None = None
    expected: object = None
    found: object = None

    def __str__(self) -> str:
        where = ", ".join(x for x in (self.file, self.structure and f"{self.structure}",
                                      self.field and f"field {self.field}",
                                      None if self.offset is None else f"byte offset {self.offset}") if x)
        diff = "" if self.expected is None and self.found is None else \
            f" (expected {self.expected}, found {self.found})"
        return f"{self.severity} [{self.rule}] {where}: {self.message}{diff}"

    def to_json(self) -> dict:
        from ...show import jsonable

        return {k: (jsonable(v) if k in ("expected", "found") else v) for k, v in asdict(self).items()}


class Findings(list):
    """What :func:`validate` returns: a list of :class:`Finding`, shown as a table in a notebook."""

    def _repr_html_(self) -> str:
        return findings_html(self)


class Report:
    """The findings of one validation, limited to the selected rules; each finding is recorded once."""

    def __init__(self, rules=None, progress=None):
        self.rules = set(RULES) if rules is None else set(rules)
        self.findings: list[Finding] = []
        self._seen = set()
        #: ``progress(advance, total_delta)``: called as work is found and done (None: silent)
        self.progress = progress or (lambda done=0, total=0: None)

    def wants(self, *rules: str) -> bool:
        return bool(self.rules.intersection(rules))

    def add(self, rule: str, message: str, *, file=None, structure=None, field=None, offset=None,
            expected=None, found=None) -> None:
        if rule not in self.rules:
            return
        f = Finding(rule, RULES[rule][0], message, None if file is None else str(file), structure, field,
                    None if offset is None else int(offset), expected, found)
        key = (f.rule, f.file, f.offset, f.message)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(f)

    def error(self, err: FormatError, rule: str = "file-parses", file=None) -> None:
        """A reader's FormatError as a finding: checksum and encryption failures go to their own rules."""
        if isinstance(err, ChecksumError):
            rule = "checksums"
        elif isinstance(err, EncryptionError):
            rule = "key"
        self.add(rule, err.reason, file=err.file or file, structure=err.structure, field=err.path,
                 offset=err.offset if err.within is None else None)


def _check_rules(rules):
    if rules is None:
        return None
    if isinstance(rules, str) or not all(isinstance(r, str) for r in rules):
        raise TypeError(f"rules: expected a list of rule ids, not {rules!r}")
    unknown = sorted(set(rules) - set(RULES))
    if unknown:
        raise ValueError(f"rules: unknown rule id(s) {', '.join(unknown)} (known: {', '.join(RULES)})")
    return list(rules)


def validate(path, key=None, rules=None, progress=None, storage_options=None) -> Findings:
    """Run the rules (``rules``: ids of :data:`RULES`, default all) over the array, group or file at ``path``
    (``key``: of an encrypted array; ``storage_options``: of a URL's fsspec filesystem); the findings, in the
    order found. ``progress(done, total)`` is called with increments as tiles are found and checked."""
    from ...layout import LEGACY_SCHEMA, SCHEMA_DIR, is_group
    from ...filters.encryption import normalize_key
    from ...storage import storage_for
    from .layout import validate_array, validate_file, validate_group

    report = Report(_check_rules(rules), progress)
    key = normalize_key(key)  # a key of the wrong shape: EncryptionError, a ValueError naming the key
    storage, root = storage_for(path, storage_options)
    if storage.is_file(root):
        validate_file(storage, root, key, report)
    elif is_group(storage, root):
        validate_group(storage, root, key, report)
    elif storage.is_dir(root):
        if not (storage.is_dir(storage.join(root, SCHEMA_DIR)) or storage.is_file(storage.join(root, LEGACY_SCHEMA))):
            raise FormatError("not a TileDB array or group: no schema and no group marker", file=str(root))
        validate_array(storage, root, key, report)
    else:
        raise FormatError("no file or folder here", file=str(root))
    return Findings(report.findings)


def validate_many(paths, key=None, rules=None, scheduler=None, storage_options=None) -> list[list[Finding]]:
    """:func:`validate` of each of ``paths``, the findings of each in the order of ``paths``: one after
    another here, or with ``scheduler`` (a ``dask.distributed`` scheduler's address) one task per path spread
    over that cluster's workers. ``storage_options`` apply to the URLs among ``paths``; a path that is no
    array, group or file raises its FormatError, as :func:`validate` does."""
    if isinstance(paths, (str, bytes)) or not paths:
        raise TypeError(f"paths: expected a non-empty list of paths, not {paths!r}")
    rules = _check_rules(rules)
    if storage_options is not None and not isinstance(storage_options, dict):
        raise TypeError(f"storage_options: expected a dict, not {type(storage_options).__name__}")
    if scheduler is None:
        return [_validate_one(p, key, rules, storage_options) for p in paths]
    try:
        from distributed import Client
    except ImportError:
        raise UnsupportedError("validating on a dask cluster (--scheduler) needs dask.distributed: pip install "
                               "'tdbformat[dask]'") from None
    with Client(scheduler) as client:
        # bound by partial: client.map takes key= as the task's name; pure=False: never a cached result
        one = partial(_validate_one, key=key, rules=rules, storage_options=storage_options)
        futures = client.map(one, [str(p) for p in paths], pure=False)
        return client.gather(futures)


def _validate_one(path, key, rules, storage_options) -> list[Finding]:
    """One path's validation, its URLs under ``storage_options`` (a local path ignores them), in a task."""
    from contextlib import nullcontext

    from ...storage import default_storage_options

    with default_storage_options(storage_options) if storage_options is not None else nullcontext():
        return validate(path, key=key, rules=rules)
