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
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except FormatError as e:
        print(f"tdbformat: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `tdbformat inspect ... | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
