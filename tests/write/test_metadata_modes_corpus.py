"""Consolidation modes fragment_meta, array_meta and commits at every format version the corpus holds them,
against what TileDB of that version wrote: the corpus array is put back as it was before (TileDB's
consolidated file, and its vacuum file, taken away), consolidated by tdbformat, and the file written must be
TileDB's, byte for byte (whole URIs, before v19 / v9, naming the corpus writer's machine: by last component)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from corpus import cases  # noqa: E402

import tdbformat  # noqa: E402
from tdbformat.structs.commits import VacuumFile  # noqa: E402
from tdbformat.structs.consolidated import ConsolidatedFragmentMetadata  # noqa: E402
from tdbformat.write.consolidate import consolidate  # noqa: E402

MODES = {"fragment_meta_consolidated": "fragment_meta", "array_metadata_consolidated": "array_meta",
         "commits_consolidated": "commits"}
CASES = [c for c in cases() if c.name in MODES]


def _version(case) -> int:
    return int(case.parent.name.split("_")[0][1:])


def _consolidated_files(array: Path, mode: str) -> list:
    if mode == "fragment_meta":
        return sorted(array.rglob("*.meta"))
    if mode == "commits":
        return sorted(array.rglob("*.con"))
    return sorted(p for p in (array / "__meta").iterdir() if p.suffix == "" and
                  p.name.split("_")[2] != p.name.split("_")[3])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.parent.name.split('_')[0]}-{c.name}")
def test_a_mode_at_the_arrays_version_writes_what_tiledb_wrote(tmp_path, case):
    mode, version = MODES[case.name], _version(case)
    array = tmp_path / "array"
    shutil.copytree(case / "array", array)
    theirs = _consolidated_files(array, mode)
    assert len(theirs) == 1
    kept = {p.name: p.read_bytes() for p in theirs + [Path(str(theirs[0]) + ".vac")] if p.exists()}
    for p in theirs:
        for q in (p, Path(str(p) + ".vac")):
            q.unlink(missing_ok=True)
    if mode == "array_meta" and version < 5:
        with pytest.raises(ValueError, match=f"format version {version} "):
            consolidate(str(array), config={"sm.consolidation.mode": mode})
        return
    # the chunk bound of the corpus writer's TileDB (README: 192 bytes in the tiledb-py 0.19-0.25 wheels)
    chunk = 192 if re.search(r"tiledb-py-0\.(19|2[0-5])\.", case.parent.name) else 65536
    done = consolidate(str(array), config={"sm.consolidation.mode": mode}, max_chunk_size=chunk)
    assert len(done["steps"]) == 1
    mine = _consolidated_files(array, mode)
    assert len(mine) == 1
    name = theirs[0].name
    assert mine[0].name.split("_")[:4] == name.split("_")[:4]  # the same timestamps
    if mode == "fragment_meta" and version < 9:  # names are whole URIs of the writer's machine
        schemas = dict(tdbformat.open_array(str(array)).schemas)
        a, b = (ConsolidatedFragmentMetadata.parse(d, schema=schemas) for d in (mine[0].read_bytes(), kept[name]))
        assert [f.name.rsplit("/", 1)[-1] for f in a.fragments] == [f.name.rsplit("/", 1)[-1] for f in b.fragments]
        assert repr(list(a.footers)) == repr(list(b.footers))
    else:
        assert mine[0].read_bytes() == kept[name]
    if name + ".vac" in kept:
        ours = VacuumFile.parse(Path(str(mine[0]) + ".vac").read_bytes()).uris
        other = VacuumFile.parse(kept[name + ".vac"]).uris
        assert [u.rsplit("/", 1)[-1] for u in ours] == [u.rsplit("/", 1)[-1] for u in other]
        if version >= 19:
            assert ours == other
