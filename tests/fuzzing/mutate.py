"""The inputs of the fuzzer and the mutations it makes on a copy of one of them.

Every choice is drawn from ``random.Random(f"{seed}:{case}")``, so a case number and a seed name one
mutation exactly. A mutation changes the copy in place and returns a one-line description, plus the
files it touched (those are parsed on their own by the targets).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tdbformat import parse_file
from tdbformat.layout.files import file_kind

from .sites import find_sites, write_site

__all__ = ["Input", "inputs", "mutate", "wrong_key", "CORPUS", "BEHAVIOURS"]

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
BEHAVIOURS = CORPUS.parent / "behaviours"
SOMA, PANDAS = CORPUS.parent / "soma", CORPUS.parent / "pandas"
#: the behaviours the campaigns up to 20261127 (and CI's slices up to 3825a12) drew from
CLASSIC_BEHAVIOURS = ("back_compat_v11", "consolidated_commits_with_delete", "delete_conditions", "escaped_names_v8",
                      "evolved_pre_v10_array", "fragment_newer_than_schema", "update_commit")
#: arrays from before format version 1 (TileDB 0.6.1, 1.2.2, 1.3.0; tests/test_prev1.py)
PREV1 = Path(__file__).resolve().parents[1] / "data" / "prev1"


@dataclass(frozen=True)
class Input:
    name: str        # for reports: "<writer>/<case>"
    root: Path       # the array or group folder
    key: str | None
    group: bool


@lru_cache(maxsize=None)
def inputs() -> tuple[Input, ...]:
    """Every array and group of the corpus: the cases with a truth.json, the historic ones, the behaviours,
    tiledbsoma's and from_pandas', then the pre-v1 arrays (only those with ``TDBFORMAT_FUZZ_CORPUS=prev1``).
    A case draws its input from this list, so a case number means another case once the list grows:
    ``TDBFORMAT_FUZZ_CORPUS=classic`` gives the list campaigns up to 20261127 drew from, to rerun theirs."""
    prev1 = [Input(f"prev1/{name}", PREV1 / name, None, False)
             for name in sorted(json.loads((PREV1 / "truth.json").read_text())["arrays"])]
    if os.environ.get("TDBFORMAT_FUZZ_CORPUS") == "prev1":
        return tuple(prev1)
    out = []
    for t in sorted(CORPUS.glob("v*/*/truth.json")):
        truth = json.loads(t.read_text())
        enc = truth.get("encryption")
        out.append(Input(f"{t.parent.parent.name}/{t.parent.name}", t.parent / truth.get("path", "array"),
                         enc["key"] if enc else None, truth.get("kind") == "group"))
    for kind in ("arrays", "groups"):
        for p in sorted((CORPUS / "historic" / kind).iterdir()):
            if p.is_dir():
                out.append(Input(f"historic/{p.name}", p, None, kind == "groups"))
    classic = os.environ.get("TDBFORMAT_FUZZ_CORPUS") == "classic"
    for t in sorted(BEHAVIOURS.glob("*/truth.json")):  # tests/test_behaviours.py's real files
        if not classic or t.parent.name in CLASSIC_BEHAVIOURS:
            out.append(Input(f"behaviours/{t.parent.name}", t.parent / "array",
                             json.loads(t.read_text()).get("key"), False))
    if classic:
        return tuple(out + prev1)
    # what tiledbsoma and tiledb.from_pandas wrote (tests/test_soma.py, tests/array/test_pandas_frames.py)
    for entry in json.loads((SOMA / "truth.json").read_text())["arrays"].values():
        out.append(Input(f"soma/{entry['uri']}", SOMA / entry["uri"], None, False))
    out += [Input(f"soma/{g.parent.relative_to(SOMA)}", g.parent, None, True) for g in sorted(SOMA.rglob("__group"))]
    out += [Input(f"pandas/{t.parent.name}", t.parent / "array", None, False)
            for t in sorted(PANDAS.glob("*/truth.json"))]
    return tuple(out + prev1)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _kind(p: Path) -> str | None:
    try:
        return file_kind(p)
    except ValueError:
        return None


@lru_cache(maxsize=None)
def _by_kind() -> dict:
    """Every corpus file of each kind (data files also by their name), for swaps across arrays."""
    out = {}
    for inp in inputs():
        for f in _files(inp.root):
            kind = _kind(f)
            if kind:
                out.setdefault(kind, []).append(f)
                out.setdefault((kind, f.name), []).append(f)
    return out


@lru_cache(maxsize=64)
def _sites(path: Path, key):
    """The integer fields of an original corpus file (none if it does not parse, or is not ours)."""
    try:
        return find_sites(parse_file(path, key=key), path.read_bytes())
    except ValueError:
        return [], {}


# ---------------------------------------------------------------- mutations of one file

def _truncate(rng, data, **_):
    n = rng.randrange(len(data)) if data else 0
    return data[:n], f"truncate to {n}"


def _empty(rng, data, **_):
    return b"", "empty"


def _bitflip(rng, data, **_):
    if not data:
        return data, "bitflip (empty file)"
    out, flips = bytearray(data), []
    for _ in range(rng.randint(1, 8)):
        bit = rng.randrange(len(data) * 8)
        out[bit // 8] ^= 1 << bit % 8
        flips.append(bit)
    return bytes(out), f"bitflip {flips}"


def _byterun(rng, data, **_):
    at, n = rng.randrange(len(data) + 1), rng.randint(1, 64)
    fill = rng.choice([b"\x00", b"\xff", bytes([rng.randrange(256)]), None])
    run = rng.randbytes(n) if fill is None else fill * n
    return data[:at] + run + data[at + n:], f"byte run of {n} at {at} ({'random' if fill is None else fill.hex()})"


_BIG = (1 << 31) - 1, 1 << 31, (1 << 32) - 1, 1 << 40, (1 << 63) - 1, 1 << 63, (1 << 64) - 1


def _lies(site, size: int) -> list[int]:
    v, top = site.value, 1 << 8 * site.width
    return [0, 1, v - 1, v + 1, 2 * v + 1, v + size, size, top - 1, top >> 1, (top >> 1) - 1, -1, *_BIG]


def _lie(rng, data, path, key, **_):
    sites, payloads = _sites(path, key)
    if not sites:
        return _bitflip(rng, data)
    site = rng.choice(sites)
    new = rng.choice(_lies(site, len(data)))
    return write_site(data, site, new, payloads, key), f"lie {site.path}={new} (was {site.value})"


_CHUNKY = ("size", "num", "len", "count", "chunk")


def _blowup(rng, data, path, key, **_):
    sites, payloads = _sites(path, key)
    sized = [s for s in sites if any(w in s.path.rsplit(".", 1)[-1] for w in _CHUNKY)]
    if not sized:
        return _lie(rng, data, path, key)
    site = rng.choice(sized)
    new = rng.choice([v for v in _BIG if v < 1 << 8 * site.width] + [site.value * 1000 + 1])
    return write_site(data, site, new, payloads, key), f"blowup {site.path}={new} (was {site.value})"


def _swap_role(rng, data, path, **_):
    """The file of another array or version in the same role (of the same name where there is one)."""
    kind, pool = _kind(path), _by_kind()
    same = [f for f in pool.get((kind, path.name), []) if f != path] or [f for f in pool.get(kind, []) if f != path]
    if not same:
        return _truncate(rng, data)
    other = rng.choice(same)
    return other.read_bytes(), f"swapped for {other.relative_to(CORPUS.parent)}"


_FILE_MUTATIONS = [(_truncate, 3), (_empty, 1), (_bitflip, 4), (_byterun, 3), (_lie, 8), (_blowup, 3),
                   (_swap_role, 2)]


def _mutate_file(rng, copy: Path, original: Path, inp: Input) -> tuple[str, list[Path]]:
    files = _files(original)
    if not files:
        return "no file to mutate", []
    src = rng.choice(files)
    rel = src.relative_to(original)
    fns, weights = zip(*_FILE_MUTATIONS)
    fn = rng.choices(fns, weights)[0]
    data, what = fn(rng, src.read_bytes(), path=src, key=inp.key)
    (copy / rel).write_bytes(data)
    return f"{rel}: {what}", [copy / rel]


# ---------------------------------------------------------------- mutations of the folder

def _fragment_names(copy: Path) -> list[str]:
    """Names shaped like the array's own timestamped names (or a made-up one)."""
    names = sorted({p.name.split(".")[0] for p in copy.rglob("__*_*_*") if p.name.count("_") >= 4})
    return names or ["__1_1_0123456789abcdef0123456789abcdef_22"]


def _delete(rng, copy, files):
    victim = rng.choice(files)
    victim.unlink()
    return f"deleted {victim.relative_to(copy)}", []


def _folder_for_file(rng, copy, files):
    victim = rng.choice(files)
    victim.unlink()
    victim.mkdir()
    return f"folder in place of {victim.relative_to(copy)}", []


_PLAUSIBLE = ("__commits/{n}.del", "__commits/{n}.ok", "__commits/{n}.wrt", "__commits/{n}.vac", "__commits/{n}.con",
              "__commits/{n}.upd", "__commits/{n}.ign", "__commits/x.del", "__fragment_meta/{n}.meta", "__meta/{n}",
              "__meta/{n}.vac", "__schema/{n}", "__schema/__enumerations/{n}", "{n}.ok", "{n}.meta", "{n}.vac",
              "__fragments/{n}/__fragment_metadata.tdb", "__fragments/{n}/a0.tdb", "__group/{n}", "__array_schema.tdb")


def _garbage(rng, copy, files):
    where = copy / rng.choice(_PLAUSIBLE).format(n=rng.choice(_fragment_names(copy)) + rng.choice(["", "0"]))
    content = rng.choice([b"", rng.randbytes(rng.randint(1, 200)), rng.choice(files).read_bytes()])
    if where.is_dir():
        return f"garbage: {where.relative_to(copy)} is a folder already", []
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_bytes(content)
    return f"garbage file {where.relative_to(copy)} ({len(content)} bytes)", [where]


def _empty_schema(rng, copy, files):
    schema = copy / "__schema"
    if schema.is_dir():
        for f in schema.iterdir():
            if f.is_file():
                f.unlink()
    schema.mkdir(exist_ok=True)
    return "emptied __schema/", []


def _dup_fragment(rng, copy, files):
    frags = sorted({f.parent for f in files if f.name == "__fragment_metadata.tdb"})
    if not frags:
        return _garbage(rng, copy, files)
    src = rng.choice(frags)
    parts = src.name.split("_")
    parts[-2] = "f" * len(parts[-2]) if len(parts) > 2 else "dup"
    dst = src.parent / "_".join(parts)
    if dst.exists():
        return f"duplicate of {src.name} exists already", []
    shutil.copytree(src, dst)
    for marker in (copy / "__commits").glob(src.name + ".*"):
        shutil.copy(marker, marker.parent / (dst.name + marker.suffix))
    return f"duplicated fragment {src.relative_to(copy)} as {dst.name}", []


def _swap_two(rng, copy, files):
    if len(files) < 2:
        return _delete(rng, copy, files)
    a, b = rng.sample(files, 2)
    da, db = a.read_bytes(), b.read_bytes()
    a.write_bytes(db)
    b.write_bytes(da)
    return f"swapped {a.relative_to(copy)} and {b.relative_to(copy)}", [a, b]


_FOLDER_MUTATIONS = [(_delete, 3), (_folder_for_file, 1), (_garbage, 4), (_empty_schema, 1), (_dup_fragment, 2),
                     (_swap_two, 2)]


def _mutate_folder(rng, copy: Path) -> tuple[str, list[Path]]:
    files = _files(copy)
    if not files:
        return "empty folder", []
    fns, weights = zip(*_FOLDER_MUTATIONS)
    return rng.choices(fns, weights)[0](rng, copy, files)


# ---------------------------------------------------------------- keys

def wrong_key(rng, key):
    """A key of a wrong shape (or the right key in another spelling), and what it is."""
    right = key or "0123456789abcdeF0123456789abcdeF"
    shapes = [
        ("wrong 32 bytes", rng.randbytes(32)), ("wrong 32 chars", "x" * 32), ("64 non-hex chars", "zz" * 32),
        ("32 chars above U+00FF", "\u20ac" * 32), ("16 bytes", bytes(16)), ("31 chars", right[:31]),
        ("33 chars", right + "0"), ("empty str", ""), ("empty bytes", b""), ("right key as bytes", right.encode()),
        ("right key as hex", right.encode().hex()), ("right key as bytearray", bytearray(right.encode())),
        ("no key", None), ("63 hex chars", right.encode().hex()[:63]), ("64 chars with a surrogate", "\udc80" * 64),
    ]
    return rng.choice(shapes)


def mutate(seed: int, case: int, workdir: Path) -> dict:
    """Make case ``case``: a mutated copy of one input under ``workdir``; returns what to run on it."""
    rng = random.Random(f"{seed}:{case}")
    inp = rng.choice(inputs())
    copy = workdir / inp.root.name
    shutil.copytree(inp.root, copy, symlinks=True)
    roll = rng.random()
    if roll < 0.7:
        what, touched = _mutate_file(rng, copy, inp.root, inp)
    elif roll < 0.9:
        what, touched = _mutate_folder(rng, copy)
    else:
        what, touched = "no change", []
    key = inp.key
    if rng.random() < 0.2:
        shape, key = wrong_key(rng, inp.key)
        what += f"; key: {shape}"
    return dict(input=inp.name, root=copy, group=inp.group, key=key, what=what, touched=touched,
                cli=rng.random())
