"""One fuzz case, run in the worker: mutate a copy, call every reader on it, classify what happens.

A ``FormatError`` is the expected answer and the next reader still runs; so is a ``MemoryBudgetError``
(outcome "budget"): a schema may legally describe cells whose result no memory holds, and the read refuses
it by name before allocating. Anything else is an escape, named by its exception type and the innermost
frame inside tdbformat (the "place").
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import re
import selectors
import signal
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

import tdbformat
import tdbformat.cli
from tdbformat import FormatError, open_array, parse_file
from tdbformat.array import MemoryBudgetError, RangeError
from tdbformat.enums import Datatype
from tdbformat.layout.files import inspect_path
from tdbformat.show.html import page

from .mutate import mutate
from .writer_args import writer_case

__all__ = ["run_case", "cpu_seconds", "PACKAGE"]

PACKAGE = Path(tdbformat.__file__).resolve().parent
ORDERS = "CFGU"


def _place(err: BaseException) -> str:
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if Path(f.filename).resolve().is_relative_to(PACKAGE)] or frames
    places = [f"{_short(f.filename)}:{f.lineno} ({f.name})" for f in ours]
    if isinstance(err, RecursionError):  # where it overflowed says little: name the frame that recurses
        return Counter(places).most_common(1)[0][0]
    return places[-1]


def _short(filename: str) -> str:
    p = Path(filename).resolve()
    return str(p.relative_to(PACKAGE.parent)) if p.is_relative_to(PACKAGE.parent) else p.name


def _tree_hash(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def _ops(case: dict):
    """(name, callable) for every reader; array readers share the array opened first. ``validate`` parses
    every byte of the copy, so it runs on a share of the cases only (``case["validate"]``)."""
    key, root = case["key"], case["root"]
    for p in case["touched"]:
        if p.is_file():
            yield f"parse_file {p.relative_to(root.parent)}", lambda p=p: parse_file(p, key=key)
    if case["group"]:
        yield "inspect_path", lambda: inspect_path(root, key=key)
    # findings are validate's answer; it raises only when the copy is no array, group or file at all
    if case["validate"]:
        yield "validate", lambda: tdbformat.validate(root, key=key)
        yield "html page", lambda: page(root, key=key)  # validates too: on the same share of the cases
    if case["validate"]:
        yield "repair --out", lambda: _repair_out(root, key, case["group"])
    yield from _dataset_ops(root, key, case["group"])
    if case["group"]:  # (before open_array, which refuses a group and ends the case)
        yield "convert GROUP --attrs", lambda: _convert_group_out(root, key)
    opened = {}
    yield "open_array", lambda: opened.setdefault("a", open_array(root, key=key))
    if case["group"]:
        return
    for order in ORDERS:
        yield f"read order={order}", lambda order=order: opened["a"].read(order=order, threads=1)
    yield "metadata", lambda: opened["a"].metadata
    yield "enumerations", lambda: opened["a"].enumerations
    yield "fragments", lambda: list(opened["a"].fragments)
    yield "label_index", lambda: _read_by_label(opened["a"])
    if case["maintenance"]:
        for name, argv in _MAINTENANCE:
            yield name, lambda argv=argv: _on_a_copy(root, argv, key)


#: maintenance writes, each run by the command line in a forked child on a copy of the case (its threads and
#: memory end with it): a refusal (exit 1 or 2) must leave the copy as it was; a traceback is an escape
_MAINTENANCE = [("consolidate", ["consolidate"]), ("vacuum", ["vacuum"]),
                # the bounded merge a few tiles at a time (or refused for want of memory), and fragments cut
                ("consolidate small budget", ["consolidate", "--config", "sm.consolidation.buffer_size=1024"]),
                ("consolidate max_fragment_size", ["consolidate", "--config", "sm.consolidation.max_fragment_size=2000"])]


class MaintenanceEscape(Exception):
    """A maintenance write ended otherwise than done or refused, or refused the array after changing it."""


def _on_a_copy(root: Path, argv: list, key):
    import shutil
    copy = root.parent / f"{root.name}.maintenance"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root, copy, symlinks=True)
    before = _tree_hash(copy)
    try:
        code = _cli_answer(argv + [str(copy)], key)
        if code in (1, 2) and _tree_hash(copy) != before:
            raise MaintenanceEscape(f"{argv[0]} refused the array after changing it")
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def _cli_answer(argv: list, key) -> int | None:
    """The exit code of the command line ``argv`` (with ``key``) in a forked child: 0, or 1 (a FormatError) or
    2 (a usage error); anything else, or overrunning 30 s, is a MaintenanceEscape. None: no command line names
    this key."""
    if isinstance(key, (bytes, bytearray)):
        key = key.hex()  # (--key takes 64 hex digits for any 32 bytes)
    if isinstance(key, str) and "\x00" in key:
        return None
    got = _fork_cli(argv + (["--key", key] if key else []), timeout=30)
    if got is None:
        raise MaintenanceEscape(f"{argv[0]} overran 30 s")
    code, err = got
    if code not in (0, 1, 2):  # 70 and the rest: a bug
        raise MaintenanceEscape(f"{argv[0]} exited {code}: {err.strip()[-600:]}")
    return code


def _convert_group_out(root: Path, key):
    """``convert GROUP DST --attrs`` (the first attribute of the group's first array, or one no array has)
    into a folder beside the input, removed after: written or refused, never a traceback."""
    import shutil
    from tdbformat.check.dataset import objects
    names = ["nope"]
    try:
        first = next(o for o in objects(root, key) if o.type == "array" and o.missing is None)
        names = [a.name for a in open_array((first.storage, first.path), key=key).schema.attributes][:1] or names
    except (FormatError, StopIteration):
        pass
    out = root.parent / f"{root.name}.converted"
    try:
        _cli_answer(["convert", str(root), str(out), "--attrs", names[0]], key)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _repair_out(root: Path, key, group: bool):
    """A repaired copy beside the input (never the input), then whatever it wrote opened and read."""
    out = root.parent / f"{root.name}.repaired"
    tdbformat.repair(root, out=out, key=key, drop_damaged=True, commit_complete=True)
    if out.exists() and group:
        dict(tdbformat.open_group(out, key=key).meta)
    elif out.exists():
        for order in ORDERS:
            open_array(out, key=key).read(order=order, threads=1)


def _dataset_ops(root, key, group: bool):
    """The dataset commands (tdbformat.check), on arrays and groups alike: metadata and listings only."""
    from tdbformat.check import du, explain, gate, history, mbrs

    if group:
        yield "open_group", lambda: (list(tdbformat.open_group(root, key=key).walk()),
                                     dict(tdbformat.open_group(root, key=key).meta))
    for name, fn in (("versions", gate.versions), ("du", du.du), ("history", history.history),
                     ("explain", explain.explain), ("mbrs", mbrs.mbrs)):
        yield name, lambda fn=fn: fn(root, key=key)


def _read_by_label(arr):
    """Reads by each dimension label of a dense array, over every value of the label's type and over a narrow
    range (the tiles its bounds point to, v18+): a mutated label array raises FormatError; no label in the
    range (RangeError) is an answer too."""
    if arr.schema.array_type != 0:
        return
    for label in arr.schema.get("labels") or []:
        dtype = Datatype(label.label_datatype).numpy_dtype
        if label.label_cell_val_num == 2**32 - 1:
            ranges = [(b"", b"\xff" * 64), (b"m", b"n")]
        elif dtype.kind == "f":
            ranges = [(-np.inf, np.inf), (0.0, 0.5)]
        elif dtype.kind in "iumM":
            info = np.iinfo(dtype if dtype.kind in "iu" else np.int64)
            ranges = [(info.min, info.max), (0, 1)]
            if dtype.kind in "mM":  # datetime64 bounds of another unit too
                ranges.append((np.datetime64(-1, "s"), np.datetime64(1, "s")) if dtype.kind == "M"
                              else (np.timedelta64(-1, "s"), np.timedelta64(1, "s")))
        else:
            continue
        for lo, hi in ranges:
            try:
                arr.label_index([label.name])[lo:hi]
            except RangeError:
                pass


def _run_ops(case: dict, out: dict, verbose: bool):
    for name, op in _ops(case):
        try:
            op()
        except (FormatError, MemoryBudgetError) as e:
            if out.get("outcome") != "format_error":
                out["outcome"] = "format_error" if isinstance(e, FormatError) else "budget"
            if verbose:
                print(f"  {name}: {type(e).__name__}: {e}")
            if name == "open_array":
                return
        except Exception as e:  # the point of the fuzzer: whatever escapes is recorded
            memory = isinstance(e, MemoryError)
            out.update(outcome="memory" if memory else "escape", op=name, exc=type(e).__name__,
                       place=_place(e), message=str(e)[:200])
            if verbose:
                traceback.print_exc()
            return
        else:
            if verbose:
                print(f"  {name}: ok")


_FRAME = re.compile(r'File "([^"]*tdbformat/[^"]*)", line (\d+), in (\S+)')


def _cli_child(argv: list, out_fd: int, err_fd: int):
    """In the forked child: ``tdbformat.cli.main(argv)`` writing to a strict UTF-8 terminal (which, unlike the
    C locale's, refuses undecodable bytes), ending as ``python3 -m tdbformat`` would."""
    code = 1
    try:
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="strict")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace")
        code = tdbformat.cli.main(argv)
    except SystemExit as e:  # argparse
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # what the interpreter prints for an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code or 0)


def _fork_cli(argv: list, timeout: float):
    """The command line in a forked copy of this worker (tdbformat already imported: a case does not pay
    for a new interpreter): (exit code, standard error), or None once it overran ``timeout``."""
    (out_r, out_w), (err_r, err_w) = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(out_r), os.close(err_r)
        _cli_child(argv, out_w, err_w)
    os.close(out_w), os.close(err_w)
    err, began, open_fds = bytearray(), time.monotonic(), {out_r, err_r}
    deadline = began + timeout
    with selectors.DefaultSelector() as sel:
        for fd in open_fds:
            sel.register(fd, selectors.EVENT_READ)
        while open_fds:
            if (left := deadline - time.monotonic()) <= 0:
                # an overrun is the command's own only once it used the time on a core, as for the cases
                used = cpu_seconds(pid)
                if used >= timeout or time.monotonic() - began >= 6 * timeout:
                    break
                deadline, left = time.monotonic() + max(0.5, timeout - used), max(0.5, timeout - used)
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 1 << 16)
                if key.fd == err_r and len(err) < 1 << 20:
                    err += chunk
                if not chunk:
                    sel.unregister(key.fd)
                    open_fds.discard(key.fd)
    os.close(out_r), os.close(err_r)
    if open_fds:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return None
    status = os.waitpid(pid, 0)[1]
    return os.waitstatus_to_exitcode(status), err.decode("utf-8", "replace")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run_cli(case: dict, out: dict, timeout: float, verbose: bool):
    """``tdbformat inspect|cat`` on the copy, in a subprocess: a traceback or an odd exit code escapes."""
    key = case["key"]
    extra = ["--key", key] if isinstance(key, str) and "\x00" not in key else []
    for command in ("inspect", "cat"):
        done = _fork_cli([command, str(case["root"]), *extra], timeout)
        if done is None:
            out.update(outcome="hang", op=f"cli {command}")
            return
        rc, stderr = done
        if verbose:
            print(f"  cli {command}: rc {rc}\n{stderr[-3000:]}")
        if "Traceback (most recent call last)" in stderr or rc not in (0, 1, 2):
            frames = _FRAME.findall(stderr)
            last = (stderr.strip().splitlines() or ["rc"])[-1]
            place = f"{_short(frames[-1][0])}:{frames[-1][1]} ({frames[-1][2]})" if frames else "cli"
            memory = "MemoryError" in last or rc < 0
            out.update(outcome="memory" if memory else "escape", op=f"cli {command}", exc=last.split(":")[0][:80],
                       place=place, message=f"rc {rc}: {last[:200]}")
            return


def _run_writer(seed: int, number: int, workdir: Path, out: dict, verbose: bool):
    """The writer-argument target (:mod:`.writer_args`): a clean refusal with the array unchanged, or a write
    read back equal; anything else escapes."""
    where = workdir / "writer"
    where.mkdir()
    try:
        got = writer_case(seed, number, where)
    except Exception as e:
        got = dict(outcome="escape", exc=type(e).__name__, place=_place(e), message=str(e)[:200], what="?")
        if verbose:
            traceback.print_exc()
    if verbose:
        print(f"  writer-args: {got}")
    if got["outcome"] == "escape":
        out.update(outcome="escape", op=f"writer-args {got['what']}"[:120], exc=got["exc"],
                   place=got.get("place", "tests/fuzzing/writer_args.py (read back)"), message=got["message"])


def run_case(seed: int, number: int, workdir: Path, cli_fraction: float, cli_timeout: float,
             verbose: bool = False, notify=None, validate_fraction: float = 1.0, writer_fraction: float = 0.0,
             maintenance_fraction: float = 1.0) -> dict:
    """Run case ``number`` of campaign ``seed`` in ``workdir`` (emptied by the caller); ``notify()`` is
    called before the command line runs, so that a watchdog can allow for it. A share ``writer_fraction``
    of the cases also runs the writer-argument target, a share ``maintenance_fraction`` consolidate and vacuum."""
    case = mutate(seed, number, workdir)
    # a draw of its own, so that the mutation of a case number stays what it was before this option
    case["validate"] = random.Random(f"{seed}:{number}:validate").random() < validate_fraction
    case["maintenance"] = random.Random(f"{seed}:{number}:maintenance").random() < maintenance_fraction
    out = dict(case=number, input=case["input"], what=case["what"], outcome="ok")
    if verbose:
        print(f"case {number}: {case['input']}: {case['what']}")
    before = _tree_hash(case["root"])
    _run_ops(case, out, verbose)
    if out["outcome"] in ("ok", "format_error", "budget") and case["cli"] < cli_fraction:
        if notify:
            notify()
        _run_cli(case, out, cli_timeout, verbose)
    if _tree_hash(case["root"]) != before:
        out.update(outcome="modified_input", op=out.get("op"))
    if out["outcome"] not in ("escape", "memory") and \
            random.Random(f"{seed}:{number}:writer").random() < writer_fraction:
        _run_writer(seed, number, workdir, out, verbose)
    return out
