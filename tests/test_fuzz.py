"""The CI slice of the fuzzer (scripts/fuzz.py): a bounded campaign whose seed is the commit.

It runs for ``TDBFORMAT_FUZZ_SECONDS`` (default 90; 0 skips it), so every test run, CI's included, tries
cases no earlier commit tried. A failure lists each escape, hang, memory blowup or modified input with the
command that reproduces it.
"""

import os
import subprocess
from pathlib import Path

import pytest

from fuzzing.runner import BAD, Options, campaign

FIXED_SEED = 20260513


def _seed() -> int:
    """The commit under test as a number, so each commit fuzzes other cases; a fixed one outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
        return int(head[:8], 16)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return FIXED_SEED


def _seconds() -> float:
    return float(os.environ.get("TDBFORMAT_FUZZ_SECONDS", "90"))


@pytest.mark.skipif(_seconds() <= 0, reason="TDBFORMAT_FUZZ_SECONDS=0 turns the fuzz slice off")
def test_fuzz_slice():
    seed = _seed()
    print(f"fuzz seed {seed}")
    rep = campaign(Options(seed=seed, seconds=_seconds()))
    print(f"{rep['cases']} cases, {rep['outcomes']}")
    bad = [f"{e['count']} x {e['exc']} at {e['place']} ({e['op']}): case {e['case']}: {e['what']}"
           for e in rep["escapes"]]
    bad += [f"{r['outcome']} ({r.get('op')}): case {r['case']}" for r in rep["other_bad"]]
    assert rep["cases"] > 0
    assert not bad, (f"reproduce with: python3 scripts/fuzz.py --seed {seed} --case N\n" + "\n".join(bad))
    assert not any(rep["outcomes"].get(k) for k in BAD)


#: every case of the 20261124 campaign (tests/fuzzing/campaigns) that failed, and what it was
CAMPAIGN_FINDS = {
    **{case: "over 10 s of wall time while test suites loaded the machine (the first shard's watchdog timed the "
             "wall, not the CPU)" for case in (24338, 24482, 24771, 24772, 24811)},
    128517: "a worker killed by SIGSEGV: a blosc block start past the frame, read by the C library",
    147166: "MemoryError: GZIP sized its first buffer by a chunk's declared size",
    161898: "IndexError: a sparse field with fewer cells than coordinates",
    233415: "cli cat over 10 s of wall time while tests loaded the machine",
    242469: "ValueError: a pre-v1 dense schema whose domain runs backwards",
    347686: "a worker killed by SIGSEGV: a blosc block start past the frame (as 128517)",
    372555: "IndexError: a sparse schema with a string dimension, made dense by a flipped array type",
    700642: "ValueError: a var fill value numpy broadcast into the cells (it also made every fill a scalar)",
}
#: (seed, case) of each failure found since, by CI's slice or a later campaign, and what it was
LATER_FINDS = {
    (4012749626, 10423): "ValueError: an evolved array's newest schema swapped for another array's, whose "
                         "dimension d the fragments' MBRs lack (CI on ef2db33)",
    (20261125, 78577): "ValueError: an evolved schema's attribute flipped to nullable, which the fragment's is "
                       "not (campaign 20261125 on e9b3584)",
    (20261126, 218265): "UFuncTypeError: a dimension retyped as a datetime, whose datetime64 coordinates the "
                        "global-order sort divided by the tile extent (campaign 20261126 on b5f0f34)",
}
#: the same, drawn from today's inputs (with the soma, pandas and newer behaviours arrays)
FINDS = {
    (77001, 1511): "TypeError: validate compared an R-tree's int bounds turned into bytes (a from_pandas array "
                   "indexed by a string and an int; every such array)",
    (2114179067, 1445): "MemoryError: a schema capacity of 2**31 sized the tile of each cell of a fragment with "
                        "timestamps (CI's slice on 7e03cff, local)",
    (2114179067, 4788): "MemoryError: a pre-v1 dense schema's flipped extent made 2 GiB of cell coordinates "
                        "(CI's slice on 7e03cff, local)",
    (20261129, 17743): "OverflowError: a schema capacity of 2**63 made the cell count of a fragment with timestamps "
                       "a range too long for len() (campaign 20261129 on c21a44b)",
    (20261129, 36136): "ValueError: a soma array's d1.tdb swapped for another fragment's, so its dimensions held "
                       "different numbers of coordinates, which the dedup's lexsort refused (campaign 20261129)",
    (481852761, 6022): "TypeError: a 0.6.1 schema's flipped cell_val_num made a fixed CHAR attribute's cells "
                       "'S4294967295', a dtype numpy refuses (CI's slice on 1cb87d5)",
    (20261134, 107161): "over 10 s: a sparse schema's array_type lie made it dense, and cat formatted its 991,008 "
                        "cells one Python call each (campaign 20261134 on a4d15e9)",
    (20261136, 562383): "memory: a damaged WebP header claimed 6,797 x 13,000-odd pixels, which libwebp allocated "
                        "before the size check (campaign 20261136 on 9bc6bca)",
    (20261138, 658370): "memory: a lie made a sparse 10,001 x 10,001 array dense, whose 400 MB result fit the "
                        "default budget but not the worker (campaign 20261138 on adef393)",
    (405057699, 247): "ZeroDivisionError: repair --out wrote a sparse fragment under a schema's capacity of 0 "
                       "(CI's slice on 6251600)",
    (20261152, 7714): "memory (a hang in the campaign): salvage, under repair --out, tried each of the 3.9 million "
                      "tiles a fragment's lied tile count named, where its offsets lists hold 4 (campaign 20261152 "
                      "on 87a7a6e)",
    (3817031794, 802): "KeyError: repair --commit-complete looked for a dimension label's uncommitted fragment "
                       "among the array's own (CI's slice on e383487)",
    (20261152, 41261): "memory: explain sized a set by a fragment's bit-flipped tile count (campaign 20261152 "
                       "on 87a7a6e)",
    (20261152, 57125): "ValueError: explain made an array of a footer's tile count of 2**63 (campaign 20261152)",
    (20261152, 54014): "ValueError: convert of a group read a dense fragment whose bit-flipped non-empty domain runs "
                       "backwards into an array of negative shape (campaign 20261152)",
    (20261153, 61112): "vacuum refused after removing fragments: a v7 fragment's name also under a stray "
                       "__fragments folder made it delete the same .ok twice (campaign 20261153 on ef8e967)",
    (20261154, 49490): "MemoryError: consolidate sized a dense merge by a bit-flipped non-empty domain past the "
                       "domain, 268,435,466 cells (campaign 20261154 on 75296a1)",
    (4141, 101): "OverflowError: consolidate sorted cells by a schema's int64 tile extent of -2**63 (a helper's "
                 "run on 6251600)",
    (20261157, 915): "OverflowError: repair numbered a sparse fragment's cells by a schema capacity of 2**64 - 1 "
                     "(tile 1 starts past int64; campaign 20261157 on 95e9804)",
    (20261160, 19821): "OverflowError: a 0.x sparse read in global order took a bit-flipped tile extent of "
                       "-2**63 + 2 as a uint64 (campaign 20261160 on 96c5e97)",
}


@pytest.mark.parametrize("seed,case", [*((20261124, c) for c in sorted(CAMPAIGN_FINDS)), *sorted(LATER_FINDS),
                                       *sorted(FINDS)])
def test_campaign_finds_rerun_clean(seed, case):
    """Each failure of the campaign, of CI's slice or of a later campaign, reruns by its number (``--case``: in a process of its
    own, under the campaign's memory limit and timeout) and now ends in a FormatError or a read."""
    import json
    import sys
    script = Path(__file__).parents[1] / "scripts" / "fuzz.py"
    # these cases were drawn from the inputs of their day: soma, pandas and newer behaviours came later; and
    # until campaign 20261150 every case consolidated and vacuumed a copy
    corpus = "all" if (seed, case) in FINDS else "classic"
    done = subprocess.run([sys.executable, str(script), "--seed", str(seed), "--case", str(case),
                           "--corpus", corpus, "--maintenance-fraction", "1"], capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout[done.stdout.rindex("\n{\n"):])
    assert report["case"] == case
    what = CAMPAIGN_FINDS.get(case) if seed == 20261124 else {**LATER_FINDS, **FINDS}[seed, case]
    assert report["outcome"] in ("ok", "format_error", "budget"), (what, report)
    assert done.returncode == 0


def test_the_worker_refuses_a_dense_result_over_a_quarter_of_its_memory():
    """Campaign 20261138's case 658370: a sparse 10,001 x 10,001 array made dense by a lie. Its full read, a
    400 MB result, fits the library's default budget (a quarter of physical memory) but not a worker's 512
    MiB; the worker's budget is a quarter of that, so the read is refused by name ("budget") before it
    allocates (in a fresh process the allocation happened to fit, and the case ended in a FormatError)."""
    import json
    import sys
    script = Path(__file__).parents[1] / "scripts" / "fuzz.py"
    done = subprocess.run([sys.executable, str(script), "--seed", "20261138", "--case", "658370"],
                          capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout[done.stdout.rindex("\n{\n"):])
    assert report["outcome"] == "budget" and "MemoryBudgetError" in done.stdout, done.stdout[-2000:]
