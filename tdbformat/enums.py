"""TileDB's enumerations (REFERENCE.md §2), each a Python IntEnum and a strict construct field.

``Datatype.INT32.size`` is the byte size of one value and ``Datatype.INT32.numpy_dtype`` the numpy
dtype its values are read as. The ``*Enum`` constructs parse to the IntEnum member and refuse values
TileDB does not define.
"""

from __future__ import annotations

import enum

import numpy as np
from construct import Int8ul, Int64ul

from .fields import StrictEnum

__all__ = [
    "Datatype", "FilterType", "Compressor", "EncryptionType", "Layout", "ArrayType", "DataOrder",
    "ObjectType", "CurrentDomainType", "WebpInputFormat", "QueryConditionOp", "CombinationOp", "NodeType",
    "OptionalSectionId",
    "DatatypeEnum", "FilterTypeEnum", "CompressorEnum", "EncryptionEnum", "LayoutEnum", "ArrayTypeEnum",
    "DataOrderEnum", "ObjectTypeEnum", "CurrentDomainTypeEnum", "WebpInputFormatEnum", "QueryConditionOpEnum",
    "CombinationOpEnum", "NodeTypeEnum", "OptionalSectionIdEnum",
]


class Datatype(enum.IntEnum):
    """Cell datatype (datatype_api_enum.h)."""

    INT32 = 0
    INT64 = 1
    FLOAT32 = 2
    FLOAT64 = 3
    CHAR = 4
    INT8 = 5
    UINT8 = 6
    INT16 = 7
    UINT16 = 8
    UINT32 = 9
    UINT64 = 10
    STRING_ASCII = 11
    STRING_UTF8 = 12
    STRING_UTF16 = 13
    STRING_UTF32 = 14
    STRING_UCS2 = 15
    STRING_UCS4 = 16
    ANY = 17
    DATETIME_YEAR = 18
    DATETIME_MONTH = 19
    DATETIME_WEEK = 20
    DATETIME_DAY = 21
    DATETIME_HR = 22
    DATETIME_MIN = 23
    DATETIME_SEC = 24
    DATETIME_MS = 25
    DATETIME_US = 26
    DATETIME_NS = 27
    DATETIME_PS = 28
    DATETIME_FS = 29
    DATETIME_AS = 30
    TIME_HR = 31
    TIME_MIN = 32
    TIME_SEC = 33
    TIME_MS = 34
    TIME_US = 35
    TIME_NS = 36
    TIME_PS = 37
    TIME_FS = 38
    TIME_AS = 39
    BLOB = 40
    BOOL = 41
    GEOM_WKB = 42
    GEOM_WKT = 43

    @property
    def size(self) -> int:
        """Bytes of one value (datatype_size)."""
        return self.numpy_dtype.itemsize

    @property
    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype one value is read as."""
        return _NUMPY[self]

    @property
    def is_datetime(self) -> bool:
        return Datatype.DATETIME_YEAR <= self <= Datatype.DATETIME_AS

    @property
    def is_time(self) -> bool:
        return Datatype.TIME_HR <= self <= Datatype.TIME_AS

    @property
    def is_string(self) -> bool:
        return Datatype.STRING_ASCII <= self <= Datatype.STRING_UCS4

    @property
    def is_integer(self) -> bool:
        """A plain signed or unsigned integer type (not datetime, time, char or bool)."""
        return self in _INTEGERS

    @property
    def is_real(self) -> bool:
        return self in (Datatype.FLOAT32, Datatype.FLOAT64)


_UNITS = ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"]
_NUMPY = {
    Datatype.INT32: np.dtype("<i4"), Datatype.INT64: np.dtype("<i8"),
    Datatype.FLOAT32: np.dtype("<f4"), Datatype.FLOAT64: np.dtype("<f8"),
    Datatype.CHAR: np.dtype("S1"), Datatype.INT8: np.dtype("i1"), Datatype.UINT8: np.dtype("u1"),
    Datatype.INT16: np.dtype("<i2"), Datatype.UINT16: np.dtype("<u2"),
    Datatype.UINT32: np.dtype("<u4"), Datatype.UINT64: np.dtype("<u8"),
    Datatype.STRING_ASCII: np.dtype("S1"), Datatype.STRING_UTF8: np.dtype("u1"),
    Datatype.STRING_UTF16: np.dtype("<u2"), Datatype.STRING_UTF32: np.dtype("<u4"),
    Datatype.STRING_UCS2: np.dtype("<u2"), Datatype.STRING_UCS4: np.dtype("<u4"),
    Datatype.ANY: np.dtype("u1"), Datatype.BLOB: np.dtype("u1"), Datatype.BOOL: np.dtype("?"),
    Datatype.GEOM_WKB: np.dtype("u1"), Datatype.GEOM_WKT: np.dtype("u1"),
}
for _i, _unit in enumerate(_UNITS):
    _NUMPY[Datatype(Datatype.DATETIME_YEAR + _i)] = np.dtype(f"<M8[{_unit}]")
for _i, _unit in enumerate(_UNITS[4:]):  # TIME_* starts at hours
    _NUMPY[Datatype(Datatype.TIME_HR + _i)] = np.dtype(f"<m8[{_unit}]")
_INTEGERS = {Datatype.INT8, Datatype.UINT8, Datatype.INT16, Datatype.UINT16, Datatype.INT32, Datatype.UINT32,
             Datatype.INT64, Datatype.UINT64}
assert len(_NUMPY) == len(Datatype)


class FilterType(enum.IntEnum):
    """Filter type of a serialized filter (filter_api_enum.h)."""

    NONE = 0
    GZIP = 1
    ZSTD = 2
    LZ4 = 3
    RLE = 4
    BZIP2 = 5
    DOUBLE_DELTA = 6
    BIT_WIDTH_REDUCTION = 7
    BITSHUFFLE = 8
    BYTESHUFFLE = 9
    POSITIVE_DELTA = 10
    AES_256_GCM = 11
    CHECKSUM_MD5 = 12
    CHECKSUM_SHA256 = 13
    DICTIONARY = 14
    SCALE_FLOAT = 15
    XOR = 16
    DEPRECATED_BITSORT = 17
    WEBP = 18
    DELTA = 19


class Compressor(enum.IntEnum):
    """The compressor byte inside compression-filter options (compressor.h); the values of the
    compressors TileDB had before filter pipelines, extended by dictionary (7) and delta (8)."""

    NO_COMPRESSION = 0
    GZIP = 1
    ZSTD = 2
    LZ4 = 3
    RLE = 4
    BZIP2 = 5
    DOUBLE_DELTA = 6
    DICTIONARY_ENCODING = 7
    DELTA = 8


class EncryptionType(enum.IntEnum):
    NO_ENCRYPTION = 0
    AES_256_GCM = 1


class Layout(enum.IntEnum):
    ROW_MAJOR = 0
    COL_MAJOR = 1
    GLOBAL_ORDER = 2
    UNORDERED = 3
    HILBERT = 4


class ArrayType(enum.IntEnum):
    DENSE = 0
    SPARSE = 1


class DataOrder(enum.IntEnum):
    """Order of an attribute's (v17+) or a dimension label's (v18+) data."""

    UNORDERED_DATA = 0
    INCREASING_DATA = 1
    DECREASING_DATA = 2


class ObjectType(enum.IntEnum):
    """Type of a group member."""

    INVALID = 0
    GROUP = 1
    ARRAY = 2


class CurrentDomainType(enum.IntEnum):
    NDRECTANGLE = 0


class WebpInputFormat(enum.IntEnum):
    WEBP_NONE = 0
    WEBP_RGB = 1
    WEBP_BGR = 2
    WEBP_RGBA = 3
    WEBP_BGRA = 4


class QueryConditionOp(enum.IntEnum):
    LT = 0
    LE = 1
    GT = 2
    GE = 3
    EQ = 4
    NE = 5
    IN = 6
    NOT_IN = 7
    ALWAYS_TRUE = 253
    ALWAYS_FALSE = 254


class CombinationOp(enum.IntEnum):
    AND = 0
    OR = 1
    NOT = 2


class NodeType(enum.IntEnum):
    """Node of a serialized delete/update condition."""

    EXPRESSION = 0
    VALUE = 1


class OptionalSectionId(enum.IntEnum):
    """Identifier of a v23 fragment-metadata footer optional section (u64 on disk)."""

    TILE_GLOBAL_ORDER_OFFSETS = 0


DatatypeEnum = StrictEnum(Int8ul, Datatype)
FilterTypeEnum = StrictEnum(Int8ul, FilterType)
CompressorEnum = StrictEnum(Int8ul, Compressor)
EncryptionEnum = StrictEnum(Int8ul, EncryptionType)
LayoutEnum = StrictEnum(Int8ul, Layout)
ArrayTypeEnum = StrictEnum(Int8ul, ArrayType)
DataOrderEnum = StrictEnum(Int8ul, DataOrder)
ObjectTypeEnum = StrictEnum(Int8ul, ObjectType)
CurrentDomainTypeEnum = StrictEnum(Int8ul, CurrentDomainType)
WebpInputFormatEnum = StrictEnum(Int8ul, WebpInputFormat)
QueryConditionOpEnum = StrictEnum(Int8ul, QueryConditionOp)
CombinationOpEnum = StrictEnum(Int8ul, CombinationOp)
NodeTypeEnum = StrictEnum(Int8ul, NodeType)
OptionalSectionIdEnum = Int64ul  # unknown identifiers are kept, not refused: readers skip them

# Enum tables must not repeat a value: an IntEnum would silently alias it.
for _cls in (Datatype, FilterType, Compressor, EncryptionType, Layout, ArrayType, DataOrder, ObjectType,
             CurrentDomainType, WebpInputFormat, QueryConditionOp, CombinationOp, NodeType, OptionalSectionId):
    assert len(_cls.__members__) == len(set(m.value for m in _cls)), _cls


# --- The pre-v1 dialects (prev1.md §1): the same numbers in 0.x and 1.0-1.3 ---

class LegacyDatatype(enum.IntEnum):
    """Cell datatype of the 0.x and 1.x dialects: v1's first eleven (the rest came later)."""

    INT32 = 0
    INT64 = 1
    FLOAT32 = 2
    FLOAT64 = 3
    CHAR = 4
    INT8 = 5
    UINT8 = 6
    INT16 = 7
    UINT16 = 8
    UINT32 = 9
    UINT64 = 10

    @property
    def datatype(self) -> Datatype:
        return Datatype(int(self))


class LegacyCompressor(enum.IntEnum):
    """Per-attribute compressor of the 0.x and 1.x dialects (0.1-0.4: NONE and GZIP only; 0.5 adds
    ZSTD to RLE, 0.6 BZIP2, 1.0 DOUBLE_DELTA; blosc left in 1.4)."""

    NO_COMPRESSION = 0
    GZIP = 1
    ZSTD = 2
    LZ4 = 3
    BLOSC = 4
    BLOSC_LZ4 = 5
    BLOSC_LZ4HC = 6
    BLOSC_SNAPPY = 7
    BLOSC_ZLIB = 8
    BLOSC_ZSTD = 9
    RLE = 10
    BZIP2 = 11
    DOUBLE_DELTA = 12


class LegacyLayout(enum.IntEnum):
    """Tile and cell order of the pre-v1 dialects (0.x has only the first two)."""

    ROW_MAJOR = 0
    COL_MAJOR = 1
    GLOBAL_ORDER = 2
    UNORDERED = 3


for _cls in (LegacyDatatype, LegacyCompressor, LegacyLayout):
    assert len(_cls.__members__) == len(set(m.value for m in _cls)), _cls
__all__ += ["LegacyDatatype", "LegacyCompressor", "LegacyLayout"]
