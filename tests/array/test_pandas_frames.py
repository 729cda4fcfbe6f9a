"""Arrays ``tiledb.from_pandas`` wrote (scripts/make_pandas.py, tests/data/pandas/): ``.df`` gives the frame
TileDB-Py's ``A.df[:]`` gave (truth.json, recorded under pandas 2, which TileDB-Py 0.36's dataframes need):
the recorded index, the columns, the dtypes from_pandas recorded, the values."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tdbformat import open_array

pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("tiledb")  # scripts/make_pandas.py imports it
DATA = Path(__file__).parents[1] / "data" / "pandas"
CASES = sorted(p.parent for p in DATA.glob("*/truth.json"))


def _make_pandas():
    """scripts/make_pandas.py, whose ``plain`` turns values into what truth.json holds."""
    path = Path(__file__).parents[2] / "scripts" / "make_pandas.py"
    spec = importlib.util.spec_from_file_location("make_pandas", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_plain = _make_pandas().plain


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_df_is_tiledb_pys_frame(case):
    truth = json.loads((case / "truth.json").read_text())
    df = open_array(case / "array").df[:]
    assert list(df.index.names) == truth["index_names"]
    assert _plain(df.index) == truth["index"]
    assert list(df.columns) == truth["columns"]
    restored = json.loads(open_array(case / "array").meta["__pandas_attribute_repr"])
    for name in truth["columns"]:
        assert _plain(df[name].tolist()) == truth["values"][name], name
        if name in restored:  # pandas 3 names the others' dtypes differently (str, not object)
            assert str(df[name].dtype) == truth["dtypes"][name], name


def test_index_col_overrides_the_recorded_index():
    arr = open_array(DATA / "sparse_str_int" / "array")
    assert list(arr.query(index_col=False).df[:].columns[:2]) == ["s", "i"]
    assert arr.query(index_col=["i"]).df[:].index.name == "i"
    assert arr.query(return_arrow=True).df[:].column_names[:2] == ["s", "i"]  # Arrow: as read, as TileDB-Py


def test_a_recorded_dtype_pandas_cannot_apply_is_a_format_error(tmp_path):
    import shutil

    from tdbformat import FormatError, put_metadata
    shutil.copytree(DATA / "sparse_int" / "array", tmp_path / "a")
    put_metadata(tmp_path / "a", {"__pandas_attribute_repr": json.dumps({"f": "no-such-dtype"})})
    with pytest.raises(FormatError, match="pandas dtypes recorded"):
        open_array(tmp_path / "a").df[:]
