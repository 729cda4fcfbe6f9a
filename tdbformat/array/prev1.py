"""Reading arrays of the dialects from before format version 1: TileDB 0.x and 1.0-1.3 (prev1.md).

:class:`LegacyArray` has the reading surface of :class:`~tdbformat.array.Array` (``schema``, ``dims``,
``attrs``, ``fragments``, ``nonempty_domain``, ``read``), so ``open_array`` and ``tdbformat cat`` take both.
Its ``schema`` is a view of the stored one in v1's terms (array type, orders, domain, attributes), and
``raw_schema`` the stored structure. A fragment's fields decode whole (these arrays are small and their
tiles have no per-tile bounds to skip by), then:

- dense: each fragment's cells sit in the space tiles over its non-empty domain (expanded to whole
  tiles), tiles in tile order, cells in cell order; later fragments overwrite earlier ones;
- sparse: every fragment's cells, the newest of equal coordinates kept, sorted as asked (global order
  by default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from construct import Container, ListContainer

from .. import layout as directory
from ..enums import ArrayType, Datatype, LegacyCompressor, Layout
from ..errors import FormatError, UnsupportedError, located
from ..filters.prev1 import decompress, decompress_coords_rle
from ..storage import storage_for
from ..structs.array_schema import VAR_NUM, FieldInfo
from ..structs.prev1_0x import VAR_NUM_0X
from ..structs.prev1_1x import VAR_NUM_1X, decode_chunks, legacy_domain, legacy_extents, legacy_tile_cells
from ..versions import dialect_label
from . import order
from .cells import U64, cell_dtype, filled, split_var
from .dense import MemoryBudgetError, check_budget
from .options import budget_or_default, wanted_attributes
from .ranges import check_ranges

__all__ = ["LegacyArray", "LegacyFragment"]

_ORDERS = {"C": Layout.ROW_MAJOR, "F": Layout.COL_MAJOR, "G": Layout.GLOBAL_ORDER, "U": Layout.GLOBAL_ORDER}


@dataclass
class _Field:
    """One field of a pre-v1 fragment as stored: attribute ``index`` (N: the coordinates)."""

    index: int
    name: str
    datatype: Datatype
    cell_val_num: int | None  # None: var-sized
    compressor: LegacyCompressor
    offsets_compressor: LegacyCompressor | None = None  # 1.x var attributes

    @property
    def cell_size(self) -> int:
        return 8 if self.cell_val_num is None else self.cell_val_num * self.datatype.size


def _schema_view(raw, label: str):
    """The stored schema in v1's terms, for the facade (array type, orders, domain, attributes)."""
    x1 = label != "0.x"
    dtype = Datatype(int(raw.domain_type if x1 else raw.types[-1]))
    lohi = legacy_domain(raw)
    extents = legacy_extents(raw)
    dims = ListContainer(Container(name=d.name, datatype=dtype, cell_val_num=1, domain=(lohi[j][0], lohi[j][1]),
                                   tile_extent=None if extents is None else extents[j], filters=None)
                         for j, d in enumerate(raw.dimensions))
    attrs = ListContainer()
    for i, a in enumerate(raw.attributes):
        cvn = a.cell_val_num if x1 else raw.cell_val_num[i]
        var = cvn == (VAR_NUM_1X if x1 else VAR_NUM_0X)
        attrs.append(Container(name=a.name, datatype=Datatype(int(a.type if x1 else raw.types[i])),
                               cell_val_num=VAR_NUM if var else cvn, nullable=False, filters=None))
    dense = raw.array_type == ArrayType.DENSE if x1 else bool(raw.dense)
    return Container(version=label, array_type=ArrayType.DENSE if dense else ArrayType.SPARSE,
                     tile_order=Layout(int(raw.tile_order)), cell_order=Layout(int(raw.cell_order)),
                     capacity=int(raw.capacity), allows_dups=False, current_domain=None,
                     domain=Container(dimensions=dims), attributes=attrs)


def _fields(raw, label: str) -> list[_Field]:
    """The attributes, then the coordinates, as stored."""
    x1 = label != "0.x"
    out = []
    for i, a in enumerate(raw.attributes):
        cvn = a.cell_val_num if x1 else raw.cell_val_num[i]
        var = cvn == (VAR_NUM_1X if x1 else VAR_NUM_0X)
        if not var and cvn <= 0:
            raise FormatError(f"attribute {a.name}: {cvn} values per cell", structure="Array schema")
        out.append(_Field(i, a.name, Datatype(int(a.type if x1 else raw.types[i])), None if var else cvn,
                          LegacyCompressor(int(a.compressor if x1 else raw.compression[i])),
                          LegacyCompressor(int(raw.offsets_compressor)) if x1 else None))
    n = len(raw.dimensions)
    coords_type = Datatype(int(raw.domain_type if x1 else raw.types[-1]))
    out.append(_Field(len(out), "__coords", coords_type, n,
                      LegacyCompressor(int(raw.coords_compressor if x1 else raw.compression[-1]))))
    return out


@dataclass
class LegacyFragment:
    """A committed pre-v1 fragment: its folder and parsed metadata (book-keeping in 0.x)."""

    name: str
    path: object
    metadata: Container
    non_empty_domain: list  # (lo, hi) per dimension, in the coordinates type
    cell_num: int  # cells the fragment's tiles hold


class LegacyArray:
    """An opened array of the 0.x or 1.x dialect (see the module doc)."""

    def __init__(self, path, found: str | None = None):
        self.storage, self.path = storage_for(path) if not isinstance(path, tuple) else path
        found = found or directory.dialect(self.storage, self.path)
        if found is None:
            raise FormatError("not an array of the 0.x or 1.x dialect", file=str(self.path))
        #: the stored schema (ArraySchema0x or ArraySchema1x)
        self.raw_schema = directory.load_legacy_schema(self.storage, self.path, found)
        #: "0.x", or the library version that wrote the schema: "1.0" to "1.3"
        self.version = dialect_label(self.raw_schema.get("version") or (0,))
        self.schema = _schema_view(self.raw_schema, self.version)
        self.fields = _fields(self.raw_schema, self.version)
        self.dims = [FieldInfo(d.name, d.datatype, 1, False, False, None) for d in self.schema.domain.dimensions]
        self.attrs = [FieldInfo(a.name, a.datatype, a.cell_val_num, a.cell_val_num == VAR_NUM, False, None)
                      for a in self.schema.attributes]
        self.tile_cells = legacy_tile_cells(self.raw_schema)
        if self.tile_cells <= 0:
            raise FormatError(f"a data tile of {self.tile_cells} cells", file=str(self.path))
        self.fragments = [self._fragment(*entry) for entry in
                          directory.legacy_fragments(self.storage, self.path, found)]

    def _fragment(self, name, folder, meta_path) -> LegacyFragment:
        fm = directory.load_legacy_metadata(self.storage, meta_path, self.raw_schema)
        dtype, n = self.dims[0].datatype.numpy_dtype, len(self.dims)
        if len(fm.non_empty_domain) != 2 * n * dtype.itemsize:
            raise FormatError(f"a non-empty domain of {len(fm.non_empty_domain)} bytes, not 2·{n} {dtype} values",
                              file=str(meta_path), structure="fragment metadata")
        ned = np.frombuffer(fm.non_empty_domain, dtype).reshape(n, 2)
        if np.any(ned[:, 0] > ned[:, 1]):
            raise FormatError("a non-empty domain whose lower bound exceeds its upper", file=str(meta_path))
        return LegacyFragment(name, folder, fm, [(lo, hi) for lo, hi in ned], self._cell_num(fm, ned, meta_path))

    def _cell_num(self, fm, ned, meta_path) -> int:
        if self.schema.array_type == ArrayType.DENSE:
            first, last = _tile_span(self, ned.astype(np.int64))
            return int(np.prod([b - a + 1 for a, b in zip(first, last)])) * self.tile_cells
        tiles = len(fm.mbrs.data) // (2 * len(self.dims))
        if tiles and not 0 < fm.last_tile_cell_num <= self.tile_cells:
            raise FormatError(f"the last tile holds {fm.last_tile_cell_num} cells, the capacity is {self.tile_cells}",
                              file=str(meta_path))
        return 0 if not tiles else (tiles - 1) * self.tile_cells + int(fm.last_tile_cell_num)

    def __repr__(self) -> str:
        kind = "DenseArray" if self.schema.array_type == ArrayType.DENSE else "SparseArray"
        return f"{kind}(uri={str(self.path)!r}, dialect={self.version!r}, fragments={len(self.fragments)})"

    @property
    def metadata(self) -> dict:
        """Pre-v1 arrays have no array metadata (0.x kept key-values as separate "metadata" objects)."""
        return {}

    meta = metadata

    @property
    def enumerations(self) -> dict:
        return {}

    @property
    def schemas(self):
        """What the ``schema`` and ``fragments`` commands list of v1+ arrays: not shown for these yet."""
        raise UnsupportedError(f"{self.path}: an array of the {self.version} dialect (before format version 1); "
                               "'tdbformat inspect' shows its files and 'tdbformat cat' its cells")

    _listing = _committed = key = window = schemas

    def nonempty_domain(self, timestamp=None, raw: bool = False):
        """Per dimension, the inclusive (lo, hi) of every fragment's non-empty domain; None without fragments."""
        if not self.fragments:
            return None
        return tuple((min(f.non_empty_domain[j][0] for f in self.fragments),
                      max(f.non_empty_domain[j][1] for f in self.fragments)) for j in range(len(self.dims)))

    def read(self, attrs=None, timestamp=None, order=None, ranges=None, threads=None, memory_budget=None) -> dict:
        """The cells as ``{name: numpy array}``, as :meth:`Array.read` gives them: dense arrays N-D over the
        domain (or ``ranges``), order "C" or "F"; sparse arrays the coordinates then the attributes, in
        global order (default, "G", "U") or row-/column-major ("C", "F")."""
        if timestamp is not None:
            raise ValueError("timestamp: fragments before format version 1 have no timestamps to read at")
        wanted = wanted_attributes(self.schema, attrs)
        if order not in (None, *_ORDERS):
            raise ValueError(f"order: expected one of {', '.join(map(repr, _ORDERS))}, not {order!r}")
        ranges = check_ranges(self.dims, ranges, self.schema)
        if self.schema.array_type == ArrayType.DENSE:
            check_budget(self, self.schema, wanted, ranges, memory_budget)
            return _read_dense(self, wanted, ranges, _ORDERS[order or "C"])  # G, U: N-D row-major, as v1+
        return _read_sparse(self, wanted, ranges, _ORDERS[order or "G"], memory_budget)


def _tile_span(arr, ned: np.ndarray) -> tuple[list, list]:
    """Per dimension, the first and last space tile (from the domain's low) that the box ``ned`` (rows of
    lo, hi) touches."""
    dom = legacy_domain(arr.raw_schema)
    ext = legacy_extents(arr.raw_schema)
    if ext is None or np.any(ext <= 0):
        raise FormatError("a dense array needs positive tile extents", structure="Array schema")
    first = [(int(a) - int(d)) // int(e) for a, d, e in zip(ned[:, 0], dom[:, 0], ext)]
    last = [(int(b) - int(d)) // int(e) for b, d, e in zip(ned[:, 1], dom[:, 0], ext)]
    return first, last


def _budget(arr, nbytes: int, budget, what: str):
    budget = budget_or_default(budget)
    if nbytes > budget:
        raise MemoryBudgetError(f"{what} would take {nbytes} bytes, more than the memory budget of {budget}")


def _file(arr, frag, name):
    p = arr.storage.join(frag.path, name)
    return p, arr.storage.read(p, what="data file")


def _spans(data: bytes, offsets, path) -> list:
    """``data`` cut at ``offsets`` (the first must be 0, rising, within the file)."""
    offs = [int(o) for o in offsets]
    if not offs or offs[0] != 0 or any(b < a for a, b in zip(offs, offs[1:])) or offs[-1] > len(data):
        raise FormatError(f"tile offsets {offs[:4]} do not cut the file's {len(data)} bytes", file=str(path))
    return [data[a:b] for a, b in zip(offs, offs[1:] + [len(data)])]


def _tile_cells(arr, frag, tiles: int) -> list[int]:
    """Cells of each of ``tiles`` tiles: full ones, then the last (sparse: last_tile_cell_num)."""
    full = [arr.tile_cells] * tiles
    if tiles and arr.schema.array_type != ArrayType.DENSE:
        full[-1] = int(frag.metadata.last_tile_cell_num)
    return full


def _fixed_stream(arr, frag, f: _Field, budget) -> bytes:
    """The uncompressed bytes of fixed field ``f`` (attribute, var offsets or coordinates, cell-major for
    coordinates) over the whole fragment."""
    name = "__coords.tdb" if f.name == "__coords" else f"{f.name}.tdb"
    path, data = _file(arr, frag, name)
    need = frag.cell_num * f.cell_size
    _budget(arr, need, budget, f"field {f.name} of fragment {frag.name}")
    compressor = f.offsets_compressor if f.cell_val_num is None and f.offsets_compressor is not None else f.compressor
    if compressor == LegacyCompressor.NO_COMPRESSION:
        out = data
    else:
        try:
            out = _decode_tiles(arr, frag, f, compressor, data, path)
        except FormatError as e:
            raise located(e, where=f"fragment {frag.name}, field {f.name}", file=str(path)) from None
    if len(out) != need:
        raise FormatError(f"field {f.name} holds {len(out)} bytes, the fragment's {frag.cell_num} cells need {need}",
                          file=str(path))
    return out


def _value_size(arr, f: _Field) -> int:
    """RLE's value: the cell for fixed attributes; for var offsets one value of the attribute's type (0.x)
    or the u64 offset (1.x)."""
    if f.cell_val_num is not None:
        return f.cell_size
    return f.datatype.size if arr.version == "0.x" else 8


def _decode_tiles(arr, frag, f: _Field, compressor, data, path) -> bytes:
    fm = frag.metadata
    spans = _spans(data, fm.tile_offsets[f.index].data, path)
    cells = _tile_cells(arr, frag, len(spans))
    coords = f.name == "__coords"
    dd_type = Datatype.UINT64 if f.cell_val_num is None else f.datatype
    out = []
    for span, n in zip(spans, cells):
        if arr.version != "0.x":
            if coords:  # one chunked sub-tile per dimension, each of n values
                parts = _sub_tiles(span, f.cell_val_num, compressor, f.datatype, path)
                out.append(np.stack([np.frombuffer(p, f.datatype.numpy_dtype) for p in parts], 1).tobytes())
                continue
            out.append(_one_1x_tile(span, compressor, dd_type, _value_size(arr, f), path))
        elif coords and compressor != LegacyCompressor.RLE:  # one block, dimension-major
            raw = decompress(compressor, span, n * f.cell_size, f.datatype, f.datatype.size)
            out.append(np.frombuffer(raw, f.datatype.numpy_dtype).reshape(f.cell_val_num, n).T.tobytes())
        elif coords:  # RLE per dimension, one dimension kept plain
            out.append(decompress_coords_rle(span, n, f.datatype.size, f.cell_val_num,
                                             arr.schema.cell_order == Layout.COL_MAJOR))
        else:
            out.append(decompress(compressor, span, n * f.cell_size, dd_type, _value_size(arr, f)))
    return b"".join(out)


def _one_1x_tile(span, compressor, datatype, value_size, path) -> bytes:
    from construct import BytesIOWithOffsets
    from ..structs.prev1_1x import ChunkedTile1x
    sub = BytesIOWithOffsets(span, None, 0)
    tile = ChunkedTile1x.parse_stream(sub, filename=str(path))
    if sub.tell() != len(span):
        raise FormatError(f"{len(span) - sub.tell()} bytes after the tile's last chunk", file=str(path))
    return decode_chunks(tile, compressor, datatype, value_size)


def _sub_tiles(span, count, compressor, datatype, path) -> list[bytes]:
    from construct import BytesIOWithOffsets
    from ..structs.prev1_1x import ChunkedTile1x
    sub, out = BytesIOWithOffsets(span, None, 0), []
    for _ in range(count):
        out.append(decode_chunks(ChunkedTile1x.parse_stream(sub, filename=str(path)), compressor, datatype,
                                 datatype.size))
    if sub.tell() != len(span):
        raise FormatError(f"a coordinate tile of {len(span)} bytes holds more than {count} dimension sub-tiles",
                          file=str(path))
    return out


def _var_stream(arr, frag, f: _Field, budget) -> bytes:
    """The uncompressed var data of attribute ``f`` over the whole fragment."""
    path, data = _file(arr, frag, f"{f.name}_var.tdb")
    if f.compressor == LegacyCompressor.NO_COMPRESSION:
        return data
    fm = frag.metadata
    spans = _spans(data, fm.tile_var_offsets[f.index].data, path)
    sizes = [int(s) for s in fm.tile_var_sizes[f.index].data]
    if len(sizes) != len(spans):
        raise FormatError(f"{len(spans)} var tiles but {len(sizes)} var tile sizes", file=str(path))
    _budget(arr, sum(sizes), budget, f"var data of {f.name} in fragment {frag.name}")
    try:
        if arr.version == "0.x":
            return b"".join(decompress(f.compressor, s, n, f.datatype, f.datatype.size) if n else b""
                            for s, n in zip(spans, sizes))
        return b"".join(_one_1x_tile(s, f.compressor, f.datatype, f.datatype.size, path) for s in spans)
    except FormatError as e:
        raise located(e, where=f"fragment {frag.name}, var data of {f.name}", file=str(path)) from None


def _column(arr, frag, f: _Field, info, budget) -> np.ndarray:
    """Attribute ``f``'s cells of a fragment, one per cell: numpy values, or an object array if var-sized."""
    raw = _fixed_stream(arr, frag, f, budget)
    if f.cell_val_num is not None:
        cell = info.datatype.size * info.cell_val_num  # proven by the data before a dtype that wide is built
        if len(raw) % cell or cell > max(len(raw), 1 << 16):
            raise FormatError(f"fragment {frag.name}: attribute {f.name} holds {len(raw)} bytes, not whole "
                              f"{cell}-byte cells", file=str(frag.path))
        return np.frombuffer(raw, cell_dtype(info))
    offsets = np.frombuffer(raw, U64)
    try:
        return split_var(_var_stream(arr, frag, f, budget), offsets, info)
    except FormatError as e:
        raise located(e, where=f"fragment {frag.name}, attribute {f.name}") from None


def _dense_coords(arr, frag, cells: int) -> np.ndarray:
    """``(cells, dim_num)`` coordinates of a dense fragment's cells, in the order they are stored; ``cells``
    is how many its data holds, which the tiles its non-empty domain covers must make (checked before
    anything of that size is allocated: a flipped bit in an extent made gigabytes)."""
    first, last = _tile_span(arr, np.array(frag.non_empty_domain, np.int64))
    dom, ext = legacy_domain(arr.raw_schema), legacy_extents(arr.raw_schema)
    count = math.prod(int(b - a + 1) for a, b in zip(first, last)) * math.prod(int(e) for e in ext)
    if count != cells:
        raise FormatError(f"fragment {frag.name}: its non-empty domain and the tile extents make {count} cells, "
                          f"its data {cells}", file=str(frag.path))
    tiles = order.tiles_in_order(first, last, arr.schema.tile_order)
    inner = np.indices([int(e) for e in ext]).reshape(len(ext), -1).T  # row-major cells of a tile
    if arr.schema.cell_order == Layout.COL_MAJOR:
        inner = np.indices([int(e) for e in ext][::-1]).reshape(len(ext), -1).T[:, ::-1]
    base = dom[:, 0].astype(np.int64) + tiles * ext.astype(np.int64)
    return (base[:, None, :] + inner[None, :, :]).reshape(-1, len(ext))


def _read_dense(arr, wanted, ranges, layout) -> dict:
    from .dense import read_box
    lo, hi = (np.array([int(v) for v in b], np.int64) for b in read_box(arr, arr.schema, ranges))
    shape = tuple(int(b - a + 1) for a, b in zip(lo, hi))
    out = {a.name: filled(a, Container(), shape) for a in wanted}
    by_name = {f.name: f for f in arr.fields}
    for frag in arr.fragments if wanted else []:  # oldest first: later fragments overwrite
        _budget(arr, frag.cell_num * 8 * len(arr.dims), None, f"the coordinates of fragment {frag.name}")
        columns = {a.name: _column(arr, frag, by_name[a.name], a, None) for a in wanted}
        if len({len(c) for c in columns.values()}) > 1:
            raise FormatError(f"fragment {frag.name}: its attributes hold {sorted({len(c) for c in columns.values()})}"
                              " cells", file=str(frag.path))
        coords = _dense_coords(arr, frag, len(next(iter(columns.values()))))
        ned = np.array(frag.non_empty_domain, np.int64)
        keep = np.all((coords >= np.maximum(lo, ned[:, 0])) & (coords <= np.minimum(hi, ned[:, 1])), axis=1)
        where = tuple((coords[keep] - lo).T)
        for a in wanted:
            out[a.name][where] = columns[a.name][keep]
    if layout == Layout.COL_MAJOR:
        out = {k: np.asfortranarray(v) for k, v in out.items()}
    return out


def _read_sparse(arr, wanted, ranges, layout, budget) -> dict:
    by_name = {f.name: f for f in arr.fields}
    coords_field = arr.fields[-1]
    cols, ages = {a.name: [] for a in wanted}, []
    coords = []
    for age, frag in enumerate(arr.fragments):
        xy = np.frombuffer(_fixed_stream(arr, frag, coords_field, budget), coords_field.datatype.numpy_dtype)
        coords.append(xy.reshape(-1, len(arr.dims)))
        ages.append(np.full(frag.cell_num, age))
        for a in wanted:
            cols[a.name].append(_column(arr, frag, by_name[a.name], a, budget))
    dtype = arr.dims[0].datatype.numpy_dtype
    xy = np.concatenate(coords) if coords else np.empty((0, len(arr.dims)), dtype)
    age = np.concatenate(ages) if ages else np.empty(0, np.int64)
    keep = np.ones(len(xy), bool)
    for j, d in enumerate(arr.dims):
        if d.name in ranges:
            keep &= (xy[:, j] >= ranges[d.name][0]) & (xy[:, j] <= ranges[d.name][1])
    # the newest fragment's cell wins where coordinates repeat
    newest_first = np.lexsort([-age] + [xy[:, j] for j in range(xy.shape[1])][::-1])
    dup = np.zeros(len(xy), bool)
    if len(xy):
        same = np.all(xy[newest_first][1:] == xy[newest_first][:-1], axis=1)
        dup[newest_first[1:][same]] = True
    sel = np.flatnonzero(keep & ~dup)
    dom_lo, extents = order.tile_grid(arr.schema.domain.dimensions)  # (a tile extent not positive: refused)
    perm = order.order_cells([xy[sel, j] for j in range(xy.shape[1])], layout, dom_lo=dom_lo, extents=extents,
                             tile_order=arr.schema.tile_order, cell_order=arr.schema.cell_order)
    sel = sel[perm]
    out = {d.name: xy[sel, j].copy() for j, d in enumerate(arr.dims)}
    for a in wanted:
        column = np.concatenate(cols[a.name]) if cols[a.name] else np.empty(0, object if a.var else cell_dtype(a))
        out[a.name] = column[sel]
    return out
