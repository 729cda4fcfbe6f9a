"""An object store's tiles fetched ahead (tdbformat/array/fetch_ahead.py): a sparse read of many fragments
fetches the tiles of all of them in one concurrent round, not one or more rounds per fragment and field,
with no more GETs, and reads what TileDB-Py reads; a box fetches only the tiles its MBRs meet."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
import tiledb

import tdbformat
from tdbformat.array import fetch_ahead

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")
from s3server import serving  # noqa: E402 (after the skips: it needs moto)
from tdbformat.storage import FsspecStorage  # noqa: E402

BUCKET = "ahead"
FRAGMENTS = 12


@pytest.fixture(scope="module")
def server():
    yield from serving(BUCKET)


@pytest.fixture(scope="module")
def fragments(server, tmp_path_factory):
    """TileDB-Py writes a sparse array of FRAGMENTS fragments (300 cells each in tiles of 100: an int64 and a
    nullable var string), uploaded: ``(url, local path)``."""
    moto, fs = server
    path = tmp_path_factory.mktemp("ahead") / "sparse"
    dims = [tiledb.Dim(n, domain=(0, 999), tile=100, dtype=np.int64) for n in "xy"]
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=100, attrs=[
        tiledb.Attr("a", dtype=np.int64, filters=[tiledb.ZstdFilter()]),
        tiledb.Attr("s", dtype=str, var=True, nullable=True)]))
    rng = np.random.default_rng(4)
    for f in range(FRAGMENTS):
        cells = rng.choice(1_000_000, 300, replace=False)
        with tiledb.open(str(path), "w", timestamp=f + 1) as A:
            A[cells // 1000, cells % 1000] = {"a": rng.integers(-1 << 40, 1 << 40, 300),
                                              "s": np.array([f"s{c}" * (c % 3) for c in cells], object)}
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    fs.put(str(path), url.removeprefix("s3://"), recursive=True)
    return url, str(path)


class Rounds:
    """Each round of data-file requests the storage sends (a ``_read``, or a concurrent ``_read_blocks``
    batch), with the ranges in it."""

    def __init__(self, monkeypatch):
        self.rounds = []
        read, blocks = FsspecStorage._read, FsspecStorage._read_blocks

        def _read(storage, path, start, length):
            if _data_file(str(path)):
                self.rounds.append([(str(path), start, start + length)])
            return read(storage, path, start, length)

        def _read_blocks(storage, todo, what):
            if data := [b for b in todo if _data_file(str(b[0]))]:
                self.rounds.append(data)
            return blocks(storage, todo, what)
        monkeypatch.setattr(FsspecStorage, "_read", _read)
        monkeypatch.setattr(FsspecStorage, "_read_blocks", _read_blocks)

    def gets(self) -> int:
        return sum(map(len, self.rounds))


def _data_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "/__fragments/" in path and name.endswith(".tdb") and name != "__fragment_metadata.tdb"


def _read(url, options, monkeypatch, ahead: bool, order="G", **ranges):
    monkeypatch.setattr(fetch_ahead, "AHEAD_BYTES", fetch_ahead.AHEAD_BYTES if ahead else 0)
    arr = tdbformat.open_array(url, storage_options=options)
    rounds = Rounds(monkeypatch)
    got = arr.read(ranges=ranges, order=order)
    monkeypatch.undo()
    return got, rounds


def _same(got, want):
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        assert np.array_equal(np.ma.getmaskarray(got[k]), np.ma.getmaskarray(v)), k
        assert np.ma.getdata(got[k]).tolist() == np.ma.getdata(v).tolist(), k


@pytest.mark.parametrize("box", [{}, {"x": (200, 420)}], ids=["all", "box"])
def test_every_fragment_is_fetched_in_one_round_with_no_more_gets(server, fragments, monkeypatch, box):
    url, local = fragments
    with tiledb.open(local) as A:
        want = A.query(order="G")[:] if not box else A.query(order="G").multi_index[box["x"][0]:box["x"][1]]
    options = server[0].options
    before, one_at_a_time = _read(url, options, monkeypatch, ahead=False, **box)
    got, ahead = _read(url, options, monkeypatch, ahead=True, **box)
    _same(got, want)
    _same(before, want)
    # before: a round per fragment and file at least (x, y, a, s and its offsets and validity: 6 files)
    assert len(one_at_a_time.rounds) >= 6 * FRAGMENTS
    # a box: the coordinates first (with the attributes of tiles wholly inside), then the attribute tiles
    # that hold a cell of it, as TileDB reads them
    assert len(ahead.rounds) == (2 if box else 1) and ahead.gets() <= one_at_a_time.gets()
    fetched = {r[0] for rnd in ahead.rounds for r in rnd}
    assert fetched == {r[0] for rnd in one_at_a_time.rounds for r in rnd}  # the same files, no others
    if box:
        assert {r[0].rsplit("/", 1)[-1] for r in ahead.rounds[0]} == {"d0.tdb", "d1.tdb"}


def test_fragments_past_the_bound_are_read_as_before(server, fragments, monkeypatch):
    url, local = fragments
    arr = tdbformat.open_array(url, storage_options=server[0].options)
    per_fragment = sum(e - s for _, s, e in fetch_ahead._blocks(arr, arr.fragments[0], arr.dims + arr.attrs,
                                                                list(range(arr.fragments[0].tile_num()))))
    monkeypatch.setattr(fetch_ahead, "AHEAD_BYTES", int(per_fragment * 2.5))  # about two fragments ahead
    rounds = Rounds(monkeypatch)
    got = arr.read(order="G")
    with tiledb.open(local) as A:
        _same(got, A.query(order="G")[:])
    assert 1 + 6 * (FRAGMENTS - 3) <= len(rounds.rounds) < 6 * FRAGMENTS


def test_a_dense_read_of_many_fragments_is_one_round(server, tmp_path, monkeypatch):
    """Eight dense fragments (of 4 x 4 tiles, one of them on top of the others, a nullable attribute and a
    var one): one round, the same GETs at most, TileDB-Py's values."""
    moto, fs = server
    path = tmp_path / "dense"
    dims = [tiledb.Dim(n, domain=(0, 99), tile=4, dtype=np.int64) for n in "xy"]
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=[
        tiledb.Attr("a", dtype=np.int32, nullable=True), tiledb.Attr("s", dtype=str, var=True)]))
    rng = np.random.default_rng(5)
    for f in range(8):
        x, y = rng.integers(0, 60, 2)
        with tiledb.open(str(path), "w", timestamp=f + 1) as A:
            A[x:x + 40, y:y + 40] = {"a": np.ma.masked_array(rng.integers(0, 99, (40, 40), dtype=np.int32),
                                                             rng.random((40, 40)) < 0.2),
                                     "s": np.array([f"v{i}" for i in range(1600)], object).reshape(40, 40)}
    url = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    fs.put(str(path), url.removeprefix("s3://"), recursive=True)
    with tiledb.open(str(path)) as A:
        want = A[10:90, 5:95]
    box = {"x": (10, 89), "y": (5, 94)}
    before, one_at_a_time = _read(url, moto.options, monkeypatch, ahead=False, order=None, **box)
    got, ahead = _read(url, moto.options, monkeypatch, ahead=True, order=None, **box)
    for name in want:
        _same({name: got[name].ravel()}, {name: np.ma.ravel(want[name])})
        _same({name: before[name].ravel()}, {name: np.ma.ravel(want[name])})
    assert len(one_at_a_time.rounds) >= 8 and len(ahead.rounds) == 1 and ahead.gets() <= one_at_a_time.gets()
