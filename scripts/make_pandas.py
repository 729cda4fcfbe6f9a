"""Write arrays with ``tiledb.from_pandas`` into tests/data/pandas/<case>/array, with a truth.json of what
TileDB-Py's ``A.df[:]`` gives back. TileDB-Py 0.36's dataframe functions refuse pandas 3, which the test
environment has, so run this where pandas is older:

    python3 -m venv /tmp/pd && /tmp/pd/bin/pip install tiledb==0.36.1 "pandas<3" pyarrow
    /tmp/pd/bin/python scripts/make_pandas.py [OUT]

One frame of 40 rows (int, float, str, categorical, datetime, bool, nullable Int64 and string columns) is
written dense (rows as the ``__tiledb_rows`` dimension, row- and column-major) and sparse, indexed by an
int, a string (duplicates allowed), a datetime, a float, an (str, int) pair and an (int, float) pair in
Hilbert order. from_pandas records the pandas dtypes and the index in the array's metadata, by which
``.df`` restores them. truth.json: the index names and values, the columns, their dtypes and values (None for
NA, ISO strings for datetimes).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import tiledb

ROOT = Path(__file__).resolve().parent.parent
CASES = {"dense": {}, "dense_col_major": dict(cell_order="col-major", tile_order="col-major"),
         "sparse_int": dict(sparse=True, index_dims=["i"]),
         "sparse_str": dict(sparse=True, index_dims=["s"], allows_duplicates=True),
         "sparse_datetime": dict(sparse=True, index_dims=["t"]), "sparse_float": dict(sparse=True, index_dims=["f"]),
         "sparse_str_int": dict(sparse=True, index_dims=["s", "i"]),
         "sparse_hilbert": dict(sparse=True, index_dims=["i", "f"], cell_order="hilbert")}


def frame(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "i": np.arange(n), "f": rng.normal(size=n), "s": [f"s{i % 7}" for i in range(n)],
        "cat": pd.Categorical([["a", "b", "c"][i % 3] for i in range(n)]),
        "t": pd.date_range("2020-01-01", periods=n, freq="h"), "b": rng.random(n) > 0.5,
        "ni": pd.array([None if i % 5 == 0 else i for i in range(n)], dtype="Int64"),
        "ns": pd.array([None if i % 4 == 0 else f"x{i}" for i in range(n)], dtype="string")})


def plain(values) -> list:
    """JSON's values: None for NA, ISO strings for timestamps, tuples of a MultiIndex as lists."""
    out = []
    for v in values:
        if isinstance(v, tuple):
            out.append(plain(v))
        elif v is None or v is pd.NA or (isinstance(v, float) and v != v):
            out.append(None)
        elif isinstance(v, pd.Timestamp):
            out.append(v.isoformat())
        else:
            out.append(v.item() if isinstance(v, np.generic) else v)
    return out


def main(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    for name, kw in CASES.items():
        uri = out / name / "array"
        uri.parent.mkdir(parents=True)
        tiledb.from_pandas(str(uri), frame(), **kw)
        with tiledb.open(str(uri)) as A:
            df = A.df[:]
        truth = {"case": name, "from_pandas": kw, "tiledb_py_version": tiledb.__version__,
                 "pandas_version": pd.__version__, "index_names": list(df.index.names), "index": plain(df.index),
                 "columns": list(df.columns), "dtypes": {c: str(df[c].dtype) for c in df.columns},
                 "values": {c: plain(df[c].tolist()) for c in df.columns}}
        (out / name / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(uri)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests/data/pandas")
