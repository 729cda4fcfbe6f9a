"""Cells from a table: the columns of a CSV or Parquet file (one per dimension and attribute) as the data and
keywords :func:`tdbformat.write` takes. Sparse arrays take the rows as cells at their coordinates; a dense
array's rows must cover a box exactly (one row per cell, in any order), and are placed in it."""

from __future__ import annotations

import csv
import io

import numpy as np

from ..array.cells import cell_dtype
from ..enums import ArrayType
from ..errors import UnsupportedError
from ..storage import storage_for

__all__ = ["read_columns", "cells_from_columns"]


def read_columns(path) -> dict:
    """``{column: numpy array}`` of a CSV or Parquet file (strings as objects; empty CSV cells as None)."""
    storage, p = storage_for(path)
    data = storage.read(p, what="input file")
    if str(path).endswith((".parquet", ".pq")):
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise UnsupportedError(f"{path}: Parquet input needs pyarrow (pip install pyarrow)") from None
        table = pq.read_table(pa.BufferReader(data))
        return {n: table.column(n).to_numpy(zero_copy_only=False) for n in table.column_names}
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    if not rows:
        raise ValueError(f"path: {path} is empty (expected a header row of dimension and attribute names)")
    body = np.array(rows[1:], dtype=object).reshape(len(rows) - 1, len(rows[0]))
    return {n: body[:, j] for j, n in enumerate(rows[0])}


def _typed(column, info, name: str):
    """A CSV/Parquet column as the field's values: numbers parsed, empty cells of nullable fields masked."""
    column = np.asarray(column)
    missing = (np.equal(column, None) | (column == "")) if column.dtype == object else None
    if info.var:
        return np.ma.masked_array(column, missing) if info.nullable and missing is not None else column
    if missing is not None and missing.any():
        if not info.nullable:
            raise ValueError(f"columns: column {name!r} has empty cells, and the field is not nullable")
        column = np.where(missing, "0", column)
    try:
        values = (column.astype(str) if column.dtype == object else column).astype(cell_dtype(info))
    except (TypeError, ValueError) as e:
        raise ValueError(f"columns: column {name!r} is not {info.datatype.name}: {e}") from None
    return np.ma.masked_array(values, missing) if info.nullable and missing is not None else values


def cells_from_columns(arr, columns: dict, subarray):
    """(data, write keywords) for a CSV/Parquet file: sparse cells at the dimension columns' coordinates;
    dense cells covering a box exactly (the box their coordinates span), placed in it."""
    missing = [f.name for f in arr.dims + arr.attrs if f.name not in columns]
    if missing:
        raise ValueError(f"columns: no column {missing} (columns: {', '.join(columns)})")
    coords = [_typed(columns[d.name], d, d.name) for d in arr.dims]
    data = {a.name: _typed(columns[a.name], a, a.name) for a in arr.attrs}
    if arr.schema.array_type != ArrayType.DENSE:
        return data, {"coords": coords}
    box = subarray or [(int(c.min()), int(c.max())) for c in coords]
    shape = tuple(hi - lo + 1 for lo, hi in box)
    idx = tuple(np.asarray(c, np.int64) - lo for c, (lo, _) in zip(coords, box))
    flat = np.ravel_multi_index(idx, shape, mode="raise") if all(len(i) for i in idx) else np.zeros(0, np.int64)
    if len(np.unique(flat)) != int(np.prod(shape)) or len(flat) != int(np.prod(shape)):
        raise ValueError(f"columns: a dense write needs exactly one row per cell of the box {box}, "
                         f"got {len(flat)} rows for {int(np.prod(shape))} cells")
    out = {}
    for name, v in data.items():
        placed = np.empty(len(flat), v.dtype)
        placed[flat] = np.ma.getdata(v)
        if isinstance(v, np.ma.MaskedArray):
            mask = np.empty(len(flat), bool)
            mask[flat] = np.ma.getmaskarray(v)
            placed = np.ma.masked_array(placed, mask)
        out[name] = placed.reshape(shape)
    return out, {"subarray": box}
