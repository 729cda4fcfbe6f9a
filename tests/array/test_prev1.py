"""Arrays from before format version 1: the 0.x and 1.x dialects (issue #20; spec: shared/spec/prev1.md).

The corpus arrays (tests/data/prev1, written by TileDB 0.6.1, 1.2.2 and 1.3.0) read as their truth.json
says and every file rebuilds byte for byte. Options the corpus lacks (column-major orders, capacity 3, the
other blosc codecs, lz4/rle/bzip2 in 1.2, more fragments, compressed 0.x coordinates...) are written here by
a small writer that follows prev1.md's layouts with the codec libraries directly, and read back against
values computed from the cells written, not from our reader.
"""

from __future__ import annotations

import bz2
import itertools
import json
import shutil
import zlib
from pathlib import Path

import lz4.block
import numpy as np
import pytest
import zstandard
from construct import Container, ListContainer

from tdbformat import FormatError, open_array, parse_file
from tdbformat.errors import UnsupportedError
from tdbformat.enums import ArrayType, LegacyCompressor as C, LegacyDatatype as T
from tdbformat.layout.files import inspect_path
from tdbformat.storage import storage_for
from tdbformat import layout as directory
from tdbformat.structs.prev1_0x import ArraySchema0x, BookKeeping0x
from tdbformat.structs.prev1_1x import ArraySchema1x, FragmentMetadata1x

PREV1 = Path(__file__).parents[1] / "data" / "prev1"
TRUTH = json.loads((PREV1 / "truth.json").read_text())
ARRAYS = sorted(TRUTH["arrays"])


# --- the corpus -------------------------------------------------------------------------------------------

def _expected(name: str) -> dict:
    """{(d1, d2): {attr: value}} of a corpus array, from truth.json (later writes overwrite earlier ones)."""
    entry = TRUTH["arrays"][name]
    if "writes_in_fragment_order" not in entry:  # TileDB's 1.3.0 test array: a = 1..16 row-major
        return {(i // 4 + 1, i % 4 + 1): {"a": i + 1} for i in range(16)}
    cells = {}
    for write in entry["writes_in_fragment_order"]:
        coords = write.get("coords") or TRUTH["dense_cells_in_write_order"]
        for k, xy in enumerate(coords):
            cells[tuple(xy)] = {a: write[a][k] for a in ("a1", "a2", "a3")}
    return cells


def _check(value, want, attr):
    if attr == "a2":
        assert value == want.encode()
    elif attr == "a3":  # two float32 a cell: a complex64, as TileDB-Py gives them (docs/reading-values.md)
        assert np.iscomplexobj(value) and np.allclose([value.real, value.imag], want, atol=1e-6)
    else:
        assert value == want


@pytest.mark.parametrize("name", ARRAYS)
def test_corpus_arrays_read_as_truth_says(name):
    arr = open_array(PREV1 / name)
    cells = _expected(name)
    if arr.schema.array_type == ArrayType.DENSE:
        out = arr.read()
        for (d1, d2), values in cells.items():
            for attr, want in values.items():
                _check(out[attr][d1 - 1, d2 - 1], want, attr)
        return
    out = arr.read(order="C")
    assert [(int(a), int(b)) for a, b in zip(out["d1"], out["d2"])] == sorted(cells)
    for k, xy in enumerate(sorted(cells)):
        for attr, want in cells[xy].items():
            _check(out[attr][k], want, attr)


def test_sparse_default_order_is_global_order():
    out = open_array(PREV1 / "tiledb-0.6.1/my_workspace/sparse_arrays/sparse_two_fragments").read()
    cells = sorted(_expected("tiledb-0.6.1/my_workspace/sparse_arrays/sparse_two_fragments"),
                   key=lambda c: ((c[0] - 1) // 2, (c[1] - 1) // 2, c))  # 2x2 tiles, row-major both
    assert list(zip(out["d1"].tolist(), out["d2"].tolist())) == cells
    assert out["a1"].tolist() == [0, 1, 2, 3, 4, 104, 105, 5, 106, 107]  # the unsorted write, sorted and merged


@pytest.mark.parametrize("name", ARRAYS)
def test_every_corpus_file_parses_and_rebuilds_byte_for_byte(name):
    for parsed in inspect_path(PREV1 / name):
        assert parsed.build() == parsed.path.read_bytes(), parsed.path


def test_every_file_of_these_eras_is_labelled():
    kinds = {}
    for era in ("tiledb-0.6.1", "tiledb-1.2.2", "tiledb-1.3.0_upstream-test-input"):
        for parsed in inspect_path(PREV1 / era):
            kinds.setdefault(era, set()).add(parsed.kind)
    assert kinds["tiledb-0.6.1"] == {"workspace_marker", "group_marker", "consolidation_lock", "array_schema_0x",
                                     "book_keeping_0x", "fragment_marker", "data_0x"}
    assert kinds["tiledb-1.2.2"] == kinds["tiledb-1.3.0_upstream-test-input"] == {
        "lock", "array_schema_1x", "fragment_metadata_1x", "data_1x"}


def test_versions_report_the_dialect():
    assert open_array(PREV1 / ARRAYS[0]).version == "0.x"
    assert open_array(PREV1 / "tiledb-1.2.2/my_dense_array").version == "1.2"
    assert open_array(PREV1 / "tiledb-1.3.0_upstream-test-input/dense_array_v1_3_0").version == "1.3"
    schema = parse_file(PREV1 / "tiledb-1.2.2/my_sparse_array/__array_schema.tdb").value
    assert schema.version == (1, 2, 2) and schema.attributes[0].compressor == C.BLOSC  # bytes 12.., §3.2


def test_a_data_file_opened_alone_names_its_dialect(tmp_path):
    frag = next((PREV1 / "tiledb-1.2.2/my_sparse_array").glob("__1*"))
    assert parse_file(frag / "__coords.tdb").kind == "data_1x"
    old = next((PREV1 / "tiledb-0.6.1/my_workspace/sparse_arrays/my_array_B").glob("__0*"))
    assert parse_file(old / "a1.tdb").kind == "data_0x"
    # a cut data file fails in its dialect's structure, not in the v1 tile parser
    dst = _copy(tmp_path, "tiledb-1.2.2/my_sparse_array")
    coords = next(dst.glob("__1*/__coords.tdb"))
    coords.write_bytes(coords.read_bytes()[:100])
    with pytest.raises(FormatError, match=r"Data file \(1\.x\)"):
        parse_file(coords)


def test_a_0x_schema_with_a_short_path_is_0x(tmp_path):
    """A path of 23 characters or fewer makes the first u32 look like a format version (here 2)."""
    src = PREV1 / "tiledb-0.6.1/my_workspace/sparse_arrays/sparse_nocomp"
    dst = tmp_path / "a"
    shutil.copytree(src, dst)
    schema = ArraySchema0x.parse((src / "__array_schema.tdb").read_bytes())
    schema.array_name = "/a"
    data = ArraySchema0x.build(schema)
    assert int.from_bytes(data[:4], "little") == 2
    (dst / "__array_schema.tdb").write_bytes(data)
    (dst / ".__consolidation_lock").unlink()  # by structure alone, not by the 0.x lock file
    storage, root = storage_for(dst)
    assert directory.dialect(storage, root) == "0.x"
    assert parse_file(dst / "__array_schema.tdb").kind == "array_schema_0x"
    assert open_array(dst).read(order="C")["a1"].tolist() == [0, 1, 2, 3, 4, 6, 7, 5]


def test_cat_prints_a_legacy_array(capsys):
    from tdbformat.cli import main
    assert main(["cat", str(PREV1 / "tiledb-1.2.2/my_sparse_array"), "--order", "C"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split("\t") == ["d1", "d2", "a1", "a2", "a3"]
    assert rows[3].split("\t")[:4] == ["1", "4", "2", "ccc"]


# --- hostile input ----------------------------------------------------------------------------------------

def _copy(tmp_path, name):
    dst = tmp_path / "arr"
    shutil.copytree(PREV1 / name, dst)
    for p in dst.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def test_a_lying_tile_offset_is_a_format_error(tmp_path):
    dst = _copy(tmp_path, "tiledb-1.2.2/my_sparse_array")
    meta = next(dst.glob("__1*/__fragment_metadata.tdb"))
    storage, root = storage_for(dst)
    schema = directory.load_legacy_schema(storage, root)
    fm = FragmentMetadata1x.parse(meta.read_bytes(), schema=schema, version=schema.version)
    fm.tile_offsets[0].data = np.array([0, 48, 96, 9999], "<u8")
    del fm["_generic_tile"]  # a fresh tile (GZIP): tdbformat does not write blosc
    meta.write_bytes(FragmentMetadata1x.build(fm, schema=schema, version=schema.version))
    with pytest.raises(FormatError, match="tile offsets"):
        open_array(dst).read()


@pytest.mark.parametrize("extent", [0, -5, -2**63 + 2])
@pytest.mark.parametrize("order", ["G", "C", "U"])
def test_a_tile_extent_not_positive_is_a_format_error(tmp_path, extent, order):
    """A 0.x sparse schema whose tile extent is not positive (fuzz campaign 20261160 case 19821: a bit flip
    made it -2**63 + 2, which the global order's tile index could not take as a uint64) is refused by a read
    in any order, as the modern reader's tile grid refuses it (a dense legacy read already did)."""
    dst = _copy(tmp_path, "tiledb-0.6.1/my_workspace/sparse_arrays/sparse_nocomp")
    schema = ArraySchema0x.parse((dst / "__array_schema.tdb").read_bytes())
    assert len(schema.tile_extents) == 16  # two int64 dimensions
    schema.tile_extents = np.array([extent, 2], "<i8").tobytes()
    (dst / "__array_schema.tdb").write_bytes(ArraySchema0x.build(schema))
    with pytest.raises(FormatError, match="tile extent must be positive"):
        open_array(dst).read(order=order)


def test_a_truncated_book_keeping_is_a_format_error(tmp_path):
    dst = _copy(tmp_path, "tiledb-0.6.1/my_workspace/sparse_arrays/my_array_B")
    bk = next(dst.glob("__0*/__book_keeping.tdb.gz"))
    bk.write_bytes(bk.read_bytes()[:-12])
    with pytest.raises(FormatError):
        open_array(dst)


def test_blosc_without_the_extra_names_the_extra(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_blosc(name, *args, **kw):
        if name == "blosc2":
            raise ImportError(name)
        return real(name, *args, **kw)
    monkeypatch.setattr(builtins, "__import__", no_blosc)
    with pytest.raises(UnsupportedError, match=r"extra 'blosc'"):
        open_array(PREV1 / "tiledb-1.2.2/my_sparse_array").read()


# --- arrays the corpus lacks, written from the layouts ----------------------------------------------------

blosc = pytest.importorskip("blosc")  # python-blosc writes real blosc1 frames (the reader uses blosc2)

_BLOSC = {C.BLOSC: "blosclz", C.BLOSC_LZ4: "lz4", C.BLOSC_LZ4HC: "lz4hc", C.BLOSC_ZLIB: "zlib", C.BLOSC_ZSTD: "zstd"}


def _rle(raw: bytes, size: int) -> bytes:
    """Runs of (value, u16 big-endian length), written naively."""
    out, values = bytearray(), [raw[i:i + size] for i in range(0, len(raw), size)]
    for value, group in itertools.groupby(values):
        n = len(list(group))
        while n:
            step = min(n, 65535)
            out += value + step.to_bytes(2, "big")
            n -= step
    return bytes(out)


def _double_delta(raw: bytes, dtype: str) -> bytes:
    """dd_compressor.cc: bitsize, count, the first two values, then sign + magnitude bits MSB first in LE u64s."""
    x = [int(v) for v in np.frombuffer(raw, dtype)]
    dd = [(x[i] - x[i - 1]) - (x[i - 1] - x[i - 2]) for i in range(2, len(x))]
    bitsize = max(abs(d) for d in dd).bit_length() or 1 if dd else 0
    head = bytes([bitsize]) + len(x).to_bytes(8, "little")
    if len(x) <= 2 or bitsize >= 8 * np.dtype(dtype).itemsize - 1:
        return head + raw
    bits = "".join(("1" if d < 0 else "0") + format(abs(d), f"0{bitsize}b") for d in dd)
    bits += "0" * (-len(bits) % 64)
    words = [int(bits[i:i + 64], 2) for i in range(0, len(bits), 64)]
    return head + raw[:2 * np.dtype(dtype).itemsize] + np.array(words, "<u8").tobytes()


def _coords_rle(xy: np.ndarray, col_major: bool) -> bytes:
    """0.x RLE of a coordinate tile: the count, runs of every dimension but the last (first if col-major),
    that one plain."""
    runs = b""
    dims = range(1, xy.shape[1]) if col_major else range(xy.shape[1] - 1)
    for j in dims:
        runs += _rle(np.ascontiguousarray(xy[:, j]).tobytes(), 8)
    plain = np.ascontiguousarray(xy[:, 0 if col_major else -1]).tobytes()
    return len(xy).to_bytes(8, "little") + (plain + runs if col_major else runs + plain)


def _compress(c, raw: bytes, typesize: int, rle_size: int, dtype: str = "<i8") -> bytes:
    if c == C.DOUBLE_DELTA:
        return _double_delta(raw, dtype)
    if c == C.NO_COMPRESSION:
        return raw
    if c == C.GZIP:
        return zlib.compress(raw)
    if c == C.ZSTD:
        return zstandard.ZstdCompressor(level=1).compress(raw)
    if c == C.LZ4:
        return lz4.block.compress(raw, store_size=False)
    if c == C.BZIP2:
        return bz2.compress(raw, 9)
    if c == C.RLE:
        return _rle(raw, rle_size)
    return blosc.compress(raw, typesize=typesize, clevel=5, shuffle=blosc.SHUFFLE, cname=_BLOSC[c])


_NP = {T.INT32: "<i4", T.INT64: "<i8", T.FLOAT64: "<f8", T.CHAR: "S1", T.UINT64: "<u8", T.INT16: "<i2"}
# attributes of the written arrays: name, type, values per cell (None: var), value of cell (d1, d2, write w)
ATTRS = [("a1", T.INT32, 1, lambda x, y, w: 100 * x + y + 1000 * w),
         ("a2", T.CHAR, None, lambda x, y, w: f"{x}.{y}/{w}".encode() * (y % 3 + 1)),
         ("a3", T.FLOAT64, 2, lambda x, y, w: (x + 0.5 + w, y + 0.25)),
         ("a4", T.INT16, 1, lambda x, y, w: 7)]  # runs, for RLE


def _global(cells, extents, tile_order, cell_order):
    """Cells sorted in global order: space tiles in tile order, cells in cell order (1-based domain)."""
    def key(c):
        t = [(c[j] - 1) // extents[j] for j in range(2)]
        return (t if tile_order == 0 else t[::-1]) + (list(c) if cell_order == 0 else list(c)[::-1])
    return sorted(cells, key=key)


def _dense_cells(box, extents, tile_order, cell_order):
    """Every cell of a tile-aligned box, in global order."""
    (l1, h1), (l2, h2) = box
    return _global([(x, y) for x in range(l1, h1 + 1) for y in range(l2, h2 + 1)], extents, tile_order, cell_order)


def _cell_bytes(typ, cvn, value) -> bytes:
    return np.array(value if cvn != 1 else [value], _NP[typ]).tobytes()


def _fields(cells, w):
    """Per attribute, the cells' bytes (var attributes: their values)."""
    return {name: [f(x, y, w) if cvn is None else _cell_bytes(typ, cvn, f(x, y, w)) for x, y in cells]
            for name, typ, cvn, f in ATTRS}


def _chunked(blob: bytes, c, typesize, rle_size, dtype, chunk: int) -> bytes:
    """A 1.x compressed tile: u64 chunk count, then per chunk u64 sizes and the chunk compressed alone."""
    parts = [blob[i:i + chunk] for i in range(0, len(blob), chunk)] or [b""]
    out = np.array([len(parts)], "<u8").tobytes()
    for part in parts:
        packed = _compress(c, part, typesize, rle_size, dtype)
        out += np.array([len(part), len(packed)], "<u8").tobytes() + packed
    return out


def _write_fragment(folder: Path, cells, w, comp, coords_comp, tile_cells, dense, x0: bool, offsets_comp,
                    chunk=1 << 30, cell_order=0):
    """The data files of one fragment; returns the metadata lists (tile offsets, var offsets, var sizes)."""
    folder.mkdir()
    tiles = [cells[i:i + tile_cells] for i in range(0, len(cells), tile_cells)]
    values = _fields(cells, w)
    offsets, var_offsets, var_sizes, var_pos = [], [], [], 0
    def put(name, blobs, c, typesize, rle_size, dtype):
        data, offs = b"", []
        for blob in blobs:
            offs.append(len(data))
            if x0 or c == C.NO_COMPRESSION:
                data += _compress(c, blob, typesize, rle_size, dtype)
            else:  # chunks of whole cells
                data += _chunked(blob, c, typesize, rle_size, dtype, chunk - chunk % rle_size)
        (folder / name).write_bytes(data)
        return offs if (c != C.NO_COMPRESSION or not x0) else []
    for (name, typ, cvn, _), c in zip(ATTRS, comp):
        k = 0
        if cvn is None:
            fixed, var = [], []
            for t in tiles:
                cell_offs = []
                for _ in t:
                    cell_offs.append(var_pos)
                    var_pos += len(values[name][k])
                    k += 1
                fixed.append(np.array(cell_offs, "<u8").tobytes())
                var.append(b"".join(values[name][k - len(t):k]))
            size = np.dtype(_NP[typ]).itemsize
            offsets.append(put(f"{name}.tdb", fixed, c if x0 else offsets_comp, 8, size if x0 else 8, "<u8"))
            var_offsets.append(put(f"{name}_var.tdb", var, c, size, size, _NP[typ]))
            var_sizes.append([len(v) for v in var] if (c != C.NO_COMPRESSION or not x0) else [])
        else:
            blobs = [b"".join(values[name][k:k + len(t)]) for k, t in zip(range(0, len(cells), tile_cells), tiles)]
            size = np.dtype(_NP[typ]).itemsize
            offsets.append(put(f"{name}.tdb", blobs, c, size, size * cvn, _NP[typ]))
            var_offsets.append([]), var_sizes.append([])
    if not dense:
        xy = [np.array(t, "<i8") for t in tiles]
        if coords_comp == C.NO_COMPRESSION:
            blobs = [[a.tobytes()] for a in xy]
        elif x0 and coords_comp == C.RLE:  # per-dimension runs (RLE_compress_coords_row/col)
            blobs = [[_coords_rle(a, cell_order == 1)] for a in xy]
        elif x0:  # one block, dimension-major
            blobs = [[a.T.copy().tobytes()] for a in xy]
        else:  # one sub-tile per dimension
            blobs = [[np.ascontiguousarray(a[:, j]).tobytes() for j in range(2)] for a in xy]
        data, offs = b"", []
        for parts in blobs:
            offs.append(len(data))
            for part in parts:
                if x0 and coords_comp == C.RLE:
                    data += part
                elif x0 or coords_comp == C.NO_COMPRESSION:
                    data += _compress(coords_comp, part, 8, 8)
                else:
                    data += _chunked(part, coords_comp, 8, 8, "<i8", chunk - chunk % 8)
        (folder / "__coords.tdb").write_bytes(data)
        offsets.append(offs if (coords_comp != C.NO_COMPRESSION or not x0) else [])
    else:
        offsets.append([])
    return tiles, offsets, var_offsets, var_sizes


def _boxes(tiles):
    mbrs = [v for t in tiles for j in range(2) for v in (min(c[j] for c in t), max(c[j] for c in t))]
    bounds = [v for t in tiles for v in (*t[0], *t[-1])]
    return np.array(mbrs, "<i8"), np.array(bounds, "<i8")


def _write_array(root: Path, *, x0: bool, dense: bool, tile_order: int, cell_order: int, capacity: int,
                 comp, coords_comp, offsets_comp=C.ZSTD, writes, library=(1, 2, 2), chunk=1 << 30):
    """A 0.x (``x0``) or 1.2.2 array of ATTRS over d1 in [1,4], d2 in [1,6] (2x3 space tiles); ``writes``:
    per fragment, a dense tile-aligned box or a list of sparse cells (any order: sorted here, as TileDB)."""
    root.mkdir()
    extents = (2, 3)
    domain = np.array([1, 4, 1, 6], "<i8").tobytes()
    ext = np.array(extents, "<i8").tobytes()
    if x0:
        schema = Container(array_name=str(root), dense=int(dense), tile_order=tile_order, cell_order=cell_order,
                           capacity=capacity, attributes=[Container(name=a[0]) for a in ATTRS],
                           dimensions=[Container(name="d1"), Container(name="d2")], domain=domain, tile_extents=ext,
                           types=[a[1] for a in ATTRS] + [T.INT64],
                           cell_val_num=[a[2] or 2**31 - 1 for a in ATTRS], compression=list(comp) + [coords_comp])
        (root / "__array_schema.tdb").write_bytes(ArraySchema0x.build(schema))
        (root / ".__consolidation_lock").write_bytes(b"")
    else:
        old = library < (1, 2)  # 1.0/1.1: __array_metadata.tdb, no tile extent flag, no fragment version
        schema = Container(version=library, array_type=0 if dense else 1, tile_order=tile_order,
                           cell_order=cell_order, capacity=capacity, coords_compressor=coords_comp,
                           coords_compression_level=-1, offsets_compressor=offsets_comp,
                           offsets_compression_level=-1, domain_type=T.INT64,
                           dimensions=[Container(name=n, domain=domain[16 * j:16 * j + 16],
                                                 null_tile_extent=None if old else 0,
                                                 tile_extent=ext[8 * j:8 * j + 8]) for j, n in enumerate(("d1", "d2"))],
                           attributes=[Container(name=a[0], type=a[1], compressor=c, compression_level=-1,
                                                 cell_val_num=a[2] or 2**32 - 1) for a, c in zip(ATTRS, comp)])
        name = "__array_metadata.tdb" if old else "__array_schema.tdb"
        (root / name).write_bytes(ArraySchema1x.build(schema))
        (root / ("__array_lock.tdb" if old else "__lock.tdb")).write_bytes(b"")
        schema = ArraySchema1x.parse((root / name).read_bytes())
    tile_cells = 6 if dense else capacity
    for w, write in enumerate(writes):
        cells = _dense_cells(write, extents, tile_order, cell_order) if dense else \
            _global(write, extents, tile_order, cell_order)
        folder = root / f"__{'02fc0000000114' if x0 else '1403'}_{1795375189000 + w}"
        tiles, offsets, var_offsets, var_sizes = _write_fragment(folder, cells, w, comp, coords_comp, tile_cells,
                                                                 dense, x0, offsets_comp, chunk, cell_order)
        ned = np.array(write if dense else [(min(c[j] for c in write), max(c[j] for c in write)) for j in range(2)],
                       "<i8").tobytes() if dense or x0 else domain
        if x0 and not dense:
            ned = domain  # 0.x sparse writes record the whole domain (prev1.md §2.2)
        mbrs, bounds = _boxes(tiles) if not dense else (np.empty(0, "<i8"), np.empty(0, "<i8"))
        names = [a[0] for a in ATTRS]
        sizes = [(folder / f"{n}.tdb").stat().st_size for n in names] + [
            (folder / "__coords.tdb").stat().st_size if not dense else 0]
        bare = x0 or library < (1, 2)  # no version, no file sizes
        meta = Container(version=None if bare else library, non_empty_domain=ned, mbrs=Container(data=mbrs),
                         bounding_coords=Container(data=bounds),
                         tile_offsets=ListContainer(Container(data=np.array(o, "<u8")) for o in offsets),
                         tile_var_offsets=ListContainer(Container(data=np.array(o, "<u8")) for o in var_offsets),
                         tile_var_sizes=ListContainer(Container(data=np.array(o, "<u8")) for o in var_sizes),
                         last_tile_cell_num=len(tiles[-1]),
                         file_sizes=None if bare else np.array(sizes, "<u8"),
                         file_var_sizes=None if bare else np.array(
                             [(folder / f"{n}_var.tdb").stat().st_size if (folder / f"{n}_var.tdb").exists() else 0
                              for n in names], "<u8"))
        if x0:
            (folder / "__book_keeping.tdb.gz").write_bytes(BookKeeping0x.build(meta, schema=schema, version=(0,)))
            (folder / "__tiledb_fragment.tdb").write_bytes(b"")
        else:
            (folder / "__fragment_metadata.tdb").write_bytes(
                FragmentMetadata1x.build(meta, schema=schema, version=library))
    return root


def _truth(writes, dense):
    """{(d1, d2): (write index)} after every write, later ones winning."""
    out = {}
    for w, write in enumerate(writes):
        cells = [(x, y) for x in range(write[0][0], write[0][1] + 1) for y in range(write[1][0], write[1][1] + 1)] \
            if dense else write
        out.update({c: w for c in cells})
    return out


def _values(cell) -> list:
    """A cell of several values as a list: two floats come as a complex, as TileDB-Py gives them."""
    return [cell.real, cell.imag] if np.iscomplexobj(cell) else list(cell)


def _assert_cells(arr, writes, dense):
    truth = _truth(writes, dense)
    if dense:
        out = arr.read(order="F")
        for (x, y), w in truth.items():
            for name, typ, cvn, f in ATTRS:
                got = out[name][x - 1, y - 1]
                want = f(x, y, w)
                assert (got == want if cvn is None else np.allclose(_values(got) if cvn > 1 else got, want)), (x, y, name)
        return
    out = arr.read(order="C")
    assert list(zip(out["d1"].tolist(), out["d2"].tolist())) == sorted(truth)
    for k, (x, y) in enumerate(sorted(truth)):
        for name, typ, cvn, f in ATTRS:
            want, got = f(x, y, truth[x, y]), out[name][k]
            assert (got == want if cvn is None else np.allclose(_values(got) if cvn > 1 else got, want)), (x, y, name)


SPARSE_WRITES = [[(1, 1), (1, 2), (2, 6), (3, 3), (4, 4), (4, 1), (2, 2)],
                 [(4, 4), (1, 6), (3, 3), (2, 5)],  # unsorted, overwriting two cells
                 [(1, 2), (4, 6)]]
DENSE_WRITES = [((1, 4), (1, 6)), ((3, 4), (4, 6))]  # the whole domain, then one tile over it

CASES = [
    # (x0, dense, tile_order, cell_order, capacity, attribute compressors, coordinates compressor)
    (False, True, 1, 1, 10000, (C.LZ4, C.RLE, C.BZIP2, C.RLE), C.NO_COMPRESSION),
    (False, True, 0, 1, 10000, (C.BLOSC_LZ4, C.BLOSC_ZLIB, C.BLOSC_LZ4HC, C.BLOSC), C.NO_COMPRESSION),
    (False, False, 1, 1, 3, (C.BLOSC_ZSTD, C.LZ4, C.RLE, C.BZIP2), C.LZ4),
    (False, False, 0, 1, 3, (C.NO_COMPRESSION, C.NO_COMPRESSION, C.GZIP, C.ZSTD), C.NO_COMPRESSION),
    (True, True, 1, 1, 2, (C.BLOSC_LZ4, C.RLE, C.LZ4, C.BZIP2), C.NO_COMPRESSION),
    (True, False, 1, 1, 3, (C.BLOSC_ZLIB, C.BZIP2, C.BLOSC_LZ4HC, C.RLE), C.GZIP),
    (True, False, 0, 1, 3, (C.ZSTD, C.NO_COMPRESSION, C.NO_COMPRESSION, C.LZ4), C.BLOSC_ZSTD),
    (True, False, 0, 0, 3, (C.NO_COMPRESSION,) * 4, C.NO_COMPRESSION),
    (True, False, 0, 0, 3, (C.GZIP, C.RLE, C.ZSTD, C.RLE), C.RLE),  # RLE_compress_coords_row
    (True, False, 1, 1, 3, (C.LZ4, C.GZIP, C.BZIP2, C.BLOSC), C.RLE),  # RLE_compress_coords_col
]

# 1.0/1.1 and 1.3 (DOUBLE_DELTA is 1.x's default for integer coordinates and offsets; 1.3 chunks at 64 KiB,
# here at 16 bytes so that tiles hold several chunks)
CASES_1X = [
    ((1, 0, 0), False, 1, 0, 3, (C.DOUBLE_DELTA, C.GZIP, C.ZSTD, C.DOUBLE_DELTA), C.DOUBLE_DELTA, C.DOUBLE_DELTA,
     1 << 30),
    ((1, 1, 0), True, 0, 1, 0, (C.BLOSC_ZSTD, C.RLE, C.LZ4, C.DOUBLE_DELTA), C.NO_COMPRESSION, C.DOUBLE_DELTA,
     1 << 30),
    ((1, 3, 0), False, 0, 0, 3, (C.GZIP, C.ZSTD, C.BZIP2, C.RLE), C.ZSTD, C.ZSTD, 16),
    ((1, 3, 0), True, 1, 1, 0, (C.ZSTD, C.GZIP, C.LZ4, C.DOUBLE_DELTA), C.NO_COMPRESSION, C.RLE, 16),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{'0.x' if c[0] else '1.2'}-{'dense' if c[1] else 'sparse'}-"
                         f"{'RC'[c[2]]}{'RC'[c[3]]}-{'-'.join(x.name for x in c[5])}-{c[6].name}")
def test_written_arrays_read_back(tmp_path, case):
    x0, dense, tile_order, cell_order, capacity, comp, coords_comp = case
    writes = DENSE_WRITES if dense else SPARSE_WRITES
    root = _write_array(tmp_path / "arr", x0=x0, dense=dense, tile_order=tile_order, cell_order=cell_order,
                        capacity=capacity, comp=comp, coords_comp=coords_comp, writes=writes)
    arr = open_array(root)
    assert (arr.version, len(arr.fragments)) == ("0.x" if x0 else "1.2", len(writes))
    _assert_cells(arr, writes, dense)
    for parsed in inspect_path(root):
        assert parsed.build() == parsed.path.read_bytes(), parsed.path


@pytest.mark.parametrize("case", CASES_1X, ids=lambda c: f"{'.'.join(map(str, c[0]))}-{'dense' if c[1] else 'sparse'}-"
                         f"{'RC'[c[2]]}{'RC'[c[3]]}-chunk{c[8]}")
def test_written_1x_arrays_of_every_library_read_back(tmp_path, case):
    library, dense, tile_order, cell_order, capacity, comp, coords_comp, offsets_comp, chunk = case
    writes = DENSE_WRITES if dense else SPARSE_WRITES
    root = _write_array(tmp_path / "arr", x0=False, dense=dense, tile_order=tile_order, cell_order=cell_order,
                        capacity=capacity or 3, comp=comp, coords_comp=coords_comp, offsets_comp=offsets_comp,
                        writes=writes, library=library, chunk=chunk)
    arr = open_array(root)
    assert (arr.version, len(arr.fragments)) == (f"{library[0]}.{library[1]}", len(writes))
    _assert_cells(arr, writes, dense)
    kinds = set()
    for parsed in inspect_path(root):
        kinds.add(parsed.kind)
        assert parsed.build() == parsed.path.read_bytes(), parsed.path
    assert "array_schema_1x" in kinds


@pytest.mark.parametrize("version", [22, 10, 5])
def test_convert_upgrades_a_legacy_array_so_tiledb_opens_it(tmp_path, version):
    """Every pre-v1 array converted to v5, v10 and v22 opens in TileDB-Py with the cells we read from the
    original (which equal truth.json, tests above)."""
    import tiledb
    from tdbformat import convert
    for name in ARRAYS:
        out = tmp_path / name.replace("/", "_")
        convert(PREV1 / name, out, version=version)
        want = open_array(PREV1 / name).read()
        with tiledb.open(str(out)) as a:
            got = a.query(order="G")[:] if a.schema.sparse else a[:]
            assert a.schema.domain.ndim == len(open_array(PREV1 / name).dims)
        if open_array(PREV1 / name).schema.array_type == 1:  # sparse: compare as sets of cells
            key = lambda cells: sorted(zip(*(_plain(cells[k]) for k in sorted(want))))  # noqa: E731
            assert key(got) == key(want), name
        else:
            for k in want:
                assert _plain(got[k]) == _plain(want[k]), (name, k)


def _plain(values) -> list:
    """Values as lists; two float32s per cell as pairs (TileDB-Py gives them as complex64, we as records)."""
    a = np.ascontiguousarray(values)
    if a.dtype.kind == "c" or a.dtype.names:
        a = a.view(np.float32).reshape(*a.shape, 2)
    return a.tolist()


# --- spec pages and the diff at format version 1 ------------------------------------------------------------

def test_diff_1x_1_shows_what_changed_at_format_version_1(capsys):
    from tdbformat.cli import main
    assert main(["diff", "1.x", "1"]) == 0
    text = capsys.readouterr().out
    rows = {tuple(line.split()[:2]) for line in text.splitlines() if line[:1] in "+-~"}
    # prev1.md §3.1: v1 puts a u32 version first and replaces compressor + level by encryption + a pipeline
    assert {("+", "version"), ("-", "compressor"), ("-", "compression_level"), ("+", "encryption_type"),
            ("+", "filter_pipeline")} <= rows
    # §3.3: the same fragment metadata with a u32 version in place of int32[3]
    assert ("~", "version") in rows and "LibraryVersion(i32[])" in text and "FormatVersion(u32)" in text


def test_dialect_pages_are_generated_with_their_gates():
    from tdbformat.spec.render import dialect_markdown
    one = dialect_markdown("1.x")
    assert "| `dimensions[].null_tile_extent` | u8 | 1 | library 1.2+ |" in one
    assert "| `file_sizes` |" in one and "Array schema (0.x)" not in one
    zero = dialect_markdown("0.x")
    assert "| `array_name` | char[] | array_name_len |" in zero and "Array schema (1.x)" not in zero


def test_keys_timestamps_and_v1_commands_are_refused_with_a_reason(capsys):
    from tdbformat.cli import main
    name = PREV1 / "tiledb-1.2.2/my_dense_array"
    with pytest.raises(FormatError, match="never encrypted"):
        open_array(name, key="x" * 32)
    with pytest.raises(ValueError, match="no timestamps"):
        open_array(name, timestamp=5)
    assert main(["fragments", str(name)]) == 1
    assert "the 1.2 dialect" in capsys.readouterr().err


def test_inspect_json_of_these_eras_follows_its_json_schema(capsys):
    jsonschema = pytest.importorskip("jsonschema")
    from tdbformat.cli import main
    schema = json.loads((Path(__file__).parents[2] / "docs/json-schema/inspect.v1.json").read_text())
    assert main(["inspect", "--json", str(PREV1 / "tiledb-1.2.2/my_sparse_array")]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, schema)
    schema_file = next(f for f in doc["files"] if f["kind"] == "array_schema_1x")
    assert schema_file["value"]["payload"]["version"] == [1, 2, 2]
    assert schema_file["value"]["generic_tile"]["compressor"] == "BLOSC_ZSTD"  # byte 25 = 09


def test_a_blosc_frame_whose_block_table_lies_is_refused_before_c_reads_it():
    """c-blosc (1.x, as TileDB 0.5-1.3 linked it) writes the frame; a block start moved past the frame, or a
    table longer than the frame, is a FormatError, not a read out of bounds in the C library (fuzz case
    128517 killed a worker once)."""
    blosc = pytest.importorskip("blosc")
    pytest.importorskip("blosc2")
    from tdbformat.filters.blosc import decompress_blosc
    raw = np.arange(50_000, dtype=np.int64).tobytes()
    frame = bytearray(blosc.compress(raw, typesize=8, cname="lz4", shuffle=blosc.SHUFFLE))
    assert not frame[2] & 0x2  # compressed, so it has a block table
    assert decompress_blosc(bytes(frame), len(raw), ("lz4",)) == raw
    moved = bytearray(frame)
    moved[16:20] = (len(frame) + 100).to_bytes(4, "little")
    with pytest.raises(FormatError, match="a block starts outside"):
        decompress_blosc(bytes(moved), len(raw), ("lz4",))
    tiny = bytearray(frame)
    tiny[8:12] = (1).to_bytes(4, "little")  # blocks of 1 byte: a table of 400,000 bytes
    with pytest.raises(FormatError, match="table of"):
        decompress_blosc(bytes(tiny), len(raw), ("lz4",))
