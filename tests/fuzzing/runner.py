"""The campaign: long-lived worker processes under a memory limit, a watchdog for hangs, and the report.

Each worker runs cases one at a time under ``RLIMIT_AS`` (its baseline plus a margin); the parent hands
out case numbers, kills a worker that overruns the timeout (a "hang": that much CPU time, or six times it
in wall time, so that a worker starved by a busy machine is not one) and restarts one that dies (a
"memory" blowup: killed by the limit). The corpus is hashed before and after the campaign.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import resource
import shutil
import signal
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from pathlib import Path

import tdbformat.array.options
from tdbformat.filters.strings import arrow

from .mutate import BEHAVIOURS, CORPUS
from .targets import cpu_seconds, run_case

__all__ = ["Options", "Tally", "campaign", "run_one", "report", "BAD"]

#: outcomes that fail a campaign
BAD = ("escape", "hang", "memory", "modified_input", "harness_error")


@dataclass
class Options:
    seed: int = 0
    cases: int | None = None
    seconds: float | None = None
    workers: int = 2
    timeout: float = 10.0
    memory_mib: int = 512
    cli_fraction: float = 0.03
    validate_fraction: float = 0.25
    writer_fraction: float = 0.25  # share of cases that also run the writer-argument target
    maintenance_fraction: float = 0.25  # share that also consolidate and vacuum a copy (60% of a case's time)
    start: int = 0   # the first case number: a long campaign runs as shards of consecutive numbers
    tmp: Path = field(default_factory=lambda: Path("/dev/shm") if os.access("/dev/shm", os.W_OK)
                      else Path(tempfile.gettempdir()))


def corpus_hash() -> str:
    h = hashlib.sha256()
    for root in (CORPUS, BEHAVIOURS):
        for p in sorted(root.rglob("*")):
            h.update(str(p.relative_to(root.parent)).encode())
            if p.is_file():
                h.update(p.read_bytes())
    return h.hexdigest()


def _bound_arenas():
    """At most two malloc arenas: glibc gives each new thread an arena of up to 64 MiB of address space, up to
    eight a core, and keeps them, so the writer's threads (new ones each write) would use the margin up over a
    campaign of repairs (M_ARENA_MAX, as MALLOC_ARENA_MAX=2 sets it at start)."""
    import ctypes

    try:
        ctypes.CDLL(None).mallopt(-8, 2)
    except (OSError, AttributeError):  # not glibc: its arenas are not ours to bound
        pass


def _prime_writer():
    """A write of 64 tiles, so that the writer's threads (and their malloc arenas, some 200 MiB of address space)
    are there before the baseline, as the readers' are: ``repair --out`` writes, and without this every case
    after the first repair ran short of address space (MemoryError, "can't allocate read lock")."""
    import tempfile

    import numpy as np

    from tdbformat import schema as S
    from tdbformat.write.writer import write

    with tempfile.TemporaryDirectory() as d:
        sch = S.ArraySchema(domain=S.Domain(S.Dim("d", domain=(0, 1023), tile=16, dtype=np.int64)),
                            attrs=[S.Attr("a", np.int32, filters=[S.ZstdFilter(1)])])
        tdbformat.create(d + "/a", sch, version=22)
        write(d + "/a", {"a": np.arange(1024, dtype=np.int32)}, subarray=[(0, 1023)], timestamp=1)


def _limit_memory(margin_mib: int):
    """Cap the address space at what the process maps now plus ``margin_mib``, and the reads' memory budget
    at a quarter of that margin, as the library's default is a quarter of physical memory: a dense read of a
    domain that fits the budget but not the worker (a lie turned a sparse 10,001 x 10,001 array dense, a
    400 MB result: case 658370 of campaign 20261138) is then refused by name, as it would be on a machine
    of 512 MiB, instead of failing to allocate."""
    arrow(1 << 30)  # pyarrow, where installed, as a large string tile imports it: mapped before the baseline
    _bound_arenas()
    _prime_writer()
    with open("/proc/self/statm") as f:
        baseline = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (baseline + (margin_mib << 20), resource.RLIM_INFINITY))
    tdbformat.array.options.MEMORY_BUDGET = (margin_mib << 20) // 4


def _case_in(workdir: Path, opts: Options, number: int, verbose: bool = False, notify=None) -> dict:
    where = workdir / str(number)
    where.mkdir()
    try:
        return run_case(opts.seed, number, where, opts.cli_fraction, opts.timeout, verbose, notify,
                        opts.validate_fraction, opts.writer_fraction, opts.maintenance_fraction)
    except MemoryError:
        return dict(case=number, outcome="memory", op="harness")
    except Exception as e:  # a bug of the harness itself, reported apart from escapes
        return dict(case=number, outcome="harness_error", exc=type(e).__name__, place="harness",
                    message=traceback.format_exc()[-600:])
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _worker(conn, opts: Options, workdir: Path):
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    _limit_memory(opts.memory_mib)
    workdir.mkdir(parents=True, exist_ok=True)
    conn.send("ready")
    while (number := conn.recv()) is not None:
        conn.send(_case_in(workdir, opts, number, notify=lambda: conn.send("cli")))


class _Slot:
    """One worker process and the case it is running."""

    def __init__(self, ctx, opts: Options, top: Path, index: int):
        self.ctx, self.opts, self.top, self.index, self.generation = ctx, opts, top, index, 0
        self.case = self.deadline = self.given = self.cpu = None
        self.start()

    def start(self):
        self.generation += 1
        self.conn, child = self.ctx.Pipe()
        workdir = self.top / f"w{self.index}-{self.generation}"
        self.proc = self.ctx.Process(target=_worker, args=(child, self.opts, workdir), daemon=True)
        self.proc.start()
        child.close()
        # the start-up (imports) must not count against the first case's time
        if not self.conn.poll(120) or self.conn.recv() != "ready":
            raise RuntimeError(f"fuzz worker {self.index} did not start")

    def give(self, number: int):
        self.case, self.deadline = number, time.monotonic() + self.opts.timeout
        self.given, self.cpu = time.monotonic(), cpu_seconds(self.proc.pid)
        self.conn.send(number)

    def starved(self) -> bool:
        """Whether the case overran its time for want of a core (the machine busy with other work), not by
        its own work: it has used less CPU than the timeout and not yet six times it in wall time. Then its
        deadline moves on by the CPU time it may still use."""
        used = cpu_seconds(self.proc.pid) - self.cpu
        if used >= self.opts.timeout or time.monotonic() - self.given >= 6 * self.opts.timeout:
            return False
        self.deadline = time.monotonic() + max(0.5, self.opts.timeout - used)
        return True

    def restart(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()
        self.case = None
        self.start()

    def stop(self):
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()


def _dead(slot: _Slot, results: list, outcome: str, what: str):
    results.append(dict(case=slot.case, outcome=outcome, op=what))
    slot.restart()


def _collect(slots, results: list, opts: Options):
    """Wait for the next answer, death or overrun of any busy worker."""
    busy = [s for s in slots if s.case is not None]
    if not busy:
        return
    soonest = min(s.deadline for s in busy)
    ready = wait([s.conn for s in busy] + [s.proc.sentinel for s in busy], max(0.0, soonest - time.monotonic()))
    for s in busy:
        if s.conn in ready:
            try:
                msg = s.conn.recv()
            except EOFError:
                _dead(s, results, "memory", f"worker died (exit code {s.proc.exitcode})")
                continue
            if msg == "cli":  # the case goes on to the command line: give it the subprocesses' time too
                s.deadline += 2 * opts.timeout
                continue
            results.append(msg)
            s.case = None
        elif s.proc.sentinel in ready:
            s.proc.join()
            _dead(s, results, "memory", f"worker died (exit code {s.proc.exitcode})")
        elif time.monotonic() >= s.deadline and not s.starved():
            _dead(s, results, "hang", f"killed after {time.monotonic() - s.given:.0f} s")


class Tally:
    """The outcomes of a campaign, kept as counts: a million cases must not be a million dicts."""

    def __init__(self):
        self.outcomes, self.places, self.other_bad = Counter(), {}, []

    def add(self, r: dict):
        self.outcomes[r["outcome"]] += 1
        if r["outcome"] == "escape":
            p = self.places.setdefault((r["exc"], r["place"]), dict(exc=r["exc"], place=r["place"], count=0,
                                                                    case=r["case"], op=r["op"], what=r["what"],
                                                                    message=r["message"]))
            p["count"] += 1
            p["case"] = min(p["case"], r["case"])
        elif r["outcome"] in BAD:
            self.other_bad.append(r)


def campaign(opts: Options) -> dict:
    """Run cases ``opts.start``, ``opts.start + 1``... until ``opts.cases`` of them ran or ``opts.seconds``
    passed; the report as a dict."""
    before = corpus_hash()
    top = Path(tempfile.mkdtemp(prefix="tdbfuzz-", dir=opts.tmp))
    ctx = mp.get_context("spawn")
    slots = [_Slot(ctx, opts, top, i) for i in range(opts.workers)]
    results, tally, number, started = [], Tally(), opts.start, time.monotonic()

    def more():
        if opts.cases is not None and number >= opts.start + opts.cases:
            return False
        return opts.seconds is None or time.monotonic() - started < opts.seconds

    try:
        while True:
            for s in slots:
                if s.case is None and more():
                    s.give(number)
                    number += 1
            if all(s.case is None for s in slots):
                break
            _collect(slots, results, opts)
            for r in results:
                tally.add(r)
            results.clear()
    finally:
        for s in slots:
            s.stop()
        shutil.rmtree(top, ignore_errors=True)
    elapsed = time.monotonic() - started
    if corpus_hash() != before:
        tally.add(dict(case=None, outcome="modified_input", op="the original corpus changed"))
    return report(opts, tally, elapsed, number)


def report(opts: Options, tally: Tally, elapsed: float, end: int) -> dict:
    """Outcome counts, and each distinct escape place with its count and first reproducing case."""
    cases = end - opts.start  # every case handed out has been collected by now
    return dict(seed=opts.seed, first_case=opts.start, end_case=end, cases=cases, seconds=round(elapsed, 1),
                cases_per_second=round(cases / elapsed, 2) if elapsed else None,
                validate_fraction=opts.validate_fraction, cli_fraction=opts.cli_fraction,
                writer_fraction=opts.writer_fraction, maintenance_fraction=opts.maintenance_fraction,
                outcomes=dict(tally.outcomes),
                escapes=sorted(tally.places.values(), key=lambda p: -p["count"]),
                other_bad=tally.other_bad)


def run_one(opts: Options, number: int) -> dict:
    """Case ``number`` in this process, with its traceback printed (the memory limit applies here too)."""
    _limit_memory(opts.memory_mib)
    top = Path(tempfile.mkdtemp(prefix="tdbfuzz-", dir=opts.tmp))
    signal.signal(signal.SIGALRM, _overrun)
    signal.alarm(int(opts.timeout * 3) + 1)
    try:
        return _case_in(top, opts, number, verbose=True)
    finally:
        signal.alarm(0)
        shutil.rmtree(top, ignore_errors=True)


def _overrun(signum, frame):
    raise TimeoutError("the case overran its time (a hang)")
