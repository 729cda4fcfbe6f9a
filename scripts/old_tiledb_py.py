"""Arrays tdbformat writes at format versions 16 to 22, read by the oldest TileDB-Py release that writes each
version (issue #16): every release in its own virtual environment, the cells compared with what was written.

    python3 scripts/old_tiledb_py.py [--work DIR]

Needs network access to PyPI the first time (the environments are kept in DIR, default /tmp/tdbformat-old).
Prints a table; exits 1 when a release reads something else than what was written.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import venv
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]
import tdbformat  # noqa: E402
from tdbformat import schema as S  # noqa: E402

#: format version -> the oldest TileDB-Py release that writes it (array_format_history.md; the corpus README)
RELEASES = {16: "0.19.1", 17: "0.20.0", 18: "0.21.6", 19: "0.22.3", 20: "0.23.5", 21: "0.25.1", 22: "0.31.1"}
KEY = "0123456789abcdeF0123456789abcdeF"

_READER = r"""
import json, sys
import numpy as np
import tiledb
out = {}
for name, key in json.loads(sys.argv[1]):
    try:
        ctx = tiledb.Ctx({"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": key} if key else None)
        with tiledb.open(name, ctx=ctx) as A:
            cells = A.query(order="G")[:] if A.schema.sparse else A[:]
            meta = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in A.meta.items()}
        # releases before 0.23 return nullable attributes as plain arrays (no mask): the mask is None then
        out[name] = {"cells": {k: [x.decode() if isinstance(x, bytes) else x for x in np.ma.getdata(v).ravel().tolist()]
                               for k, v in cells.items()},
                     "masks": {k: np.ma.getmaskarray(v).ravel().tolist() for k, v in cells.items()
                               if np.ma.isMaskedArray(v)}, "meta": meta}
    except Exception as e:
        out[name] = {"error": f"{type(e).__name__}: {e}"}
print(json.dumps(out))
"""


def _arrays(root: Path, version: int) -> dict:
    """Write the arrays of ``version`` under ``root``; returns {path: (key, expected cells, expected meta)}."""
    out = {}
    dense = S.ArraySchema(domain=S.Domain(S.Dim("r", domain=(1, 8), tile=4, dtype=np.int32),
                                          S.Dim("c", domain=(1, 8), tile=4, dtype=np.int32)),
                          attrs=[S.Attr("a", np.int64, filters=[S.ZstdFilter(3)]),
                                 S.Attr("s", str, var=True), S.Attr("n", np.float64, nullable=True)])
    sparse = S.ArraySchema(domain=S.Domain(S.Dim("d", domain=(0, 999), tile=100, dtype=np.int64)), sparse=True,
                           capacity=4, attrs=[S.Attr("a", np.int32, filters=[S.GzipFilter(), S.BitShuffleFilter()]),
                                              S.Attr("s", str, var=True)])
    a = np.arange(64, dtype=np.int64).reshape(8, 8)
    s = np.array([f"s{i}" for i in range(64)], dtype=object).reshape(8, 8)
    n = np.ma.masked_array(np.arange(64, dtype=np.float64).reshape(8, 8) / 2, mask=(a % 3 == 0))
    for name, key in (("dense", None), ("dense_encrypted", KEY)):
        p = root / f"v{version}_{name}"
        tdbformat.create(p, dense, version, key=key)
        tdbformat.write(p, {"a": a, "s": s, "n": n}, timestamp=1, key=key)
        tdbformat.put_metadata(p, {"k": 7, "t": "text"}, timestamp=2, key=key)
        out[str(p)] = (key, {"a": a.ravel().tolist(), "s": s.ravel().tolist(), "n": n.ravel().tolist(),
                             "n mask": np.ma.getmaskarray(n).ravel().tolist()}, {"k": 7, "t": "text"})
    p = root / f"v{version}_sparse"
    tdbformat.create(p, sparse, version)
    d = np.array([5, 1, 900, 42, 7, 300], np.int64)
    tdbformat.write(p, {"a": (d * 2).astype(np.int32), "s": np.array([f"x{i}" for i in d], dtype=object)},
                    coords=[d], timestamp=1)
    order = np.argsort(d)
    out[str(p)] = (None, {"d": d[order].tolist(), "a": (d[order] * 2).tolist(),
                          "s": [f"x{i}" for i in d[order]]}, {})
    return out


def _same(got: dict, cells: dict) -> bool:
    """Every written value read back; a nullable attribute's valid values, and its nulls where the release
    returns a mask (0.23 and later)."""
    for name, want in cells.items():
        if name.endswith(" mask"):
            continue
        mask = cells.get(f"{name} mask")
        values = got["cells"][name]
        if mask is None:
            if values != want:
                return False
            continue
        if [v for v, m in zip(values, mask) if not m] != [v for v, m in zip(want, mask) if not m]:
            return False
        if name in got["masks"] and got["masks"][name] != mask:
            return False
    return True


def _environment(work: Path, release: str) -> Path:
    env = work / f"tiledb-{release}"
    python = env / "bin" / "python"
    if not python.exists():
        venv.create(env, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"tiledb=={release}", "numpy<2"], check=True)
    return python


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="/tmp/tdbformat-old", type=Path)
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    table = Table(title="tdbformat's arrays read by the oldest TileDB-Py that writes their version")
    for c in ("format", "TileDB-Py", "arrays", "equal", "problems"):
        table.add_column(c)
    failed = False
    for version, release in RELEASES.items():
        root = args.work / "arrays" / f"v{version}"
        subprocess.run(["rm", "-rf", str(root)], check=True)
        root.mkdir(parents=True)
        expected = _arrays(root, version)
        python = _environment(args.work, release)
        r = subprocess.run([str(python), "-c", _READER, json.dumps([[p, k] for p, (k, _, _) in expected.items()])],
                           capture_output=True, text=True)
        got = json.loads(r.stdout) if r.returncode == 0 else {p: {"error": r.stderr[-300:]} for p in expected}
        problems = []
        for p, (_, cells, meta) in expected.items():
            g = got[p]
            if "error" in g:
                problems.append(f"{Path(p).name}: {g['error']}")
            elif not _same(g, cells) or g["meta"] != meta:
                problems.append(f"{Path(p).name}: cells or metadata differ")
        failed |= bool(problems)
        table.add_row(f"v{version}", release, str(len(expected)), str(len(expected) - len(problems)),
                      "; ".join(problems) or "-")
    Console(width=160).print(table)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
