"""``validate`` against a full read (goal: validate <= 1.5x the read): the 128 MiB int32 dense array (zstd) and
the 1M-cell sparse array of ``benchmarks/read.py``, both written by TileDB-Py.

Each array is validated and read 5 times, alternating; the table shows the medians and their ratio.
Run: ``python benchmarks/validate.py``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from read import timed, write_dense, write_sparse  # noqa: E402

from tdbformat import open_array, validate  # noqa: E402

ROUNDS = 5


def main():
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, write in (("dense 128 MiB int32 zstd", write_dense), ("sparse 1M cells", write_sparse)):
            uri = str(Path(tmp) / name.split()[0])
            write(uri)
            assert validate(uri) == [], validate(uri)
            checks, reads = [], []
            for _ in range(ROUNDS):
                checks.append(timed(validate, uri))
                reads.append(timed(lambda: open_array(uri).read()))
            rows.append((name, statistics.median(checks), statistics.median(reads)))
    print("| array | validate (s) | read (s) | ratio |\n|---|---|---|---|")
    for name, a, b in rows:
        print(f"| {name} | {a:.3f} | {b:.3f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
