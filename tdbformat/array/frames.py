"""Read results as a pyarrow Table or a pandas DataFrame (optional extras: ``pip install tdbformat[dataframe]``),
as TileDB-Py's ``.df`` builds them: one column per field, dense results flattened row-major, nullable fields
as Arrow nulls, enumerated attributes as dictionary (pandas: categorical) columns, var strings as
``large_string``."""

from __future__ import annotations

import json

import numpy as np

from ..enums import Datatype
from ..errors import FormatError

__all__ = ["to_arrow_table", "require", "with_pandas_meta"]


def require(name: str):
    """Import the optional dependency ``name`` (pyarrow or pandas), or say which extra installs it."""
    try:
        return __import__(name)
    except ImportError:
        raise ImportError(f"this read needs {name}, an optional dependency: pip install {name} "
                          "(or the tdbformat[dataframe] extra)") from None


def to_arrow_table(arr, result: dict):
    """``result`` (``{name: numpy array}``, enumerated attributes as codes) as a pyarrow Table."""
    pa = require("pyarrow")
    infos = {f.name: f for f in arr.dims + arr.attrs}
    labels = arr.enumeration_labels()
    columns = {}
    for name, values in result.items():
        mask = np.ma.getmaskarray(values).reshape(-1) if isinstance(values, np.ma.MaskedArray) else None
        data = np.ma.getdata(values).reshape(-1)
        columns[name] = _column(pa, infos[name], data, mask, labels.get(name))
    return pa.table(columns)


def _column(pa, info, data, mask, labels):
    if data.dtype.kind == "c":  # (pyarrow's own error names no field)
        raise TypeError(f"attrs: {info.name!r} holds complex numbers, which Arrow and pandas' Arrow-backed frames "
                        "have no type for; read it with A[...], multi_index or read(), or leave it out with attrs=")
    if labels is not None:
        dictionary = pa.array(list(labels[0]))
        return pa.DictionaryArray.from_arrays(pa.array(data, mask=mask), dictionary)
    if data.dtype == object:
        kind = (pa.large_string() if info.datatype in (Datatype.STRING_UTF8, Datatype.STRING_ASCII)
                else pa.large_binary() if info.datatype.is_string or info.datatype in (Datatype.CHAR, Datatype.BLOB)
                else None)
        if kind is None:
            return pa.array(list(data), mask=mask)
        if info.datatype == Datatype.STRING_ASCII:  # read as bytes (numpy "S"); Arrow shows them as text
            return pa.array(data, type=pa.large_binary(), mask=mask).cast(kind)
        return pa.array(data, type=kind, mask=mask)
    return pa.array(data, mask=mask)


def with_pandas_meta(df, meta: dict, index_col=True):
    """``df`` as TileDB-Py's ``.df`` shapes the frame of an array ``tiledb.from_pandas`` wrote, from the
    metadata it stored (TileDB-Py's _update_df_from_meta): the column dtypes it recorded
    (``__pandas_attribute_repr`` and ``__pandas_index_dims``: "Int64", "string", ...), and its index
    dimensions as the index, a dense frame's row dimension ``__tiledb_rows`` unnamed. ``index_col``: these
    columns as the index instead (a name or a list), or False for none."""
    dtypes, index = {}, []
    for key, is_index in (("__pandas_attribute_repr", False), ("__pandas_index_dims", True)):
        try:
            recorded = json.loads(meta[key]) if key in meta else {}
        except (TypeError, ValueError):  # not what TileDB-Py writes there: nothing to restore
            recorded = {}
        found = {k: v for k, v in recorded.items() if k in df} if isinstance(recorded, dict) else {}
        dtypes.update(found)
        index += list(found) if is_index else []
    if dtypes:
        try:
            df = df.astype(dtypes)
        except (TypeError, ValueError) as e:  # a dtype pandas does not know, or values it cannot hold
            raise FormatError(f"array metadata: the pandas dtypes recorded, {dtypes}, do not apply: {e}") from None
    if index_col is not True and index_col:
        return df.set_index(index_col)
    if index_col and index:
        df = df.set_index(index)
        if "__tiledb_rows" in index:
            names = [None if n == "__tiledb_rows" else n for n in index]
            df.index = df.index.rename(names[0] if len(names) == 1 else names)
    return df
