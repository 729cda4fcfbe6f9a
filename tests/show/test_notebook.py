"""Notebook views (``_repr_html_``): each names what TileDB wrote (truth.json), holds no script and links
nowhere; a validate report of a broken array shows its error."""

from __future__ import annotations

import html
import re
import shutil

import pytest

import corpus
from tdbformat.array import open_array
from tdbformat.layout.files import parse_file
from tdbformat.write.groups import Group
from tdbformat.check.validate import Findings, validate

V22 = "v22_tiledb-py-0.36.1_core-2.30.0"


def _closed(view: str) -> str:
    """The view's text, once checked to run nothing and to link nowhere."""
    assert "<script" not in view and "href" not in view and "src=" not in view
    return html.unescape(view)


@pytest.mark.parametrize("name", ["dense_2d_multiattr", "enumerations", "sparse_var_string_dim", "consolidated_dense"])
def test_array_schema_and_fragment_views_name_what_tiledb_wrote(name):
    case = corpus.CORPUS / V22 / name
    truth = corpus.truth(case)
    arr = open_array(corpus.root(case))
    view = _closed(arr._repr_html_())
    names = [d["name"] for d in truth["schema"]["domain"]["dims"]] + [a["name"] for a in truth["schema"]["attrs"]]
    fragments = [f["uri"].rsplit("/", 1)[-1] for f in truth["fragments"]]
    assert all(n in view for n in names + fragments)
    assert f"{len(fragments)} fragments" in view
    schema_view = _closed(arr.schema._repr_html_())
    assert all(f"<td>{n}</td>" in schema_view for n in names)
    for frag, expected in zip(arr.fragments, truth["fragments"]):
        row = _closed(frag._repr_html_())
        assert frag.name in row and f"<td>{expected['cell_num']}</td>" in row


def test_enumerations_view_lists_their_values():
    case = corpus.CORPUS / V22 / "enumerations"
    view = _closed(open_array(corpus.root(case))._repr_html_())
    assert "ultraviolet" in view and "colors" in view


def test_group_view_lists_its_members():
    case = corpus.CORPUS / V22 / "group"
    view = _closed(Group(corpus.root(case))._repr_html_())
    members = corpus.truth(case)["group"]["members"]
    assert f"{len(members)} members" in view and all(f"<td>{m['name']}</td>" in view for m in members)


def test_parsed_file_view_shows_offsets_and_values():
    schema = sorted((corpus.root(corpus.CORPUS / V22 / "dense_2d_multiattr") / "__schema").iterdir())[-1]
    view = _closed(parse_file(schema)._repr_html_())
    assert "(array_schema)" in view and re.search(r"@0 version = 22\b", view)


def test_validate_view_shows_a_broken_array_error(tmp_path):
    src = corpus.root(corpus.CORPUS / V22 / "filter_zstd")
    shutil.copytree(src, tmp_path / "a")
    data = next(p for p in (tmp_path / "a").rglob("a0.tdb"))
    data.write_bytes(data.read_bytes()[:-5])  # shorter than the metadata records
    found = validate(tmp_path / "a")
    assert isinstance(found, Findings) and found
    view = _closed(found._repr_html_())
    assert "file-sizes" in view and f"validate: {sum(f.severity == 'error' for f in found)} errors" in view
    assert _closed(validate(src)._repr_html_()).endswith("validate: no findings</div></div>")
