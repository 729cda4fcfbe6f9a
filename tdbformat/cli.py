"""The ``tdbformat`` command. Each subcommand is a ``cmd_*`` function registered in :func:`parser`."""

from __future__ import annotations

import argparse
import sys

from .errors import FormatError

__all__ = ["main", "parser"]


def cmd_inspect(args) -> int:
    from .files import inspect_path
    from .render import to_json, to_tree

    parsed = inspect_path(args.path, key=args.key)
    print(to_json(parsed) if args.json else to_tree(parsed))
    return 0


def cmd_cat(args) -> int:
    import numpy as np

    from .array import open_array

    cells = open_array(args.path, key=args.key).read(attrs=args.attrs)
    names = list(cells)
    columns = [np.ma.ravel(cells[n])[:args.limit] if args.limit is not None else np.ma.ravel(cells[n])
               for n in names]
    print("\t".join(names))
    for row in zip(*columns):
        print("\t".join("null" if v is np.ma.masked else str(v) for v in row))
    return 0


# --- format versions and spec (tdbformat.spec) ---

def cmd_diff_versions(args) -> int:
    from .spec_render import render_diff

    print(render_diff(args.a, args.b, args.struct, args.format), end="")
    return 0


def cmd_spec(args) -> int:
    from .spec_render import spec_json, spec_markdown, write_spec_versions

    if args.write:
        from pathlib import Path

        from .ksy import write_ksy

        for path in [*write_spec_versions(args.write), *write_ksy(Path(args.write) / "ksy")]:
            print(path)
        return 0
    print(spec_json(args.version) if args.format == "json" else spec_markdown(args.version))
    return 0


def cmd_export_ksy(args) -> int:
    from .ksy import export_ksy

    for path in export_ksy(args.version, args.out):
        print(path)
    return 0


def cmd_diff(args) -> int:
    from .files import parse_file
    from .spec_render import render_file_diff

    a, b = parse_file(args.file_a, key=args.key), parse_file(args.file_b, key=args.key)
    print(render_file_diff(a, b, args.format), end="")
    return 0

# --- end format versions and spec ---


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tdbformat", description="Inspect TileDB arrays without TileDB.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("inspect", help="print the parsed structure of a file or of every file of an array")
    s.add_argument("path")
    s.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    s.add_argument("--key", help="AES-256-GCM key of an encrypted array (32 characters or 64 hex digits)")
    s.set_defaults(func=cmd_inspect)

    s = sub.add_parser("cat", help="print an array's cells as a table (dense: row-major over the domain)")
    s.add_argument("path")
    s.add_argument("--attrs", nargs="+", help="attributes to print (default: all)")
    s.add_argument("--limit", type=int, help="print at most this many cells")
    s.add_argument("--key", help="AES-256-GCM key of an encrypted array (32 characters or 64 hex digits)")
    s.set_defaults(func=cmd_cat)

    # --- format versions and spec (tdbformat.spec) ---
    from .versions import KNOWN_VERSIONS, LATEST

    s = sub.add_parser("diff-versions", help="the layouts of two format versions side by side")
    s.add_argument("a", type=int, choices=KNOWN_VERSIONS, metavar="A")
    s.add_argument("b", type=int, choices=KNOWN_VERSIONS, metavar="B")
    s.add_argument("--struct", help="one structure, by title (e.g. 'Array schema')")
    s.add_argument("--format", choices=["text", "markdown", "html", "json"], default="text")
    s.set_defaults(func=cmd_diff_versions)

    s = sub.add_parser("spec", help="the whole format at one version as spec tables")
    s.add_argument("--version", type=int, choices=KNOWN_VERSIONS, default=LATEST)
    s.add_argument("--format", choices=["markdown", "json"], default="markdown")
    s.add_argument("--write", metavar="DIR", help="instead, regenerate DIR (spec_versions/): v01.md ... CHANGES.md, ksy/vNN/*.ksy")
    s.set_defaults(func=cmd_spec)

    s = sub.add_parser("export-ksy", help="write a Kaitai Struct .ksy per structure of one format version")
    s.add_argument("--version", type=int, choices=KNOWN_VERSIONS, required=True)
    s.add_argument("--out", default=".", metavar="DIR", help="folder to write into (default: the current one)")
    s.set_defaults(func=cmd_export_ksy)

    s = sub.add_parser("diff", help="compare two files of the same kind field by field, with byte offsets")
    s.add_argument("file_a")
    s.add_argument("file_b")
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.add_argument("--key", help="AES-256-GCM key of an encrypted array (32 characters or 64 hex digits)")
    s.set_defaults(func=cmd_diff)
    # --- end format versions and spec ---
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    # strings decoded with surrogateescape (bytes that are not UTF-8) must print, not raise
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        return args.func(args)
    except (FormatError, OSError) as e:  # bad input or a path that cannot be read: one line, no traceback
        print(f"tdbformat: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `tdbformat inspect ... | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
