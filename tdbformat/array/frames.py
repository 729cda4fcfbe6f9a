"""Read results as a pyarrow Table or a pandas DataFrame (optional extras: ``pip install tdbformat[dataframe]``),
as TileDB-Py's ``.df`` builds them: one column per field, dense results flattened row-major, nullable fields
as Arrow nulls, enumerated attributes as dictionary (pandas: categorical) columns, var strings as
``large_string``."""

from __future__ import annotations

import numpy as np

from ..enums import Datatype

__all__ = ["to_arrow_table", "require"]


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
