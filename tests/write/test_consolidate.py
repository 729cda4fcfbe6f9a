"""Consolidation and vacuum against TileDB-Py's: one copy of each multi-fragment array consolidated (and
vacuumed) by TileDB-Py, another by tdbformat with the same config; both copies are read by TileDB-Py."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

tiledb = pytest.importorskip("tiledb")

import tdbformat  # noqa: E402
from tdbformat.errors import FormatError  # noqa: E402
from tdbformat.write.consolidate import consolidate, plan  # noqa: E402
from tdbformat.write.vacuum import vacuum  # noqa: E402
from test_consolidate_corpus import least_budget  # noqa: E402

_WRITES = [(10, [1, 5, 7]), (20, [5, 9, 3]), (30, [7, 1, 11, 12]), (40, [2, 5])]


def _sparse(path, dups=False, delete=True, dim_dtype=np.int64, var=False, nullable=False):
    if dim_dtype == "ascii":
        dim = tiledb.Dim("x", dtype="ascii")
    elif np.dtype(dim_dtype).kind == "M":
        dim = tiledb.Dim("x", domain=(np.datetime64(0, "D"), np.datetime64(999, "D")), tile=np.timedelta64(10, "D"),
                         dtype=dim_dtype)
    else:
        dim = tiledb.Dim("x", domain=(0, 99), tile=10, dtype=dim_dtype)
    attrs = [tiledb.Attr("a", dtype=np.int32, nullable=nullable)]
    if var:
        attrs.append(tiledb.Attr("s", dtype=str, var=True))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True, attrs=attrs,
                                                      capacity=3, allows_duplicates=dups))
    for t, xs in _WRITES:
        coords = np.array([f"k{x:02d}" for x in xs]) if dim_dtype == "ascii" else (
            np.array(xs, "datetime64[D]") if np.dtype(dim_dtype).kind == "M" else np.array(xs))
        data = {"a": np.array(xs, np.int32) * 10 + t}
        if var:
            data["s"] = np.array(["s" * (x % 4) + str(t) for x in xs], object)
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[coords] = data if var or nullable else data["a"]
        if delete and t == 20:
            with tiledb.open(str(path), "d", timestamp=25) as A:
                A.query(cond="a == 50").submit()
    return [t for t, _ in _WRITES] + ([25] if delete else [])


def _dense(path, whole=False):
    dom = tiledb.Domain(tiledb.Dim("r", domain=(1, 8), tile=4, dtype=np.int32),
                        tiledb.Dim("c", domain=(1, 8), tile=4, dtype=np.int32))
    attrs = [tiledb.Attr("a", dtype=np.float64), tiledb.Attr("n", dtype=np.int16, nullable=True)]
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=False, attrs=attrs))
    boxes = [(10, (1, 9), (1, 9)), (20, (1, 5), (1, 9)), (30, (5, 9), (1, 9))] if whole else \
        [(10, (1, 5), (1, 5)), (20, (1, 5), (5, 9)), (30, (5, 9), (1, 9))]
    for t, (r0, r1), (c0, c1) in boxes:
        shape = (r1 - r0, c1 - c0)
        values = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + t
        n = np.ma.masked_array(np.full(shape, t, np.int16), mask=np.arange(np.prod(shape)).reshape(shape) % 3 == 0)
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[r0:r1, c0:c1] = {"a": values, "n": n}
    return [t for t, _, _ in boxes]


def _hilbert(path):
    """A Hilbert-ordered sparse array (one int, one float dimension) whose writes interleave and overwrite."""
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 999), tile=100, dtype=np.int32),
                        tiledb.Dim("y", domain=(-1.0, 1.0), tile=0.5, dtype=np.float64))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=True, cell_order="hilbert", capacity=4,
                                                      attrs=[tiledb.Attr("a", dtype=np.int64),
                                                             tiledb.Attr("s", dtype=str, var=True)]))
    rng = np.random.default_rng(3)
    for t in (10, 20, 30):
        x = rng.choice(60, 20, replace=False).astype(np.int32) * 16
        y = np.round(rng.uniform(-1, 1, 20), 2)
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[x, y] = {"a": x.astype(np.int64) * 1000 + t, "s": np.array([f"v{t}-{i}" for i in range(20)], object)}
    return [10, 20, 30]


def _evolved(path):
    """Fragments written under three schemas: ``b`` added after the first write, ``a`` dropped after the
    second (TileDB's array_evolve), a delete under the second. The schema of the create is at the real time:
    every other timestamp is after it."""
    t0 = int(time.time() * 1000) + 10**6
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=True, capacity=3,
                                                      attrs=[tiledb.Attr("a", dtype=np.int32)]))
    with tiledb.open(str(path), "w", timestamp=t0 + 10) as A:
        A[np.array([1, 5, 7, 9])] = np.array([10, 50, 70, 90], np.int32)
    evolution = tiledb.ArraySchemaEvolution(tiledb.Ctx())
    evolution.add_attribute(tiledb.Attr("b", dtype=np.float32, fill=-1.0))
    evolution.timestamp(t0 + 15)
    evolution.array_evolve(str(path))
    with tiledb.open(str(path), "w", timestamp=t0 + 20) as A:
        A[np.array([5, 9, 3])] = {"a": np.array([51, 91, 31], np.int32), "b": np.array([0.5, 0.9, 0.3], np.float32)}
    with tiledb.open(str(path), "d", timestamp=t0 + 22) as A:  # (TileDB cannot consolidate a condition on a)
        A.query(cond="x == 7").submit()
    evolution = tiledb.ArraySchemaEvolution(tiledb.Ctx())
    evolution.drop_attribute("a")
    evolution.timestamp(t0 + 25)
    evolution.array_evolve(str(path))
    with tiledb.open(str(path), "w", timestamp=t0 + 30) as A:
        A[np.array([2, 9, 11])] = np.array([0.2, 9.9, 1.1], np.float32)
    return [t0 + t for t in (10, 15, 20, 22, 25, 30)]


def _pair(tmp_path, build, **kw):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    times = build(ours, **kw)
    shutil.copytree(ours, theirs)
    return ours, theirs, times


def _fragments(path):
    with tiledb.open(str(path)) as A:
        pass
    info = tiledb.array_fragments(str(path))
    return sorted(tuple(t) for t in info.timestamp_range)


def _read(path, t):
    with tiledb.open(str(path), timestamp=t) as A:
        out = A[:] if A.schema.sparse else A.query()[:]
    return {k: (np.ma.getdata(v).tolist(), np.ma.getmaskarray(v).tolist()) if isinstance(v, np.ma.MaskedArray)
            else np.asarray(v).tolist() for k, v in out.items()}


def _new_fragment(path, rng):
    folder = path / "__fragments"
    return folder / next(n for n in os.listdir(folder) if n.startswith(f"__{rng[0]}_{rng[1]}_"))


def _same_everywhere(ours, theirs, times):
    assert _fragments(ours) == _fragments(theirs)
    for t in sorted(set(times)) + [None]:
        assert repr(_read(ours, t)) == repr(_read(theirs, t)), t  # (repr: a NaN fill equals a NaN fill)


CASES = {
    "sparse_deletes": (_sparse, {}),
    "sparse_dups_deletes": (_sparse, {"dups": True}),
    "sparse_no_deletes": (_sparse, {"delete": False}),
    "sparse_strings_var": (_sparse, {"dim_dtype": "ascii", "var": True}),
    "sparse_datetime_nullable": (_sparse, {"dim_dtype": "datetime64[D]", "nullable": True}),
    "sparse_float_dim": (_sparse, {"dim_dtype": np.float64, "delete": False}),
    "dense": (_dense, {}),
    "dense_whole": (_dense, {"whole": True}),
    "sparse_hilbert": (_hilbert, {}),
    "sparse_several_schemas": (_evolved, {}),
}


@pytest.mark.parametrize("budget", ["default", "least"])
@pytest.mark.parametrize("case", CASES)
def test_consolidate_and_vacuum_as_tiledb(tmp_path, case, budget):
    """``least``: merged in the least memory the merge takes, a few tiles at a time (a tile of each fragment
    at once, dense a tile at a time): the same bytes."""
    build, kw = CASES[case]
    ours, theirs, times = _pair(tmp_path, build, **kw)
    tiledb.consolidate(str(theirs), config=tiledb.Config({"sm.consolidation.mode": "fragments"}))
    done = consolidate(str(ours), config={"sm.consolidation.mode": "fragments"},
                       memory_budget=least_budget(ours) if budget == "least" else None)
    _same_everywhere(ours, theirs, times)
    rng = done["steps"][-1]["timestamp_range"]
    # the copies share their delete commits and schema: the merged fragments are the same bytes
    mine, other = _new_fragment(ours, rng), _new_fragment(theirs, rng)
    assert sorted(os.listdir(mine)) == sorted(os.listdir(other))
    for name in os.listdir(other):
        assert (mine / name).read_bytes() == (other / name).read_bytes(), name
    tiledb.vacuum(str(theirs))
    vacuum(str(ours))
    _same_everywhere(ours, theirs, times)
    for sub in ("__fragments", "__commits"):
        assert len(os.listdir(ours / sub)) == len(os.listdir(theirs / sub)), sub
    assert not [f for f in tdbformat.validate(str(ours)) if f.severity == "error"]


@pytest.mark.parametrize("case", ["sparse_deletes", "dense"])
def test_tiledb_writes_to_and_consolidates_our_result(tmp_path, case):
    build, kw = CASES[case]
    ours, theirs, times = _pair(tmp_path, build, **kw)
    for path in (ours, theirs):
        (consolidate if path == ours else tiledb.consolidate)(str(path))
        (vacuum if path == ours else tiledb.vacuum)(str(path))
        with tiledb.open(str(path), "w", timestamp=50) as A:
            if A.schema.sparse:
                A[np.array([3, 4])] = np.array([1, 2], np.int32)
            else:
                A[2:4, 2:4] = {"a": np.ones((2, 2)), "n": np.ones((2, 2), np.int16)}
        tiledb.consolidate(str(path))
        tiledb.vacuum(str(path))
    _same_everywhere(ours, theirs, times + [50])


def test_vacuum_file_lists_the_replaced_fragments_relative_to_the_array(tmp_path):
    ours, theirs, _ = _pair(tmp_path, _sparse)
    before = sorted(os.listdir(ours / "__fragments"))
    consolidate(str(ours))
    tiledb.consolidate(str(theirs))
    vac = [n for n in os.listdir(ours / "__commits") if n.endswith(".vac")]
    assert len(vac) == 1
    assert (ours / "__commits" / vac[0]).read_text() == "".join(f"/__fragments/{n}\n" for n in before)
    theirs_vac = next(n for n in os.listdir(theirs / "__commits") if n.endswith(".vac"))
    assert vac[0].split("_")[2:4] == theirs_vac.split("_")[2:4] or vac[0][:6] == theirs_vac[:6]


def test_a_consolidation_is_invisible_until_its_commit(tmp_path):
    """Everything of the new fragment but its commit: readers see the array as before."""
    ours, theirs, times = _pair(tmp_path, _sparse)
    consolidate(str(ours))
    commit = next(p for p in (ours / "__commits").iterdir() if p.name.startswith("__10_40_") and p.suffix == ".wrt")
    commit.unlink()
    for p in (ours / "__commits").glob("*.vac"):
        p.unlink()
    _same_everywhere(ours, theirs, times)


def test_purge_deleted_cells_as_tiledb(tmp_path):
    ours, theirs, times = _pair(tmp_path, _sparse)
    cfg = {"sm.consolidation.purge_deleted_cells": "true"}
    tiledb.consolidate(str(theirs), config=tiledb.Config(cfg))
    consolidate(str(ours), config=cfg)
    _same_everywhere(ours, theirs, times)


def _current_domain_pair(tmp_path):
    """Two copies of a dense array with a current domain (d in 0-99, current 0-24, tiles of 10) written at
    d 3-10 and 12-24."""
    paths = [str(tmp_path / n) for n in ("ours", "theirs")]
    for path in paths:
        dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int64))
        schema = tiledb.ArraySchema(domain=dom, attrs=[tiledb.Attr("a", dtype=np.int64)])
        current, rect = tiledb.CurrentDomain(tiledb.Ctx()), tiledb.NDRectangle(tiledb.Ctx(), dom)
        rect.set_range(0, 0, 24)
        current.set_ndrectangle(rect)
        schema.set_current_domain(current)
        tiledb.Array.create(path, schema)
        with tiledb.open(path, "w", timestamp=1) as A:
            A[3:11] = np.arange(8)
        with tiledb.open(path, "w", timestamp=2) as A:
            A[12:25] = np.arange(13)
    return paths


@pytest.mark.parametrize("amplification, merged", [(None, False), ("1.04", False), ("1.05", True)])
def test_a_current_domain_leaves_non_empty_domains_unexpanded_as_tiledb(tmp_path, amplification, merged):
    """With a current domain, TileDB 2.30's step algorithm counts the fragments' non-empty domains as they
    are, not grown to tiles: a union of 22 cells over 8 + 13 is an amplification of 1.048, which the default
    1.0 refuses. The same steps as TileDB-Py's, planned and carried out."""
    ours, theirs = _current_domain_pair(tmp_path)
    cfg = {} if amplification is None else {"sm.consolidation.amplification": amplification}
    tiledb.consolidate(theirs, config=tiledb.Config(cfg))
    steps = consolidate(ours, config=cfg, dry_run=True)["steps"]
    consolidate(ours, config=cfg)
    want = [f.nonempty_domain for f in tiledb.array_fragments(theirs)]
    assert [f.nonempty_domain for f in tiledb.array_fragments(ours)] == want
    assert want == ([((3, 24),)] if merged else [((3, 10),), ((12, 24),)])
    assert len(steps) == merged
    with tiledb.open(ours) as A:
        assert A[3:25]["a"].tolist() == list(range(8)) + [np.iinfo(np.int64).min] + list(range(13))


def test_a_delete_on_a_dropped_attribute_is_refused_naming_the_delete(tmp_path):
    """A delete whose condition names an attribute dropped since: TileDB refuses to read or consolidate the
    array ("Field doesn't exist"); so do we, naming the delete commit, and the array stays as it was."""
    path = str(tmp_path / "a")
    dim = tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int64)
    tiledb.Array.create(path, tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True, attrs=[
        tiledb.Attr("a", dtype=np.int64), tiledb.Attr("b", dtype=np.int64)]))
    with tiledb.open(path, "w", timestamp=1) as A:
        A[np.arange(10)] = {"a": np.arange(10), "b": np.arange(10)}
    with tiledb.open(path, "d", timestamp=2) as A:
        A.query(cond="b > 5").submit()
    evolution = tiledb.ArraySchemaEvolution(tiledb.Ctx())
    evolution.drop_attribute("b")
    evolution.timestamp(3)
    evolution.array_evolve(path)
    with tiledb.open(path, "w", timestamp=4) as A:
        A[np.arange(10, 20)] = {"a": np.arange(10)}
    for refused in (lambda: tiledb.open(path)[:], lambda: tiledb.consolidate(path)):
        with pytest.raises(tiledb.TileDBError, match="Field doesn't exist"):
            refused()
    before = _tree_hash(path)
    delete = next(n for n in os.listdir(os.path.join(path, "__commits")) if n.endswith(".del"))
    for refused in (lambda: tdbformat.open_array(path)[:], lambda: consolidate(path)):
        with pytest.raises(FormatError, match="'b'") as err:
            refused()
        assert err.value.file == f"__commits/{delete}" and err.value.structure == "delete condition"
    assert _tree_hash(path) == before


@pytest.mark.parametrize("cfg", [{"sm.consolidation.step_min_frags": "2", "sm.consolidation.step_max_frags": "2"},
                                 {"sm.consolidation.step_min_frags": "2", "sm.consolidation.step_max_frags": "3",
                                  "sm.consolidation.steps": "1"},
                                 {"sm.consolidation.timestamp_start": "15", "sm.consolidation.timestamp_end": "35"}])
def test_steps_as_tiledb(tmp_path, cfg):
    ours, theirs, times = _pair(tmp_path, _sparse, delete=False)
    planned = plan(str(ours), config=cfg)
    tiledb.consolidate(str(theirs), config=tiledb.Config(cfg))
    consolidate(str(ours), config=cfg)
    assert _fragments(ours) == _fragments(theirs)
    _same_everywhere(ours, theirs, times)
    if len(planned["steps"]) == 1:  # later steps' sizes are estimates
        made = set(_fragments(theirs)) - {(t, t) for t in times}
        assert {tuple(s["timestamp_range"]) for s in planned["steps"]} == made


def _tree_hash(folder) -> str:
    h = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(folder)):
        for n in sorted(files):
            p = os.path.join(root, n)
            h.update(p.encode() + open(p, "rb").read())
        h.update(repr(sorted(dirs)).encode())
    return h.hexdigest()


@pytest.mark.parametrize("line", ["{outside}", "file://{outside}", "/../outside", "../outside", "s3://bucket/outside",
                                  "/__fragments/../../outside"])
def test_a_hostile_vacuum_file_changes_nothing_outside_the_array(tmp_path, line):
    ours = tmp_path / "arr"
    _sparse(ours, delete=False)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "__fragment_metadata.tdb").write_bytes(b"keep")
    link = "__5_5_00000000000000000000000000000000_22"  # committed, in the array, a link out of it
    (ours / "__fragments" / link).symlink_to(outside, target_is_directory=True)
    (ours / "__commits" / f"{link}.wrt").write_bytes(b"")
    before = _tree_hash(outside)
    text = line.format(outside=outside) + f"\n/__fragments/{link}\n"
    (ours / "__commits" / "__1_2_0123456789abcdef0123456789abcdef_22.vac").write_text(text)
    vacuum(str(ours))
    assert _tree_hash(outside) == before
    assert (outside / "__fragment_metadata.tdb").exists()
    assert not (ours / "__fragments" / link).exists()  # the link itself went


def test_a_hostile_array_is_refused_before_anything_is_written(tmp_path):
    ours = tmp_path / "arr"
    _sparse(ours)
    bad = ours / "__commits" / "__1_2_0123456789abcdef0123456789abcdef_22.vac"
    bad.write_bytes(b"no newline at the end")
    before = _tree_hash(ours)
    with pytest.raises(FormatError):
        consolidate(str(ours))
    with pytest.raises(FormatError):
        vacuum(str(ours))
    assert _tree_hash(ours) == before


@pytest.mark.parametrize("cfg, error", [({"sm.consolidation.mode": "nope"}, ValueError),
                                        ({"sm.consolidation.step_size_ratio": "2"}, ValueError),
                                        ({"sm.consolidation.step_min_frags": "5",
                                          "sm.consolidation.step_max_frags": "2"}, ValueError),
                                        ({"sm.consolidation.steps": "x"}, ValueError), (3, TypeError)])
def test_bad_config_is_refused_naming_it(tmp_path, cfg, error):
    ours = tmp_path / "arr"
    _sparse(ours, delete=False)
    before = _tree_hash(ours)
    with pytest.raises(error, match="config"):
        consolidate(str(ours), config=cfg)
    assert _tree_hash(ours) == before


def test_cells_that_are_no_utf8_are_copied_as_stored(tmp_path):
    """A UTF-8 attribute holding bytes that are no UTF-8 (reads give them back through surrogateescape): the
    merge copies them as TileDB's does, it never re-encodes them (fuzz case 1181 of seed 777)."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    tiledb.Array.create(str(theirs), tiledb.ArraySchema(domain=dom, sparse=True,
                                                        attrs=[tiledb.Attr("s", dtype=str, var=True)]))
    for t, xs in ((10, [1, 2]), (20, [2, 3])):
        with tiledb.open(str(theirs), "w", timestamp=t) as A:
            A[np.array(xs)] = np.array([b"\xff\xfe%d" % x for x in xs], object)
    shutil.copytree(theirs, ours)
    tiledb.consolidate(str(theirs))
    consolidate(str(ours))
    mine, other = _new_fragment(ours, (10, 20)), _new_fragment(theirs, (10, 20))
    for name in os.listdir(other):
        assert (mine / name).read_bytes() == (other / name).read_bytes(), name


def test_a_failed_merge_takes_its_uncommitted_folder_away(tmp_path, monkeypatch):
    ours = tmp_path / "arr"
    _sparse(ours, delete=False)
    before = _tree_hash(ours)
    from tdbformat.write.fragment_writer import FragmentStream
    real = FragmentStream.add

    def failing(self, fw):  # a batch of tiles written, then the disk is full
        real(self, fw)
        raise OSError("disk full")
    monkeypatch.setattr(FragmentStream, "add", failing)
    with pytest.raises(OSError, match="disk full"):
        consolidate(str(ours))
    assert _tree_hash(ours) == before


def test_an_encrypted_array_consolidates_as_tiledb(tmp_path):
    from oracle import tiledb_ctx

    key = "0123456789abcdeF0123456789abcdeF"
    ctx = tiledb_ctx(key)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64, ctx=ctx), ctx=ctx)
    tiledb.Array.create(str(theirs), tiledb.ArraySchema(domain=dom, sparse=True, ctx=ctx,
                                                        attrs=[tiledb.Attr("a", dtype=np.int32, ctx=ctx)]), ctx=ctx)
    for t, xs in _WRITES:
        with tiledb.open(str(theirs), "w", timestamp=t, ctx=ctx) as A:
            A[np.array(xs)] = np.array(xs, np.int32) + t
    shutil.copytree(theirs, ours)
    tiledb.consolidate(str(theirs), ctx=ctx)
    consolidate(str(ours), key=key)
    for path in (ours, theirs):
        (vacuum if path == ours else tiledb.vacuum)(str(path), **({"key": key} if path == ours else {"ctx": ctx}))
    for t in [t for t, _ in _WRITES] + [None]:
        with tiledb.open(str(ours), timestamp=t, ctx=ctx) as A, tiledb.open(str(theirs), timestamp=t, ctx=ctx) as B:
            assert repr(A[:]) == repr(B[:]), t
    assert len(os.listdir(ours / "__fragments")) == len(os.listdir(theirs / "__fragments")) == 1


def test_file_sizes_that_add_up_past_any_storage_are_a_format_error(tmp_path):
    """A footer recording a data file of 2**64 - 1 bytes (fuzz case 7442 of seed 20261148): the step algorithm's
    sizes overflowed numpy (OverflowError, exit 70); now a FormatError naming the fragment, and nothing
    written."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "data" / "corpus" / "v22_tiledb-py-0.36.1_core-2.30.0" / \
        "sparse_delete" / "array"
    root = tmp_path / "array"
    shutil.copytree(src, root)
    meta_file = sorted(root.glob("__fragments/*/__fragment_metadata.tdb"))[1]
    fm = tdbformat.parse_file(meta_file).value
    for name in ("rtree", "tile_offsets", "tile_var_offsets", "tile_var_sizes", "tile_validity_offsets",
                 "tile_mins", "tile_maxes", "tile_sums", "tile_null_counts", "fragment_min_max_sum_null_count",
                 "processed_conditions"):
        getattr(fm, name, None)
    sizes = np.array(fm.footer.file_sizes, np.uint64)
    sizes[0] = np.uint64(2**64 - 1)
    fm.footer.file_sizes = sizes
    meta_file.write_bytes(fm.build())
    before = sorted(p.name for p in root.rglob("*"))
    with pytest.raises(FormatError, match="add up to"):
        consolidate(root, config={"sm.consolidation.step_min_frags": "2", "sm.consolidation.step_max_frags": "3"})
    assert sorted(p.name for p in root.rglob("*")) == before


def _fragment_layout(path):
    """Each fragment's timestamps, non-empty domain and cell count, sorted (fragments of one consolidation share
    their timestamps: their order is their random names')."""
    return sorted(repr((tuple(f.timestamp_range), f.non_empty_domain, f.cell_num))
                  for f in tdbformat.open_array(str(path)).fragments)


def _rows(path, t):
    """The cells at ``t`` as sorted rows: a dups array's cells come in its fragments' order."""
    out = _read(path, t)
    return sorted(map(repr, zip(*[v[0] if isinstance(v, tuple) else v for v in out.values()])))


@pytest.mark.parametrize("size", [300, 700, 2000])
@pytest.mark.parametrize("case", ["sparse_deletes", "sparse_dups_deletes", "sparse_strings_var"])
def test_max_fragment_size_cuts_the_merged_fragment_as_tiledb(tmp_path, case, size):
    """sm.consolidation.max_fragment_size: a new fragment each time the next tile would pass the size, all
    committed in one .con; a size under one tile is refused (TileDB: "Fragment size is too small to write a
    single tile") and the array is left as it was."""
    build, kw = CASES[case]
    ours, theirs, times = _pair(tmp_path, build, **kw)
    config = {"sm.consolidation.mode": "fragments", "sm.consolidation.max_fragment_size": str(size)}
    try:
        tiledb.consolidate(str(theirs), config=tiledb.Config(config))
        refused = False
    except tiledb.TileDBError as e:
        assert "too small to write a single tile" in str(e)
        refused = True
    if refused:
        before = _tree_hash(ours)
        with pytest.raises(ValueError, match="max_fragment_size = .* is too small to write a single tile"):
            consolidate(str(ours), config=config)
        assert _tree_hash(ours) == before
    else:
        done = consolidate(str(ours), config=config)
        assert len(done["steps"]) == 1 and len(done["steps"][0]["written"]) == len(tiledb.array_fragments(str(theirs)))
    assert _fragment_layout(ours) == _fragment_layout(theirs)
    kinds = [sorted(n.rsplit(".", 1)[-1] for n in os.listdir(p / "__commits")) for p in (ours, theirs)]
    assert kinds[0] == kinds[1]
    for t in sorted(set(times)) + [None]:
        assert _rows(ours, t) == _rows(theirs, t), t
    vacuum(str(ours))
    tiledb.vacuum(str(theirs))
    assert _fragment_layout(ours) == _fragment_layout(theirs)
    assert _rows(ours, None) == _rows(theirs, None)


def test_max_fragment_size_is_refused_before_format_version_16(tmp_path):
    from tdbformat.write.create import create
    from tdbformat.write.writer import write
    from test_writer import py_schema

    schema = py_schema(tmp_path, tiledb.ArraySchema(domain=tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10,
                                                                                      dtype=np.int64)),
                                                    attrs=[tiledb.Attr("a", dtype=np.int32)], sparse=True))
    path = str(tmp_path / "a")
    create(path, schema, 15)
    for t in (1, 2):
        write(path, {"a": np.arange(3, dtype=np.int32)}, coords=[np.arange(3) + t], timestamp=t)
    before = _tree_hash(path)
    with pytest.raises(ValueError, match="max_fragment_size: format version 15 has none"):
        consolidate(path, config={"sm.consolidation.max_fragment_size": "100"})
    assert _tree_hash(path) == before


def _dense_grid(path, dims, boxes, order="row-major", attr="int", by="tiledb", lengths=None):
    """A dense array of ``dims`` ((lo, hi, extent) each, int64), one fragment per box of ``boxes`` ((lo, hi)
    inclusive, per dimension) at timestamps 1, 2..., written by TileDB-Py or by tdbformat; ``attr``: an int64
    ``a``, a var string ``s`` whose lengths grow with the last dimension's tile (tiles of several sizes) or are
    ``lengths`` (an array over the domain, from 0), or a nullable int32 ``n``."""
    from tdbformat.write.writer import write

    domain = tiledb.Domain(*[tiledb.Dim(f"d{i}", domain=(lo, hi), tile=e, dtype=np.int64)
                             for i, (lo, hi, e) in enumerate(dims)])
    a = {"int": tiledb.Attr("a", dtype=np.int64), "var": tiledb.Attr("s", dtype=str, var=True),
         "nullable": tiledb.Attr("n", dtype=np.int32, nullable=True)}[attr]
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=domain, sparse=False, tile_order=order, attrs=[a]))
    for t, box in enumerate(boxes, 1):
        shape = tuple(hi - lo + 1 for lo, hi in box)
        n = np.arange(int(np.prod(shape))).reshape(shape)
        text = ["x" * (k % shape[-1] // 10 * 6 + k % 3) + str(t) for k in n.ravel()] if lengths is None else \
            ["x" * k for k in np.asarray(lengths)[tuple(slice(lo, hi + 1) for lo, hi in box)].ravel()]
        values = {"int": n + 1000 * t, "var": np.array(text, object),
                  "nullable": np.ma.masked_array((n + t).astype(np.int32), mask=n % 3 == 0)}[attr].reshape(shape)
        if by == "tdbformat":
            data = np.ma.getdata(values)
            write(str(path), {a.name: data}, subarray=list(box), timestamp=t,
                  **({"validity": {a.name: ~np.ma.getmaskarray(values)}} if attr == "nullable" else {}))
        else:
            with tiledb.open(str(path), "w", timestamp=t) as A:
                A[tuple(slice(lo, hi + 1) for lo, hi in box)] = values
    return list(range(1, len(boxes) + 1))


_GRID = [(0, 39, 10)] * 2
_HALVES = [((0, 19), (0, 39)), ((20, 39), (0, 39))]
DENSE_CUTS = {  # name: (_dense_grid's arguments, max_fragment_size values; "least": merged in the least budget)
    "row_major": (dict(dims=_GRID, boxes=_HALVES), [5000, 3000, "3000 least"]),
    "row_major_by_tdbformat": (dict(dims=_GRID, boxes=_HALVES, by="tdbformat"), [3000]),
    "col_major": (dict(dims=_GRID, boxes=_HALVES, order="col-major"), [3000]),
    "var": (dict(dims=_GRID, boxes=_HALVES, attr="var"), [2500, 4500, "2500 least"]),
    "var_by_tdbformat": (dict(dims=_GRID, boxes=_HALVES, attr="var", by="tdbformat"), [2500]),
    "nullable": (dict(dims=_GRID, boxes=_HALVES, attr="nullable"), [1500]),
    # a domain not a multiple of the extent, and a union from the second tile of each dimension
    "ragged_offset_union": (dict(dims=[(0, 36, 10), (0, 26, 10)], boxes=[((12, 30), (15, 26)), ((25, 36), (13, 20))]),
                            [2000]),
    # tiles of 3, 3, 1, 1 / 1, 1, 1, 1 / 1, 1, 1, 1 thousand bytes: the fragment from tile 2 can never be a
    # rectangle once tile 4 joins it, and ends at tile 3 then, not when the size runs out
    "never_a_rectangle": (dict(dims=[(0, 2, 1), (0, 3, 1)], boxes=[((0, 0), (0, 3)), ((1, 2), (0, 3))], attr="var",
                               lengths=1000 * np.array([[3, 3, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]])), [6500]),
    "one_dimension": (dict(dims=[(0, 99, 10)], boxes=[((5, 50),), ((40, 97),)]), [250, 450]),
    "three_dimensions": (dict(dims=[(0, 5, 2)] * 3, boxes=[((0, 2), (0, 5), (0, 5)), ((3, 5), (0, 5), (0, 5))]),
                         [200, 600, "600 least"]),
    "three_dimensions_col_major": (dict(dims=[(0, 5, 2)] * 3, order="col-major",
                                        boxes=[((0, 5), (0, 5), (0, 2)), ((0, 5), (0, 5), (3, 5))]), [300]),
}


#: TileDB's consolidation buffers (by default sized from a 10 GiB budget, a second to allocate): the writer then
#: takes the cells several submits at a time, which cuts the same fragments
_SMALL_BUFFERS = {"sm.consolidation.buffer_size": "100000"}


def _pieces(path):
    """TileDB-Py's fragment info: each fragment's timestamps, non-empty domain and cell count, sorted."""
    return sorted(map(repr, zip(*[getattr(tiledb.array_fragments(str(path)), k)
                                  for k in ("timestamp_range", "nonempty_domain", "cell_num")])))


def _same_pieces(ours, theirs):
    """The same fragments (:func:`_pieces`), each the same bytes as TileDB's of its non-empty domain."""
    assert _pieces(ours) == _pieces(theirs)
    mine = {f.nonempty_domain: f.uri.rsplit("/", 1)[-1] for f in tiledb.array_fragments(str(ours))}
    for f in tiledb.array_fragments(str(theirs)):
        for name in os.listdir(f.uri.removeprefix("file://")):
            assert (ours / "__fragments" / mine[f.nonempty_domain] / name).read_bytes() == \
                (theirs / "__fragments" / f.uri.rsplit("/", 1)[-1] / name).read_bytes(), name


def _boxes(dims, rng, n=4):
    out = [tuple(slice(lo, hi + 1) for lo, hi, _ in dims)]
    for _ in range(n):
        ends = [sorted(rng.integers(lo, hi + 1, 2)) for lo, hi, _ in dims]
        out.append(tuple(slice(int(a), int(b) + 1) for a, b in ends))
    return out


def _dense_cells(reader, index):
    return {k: (np.ma.getdata(v).tolist(), np.ma.getmaskarray(v).tolist()) if isinstance(v, np.ma.MaskedArray)
            else np.asarray(v).tolist() for k, v in reader[index].items()}


@pytest.mark.parametrize("case, size", [(c, s) for c, (_, sizes) in DENSE_CUTS.items() for s in sizes])
def test_max_fragment_size_cuts_a_dense_merge_into_rectangles_as_tiledb(tmp_path, case, size):
    """A dense merge cut at sm.consolidation.max_fragment_size as TileDB 2.30 cuts it: the same fragments (each
    a rectangle of tiles, its non-empty domain cropped to the union), committed the same way, the files of each
    byte for byte TileDB's (the cells of their tiles outside the union too: fill values); the same cells
    through TileDB-Py and tdbformat, before and after a vacuum by TileDB-Py."""
    kw, _ = DENSE_CUTS[case]
    ours, theirs, _ = _pair(tmp_path, _dense_grid, **kw)
    size, least = int(str(size).split()[0]), str(size).endswith("least")
    config = {"sm.consolidation.max_fragment_size": str(size), **_SMALL_BUFFERS}
    tiledb.consolidate(str(theirs), config=tiledb.Config(config))
    done = consolidate(str(ours), config=config, memory_budget=least_budget(ours) if least else None)
    assert len(tiledb.array_fragments(str(theirs))) > 1  # (the case cuts)
    assert len(done["steps"][0]["written"]) == len(tiledb.array_fragments(str(theirs)))
    _same_pieces(ours, theirs)
    kinds = [sorted(n.rsplit(".", 1)[-1] for n in os.listdir(p / "__commits")) for p in (ours, theirs)]
    assert kinds[0] == kinds[1]
    boxes = _boxes(kw["dims"], np.random.default_rng(size))
    with tiledb.open(str(theirs)) as A:
        want = [_dense_cells(A.query(), b) for b in boxes]
    with tiledb.open(str(ours)) as A:
        assert [_dense_cells(A.query(), b) for b in boxes] == want
    mine = tdbformat.open_array(str(ours))
    assert [_dense_cells(mine, b) for b in boxes] == want
    assert not [f for f in tdbformat.validate(str(ours)) if f.severity == "error"]
    tiledb.vacuum(str(ours))
    tiledb.vacuum(str(theirs))
    assert _pieces(ours) == _pieces(theirs)
    with tiledb.open(str(ours)) as A:
        assert [_dense_cells(A.query(), b) for b in boxes] == want


def _both_refuse(ours, theirs, size, their_error, our_error):
    """TileDB-Py's consolidation at ``size`` fails with ``their_error`` (None: any), ours with ``our_error``,
    leaving the array as it was (TileDB's takes its fragments back too)."""
    config = {"sm.consolidation.max_fragment_size": str(size), **_SMALL_BUFFERS}
    with pytest.raises(tiledb.TileDBError, match=their_error):
        tiledb.consolidate(str(theirs), config=tiledb.Config(config))
    before = _tree_hash(ours)
    with pytest.raises(ValueError, match=our_error):
        consolidate(str(ours), config=config)
    assert _tree_hash(ours) == before
    assert _pieces(ours) == _pieces(theirs)


@pytest.mark.parametrize("by", ["tiledb", "tdbformat"])
def test_a_max_fragment_size_under_one_dense_tile_is_refused_as_tiledb_refuses_it(tmp_path, by):
    """A tile of 820 stored bytes, a max of 800: TileDB's writer fails ("Fragment size is too small to write a
    single tile"); tdbformat refuses, and the array is left as it was."""
    ours, theirs, _ = _pair(tmp_path, _dense_grid, dims=_GRID, boxes=_HALVES, by=by)
    _both_refuse(ours, theirs, 800, "too small to write a single tile",
                 "max_fragment_size = 800 is too small to write a single tile")


def test_a_dense_cut_tiledbs_writer_cannot_make_is_refused(tmp_path):
    """3-D tiles of stored sizes 1, 1, 1, 1, 1, 3, 5, 1 (thousands of bytes), a max of 9400: the fragment cut
    after tile 3 is still no rectangle when tile 7 passes the size, and TileDB 2.30's writer fails
    ("vector::_M_fill_insert", DISCREPANCIES.md); tdbformat refuses, and the array is left as it was."""
    lengths = 1000 * np.array([1, 1, 1, 1, 1, 3, 5, 1]).reshape(2, 2, 2)
    ours, theirs, _ = _pair(tmp_path, _dense_grid, dims=[(0, 1, 1)] * 3, boxes=[((0, 0), (0, 1), (0, 1)),
                                                                              ((1, 1), (0, 1), (0, 1))],
                            attr="var", lengths=lengths)
    _both_refuse(ours, theirs, 9400, "GlobalOrderWriter::dowork.*_M_fill_insert",
                 "cannot cut this dense array: the fragment from tile 4 is no rectangle")


@st.composite
def _dense_cut_cases(draw):
    """A dense array of 1-3 dimensions (1-4 tiles of 1-3 cells each, the last perhaps cut short), two writes of
    random boxes, a var attribute of random lengths (tiles of random sizes), a tile order and a max size."""
    nd = draw(st.integers(1, 3))
    dims = []
    for _ in range(nd):
        extent, tiles = draw(st.integers(1, 3)), draw(st.integers(1, 4))
        short = draw(st.integers(0, extent - 1)) if tiles > 1 else 0  # (TileDB: an extent within the domain)
        dims.append((0, extent * tiles - 1 - short, extent))
    boxes = []
    for _ in range(2):
        ends = [sorted(draw(st.lists(st.integers(0, hi), min_size=2, max_size=2))) for _, hi, _ in dims]
        boxes.append(tuple(map(tuple, ends)))
    shape = [hi + 1 for _, hi, _ in dims]
    cells = int(np.prod(shape))
    lengths = np.array(draw(st.lists(st.integers(0, 60), min_size=cells, max_size=cells))).reshape(shape)
    order = draw(st.sampled_from(["row-major", "col-major"]))
    size = draw(st.one_of(st.integers(100, 1500), st.just(2**40)))  # (2**40: one fragment)
    return dict(dims=dims, boxes=boxes, order=order, attr="var", lengths=lengths), size


@settings(max_examples=int(os.environ.get("TDBFORMAT_DENSE_CUTS", "12")), deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(_dense_cut_cases())
def test_dense_cuts_match_tiledb_on_random_arrays(case):
    """Random dense arrays, tiles of random sizes, random max sizes: TileDB-Py's consolidation and ours refuse
    alike (ours leaving the array as it was) or cut the same fragments, of the same bytes (cells outside the
    union and unwritten ones too), which read the same."""
    kw, size = case
    config = {"sm.consolidation.max_fragment_size": str(size), **_SMALL_BUFFERS}
    with tempfile.TemporaryDirectory() as tmp:
        ours, theirs, _ = _pair(Path(tmp), _dense_grid, **kw)
        probe = Path(tmp) / "probe"
        shutil.copytree(theirs, probe)
        try:
            tiledb.consolidate(str(probe), config=tiledb.Config(config))
        except tiledb.TileDBError:
            return _both_refuse(ours, theirs, size, None, "max_fragment_size = ")
        tiledb.consolidate(str(theirs), config=tiledb.Config(config))
        consolidate(str(ours), config=config)
        _same_pieces(ours, theirs)
        whole = tuple(slice(lo, hi + 1) for lo, hi, _ in kw["dims"])
        with tiledb.open(str(theirs)) as A, tiledb.open(str(ours)) as B:
            assert _dense_cells(B.query(), whole) == _dense_cells(A.query(), whole)
