"""tdbformat/stdsort.py leaves lists in the order libstdc++'s std::sort does (tests/data/stdsort.json, from
g++ by scripts/stdsort_cases.py): ties among 16 or fewer keep their order, past 16 they do not."""

from __future__ import annotations

import json
from pathlib import Path

from tdbformat.layout.stdsort import std_sort

CASES = json.loads((Path(__file__).parents[1] / "data" / "stdsort.json").read_text())["cases"]


def test_std_sort_orders_as_libstdcxx():
    for case in CASES:
        keys = case["keys"]
        assert std_sort(list(range(len(keys))), key=keys.__getitem__) == case["order"], keys


def test_the_cases_reach_unstable_ties():
    moved = [c for c in CASES if c["order"] != sorted(range(len(c["keys"])), key=c["keys"].__getitem__)]
    assert len(moved) > 20 and all(len(c["keys"]) > 16 for c in moved)
