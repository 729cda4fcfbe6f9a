"""``repair``: the fixes that make a damaged array work again, planned from ``validate``'s findings, with nothing
lost that was not already lost.

Metadata first: a damaged consolidated fragment metadata file (an optimisation: each fragment's own metadata
is the truth), a damaged array or group metadata file, a commit marker naming no fragment folder, a fragment
folder no marker commits (or, with ``commit_complete``, committed when it checks out), a stray file: each is set
aside. Vacuum lists, consolidated commits and ignore files that disagree with the folders are rewritten
(:mod:`.repair_lists`). A group's own metadata is repaired; its members are not walked (their findings are
reported: repair each member). A committed fragment whose metadata lies or whose tiles fail
is rewritten from its cells (``salvage``'s per-fragment copy, at its own timestamps, under the array's own
schema file): where every cell reads, that is a metadata rebuild and costs nothing; where some do not, only
with ``drop_damaged``. What no fix answers is reported.

The plan is made by doing the rewrites into a staging folder: a dry run stages into a temporary folder and
removes it; a repair in place stages into the backup folder, sets the damaged files aside there, then moves
the rewritten fragments in (folder first, commit marker last); a repair to ``out`` copies every file it keeps.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field

from .. import layout as directory
from ..errors import EncryptionError, FormatError, UnsupportedError
from ..array import _pool
from ..filters.encryption import normalize_key
from .repair_lists import list_rewrites, uncommitted_complete
from .salvage import Loss, _dense, _Source, _sparse
from ..storage import storage_for
from .validate import Finding, validate
from ..write.repair import Mover, backup_folder, copy_array, fragment_parts, fragment_version, parts_below, stage

__all__ = ["REPAIRS", "Fix", "RepairReport", "repair", "resume"]

#: in a backup folder: the moves a repair in place makes, written before the first; and the mark of the last made
JOURNAL, DONE = "journal.json", "done"

#: repair id -> what it fixes; ids are stable (``rules=``, ``--rules``)
REPAIRS = {
    "consolidated-fragment-metadata": "a damaged __fragment_meta/*.meta file is set aside (each fragment's own "
                                      "metadata is the truth)",
    "array-metadata": "a damaged __meta file (of the array, or of a group) is set aside; the others are kept",
    "commit-markers": "a commit marker that names no fragment folder is set aside",
    "uncommitted": "a fragment folder that no marker commits is set aside (readers ignore it)",
    "stray-files": "a file that is no part of the format is set aside",
    "fragments": "a committed fragment whose metadata lies or whose tiles fail is rewritten from its cells at its "
                 "own timestamps; one that loses cells only with drop_damaged",
    "folder-markers": "a folder marker object on an object store (a zero-byte key ending in /, or <name>_$folder$) "
                      "is set aside",
    "commit-lists": "a vacuum list, consolidated commits or ignore file that names what is not there (or a vacuum "
                    "line TileDB refuses) is rewritten without it (set aside when nothing is left)",
}


@dataclass
class Fix:
    """One change: which repair, the paths it sets aside (below the array folder), the findings it answers,
    and the cells it costs (cells no reader could read before; None: not known)."""

    repair: str
    action: str
    paths: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    cells_lost: int | None = 0
    detail: str = ""
    written: list = field(default_factory=list)
    applied: bool = False
    files: list = field(default_factory=list)  # files it writes (a list rewritten, a commit marker), below the array
    data: dict = field(default_factory=dict, repr=False)  # each of files -> its bytes

    def __str__(self) -> str:
        cost = "no cells" if self.cells_lost == 0 else \
            "cells: unknown" if self.cells_lost is None else f"{self.cells_lost} cell(s) already unreadable"
        state = "done" if self.applied else "planned" if self.action != "report" else "not done"
        return f"[{self.repair}] {self.action} {', '.join(self.paths)} ({cost}; {state}): {self.detail}"

    def to_json(self) -> dict:
        out = asdict(self)
        del out["data"]
        out["findings"] = [f.to_json() for f in self.findings]
        return out


@dataclass
class RepairReport:
    """What a repair planned and did: ``fixes``, the ``unrepaired`` findings, the ``backup`` folder (in place)
    or the ``out`` copy."""

    path: str
    mode: str
    fixes: list = field(default_factory=list)
    unrepaired: list = field(default_factory=list)
    backup: str | None = None
    out: str | None = None
    resumed: list = field(default_factory=list)  # backups of interrupted repairs this one finished first

    @property
    def complete(self) -> bool:
        """Every finding answered by a fix that was carried out (or, in a dry run, could be)."""
        return not self.unrepaired and all(f.action != "report" for f in self.fixes)

    def __str__(self) -> str:
        head = f"repair of {self.path} ({self.mode}): {len(self.fixes)} fix(es), {len(self.unrepaired)} finding(s) " \
               "no fix answers"
        lines = [head] + [f"  {f}" for f in self.fixes] + [f"  unrepaired: {f}" for f in self.unrepaired]
        if self.backup:
            lines.append(f"  backup: {self.backup}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"mode": self.mode, "complete": self.complete, "backup": self.backup,
                "out": self.out, "resumed": self.resumed, "fixes": [f.to_json() for f in self.fixes],
                "unrepaired": [f.to_json() for f in self.unrepaired]}


def _classify(storage, root, f: Finding, group: bool):
    """(repair id, path parts to set aside, or the fragment's name for "fragments") for a finding; None where no
    fix answers it (the schema, the key, the array folder itself; in a group, all but its metadata files)."""
    try:
        parts = parts_below(storage, root, f.file) if f.file is not None else None
    except FormatError:
        return None
    if not parts or group and parts[0] != directory.META_DIR:
        return None
    if f.rule == "stray-files" and f.file.endswith("/"):
        return "folder-markers", parts[:-1] + (parts[-1] + "/",)
    if f.rule == "stray-files":
        return ("folder-markers" if f.file.endswith("_$folder$") else "stray-files"), parts
    if f.rule in ("commits", "vacuum-targets") and parts[-1].endswith((".vac", ".con", ".ign")):
        return "commit-lists", parts
    if f.rule in ("uncommitted", "commits"):  # a folder no marker commits; a marker naming no folder
        return ("uncommitted" if f.rule == "uncommitted" else "commit-markers"), parts
    top = parts[0]
    if top == directory.FRAGMENT_META_DIR or (len(parts) == 1 and top.endswith(".meta")):
        return "consolidated-fragment-metadata", parts
    if top == directory.META_DIR:
        return "array-metadata", parts
    if top == directory.FRAGMENTS_DIR and len(parts) >= 2:
        return "fragments", parts[1]
    if top.startswith("__") and top not in directory.SPECIAL_DIRS and len(parts) >= 2:
        return "fragments", top
    return None


_ACTION = {"stray-files": "set aside", "uncommitted": "set aside", "commit-markers": "set aside",
           "consolidated-fragment-metadata": "set aside", "array-metadata": "set aside", "commit-lists": "set aside",
           "folder-markers": "set aside"}


def _set_asides(storage, root, findings, wanted) -> tuple[list, list, dict]:
    """The set-aside fixes (one per path), the findings no fix answers, and {fragment name: findings}."""
    fixes, unrepaired, fragments = {}, [], {}
    group = directory.is_group(storage, root)
    for f in findings:
        found = _classify(storage, root, f, group)
        if found is None or found[0] not in wanted:
            unrepaired.append(f)
        elif found[0] == "fragments":
            fragments.setdefault(found[1], []).append(f)
        else:
            repair, parts = found
            fix = fixes.setdefault(parts, Fix(repair, _ACTION[repair], ["/".join(parts)], detail=REPAIRS[repair]))
            fix.findings.append(f)
    return list(fixes.values()), unrepaired, fragments


def _rewrites(path, key, damaged: dict, d_storage, staging, drop_damaged: bool, version: int) -> list:
    """A fix per damaged fragment, its cells rewritten into the array at ``staging`` (holding the source's
    schema files) by salvage's per-fragment copy; the losses say what it costs."""
    lost: list[Loss] = []
    arr = _Source(path, key, lost)
    stage(arr.storage, arr.path, d_storage, staging)
    written, versions = {}, {}
    pool = _pool(1)  # the calling thread: a pool of its own per repair left a malloc arena behind each time
    for frag in arr._committed:
        if frag.name not in damaged:
            continue
        versions[frag.name] = frag.version
        try:
            written[frag.name] = _dense(arr, frag, staging, key, lost) if frag.dense else \
                _sparse(arr, frag, staging, key, lost, pool)
        except ValueError as e:  # the writer refuses cells that lying metadata let through
            lost.append(Loss(frag.name, f"its cells cannot be written back: {e}"))
    fixes = []
    for name, findings in damaged.items():
        losses = [x for x in lost if x.fragment == name]
        counts = [x.count for x in losses]
        cells = None if name not in written or None in counts else sum(counts)
        folder, marker = fragment_parts(name, versions.get(name) or fragment_version(name, version))
        action = "rewrite" if cells == 0 else "drop damaged" if drop_damaged else "report"
        detail = (f"rewritten from its cells as {len(written.get(name, []))} fragment(s) at its own timestamps, "
                  "metadata recomputed") if cells == 0 else "; ".join(str(x) for x in losses)
        fixes.append(Fix("fragments", action, ["/".join(p) for p in (folder, marker) if p is not None],
                         findings, cells, detail, written.get(name, [])))
    return fixes


def _check_arguments(path, in_place, out, dry_run, rules):
    if in_place and out is not None:
        raise ValueError("in_place, out: choose one: repair in place (with a backup), or into a copy at out")
    if rules is not None:
        if isinstance(rules, str) or not all(isinstance(r, str) for r in rules):
            raise TypeError(f"rules: expected a list of repair ids, not {rules!r}")
        unknown = sorted(set(rules) - set(REPAIRS))
        if unknown:
            raise ValueError(f"rules: unknown repair id(s) {', '.join(unknown)} (known: {', '.join(REPAIRS)})")
    storage, root = storage_for(path)
    if directory.dialect(storage, root) is not None:
        raise UnsupportedError("repair works on format versions 1 and later; `tdbformat salvage` copies what a "
                               "TileDB 0.x or 1.x array still holds", file=str(root))
    if out is not None and not dry_run:
        d_storage, d_root = storage_for(out)
        if str(d_root).rstrip("/") == str(root).rstrip("/") or str(d_root).startswith(str(root).rstrip("/") + "/"):
            raise ValueError("out: the repaired copy must go outside the array (use in_place=True to repair it)")
        if d_storage.is_file(d_root) or d_storage.is_dir(d_root) and d_storage.list(d_root):
            raise ValueError(f"out: {out} exists and is not empty")
    return storage, root


def repair(path, in_place=False, out=None, dry_run=None, rules=None, key=None, drop_damaged=False,
           commit_complete=False) -> RepairReport:
    """Plan, and unless it is a dry run carry out, the fixes for what :func:`validate` finds in the array at
    ``path``: ``in_place=True`` sets what it replaces aside into ``path/.tdbformat-backup/<time>/`` (a backup
    that restores the input byte for byte), ``out=`` writes a repaired copy and leaves ``path`` untouched;
    without either (or with ``dry_run=True``) nothing changes. ``rules``: ids of :data:`REPAIRS` to apply
    (default all); ``drop_damaged``: also rewrite fragments that lose unreadable cells; ``commit_complete``:
    commit an uncommitted fragment folder whose files are all there and whose tiles all check out, rather than
    set it aside."""
    dry_run = not (in_place or out is not None) if dry_run is None else bool(dry_run)
    key = normalize_key(key)
    storage, root = _check_arguments(path, in_place, out, dry_run, rules)
    resumed = resume(storage, root) if in_place and not dry_run else []
    findings = validate(path, key=key)
    if any(f.rule == "key" for f in findings):  # without the right key every encrypted file looks damaged
        raise EncryptionError("repair needs the array's key: " + "; ".join(f.message for f in findings
                                                                         if f.rule == "key"), file=str(root))
    wanted = set(REPAIRS if rules is None else rules)
    fixes, unrepaired, damaged = _set_asides(storage, root, findings, wanted)
    mode = "dry run" if dry_run else "in place" if in_place else "copy"
    report = RepairReport(str(path), mode, fixes, unrepaired, out=None if out is None else str(out), resumed=resumed)
    version = _array_version(storage, root, key, bool(damaged))
    if commit_complete and version is not None:
        _commit_complete(storage, root, key, report, version)
    if dry_run:
        if damaged:
            with tempfile.TemporaryDirectory(prefix="tdbformat-repair-") as scratch:
                report.fixes += _rewrites(path, key, damaged, storage_for(scratch)[0], scratch, drop_damaged, version)
        _plan_lists(storage, root, key, report, wanted, version, (storage, root))
        return report
    if in_place:
        report.backup = str(backup_folder(storage, root))
        staging = storage.join(report.backup, "staging")
        report.fixes += _rewrites(path, key, damaged, storage, staging, drop_damaged, version) if damaged else []
        _plan_lists(storage, root, key, report, wanted, version, (storage, root))
        _apply_in_place(storage, root, report, version)
    else:
        _apply_copy(storage, root, out, report, damaged, key, drop_damaged, version, wanted)
    return report


def _array_version(storage, root, key, needed: bool) -> int | None:
    """The array's format version; None for a group, or where no schema says (the findings say why) and no
    fragment is to be rewritten (``needed``: one is, so the FormatError is raised)."""
    try:
        return directory.array_format_version(storage, root, key)
    except FormatError:
        if needed:
            raise
        return None


def _gone(report) -> set:
    """Names of the fragments the fixes set aside (uncommitted folders, fragments rewritten or dropped)."""
    out = set()
    for f in report.fixes:
        if f.repair == "fragments" and f.action != "report" or f.repair == "uncommitted" and f.action == "set aside":
            out |= {p.split("/")[-1] for p in f.paths if not p.endswith((".ok", ".wrt"))}
    return out


def _plan_lists(storage, root, key, report, wanted, version, dest) -> None:
    """The lists fixes (:func:`.list_rewrites`), once the fixes that set fragments aside are known; each takes
    the findings about its file from the set-aside fix they were first given."""
    if "commit-lists" not in wanted or version is None and not directory.is_group(storage, root):
        return
    by_path = {tuple(f.paths): f for f in report.fixes if f.repair == "commit-lists"}
    for parts, into, why in list_rewrites(storage, root, key, version, _gone(report), dest):
        fix = by_path.pop(("/".join(parts),), None) or Fix("commit-lists", "set aside", ["/".join(parts)])
        fix.detail = why
        if into is not None:
            fix.action, fix.files, fix.data = "rewrite", ["/".join(into[0])], {"/".join(into[0]): into[1]}
        if fix not in report.fixes:
            report.fixes.append(fix)


def _commit_complete(storage, root, key, report, version) -> None:
    """Each uncommitted folder set aside is committed instead where it checks out; else its reasons are said."""
    for f in report.fixes:
        if f.repair == "uncommitted":
            *inner, name = f.paths[0].split("/")
            # the array that holds the folder: this one, or one inside it (a dimension label's)
            inner = inner[:-1] if inner and inner[-1] == directory.FRAGMENTS_DIR else inner
            marker, errors = uncommitted_complete(storage, storage.join(root, *inner), key, name, version)
            if errors:
                f.detail = "not committed: " + "; ".join(errors)
            else:
                marker = "/".join([*inner, *marker])
                f.action, f.files, f.data = "commit", [marker], {marker: b""}
                f.detail = "every file is there and every tile checks out: committed"


def _fragment_moves(fix, version):
    return [p for name in fix.written for p in fragment_parts(name, fragment_version(name, version))]


def _markers_last(paths) -> list:
    return [p for p in paths if not p[-1].endswith((".ok", ".wrt"))] + \
           [p for p in paths if p[-1].endswith((".ok", ".wrt"))]


def _in_place_moves(report, version) -> list:
    """("put", parts) from staging into the array, ("aside", parts) from the array into the backup, in an order
    where every state between two moves reads as before or as after: the rewritten fragments committed first
    (folders, then markers), then the files written in place of others (lists, commit markers), then the
    damaged fragments uncommitted (marker, then folder), then the rest."""
    rewritten = [f for f in report.fixes if f.repair == "fragments" and f.action != "report"]
    gone = [tuple(p.split("/")) for f in rewritten for p in f.paths]
    moves = [("put", p) for p in _markers_last([p for f in rewritten for p in _fragment_moves(f, version) if p])]
    moves += [("put", tuple(p.split("/"))) for f in report.fixes for p in f.files]
    moves += [("aside", p) for p in _markers_last(gone)[::-1]]  # the marker first
    moves += [("marker" if p.endswith("/") else "aside", tuple(p.rstrip("/").split("/"))) for f in report.fixes
              if _sets_aside(f) for p in f.paths if not any(tuple(p.split("/"))[:len(g)] == g for g in gone)]
    return moves


def _sets_aside(fix) -> bool:
    return fix.action == "set aside" or fix.repair == "commit-lists" and fix.action == "rewrite"


def _run_journal(storage, root, backup, moves) -> None:
    """Each move not made yet (its source still there): a journal interrupted anywhere finishes by running again."""
    mover = Mover(storage, root, backup)
    staging = storage.join(backup, "staging")
    for kind, parts in moves:
        parts = tuple(parts)
        if kind == "marker":  # an object, not a file: it says itself whether it is still there
            mover.set_aside_marker(parts)
            continue
        src = mover.path(parts, staging) if kind == "put" else mover.path(parts)
        if storage.is_file(src) or storage.is_dir(src):
            mover.put(staging, parts) if kind == "put" else mover.set_aside(parts)
    storage.write(storage.join(backup, DONE), b"{}")


def _apply_in_place(storage, root, report, version) -> None:
    """The moves written down (the journal) before the first is made, then made; the report kept beside them,
    to undo the repair by hand."""
    moves = _in_place_moves(report, version)
    staging = storage.join(report.backup, "staging")
    for f in report.fixes:
        for rel, data in f.data.items():
            storage.write(storage.join(staging, *rel.split("/")), data)
    journal = {"path": report.path, "moves": [[k, list(p)] for k, p in moves], "report": report.to_json()}
    storage.commit(storage.join(report.backup, JOURNAL), json.dumps(journal, default=str).encode())
    _run_journal(storage, root, report.backup, moves)
    for f in report.fixes:
        f.applied = f.action != "report"


def resume(storage, root) -> list:
    """Finish every repair of the array that was interrupted (a journal without its done marker): the backup
    folders it finished."""
    backups = storage.join(root, directory.BACKUP_DIR)
    done = []
    for name in sorted(storage.list(backups)) if storage.is_dir(backups) else []:
        folder = storage.join(backups, name)
        if storage.is_file(storage.join(folder, JOURNAL)) and not storage.is_file(storage.join(folder, DONE)):
            journal = json.loads(storage.read(storage.join(folder, JOURNAL), what="repair journal"))
            _run_journal(storage, root, folder, journal["moves"])
            done.append(str(folder))
    return done


def _apply_copy(storage, root, out, report, damaged, key, drop_damaged, version, wanted) -> None:
    """The array copied to ``out`` without what is set aside, the rewritten fragments moved in last."""
    d_storage, d_root = storage_for(out)
    staging = d_storage.join(d_root, directory.BACKUP_DIR, "staging")
    if damaged:
        report.fixes += _rewrites(report.path, key, damaged, d_storage, staging, drop_damaged, version)
    _plan_lists(storage, root, key, report, wanted, version, (d_storage, d_root))
    rewritten = [f for f in report.fixes if f.repair == "fragments" and f.action != "report"]
    skip = [tuple(p.split("/")) for f in report.fixes if _sets_aside(f) for p in f.paths] + \
           [tuple(p.split("/")) for f in rewritten for p in f.paths]
    copy_array(storage, root, d_storage, d_root, skip)
    mover = Mover(d_storage, d_root, None)
    for parts in _markers_last([p for f in rewritten for p in _fragment_moves(f, version) if p is not None]):
        mover.put(staging, parts)
    written = {tuple(r.split("/")): d for f in report.fixes for r, d in f.data.items()}
    for rel in _markers_last(list(written)):
        d_storage.commit(d_storage.join(d_root, *rel), written[rel])
    if damaged:
        d_storage.remove_folder(d_storage.join(d_root, directory.BACKUP_DIR))
    for f in report.fixes:
        f.applied = f.action != "report"
