"""Regenerate conformance/ from tests/data/corpus: python3 scripts/conformance.py [OUT]."""

import sys
from pathlib import Path

from tdbformat.spec.conformance import write_conformance

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "conformance"
    print(f"{len(write_conformance(ROOT / 'tests' / 'data' / 'corpus', out))} files written to {out}")
