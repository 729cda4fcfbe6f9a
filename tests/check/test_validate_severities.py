"""Issue #39 §0b: what ``validate`` calls an error. A killed write's uncommitted fragment folder is a warning
(readers ignore it); tile sums that TileDB clamps at the type's limit are what TileDB stores, not lies."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tdbformat.cli import main
from tdbformat.check.validate import validate

tiledb = pytest.importorskip("tiledb")


def _sparse(path, dtype, values, dims=None):
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, 99), tile=10, dtype=np.int64))
    schema = tiledb.ArraySchema(domain=dom, sparse=True, capacity=100,
                                attrs=[tiledb.Attr("a", dtype=dtype)])
    tiledb.Array.create(str(path), schema)
    with tiledb.open(str(path), "w") as A:
        A[np.arange(len(values)) if dims is None else dims] = np.asarray(values, dtype)


def test_an_uncommitted_fragment_is_a_warning(tmp_path, capsys):
    _sparse(tmp_path / "a", np.int64, [1, 2, 3])
    with tiledb.open(str(tmp_path / "a"), "w") as A:
        A[np.array([5])] = np.array([9], np.int64)
    commit = sorted((tmp_path / "a" / "__commits").glob("*.wrt"))[-1]
    commit.unlink()  # as a write killed before its commit
    found = validate(tmp_path / "a")
    assert [(f.rule, f.severity) for f in found] == [("uncommitted", "warning")]
    assert "tdbformat clean --uncommitted" in found[0].message and commit.stem in found[0].message
    assert main(["validate", "--json", str(tmp_path / "a")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["errors"], doc["warnings"]) == (0, 1)


I64 = 2**63 - 1


@pytest.mark.parametrize("dtype, values, stored", [
    # int64 saturates at its max and stops adding (Sum<T, int64_t>::sum); numpy's wrapped sum is 0
    (np.int64, [I64, I64, -I64, -I64], I64),
    (np.int64, [-I64, -I64, I64, I64, 5], -I64 - 1),
    # uint64 saturates at its max
    (np.uint64, [2**64 - 1, 1, 0], 2**64 - 1),
    # doubles stop at the largest finite double (Sum<T, double>::sum), where numpy reaches inf
    (np.float64, [1e308, 1e308, -1e308], np.finfo(np.float64).max),
    (np.float32, [3e38, 3e38, 3e38], 9e38),  # summed as doubles: no limit reached
])
def test_saturated_sums_are_what_tiledb_stores(tmp_path, dtype, values, stored):
    _sparse(tmp_path / "a", dtype, values)
    frag = next((tmp_path / "a" / "__fragments").iterdir())
    from tdbformat import parse_file
    sums = parse_file(frag / "__fragment_metadata.tdb").value.tile_sums[0]
    assert sums.tolist() == [stored] if dtype != np.float32 else np.isclose(sums[0], stored, rtol=1e-6)
    assert [f for f in validate(tmp_path / "a") if f.rule == "tile-stats"] == []
    # and tdbformat's writer stores what TileDB stores
    import tdbformat
    tdbformat.create(tmp_path / "b", tdbformat.open_array(tmp_path / "a").schema)
    tdbformat.write(tmp_path / "b", {"a": np.asarray(values, dtype)}, coords=[np.arange(len(values))])
    mine = next((tmp_path / "b" / "__fragments").iterdir()) / "__fragment_metadata.tdb"
    assert parse_file(mine).value.tile_sums[0].tolist() == sums.tolist()
