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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tdbformat", description="Inspect TileDB arrays without TileDB.")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("inspect", help="print the parsed structure of a file or of every file of an array")
    s.add_argument("path")
    s.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    s.add_argument("--key", help="AES-256-GCM key of an encrypted array (32 characters or 64 hex digits)")
    s.set_defaults(func=cmd_inspect)
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
