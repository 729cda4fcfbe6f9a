"""TileDB's step algorithm (FragmentConsolidator::compute_next_to_consolidate): on 24 fragment layouts (counts,
sizes, timestamps, dense boxes) and several configs, tdbformat's dry-run plan is what TileDB-Py then merges
(its first step always, every step where one step is asked for), and tdbformat's own consolidation leaves
exactly the fragments TileDB-Py's leaves."""

from __future__ import annotations

import random
import shutil

import numpy as np
import pytest

tiledb = pytest.importorskip("tiledb")

from tdbformat.write.consolidate import consolidate  # noqa: E402

_SIZES = (1, 3, 40, 400, 3000)
_SPARSE_CONFIGS = [
    {"sm.consolidation.step_min_frags": "2", "sm.consolidation.step_max_frags": "2"},
    {"sm.consolidation.step_min_frags": "2", "sm.consolidation.step_max_frags": "3",
     "sm.consolidation.step_size_ratio": "0.5"},
    {"sm.consolidation.step_min_frags": "2", "sm.consolidation.step_max_frags": "4", "sm.consolidation.steps": "1"},
    {"sm.consolidation.step_min_frags": "3", "sm.consolidation.step_max_frags": "6",
     "sm.consolidation.step_size_ratio": "0.2", "sm.consolidation.steps": "1"},
    {"sm.consolidation.timestamp_start": "3", "sm.consolidation.timestamp_end": "7"},
    {},
]
_DENSE_CONFIGS = [
    {"sm.consolidation.step_min_frags": "2", "sm.consolidation.step_max_frags": "3"},
    {"sm.consolidation.amplification": "1.5", "sm.consolidation.steps": "1"},
    {"sm.consolidation.amplification": "4", "sm.consolidation.step_min_frags": "2"},
    {},
]


def _sparse(path, rng):
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 10**6), tile=1000, dtype=np.int64))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=True, capacity=100,
                                                      attrs=[tiledb.Attr("a", dtype=np.int64)]))
    for t in range(1, rng.randint(2, 9) + 1):
        n = rng.choice(_SIZES)
        xs = np.array(sorted(rng.sample(range(10**6), n)))
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[xs] = xs


def _dense(path, rng):
    dom = tiledb.Domain(tiledb.Dim("x", domain=(1, 400), tile=10, dtype=np.int64))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=False,
                                                      attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for t in range(1, rng.randint(2, 7) + 1):
        lo = rng.randrange(1, 380)
        hi = min(400, lo + rng.choice((1, 9, 20, 60)))
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[lo:hi + 1] = np.full(hi - lo + 1, t, np.int32)


def _ranges(path):
    return sorted(tuple(r) for r in tiledb.array_fragments(str(path)).timestamp_range)


LAYOUTS = [("sparse", i) for i in range(14)] + [("dense", i) for i in range(10)]


@pytest.mark.parametrize("kind, seed", LAYOUTS)
def test_the_plan_is_what_tiledb_merges(tmp_path, kind, seed):
    rng = random.Random(seed)
    (_sparse if kind == "sparse" else _dense)(tmp_path / "base", rng)
    configs = _SPARSE_CONFIGS if kind == "sparse" else _DENSE_CONFIGS
    for i, cfg in enumerate([configs[seed % len(configs)], configs[(seed + 1) % len(configs)]]):
        ours, theirs = tmp_path / f"ours{i}", tmp_path / f"theirs{i}"
        shutil.copytree(tmp_path / "base", ours)
        shutil.copytree(tmp_path / "base", theirs)
        before = set(_ranges(theirs))
        planned = consolidate(str(ours), config=cfg, dry_run=True)["steps"]
        tiledb.consolidate(str(theirs), config=tiledb.Config(cfg))
        consolidate(str(ours), config=cfg)
        after = _ranges(theirs)
        assert _ranges(ours) == after, cfg
        made = set(after) - before
        if not planned:
            assert not made, cfg
            continue
        first = tuple(planned[0]["timestamp_range"])
        assert first in made or any(r[0] <= first[0] and first[1] <= r[1] for r in made), cfg
        if cfg.get("sm.consolidation.steps") == "1":
            assert {tuple(s["timestamp_range"]) for s in planned} == made, cfg
