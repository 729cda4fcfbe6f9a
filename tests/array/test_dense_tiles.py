"""Dense reads of small tiles in batches (tdbformat/array/dense_tiles.py): equal to TileDB-Py's reads on
tile extents that do not divide the domain, fragments that cover part of it, both tile and cell orders,
nullable, multi-value, var and added attributes, boxes that cut tiles; and a bad tile still named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tiledb

from common import break_var_offsets
from tdbformat import open_array
from tdbformat.array import dense_tiles
from tdbformat.array.tiles import Tiles
from tdbformat.errors import FormatError


def _same(got, want):
    for name, values in want.items():
        g = got[name]
        if isinstance(values, np.ma.MaskedArray) or isinstance(g, np.ma.MaskedArray):
            np.testing.assert_array_equal(np.ma.getmaskarray(g), np.ma.getmaskarray(values), err_msg=name)
            keep = ~np.ma.getmaskarray(values)
            g, values = np.ma.getdata(g)[keep], np.ma.getdata(values)[keep]
        assert g.dtype == values.dtype, name
        assert g.shape == values.shape, name
        if values.dtype == object:  # (var numbers: a numpy array a cell)
            pairs = list(zip(g.reshape(-1), values.reshape(-1)))
            assert all(type(x) is type(y) and np.array_equal(x, y) and getattr(x, "dtype", 0) == getattr(y, "dtype", 0)
                       for x, y in pairs), name
        else:
            np.testing.assert_array_equal(g, values, err_msg=name)


def _array(uri, shape, tiles, tile_order="row-major", cell_order="row-major", attrs=None):
    dims = [tiledb.Dim(f"d{j}", domain=(3, 3 + n - 1), tile=t, dtype=np.int64)
            for j, (n, t) in enumerate(zip(shape, tiles))]
    attrs = attrs or [tiledb.Attr("a", dtype=np.int32, filters=[tiledb.ZstdFilter()])]
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs, tile_order=tile_order,
                                                cell_order=cell_order))


def _write(uri, box, values, timestamp):
    with tiledb.open(uri, "w", timestamp=timestamp) as A:
        A[tuple(slice(a, b + 1) for a, b in box)] = values


def _reads(uri, box):
    with tiledb.open(uri) as A:
        want = A[tuple(slice(a, b + 1) for a, b in box)]
    return open_array(uri)[tuple(slice(a, b + 1) for a, b in box)], want


ORDERS = [("row-major", "row-major"), ("col-major", "row-major"), ("row-major", "col-major"),
          ("col-major", "col-major")]


@pytest.mark.parametrize("tile_order,cell_order", ORDERS)
def test_two_fragments_in_parts_of_a_domain_the_extents_do_not_divide(tmp_path, tile_order, cell_order):
    uri = str(tmp_path / "a")
    _array(uri, (53, 34), (7, 5), tile_order, cell_order)  # 53 = 7*7 + 4, 34 = 5*6 + 4: partial edge tiles
    rng = np.random.default_rng(1)
    _write(uri, [(5, 40), (4, 33)], rng.integers(-9, 9, (36, 30), dtype=np.int32), 1)
    _write(uri, [(20, 55), (10, 36)], rng.integers(-9, 9, (36, 27), dtype=np.int32), 2)
    for box in ([(3, 55), (3, 36)], [(4, 50), (6, 35)], [(21, 22), (11, 30)], [(3, 9), (3, 7)]):
        got, want = _reads(uri, box)
        _same(got, want)


@pytest.mark.parametrize("tile_order,cell_order", ORDERS)
def test_three_dimensions(tmp_path, tile_order, cell_order):
    uri = str(tmp_path / "a")
    _array(uri, (11, 9, 10), (3, 4, 5), tile_order, cell_order)
    _write(uri, [(4, 12), (3, 11), (5, 12)], np.arange(9 * 9 * 8, dtype=np.int32).reshape(9, 9, 8), 1)
    for box in ([(3, 13), (3, 11), (3, 12)], [(5, 10), (4, 9), (6, 11)]):
        got, want = _reads(uri, box)
        _same(got, want)


def test_one_dimension(tmp_path):
    uri = str(tmp_path / "a")
    _array(uri, (1000,), (7,))
    _write(uri, [(10, 900)], np.arange(891, dtype=np.int32), 1)
    for box in ([(3, 1002)], [(12, 500)]):
        got, want = _reads(uri, box)
        _same(got, want)


@pytest.mark.parametrize("tile_order,cell_order", ORDERS[::3])
def test_nullable_multi_value_and_var_attributes(tmp_path, tile_order, cell_order):
    uri = str(tmp_path / "a")
    _array(uri, (40, 30), (6, 4), tile_order, cell_order, attrs=[
        tiledb.Attr("n", dtype=np.float64, nullable=True, filters=[tiledb.ZstdFilter()]),
        tiledb.Attr("p", dtype=np.dtype("i2, i2")),
        tiledb.Attr("s", dtype=str, var=True),
        tiledb.Attr("f", dtype=np.uint16, fill=7)])
    rng = np.random.default_rng(2)
    shape = (30, 25)
    n = rng.random(shape)
    with tiledb.open(uri, "w", timestamp=1) as A:
        A[5:35, 4:29] = {"n": np.ma.masked_array(n, rng.random(shape) < 0.3),
                         "p": np.array([(i, -i) for i in range(30 * 25)], "i2, i2").reshape(shape),
                         "s": np.array([f"v{i}" * (i % 3) for i in range(30 * 25)], object).reshape(shape),
                         "f": rng.integers(0, 100, shape, dtype=np.uint16)}
    for box in ([(3, 42), (3, 32)], [(10, 30), (5, 20)]):
        got, want = _reads(uri, box)
        _same(got, want)


def test_an_attribute_added_after_the_fragment_reads_as_fill(tmp_path):
    uri = str(tmp_path / "a")
    _array(uri, (30, 30), (4, 4))
    _write(uri, [(3, 32), (3, 32)], np.arange(900, dtype=np.int32).reshape(30, 30), 1)
    evolution = tiledb.ArraySchemaEvolution()
    evolution.add_attribute(tiledb.Attr("b", dtype=np.int64, fill=-5))
    evolution.array_evolve(uri)
    got, want = _reads(uri, [(3, 32), (5, 20)])
    _same(got, want)


def test_small_tiles_decode_in_batches_not_tile_by_tile(tmp_path, monkeypatch):
    """The Python steps of a read of 2,500 tiles do not grow with the tiles: no tile is decoded on its own,
    and all of them go through the filters in one batch (the tiles of this array fit in one)."""
    uri = str(tmp_path / "a")
    _array(uri, (200, 200), (4, 4))
    _write(uri, [(3, 202), (3, 202)], np.arange(40_000, dtype=np.int32).reshape(200, 200), 1)
    calls = {"cells": 0, "run": 0}
    cells, run = Tiles.cells, dense_tiles.run_tiles
    monkeypatch.setattr(Tiles, "cells",
                        lambda *a, **k: (calls.__setitem__("cells", calls["cells"] + 1), cells(*a, **k))[1])
    monkeypatch.setattr(dense_tiles, "run_tiles",
                        lambda *a, **k: (calls.__setitem__("run", calls["run"] + 1), run(*a, **k))[1])
    got, want = _reads(uri, [(3, 202), (3, 202)])
    _same(got, want)
    assert calls == {"cells": 0, "run": 1}
    monkeypatch.setattr(dense_tiles, "BATCH_CELLS", 4 * 16 * 50)  # four rows of 50 tiles a batch: 13 batches
    calls.update(cells=0, run=0)
    _same(open_array(uri)[5:200, 3:203], {"a": want["a"][2:197]})
    assert calls == {"cells": 0, "run": 13}


def test_a_bad_tile_in_a_batch_is_still_named(tmp_path):
    uri = str(tmp_path / "a")
    _array(uri, (100, 100), (10, 10))
    _write(uri, [(3, 102), (3, 102)], np.random.default_rng(3).integers(0, 1 << 30, (100, 100), dtype=np.int32), 1)
    frag = open_array(uri).fragments[0]
    _, start, end = frag.tile_span("", 0, 37)
    data = next(Path(uri).glob("__fragments/*/a0.tdb"))
    raw = bytearray(data.read_bytes())
    magic = raw.index(b"\x28\xb5\x2f\xfd", start)  # its one chunk's zstd frame, after the chunk headers
    assert magic < end
    raw[magic:magic + 4] = b"\0\0\0\0"
    data.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="tile 37"):
        open_array(uri)[:]


@pytest.mark.parametrize("tile_order,cell_order", ORDERS)
@pytest.mark.parametrize("batch", [None, 4 * 6 * 7], ids=["one-slab", "slabs"])
def test_var_tiles_decode_in_batches_equal_to_tiledb_py(tmp_path, tile_order, cell_order, batch, monkeypatch):
    """Var cells of small dense tiles are decoded a slab of tiles at a time (offsets and bytes of all its tiles
    at once, the values made in one call, the next slab decoding meanwhile), equal to TileDB-Py's read: UTF-8,
    ASCII, var numbers, nullable, empty cells, two fragments, boxes that cut tiles; string RLE and dictionary
    tiles, which carry their own offsets, go tile by tile."""
    if batch is not None:
        monkeypatch.setattr(dense_tiles, "BATCH_CELLS", batch)  # a row of tiles a slab: many slabs
    uri = str(tmp_path / "a")
    _array(uri, (41, 29), (6, 4), tile_order, cell_order, attrs=[
        tiledb.Attr("s", dtype=str, var=True, filters=[tiledb.ZstdFilter()]),
        tiledb.Attr("b", dtype="ascii", var=True),
        tiledb.Attr("v", dtype=np.int32, var=True, filters=[tiledb.ZstdFilter()]),
        tiledb.Attr("n", dtype=str, var=True, nullable=True),
        tiledb.Attr("r", dtype=str, var=True, filters=[tiledb.RleFilter()]),
        tiledb.Attr("d", dtype=str, var=True, filters=[tiledb.DictionaryFilter()])])
    rng = np.random.default_rng(5)
    for t, (box, word) in enumerate([((3, 43, 3, 31), "x"), ((9, 30, 6, 20), "é")], start=1):
        shape = (box[1] - box[0] + 1, box[3] - box[2] + 1)
        cells = [word * int(k) for k in rng.integers(0, 5, shape[0] * shape[1])]  # empty cells too
        text = np.array(cells, object).reshape(shape)
        values = np.empty(shape[0] * shape[1], object)
        values[:] = [np.arange(k % 4, dtype=np.int32) + t for k in range(len(values))]
        with tiledb.open(uri, "w", timestamp=t) as A:
            A[box[0]:box[1] + 1, box[2]:box[3] + 1] = {
                "s": text, "b": np.array([c.encode("utf-8").replace("é".encode(), b"e") for c in cells],
                                         object).reshape(shape),
                "v": values.reshape(shape), "n": np.ma.masked_array(text.reshape(-1), rng.random(text.size) < 0.3),
                "r": text, "d": text}
    calls = {"s": 0}
    cells_of = Tiles.cells
    monkeypatch.setattr(Tiles, "cells", lambda self, frag, idx, *a, **k: (
        calls.__setitem__("s", calls["s"] + (frag.index("s") == idx)), cells_of(self, frag, idx, *a, **k))[1])
    for box in ([(3, 43), (3, 31)], [(10, 30), (5, 20)], [(4, 4), (3, 31)]):
        got, want = _reads(uri, box)
        _same(got, want)
    assert calls["s"] == 0  # (never tile by tile)


@pytest.mark.parametrize("bad", ["past its bytes", "not from 0", "falling"])
def test_a_var_tile_whose_offsets_leave_its_own_bytes_is_named(tmp_path, bad):
    """In a slab the tiles' bytes lie back to back: a tile whose offsets reach past its own bytes, or do not
    start at 0, would read its neighbour's cells; the read names the tile instead (the offsets stored without
    filters, so that they can be edited in place)."""
    uri = str(tmp_path / "a")
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int64))
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=dom, offsets_filters=tiledb.FilterList([]), attrs=[
        tiledb.Attr("s", dtype=str, var=True)]))
    with tiledb.open(uri, "w") as A:
        A[:] = np.array([f"cell{k}" for k in range(100)], object)
    break_var_offsets(uri, 4, bad)  # past its bytes: inside the slab's, past the tile's 60
    with pytest.raises(FormatError, match="tile 4"):
        open_array(uri)[:]
