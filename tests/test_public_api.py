"""The public API: one short __all__ in groups, namespaces for the rest, and the old top-level names still
working for one release with a DeprecationWarning that names their new place."""

from __future__ import annotations

import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import tdbformat
import tdbformat.schema
import tdbformat.structs

ROOT = Path(__file__).resolve().parent.parent
DENSE = ROOT / "tests/data/corpus/v22_tiledb-py-0.36.1_core-2.30.0/dense_2d_multiattr/array"


def test_one_short_all_of_names_that_exist():
    assert len(tdbformat.__all__) <= 40
    assert len(set(tdbformat.__all__)) == len(tdbformat.__all__)
    for name in tdbformat.__all__:
        assert getattr(tdbformat, name) is not None


def test_no_top_level_name_means_two_things():
    """A declaration (``tdbformat.structs``) and a builder (``tdbformat.schema``) of the same name are never
    both reachable as one top-level name; the top level keeps neither of the shared names in __all__."""
    shared = set(tdbformat.structs.__all__) & set(tdbformat.schema.__all__)
    assert {"ArraySchema", "Enumeration", "Filter"} <= shared
    assert not shared & set(tdbformat.__all__)
    assert tdbformat.structs.ArraySchema is not tdbformat.schema.ArraySchema
    assert hasattr(tdbformat.structs.ArraySchema, "parse") and hasattr(tdbformat.schema.ArraySchema, "to_dict")


def test_the_validate_function_shadows_no_package():
    from tdbformat.check.validate import validate, validate_many
    assert tdbformat.validate is validate and callable(validate_many)
    assert not hasattr(tdbformat, "check") or tdbformat.check.validate.validate is validate


@pytest.mark.parametrize("name", sorted(tdbformat._MOVED))
def test_an_old_top_level_name_warns_and_gives_the_object_at_its_new_place(name):
    new_home = tdbformat._MOVED[name]
    with pytest.warns(DeprecationWarning, match=rf"tdbformat\.{name} moved to {new_home}\.{name}"):
        old = getattr(tdbformat, name)
    assert old is getattr(sys.modules[new_home], name)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        tdbformat.nonesuch  # noqa: B018


def test_python_m_tdbformat_runs_the_command_line():
    for module in ("tdbformat", "tdbformat.cli"):
        r = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, cwd=ROOT,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("usage: tdbformat") and "validate" in r.stdout


def test_open_array_w_opens_a_writer_and_array_open_array_only_reads(tmp_path):
    path = tmp_path / "dense"
    shutil.copytree(DENSE, path)
    before = tdbformat.open_array(str(path)).read()
    with tdbformat.open_array(str(path), "w", timestamp=10**13) as w:
        assert isinstance(w, tdbformat.ArrayWriter)
    with pytest.raises(ValueError, match="mode"):
        tdbformat.array.open_array(str(path), "w")
    after = tdbformat.open_array(str(path)).read()  # a writer opened and closed without writing adds nothing
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before)


def test_array_memory_budget_is_options_memory_budget_with_a_warning(monkeypatch):
    from tdbformat.array import options
    monkeypatch.setattr(options, "MEMORY_BUDGET", options.MEMORY_BUDGET)
    with pytest.warns(DeprecationWarning, match="tdbformat.array.options.MEMORY_BUDGET"):
        tdbformat.array.MEMORY_BUDGET = 10
    assert options.MEMORY_BUDGET == 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert tdbformat.array.MEMORY_BUDGET == 10
    with pytest.raises(tdbformat.MemoryBudgetError):  # the readers use it: the corpus array needs more bytes
        tdbformat.open_array(str(DENSE)).read()


def test_the_design_cards_forms_work_through_the_namespaces():
    """``from tdbformat.structs import Footer``: ``Footer.parse(data, schema=...)`` and ``.build``, ``parse_file``,
    and the version diff, on a fragment TileDB-Py 0.36 wrote."""
    from tdbformat.structs import ArraySchema, Footer, FragmentMetadata
    from tdbformat.structs.footer import find_footer
    frag = next((DENSE / "__fragments").iterdir())
    data = (frag / "__fragment_metadata.tdb").read_bytes()
    schema = ArraySchema.parse(next((DENSE / "__schema").iterdir()).read_bytes())
    footer = Footer.parse(data, schema=schema)
    offset, size, _ = find_footer(data, schema)
    assert footer.version == 22 and Footer.build(footer, schema=schema) == data[offset:offset + size]
    parsed = tdbformat.parse_file(frag / "__fragment_metadata.tdb")
    assert parsed.kind == "fragment_metadata" and parsed.build() == data
    assert isinstance(parsed.value, FragmentMetadata)
    assert tdbformat.spec.diff(20, 21) == [] and tdbformat.spec.diff(21, 22)
