"""Enumeration files (enumeration.md; REFERENCE.md §9, §17 #3), format v20 and later.

One generic tile per enumeration in ``<array>/__schema/__enumerations/__<uuid>_0``; the schema lists
each one as a (name, filename) pair. The prose spec leaves out the name and path-name fields.
"""

from __future__ import annotations

import numpy as np
from construct import Flag, If, Int32ul, Int64ul, Rebuild, this

from ..enums import Datatype, DatatypeEnum
from ..fields import Bounded, Raw, Section, Struct, Valid, text_field
from ..numpy_array import NumpyArray
from .array_schema import VAR_NUM, VersionZero
from .generic_tile import generic_tile

__all__ = ["Enumeration", "EnumerationPayload", "enumeration_values"]

def _whole_entries(data, ctx) -> bool:
    return ctx.cell_val_num == VAR_NUM or len(data) % (ctx.cell_val_num * Datatype(ctx.datatype).size) == 0


def _in_order(offsets, ctx) -> bool:
    return bool(np.all(offsets[1:] >= offsets[:-1])) and (not len(offsets) or int(offsets[-1]) <= len(ctx.data))


# Enumeration payload (enumeration.md; REFERENCE.md §9)
EnumerationPayload = Struct(
    "version" / VersionZero("enumeration") * "enumeration format version (0)",
    *text_field("name", Int32ul, "enumeration name (what attributes refer to)"),
    *text_field("path_name", Int32ul, "the file's own name, __<uuid>_0"),
    "datatype" / DatatypeEnum * "datatype of the values",
    "cell_val_num" / Valid(Int32ul, lambda n, ctx: n > 0, "an enumeration has at least one value per entry")
    * "values per entry, 2**32-1 = var-sized",
    "ordered" / Flag * "1 = the values are ordered",
    "data_size" / Rebuild(Int64ul, lambda ctx: len(ctx.data)) * "bytes of data",
    "data" / Valid(Raw(this.data_size, "enumeration data"), _whole_entries,
                   "fixed-size enumeration data is whole entries of cell_val_num values") * "the values, back to back",
    "offsets_size" / If(this.cell_val_num == VAR_NUM, Rebuild(Int64ul, lambda ctx: 8 * len(ctx.offsets)))
    * "bytes of offsets (var-sized only)",
    "offsets" / If(this.cell_val_num == VAR_NUM, Bounded(this.offsets_size, Valid(
        NumpyArray(this.offsets_size // 8, "<u8"), _in_order, "enumeration offsets rise within data"),
        "enumeration offsets")) * "u64 start of each value in data (var-sized only)",
)

#: A whole enumeration file (a generic tile).
Enumeration = Section("Enumeration", "enumeration.md", generic_tile(EnumerationPayload), since=20)


def enumeration_values(enumeration) -> list:
    """The enumeration's values: str for string types, bytes for other var-sized ones, numbers otherwise."""
    datatype = Datatype(enumeration.datatype)
    data = enumeration.data
    if enumeration.cell_val_num == VAR_NUM:
        bounds = [*map(int, enumeration.offsets), len(data)]
        items = [data[a:b] for a, b in zip(bounds, bounds[1:])]
        return [x.decode("utf-8", "surrogateescape") for x in items] if datatype.is_string else items
    values = np.frombuffer(data, datatype.numpy_dtype)
    if enumeration.cell_val_num > 1:
        return values.reshape(-1, enumeration.cell_val_num).tolist()
    return values.tolist()
