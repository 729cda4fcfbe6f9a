"""Sparse reads of a box (tdbformat/array/sparse.py): the coordinate tiles whose MBRs meet the box are
decoded first, and an attribute's tiles are read only where they hold a cell of the box (as TileDB reads
them), the result what TileDB-Py reads."""

from __future__ import annotations

import numpy as np
import pytest
import tiledb

import tiledb_arrays
from common import break_var_offsets, equal_cells
from tdbformat import open_array
from tdbformat.array.fragment import Fragment

CAPACITY = 4
BOX = {"x": (10, 30), "y": (40, 60)}


@pytest.fixture(scope="module")
def scattered(tmp_path_factory):
    """TileDB-Py writes three fragments of 150 random cells (x, y in [0, 99], one space tile, row-major, 4
    cells a data tile: MBRs that span many rows meet the box without holding a cell of it), an int64 and a
    nullable var string."""
    uri = tiledb_arrays.create(tmp_path_factory.mktemp("sparse") / "a", [("x", (0, 99), 100), ("y", (0, 99), 100)],
                               [("a", np.int64), ("s", str, {"nullable": True})], sparse=True, capacity=CAPACITY)
    rng = np.random.default_rng(46)
    for t in (1, 2, 3):
        cells = rng.choice(100 * 100, 150, replace=False)
        strings = np.array([f"v{c}" * (c % 3) for c in cells], object)
        tiledb_arrays.write(uri, {"a": rng.integers(-1 << 40, 1 << 40, 150),
                                  "s": np.ma.masked_array(strings, cells % 5 == 0)}, coords=[cells // 100, cells % 100],
                            timestamp=t)
    return uri


def _tiles_holding_the_box(uri, t) -> tuple[set, set]:
    """(tiles whose MBR meets the box, tiles holding a cell of it) of the fragment written at ``t``, from
    its cells in global order as TileDB-Py reads them (CAPACITY cells a tile)."""
    with tiledb.open(uri, timestamp=(t, t)) as A:
        got = A.query(order="G", attrs=[])[:]
    met, holding = set(), set()
    for k in range(0, len(got["x"]), CAPACITY):
        x, y = got["x"][k:k + CAPACITY], got["y"][k:k + CAPACITY]
        box = [(c, *BOX[n]) for n, c in (("x", x), ("y", y))]
        if all(c.min() <= hi and c.max() >= lo for c, lo, hi in box):
            met.add(k // CAPACITY)
        if np.any(np.logical_and.reduce([(c >= lo) & (c <= hi) for c, lo, hi in box])):
            holding.add(k // CAPACITY)
    return met, holding


def _decoded(monkeypatch, names) -> dict:
    """``{(fragment timestamp, field): tiles}`` whose span a read asks for, for fields ``names``."""
    seen, span = {}, Fragment.tile_span

    def tile_span(frag, kind, idx, k):
        name = frag.metadata.index_fields[idx].name
        if name in names:
            seen.setdefault((frag.timestamp_range[0], name), set()).add(k)
        return span(frag, kind, idx, k)
    monkeypatch.setattr(Fragment, "tile_span", tile_span)
    return seen


@pytest.mark.parametrize("order", ["G", "U", "C"])
def test_attribute_tiles_with_no_cell_in_the_box_are_not_read(scattered, monkeypatch, order):
    expected = {t: _tiles_holding_the_box(scattered, t) for t in (1, 2, 3)}
    assert all(met - holding for met, holding in expected.values()), "every MBR that meets the box holds a cell"
    arr = open_array(scattered)
    seen = _decoded(monkeypatch, {"a", "s", "x"})
    got = arr.query(order=order).multi_index[BOX["x"][0]:BOX["x"][1], BOX["y"][0]:BOX["y"][1]]
    monkeypatch.undo()
    for t, (met, holding) in expected.items():
        assert seen[t, "x"] == met, t  # every coordinate tile the MBRs meet
        assert seen[t, "a"] == seen[t, "s"] == holding, t  # the attributes of those that hold a cell
    with tiledb.open(scattered) as A:
        want = A.query(order=order).multi_index[BOX["x"][0]:BOX["x"][1], BOX["y"][0]:BOX["y"][1]]
    for name in ("x", "y", "a", "s"):
        equal_cells(got[name], want[name], name)


def test_a_box_that_holds_whole_tiles_reads_them_with_their_coordinates(scattered, monkeypatch):
    """A box that holds the fragments' whole domain: no tile is partly in it, nothing is dropped."""
    arr = open_array(scattered)
    seen = _decoded(monkeypatch, {"a"})
    got = arr.query(order="G").multi_index[0:99]
    monkeypatch.undo()
    assert seen == {(t, "a"): set(range(frag.tile_num())) for t, frag in zip((1, 2, 3), arr.fragments)}
    with tiledb.open(scattered) as A:
        equal_cells(got["a"], A.query(order="G")[:]["a"], "a")


@pytest.mark.parametrize("order", ["U", "G", "C"])
def test_var_cells_of_many_sparse_tiles_are_made_at_once_and_read_as_tiledb_py(tmp_path, order, monkeypatch):
    """A sparse fragment's var tiles are decoded as one run of chunks (offsets, bytes and validity of every tile
    at once, not a tile at a time) and their values made in one call (not one a tile): UTF-8 strings repeated
    and not, ASCII, var numbers and nullable strings read as TileDB-Py reads them, whole and in a box."""
    from tdbformat.array import tiles as tiles_mod
    uri = str(tmp_path / "a")
    dims = [tiledb.Dim(n, domain=(0, 999), tile=100, dtype=np.int64) for n in "xy"]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=300, attrs=[
        tiledb.Attr("s", dtype=str, var=True, filters=[tiledb.ZstdFilter()]),
        tiledb.Attr("u", dtype=str, var=True),
        tiledb.Attr("b", dtype="ascii", var=True),
        tiledb.Attr("v", dtype=np.int32, var=True),
        tiledb.Attr("n", dtype=str, var=True, nullable=True)]))
    rng = np.random.default_rng(9)
    cells = rng.choice(1000 * 1000, 5000, replace=False)
    text = np.array([f"w{c % 13}é" * int(c % 3) for c in cells], object)
    numbers = np.empty(len(cells), object)
    numbers[:] = [np.arange(c % 4, dtype=np.int32) - 2 for c in cells]
    with tiledb.open(uri, "w") as A:
        A[cells // 1000, cells % 1000] = {"s": text, "u": np.array([f"cell {c}" for c in cells], object),
                                           "b": np.array([b"x" * int(c % 5) for c in cells], object), "v": numbers,
                                           "n": np.ma.masked_array(text, cells % 4 == 0)}
    calls = {"one": 0, "tile by tile": 0}
    split, raw = tiles_mod.split_var, tiles_mod.Tiles.raw
    monkeypatch.setattr(tiles_mod, "split_var", lambda *a, **k: calls.__setitem__("one", calls["one"] + 1) or
                        split(*a, **k))
    monkeypatch.setattr(tiles_mod.Tiles, "raw", lambda self, frag, idx, kind, *a, **k: calls.__setitem__(
        "tile by tile", calls["tile by tile"] + (kind == "_var")) or raw(self, frag, idx, kind, *a, **k))
    for box in (np.s_[:, :], np.s_[100:600, 50:900]):
        with tiledb.open(uri) as A:
            want = A.query(order=order)[box]
        calls["one"] = calls["tile by tile"] = 0
        got = open_array(uri).query(order=order)[box]
        assert calls["one"] == 5  # one call a field, not one a tile
        assert calls["tile by tile"] == 0
        for name in ("x", "y", "s", "u", "b", "n"):
            assert list(got[name]) == list(want[name]), name
        assert [c.tolist() for c in got["v"]] == [c.tolist() for c in want["v"]]


def test_a_var_cell_of_part_of_a_number_in_one_of_many_sparse_tiles_is_named(tmp_path):
    """Where the values of several tiles made at once fail (a var int32 cell of 6 bytes), the tiles are made
    one by one again, which names the bad one."""
    from tdbformat import FormatError
    uri = str(tmp_path / "a")
    dims = [tiledb.Dim("x", domain=(0, 999), tile=1000, dtype=np.int64)]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=10,
                                                offsets_filters=tiledb.FilterList([]), attrs=[
        tiledb.Attr("v", dtype=np.int32, var=True)]))
    numbers = np.empty(100, object)
    numbers[:] = [np.array([k, -k], np.int32) for k in range(100)]
    with tiledb.open(uri, "w") as A:
        A[np.arange(100)] = {"v": numbers}
    frag = open_array(uri).fragments[0]
    _, start, end = frag.tile_span("", frag.index("v"), 6)
    data = next(__import__("pathlib").Path(uri).glob("__fragments/*/a0.tdb"))
    raw = bytearray(data.read_bytes())
    offsets = np.frombuffer(raw[end - 80:end], "<u8").copy()
    assert offsets.tolist() == [8 * i for i in range(10)]
    offsets[3] -= 2  # cells 2 and 3 of tile 6: 6 and 10 bytes
    raw[end - 80:end] = offsets.tobytes()
    data.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="tile 6"):
        open_array(uri)[:]


@pytest.mark.parametrize("bad", ["past its bytes", "not from 0", "falling"])
def test_a_sparse_var_tile_whose_offsets_leave_its_own_bytes_is_named(tmp_path, bad):
    """The var tiles of a sparse fragment decode as one run, their bytes back to back: a tile whose offsets reach
    past its own bytes, do not start at 0 or fall would read its neighbour's cells; the read names the tile
    instead (the offsets stored without filters, so that they can be edited in place)."""
    from tdbformat import FormatError
    uri = str(tmp_path / "a")
    dims = [tiledb.Dim("x", domain=(0, 999), tile=1000, dtype=np.int64)]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=10,
                                                offsets_filters=tiledb.FilterList([]), attrs=[
        tiledb.Attr("s", dtype=str, var=True)]))
    with tiledb.open(uri, "w") as A:
        A[np.arange(100)] = {"s": np.array([f"cell{k}" for k in range(100)], object)}
    break_var_offsets(uri, 4, bad)  # past its bytes: inside the run's, past the tile's 60
    with pytest.raises(FormatError, match="tile 4"):
        open_array(uri)[:]
