#!/usr/bin/env python3
"""Fuzz tdbformat with mutated copies of the corpus (issue #13 §5).

    python3 scripts/fuzz.py --seconds 300 --seed 7        a campaign, then a table of outcomes and escapes
    python3 scripts/fuzz.py --seed 7 --case 1234          rerun one case and print its traceback

Malformed input must raise FormatError; anything else (another exception, a hang, a memory blowup, a
changed file) is reported with the case number that reproduces it. The code is in tests/fuzzing/.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

from fuzzing.runner import BAD, Options, campaign, run_one  # noqa: E402  (needs the paths above)


def _rows(rep: dict):
    outcomes = [(k, str(v)) for k, v in sorted(rep["outcomes"].items())]
    escapes = [(str(e["count"]), e["exc"], e["place"], str(e["case"]), e["op"]) for e in rep["escapes"]]
    others = [(r["outcome"], str(r["case"]), r.get("op") or "") for r in rep["other_bad"]]
    return outcomes, escapes, others


def print_report(rep: dict):
    outcomes, escapes, others = _rows(rep)
    head = (f"seed {rep['seed']}: {rep['cases']} cases in {rep['seconds']} s "
            f"({rep['cases_per_second']} cases/s)")
    tables = [("Outcomes", ("outcome", "cases"), outcomes),
              ("Escape places", ("count", "exception", "place", "case", "reader"), escapes),
              ("Hangs, memory blowups, modified inputs", ("outcome", "case", "detail"), others)]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(head)
        for title, columns, rows in tables:
            if rows:
                print(f"\n{title}\n" + "\n".join("  ".join(r) for r in [columns, *rows]))
        return
    console = Console(width=200)
    console.print(head)
    for title, columns, rows in tables:
        if rows:
            table = Table(*columns, title=title, title_justify="left")
            for r in rows:
                table.add_row(*r)
            console.print(table)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--case", type=int, help="rerun this one case in this process and print its traceback")
    p.add_argument("--cases", type=int, help="stop after this many cases")
    p.add_argument("--seconds", type=float, help="stop after this many seconds")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds a case may run (default 10)")
    p.add_argument("--memory", type=int, default=512, help="MiB a worker may map above its baseline")
    p.add_argument("--cli-fraction", type=float, default=0.03, help="share of cases also run through the CLI")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--corpus", choices=("all", "prev1"), default="all",
                   help="prev1: only the arrays from before format version 1 (tests/data/prev1)")
    args = p.parse_args(argv)
    if args.corpus == "prev1":  # read by the workers, which inherit the environment
        import os
        os.environ["TDBFORMAT_FUZZ_CORPUS"] = "prev1"
    opts = Options(seed=args.seed, cases=args.cases, seconds=args.seconds, workers=args.workers,
                   timeout=args.timeout, memory_mib=args.memory, cli_fraction=args.cli_fraction)
    if args.case is not None:
        out = run_one(opts, args.case)
        print(json.dumps(out, indent=1, default=str))
        return 1 if out["outcome"] in BAD else 0
    if args.cases is None and args.seconds is None:
        p.error("give --cases or --seconds (or --case)")
    rep = campaign(opts)
    if args.json:
        print(json.dumps(rep, indent=1, default=str))
    else:
        print_report(rep)
    return 1 if any(rep["outcomes"].get(k) for k in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
