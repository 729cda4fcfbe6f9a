"""Consolidation at every format version TileDB consolidated with a vacuum file (v5+), against what TileDB of
that version wrote: each corpus array TileDB consolidated without vacuuming is put back as it was before (its
merged fragment, commit and vacuum file taken away), consolidated by tdbformat, and the merged fragment must
be TileDB's, byte for byte, and the vacuum file list the same fragments."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from corpus import cases  # noqa: E402

import tdbformat  # noqa: E402
from tdbformat.structs.names import parse_timestamped_name  # noqa: E402
from tdbformat.write.consolidate import consolidate  # noqa: E402
from tdbformat.write.vacuum import vacuum  # noqa: E402

CONSOLIDATED = [c for c in cases() if c.name in ("consolidated_dense", "consolidated_sparse_with_timestamps")]


def _version(case) -> int:
    return int(case.parent.name.split("_")[0][1:])


def _undo(array: Path):
    """Take TileDB's consolidation away: returns (merged fragment folder, its .vac lines), both moved out."""
    vac = next(p for p in array.rglob("*.vac") if p.parent.name != "__meta")
    name = vac.name[:-4]
    lines = [line.rsplit("/", 1)[-1] for line in vac.read_text().splitlines()]
    folder = next(p for p in array.rglob(name) if p.is_dir())
    kept = array.parent / "tiledb"
    shutil.move(str(folder), kept)
    for p in list(array.rglob(name + ".*")):
        p.unlink()
    return kept, lines, parse_timestamped_name(name)


@pytest.mark.parametrize("budget", ["default", "least"])
@pytest.mark.parametrize("case", [c for c in CONSOLIDATED if _version(c) >= 5], ids=lambda c: c.parent.name)
def test_consolidation_at_the_arrays_version_is_tiledbs(tmp_path, case, budget):
    """``least``: the smallest memory budget the merge takes (a tile of each fragment at once; one tile of a
    dense slab), which it names when refusing one byte less: merged a few tiles at a time, the same bytes."""
    array = tmp_path / "array"
    shutil.copytree(case / "array", array)
    theirs, listed, name = _undo(array)
    before = tdbformat.open_array(str(array)).read()
    # the chunk bound of the corpus writer's TileDB (README: 192 bytes in the tiledb-py 0.19-0.25 wheels)
    chunk = 192 if re.search(r"tiledb-py-0\.(19|2[0-5])\.", case.parent.name) else 65536
    done = consolidate(str(array), max_chunk_size=chunk, memory_budget=least_budget(array) if budget == "least"
                       else None)
    assert len(done["steps"]) == 1
    step = done["steps"][0]
    assert sorted(step["fragments"]) == sorted(listed)
    ours = parse_timestamped_name(step["fragment"])
    assert (ours.t1, ours.t2, ours.version) == (name.t1, name.t2, name.version)
    mine = next(p for p in array.rglob(step["fragment"]) if p.is_dir())
    assert sorted(p.name for p in mine.iterdir()) == sorted(p.name for p in theirs.iterdir())
    for p in theirs.iterdir():
        assert (mine / p.name).read_bytes() == p.read_bytes(), p.name
    vac = next(array.rglob(step["fragment"] + ".vac")).read_text().splitlines()
    assert [line.rsplit("/", 1)[-1] for line in vac] == listed
    absolute = _version(case) < 19
    assert all(line.startswith("file://") == absolute for line in vac)
    vacuum(str(array))
    after = tdbformat.open_array(str(array))
    assert [f.name for f in after.fragments] == [step["fragment"]]
    assert repr(after.read()) == repr(before)


def least_budget(array) -> int:
    """The budget a refused consolidation names as the least it needs; one byte less is refused too, and
    neither writes anything."""
    before = sorted((p, p.stat().st_size) for p in array.rglob("*"))
    with pytest.raises(ValueError, match=r"memory_budget: 1 bytes cannot merge .* it needs (\d+) bytes") as got:
        consolidate(str(array), memory_budget=1)
    need = int(re.search(r"needs (\d+) bytes", str(got.value)).group(1))
    with pytest.raises(ValueError, match=f"memory_budget: {need - 1} bytes cannot merge"):
        consolidate(str(array), memory_budget=need - 1)
    assert sorted((p, p.stat().st_size) for p in array.rglob("*")) == before
    return need


@pytest.mark.parametrize("case", [c for c in CONSOLIDATED if _version(c) < 5], ids=lambda c: c.parent.name)
def test_versions_without_vacuum_files_are_refused_naming_the_version(tmp_path, case):
    array = tmp_path / "array"
    shutil.copytree(case / "array", array)
    before = sorted((p, p.stat().st_size) for p in array.rglob("*"))
    with pytest.raises(ValueError, match=f"format version {_version(case)} "):
        consolidate(str(array))
    assert sorted((p, p.stat().st_size) for p in array.rglob("*")) == before
