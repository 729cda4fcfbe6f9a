"""One write, one fragment: cells already in tile order become the data files, the fragment metadata and the
commit of the fragment's format version (REFERENCE.md §3, §4, §11-§12).

Each field's tiles run through its filter pipeline (``filters.filter_tile``) and are stored back to back; the
footer and its sections are built by ``structs.fragment.FragmentMetadata``. Data files go through
``storage.write``; the file that commits the fragment (``.ok`` v5-11, ``__commits/*.wrt`` v12+, the metadata file
itself v1-4) is written last through ``storage.commit``, so a reader sees the whole fragment or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from construct import Container, ListContainer

from ..directory import COMMITS_DIR, FRAGMENT_METADATA, FRAGMENTS_DIR
from ..enums import Datatype, FilterType, OptionalSectionId
from ..filters import filter_tile, skips_offsets
from ..filters.encryption import normalize_key
from ..filters.pipeline import MAX_CHUNK
from ..structs.array_schema import FieldInfo, attributes, dimensions, value_dtype
from ..structs.fragment import FragmentMetadata, ProcessedConditionsTile, data_file_stem, index_fields
from ..structs.names import timestamped_name
from ..structs.tile import Tile
from ..versions import FEATURES
from .rtree import FANOUT, build_levels
from .tiling import var_bytes

__all__ = ["FragmentWrite", "write_fragment", "fragment_name"]

_COMPRESSORS = {FilterType.GZIP, FilterType.ZSTD, FilterType.LZ4, FilterType.RLE, FilterType.BZIP2,
                FilterType.DOUBLE_DELTA}
_EMPTY_TILE = Tile.build(Container(num_chunks=0, chunks=ListContainer()))


@dataclass
class FragmentWrite:
    """What one fragment holds: ``tiles[name]`` a list of per-tile cell arrays (attributes, and for sparse
    fragments the dimensions), ``validity[name]`` the same of bools for nullable attributes, ``mbrs`` and
    ``non_empty_domain`` as the footer stores them, the cells in the last tile."""

    schema: object
    schema_name: str | None
    dense: bool
    non_empty_domain: list
    tiles: dict
    validity: dict = field(default_factory=dict)
    mbrs: object = None
    last_tile_cell_num: int = 0
    global_bounds: dict | None = None  # v23 sparse: dimension -> (first cells, last cells) of each tile


@dataclass
class _Out:
    """One field's stored tiles and per-tile numbers."""

    files: dict = field(default_factory=dict)
    offsets: list = field(default_factory=list)
    var_offsets: list = field(default_factory=list)
    var_sizes: list = field(default_factory=list)
    validity_offsets: list = field(default_factory=list)
    sizes: list = field(default_factory=lambda: [0, 0, 0])
    stats: list = field(default_factory=list)  # (min, max, sum, null count) per tile, or None


def fragment_name(version: int, t: int, uuid: str) -> str:
    """The fragment's folder name in ``version``'s era (REFERENCE §3.1)."""
    if version <= 2:
        return f"__{uuid}_{t}"
    return timestamped_name(t, t, uuid, version if version >= 5 else None)


class _Encoder:
    def __init__(self, schema, version, key, max_chunk):
        self.schema, self.version, self.max_chunk = schema, version, max_chunk
        self.key = normalize_key(key)

    def stored(self, data, pipeline, datatype, cell_size, offsets=None, dim_num=1) -> bytes:
        tile = filter_tile(data, pipeline, datatype=datatype, version=self.version, cell_size=cell_size, key=self.key,
                           encrypted=self.key is not None, offsets=offsets, var=offsets is not None,
                           dim_num=dim_num, max_chunk=self.max_chunk)
        return Tile.build(tile)

    def field(self, info: FieldInfo, tiles, validity, stem, stats: bool) -> _Out:
        out = _Out()
        fixed, var, valid = bytearray(), bytearray(), bytearray()
        for t, cells in enumerate(tiles):
            out.offsets.append(len(fixed))
            if info.var:
                data, offsets = self._var_cells(cells, info)
                out.var_offsets.append(len(var))
                out.var_sizes.append(len(data))
                fixed += (_EMPTY_TILE if skips_offsets(info.filters, info.datatype, self.version) else
                          self.stored(offsets.tobytes(), self.schema.cell_var_offsets_filters, Datatype.UINT64, 8))
                var += self.stored(data, info.filters, info.datatype, info.datatype.size, offsets=offsets)
            else:
                fixed += self.stored(np.ascontiguousarray(cells).tobytes(), info.filters, info.datatype,
                                     info.datatype.size * info.cell_val_num)
            mask = None
            if info.nullable:
                mask = np.asarray(validity[t], bool)
                out.validity_offsets.append(len(valid))
                valid += self.stored(mask.astype(np.uint8).tobytes(), self.schema.cell_validity_filters,
                                     Datatype.UINT8, 1)
            out.stats.append(_tile_stats(info, cells, mask) if stats else None)
        out.files = {f"{stem}.tdb": fixed, f"{stem}_var.tdb": var, f"{stem}_validity.tdb": valid}
        out.sizes = [len(fixed), len(var), len(valid)]
        return out

    @staticmethod
    def _var_cells(cells, info):
        parts = var_bytes(cells, info.datatype.numpy_dtype)
        lengths = np.fromiter(map(len, parts), np.uint64, len(parts))
        offsets = np.zeros(len(parts), "<u8")
        np.cumsum(lengths[:-1], out=offsets[1:])
        return b"".join(parts), offsets

    def coords(self, tiles, dims) -> _Out:
        """The v1-4 ``__coords`` field: every dimension's coordinates of a tile together, zipped (x1 y1 x2 y2...)
        in v1 unless the coordinate pipeline compresses, else one dimension after the other."""
        out = _Out()
        data = bytearray()
        pipeline = self.schema.coords_filters
        zipped = FEATURES["zipped_coordinates"](self.version) and not (
            {FilterType(f.type) for f in pipeline.filters} & _COMPRESSORS)
        datatype = dims[0].datatype
        for cols in zip(*(tiles[d.name] for d in dims)):
            out.offsets.append(len(data))
            raw = np.stack(cols, axis=1) if zipped else np.concatenate(cols)
            data += self.stored(np.ascontiguousarray(raw, datatype.numpy_dtype).tobytes(), pipeline, datatype,
                                datatype.size * len(dims), dim_num=1 if zipped else len(dims))
            out.stats.append(None)
        out.files = {"__coords.tdb": data}
        out.sizes = [len(data), 0, 0]
        return out


def _has_min_max(info: FieldInfo, is_dim: bool) -> bool:
    """TileMetadataGenerator::has_min_max_metadata, for the fields whose mins we compute (numeric, one value)."""
    return not is_dim and _has_sum(info)


def _has_sum(info: FieldInfo) -> bool:
    """TileMetadataGenerator::has_sum_metadata: fixed cells of one numeric value."""
    return not info.var and info.cell_val_num == 1 and not info.datatype.is_string and info.datatype not in (
        Datatype.ANY, Datatype.BLOB, Datatype.CHAR, Datatype.GEOM_WKB, Datatype.GEOM_WKT)


def _tile_stats(info, cells, mask):
    if not _has_sum(info):
        return None, None, None, 0 if mask is None else int((~mask).sum())
    values = np.asarray(cells).view(value_dtype(info.datatype))
    nulls = 0
    if mask is not None:
        nulls = int((~mask).sum())
        values = values[mask]
    kind = values.dtype.kind
    acc = "<f8" if kind == "f" else "<u8" if kind in "ub" else "<i8"
    total = values.astype(acc).sum(dtype=acc) if len(values) else np.zeros((), acc)
    if not len(values):
        return np.zeros((), values.dtype), np.zeros((), values.dtype), total, nulls
    return values.min(), values.max(), total, nulls


def _index_data(fw: FragmentWrite, version: int) -> list:
    """(index, field, is dimension) of each index-space field that has data files in this fragment."""
    fields = index_fields(fw.schema, version)
    attrs = attributes(fw.schema)
    out = [(i, f, False) for i, f in enumerate(fields[:len(attrs)])]
    if not fw.dense and FEATURES["coordinates_per_dimension"](version):
        out += [(len(attrs) + 1 + j, d, True) for j, d in enumerate(dimensions(fw.schema))]
    return out


def write_fragment(storage, root, fw: FragmentWrite, *, timestamp: int, uuid: str, key=None,
                   max_chunk: int = MAX_CHUNK) -> str:
    """Write the fragment ``fw`` into the array at ``root`` and commit it; returns the fragment's name."""
    schema = fw.schema
    version = schema.version
    enc = _Encoder(schema, version, key, max_chunk)
    fields = index_fields(schema, version)
    stats = version >= 11
    outs = {}
    for i, info, is_dim in _index_data(fw, version):
        stem = data_file_stem(version, i, fields, len(attributes(schema)))
        outs[i] = enc.field(info, fw.tiles[info.name], fw.validity.get(info.name), stem, stats and not is_dim)
    if not fw.dense and not FEATURES["coordinates_per_dimension"](version):
        outs[len(attributes(schema))] = enc.coords(fw.tiles, dimensions(schema))
    name = fragment_name(version, timestamp, uuid)
    folder = storage.join(root, FRAGMENTS_DIR, name) if FEATURES["fragments_folder"](version) else \
        storage.join(root, name)
    storage.makedirs(folder)
    for out in outs.values():
        for filename, data in out.files.items():
            if data:
                storage.write(storage.join(folder, filename), bytes(data))
    tile_num = len(next(iter(fw.tiles.values())))
    metadata = _metadata(fw, version, key, fields, outs, tile_num)
    meta_path = storage.join(folder, FRAGMENT_METADATA)
    if not FEATURES["commit_markers"](version):
        storage.commit(meta_path, metadata)  # v1-4: the metadata file is the commit
        return name
    storage.write(meta_path, metadata)
    if FEATURES["fragments_folder"](version):
        storage.makedirs(storage.join(root, COMMITS_DIR))
        storage.commit(storage.join(root, COMMITS_DIR, f"{name}.wrt"), b"")
    else:
        storage.commit(storage.join(root, f"{name}.ok"), b"")
    return name


def _per_field(outs, n, tile_num, what):
    """One u64 array per index-space field (zeros of tile_num for fields without that kind of data)."""
    return [np.asarray(getattr(outs[i], what), "<u8") if i in outs and getattr(outs[i], what)
            else np.zeros(tile_num, "<u8") for i in range(n)]


def _metadata(fw, version, key, fields, outs, tile_num) -> bytes:
    n = len(fields)
    n_var = n if FEATURES["coordinates_per_dimension"](version) else n - 1
    sizes = np.array([[outs[i].sizes[k] if i in outs else 0 for i in range(n)] for k in range(3)], "<u8")
    offsets = _per_field(outs, n, tile_num, "offsets")
    var_offsets = _per_field(outs, n_var, tile_num, "var_offsets")
    var_sizes = _per_field(outs, n_var, tile_num, "var_sizes")
    if version <= 2:
        return _legacy(fw, version, key, offsets, var_offsets, var_sizes, sizes, n_var)
    zeros = np.zeros(n, "<u8")
    footer = Container(
        version=version, array_schema_name=fw.schema_name if version >= 10 else None, dense=fw.dense,
        null_non_empty_domain=False, non_empty_domain=ListContainer(fw.non_empty_domain),
        sparse_tile_num=0 if fw.dense else tile_num, last_tile_cell_num=fw.last_tile_cell_num,
        has_timestamps=False if version >= 14 else None, has_delete_meta=False if version >= 15 else None,
        file_sizes=sizes[0], file_var_sizes=sizes[1][:n_var], file_validity_sizes=sizes[2] if version >= 7 else None,
        rtree_offset=0, tile_offsets_offsets=zeros, tile_var_offsets_offsets=zeros[:n_var],
        tile_var_sizes_offsets=zeros[:n_var])
    sections = dict(
        rtree=Container(dim_num=len(fw.non_empty_domain) if version < 5 else None, fanout=FANOUT,
                        datatype=dimensions(fw.schema)[0].datatype if version < 5 else None,
                        levels=ListContainer() if fw.dense else build_levels(fw.mbrs)),
        tile_offsets=offsets, tile_var_offsets=var_offsets, tile_var_sizes=var_sizes)
    if version >= 7:
        footer.tile_validity_offsets_offsets = zeros
        sections["tile_validity_offsets"] = _per_field(outs, n, tile_num, "validity_offsets")
    if version >= 11:
        _stat_sections(footer, sections, fields, outs, version, zeros)
    if version >= 16:
        footer.processed_conditions_offset = 0
        sections["processed_conditions"] = []
    unreferenced = b""
    if version == 15:  # TileDB 2.11 writes an empty processed-conditions tile no v15 footer points to
        unreferenced = ProcessedConditionsTile.build(Container(conditions=ListContainer()), version=version, key=key)
    if version >= 23:
        _global_order_section(fw, footer, sections)
    return FragmentMetadata(footer, schema=fw.schema, key=key, unreferenced=unreferenced, **sections).build()


def _stat_sections(footer, sections, fields, outs, version, zeros):
    """Tile mins, maxes, sums and null counts (v11+) and the fragment summary (v12+)."""
    mins, maxes, sums, nulls, summary = [], [], [], [], []
    for i, info in enumerate(fields):
        st = [s for s in (outs[i].stats if i in outs else []) if s is not None]
        bound = np.dtype("<u8") if info.var else value_dtype(info.datatype)
        has_mm = bool(st) and st[0][0] is not None and i in outs and _has_min_max(info, False)
        lo = np.array([s[0] for s in st], bound) if has_mm else np.zeros(0, bound)
        hi = np.array([s[1] for s in st], bound) if has_mm else np.zeros(0, bound)
        sum_dtype = "<f8" if bound.kind == "f" else "<u8" if bound.kind in "ub" else "<i8"
        tile_sums = np.array([s[2] for s in st], sum_dtype) if st and st[0][2] is not None else np.zeros(0, sum_dtype)
        tile_nulls = np.array([s[3] for s in st], "<u8") if info.nullable and st else np.zeros(0, "<u8")
        mins.append(Container(fixed=lo, var=b""))
        maxes.append(Container(fixed=hi, var=b""))
        sums.append(tile_sums)
        nulls.append(tile_nulls)
        total = tile_sums.sum(dtype=sum_dtype) if len(tile_sums) else np.zeros((), sum_dtype)
        summary.append(Container(min=lo.min().tobytes() if len(lo) else b"", max=hi.max().tobytes() if len(hi) else b"",
                                 sum=total.item(), null_count=int(tile_nulls.sum())))
    for key in ("tile_min_offsets", "tile_max_offsets", "tile_sum_offsets", "tile_null_count_offsets"):
        footer[key] = zeros
    sections.update(tile_mins=mins, tile_maxes=maxes, tile_sums=sums, tile_null_counts=nulls)
    if version >= 12:
        footer.fragment_min_max_sum_null_count_offset = 0
        sections["fragment_summary"] = summary
    elif version == 11:
        footer.backcompat_fragment_summary_offset = None


def _global_order_section(fw, footer, sections):
    """v23: sparse fragments carry each tile's first and last coordinates in global order (§12.10)."""
    if fw.dense:
        footer.optional_sections = ListContainer()
        return
    dims = dimensions(fw.schema)
    zeros = np.zeros(len(dims), "<u8")
    footer.optional_sections = ListContainer([Container(identifier=OptionalSectionId.TILE_GLOBAL_ORDER_OFFSETS,
                                                        data=Container(min_offsets=zeros, max_offsets=zeros))])
    mins, maxes = [], []
    for d in dims:
        first, last = fw.global_bounds[d.name]
        mins.append(_bounds(d, first))
        maxes.append(_bounds(d, last))
    sections.update(tile_global_order_mins=mins, tile_global_order_maxes=maxes)


def _bounds(info, values):
    if not info.var:
        return Container(fixed=np.asarray(values, value_dtype(info.datatype)), var=b"")
    parts = var_bytes(np.asarray(values, object), info.datatype.numpy_dtype)
    offsets = np.zeros(len(parts), "<u8")
    np.cumsum(np.fromiter(map(len, parts), np.uint64, len(parts))[:-1], out=offsets[1:])
    return Container(fixed=offsets, var=b"".join(parts))


def _legacy(fw, version, key, offsets, var_offsets, var_sizes, sizes, n_var) -> bytes:
    """The v1-2 metadata file: one generic tile (§12.9)."""
    dims = dimensions(fw.schema)
    dtype = value_dtype(dims[0].datatype)
    bdtype = np.dtype([("first", dtype, (len(dims),)), ("last", dtype, (len(dims),))])
    bounding = np.zeros(0 if fw.dense else len(fw.mbrs), bdtype)
    if not fw.dense:
        for j, d in enumerate(dims):
            bounding["first"][:, j], bounding["last"][:, j] = fw.global_bounds[d.name]
    mbrs = fw.mbrs if not fw.dense else np.zeros(0, [(d.name, dtype, (2,)) for d in dims])
    legacy = Container(
        version=version, non_empty_domain=np.asarray(fw.non_empty_domain, dtype).reshape(-1), mbrs=mbrs,
        bounding_coords=bounding, tile_offsets=ListContainer(Container(data=o) for o in offsets),
        tile_var_offsets=ListContainer(Container(data=o) for o in var_offsets),
        tile_var_sizes=ListContainer(Container(data=o) for o in var_sizes),
        last_tile_cell_num=fw.last_tile_cell_num, file_sizes=sizes[0], file_var_sizes=sizes[1][:n_var])
    return FragmentMetadata(schema=fw.schema, key=key, legacy=legacy).build()
