"""The ``tdbformat`` command: its arguments (:func:`parser`) and :func:`main`. Each subcommand is a ``cmd_*``
function of :mod:`.commands`, registered in :func:`parser`; :mod:`.output` prints."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import FormatError, UsageError
from .output import cli_words
from .commands import (
    cmd_cat, cmd_clean, cmd_consolidate, cmd_convert, cmd_create, cmd_diff, cmd_diff_versions, cmd_du, cmd_explain,
    cmd_export_ksy, cmd_fragments, cmd_history, cmd_html, cmd_inspect, cmd_ls, cmd_mbrs, cmd_meta, cmd_repair,
    cmd_salvage, cmd_schema, cmd_spec, cmd_stats, cmd_vacuum, cmd_validate, cmd_versions, cmd_write,
)

__all__ = ["main", "parser"]


def _writing_parsers(sub, key_help: str) -> None:
    """The parsers of create, write and convert."""
    from ..versions import DEFAULT_WRITE_VERSION, KNOWN_VERSIONS, readers_text

    version_help = (f"format version (default {DEFAULT_WRITE_VERSION}: the newest a released TileDB writes). "
                    f"Who reads each: {readers_text()}")
    s = sub.add_parser("create", help="create an empty array from a schema (the JSON of `tdbformat schema --json`)")
    s.add_argument("path")
    s.add_argument("--schema", required=True, metavar="SCHEMA.json", help="`tdbformat schema --json` output of an "
                   "array, or the dict ArraySchema.build takes")
    s.add_argument("--version", type=int, choices=KNOWN_VERSIONS, default=DEFAULT_WRITE_VERSION, metavar="N",
                   help=version_help)
    s.add_argument("--timestamp", type=int, metavar="T", help="the schema's timestamp (ms; default now)")
    s.add_argument("--key", help="AES-256-GCM key to encrypt the array with")
    s.add_argument("--json", action="store_true", help="print what was written as JSON (docs/json-schema/create.v1.json)")
    s.set_defaults(func=cmd_create)

    s = sub.add_parser("write", help="write one fragment from a .npy, CSV or Parquet file")
    s.add_argument("path")
    s.add_argument("file", help=".npy (one attribute, dense), .csv or .parquet (a column per dimension and "
                   "attribute; empty CSV cells are null)")
    s.add_argument("--subarray", metavar="LO:HI,...", help="dense: the cells the data covers, inclusive "
                   "(default: the whole domain for .npy, the box of the coordinates for CSV/Parquet)")
    s.add_argument("--timestamp", type=int, metavar="T", help="the fragment's timestamp (ms; default now)")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help="print what was written as JSON (docs/json-schema/write.v1.json)")
    s.set_defaults(func=cmd_write)

    s = sub.add_parser("convert", help="rewrite an array at another format version (a new array at DST)")
    s.add_argument("src")
    s.add_argument("dst", help="must not exist; after a failure, delete what was written there")
    s.add_argument("--version", type=int, choices=KNOWN_VERSIONS, default=DEFAULT_WRITE_VERSION, metavar="N",
                   help=version_help)
    s.add_argument("--merge", action="store_true", help="all cells visible now as one fragment (deletes applied)")
    s.add_argument("--max-chunk-size", type=int, default=65536, metavar="BYTES",
                   help="the writer's chunk bound from v5 (TileDB's 64 KiB; 192 as the tiledb-py 0.19-0.25 wheels)")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help="print what was written as JSON (docs/json-schema/convert.v1.json)")
    s.set_defaults(func=cmd_convert)


def _rescue_parsers(sub, key_help: str, json_help: str) -> None:
    """The parsers of salvage and repair."""
    from ..check.repair import REPAIRS

    s = sub.add_parser("salvage", help="copy every cell of SRC that can still be read into a new array DST and "
                       "print what was lost; exit 1 if anything was (SRC is only read)")
    s.add_argument("src")
    s.add_argument("dst")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help=json_help % "salvage")
    s.set_defaults(func=cmd_salvage)
    s = sub.add_parser("repair", help="fix what validate finds: damaged consolidated or array metadata, dangling "
                       "commits, uncommitted folders, stray files, fragments whose metadata lies, vacuum lists and consolidated commits "
                       "that disagree with the folders (a dry run unless --in-place or --out)")
    s.add_argument("path")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--in-place", action="store_true", help="repair PATH itself; what is set aside goes into "
                       "PATH/.tdbformat-backup/<time>/")
    where.add_argument("--out", metavar="DST", help="write a repaired copy to DST; PATH is only read")
    s.add_argument("--dry-run", action="store_true", help="print the plan and change nothing (the default)")
    s.add_argument("--rules", action="append", metavar="ID[,ID...]", help="apply only these repairs: "
                   + ", ".join(REPAIRS))
    s.add_argument("--drop-damaged", action="store_true", help="also rewrite fragments whose damaged tiles lose "
                   "cells (their readable cells are kept)")
    s.add_argument("--commit-complete", action="store_true", help="commit an uncommitted fragment folder whose "
                   "files are all there and whose tiles all check out, rather than set it aside")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help=json_help % "repair")
    s.set_defaults(func=cmd_repair)


def _html_parser(sub, key_help: str) -> None:
    s = sub.add_parser("html", help="one self-contained HTML page of an array, a group or one file: files, schema "
                       "and history, fragment timeline, domains and MBRs, findings, first cells, and each file's "
                       "parse tree beside its bytes")
    s.add_argument("path")
    s.add_argument("-o", "--output", required=True, metavar="REPORT.html", help="the page to write")
    s.add_argument("--key", help=key_help)
    s.set_defaults(func=cmd_html)


def _dataset_parsers(sub, key_help: str, json_help: str) -> None:
    from ..versions import KNOWN_VERSIONS

    gate = sub.choices["versions"].add_mutually_exclusive_group()  # a gate: exit 1 when an array needs a newer reader
    gate.add_argument("--max-format", type=int, choices=KNOWN_VERSIONS, metavar="N",
                      help="exit 1 listing each array newer than format version N, with the convert command that fixes it")
    gate.add_argument("--reader", metavar="tiledb-py==X.Y.Z", help="the same, for the newest format version this "
                      "TileDB-Py (or libtiledb==X.Y) release opens")

    _mbrs_parser(sub, key_help, json_help)
    sub.choices["convert"].add_argument("--timestamp", type=int, metavar="T", help="copy the array (or group) as it "
                                        "was at T (ms): a rollback without libtiledb")
    sub.choices["convert"].add_argument("--attrs", type=lambda text: [a for a in text.split(",") if a],
                                        metavar="A,B", help="copy only these attributes (a group: each array keeps those it has; "
                                        "one that has none is copied whole, and the report says so)")
    s = sub.add_parser("explain", help="why reads are slow: findings with their numbers and the actions that fix "
                       "them, of an array or each array of a group; --range adds a read estimate")
    s.add_argument("path")
    s.add_argument("--range", action="append", metavar="DIM=LO:HI", help="estimate the fragments, tiles and bytes a "
                   "read of this box touches (inclusive; repeatable; an array only)")
    s.add_argument("--read-budget", type=int, metavar="BYTES", help="bytes of coordinate tiles "
                   "explain may read, over the whole dataset, to count cells sharing coordinates (duplicates, "
                   "overwritten cells); an array past it says 'not counted' (default 64 MiB; 0: read none)")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help=json_help % "explain")
    s.set_defaults(func=cmd_explain)
    sub.choices["cat"].add_argument("--fragment", metavar="NAME", help="only what this fragment wrote "
                                    "(`tdbformat fragments` names them)")
    s = sub.add_parser("history", help="what happened to an array or group (recursively), oldest first: writes, "
                       "deletes, schema changes, metadata, consolidations, vacuums, member changes")
    s.add_argument("path")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help=json_help % "history")
    s.set_defaults(func=cmd_history)
    s = sub.add_parser("du", help="bytes of an array or group (recursively) by object, fragment, field and file "
                       "kind, each live, reclaimable (a vacuum removes it), uncommitted or stray")
    s.add_argument("path")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help=json_help % "du")
    s.add_argument("--by", choices=["object", "fragment", "field", "kind"], default="kind",
                   help="the finest level the table shows (default: kind, every row)")
    s.add_argument("--what-if", action="store_true", help="also re-encode a sample of each field's tiles with other "
                   "pipelines: the bytes each would take and its decode speed here")
    s.add_argument("--sample", type=int, default=8, metavar="N", help="tiles per field for --what-if (default 8)")
    s.set_defaults(func=cmd_du)


def _mbrs_parser(sub, key_help: str, json_help: str) -> None:
    s = sub.add_parser("mbrs", help="every sparse tile's bounding rectangle, per fragment a read sees (TileDB's "
                       "dump-mbrs), of an array or each array of a group")
    s.add_argument("path")
    s.add_argument("--fragment", metavar="NAME", help="that fragment only")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help=json_help % "mbrs")
    s.set_defaults(func=cmd_mbrs)


def _maintenance_parsers(sub, key_help: str) -> None:
    from ..write.consolidate import MODES

    s = sub.add_parser("consolidate", help="consolidate an array as TileDB does, at its own format version")
    s.add_argument("path")
    s.add_argument("--mode", choices=MODES, default="fragments")
    s.add_argument("--config", action="append", metavar="KEY=VALUE", help="a TileDB config key (repeatable), e.g. "
                   "sm.consolidation.step_max_frags=4")
    s.add_argument("--dry-run", action="store_true", help="print the steps TileDB's algorithm takes; write nothing")
    s.add_argument("--memory-budget", type=int, metavar="BYTES", help="bytes of cells a step holds at once "
                   "(default: sm.consolidation.buffer_size per buffer where --config sets it, else "
                   "sm.mem.total_budget); refused before anything is written where a tile of each fragment "
                   "does not fit")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help="print the steps as JSON")
    s.set_defaults(func=cmd_consolidate)
    s = sub.add_parser("vacuum", help="remove what consolidation replaced, as TileDB's vacuum")
    s.add_argument("path")
    s.add_argument("--mode", choices=MODES, default="fragments")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help="print what was removed as JSON")
    s.set_defaults(func=cmd_vacuum)
    s = sub.add_parser("clean", help="remove the fragment folders of writes that never committed")
    s.add_argument("path")
    s.add_argument("--uncommitted", action="store_true", help="uncommitted fragment folders (TileDB#1470)")
    s.add_argument("--dry-run", action="store_true", help="only list them")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help="print them as JSON")
    s.set_defaults(func=cmd_clean)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tdbformat", description="Inspect TileDB arrays without TileDB.")
    p.add_argument("--version", action="version", version=f"tdbformat {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("inspect", help="print the parsed structure of a file or of every file of an array")
    s.add_argument("path")
    s.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    s.add_argument("--key", help="AES-256-GCM key of an encrypted array (32 characters or 64 hex digits)")
    s.add_argument("--coverage", action="store_true", help="instead, every byte range no field accounts for")
    s.add_argument("--hex", action="store_true", help="instead, a hex dump labelled with the field that holds "
                   "each range")
    s.set_defaults(func=cmd_inspect)

    key_help = "AES-256-GCM key of an encrypted array (32 characters or 64 hex digits)"
    json_help = "print JSON (its shape: docs/json-schema/%s.v1.json)"
    for name, func, help_ in (("schema", cmd_schema, "an array's dimensions, attributes, filters, orders, "
                               "enumerations and labels"),
                              ("fragments", cmd_fragments, "one row per fragment: timestamps, cells, non-empty "
                               "domain, bytes, state"),
                              ("meta", cmd_meta, "array or group metadata, decoded as TileDB-Py decodes it"),
                              ("ls", cmd_ls, "a group's members (recursively) and metadata"),
                              ("cat", cmd_cat, "an array's cells, one row per cell, coordinates first")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("path")
        s.add_argument("--json", action="store_true", help=json_help % name + (" Lines, one object per cell"
                                                                                if name == "cat" else ""))
        s.add_argument("--key", help=key_help)
        s.set_defaults(func=func)
        if name in ("meta", "cat"):
            s.add_argument("--timestamp", metavar="T|T1:T2", help="read as of this time (ms), or a window")
        if name == "schema":
            s.add_argument("--all", action="store_true", help="every schema of the array's history")
        if name == "meta":
            s.add_argument("--raw", action="store_true", help="the stored keys and values (__np_flat_... too)")
    s.add_argument("--csv", action="store_true", help="print CSV")
    s.add_argument("--attrs", action="append", metavar="A[,B...]", help="attributes to print (default: all)")
    s.add_argument("--limit", type=int, help="print at most this many cells (dense arrays read only what they need)")
    s.add_argument("--order", choices=["C", "F", "G", "U"], help="C row-major, F column-major, G global, "
                   "U unordered (default: C for dense arrays, TileDB-Py's A[:] order for sparse ones)")
    s.add_argument("--range", action="append", metavar="DIM=LO:HI", help="only cells with LO <= DIM <= HI "
                   "(inclusive; repeatable; DIM=LO,HI when the bounds hold colons)")
    s.add_argument("--codes", action="store_true", help="enumerated attributes as codes, not labels")

    # --- format versions and spec (tdbformat.spec) ---
    from ..versions import KNOWN_VERSIONS, LATEST

    s = sub.add_parser("diff-versions", help="the layouts of two format versions side by side")
    s.add_argument("a", type=int, choices=KNOWN_VERSIONS, metavar="A")
    s.add_argument("b", type=int, choices=KNOWN_VERSIONS, metavar="B")
    s.add_argument("--struct", help="one structure, by title (e.g. 'Array schema')")
    s.add_argument("--format", choices=["text", "markdown", "html", "json"], default="text")
    s.add_argument("--json", action="store_true", help="the same as --format json (docs/json-schema/diff-versions.v1.json)")
    s.set_defaults(func=cmd_diff_versions)

    s = sub.add_parser("spec", help="the whole format at one version as spec tables")
    s.add_argument("--version", type=int, choices=KNOWN_VERSIONS, default=LATEST)
    s.add_argument("--format", choices=["markdown", "json"], default="markdown")
    s.add_argument("--json", action="store_true", help="the same as --format json (docs/json-schema/spec.v1.json)")
    s.add_argument("--write", metavar="DIR", help="instead, regenerate DIR (spec_versions/): v01.md ... CHANGES.md, ksy/vNN/*.ksy")
    s.set_defaults(func=cmd_spec)

    s = sub.add_parser("export-ksy", help="write a Kaitai Struct .ksy per structure of one format version")
    s.add_argument("--version", type=int, choices=KNOWN_VERSIONS, required=True)
    s.add_argument("--out", default=".", metavar="DIR", help="folder to write into (default: the current one)")
    s.add_argument("--json", action="store_true", help="list the written files as JSON (docs/json-schema/export-ksy.v1.json)")
    s.set_defaults(func=cmd_export_ksy)

    s = sub.add_parser("diff", help="compare two files of the same kind field by field, with byte offsets "
                       "(or 'diff 1.x 1': the 1.x dialect's layouts against format version 1's)")
    s.add_argument("file_a")
    s.add_argument("file_b")
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.add_argument("--json", action="store_true", help="the same as --format json (docs/json-schema/diff.v1.json)")
    s.add_argument("--key", help="AES-256-GCM key of an encrypted array (32 characters or 64 hex digits)")
    s.set_defaults(func=cmd_diff)
    # --- end format versions and spec ---

    _writing_parsers(sub, key_help)  # --- writing: create, write, convert ---
    # --- validate, stats, versions ---
    from ..check.validate import RULES

    s = sub.add_parser("validate", help="check an array, a group (recursively) or a file against the format's "
                       "rules; exit 1 if errors are found")
    s.add_argument("path", nargs="+", help="arrays, groups or files (several: one report each, in this order)")
    s.add_argument("--key", help=key_help)
    s.add_argument("--json", action="store_true", help=json_help % "validate" + " (several PATHs: one document "
                   "per line)")
    s.add_argument("--scheduler", metavar="ADDRESS", help="validate on this dask.distributed cluster "
                   "(tcp://host:port), one task per PATH (needs tdbformat[dask])")
    s.add_argument("--rules", action="append", metavar="ID[,ID...]",
                   help="run only these rules (repeatable): " + ", ".join(RULES))
    s.set_defaults(func=cmd_validate)
    for name, func, help_ in (("stats", cmd_stats, "bytes on disk and in memory, compression ratio and tile sizes "
                               "per field and per filter; cells, times and version per fragment"),
                              ("versions", cmd_versions, "the format version of every schema and fragment, and the "
                               "oldest TileDB release that reads the array")):
        s = sub.add_parser(name, help=help_)
        s.add_argument("path")
        s.add_argument("--key", help=key_help)
        s.add_argument("--json", action="store_true", help=json_help % name)
        s.set_defaults(func=func)
    _dataset_parsers(sub, key_help, json_help)  # versions' gate, du, history, mbrs, explain
    # --- end validate, stats, versions ---
    _rescue_parsers(sub, key_help, json_help)  # salvage, repair
    _maintenance_parsers(sub, key_help)  # consolidate, vacuum, clean
    _html_parser(sub, key_help)
    # --- remote: --storage-options on every command that takes a path or a URL ---
    for s in sub.choices.values():
        if {a.dest for a in s._actions} & _PATH_ARGS:
            s.add_argument("--storage-options", type=_storage_options, metavar="JSON",
                           help='options of the URLs\' fsspec filesystem, a JSON object (as pandas and dask take '
                           'storage_options), e.g. \'{"anon": true}\'; local paths ignore them')
    # --- end remote ---
    return p


#: the positional arguments that name a path or a URL
_PATH_ARGS = {"path", "src", "dst", "file_a", "file_b"}


def _storage_options(text: str) -> dict:
    """``--storage-options``: a JSON object, else a usage error (argparse names the option, exit 2)."""
    import json

    try:
        options = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(options, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, not {type(options).__name__}")
    return options


def main(argv=None) -> int:
    """Exit codes: 0 success; 1 findings (validate, salvage) or input that breaks the format (FormatError) or
    cannot be read (OSError); 2 a bad argument (argparse's, a UsageError, or a ValueError/TypeError that
    tdbformat raised to refuse an argument); 70 anything else, a bug in tdbformat (its traceback is printed)."""
    from ..storage import default_storage_options

    p = parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:  # a bare `tdbformat`: what it can do
        p.print_help()
        return 0
    args = p.parse_args(argv)
    # a cell that is not valid UTF-8, or a terminal that is not UTF-8, must never end the output
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        with default_storage_options(getattr(args, "storage_options", None) or {}):  # reaches every URL opened
            return args.func(args)
    except BrokenPipeError:  # `tdbformat inspect ... | head`
        return 0
    except FormatError as e:
        print(f"tdbformat: {cli_words(str(e))}", file=sys.stderr)
        return 1
    except OSError as e:  # an unreadable input, an unwritable output, a full disk
        print(f"tdbformat: {e}", file=sys.stderr)
        return 1
    except (ValueError, TypeError) as e:
        if isinstance(e, UsageError) or _raised_by_tdbformat(e):  # an argument the API refused, by name
            print(f"tdbformat: {cli_words(str(e))}", file=sys.stderr)
            return 2
        return _bug(e)
    except Exception as e:  # noqa: BLE001 (anything else is ours to fix: say so, with the traceback)
        return _bug(e)


def _raised_by_tdbformat(e: BaseException) -> bool:
    """Whether a ``raise`` statement of tdbformat raised ``e`` (a deliberate refusal), not numpy or Python
    inside it (a bug: numpy's C functions raise from the line of ours that called them)."""
    import linecache

    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or not Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(_PACKAGE):
        return False
    return linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).lstrip().startswith("raise ")


_PACKAGE = Path(__file__).resolve().parent.parent  # tdbformat/


def _bug(e: BaseException) -> int:
    import traceback

    traceback.print_exception(e, file=sys.stderr)
    print(f"tdbformat: this is a bug in tdbformat {_version()} ({type(e).__name__}: {e}); please report it with "
          "the traceback above", file=sys.stderr)
    return 70


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tdbformat")
    except PackageNotFoundError:  # run from a source tree
        return "(source tree)"


