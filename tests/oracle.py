"""Comparing tdbformat's reads with TileDB-Py's, the oracle: equal values, dtypes, masks and order."""

from __future__ import annotations

import functools

import numpy as np


def assert_column(got, values, valid, name):
    """``got`` equals ``values`` (with ``valid``: only valid cells compared, validity equal)."""
    if valid is not None:
        assert isinstance(got, np.ma.MaskedArray), name
        np.testing.assert_array_equal(~np.ma.getmaskarray(got), valid, err_msg=f"{name} validity")
        got, values = np.ma.getdata(got)[valid], values[valid]
    assert got.shape == values.shape, name
    if values.dtype == object:
        assert got.tolist() == values.tolist(), name
    else:
        assert got.dtype == values.dtype, name
        np.testing.assert_array_equal(got, values, err_msg=name)


def assert_same(got, want):
    """Every column of TileDB-Py's result ``want`` equals tdbformat's ``got``."""
    for name, values in want.items():
        values = np.asarray(values) if not isinstance(values, np.ma.MaskedArray) else values
        if isinstance(values, np.ma.MaskedArray) or isinstance(got[name], np.ma.MaskedArray):
            valid = ~np.ma.getmaskarray(values)
            np.testing.assert_array_equal(~np.ma.getmaskarray(got[name]), valid)
            assert_column(np.ma.getdata(got[name])[valid], np.ma.getdata(values)[valid], None, name)
        else:
            assert_column(got[name], values, None, name)


def canonical(cells: dict) -> dict:
    """Cells sorted by every column: TileDB returns cells with equal coordinates (duplicates allowed) in
    the order of its merge heap, which no format rule fixes."""
    keys = [np.unique(np.ma.getdata(v).astype(object) if v.dtype == object else np.ma.getdata(v),
                      return_inverse=True)[1].reshape(-1) for _, v in sorted(cells.items())]  # by name
    perm = np.lexsort(keys[::-1])
    return {k: v[perm] for k, v in cells.items()}


@functools.lru_cache(maxsize=None)
def tiledb_ctx(key=None):
    """TileDB-Py's context for arrays encrypted with ``key`` (None: plain), one per key for the whole run:
    TileDB-Py objects built with a context that is dropped before them corrupt the heap (the suite died in
    malloc now and then when every Dim and Attr had a fresh Ctx)."""
    import tiledb
    return tiledb.Ctx({"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": key} if key else {})
