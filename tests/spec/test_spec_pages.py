"""The generated spec pages can stand in for TileDB's format_spec/: no internal names or unexplained
``computed`` in them, and from v3 the fragment metadata file's layout and footer lookup, checked against
TileDB's writer order and against the corpus bytes."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest

from corpus import CORPUS, key
from tdbformat.layout.files import parse_file
from tdbformat.structs.footer import find_footer
from tdbformat.spec import KNOWN_VERSIONS, fields, metadata_file_layout, structures
from tdbformat.spec.render import spec_markdown

# A construct's class name (<TypedValues>), a private helper (_n), an untranslated dtype or condition.
_INTERNAL = re.compile(r"<\w+>|numpy by context|\bcomputed\b|(?<![\w.])_[a-z]\w*")


@pytest.mark.parametrize("version", KNOWN_VERSIONS)
def test_no_internal_names_on_the_page(version):
    leaks = [f"{title}: {f.path}: {col}" for title, s in structures().items() for f in fields(s, version)
             for col in (f.type, f.size, f.condition) if _INTERNAL.search(col)]
    leaks += [f"layout: {p}" for p in metadata_file_layout(version)
              if _INTERNAL.search(" ".join((p.name, p.what, p.count, p.where)))]
    assert not leaks


@pytest.mark.parametrize("version", KNOWN_VERSIONS)
def test_every_page_from_v3_has_the_layout_and_the_footer_lookup(version):
    page = spec_markdown(version)
    has = "## Fragment metadata file layout" in page and "### Footer length and footer lookup" in page
    assert has == (version >= 3)
    if version >= 10:  # REFERENCE §12.1: the footer length is always there from v10
        assert "Always: the file's last 8 bytes are the footer length" in page
    elif version >= 5:  # only with var-sized dimensions
        assert "When a dimension is var-sized: the file's last 8 bytes are the footer length" in page
    elif version >= 3:
        assert "Always: no footer length is stored" in page


# TileDB's FragmentMetadata::store_v15_or_higher, in its order (tiledb/sm/fragment/fragment_metadata.cc)
_WRITER_ORDER_V23 = ["rtree", "tile_offsets", "tile_var_offsets", "tile_var_sizes", "tile_validity_offsets",
                     "tile_mins", "tile_maxes", "tile_global_order_mins", "tile_global_order_maxes", "tile_sums",
                     "tile_null_counts", "fragment_summary", "processed_conditions", "footer", "footer length"]


def test_the_v23_layout_is_the_writers_order():
    assert [p.name for p in metadata_file_layout(23)] == _WRITER_ORDER_V23
    assert [p.name for p in metadata_file_layout(4)] == ["rtree", "tile_offsets", "tile_var_offsets",
                                                         "tile_var_sizes", "footer"]


def _metadata_files():
    return sorted(p for p in CORPUS.glob("v*/*/array/**/__fragment_metadata.tdb")
                  if not p.relative_to(CORPUS).parts[0].startswith(("v1_", "v2_")))


def _tiles(data, end):
    """Where each generic tile starts, walking their headers (persisted size at +4, pipeline size at +30)."""
    starts, at = [], 0
    while at < end:
        starts.append(at)
        at += 34 + struct.unpack_from("<I", data, at + 30)[0] + struct.unpack_from("<Q", data, at + 4)[0]
    assert at == end
    return starts


def _offsets(footer, field: str) -> list[int]:
    """The offsets a footer field holds (inside the tile global-order optional section for its fields)."""
    *section, name = field.split(".")
    holders = [s.data for s in footer.get("optional_sections") or ()] if section else [footer]
    return [int(o) for h in holders if name in h for o in np.atleast_1d(h[name])]


@pytest.mark.parametrize("path", _metadata_files(), ids=lambda p: "/".join(p.relative_to(CORPUS).parts[:2]))
def test_the_layout_is_what_the_bytes_show(path):
    """The generic tiles sit back to back in the layout's order from byte 0, then the footer, then (where the
    layout has one) the footer length: the footer ends 8 bytes before the end of the file, or at it."""
    case = CORPUS.joinpath(*path.relative_to(CORPUS).parts[:2])
    fm = parse_file(path, key=key(case)).value
    data = path.read_bytes()
    parts = metadata_file_layout(fm.version)
    offset, size, stored = find_footer(data, fm.schema, name=path.parent.name)
    assert stored == (parts[-1].name == "footer length" and (fm.version >= 10 or any(d.var for d in fm.dimensions)))
    assert offset + size + 8 * stored == len(data)
    order = sorted((o, i) for i, p in enumerate(parts) if p.offsets_in for o in _offsets(fm.footer, p.offsets_in))
    unreferenced = [p for p in parts if p.name != "footer" and not p.offsets_in and p.name != "footer length"]
    tiles = _tiles(data, offset)
    assert [o for o, _ in order] == tiles[:len(tiles) - len(unreferenced)]
    assert [i for _, i in order] == sorted(i for _, i in order)
