"""tdbformat consolidate / vacuum / clean on the command line: what they print, and --json documents valid
against docs/json-schema."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

tiledb = pytest.importorskip("tiledb")
jsonschema = pytest.importorskip("jsonschema")

from tdbformat.cli import main  # noqa: E402

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "json-schema"


def _array(path):
    dom = tiledb.Domain(tiledb.Dim("x", domain=(0, 99), tile=10, dtype=np.int64))
    tiledb.Array.create(str(path), tiledb.ArraySchema(domain=dom, sparse=True, attrs=[tiledb.Attr("a", dtype=np.int32)]))
    for t in (1, 2, 3, 4):
        with tiledb.open(str(path), "w", timestamp=t) as A:
            A[np.array([t])] = np.array([t], np.int32)


def _doc(capsys, argv) -> dict:
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    command = argv[0]
    jsonschema.Draft202012Validator(json.loads((SCHEMAS / f"{command}.v1.json").read_text())).validate(out)
    return out


def test_consolidate_vacuum_clean_json(tmp_path, capsys):
    path = tmp_path / "a"
    _array(path)
    plan = _doc(capsys, ["consolidate", str(path), "--dry-run", "--json", "--config",
                         "sm.consolidation.step_min_frags=2", "--config", "sm.consolidation.step_max_frags=2"])
    assert [s["timestamp_range"] for s in plan["steps"]] == [[1, 2], [3, 4], [1, 4]]
    done = _doc(capsys, ["consolidate", str(path), "--json"])
    assert done["steps"][0]["timestamp_range"] == [1, 4] and "fragment" in done["steps"][0]
    removed = _doc(capsys, ["vacuum", str(path), "--json"])
    assert len(removed["fragments"]) == 4 and len(removed["vacuum_files"]) == 1
    cleaned = _doc(capsys, ["clean", str(path), "--uncommitted", "--dry-run", "--json"])
    assert cleaned["uncommitted"] == []
    with tiledb.open(str(path)) as A:
        assert A[:]["a"].tolist() == [1, 2, 3, 4]


def test_memory_budget_bounds_the_merge_and_a_too_small_one_writes_nothing(tmp_path, capsys):
    """--memory-budget is consolidate's memory_budget: too small for a tile of each fragment, a usage error
    naming it, and the array as it was; enough, the merge TileDB-Py reads as before."""
    path = tmp_path / "a"
    _array(path)
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    assert main(["consolidate", str(path), "--memory-budget", "10"]) == 2
    assert "memory_budget: 10 bytes cannot merge" in capsys.readouterr().err
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before
    assert main(["consolidate", str(path), "--memory-budget", str(1 << 20)]) == 0
    with tiledb.open(str(path)) as A:
        assert A[:]["a"].tolist() == [1, 2, 3, 4]
        assert len(tiledb.array_fragments(str(path))) == 1


def test_a_bad_config_item_is_a_usage_error(tmp_path, capsys):
    path = tmp_path / "a"
    _array(path)
    assert main(["consolidate", str(path), "--config", "novalue"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert main(["clean", str(path)]) == 2
