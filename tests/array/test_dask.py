"""``to_dask``: every corpus array computes to what ``read()`` gives, chunks follow the space tiles, and a
dense array computes on a two-worker ``dask.distributed`` cluster within a few tiles of memory per worker."""

from __future__ import annotations

import numpy as np
import pytest

import corpus
import tdbformat
from tdbformat.array.dask import _opened, _spec, to_dask
from tdbformat.errors import FormatError, UnsupportedError

dask = pytest.importorskip("dask")
pytest.importorskip("dask.dataframe")

ARRAY_CASES = [c for c in corpus.cases() if corpus.truth(c).get("kind", "array") == "array"]


def _open(case):
    try:
        arr = tdbformat.open_array(corpus.root(case), key=corpus.key(case))
        return arr, arr.read()
    except UnsupportedError as e:
        pytest.skip(f"cannot be read here: {e}")
    except FormatError as e:
        pytest.skip(f"read() itself refuses it: {e}")


def _same(a, b, name):
    assert a.dtype == b.dtype and a.shape == b.shape, name
    assert np.array_equal(np.ma.getmaskarray(a), np.ma.getmaskarray(b)), name
    a, b = np.ma.getdata(a), np.ma.getdata(b)
    if a.dtype.kind == "f":
        assert np.array_equal(a, b, equal_nan=True), name
    else:
        assert all(x == y for x, y in zip(a.ravel(), b.ravel())), name


def _rows(columns: dict) -> list:
    """The cells as sortable rows (a dataframe's partitions need not keep read()'s global order)."""
    names = sorted(columns)
    cols = [[repr(v) for v in np.asarray(columns[n], object)] for n in names]
    return sorted(zip(*cols))


@pytest.mark.parametrize("case", ARRAY_CASES, ids=corpus.case_id)
def test_compute_equals_read(case):
    arr, expected = _open(case)
    got = to_dask(arr)
    with dask.config.set(scheduler="threads"):
        if isinstance(got, dict):
            assert set(got) == set(expected)
            for name, x in got.items():
                _same(x.compute(), expected[name], name)
        else:
            df = got.compute()
            assert set(df.columns) == set(expected)
            masked = {k: v.astype(object).filled(None) if isinstance(v, np.ma.MaskedArray) else v
                      for k, v in expected.items()}
            assert _rows({k: df[k].to_numpy() for k in df.columns}) == _rows(masked)


def _tiledb_dense(path, shape, tile, dtype=np.int32):
    """A dense array written by TileDB-Py, its values an independent function of the cell."""
    tiledb = pytest.importorskip("tiledb")
    dims = [tiledb.Dim(f"d{i}", (0, n - 1), tile=t, dtype=np.int64) for i, (n, t) in enumerate(zip(shape, tile))]
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=tiledb.Domain(*dims),
                                                      attrs=[tiledb.Attr("v", dtype)]))
    values = (np.arange(np.prod(shape), dtype=np.int64) % 9973).astype(dtype).reshape(shape)
    with tiledb.open(str(path), "w") as a:
        a[:] = values
    return values


def test_chunks_are_space_tiles_and_tasks_read_their_own_box(tmp_path, monkeypatch):
    values = _tiledb_dense(tmp_path / "a", (25, 12), (10, 5))
    arr = tdbformat.open_array(tmp_path / "a")
    x = to_dask(arr)["v"]
    assert x.chunks == ((10, 10, 5), (5, 5, 2))
    boxes = []
    real = type(arr).read
    monkeypatch.setattr(type(arr), "read", lambda self, **kw: boxes.append(kw["ranges"]) or real(self, **kw))
    assert np.array_equal(x[10:20, 5:10].compute(scheduler="sync"), values[10:20, 5:10])
    assert boxes == [{"d0": (10, 19), "d1": (5, 9)}]  # one task, its one tile


def test_sparse_partitions_are_disjoint_slices(tmp_path):
    tiledb = pytest.importorskip("tiledb")
    dom = tiledb.Domain(tiledb.Dim("x", (0, 9999), tile=100, dtype=np.int64))
    tiledb.Array.create(str(tmp_path / "s"), tiledb.ArraySchema(
        domain=dom, sparse=True, capacity=50, attrs=[tiledb.Attr("v", np.float64)]))
    x = np.random.default_rng(3).choice(10000, 2000, replace=False)
    with tiledb.open(str(tmp_path / "s"), "w") as a:
        a[x] = {"v": x * 0.5}
    df = to_dask(tdbformat.open_array(tmp_path / "s"))
    assert df.npartitions == 2000 // 50 // 4  # 40 tiles, 4 per partition
    got = df.compute(scheduler="threads")
    assert sorted(got["x"]) == sorted(x) and np.array_equal(got["v"].to_numpy(), got["x"].to_numpy() * 0.5)


def _open_on_worker(spec) -> None:
    """The array opened in this worker, nothing sent back (an Array holds open storage: it is not pickled)."""
    _opened(spec)


def _start_sampling(dask_worker):
    """Sample this worker's RSS every 2 ms from now on (ru_maxrss would include what the forking parent held)."""
    import threading
    import time

    import psutil
    proc = psutil.Process()
    state = dask_worker.tdbformat_memory = {"base": proc.memory_info().rss, "peak": 0, "run": True}

    def sample():
        while state["run"]:
            state["peak"] = max(state["peak"], proc.memory_info().rss)
            time.sleep(0.002)
    threading.Thread(target=sample, daemon=True).start()


def _growth(dask_worker) -> int:
    state = dask_worker.tdbformat_memory
    state["run"] = False
    return state["peak"] - state["base"]


def test_a_dense_array_on_a_two_worker_cluster_stays_within_four_tiles(tmp_path):
    """256 MiB of int32 in 16 MiB tiles, summed on a LocalCluster of two one-thread workers: each worker's
    peak RSS stays less than four tiles above its baseline (the array opened, no tile decoded); a task
    that read more than its own tile would break that bound."""
    distributed = pytest.importorskip("distributed")
    shape, tile = (8192, 8192), (2048, 2048)
    values = _tiledb_dense(tmp_path / "big", shape, tile)
    expected = int(values.sum(dtype=np.int64))
    del values
    tile_bytes = tile[0] * tile[1] * 4
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="2GiB") as cluster, distributed.Client(cluster) as client:
        arr = tdbformat.open_array(tmp_path / "big")
        x = to_dask(arr)["v"]
        client.run(_open_on_worker, _spec(arr))
        client.run(_start_sampling)
        assert int(x.sum(dtype=np.int64).compute()) == expected
        grown = client.run(_growth)
    print("worker peak RSS growth (MiB):", {w: round(g / 2**20) for w, g in grown.items()})
    assert all(0 < g < 4 * tile_bytes for g in grown.values()), {w: g / 2**20 for w, g in grown.items()}


def _corrupted(tmp_path):
    """A copy of a corpus array with SHA-256 checksums, one byte of a data tile flipped."""
    import shutil
    src = corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0" / "filter_checksum_sha256" / "array"
    dst = tmp_path / "corrupted"
    shutil.copytree(src, dst)
    data = sorted(p for p in dst.rglob("*.tdb") if "__fragments" in p.parts and p.name != "__fragment_metadata.tdb")
    raw = bytearray(data[0].read_bytes())
    raw[-3] ^= 0xFF
    data[0].write_bytes(bytes(raw))
    return dst


def test_validate_on_a_cluster_finds_what_a_local_run_finds(tmp_path, capsys):
    """``tdbformat validate --scheduler ADDRESS PATH...``: several corpus arrays and a corrupted one, each a
    task on a two-process LocalCluster; the JSON reports come in PATH order and equal the local run's."""
    import json
    distributed = pytest.importorskip("distributed")
    from tdbformat.cli import main
    v22 = corpus.CORPUS / "v22_tiledb-py-0.36.1_core-2.30.0"
    paths = [str(v22 / name / "array") for name in ("dense_2d_multiattr", "sparse_var_string_dim",
                                                    "consolidated_dense", "fragment_meta_consolidated")]
    paths.insert(2, str(_corrupted(tmp_path)))
    assert main(["validate", "--json", *paths]) == 1
    local = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert main(["validate", "--json", "--scheduler", cluster.scheduler_address, *paths]) == 1
    remote = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [d["path"] for d in local] == paths and remote == local
    assert [d["errors"] > 0 for d in local] == [False, False, True, False, False]
    assert any(f["rule"] == "checksums" for f in local[2]["findings"])


def test_validate_scheduler_without_distributed_says_what_to_install(monkeypatch, capsys):
    import builtins
    from tdbformat.cli import main
    real = builtins.__import__
    monkeypatch.setattr(builtins, "__import__", lambda name, *a, **k: (_ for _ in ()).throw(ImportError(name))
                        if name == "distributed" else real(name, *a, **k))
    assert main(["validate", "--scheduler", "tcp://127.0.0.1:1", str(corpus.CORPUS)]) == 1
    assert "needs dask.distributed: pip install 'tdbformat[dask]'" in capsys.readouterr().err
