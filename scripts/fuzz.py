#!/usr/bin/env python3
"""Fuzz tdbformat with mutated copies of the corpus (issue #13 §5).

    python3 scripts/fuzz.py --seconds 300 --seed 7        a campaign, then a table of outcomes and escapes
    python3 scripts/fuzz.py --seed 7 --case 1234          rerun one case and print its traceback
    python3 scripts/fuzz.py --seed 7 --start 200000 --seconds 9000 --out fuzz/shard-2.json
                                                           a shard of a long campaign: cases from 200000 on
    python3 scripts/fuzz.py --merge fuzz/shard-*.json      the table of a campaign run as shards

Malformed input must raise FormatError; anything else (another exception, a hang, a memory blowup, a
changed file) is reported with the case number that reproduces it. The code is in tests/fuzzing/.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

from fuzzing.runner import BAD, Options, campaign, run_one  # noqa: E402  (needs the paths above)


def merge(reports: list[dict]) -> dict:
    """One report from shards of one seed: their case ranges must not overlap."""
    if len({r["seed"] for r in reports}) > 1:
        raise SystemExit("--merge: the shards have different seeds")
    spans = sorted((r["first_case"], r["end_case"]) for r in reports)
    if any(b[0] < a[1] for a, b in zip(spans, spans[1:])):
        raise SystemExit(f"--merge: the shards' case ranges overlap: {spans}")
    places = {}
    for r in reports:
        for e in r["escapes"]:
            p = places.setdefault((e["exc"], e["place"]), dict(e, count=0))
            p["count"] += e["count"]
            p["case"] = min(p["case"], e["case"])
    seconds = sum(r["seconds"] for r in reports)
    cases = sum(r["cases"] for r in reports)
    return dict(seed=reports[0]["seed"], cases=cases, seconds=round(seconds, 1),
                cases_per_second=round(cases / seconds, 2) if seconds else None,
                shards=[dict(first_case=r["first_case"], end_case=r["end_case"], commit=r.get("commit"))
                        for r in sorted(reports, key=lambda r: r["first_case"])],
                outcomes=dict(sum((Counter(r["outcomes"]) for r in reports), Counter())),
                escapes=sorted(places.values(), key=lambda p: -p["count"]),
                other_bad=[b for r in reports for b in r["other_bad"]])


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=HERE).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _rows(rep: dict):
    outcomes = [(k, str(v)) for k, v in sorted(rep["outcomes"].items())]
    escapes = [(str(e["count"]), e["exc"], e["place"], str(e["case"]), e["op"]) for e in rep["escapes"]]
    others = [(r["outcome"], str(r["case"]), r.get("op") or "") for r in rep["other_bad"]]
    return outcomes, escapes, others


def print_report(rep: dict):
    outcomes, escapes, others = _rows(rep)
    shards = f" in {len(rep['shards'])} shards" if "shards" in rep else ""
    head = (f"seed {rep['seed']}: {rep['cases']} cases{shards} in {rep['seconds']} s "
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
    p.add_argument("--start", type=int, default=0, help="the first case number (a shard of a long campaign)")
    p.add_argument("--cases", type=int, help="stop after this many cases")
    p.add_argument("--seconds", type=float, help="stop after this many seconds")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds a case may run (default 10)")
    p.add_argument("--memory", type=int, default=512, help="MiB a worker may map above its baseline")
    p.add_argument("--cli-fraction", type=float, default=0.03, help="share of cases also run through the CLI")
    p.add_argument("--validate-fraction", type=float, default=0.25,
                   help="share of cases also run through validate, which parses every byte (default 0.25)")
    p.add_argument("--writer-fraction", type=float, default=0.25,
                   help="share of cases that also call the writer with arguments of the wrong kind (default 0.25)")
    p.add_argument("--maintenance-fraction", type=float, default=0.25,
                   help="share of cases that also consolidate and vacuum a copy through the CLI (default 0.25; "
                        "campaigns before 20261150 ran them on every case: pass 1 to rerun those by number)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--out", type=Path, help="also write the report, with the commit, as JSON to this file")
    p.add_argument("--merge", type=Path, nargs="+", metavar="REPORT",
                   help="print the table of a campaign run as shards (their --out files)")
    p.add_argument("--corpus", choices=("all", "prev1", "classic"), default="all",
                   help="prev1: only the arrays from before format version 1 (tests/data/prev1); classic: the "
                        "inputs campaigns up to 20261127 drew from, to rerun their cases by number")
    args = p.parse_args(argv)
    if args.corpus != "all":  # read by the workers, which inherit the environment
        import os
        os.environ["TDBFORMAT_FUZZ_CORPUS"] = args.corpus
    if args.merge:
        rep = merge([json.loads(f.read_text()) for f in args.merge])
        if args.json:
            print(json.dumps(rep, indent=1))
        else:
            print_report(rep)
        return 1 if any(rep["outcomes"].get(k) for k in BAD) else 0
    opts = Options(seed=args.seed, cases=args.cases, seconds=args.seconds, workers=args.workers,
                   timeout=args.timeout, memory_mib=args.memory, cli_fraction=args.cli_fraction,
                   validate_fraction=args.validate_fraction, writer_fraction=args.writer_fraction,
                   maintenance_fraction=args.maintenance_fraction, start=args.start)
    if args.case is not None:
        out = run_one(opts, args.case)
        print(json.dumps(out, indent=1, default=str))
        return 1 if out["outcome"] in BAD else 0
    if args.cases is None and args.seconds is None:
        p.error("give --cases or --seconds (or --case)")
    rep = dict(campaign(opts), commit=_commit())
    if args.out:
        args.out.write_text(json.dumps(rep, indent=1, default=str))
    if args.json:
        print(json.dumps(rep, indent=1, default=str))
    else:
        print_report(rep)
    return 1 if any(rep["outcomes"].get(k) for k in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
