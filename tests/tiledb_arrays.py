"""Arrays made by TileDB-Py (the oracle), for tests: one place for the schema and write boilerplate that tests
otherwise repeat inline. Each builder returns the array's URI as a str.

    uri = tiledb_arrays.create(tmp_path / "a", [("x", (0, 99), 10)], [("a", np.int32)], sparse=True)
    tiledb_arrays.write(uri, {"a": values}, coords=[xs], timestamp=3)
"""

from __future__ import annotations

import numpy as np
import pytest

tiledb = pytest.importorskip("tiledb")


def dim(spec):
    """A ``tiledb.Dim`` from ``(name, domain, tile[, dtype])`` (dtype int64 by default), or a Dim as given."""
    if isinstance(spec, tiledb.Dim):
        return spec
    name, domain, tile, *dtype = spec
    return tiledb.Dim(name, domain=domain, tile=tile, dtype=dtype[0] if dtype else np.int64)


def attr(spec):
    """A ``tiledb.Attr`` from ``(name, dtype[, keywords])`` (``str`` dtypes var-sized), or an Attr as given."""
    if isinstance(spec, tiledb.Attr):
        return spec
    name, dtype, *kw = spec
    kw = dict(kw[0]) if kw else {}
    if dtype is str or dtype == "ascii" or dtype is bytes:
        kw.setdefault("var", True)
    return tiledb.Attr(name, dtype=dtype, **kw)


def create(uri, dims, attrs, sparse: bool = False, ctx=None, **schema) -> str:
    """``tiledb.Array.create`` at ``uri`` with a domain of ``dims`` and ``attrs`` (see :func:`dim`,
    :func:`attr`); ``schema``: other ``tiledb.ArraySchema`` keywords (capacity, cell_order, enums, ...)."""
    uri = str(uri)
    tiledb.Array.create(uri, tiledb.ArraySchema(domain=tiledb.Domain(*map(dim, dims)), attrs=list(map(attr, attrs)),
                                                sparse=sparse, ctx=ctx, **schema), ctx=ctx)
    return uri


def write(uri, data, coords=None, timestamp=None, subarray=None, ctx=None) -> str:
    """One fragment written by TileDB-Py: sparse cells at ``coords`` (one array per dimension), or dense
    ``data`` over ``subarray`` (a tuple of slices; the whole domain if None)."""
    uri = str(uri)
    with tiledb.open(uri, "w", timestamp=timestamp, ctx=ctx) as A:
        if coords is not None:
            A[tuple(coords)] = data
        else:
            A[subarray if subarray is not None else slice(None)] = data
    return uri


def sparse_cells(uri, n: int = 20, fragments: int = 1, seed: int = 0, dtype=np.int64) -> str:
    """A 2-D sparse array (x, y in [0, 99], tiles of 10) with one int32 attribute ``a``, ``fragments``
    fragments of ``n`` random cells each, written at timestamps 1, 2, ..."""
    uri = create(uri, [("x", (0, 99), 10, dtype), ("y", (0, 99), 10, dtype)], [("a", np.int32)], sparse=True)
    rng = np.random.default_rng(seed)
    for t in range(1, fragments + 1):
        cells = rng.choice(100 * 100, n, replace=False)
        write(uri, {"a": rng.integers(0, 1000, n, dtype=np.int32)}, coords=[cells // 100, cells % 100], timestamp=t)
    return uri


def dense_grid(uri, shape=(6, 4), tile=(3, 2), fragments: int = 1) -> str:
    """A 2-D dense int64 array ``rows`` x ``cols`` (from 1) with an int32 attribute ``a`` written whole
    ``fragments`` times, at timestamps 1, 2, ..., fragment t holding ``t * 1000 + cell number``."""
    uri = create(uri, [("rows", (1, shape[0]), tile[0]), ("cols", (1, shape[1]), tile[1])], [("a", np.int32)])
    for t in range(1, fragments + 1):
        write(uri, {"a": (t * 1000 + np.arange(shape[0] * shape[1])).astype(np.int32).reshape(shape)}, timestamp=t)
    return uri
