"""Regenerate conformance/ from tests/data/corpus and tests/data/prev1, and the expected.json of its edge cases from their committed
arrays (scripts/make_conformance_edges.py makes those): python3 scripts/conformance.py [OUT]."""

import sys
from pathlib import Path

from tdbformat.spec.conformance import edge_cases, edge_expected, write_conformance, write_prev1_cases
from tdbformat.storage import LocalStorage

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "conformance"
    print(f"{len(write_conformance(ROOT / 'tests' / 'data' / 'corpus', out))} files written to {out}")
    print(f"{len(write_prev1_cases(ROOT / 'tests' / 'data' / 'prev1', out))} pre-v1 files written to {out}")
    for case in edge_cases(ROOT / "conformance"):
        LocalStorage().commit(Path(case) / "expected.json", edge_expected(case))
        print(f"{case}/expected.json written")
