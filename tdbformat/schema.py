"""Schema helpers named as TileDB-Py names them (array_schema.md, filter_pipeline.md, enumeration.md,
current_domain.md; REFERENCE.md §6, §8, §9).

``Dim``, ``Domain``, ``Attr``, ``ArraySchema``, ``FilterList``, the filter classes, ``Enumeration``,
``CurrentDomain`` and ``DimLabelSchema`` describe a schema the way TileDB-Py users write one; each
``to_dict(version)`` gives the Container that :data:`tdbformat.structs.array_schema.ArraySchema` builds at
that format version (fields a version lacks are None). Defaults are what TileDB-Py 0.36 writes: coordinate and offsets filters ZSTD(-1),
validity filters RLE(-1), capacity 10000, row-major orders, pipelines of 65536-byte chunks, each type's
default fill value, and a dimension without a tile extent given the extent of its whole domain (not under a
Hilbert cell order, nor for string dimensions; ``ArraySchema::set_domain``).

A feature that the version cannot hold raises ValueError naming it and the first version that has it.
"""

from __future__ import annotations

import inspect
import uuid

import numpy as np
from construct import Container, ListContainer

from .enums import (
    ArrayType, Compressor, CurrentDomainType, DataOrder, Datatype, FilterType, Layout, WebpInputFormat,
)
from .structs.array_schema import VAR_NUM, value_dtype
from .structs.filter_pipeline import DEFAULT_MAX_CHUNK_SIZE
from .versions import LATEST, checked_version

__all__ = [
    "Filter", "FilterList", "NoOpFilter", "GzipFilter", "ZstdFilter", "LZ4Filter", "RleFilter", "Bzip2Filter",
    "DoubleDeltaFilter", "DeltaFilter", "DictionaryFilter", "BitWidthReductionFilter", "PositiveDeltaFilter",
    "BitShuffleFilter", "ByteShuffleFilter", "ChecksumMD5Filter", "ChecksumSHA256Filter", "FloatScaleFilter",
    "XORFilter", "WebpFilter", "Dim", "Domain", "Attr", "Enumeration", "CurrentDomain", "DimLabelSchema", "from_json",
    "ArraySchema",
    "datatype_of",
]


def require(feature: str, since: int, version: int) -> None:
    """ValueError unless format ``version`` has ``feature`` (first in ``since``)."""
    if version < since:
        raise ValueError(f"{feature}: needs format version {since} or later, not v{version}")


# ---- filters ----

class Filter:
    """A filter of a pipeline: its FilterType, the first format version that has it, its options."""

    type: FilterType = FilterType.NONE
    since = 1

    def options(self, version: int) -> Container:
        return Container()

    def to_dict(self, version: int = LATEST) -> Container:
        require(f"the {type(self).__name__}", self.since, checked_version(version))
        return Container(type=self.type, options=self.options(version))

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


class NoOpFilter(Filter):
    type = FilterType.NONE


class _Compression(Filter):
    compressor: Compressor

    def __init__(self, level: int = -1):
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or not -2**31 <= level < 2**31:
            raise TypeError(f"level: expected an int32, not {level!r}")
        self.level = int(level)

    def options(self, version):
        return Container(compressor=self.compressor, level=self.level)


class GzipFilter(_Compression):
    type, compressor = FilterType.GZIP, Compressor.GZIP


class ZstdFilter(_Compression):
    type, compressor = FilterType.ZSTD, Compressor.ZSTD


class LZ4Filter(_Compression):
    type, compressor = FilterType.LZ4, Compressor.LZ4


class RleFilter(_Compression):
    type, compressor = FilterType.RLE, Compressor.RLE


class Bzip2Filter(_Compression):
    type, compressor = FilterType.BZIP2, Compressor.BZIP2


class DictionaryFilter(_Compression):
    type, compressor, since = FilterType.DICTIONARY, Compressor.DICTIONARY_ENCODING, 13


class _Reinterpreting(_Compression):
    reinterpret_since: int

    def __init__(self, level: int = -1, reinterp_dtype=None):
        super().__init__(level)
        self.reinterp_dtype = None if reinterp_dtype is None else datatype_of(reinterp_dtype)[0]

    def options(self, version):
        out = super().options(version)
        if version >= self.reinterpret_since:
            out.reinterpret_datatype = Datatype.ANY if self.reinterp_dtype is None else self.reinterp_dtype
        elif self.reinterp_dtype is not None:
            require(f"the reinterpret datatype of the {type(self).__name__}", self.reinterpret_since, version)
        return out


class DoubleDeltaFilter(_Reinterpreting):
    type, compressor, reinterpret_since = FilterType.DOUBLE_DELTA, Compressor.DOUBLE_DELTA, 20


class DeltaFilter(_Reinterpreting):
    type, compressor, since, reinterpret_since = FilterType.DELTA, Compressor.DELTA, 19, 19


class _Windowed(Filter):
    default_window: int

    def __init__(self, window: int | None = None):
        window = self.default_window if window is None else window
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or not 0 < window < 2**32:
            raise TypeError(f"window: expected a positive uint32, not {window!r}")
        self.window = int(window)

    def options(self, version):
        return Container(max_window_size=self.window)


class BitWidthReductionFilter(_Windowed):
    type, default_window = FilterType.BIT_WIDTH_REDUCTION, 256


class PositiveDeltaFilter(_Windowed):
    type, default_window = FilterType.POSITIVE_DELTA, 1024


class BitShuffleFilter(Filter):
    type = FilterType.BITSHUFFLE


class ByteShuffleFilter(Filter):
    type = FilterType.BYTESHUFFLE


class ChecksumMD5Filter(Filter):
    type, since = FilterType.CHECKSUM_MD5, 4


class ChecksumSHA256Filter(Filter):
    type, since = FilterType.CHECKSUM_SHA256, 4


class XORFilter(Filter):
    type, since = FilterType.XOR, 16


class FloatScaleFilter(Filter):
    type, since = FilterType.SCALE_FLOAT, 15

    def __init__(self, factor: float | None = None, offset: float | None = None, bytewidth: int | None = None):
        self.factor = 1.0 if factor is None else float(factor)
        self.offset = 0.0 if offset is None else float(offset)
        self.bytewidth = 8 if bytewidth is None else int(bytewidth)
        if self.bytewidth not in (1, 2, 4, 8):
            raise ValueError(f"bytewidth: 1, 2, 4 or 8, not {bytewidth!r}")

    def options(self, version):
        return Container(scale=self.factor, offset=self.offset, byte_width=self.bytewidth)


class WebpFilter(Filter):
    """WebP; its tile extents are the schema's (set by :class:`ArraySchema`, as ``check_webp_filter`` does)."""

    type, since = FilterType.WEBP, 16

    def __init__(self, input_format=None, quality: float | None = None, lossless: bool | None = None):
        self.input_format = WebpInputFormat(0 if input_format is None else int(input_format))
        self.quality = 100.0 if quality is None else float(quality)
        self.lossless = bool(lossless)
        self.extents = (0, 0)

    def options(self, version):
        return Container(quality=self.quality, input_format=self.input_format, lossless=self.lossless,
                         y_extent=self.extents[0], x_extent=self.extents[1], padding=b"\0\0")


class FilterList:
    """A filter pipeline: ``filters`` in the order they run forward, tiles chunked to ``chunksize`` bytes."""

    def __init__(self, filters=(), chunksize: int | None = None):
        self.filters = list(filters)
        bad = [f for f in self.filters if not isinstance(f, Filter)]
        if bad:
            raise TypeError(f"filters: expected filter objects (ZstdFilter() ...), not {bad[0]!r}")
        chunksize = DEFAULT_MAX_CHUNK_SIZE if chunksize is None else chunksize
        if isinstance(chunksize, bool) or not isinstance(chunksize, (int, np.integer)) or not 0 <= chunksize < 2**32:
            raise TypeError(f"chunksize: expected a uint32, not {chunksize!r}")
        self.chunksize = int(chunksize)

    def __len__(self):
        return len(self.filters)

    def __getitem__(self, i):
        return self.filters[i]

    def to_dict(self, version: int = LATEST) -> Container:
        return Container(max_chunk_size=self.chunksize,
                         filters=ListContainer(f.to_dict(version) for f in self.filters))


def _filter_list(filters, default=()) -> FilterList:
    if filters is None:
        return FilterList(default)
    return filters if isinstance(filters, FilterList) else FilterList(filters)


# ---- datatypes ----

_NUMPY_TO_DATATYPE = {Datatype(d).numpy_dtype: Datatype(d) for d in reversed(Datatype)}  # lowest value wins
_NAMED = {"ascii": (Datatype.STRING_ASCII, VAR_NUM), "blob": (Datatype.BLOB, VAR_NUM),
          "wkb": (Datatype.GEOM_WKB, VAR_NUM), "wkt": (Datatype.GEOM_WKT, VAR_NUM)}


def datatype_of(dtype) -> tuple[Datatype, int]:
    """(Datatype, values per cell) of a numpy dtype as TileDB-Py maps it (``DataType.from_numpy``): str and
    bytes are var-sized UTF-8 and CHAR, "S3" is 3 CHARs, complex is 2 floats; a Datatype is taken as is."""
    if isinstance(dtype, Datatype):
        return dtype, 1
    if isinstance(dtype, str) and dtype in _NAMED:
        return _NAMED[dtype]
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype: {dtype!r} is not a numpy dtype") from None
    if dt.kind == "V" and dt.fields:  # a record of equal fields: that many values per cell
        bases = {f[0] for f in dt.fields.values()}
        if len(bases) != 1 or dt.shape != ():
            raise TypeError(f"dtype: a record dtype needs fields of one type, not {dt}")
        return datatype_of(bases.pop())[0], len(dt.fields)
    if dt.kind in "SU":
        datatype = Datatype.CHAR if dt.kind == "S" else Datatype.STRING_UTF8
        return datatype, VAR_NUM if dt.itemsize == 0 else dt.itemsize // (1 if dt.kind == "S" else 4)
    if dt.kind == "c":
        return (Datatype.FLOAT32 if dt.itemsize == 8 else Datatype.FLOAT64), 2
    found = _NUMPY_TO_DATATYPE.get(dt.newbyteorder("<") if dt.byteorder == ">" else dt)
    if found is None:
        raise TypeError(f"dtype: {dtype!r} cannot be mapped to a TileDB datatype")
    return found, 1


def _scalar(value, datatype: Datatype):
    """A domain, extent or range value as the Python number the schema stores (datetimes as int64)."""
    if isinstance(value, np.datetime64) and datatype.is_datetime:
        return int(value.astype(datatype.numpy_dtype).astype(np.int64))
    if isinstance(value, np.timedelta64):
        unit = np.datetime_data(datatype.numpy_dtype)[0]
        return int(value.astype(f"m8[{unit}]").astype(np.int64))
    return np.asarray(value).astype(value_dtype(datatype)).item()


# ---- domain ----

class Dim:
    """A dimension: ``domain`` (low, high) inclusive, ``tile`` extent, ``dtype`` (``"ascii"`` or bytes/str
    for a var-sized string dimension, which has no domain nor extent)."""

    def __init__(self, name: str = "__dim_0", domain=None, tile=None, filters=None, dtype=np.uint64, var=None):
        if not isinstance(name, str):
            raise TypeError(f"name: expected a str, not {type(name).__name__}")
        self.name = name
        self.datatype, cells = datatype_of(dtype)
        if self.datatype in (Datatype.CHAR, Datatype.STRING_UTF8):  # TileDB-Py makes string dims ASCII
            self.datatype, cells = Datatype.STRING_ASCII, VAR_NUM
        self.var = bool(var) or cells == VAR_NUM
        if self.var and self.datatype != Datatype.STRING_ASCII:
            raise ValueError(f"dimension {name!r}: only STRING_ASCII dimensions are var-sized")
        if not self.var and (domain is None or len(domain) != 2):
            raise ValueError(f"domain: dimension {name!r} needs (low, high), not {domain!r}")
        self.domain = [] if self.var else [_scalar(v, self.datatype) for v in domain]
        if not self.var and self.domain[0] > self.domain[1]:
            raise ValueError(f"domain: dimension {name!r} has low {self.domain[0]} above high {self.domain[1]}")
        self.tile = None if tile is None or self.var else _scalar(tile, self.datatype)
        self.filters = _filter_list(filters)

    def _range_extent(self):
        """TileDB's extent for a dimension without one: the domain's range (+1 for integers)."""
        bounds = np.asarray(self.domain, value_dtype(self.datatype))
        if not np.issubdtype(bounds.dtype, np.integer):
            return (bounds[1:] - bounds[:1]).item()
        info = np.iinfo(bounds.dtype)
        if bounds[0] == info.min and bounds[1] == info.max:
            raise ValueError(f"dimension {self.name!r}: the domain is the whole type, so it needs a tile extent")
        # in the dimension's own type, wrapping as TileDB's does: int8 [-100, 100] gets -55
        return (bounds[1:] - bounds[:1] + bounds.dtype.type(1)).item()

    def to_dict(self, version: int = LATEST, hilbert: bool = False) -> Container:
        version = checked_version(version)
        if self.var:
            require(f"dimension {self.name!r}: a var-sized (string) dimension", 5, version)
        if len(self.filters):
            require(f"dimension {self.name!r}: a dimension filter pipeline", 5, version)
        tile = self.tile
        if tile is None and not self.var and not hilbert:
            tile = self._range_extent()
        new = version >= 5
        return Container(name=self.name, datatype=self.datatype if new else None,
                         cell_val_num=(VAR_NUM if self.var else 1) if new else None,
                         filters=self.filters.to_dict(version) if new else None,
                         domain=list(self.domain), tile_extent=tile)


class Domain:
    """The dimensions, in order."""

    def __init__(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = tuple(dims[0])
        if not dims or not all(isinstance(d, Dim) for d in dims):
            raise TypeError("Domain: expected one or more Dim")
        names = [d.name for d in dims]
        if len(set(names)) != len(names):
            raise ValueError(f"Domain: repeated dimension names {names}")
        self.dims = list(dims)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    def to_dict(self, version: int = LATEST, hilbert: bool = False) -> Container:
        version = checked_version(version)
        domain_type = None
        if version < 5:
            types = {d.datatype for d in self.dims}
            if len(types) > 1:
                require("dimensions of different datatypes", 5, version)
            domain_type = types.pop()
        return Container(domain_type=domain_type,
                         dimensions=ListContainer(d.to_dict(version, hilbert) for d in self.dims))


# ---- attributes and enumerations ----

def _default_fill(datatype: Datatype, cells: int) -> bytes:
    """TileDB's default fill value (constants::fill_value; REFERENCE.md §1): one value for var-sized."""
    dtype = value_dtype(datatype)
    if datatype.is_datetime or datatype.is_time:
        value = np.iinfo(np.int64).min
    elif datatype == Datatype.CHAR:
        value = 0x80
    elif datatype.is_integer and np.issubdtype(dtype, np.signedinteger):
        value = np.iinfo(dtype).min
    elif datatype.is_integer:
        value = np.iinfo(dtype).max
    elif datatype.is_real:
        value = np.nan
    else:
        value = 0
    return np.full(1 if cells == VAR_NUM else cells, value, dtype).tobytes()


def _fill_bytes(fill, datatype: Datatype, cells: int, name: str) -> bytes:
    if isinstance(fill, str):
        fill = fill.encode("utf-8")
    if isinstance(fill, (bytes, np.bytes_)):
        if cells != VAR_NUM and len(fill) != cells * datatype.size:
            raise ValueError(f"fill: attribute {name!r} takes {cells * datatype.size} bytes, not {len(fill)}")
        return bytes(fill)
    values = np.asarray(fill)
    if values.dtype.kind == "c":
        values = values.reshape(-1).view(values.real.dtype)
    if values.dtype.kind == "M" and (datatype.is_datetime or datatype.is_time):
        values = values.astype(datatype.numpy_dtype)
    values = values.astype(value_dtype(datatype)).reshape(-1)
    if cells != VAR_NUM and values.size == 1:
        values = np.repeat(values, cells)
    if cells != VAR_NUM and values.size != cells:
        raise ValueError(f"fill: attribute {name!r} has {cells} values per cell, the fill {values.size}")
    return values.tobytes()


class Attr:
    """An attribute: ``dtype`` as TileDB-Py maps it, ``var`` sized, ``nullable``, a ``fill`` value, its
    ``filters``, and ``enum_label``, the name of the enumeration its values index."""

    def __init__(self, name: str = "", dtype=np.float64, fill=None, var=None, nullable: bool = False,
                 filters=None, enum_label: str | None = None):
        if not isinstance(name, str):
            raise TypeError(f"name: expected a str, not {type(name).__name__}")
        self.name = name
        self.datatype, self.cell_val_num = datatype_of(dtype)
        if var:
            self.cell_val_num = VAR_NUM
        elif var is False and self.cell_val_num == VAR_NUM:
            self.cell_val_num = 1
        self.var = self.cell_val_num == VAR_NUM
        self.nullable = bool(nullable)
        self.fill = None if fill is None else _fill_bytes(fill, self.datatype, self.cell_val_num, name)
        self.filters = _filter_list(filters)
        if enum_label is not None and not (isinstance(enum_label, str) and self.datatype.is_integer):
            raise ValueError(f"enum_label: attribute {name!r} needs an integer dtype and a str label")
        self.enum_label = enum_label
        self.order = DataOrder.UNORDERED_DATA  # a dimension label's "label" attribute is ordered

    def to_dict(self, version: int = LATEST) -> Container:
        version = checked_version(version)
        if self.nullable:
            require(f"attribute {self.name!r}: a nullable attribute", 7, version)
        if self.fill is not None:
            require(f"attribute {self.name!r}: a fill value", 6, version)
        if self.enum_label is not None:
            require(f"attribute {self.name!r}: an enumeration", 20, version)
        if self.datatype == Datatype.BLOB:
            require(f"attribute {self.name!r}: the BLOB datatype", 11, version)
        if self.datatype == Datatype.BOOL:
            require(f"attribute {self.name!r}: the BOOL datatype", 14, version)
        fill = self.fill if self.fill is not None else _default_fill(self.datatype, self.cell_val_num)
        return Container(
            name=self.name, datatype=self.datatype, cell_val_num=self.cell_val_num,
            filters=self.filters.to_dict(version),
            fill_value=fill if version >= 6 else None,
            nullable=self.nullable if version >= 7 else None,
            fill_value_validity=False if version >= 7 else None,
            order=self.order if version >= 17 else None,
            enumeration_name=(self.enum_label or "") if version >= 20 else None,
        )


class Enumeration:
    """Named ``values`` an enumerated attribute's integers index (format v20+); ``path_name`` is its file
    in ``__schema/__enumerations/``, fixed when the Enumeration is made."""

    def __init__(self, name: str, ordered: bool, values, dtype=None):
        if not isinstance(name, str):
            raise TypeError(f"name: expected a str, not {type(name).__name__}")
        self.name, self.ordered = name, bool(ordered)
        values = list(values)
        if dtype is None:
            dtype = str if values and all(isinstance(v, str) for v in values) else np.asarray(values).dtype
        self.datatype, self.cell_val_num = datatype_of(dtype)
        if self.datatype in (Datatype.STRING_UTF8, Datatype.STRING_ASCII, Datatype.CHAR):
            self.cell_val_num = VAR_NUM
            items = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
            self.data = b"".join(items)
            self.offsets = np.cumsum([0] + [len(x) for x in items[:-1]], dtype=np.uint64) if items else \
                np.zeros(0, np.uint64)
        else:
            self.data = np.asarray(values).astype(value_dtype(self.datatype)).tobytes()
            self.offsets = None
        self.path_name = f"__{uuid.uuid4().hex}_0"

    def to_dict(self, version: int = LATEST) -> Container:
        """The enumeration file's payload (``structs.enumeration.EnumerationPayload``)."""
        require(f"enumeration {self.name!r}", 20, checked_version(version))
        return Container(version=0, name=self.name, path_name=self.path_name, datatype=self.datatype,
                         cell_val_num=self.cell_val_num, ordered=self.ordered, data=self.data,
                         offsets=self.offsets)


class CurrentDomain:
    """The current domain (format v22+): one (start, end) per dimension, as a sequence in dimension order or
    a mapping by dimension name; ``CurrentDomain()`` is the empty one TileDB writes by default."""

    def __init__(self, ranges=None):
        self.ranges = ranges

    def to_dict(self, domain: Domain, version: int = LATEST) -> Container:
        if self.ranges is None:
            return Container(version=0, empty=True, type=None, ndrectangle=None)
        require("a current domain", 22, checked_version(version))
        ranges = self.ranges
        if isinstance(ranges, dict):
            missing = [d.name for d in domain.dims if d.name not in ranges]
            if missing or len(ranges) != domain.ndim:
                raise ValueError(f"current domain: one range per dimension, by name ({missing} missing)")
            ranges = [ranges[d.name] for d in domain.dims]
        if len(ranges) != domain.ndim:
            raise ValueError(f"current domain: {len(ranges)} ranges for {domain.ndim} dimensions")
        out = []
        for dim, (start, end) in zip(domain.dims, ranges):
            if dim.var:
                out.append(Container(start=_text(start), end=_text(end)))
            else:
                out.append(Container(start=_scalar(start, dim.datatype), end=_scalar(end, dim.datatype)))
        return Container(version=0, empty=False, type=CurrentDomainType.NDRECTANGLE, ndrectangle=ListContainer(out))


def _text(value) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


class DimLabelSchema:
    """A dimension label (format v18+): a dense array under ``__labels/`` mapping the dimension's indices to
    ordered labels (``DimensionLabel``'s constructor makes its schema: dimension "index", attribute "label")."""

    _ORDERS = {"increasing": DataOrder.INCREASING_DATA, "decreasing": DataOrder.DECREASING_DATA}

    def __init__(self, order: str = "increasing", label_dtype=np.uint64, dim_dtype=np.uint64, dim_tile=None,
                 label_filters=None):
        if order not in self._ORDERS:
            raise ValueError(f"order: 'increasing' or 'decreasing', not {order!r}")
        self.order = self._ORDERS[order]
        self.label_datatype, cells = datatype_of(label_dtype)
        if self.label_datatype in (Datatype.CHAR, Datatype.STRING_UTF8):
            self.label_datatype = Datatype.STRING_ASCII
        self.label_cell_val_num = VAR_NUM if self.label_datatype == Datatype.STRING_ASCII else 1
        self.dim_datatype = datatype_of(dim_dtype)[0]
        self.dim_tile, self.label_filters = dim_tile, _filter_list(label_filters)

    def label_schema(self, dim: Dim) -> "ArraySchema":
        """The schema of the label array of dimension ``dim``."""
        if dim.datatype != self.dim_datatype:
            raise ValueError(f"dim_labels: dimension {dim.name!r} is {dim.datatype.name}, the label says "
                             f"{self.dim_datatype.name}")
        index = Dim("index", dim.domain, dim.tile if self.dim_tile is None else self.dim_tile,
                    dtype=dim.datatype)
        label = Attr("label", self.label_datatype, var=self.label_cell_val_num == VAR_NUM,
                     filters=self.label_filters)
        label.order = self.order
        return ArraySchema(Domain(index), [label])


# ---- the schema ----

_LAYOUTS = {"row-major": Layout.ROW_MAJOR, "C": Layout.ROW_MAJOR, "col-major": Layout.COL_MAJOR,
            "F": Layout.COL_MAJOR, "hilbert": Layout.HILBERT, "H": Layout.HILBERT}


def _layout(value, argument: str) -> Layout:
    if isinstance(value, Layout):
        return value
    if value not in _LAYOUTS:
        raise ValueError(f"{argument}: one of {sorted(_LAYOUTS)}, not {value!r}")
    return _LAYOUTS[value]


class ArraySchema:
    """An array schema, as TileDB-Py's ``tiledb.ArraySchema`` takes it; ``to_dict(version)`` gives what
    ``structs.array_schema.ArraySchema.build`` takes, and :meth:`enumeration_dicts` the enumeration files."""

    def __init__(self, domain: Domain, attrs=(), cell_order="row-major", tile_order="row-major",
                 capacity: int = 0, coords_filters=None, offsets_filters=None, validity_filters=None,
                 allows_duplicates: bool = False, sparse: bool = False, dim_labels=None, enums=None,
                 current_domain=None):
        if not isinstance(domain, Domain):
            raise TypeError(f"domain: expected a Domain, not {type(domain).__name__}")
        self.domain, self.attrs, self.sparse = domain, list(attrs), bool(sparse)
        if not all(isinstance(a, Attr) for a in self.attrs):
            raise TypeError("attrs: expected Attr objects")
        names = [d.name for d in domain.dims] + [a.name for a in self.attrs]
        if len(set(names)) != len(names):
            raise ValueError(f"attrs: names repeat among the dimensions and attributes: {names}")
        self.cell_order, self.tile_order = _layout(cell_order, "cell_order"), _layout(tile_order, "tile_order")
        if self.tile_order == Layout.HILBERT:
            raise ValueError("tile_order: row-major or col-major (Hilbert is a cell order)")
        if self.cell_order == Layout.HILBERT and not self.sparse:
            raise ValueError("cell_order: Hilbert is for sparse arrays only")
        if allows_duplicates and not self.sparse:
            raise ValueError("allows_duplicates: dense arrays cannot allow duplicates")
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 0:
            raise TypeError(f"capacity: expected a non-negative int, not {capacity!r}")
        self.capacity = int(capacity) or 10000  # TileDB-Py passes 0 for its default
        self.allows_duplicates = bool(allows_duplicates)
        self.coords_filters = _filter_list(coords_filters, [ZstdFilter()])
        self.offsets_filters = _filter_list(offsets_filters, [ZstdFilter()])
        self.validity_filters = _filter_list(validity_filters, [RleFilter()])
        self.enums = list(enums or [])
        self.current_domain = current_domain if current_domain is not None else CurrentDomain()
        self._check_enumerations()
        self.dim_labels = self._labels(dim_labels or {})

    def _labels(self, dim_labels: dict) -> list:
        """[(dim_index, name, uri, DimLabelSchema)], the uris numbered as TileDB adds labels (__labels/l<n>)."""
        out = []
        for dim_index, labels in dim_labels.items():
            if not 0 <= dim_index < self.domain.ndim:
                raise ValueError(f"dim_labels: no dimension {dim_index}")
            for name, label in labels.items():
                if not isinstance(label, DimLabelSchema):
                    raise TypeError(f"dim_labels: expected DimLabelSchema, not {type(label).__name__}")
                out.append((dim_index, name, f"__labels/l{len(out)}", label))
        return out

    def label_schemas(self) -> dict:
        """``{uri relative to the array: ArraySchema}`` of the dimension labels' arrays."""
        return {uri: label.label_schema(self.domain.dims[i]) for i, _, uri, label in self.dim_labels}

    def _check_enumerations(self):
        known = {e.name for e in self.enums}
        missing = [a.enum_label for a in self.attrs if a.enum_label is not None and a.enum_label not in known]
        if missing:
            raise ValueError(f"enums: no Enumeration named {missing[0]!r}")

    def _webp_extents(self, version: int) -> None:
        """``check_webp_filter``: only the last attribute's WebP filter gets the tile extents (y, x)."""
        webp = [f for f in self.attrs[-1].filters if isinstance(f, WebpFilter)] if self.attrs else []
        if webp and self.domain.ndim == 2:
            dims = self.domain.to_dict(version).dimensions
            webp[0].extents = (int(dims[0].tile_extent), int(dims[1].tile_extent))

    def to_dict(self, version: int = LATEST) -> Container:
        version = checked_version(version)
        if self.allows_duplicates:
            require("allows_duplicates", 5, version)
        if self.cell_order == Layout.HILBERT:
            require("the Hilbert cell order", 7, version)
        if self.enums:
            require("enumerations", 20, version)
        if self.current_domain.ranges is not None:
            require("a current domain", 22, version)
        if not self.sparse and any(not (d.datatype.is_integer or d.datatype.is_datetime or d.datatype.is_time)
                                   for d in self.domain.dims):
            raise ValueError("domain: dense arrays need integer, datetime or time dimensions")
        if not self.sparse and len({d.datatype for d in self.domain.dims}) > 1:
            raise ValueError("domain: the dimensions of a dense array share one datatype")
        self._webp_extents(version)
        hilbert = self.cell_order == Layout.HILBERT
        return Container(
            version=version, allows_dups=self.allows_duplicates if version >= 5 else None,
            array_type=ArrayType.SPARSE if self.sparse else ArrayType.DENSE,
            tile_order=self.tile_order, cell_order=self.cell_order, capacity=self.capacity,
            coords_filters=self.coords_filters.to_dict(version),
            cell_var_offsets_filters=self.offsets_filters.to_dict(version),
            cell_validity_filters=self.validity_filters.to_dict(version) if version >= 7 else None,
            domain=self.domain.to_dict(version, hilbert),
            attributes=ListContainer(a.to_dict(version) for a in self.attrs),
            labels=self._label_dicts(version),
            enumerations=ListContainer(Container(name=e.name, filename=e.path_name) for e in self.enums)
            if version >= 20 else None,
            current_domain=self.current_domain.to_dict(self.domain, version) if version >= 22 else None,
        )

    def _label_dicts(self, version: int):
        if self.dim_labels:
            require("dimension labels", 18, version)
        if version < 18:
            return None
        return ListContainer(Container(
            dim_index=i, name=name, relative_uri=True, uri=uri, label_attr_name="label", label_order=label.order,
            label_datatype=label.label_datatype, label_cell_val_num=label.label_cell_val_num, is_external=False)
            for i, name, uri, label in self.dim_labels)

    def enumeration_dicts(self, version: int = LATEST) -> dict:
        """``{file name in __schema/__enumerations/: enumeration payload}`` of the schema's enumerations."""
        return {e.path_name: e.to_dict(version) for e in self.enums}


# --- from JSON: what ``tdbformat schema --json`` prints, or the dict form ``structs.ArraySchema.build`` takes ---

def from_json(doc: dict):
    """A schema from JSON: the document ``tdbformat schema --json`` prints (or one of its ``schemas``) gives an
    :class:`ArraySchema` (dimensions, attributes, filters, orders, duplicates, enumerations, current domain,
    dimension labels);
    the dict form of the declaration (``domain`` and ``attributes`` at the top, enum fields by value or by
    name: "SPARSE", "INT64", "ROW_MAJOR", "ZSTD") gives the dict ``structs.ArraySchema.build`` takes."""
    if not isinstance(doc, dict):
        raise TypeError(f"doc: expected a JSON object (a dict), not {type(doc).__name__}")
    return _dict_form(doc) if "domain" in doc and "attributes" in doc else _from_schema_json(doc)


def _filter_from_json(f: dict):
    """One filter of ``tdbformat schema --json`` as a filter of this module."""
    classes = {cls.type.name: cls for cls in _subclasses(Filter) if "type" in vars(cls)}
    if f.get("type") not in classes:
        raise ValueError(f"schema JSON: unknown filter type {f.get('type')!r} (known: {', '.join(sorted(classes))})")
    o = f.get("options") or {}
    kwargs = {"level": o.get("level"), "window": o.get("max_window_size"), "factor": o.get("scale"),
              "offset": o.get("offset"), "bytewidth": o.get("byte_width"), "quality": o.get("quality"),
              "input_format": o.get("input_format"), "lossless": o.get("lossless"),
              "reinterp_dtype": None if o.get("reinterpret_datatype") in (None, "ANY")
              else Datatype[o["reinterpret_datatype"]]}
    cls = classes[f["type"]]
    accepted = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in kwargs.items() if k in accepted and v is not None})


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _dtype_of(type_name: str, var: bool):
    datatype = Datatype[type_name]
    if var and datatype in (Datatype.STRING_ASCII, Datatype.CHAR):
        return "ascii"
    if var and datatype == Datatype.STRING_UTF8:
        return str
    if var and datatype == Datatype.BLOB:
        return "blob"
    return datatype.numpy_dtype


def _from_schema_json(doc: dict) -> ArraySchema:
    d = doc["schemas"][-1] if "schemas" in doc else doc
    fl = lambda fs: [_filter_from_json(f) for f in fs or []]  # noqa: E731
    # the JSON shows a dimension without filters of its own with the coordinate filters (schema_json)
    dims = [Dim(x["name"], domain=None if x["var"] else x["domain"], tile=x["tile"],
                filters=[] if x["filters"] == d.get("coords_filters") else fl(x["filters"]),
                dtype=_dtype_of(x["type"], x["var"])) for x in d["dimensions"]]
    attrs = []
    for x in d["attributes"]:
        var = x["cell_val_num"] == "var"
        a = Attr(x["name"], dtype=_dtype_of(x["type"], var), var=var, nullable=x["nullable"],
                 filters=fl(x["filters"]), enum_label=x.get("enumeration"))
        if not var and x["cell_val_num"] != 1:
            a.cell_val_num = int(x["cell_val_num"])
        attrs.append(a)
    enums = [Enumeration(e["name"], False, e["values"]) for e in d.get("enumerations") or []]
    labels = _labels_from_json(d.get("dimension_labels") or [], dims)
    return ArraySchema(
        Domain(*dims), attrs, cell_order=d["cell_order"], tile_order=d["tile_order"], capacity=d["capacity"],
        coords_filters=fl(d.get("coords_filters")), offsets_filters=fl(d.get("offsets_filters")),
        validity_filters=fl(d.get("validity_filters")), allows_duplicates=d["allows_duplicates"],
        sparse=d["array_type"] == "sparse", enums=enums or None, dim_labels=labels,
        current_domain=CurrentDomain(d["current_domain"]) if d.get("current_domain") else None)


def _labels_from_json(labels: list, dims: list) -> dict:
    """``ArraySchema``'s ``dim_labels`` from the ``dimension_labels`` of ``schema --json`` (name, dimension,
    type, order, and the uri TileDB gives the n-th label, ``__labels/l<n>``). Each label array is made as
    ``DimLabelSchema`` makes it: the dimension's tile extent, no filters (the JSON holds no more of it)."""
    out, n = {}, 0
    for x in labels:
        if not isinstance(x, dict) or not isinstance(x.get("name"), str) or isinstance(x.get("dimension"), bool) \
                or not isinstance(x.get("dimension"), int) or not 0 <= x["dimension"] < len(dims):
            raise ValueError(f"schema JSON: a dimension label is {{\"name\": str, \"dimension\": an index of the "
                             f"{len(dims)} dimensions, \"type\", \"order\"}}, not {x!r}")
        if x.get("type") not in Datatype.__members__:
            raise ValueError(f"schema JSON: dimension label {x['name']!r}: unknown type {x.get('type')!r}")
        dim = dims[x["dimension"]]
        label = DimLabelSchema(x.get("order"), _dtype_of(x["type"], x["type"] == "STRING_ASCII"),
                               dim.datatype.numpy_dtype)
        out.setdefault(x["dimension"], {})[x["name"]] = label
    for dim_index, named in out.items():  # ArraySchema numbers them in this order: it must be the JSON's
        for name in named:
            given = next(x for x in labels if x["name"] == name and x["dimension"] == dim_index).get("uri")
            if given not in (None, f"__labels/l{n}"):
                raise ValueError(f"schema JSON: dimension label {name!r} is the label array {given!r}; created, it "
                                 f"is __labels/l{n} (labels are numbered dimension by dimension, in the order listed)")
            n += 1
    return out


def _dict_form(value, key=None):
    """The dict ``ArraySchema.build`` takes, from JSON: enum fields may be given by name ("SPARSE", "INT64",
    "ROW_MAJOR", a filter's "ZSTD" and its compressor's)."""
    enums = {"array_type": ArrayType, "tile_order": Layout, "cell_order": Layout, "datatype": Datatype,
             "filter": FilterType, "compressor": Compressor}
    if isinstance(value, dict):
        is_filter = "options" in value and "type" in value
        return {k: _dict_form(v, "filter" if is_filter and k == "type" else k) for k, v in value.items()}
    if isinstance(value, list):
        return [_dict_form(v) for v in value]
    if isinstance(value, str) and key in enums:
        try:
            return enums[key][value]
        except KeyError:
            raise ValueError(f"schema JSON: {key} {value!r} is not one of {', '.join(e.name for e in enums[key])}") \
                from None
    return value
