"""The Kaitai Struct export: committed .ksy files are current, every one compiles with Kaitai's own compiler,
and the compiled Python parsers read the corpus exactly as tdbformat does (a second implementation of the
same declarations: a disagreement is a bug in one of them).

The compiler is the npm package kaitai-struct-compiler, driven by scripts/ksc.js (node); the parsers need
the kaitaistruct runtime. All versions are compiled once per session, in one node process.
"""

from __future__ import annotations

import enum
import importlib.util
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tdbformat import parse_file
from tdbformat.layout.files import file_kind
from tdbformat.spec.ksy import write_ksy
from tdbformat.spec import structure
from tdbformat.versions import KNOWN_VERSIONS

from corpus import cases, files, key

REPO = Path(__file__).resolve().parents[2]
KSY = REPO / "spec_versions" / "ksy"
NODE_MODULES = REPO / "scripts" / "node" / "node_modules"


def test_committed_ksy_files_are_up_to_date(tmp_path):
    written = write_ksy(tmp_path)
    stale = [str(p.relative_to(tmp_path)) for p in written
             if not (KSY / p.relative_to(tmp_path)).exists()
             or (KSY / p.relative_to(tmp_path)).read_text() != p.read_text()]
    extra = {p.relative_to(KSY) for p in KSY.rglob("*.ksy")} - {p.relative_to(tmp_path) for p in written}
    assert not stale and not extra, (f"spec_versions/ksy is stale ({', '.join(stale + sorted(map(str, extra)))}): "
                                     "run tdbformat spec --write spec_versions")


@pytest.fixture(scope="session")
def compiled(tmp_path_factory):
    """{version: folder of the compiled Python parsers}, after checking every .ksy compiles."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the Kaitai compiler (npm kaitai-struct-compiler) runs on node")
    if not (NODE_MODULES / "kaitai-struct-compiler").is_dir():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed: it installs the Kaitai compiler into scripts/node")
        subprocess.run(["npm", "ci", "--prefix", str(REPO / "scripts" / "node")], check=True, capture_output=True)
    pytest.importorskip("kaitaistruct", reason="the compiled parsers need the kaitaistruct runtime (pip)")
    out = tmp_path_factory.mktemp("ksc")
    ksy = sorted(KSY.glob("v*/*.ksy"))
    run = subprocess.run(["node", str(REPO / "scripts" / "ksc.js"), "python", str(out), *map(str, ksy)],
                         check=True, capture_output=True, text=True)
    return ksy, json.loads(run.stdout), {v: out / f"v{v:02d}" for v in KNOWN_VERSIONS}


def test_every_ksy_compiles_for_every_version(compiled):
    ksy, errors, _ = compiled
    assert {p.parent.name for p in ksy} == {f"v{v:02d}" for v in KNOWN_VERSIONS}
    failed = {f: e for f, e in errors.items() if e is not None}
    assert len(errors) == len(ksy) and not failed, failed


_modules = {}


def parser(folder: Path, ident: str):
    """The compiled parser class of structure ``ident`` in ``folder`` (each version its own module)."""
    path = folder / f"{ident}.py"
    if path not in _modules:
        spec = importlib.util.spec_from_file_location(f"ksy_{folder.name}_{ident}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _modules[path] = getattr(module, "".join(w.capitalize() for w in ident.split("_")))
    return _modules[path]


# ---------------------------------------------------------------------------------------------------------
# Field-by-field comparison


_VALUE_TYPES = ("TypedValue", "FieldValue", "FieldSum")  # the helper types of ksy.py


def _unwrap(k):
    """A Kaitai helper object as the value tdbformat gives: a typed value, a bounded run, a range."""
    name = type(k).__name__
    if name == "NdRange":
        if k.is_var:
            return {"range_size": k.range_size, "start_size": k.start_size, "start": k.start_var, "end": k.end_var}
        return {"start": k.start.value, "end": k.end.value}
    if name in _VALUE_TYPES:
        return k.value
    if name.startswith("Run"):
        return _unwrap_list(k.items)
    if name == "CoordsPair":
        return [_unwrap_list(k.first), _unwrap_list(k.last)]
    if name == "NdRectangle":
        return _unwrap_list(k.ranges)
    return k


def _unwrap_list(x):
    return [_unwrap(i) for i in x] if isinstance(x, list) else x


def same(k, e, path="") -> list[str]:
    """Where the Kaitai value ``k`` differs from tdbformat's ``e`` (recursing; numpy arrays as lists)."""
    k = _unwrap(k)
    if isinstance(e, dict):
        get = k.get if isinstance(k, dict) else lambda name: getattr(k, name, None)
        return [d for name in e if not str(name).startswith("_") for d in same(get(name), e[name], f"{path}.{name}")]
    if isinstance(e, np.ndarray):
        if e.dtype.kind == "S":  # numpy's tolist() drops trailing NULs of S values: compare the bytes
            return same(b"".join(map(bytes, [[x] for x in _unwrap_list(k)])), e.tobytes(), path)
        e = e.tolist()
    if isinstance(e, (list, tuple)) and isinstance(k, dict) and set(k) >= {"start", "end"}:
        k = [k["start"], k["end"]]  # a fixed range: a [lo, hi] pair in the footer, (start, end) elsewhere
    if isinstance(e, (list, tuple)):
        k = _unwrap_list(k)
        if not isinstance(k, list) or len(k) != len(e):
            return [f"{path}: {len(e)} items, kaitai {k!r:.80}"]
        return [d for i, (a, b) in enumerate(zip(k, e)) for d in same(a, b, f"{path}[{i}]")]
    if isinstance(e, (bytes, bytearray, memoryview)):
        k = bytes([k]) if isinstance(k, int) else k  # a CHAR value: numpy S1 in tdbformat, u1 in Kaitai
        return [] if bytes(k or b"") == bytes(e) else [f"{path}: {bytes(e)!r:.60} != kaitai {k!r:.60}"]
    if isinstance(e, float):
        return [] if k == e or (math.isnan(e) and math.isnan(k)) else [f"{path}: {e} != kaitai {k}"]
    if isinstance(e, (bool, int, enum.Enum)) and k is not None:
        k = int(k.value if isinstance(k, enum.Enum) else k)
        return [] if (bool(k) if isinstance(e, bool) else k) == e else [f"{path}: {e!r} != kaitai {k}"]
    return [] if k == e else [f"{path}: {e!r:.60} != kaitai {k!r:.60}"]


# ---------------------------------------------------------------------------------------------------------
# The corpus, through the compiled parsers

_PAYLOADS = {"array_schema": "array_schema", "enumeration": "enumeration", "metadata": "metadata",
             "group_details": "group_details", "delete_commit": "delete_commit", "update_commit": "update_commit"}
_TEXT = {"vacuum": "vacuum_file", "ignore": "ignore_file", "consolidated_commits": "consolidated_commits"}
#: Every file of these versions is compared; of the others, every _SAMPLE-th.
_ALL_FILES_OF = {1, 3, 11, 16, 22, 23}
_SAMPLE = 4


def _schema_params(schema):
    from tdbformat.structs.array_schema import attributes, dimensions

    dims = dimensions(schema)
    return [len(attributes(schema)), len(dims), [int(d.datatype) for d in dims], [d.var for d in dims]]


def _comparisons(path: Path, version: int):
    """(structure, version, params, bytes, tdbformat's value) for each part of the file Kaitai can read."""
    parsed = parse_file(path, key=None)
    value = parsed.value
    if parsed.kind in _TEXT:
        yield _TEXT[parsed.kind], version, [], path.read_bytes(), value
        return
    if parsed.kind in _PAYLOADS:
        gt = value._generic_tile
        yield "generic_tile", gt.version, [], path.read_bytes(), gt
        yield _PAYLOADS[parsed.kind], gt.version, [], value._unfiltered, value
        return
    if parsed.kind != "fragment_metadata":
        return
    fm, params = value, _schema_params(value.schema)
    if fm.legacy is not None:
        yield "fragment_metadata_v1_2", fm.version, params, fm.legacy._unfiltered, fm.legacy
        return
    footer_section = structure("Fragment metadata footer").construct
    find_footer = sys.modules[type(footer_section).__module__].find_footer  # where the footer module is now
    offset, size, _ = find_footer(path.read_bytes(), fm.schema, name=path.parent.name)
    yield "fragment_metadata_footer", fm.version, params, path.read_bytes()[offset:offset + size], fm.footer
    yield "r_tree", fm.version, params, fm.rtree._unfiltered, fm.rtree


def _corpus_files():
    out = []
    for case in cases():
        if key(case) is not None:
            continue  # encrypted: Kaitai cannot decrypt, and tdbformat's payloads need the key
        version = int(case.parent.name[1:].split("_")[0])
        chosen = files(case) if version in _ALL_FILES_OF else files(case)[::_SAMPLE]
        out += [(version, f) for f in chosen if _kind(f) in {*_PAYLOADS, *_TEXT, "fragment_metadata"}]
    return out


def _kind(path):
    try:
        return file_kind(path)
    except Exception:  # not a TileDB file (truth.json, README): not compared
        return None


def test_compiled_parsers_read_the_corpus_as_tdbformat_does(compiled):
    from kaitaistruct import KaitaiStream
    import io

    folders = compiled[2]
    counts, disagreements = {}, []
    for version, path in _corpus_files():
        for ident, v, params, data, expected in _comparisons(path, version):
            if v not in folders:
                continue
            try:
                got = parser(folders[v], ident)(*params, KaitaiStream(io.BytesIO(bytes(data))))
                diffs = same(got, expected)
            except Exception as e:  # the compiled parser refused what tdbformat read
                diffs = [f"kaitai raised {type(e).__name__}: {e}"]
            counts[ident] = counts.get(ident, 0) + 1
            disagreements += [f"{path.relative_to(REPO)} [{ident} v{v}] {d}" for d in diffs[:3]]
    print("compared:", counts)
    assert sum(counts.values()) > 500
    assert not disagreements, "\n".join(disagreements[:40])
