"""``repair`` on an object store (moto's S3 server): folder marker objects (zero-byte keys ending in "/", and the
``<name>_$folder$`` form) and stray objects. TileDB 2.30 lists past the markers (TileDB-Py reads; TileDB#4102's
failure was older TileDB's), so removing them is housekeeping; a stray object in ``__fragment_meta/`` still
fails it with TileDB#4102's "Failed to read S3 object". Both are set aside into the backup prefix, after which
TileDB-Py reads, validate is clean, a second repair plans nothing, and the backup restores every key."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

import tdbformat
from tdbformat.check.repair import repair
from tdbformat.storage import storage_for

tiledb = pytest.importorskip("tiledb")
pytest.importorskip("s3fs")
pytest.importorskip("moto.server")
from s3server import serving  # noqa: E402 (after the skips: it needs moto)

BUCKET = "repair"


@pytest.fixture(scope="module")
def server():
    yield from serving(BUCKET)


@pytest.fixture
def s3(server, monkeypatch):
    import fsspec.config

    s, fs = server
    monkeypatch.setitem(fsspec.config.conf, "s3", dict(s.options))  # s3:// URLs reach the server
    return s, fs


def _make(s, uri: str) -> None:
    ctx = tiledb.Ctx(s.tiledb_config())
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int64, ctx=ctx), ctx=ctx)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, sparse=True, ctx=ctx,
                                                attrs=[tiledb.Attr("a", dtype=np.int32, ctx=ctx)]), ctx=ctx)
    for t in (1, 2):
        with tiledb.open(uri, "w", timestamp=t, ctx=ctx) as A:
            A[np.arange(10 * t, 10 * t + 10)] = {"a": np.arange(10, dtype=np.int32) + 100 * t}


def _tiledb_py(s, uri: str) -> str:
    code = ("import sys, json, tiledb\nctx = tiledb.Ctx(json.loads(sys.argv[2]))\ntry:\n"
            "    with tiledb.open(sys.argv[1], ctx=ctx) as A: print(sorted(A[:]['a'].tolist()))\n"
            "except Exception as e: print(type(e).__name__, e)\n")
    return subprocess.run([sys.executable, "-c", code, uri, json.dumps(s.tiledb_config())], capture_output=True,
                          text=True).stdout.strip()


def _keys(fs, prefix: str) -> dict:
    fs.invalidate_cache()
    return {k[len(prefix):]: hashlib.sha256(fs.cat_file(k) if not k.endswith("/") else b"").hexdigest()
            for k in fs.find(prefix)}


CELLS = str(sorted(list(range(100, 110)) + list(range(200, 210))))

#: the objects put into the array, does TileDB-Py fail on them, the repair
DAMAGE = {
    "folder markers": (["__meta/", "__fragments/", "__schema/"], False, "folder-markers"),
    "a folder marker of the $folder$ form": (["__fragments_$folder$"], False, "folder-markers"),
    "a stray object in __fragment_meta": (["__fragment_meta/junk"], True, "stray-files"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_repair_on_s3(s3, damage):
    s, fs = s3
    keys, fails, repair_id = DAMAGE[damage]
    prefix = f"{BUCKET}/{damage.replace(' ', '-').replace('$', '')}"
    uri = f"s3://{prefix}"
    _make(s, uri)
    for k in keys:
        fs.pipe(f"{prefix}/{k}", b"")
    before = _tiledb_py(s, uri)
    assert before.startswith("TileDBError") and "Failed to read S3 object" in before if fails else before == CELLS
    damaged = _keys(fs, prefix + "/")
    copy = repair(uri, out=uri + "-copy")  # a copy holds neither the markers nor the stray object
    assert copy.complete and _keys(fs, prefix + "/") == damaged and _tiledb_py(s, uri + "-copy") == CELLS
    assert not [k for k in fs.find(prefix + "-copy/") if k.endswith(("/", "$folder$", "junk"))]
    plan = repair(uri)
    assert {f.repair for f in plan.fixes} == {repair_id} and sorted(p for f in plan.fixes for p in f.paths) == \
        sorted(keys) and _keys(fs, prefix + "/") == damaged
    report = repair(uri, in_place=True)
    assert report.complete and all(f.applied for f in report.fixes), str(report)
    assert _tiledb_py(s, uri) == CELLS
    assert tdbformat.validate(uri) == [] and repair(uri).fixes == []
    # the backup restores every key
    storage, _ = storage_for(uri)
    backup = report.backup.split("://", 1)[1]
    for k in keys:
        if k.endswith("/"):
            assert storage.move_marker(f"s3://{backup}/{k}", f"{uri}/{k}")
        else:
            fs.mv(f"{backup}/{k}", f"{prefix}/{k}")
    fs.rm(f"{prefix}/.tdbformat-backup", recursive=True)
    assert _keys(fs, prefix + "/") == damaged
