"""Write tests/data/stdsort.json: key lists and the order libstdc++'s std::sort leaves them in, from a C++
program compiled here with g++ (the oracle for tdbformat/stdsort.py; needs g++).

    python3 scripts/stdsort_cases.py
"""

from __future__ import annotations

import json
import random
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = r"""
#include <algorithm>
#include <cstdio>
#include <vector>
struct E { long key; int id; bool operator<(const E& o) const { return key < o.key; } };
int main() {
  int t; if (scanf("%d", &t) != 1) return 1;
  while (t--) {
    int n; if (scanf("%d", &n) != 1) return 1;
    std::vector<E> v(n);
    for (int i = 0; i < n; i++) { if (scanf("%ld", &v[i].key) != 1) return 1; v[i].id = i; }
    std::sort(v.begin(), v.end());
    for (int i = 0; i < n; i++) printf("%d ", v[i].id);
    printf("\n");
  }
}
"""


def keys(rng: random.Random) -> list[int]:
    n = rng.choice([2, 5, 16, 17, 18, 30, 64, 100])
    kind = rng.choice(["ties", "distinct", "sorted", "reversed", "equal", "organ"])
    if kind == "ties":
        return [rng.randint(0, 3) for _ in range(n)]
    if kind == "distinct":
        return [rng.randint(0, 10**6) for _ in range(n)]
    if kind in ("sorted", "reversed"):
        return sorted((rng.randint(0, 20) for _ in range(n)), reverse=kind == "reversed")
    if kind == "organ":  # median-of-three's worst case: deep enough for the heapsort fallback
        return [min(i, n - i) % 7 for i in range(n)]
    return [5] * n


def main() -> None:
    rng = random.Random(20261124)
    cases = [keys(rng) for _ in range(200)]
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "sort"
        subprocess.run(["g++", "-O2", "-x", "c++", "-", "-o", str(exe)], input=PROGRAM, text=True, check=True)
        feed = f"{len(cases)}\n" + "".join(f"{len(k)} {' '.join(map(str, k))}\n" for k in cases)
        out = subprocess.run([str(exe)], input=feed, text=True, capture_output=True, check=True).stdout
    orders = [list(map(int, line.split())) for line in out.splitlines()]
    (ROOT / "tests/data/stdsort.json").write_text(json.dumps(
        {"compiler": subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0],
         "cases": [{"keys": k, "order": o} for k, o in zip(cases, orders)]}) + "\n")


if __name__ == "__main__":
    main()
