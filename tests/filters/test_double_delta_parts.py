"""Double delta after a filter that leaves bytes (a compressor): a part that is not whole values of the tile's
type. TileDB counts the whole values and, where packing saves nothing (always, for compressed bytes), stores
every byte raw; tdbformat reads and writes such parts as TileDB-Py does (found by tests/write/test_differential.py)."""

from __future__ import annotations

import numpy as np
import pytest
import tiledb

from tdbformat import open_array
from tdbformat.write.create import create
from tdbformat.schema import ArraySchema, Attr, Dim, Domain, DoubleDeltaFilter, FilterList, ZstdFilter
from tdbformat.write.writer import write


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.int16, np.int32])  # (64-bit: TileDB refuses the deltas of random bytes)
def test_compressed_bytes_through_double_delta_both_ways(tmp_path, dtype, seed):
    values = np.random.default_rng(seed).integers(0, 2**15, 1000).astype(dtype)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    dom = tiledb.Domain(tiledb.Dim("d", (0, 999), 1000, dtype=np.int64))
    tiledb.Array.create(theirs, tiledb.ArraySchema(dom, [tiledb.Attr("a", dtype, filters=tiledb.FilterList(
        [tiledb.ZstdFilter(), tiledb.DoubleDeltaFilter()]))]))
    with tiledb.open(theirs, "w") as A:
        A[:] = values
    np.testing.assert_array_equal(open_array(theirs)[:]["a"], values)
    create(ours, ArraySchema(Domain(Dim("d", (0, 999), 1000, dtype=np.int64)),
                             [Attr("a", dtype, filters=FilterList([ZstdFilter(), DoubleDeltaFilter()]))]), version=22)
    write(ours, values)
    with tiledb.open(ours) as A:
        np.testing.assert_array_equal(A[:]["a"], values)
    np.testing.assert_array_equal(open_array(ours)[:]["a"], values)
