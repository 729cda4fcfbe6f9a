"""Hostile input: truncated, flipped and oversized-length files raise FormatError or parse, nothing else.

Every mutation is made on a copy of a real corpus file, in a copy of its array folder so that
``parse_file`` finds the context it needs. Fixed seed, bounded counts; memory is watched with tracemalloc.
"""

import random
import shutil
import struct
import tracemalloc

import pytest

from corpus import cases, root, key
from tdbformat import FormatError, parse_file
from tdbformat.layout.files import file_kind

SEED = 20261122
# A few writers spanning the format's eras.
WRITERS = ("v1_", "v4_", "v9_", "v12_", "v17_", "v22_tiledb-py-0.36.1", "v23_")


def samples():
    """One file per (writer, kind): the cases that hold the most kinds come first."""
    seen, out = set(), []
    for case in cases():
        if not case.parent.name.startswith(WRITERS):
            continue
        for p in sorted(root(case).rglob("*")):
            if not p.is_file() or p.stat().st_size == 0:
                continue
            try:
                kind = file_kind(p)
            except FormatError:
                continue
            if (case.parent.name, kind) not in seen:
                seen.add((case.parent.name, kind))
                out.append((case, p))
    return out


def mutations(data: bytes, rng: random.Random):
    n = len(data)
    cuts = sorted({0, 1, 4, 33, 34, n // 2, n - 1} | {rng.randrange(n) for _ in range(12)})
    for cut in cuts:
        if cut < n:
            yield f"truncated at {cut}", data[:cut]
    for _ in range(16):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(n)] ^= 1 << rng.randrange(8)
        yield "bit flips", bytes(b)
    for pos in range(0, min(n, 160), 4):
        for fmt, huge in (("<I", 0xFFFFFFFF), ("<Q", 0xFFFFFFFFFFFFFFFF), ("<Q", 2**40)):
            if pos + struct.calcsize(fmt) <= n:
                b = bytearray(data)
                struct.pack_into(fmt, b, pos, huge)
                yield f"huge {fmt} at {pos}", bytes(b)


@pytest.mark.parametrize("case, path", samples(), ids=lambda x: getattr(x, "name", None))
def test_mutated_files_raise_format_error_only(case, path, tmp_path):
    rel = path.relative_to(root(case))
    copy = tmp_path / "array"
    shutil.copytree(root(case), copy)
    target = copy / rel
    data = path.read_bytes()
    rng = random.Random(f"{SEED}{rel}")
    tracemalloc.start()
    try:
        for what, mutated in mutations(data, rng):
            target.write_bytes(mutated)
            try:
                parse_file(target, key=key(case))
            except FormatError:
                pass
            except Exception as e:  # the assertion this test exists for
                pytest.fail(f"{rel} ({what}): {type(e).__name__}: {e}")
            _, peak = tracemalloc.get_traced_memory()
            assert peak < 64 * 2**20 + 50 * len(data), f"{rel} ({what}) allocated {peak} bytes"
            tracemalloc.reset_peak()
    finally:
        tracemalloc.stop()


def test_samples_cover_the_file_kinds():
    kinds = {file_kind(p) for _, p in samples()}
    assert {"array_schema", "data", "metadata"} <= kinds
