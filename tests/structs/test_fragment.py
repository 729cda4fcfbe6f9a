"""Fragment metadata (footer, sections, v1-2 legacy) and consolidated .meta files against the corpus."""

from __future__ import annotations

import json
import shutil
import struct
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from construct import Container

from common import common, same
from corpus import CORPUS, HISTORIC, case_id, cases, key, root, truth
from tdbformat.array import open_array
from tdbformat.enums import Datatype
from tdbformat.errors import FormatError
from tdbformat.filters import unfilter
from tdbformat.structs.array_schema import ArraySchema, attributes, dimensions
from tdbformat.structs.fragment import (
    SECTIONS, ConsolidatedFragmentMetadata, Footer, FragmentMetadata, data_files, find_footer, read_section,
)
from tdbformat.structs.names import parse_timestamped_name
from tdbformat.structs.tile import Tile, tile_nbytes


def _array_dir(fragment: Path) -> Path:
    parent = fragment.parent
    return parent.parent if parent.name in ("__fragments", "__fragment_meta") else parent


@lru_cache(maxsize=None)
def _schemas(array: Path, k):
    """Every schema of an array by file name (``__array_schema.tdb`` before v10); one schema alone as itself."""
    files = [p for p in sorted((array / "__schema").glob("__*")) if p.is_file()]
    files += [array / "__array_schema.tdb"] if (array / "__array_schema.tdb").exists() else []
    found = {p.name: ArraySchema.parse(p.read_bytes(), key=k) for p in files}
    return next(iter(found.values())) if len(found) == 1 else found


def _fragments():
    """(case, fragment folder) for every fragment in the corpus, labels arrays included."""
    out = []
    for case in cases():
        for meta in sorted(root(case).rglob("__fragment_metadata.tdb")):
            out.append(pytest.param(case, meta.parent, id=f"{case_id(case)}/{meta.parent.relative_to(root(case))}"))
    return out


FRAGMENTS = _fragments()


@lru_cache(maxsize=None)
def _load(case, folder: Path) -> FragmentMetadata:
    schema = _schemas(_array_dir(folder), key(case))
    return FragmentMetadata.parse((folder / "__fragment_metadata.tdb").read_bytes(), schema=schema,
                                  key=key(case), name=folder.name)


def _truth_fragment(case, folder):
    rel = folder.relative_to(root(case)).as_posix()
    return next((f for f in truth(case).get("fragments", []) if f["uri"] == rel), None)


def _plain(value):
    return value.decode() if isinstance(value, bytes) else value.item() if hasattr(value, "item") else value


def _ned(fm):
    return [[_plain(r.start), _plain(r.end)] if isinstance(r, Container) else [_plain(v) for v in r]
            for r in fm.non_empty_domain]


def test_every_version_is_covered():
    versions = {_load(c, f).version for c, f in (p.values for p in FRAGMENTS)}
    assert versions == set(range(1, 24))


@pytest.mark.parametrize("case, folder", FRAGMENTS)
def test_fragment_matches_truth_and_disk(case, folder):
    fm = _load(case, folder)
    expected = _truth_fragment(case, folder)
    name = parse_timestamped_name(folder.name)
    if expected is not None:
        assert fm.version == expected["version"]
        assert [name.t1, name.t2] == expected["timestamp_range"]
        if "dense" in expected:
            assert fm.dense == expected["dense"]
            assert _ned(fm) == expected["nonempty_domain"]
            assert fm.cell_num == expected["cell_num"]
    if name.version is not None:
        assert name.version == fm.version
    summary = json.loads(json.dumps(fm.summary()))
    assert (summary["version"], summary["cell_num"]) == (fm.version, fm.cell_num)

    _check_files(fm, folder)


def _check_files(fm, folder):
    """Every file size in the metadata is the size on disk, and every tile offset starts a tile in it."""
    tile_lists = [fm.tile_offsets, fm.tile_var_offsets, fm.tile_validity_offsets]
    sizes = [fm.file_sizes, fm.file_var_sizes, fm.file_validity_sizes]
    for index in range(len(fm.file_sizes)):
        for file, offsets, file_sizes in zip(data_files(fm, index), tile_lists, sizes):
            if file_sizes is None or index >= len(file_sizes):
                continue
            path = folder / file
            size = path.stat().st_size if path.exists() else 0
            assert file_sizes[index] == size, file
            _check_tiles(path, offsets[index], size)


def _check_tiles(path, offsets, size):
    """Each offset starts a tile that ends where the next one (or the file) starts; no file, all zeros."""
    if size == 0:
        assert not np.any(offsets)
        return
    data = path.read_bytes()
    ends = list(offsets[1:]) + [size]
    for start, end in zip(offsets, ends):
        assert 0 <= start < end <= size
        assert start + tile_nbytes(Tile.parse(data[start:end])) == end


@pytest.mark.parametrize("case, folder", FRAGMENTS)
def test_read_section_gives_what_the_declaration_parses(case, folder):
    """Reads take sections through read_generic_tile (no construct containers of the tile): every section of
    every v3+ fragment gives the value the declaration parses, and once that is parsed, that same value."""
    _load.cache_clear()  # fresh metadata: the cached one has parsed its sections through the declaration
    fast, full = _load(case, folder), FragmentMetadata.parse(
        (folder / "__fragment_metadata.tdb").read_bytes(), schema=_load(case, folder).schema, key=key(case),
        name=folder.name)
    _load.cache_clear()
    if fast.legacy is not None:
        pytest.skip("v1-2 metadata is one generic tile, parsed whole")
    for slot in SECTIONS:
        for i in range(len(slot.offsets(fast.footer) or ())):
            declared = slot.value(full._payload(slot, i))
            assert same(read_section(fast, slot.name, i), declared), (slot.name, i)
            again = read_section(full, slot.name, i)  # (a list is made anew from the parsed value each time)
            assert same(again, declared) and (again is declared or isinstance(declared, list))


@pytest.mark.parametrize("case, folder", FRAGMENTS)
def test_build_is_byte_exact(case, folder):
    data = (folder / "__fragment_metadata.tdb").read_bytes()
    assert _load(case, folder).build() == data


@pytest.mark.parametrize("case, folder", FRAGMENTS)
def test_footer_from_blob_and_from_file(case, folder):
    fm = _load(case, folder)
    if fm.legacy is not None:
        return
    data = (folder / "__fragment_metadata.tdb").read_bytes()
    schema = fm.schema
    whole = Footer.parse(data, schema=schema)  # no name: the version is found from the footer itself
    offset, size, _ = find_footer(data, schema)
    assert Footer.build(whole, schema=schema) == data[offset:offset + size]
    assert Footer.parse(data[offset:offset + size], schema=schema).version == fm.version


@pytest.mark.parametrize("case, folder", FRAGMENTS)
def test_footer_parse_build_sizeof(case, folder):
    """The parse/build/sizeof triple on every footer: v3-9 footers of fixed dimensions have a static size,
    the one TileDB reads them by (§12.1), and it is the footer's length on disk; later ones (a schema
    name) and var dimensions have none."""
    fm = _load(case, folder)
    if fm.legacy is not None:
        return
    data = (folder / "__fragment_metadata.tdb").read_bytes()
    offset, size, stored = find_footer(data, fm.schema)
    static = not stored and fm.version <= 9
    common(Footer, data[offset:offset + size], fm.footer, size if static else None, schema=fm.schema,
           version=fm.version)


def _decoded_coords(fm, folder, tile: int):
    """Per dimension, the coordinates of sparse tile ``tile``: numpy values, or a list of bytes (var)."""
    schema, k, out = fm.schema, fm.key, []
    dims = dimensions(schema)
    encrypted = k is not None
    if fm.version < 5:  # one __coords file, every dimension unzipped per tile (v2+)
        a = len(attributes(schema))
        path, dtype = folder / "__coords.tdb", dims[0].datatype
        raw = _tile_bytes(path, fm.tile_offsets[a], fm.file_sizes[a], tile, schema.coords_filters, dtype,
                          fm.version, dtype.size * len(dims), k, encrypted)
        values = np.frombuffer(raw, dtype.numpy_dtype)
        return list(values.reshape(len(dims), -1))
    a = len(attributes(schema))
    for j, d in enumerate(dims):
        index = a + 1 + j
        fixed, var, _ = data_files(fm, index)
        if not d.var:
            raw = _tile_bytes(folder / fixed, fm.tile_offsets[index], fm.file_sizes[index], tile, d.filters,
                              d.datatype, fm.version, d.datatype.size, k, encrypted)
            out.append(np.frombuffer(raw, d.datatype.numpy_dtype))
            continue
        offsets = np.frombuffer(_tile_bytes(folder / fixed, fm.tile_offsets[index], fm.file_sizes[index], tile,
                                            schema.cell_var_offsets_filters, Datatype.UINT64, fm.version, 8, k,
                                            encrypted), "<u8")
        values = _tile_bytes(folder / var, fm.tile_var_offsets[index], fm.file_var_sizes[index], tile, d.filters,
                             d.datatype, fm.version, 1, k, encrypted)
        bounds = list(offsets) + [len(values)]
        out.append([values[s:e] for s, e in zip(bounds, bounds[1:])])
    return out


def _tile_bytes(path, offsets, file_size, tile, pipeline, datatype, version, cell_size, k, encrypted):
    data = path.read_bytes()
    end = offsets[tile + 1] if tile + 1 < len(offsets) else file_size
    return bytes(unfilter(Tile.parse(data[offsets[tile]:end]), pipeline, datatype=datatype, version=version,
                          cell_size=cell_size, key=k, encrypted=encrypted))


def _ranges(mbr, dims):
    """``[(lo, hi)]`` per dimension of one MBR (a structured numpy record or an NDRectangle)."""
    if isinstance(mbr, np.void):
        return [tuple(mbr[d.name]) for d in dims]
    return [(r.start, r.end) if isinstance(r, Container) else tuple(r) for r in mbr]


SPARSE = [p for p in FRAGMENTS if not p.values[0].name.startswith(("dense", "filter", "fill", "encrypted"))
          or "sparse" in p.values[0].name]


@pytest.mark.parametrize("case, folder", SPARSE)
def test_rtree_contains_coordinates(case, folder):
    fm = _load(case, folder)
    if fm.dense or fm.legacy is not None:
        return
    dims = dimensions(fm.schema)
    levels = fm.rtree.levels
    assert len(levels[-1].mbrs) == fm.footer.sparse_tile_num
    for leaf, mbr in enumerate(levels[-1].mbrs):
        for (lo, hi), coords in zip(_ranges(mbr, dims), _decoded_coords(fm, folder, leaf)):
            assert all(lo <= c <= hi for c in coords), (leaf, lo, hi)
    fanout = fm.rtree.fanout
    for parent_level, child_level in zip(levels, levels[1:]):
        for k, child in enumerate(child_level.mbrs):
            parent = _ranges(parent_level.mbrs[k // fanout], dims)
            for (plo, phi), (clo, chi) in zip(parent, _ranges(child, dims)):
                assert plo <= clo and chi <= phi


def _meta_files():
    return [pytest.param(case, m, id=f"{case_id(case)}/{m.name}") for case in cases()
            for m in sorted(root(case).rglob("*.meta"))]


@pytest.mark.parametrize("case, path", _meta_files())
def test_consolidated_meta(case, path):
    schema = _schemas(_array_dir(path), key(case))
    data = path.read_bytes()
    meta = ConsolidatedFragmentMetadata.parse(data, schema=schema, key=key(case))
    assert ConsolidatedFragmentMetadata.build(meta, schema=schema, key=key(case)) == data
    for entry, footer in zip(meta.fragments, meta.footers):
        folder = _array_dir(path) / ("__fragments" if (_array_dir(path) / "__fragments").exists() else "")
        fm = _load(case, folder / entry.name.rstrip("/").rsplit("/", 1)[-1])
        assert Footer.build(footer, schema=schema) == Footer.build(fm.footer, schema=schema)


V23_SPARSE = sorted(CORPUS.glob("v23_*/sparse_2d_rtree/array/__fragments/*"))


def _v23():
    folder = V23_SPARSE[0]
    case = folder.parents[2]
    return case, folder, _load(case, folder)


def test_v23_global_order_bounds():
    case, folder, fm = _v23()
    (section,) = fm.footer.optional_sections
    assert section.identifier == 0 and section.data_size == 2 * 2 * 8
    mins, maxes = fm.tile_global_order_mins, fm.tile_global_order_maxes
    dims = dimensions(fm.schema)
    for j, d in enumerate(dims):
        assert len(mins[j].fixed) == len(maxes[j].fixed) == fm.footer.sparse_tile_num
    # the first and last coordinate of each tile in global order
    for tile in range(fm.footer.sparse_tile_num):
        coords = _decoded_coords(fm, folder, tile)
        for j in range(len(dims)):
            assert mins[j].fixed[tile] == coords[j][0] and maxes[j].fixed[tile] == coords[j][-1]


def test_v23_unknown_optional_section_round_trips():
    case, folder, fm = _v23()
    footer = Container(fm.footer)
    footer.optional_sections = list(footer.optional_sections) + [Container(identifier=0xDEADBEEF, data=b"\1\2\3")]
    built = FragmentMetadata(footer, schema=fm.schema, key=fm.key, data=fm._data).build()
    again = FragmentMetadata.parse(built, schema=fm.schema, name=folder.name)
    unknown = again.footer.optional_sections[1]
    assert (unknown.identifier, unknown.data_size, unknown.data) == (0xDEADBEEF, 3, b"\1\2\3")
    # the footer grew by u64 identifier + u32 size + 3 bytes, nothing else moved
    assert len(built) == len(fm.build()) + 15
    assert [list(a) for a in again.tile_offsets] == [list(a) for a in fm.tile_offsets]
    assert again.build() == built


def test_build_from_values():
    case, folder, fm = _v23()
    sections = dict(rtree=fm.rtree, processed_conditions=["__commits/x.del"])
    for name in ("tile_offsets", "tile_var_offsets", "tile_var_sizes", "tile_validity_offsets", "tile_mins",
                 "tile_maxes", "tile_global_order_mins", "tile_global_order_maxes", "tile_sums",
                 "tile_null_counts"):
        sections[name] = [np.array(v) if isinstance(v, np.ndarray) else Container(fixed=v.fixed, var=v.var)
                          for v in getattr(fm, name)]
    sections["fragment_summary"] = [Container(min=f.min, max=f.max, sum=f.sum, null_count=f.null_count)
                                    for f in fm.fragment_summary]
    built = FragmentMetadata(Container(fm.footer), schema=fm.schema, **sections).build()
    again = FragmentMetadata.parse(built, schema=fm.schema)
    assert again.processed_conditions == ["__commits/x.del"]
    assert [list(a) for a in again.tile_offsets] == [list(a) for a in fm.tile_offsets]
    assert list(again.tile_global_order_maxes[0].fixed) == list(fm.tile_global_order_maxes[0].fixed)
    assert again.non_empty_domain[0].tolist() == fm.non_empty_domain[0].tolist()


def test_sections_load_lazily():
    case, folder, fm = _v23()
    data = bytearray((folder / "__fragment_metadata.tdb").read_bytes())
    offset = int(fm.footer.tile_offsets_offsets[0])
    data[offset + 4:offset + 12] = struct.pack("<Q", 2**40)  # the first offsets tile claims a terabyte
    broken = FragmentMetadata.parse(bytes(data), schema=fm.schema)
    assert broken.footer.sparse_tile_num == fm.footer.sparse_tile_num  # the footer alone parses
    assert list(broken.tile_offsets[1]) == list(fm.tile_offsets[1])
    with pytest.raises(FormatError):
        broken.tile_offsets[0]


def test_footer_needs_schema():
    case, folder, fm = _v23()
    with pytest.raises(FormatError, match="without its array schema: pass schema="):
        Footer.parse((folder / "__fragment_metadata.tdb").read_bytes())


def test_truncated_footer_is_an_error():
    case, folder, fm = _v23()
    data = (folder / "__fragment_metadata.tdb").read_bytes()
    offset, size, _ = find_footer(data, fm.schema)
    with pytest.raises(FormatError):
        Footer.parse(data[offset:offset + size - 3], schema=fm.schema)


def test_footer_size_without_footer_length_v3_to_v9():
    """v3-9 files with fixed dimensions store no footer length: it is computed from the schema (§12.1)."""
    for version in (3, 4, 5, 6, 7, 8, 9):
        folder = sorted(CORPUS.glob(f"v{version}_*/filter_*/array/__*_*/__fragment_metadata.tdb"))[0].parent
        data = (folder / "__fragment_metadata.tdb").read_bytes()
        schema = _schemas(folder.parent, None)
        offset, size, stored = find_footer(data, schema)
        assert not stored and offset + size == len(data)
        assert struct.unpack_from("<I", data, offset)[0] == version


def test_historic_arrays():
    v1 = HISTORIC / "arrays" / "non_split_coords_v1_4_0"
    folder = next(p for p in v1.iterdir() if (p / "__fragment_metadata.tdb").exists())
    fm = FragmentMetadata.parse((folder / "__fragment_metadata.tdb").read_bytes(), schema=_schemas(v1, None))
    assert fm.version == 1 and not fm.dense
    assert fm.build() == (folder / "__fragment_metadata.tdb").read_bytes()
    _check_files(fm, folder)
    v10 = HISTORIC / "arrays" / "zero_var_chunks_v10"
    folder = next(p for p in v10.iterdir() if (p / "__fragment_metadata.tdb").exists())
    fm = FragmentMetadata.parse((folder / "__fragment_metadata.tdb").read_bytes(), schema=_schemas(v10, None))
    assert fm.version == 10 and fm.build() == (folder / "__fragment_metadata.tdb").read_bytes()
    _check_files(fm, folder)


def test_v11_footer_of_a_back_compat_writer(tmp_path):
    """TileDB >= 2.8 appending to a v11 array writes v11 fragments whose footer also carries the (zero)
    fragment-summary offset of v12 (REFERENCE §17 #6): made here from a 2.7 fragment, it parses, rebuilds
    byte for byte, and the array reads as before."""
    case = next(c for c in cases() if c.parent.name.startswith("v11_") and c.name == "sparse_2d_rtree")
    array = tmp_path / "a"
    shutil.copytree(root(case), array)
    before = open_array(array).read()
    path = open_array(array).fragments[0].path / "__fragment_metadata.tdb"
    data = path.read_bytes()
    (size,) = struct.unpack_from("<Q", data, len(data) - 8)
    patched = data[:-8] + bytes(8) + struct.pack("<Q", size + 8)
    path.write_bytes(patched)
    schema = _schemas(array, None)
    assert FragmentMetadata.parse(data, schema=schema).footer.backcompat_fragment_summary_offset is None
    fm = FragmentMetadata.parse(patched, schema=schema)
    assert fm.footer.backcompat_fragment_summary_offset == 0
    assert fm.build() == patched
    after = open_array(array).read()
    assert {k: v.tolist() for k, v in after.items()} == {k: v.tolist() for k, v in before.items()}


_HEADER_LIES = {  # a generic tile header byte range -> what is written there
    "datatype": (20, 21, b"\xc8"), "encryption_type": (29, 30, b"\x09"), "persisted_size": (4, 12, b"\xff" * 8),
    "filter_pipeline_size": (30, 34, b"\x00\x10\x00\x00"), "tile_size": (12, 20, b"\x01" + b"\x00" * 7),
    "pipeline": (34, 40, b"\xee" * 6), "num_chunks": (None, None, b"\xff" * 8),
}


@pytest.mark.parametrize("lie", list(_HEADER_LIES))
@pytest.mark.parametrize("section", ["rtree", "tile_offsets"])
def test_a_lying_section_header_is_a_format_error_on_reads_as_on_parses(lie, section):
    """read_section's own header parse refuses what the declaration refuses, and says where."""
    case, folder = next(p.values for p in SPARSE if "v22_" in str(p.values[0]))
    fm = _load(case, folder)
    start = SECTIONS[[s.name for s in SECTIONS].index(section)].offsets(fm.footer)[0]
    data = bytearray((folder / "__fragment_metadata.tdb").read_bytes())
    lo, hi, value = _HEADER_LIES[lie]
    if lo is None:  # the chunk count, just after the pipeline
        lo = start + 34 + struct.unpack_from("<I", data, start + 30)[0]
        hi = lo + 8
    else:
        lo, hi = start + lo, start + hi
    data[lo:hi] = value
    def error(read):
        try:
            read(FragmentMetadata.parse(bytes(data), schema=fm.schema, key=key(case), name=folder.name))
        except FormatError as e:
            return e
        return None

    fast = error(lambda m: read_section(m, section, 0))
    declared = error(lambda m: getattr(m, section) if section == "rtree" else getattr(m, section)[0])
    assert fast is not None and declared is not None
    assert fast.within is not None or start <= fast.offset < len(data), fast
    if lie in ("datatype", "encryption_type"):
        assert fast.path == lie and fast.offset == lo, fast
