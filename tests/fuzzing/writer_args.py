"""The writer-argument target: ``write`` called with arguments of the wrong kind on a small array made for the
case. Every call either raises a clean ``ValueError``/``TypeError`` and leaves the array as it was (no fragment
folder, no commit), or writes a fragment that our reader reads back equal to what was given. Needs no tiledb.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import numpy as np

from tdbformat import open_array
from tdbformat.write.create import create
from tdbformat.schema import ArraySchema, Attr, Dim, Domain
from tdbformat.write.writer import open_writer, write

__all__ = ["writer_case"]

ATTRS = [("i32", np.int32), ("u8", np.uint8), ("f32", np.float32), ("f64", np.float64), ("t", "M8[s]"),
         ("s", str), ("b", bytes), ("c", np.complex128), ("r", "i2,i2"), ("i64", np.int64)]
#: values of every kind a caller might pass, the wrong ones among them
ODD = [lambda n, r: np.arange(n) + 0.5, lambda n, r: np.full(n, 2**40), lambda n, r: np.full(n, -1),
       lambda n, r: np.full(n, 2**63, np.uint64), lambda n, r: np.array([str(i) for i in range(n)]),
       lambda n, r: np.array([None] * n, object), lambda n, r: np.array(["\ud800"] * n, object),
       lambda n, r: [i for i in range(n)], lambda n, r: [float("nan")] * n, lambda n, r: np.zeros((n, 2)),
       lambda n, r: np.zeros(n + 1), lambda n, r: np.array(["é"] * n, object), lambda n, r: None,
       lambda n, r: {"x": 1}, lambda n, r: "text", lambda n, r: np.arange(n).astype("M8[ms]"),
       lambda n, r: np.array([object()] * n, object), lambda n, r: np.arange(n) + 1j,
       lambda n, r: np.array([b"\xff"] * n, object), lambda n, r: np.array([[1, 2]] * n, object),
       lambda n, r: np.ma.masked_array(np.arange(n), mask=[r.random() < 0.5 for _ in range(n)]),
       lambda n, r: np.array([2**64 - 1] * n, object), lambda n, r: np.array([1e300] * n)]
#: bad values for the other arguments
OTHER = {"subarray": [[(0, 1)], [(5, 1)], [(0, 99)], [("a", "b")], 3, [(0.5, 2)]],
         "coords": [[np.arange(3)], "abc", np.arange(3), [np.arange(3), np.arange(3), np.arange(3)]],
         "validity": [{"s": [True]}, {"zz": [True]}, [True], {"s": "yes"}],
         "uuid": ["x", 12, "A" * 32], "timestamp": [-1, 1.5, "now", (3, 1), 2**70],
         "lossy": ["yes", 1, None], "threads": [0, -1, "2"], "max_chunk_size": [0, -5, 1.5]}


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def _array(rng: random.Random, path: Path):
    """A dense or sparse array of a few attributes of the kinds in :data:`ATTRS`; (sparse, attributes)."""
    sparse = rng.random() < 0.5
    picked = rng.sample(ATTRS, rng.randint(1, 3))
    attrs = [Attr(name, dtype, nullable=rng.random() < 0.3 and name not in ("c", "r")) for name, dtype in picked]
    dims = [Dim("d", (0, 9), 5, dtype=np.int64)]
    if sparse:
        dims.append(rng.choice([Dim("k", None, dtype="ascii"), Dim("k", (0, 2**64 - 2), 2**60, dtype=np.uint64),
                                Dim("k", (-1.0, 1.0), 0.5, dtype=np.float64)]))
    create(str(path), ArraySchema(Domain(*dims), attrs, sparse=sparse), version=rng.choice([14, 20, 22]))
    return sparse, attrs, dims


def _good(attr, n, rng):
    kind = np.dtype(attr.datatype.numpy_dtype).kind
    if attr.var:
        return np.array([("x" * rng.randint(0, 3)) if attr.datatype.name == "STRING_UTF8" else b"y" * rng.randint(0, 3)
                         for _ in range(n)], object)
    if attr.cell_val_num == 2:
        return np.arange(n) + 1j if kind == "f" else np.array([(i, -i) for i in range(n)], "i2,i2")
    if kind == "M":
        return np.arange(n).astype("M8[s]")
    return np.arange(n).astype(attr.datatype.numpy_dtype)


def _coords(dims, n, rng):
    out = [np.array(rng.sample(range(10), n), np.int64)]
    for d in dims[1:]:
        if d.var:
            out.append(np.array([f"k{i}" for i in range(n)], object))
        elif d.datatype.name == "UINT64":
            out.append(np.array([2**64 - 2 - i for i in range(n)], np.uint64))
        else:
            out.append(np.linspace(-1, 1, n))
    return out


def writer_case(seed: int, number: int, workdir: Path) -> dict:
    """(what was tried, and the outcome: ``refused`` / ``written``, or ``escape`` with the reason)."""
    rng = random.Random(f"{seed}:{number}:writer-args")
    path = workdir / "writer-args"
    sparse, attrs, dims = _array(rng, path)
    # (a draw of its own, which leaves the other cases as they were) whole tiles in chunks of a few bytes: str
    # tiles are filtered as the check encodes them (TileStreams), bad cells or not
    whole = not sparse and random.Random(f"{seed}:{number}:writer-whole").random() < 0.3
    n = 10 if whole else 3
    data = {a.name: _good(a, n, rng) for a in attrs}
    kw = {"coords": _coords(dims, n, rng)} if sparse else {"subarray": [(0, 9)] if whole else [(2, 4)]}
    if whole:
        kw["max_chunk_size"] = rng.choice([1, 4, 8, 65536])
    what = []
    for _ in range(rng.randint(0 if whole else 1, 2)):  # (whole tiles: written with no bad argument too)
        if rng.random() < 0.7:
            a = rng.choice(attrs)
            j = rng.randrange(len(ODD))
            data[a.name] = ODD[j](n, rng)
            what.append(f"data[{a.name}] = ODD[{j}]")
        elif sparse and isinstance(kw.get("coords"), list) and len(kw["coords"]) == len(dims) and rng.random() < 0.5:
            i = rng.randrange(len(dims))
            j = rng.randrange(len(ODD))
            kw["coords"][i] = ODD[j](n, rng)
            what.append(f"coords[{i}] = ODD[{j}]")
        else:
            arg = rng.choice(sorted(OTHER))
            kw[arg] = rng.choice(OTHER[arg])
            what.append(f"{arg} = {kw[arg]!r}"[:80])
    assign = set(kw) <= {"coords", "subarray"} and rng.random() < 0.3  # TileDB-Py's form: A[index] = data
    what.append("A[...] = data" if assign else "write(...)")
    before = _tree(path)
    out = dict(what="; ".join(what), written=False)
    try:
        if assign:
            with open_writer(str(path)) as A:
                A[_index(kw, sparse)] = data
        else:
            write(str(path), data, **kw)
    except (ValueError, TypeError, IndexError) as e:
        if _tree(path) != before:
            return dict(out, outcome="escape", exc="LeftBytes", message=f"{type(e).__name__} left files: {e}"[:200])
        return dict(out, outcome="refused")
    got = open_array(str(path)).read()
    return dict(out, written=True, **_compare(got, data, kw, sparse, attrs, dims))


def _index(kw, sparse):
    """The assignment index of the write's ``coords`` or ``subarray`` (slices are half-open, as TileDB-Py's)."""
    if sparse:
        return tuple(kw["coords"]) if isinstance(kw["coords"], list) else kw["coords"]
    sub = kw["subarray"]
    if isinstance(sub, list) and len(sub) == 1 and all(isinstance(v, int) for v in sub[0]):
        return slice(sub[0][0], sub[0][1] + 1)
    return sub


def _compare(got, data, kw, sparse, attrs, dims) -> dict:
    """The cells read back equal the values given (sparse: matched by coordinates)."""
    if sparse:
        # the given coordinates as the dimension's type (ints given for a float dimension are floats)
        coords = [np.asarray(c) if got[d.name].dtype == object else np.asarray(c).astype(got[d.name].dtype)
                  for c, d in zip(kw["coords"], dims)]
        keys = list(zip(*[[x.encode() if isinstance(x, str) else x for x in c.tolist()] for c in coords]))
        back = list(zip(*[got[d.name].tolist() for d in dims]))
        order = [back.index(k) for k in keys] if sorted(map(repr, keys)) == sorted(map(repr, back)) else None
        if order is None:
            return dict(outcome="escape", exc="WrongCoordinates", message=f"{keys} read back as {back}"[:200])
    else:
        lo, hi = kw["subarray"][0]
        order = list(range(lo, hi + 1))
    for a in attrs:
        want = np.ma.getdata(data[a.name])
        read = np.ma.getdata(got[a.name])[order]
        mask = np.ma.getmaskarray(data[a.name]) if isinstance(data[a.name], np.ma.MaskedArray) else None
        if not _same(read, want, mask):
            return dict(outcome="escape", exc="WrongValues", message=f"{a.name}: {want!r} read back as {read!r}"[:200])
    return dict(outcome="written")


def _norm(values: list) -> list:
    return [x.encode("utf-8", "surrogateescape") if isinstance(x, str) else (b"" if x is None else x) for x in values]


def _same(read, want, mask) -> bool:
    """Equal cells, as the reader gives them and as the write was given them (records as rows of values,
    datetimes as their int64, text as UTF-8, NaN equal to NaN); ``mask``: cells given as null, not compared."""
    want = np.asarray(want)
    if read.dtype.kind == "c":  # two floats a cell read as complex numbers, as TileDB-Py gives them
        read = np.stack([read.real, read.imag], -1)
        if want.dtype.names:
            want = np.stack([want[f] for f in want.dtype.names], -1)
        elif want.dtype.kind == "c" or want.shape[-1:] != (2,) or want.size != read.size:
            want = np.stack([want.real, np.imag(want)], -1)
    elif read.dtype.names:
        read = np.stack([read[f] for f in read.dtype.names], -1)
        if want.dtype.kind == "c":
            want = np.stack([want.real, want.imag], -1)
        elif want.dtype.names:
            want = np.stack([want[f] for f in want.dtype.names], -1)
    if read.dtype.kind in "mM":
        read = read.view(np.int64)
        want = want.view(np.int64) if want.dtype.kind in "mM" else want
    keep = np.ones(len(read), bool) if mask is None or mask.ndim != 1 else ~mask
    r = _norm(read[keep].tolist())
    w = _norm(want.reshape(read.shape)[keep].tolist()) if want.size == read.size else None
    return r == w or repr(r) == repr(w)  # (repr: NaN equals NaN)
