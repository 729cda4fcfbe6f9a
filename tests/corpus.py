"""The ground-truth corpus copied into tests/data: arrays written by TileDB, each with its truth.json."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

CORPUS = Path(__file__).parent / "data" / "corpus"
HISTORIC = CORPUS / "historic"


@lru_cache(maxsize=None)
def cases() -> tuple[Path, ...]:
    """Every case folder (``<writer>/<case>``) that has a truth.json."""
    return tuple(sorted(p.parent for p in CORPUS.glob("v*/*/truth.json")))


@lru_cache(maxsize=None)
def truth(case: Path) -> dict:
    return json.loads((case / "truth.json").read_text())


def case_id(case: Path) -> str:
    return f"{case.parent.name}/{case.name}"


def root(case: Path) -> Path:
    """The array (or group) folder of a case."""
    return case / truth(case).get("path", "array")


def key(case: Path):
    enc = truth(case).get("encryption")
    return enc["key"] if enc else None


def files(where: Path):
    return sorted(p for p in where.rglob("*") if p.is_file())
