"""``tdbformat.create``: a schema built with ``tdbformat.schema`` makes an array that TileDB-Py opens as the
schema says, its enumeration files included (written before the schema file that names them)."""

from __future__ import annotations

import numpy as np
import pytest

import tdbformat
from tdbformat import schema as S

tiledb = pytest.importorskip("tiledb")


@pytest.mark.parametrize("version", [20, 22])
def test_create_writes_the_enumerations_of_a_schema_builder(tmp_path, version):
    path = str(tmp_path / "a")
    colors = S.Enumeration("colors", False, ["red", "green", "blue"])
    sizes = S.Enumeration("sizes", True, np.array([10, 20, 30], np.int32))
    schema = S.ArraySchema(S.Domain(S.Dim("d", domain=(0, 3), tile=4, dtype=np.int64)),
                           [S.Attr("c", dtype=np.uint8, enum_label="colors"),
                            S.Attr("s", dtype=np.uint8, enum_label="sizes")],
                           enums=[colors, sizes])
    tdbformat.create(path, schema, version)
    tdbformat.write(path, {"c": np.array([2, 0, 1, 0], np.uint8), "s": np.array([0, 1, 2, 1], np.uint8)},
                    subarray=[(0, 3)], timestamp=5)
    with tiledb.open(path) as A:
        assert list(A.enum("colors").values()) == ["red", "green", "blue"]
        assert A.enum("sizes").values().tolist() == [10, 20, 30] and A.enum("sizes").ordered
        got = A[:]
    # TileDB-Py decodes enumerated attributes into their values
    assert got["c"].tolist() == ["blue", "red", "green", "red"] and got["s"].tolist() == [10, 20, 30, 20]
    assert tdbformat.open_array(path).enumerations == {"colors": ["red", "green", "blue"], "sizes": [10, 20, 30]}


def test_create_refuses_enumerations_before_version_20_and_writes_nothing(tmp_path):
    schema = S.ArraySchema(S.Domain(S.Dim("d", domain=(0, 3), tile=4, dtype=np.int64)),
                           [S.Attr("c", dtype=np.uint8, enum_label="colors")],
                           enums=[S.Enumeration("colors", False, ["red"])])
    with pytest.raises(ValueError, match="enumeration"):
        tdbformat.create(str(tmp_path / "a"), schema, 19)
    assert not (tmp_path / "a").exists()
