"""Cells as numpy: the dtype of a field's values, var-sized cells from offsets and bytes, validity masks,
fill values and the empty columns TileDB-Py gives (REFERENCE.md §4, §8)."""

from __future__ import annotations

import numpy as np

from ..enums import Datatype
from ..errors import FormatError
from ..filters.pipeline import byte_ranges, each
from ..filters.strings import SAMPLE, arrow, arrow_ints, cell_words, equal_cells, sampled_distinct
from ..structs import array_schema as schema_mod

__all__ = ["cell_dtype", "result_bytes", "result_dtype", "empty_column", "split_var", "check_var_offsets",
           "entry_values", "filled",
           "masked", "metadata_value", "tiledb_py_metadata", "nonempty_bound", "like", "U64", "ordinal", "from_ordinal",
           "range_bound"]

U64 = np.dtype("<u8")
_STRINGS = {Datatype.STRING_ASCII, Datatype.STRING_UTF8, Datatype.CHAR, Datatype.BLOB}


def cell_dtype(info) -> np.dtype:
    """The numpy dtype of one cell of a fixed-size field (a record of ``cell_val_num`` values if several; two
    float32s or float64s are a complex64 or complex128, as TileDB-Py reads and writes them)."""
    base = info.datatype.numpy_dtype
    if info.cell_val_num == 1:
        return base
    if base.kind == "S":
        return np.dtype(f"S{info.cell_val_num}")
    if base.kind == "f" and info.cell_val_num == 2 and base.itemsize in (4, 8):
        return np.dtype(f"<c{2 * base.itemsize}")
    return np.dtype(",".join([base.str] * info.cell_val_num))


def result_bytes(info) -> int:
    """Bytes of one result cell, without building its dtype (a schema's cell_val_num is unproven until data
    backs it): an object pointer for var fields, else cell_val_num values."""
    return np.dtype(object).itemsize if info.var else info.datatype.size * info.cell_val_num


def result_dtype(info) -> np.dtype:
    return np.dtype(object) if info.var else cell_dtype(info)


def empty_column(info, column: np.ndarray) -> np.ndarray:
    """An empty result column as TileDB-Py gives it: var strings as "S1" (UTF-8: "U1") rather than objects."""
    if len(column) or not info.var or info.datatype not in _STRINGS:
        return column
    return np.empty(0, "U1" if info.datatype == Datatype.STRING_UTF8 else "S1")


def split_var(data, offsets: np.ndarray, info, into=None, threads: int = 1) -> np.ndarray:
    """A var tile's cells as an object array: str for UTF-8, bytes for other strings, arrays otherwise
    (repeated strings put into ``into``, as :func:`entry_values`; ``threads`` group them). The offsets must
    start at 0, never decrease and stay within ``data``."""
    n = len(offsets)
    check_var_offsets(offsets, len(data))
    pa = arrow(n) if info.datatype in _STRINGS else None  # pyarrow's C loops where it is installed, else numpy
    if pa is None:
        data = bytes(data)  # (sliced here: a view's slices are views, not bytes)
    if info.datatype in _STRINGS:
        starts = offsets.astype(np.int64)
        fast = _arrow_strings(pa, data, starts, info, into, threads) if pa else \
            _shared(data, starts, _lengths(starts, data), info, into)
        if fast is not None:
            return fast
    ends, data = np.append(offsets[1:], np.uint64(len(data))).tolist(), bytes(data)
    return _objects(_values([data[a:b] for a, b in zip(offsets.tolist(), ends)], info))


def check_var_offsets(offsets: np.ndarray, size: int) -> None:
    """Refuse a var tile's offsets that do not start at 0, fall, or pass its ``size`` bytes."""
    if len(offsets) and (offsets[0] != 0 or np.any(offsets[1:] < offsets[:-1]) or offsets[-1] > size):
        raise FormatError(f"var offsets do not rise from 0 to at most the {size} bytes of the var tile")


def entry_values(entries, info, into=None) -> np.ndarray:
    """The values of the cells of string RLE or dictionary :class:`~tdbformat.filters.pipeline.Entries`,
    each string's value made once (the same string in several runs too), then shared by its cells; put
    into ``into`` where that is an object array of as many cells (a place in the read's result)."""
    data, starts, lengths = entries.buf.tobytes(), entries.starts, entries.lengths
    # (a dictionary's strings differ: only runs are grouped)
    grouped = _grouped(data, starts, lengths, info) if entries.repeats is not None else None
    values, codes = grouped or (_distinct_values(data, starts, lengths, info, arrow(len(starts))), None)
    if entries.repeats is not None:  # each cell's run, then that run's value: ints, then one gather of objects
        runs = _run_of_each_cell(entries.repeats)
        codes = runs if codes is None else np.take(codes, runs)
    else:
        codes = entries.codes  # (ids the filter checked against its strings)
    return _gather(values, codes, into)


def _gather(values: np.ndarray, codes: np.ndarray, into=None) -> np.ndarray:
    """``values[codes]``, put into ``into`` where that is an object array of as many cells (a place in the
    read's result: no array of the tile's own, no second copy). Every code is in range."""
    if into is not None and len(into) == len(codes):
        return np.take(values, codes, out=into, mode="clip")  # (clip: no buffered check of the codes)
    return np.take(values, codes, mode="clip")


def _run_of_each_cell(repeats: np.ndarray) -> np.ndarray:
    """The run of each cell, for runs of ``repeats`` cells, empty ones too: a running count of the runs that
    end before it (np.repeat of the run numbers took 2.6x as long)."""
    ends = np.cumsum(repeats)
    total = int(ends[-1]) if len(ends) else 0
    return np.cumsum(np.bincount(ends[:-1], minlength=total + 1)[:total])


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), object)  # (np.array would make arrays of equal-length cells one 2-D array)
    out[:] = values
    return out


def _lengths(starts: np.ndarray, data) -> np.ndarray:
    return np.diff(np.append(starts, len(data)))


def _values(cells: list, info) -> list:
    """Each var cell's bytes as the value a read gives: str for UTF-8 (bad bytes kept as surrogates), bytes
    for other strings, a numpy array of the datatype otherwise."""
    # a string cell of one NUL byte (the fill value of var strings, which consolidation writes into gaps)
    # reads as empty, as TileDB-Py's unpack_buffer gives it; a BLOB one stays a NUL, as TileDB-Py gives it
    if info.datatype == Datatype.STRING_UTF8:
        return ["" if c == b"\0" else c.decode("utf-8", "surrogateescape") for c in cells]
    if info.datatype in (Datatype.STRING_ASCII, Datatype.CHAR):  # (trailing NULs kept, as TileDB-Py 0.36 keeps them)
        return [b"" if c == b"\0" else c for c in cells]
    if info.datatype in (Datatype.BLOB, Datatype.ANY):
        return cells
    size = info.datatype.size
    if any(len(c) % size for c in cells):
        raise FormatError(f"a var cell is not whole {info.datatype.name} values")
    return [np.frombuffer(c, info.datatype.numpy_dtype) for c in cells]


def _arrow_strings(pa, data: bytes, starts: np.ndarray, info, into=None, threads: int = 1):
    """Var string cells as an object array built by pyarrow from the offsets and bytes in C loops (about 4x
    faster than slicing and decoding cell by cell; benchmarks/read.py), or None where the cell-by-cell loop
    must run: UTF-8 that does not validate (the loop keeps bad bytes as surrogates)."""
    bounds = np.append(starts, len(data))
    cells = pa.Array.from_buffers(pa.large_binary(), len(starts), [None, pa.py_buffer(bounds), pa.py_buffer(data)])
    shared = _arrow_shared(pa, cells, info, into, threads)
    return shared if shared is not None else _arrow_values(pa, cells, data, bounds, info)


def _arrow_values(pa, cells, data, bounds: np.ndarray, info):
    """:func:`_values` of the pyarrow ``large_binary`` array ``cells`` (``data`` at ``bounds``) in one C loop,
    or None for UTF-8 that does not validate."""
    if info.datatype == Datatype.STRING_UTF8:
        cells = cells.view(pa.large_string())
        try:
            cells.validate(full=True)
        except pa.ArrowInvalid:
            return None
    out = _objects(cells.to_pylist())  # (to_numpy would import pandas, 0.4 s, for the same objects)
    if info.datatype in (Datatype.BLOB, Datatype.ANY):
        return out
    lone = np.flatnonzero(np.diff(bounds) == 1)  # cells of one byte: a NUL one reads as empty (_values)
    lone = lone[np.frombuffer(data, np.uint8)[bounds[lone]] == 0]
    if len(lone):
        out[lone] = "" if info.datatype == Datatype.STRING_UTF8 else b""
    return out


def _arrow_shared(pa, cells, info, into=None, threads: int = 1):
    """:func:`_shared` through pyarrow: a hash pass in C (``dictionary_encode``, a part of the cells a thread:
    16.5 ms for 1M cells of 1,000 words on one, 8.3 on two), the loop's conversion of each part's distinct
    values, then a gather (2.7 ms a tile of 100,000 cells of 1,000 words, where numpy's table takes 6.3)."""
    picks = np.linspace(0, len(cells) - 1, min(len(cells), SAMPLE)).astype(np.int64)
    # (arrow indices made of their bytes: given numpy's, take imports pandas, 0.2 s, in a process's first read)
    sample = cells.take(pa.Array.from_buffers(pa.int64(), len(picks), [None, pa.py_buffer(picks)]))
    if len(sample.unique()) * 4 > len(sample):
        return None
    n = len(cells)
    parts = max(1, min(threads, n // _PART))
    bounds = [n * p // parts for p in range(parts + 1)]
    coded = each(lambda p: cells.slice(bounds[p], bounds[p + 1] - bounds[p]).dictionary_encode(), list(range(parts)),
                 parts)
    out = into if into is not None and len(into) == n else np.empty(n, object)
    for p, part in enumerate(coded):
        values = _objects(_values(part.dictionary.to_pylist(), info))
        _gather(values, arrow_ints(part.indices), out[bounds[p]:bounds[p + 1]])
    return out


#: cells from which each thread groups a part of a var tile's strings
_PART = 1 << 16


def _shared(data: bytes, starts: np.ndarray, lengths: np.ndarray, info, into=None):
    """Where a sample shows the strings ``data`` [start, start+length) repeat, their values as an object array
    holding one value per distinct byte string, shared by its cells (as pandas' ``to_pandas`` does by
    default); None where they do not repeat enough to pay, or are too long for their words to be cheap."""
    grouped = _grouped(data, starts, lengths, info)
    return None if grouped is None else _gather(*grouped, into)


def _grouped(data: bytes, starts: np.ndarray, lengths: np.ndarray, info):
    """(the value of each distinct string, which of them each string is) for :func:`_shared`, or None.

    Equal cells are found in numpy (:func:`~tdbformat.filters.strings.equal_cells`); each group's value is
    made once, by pyarrow where it is loaded (0.12 ms for 2,005 words, where slicing and decoding took 0.35)."""
    words = -(-int(lengths.max(initial=0)) // 8)
    if len(starts) < 64 or words > _WORDS:
        return None
    cols = cell_words(np.frombuffer(data, np.uint8), starts, lengths, words)
    distinct, sampled = sampled_distinct(cols)
    if distinct * 4 > sampled:
        return None
    first, group = equal_cells(cols, distinct)
    return _distinct_values(data, starts[first], lengths[first], info, arrow(len(starts))), group


def _distinct_values(data: bytes, starts, lengths, info, pa) -> np.ndarray:
    """The values of the strings ``data`` [start, start+length): through pyarrow when ``pa``, once they are
    put back to back, else slice by slice."""
    values = None
    if pa is not None and info.datatype in _STRINGS:
        bounds = np.zeros(len(starts) + 1, np.int64)
        np.cumsum(lengths, out=bounds[1:])
        packed = np.frombuffer(data, np.uint8)[byte_ranges(starts, lengths)].tobytes()
        cells = pa.Array.from_buffers(pa.large_binary(), len(starts),
                                      [None, pa.py_buffer(bounds), pa.py_buffer(packed)])
        values = _arrow_values(pa, cells, packed, bounds, info)
    if values is None:
        values = _objects(_values([data[a:a + b] for a, b in zip(starts.tolist(), lengths.tolist())], info))
    return values


#: longest cells shared, in words of 8 bytes (past that, the words cost more than the loop saves)
_WORDS = 8


def filled(info, attribute, shape, empty: bool = False, stored: bool = False) -> np.ndarray:
    """A dense result array of ``shape`` holding ``attribute``'s fill value (uninitialised, or None for var
    fields, if ``empty``; ``stored``: a default string fill as the bytes TileDB stores, not as TileDB-Py
    shows it)."""
    fill = schema_mod.fill_value(attribute)
    if info.var and empty:  # (None in every cell until the read puts its values)
        return np.empty(shape, object)
    if info.var:
        data = bytes(fill) if fill is not None else _default_fill(info).tobytes()
        nul = info.datatype.is_string and data == b"\0"  # the default, which TileDB-Py shows as ""
        value = split_var(b"" if nul else data, np.zeros(1, U64), info)[0]
        out = np.empty(shape, object)
        out.fill((b"\0" if isinstance(value, bytes) else "\0") if nul and stored else value)
        return out
    dtype = cell_dtype(info)
    if empty:
        return np.empty(shape, dtype)
    # the default is one value's: a cell of several (CHAR "S3", records) holds it in each
    value = np.frombuffer(fill.tobytes() if fill is not None else _default_fill(info).tobytes() * info.cell_val_num,
                          dtype)[0]
    return np.full(shape, value, dtype)


def _default_fill(info):
    """TileDB's default fill value of a datatype (before v6 schemas stored one; REFERENCE.md, constants::fill_value):
    min of signed integers, max of unsigned ones, NaN for floats, INT64 min for datetimes and times, 0x80 for
    CHAR, 0 for the rest (strings, BLOB, BOOL, ANY, GEOM_*)."""
    dt = info.datatype.numpy_dtype
    if dt.kind == "f":
        return np.array(np.nan, dt)
    if dt.kind in "Mm" or info.datatype.is_time or info.datatype.is_datetime:
        return np.array(np.iinfo(np.int64).min).astype(dt)
    if info.datatype.is_integer:
        return np.array(np.iinfo(dt).min if dt.kind == "i" else np.iinfo(dt).max, dt)
    if info.datatype == Datatype.CHAR:
        return np.frombuffer(b"\x80" * dt.itemsize, dt)[0]
    return np.zeros((), dt)


def masked(values: np.ndarray, valid):
    return values if valid is None else np.ma.masked_array(values, mask=~valid)


def like(value, column: np.ndarray):
    """A range bound as the kind of value ``column`` holds (bytes bounds for byte-string dimensions)."""
    if isinstance(value, str) and (column.dtype.kind == "S" or (
            column.dtype == object and column.size and isinstance(column[0], bytes))):
        return value.encode()
    return value


def metadata_value(entry):
    """Text as str, blobs as bytes, one number as a scalar, several as a numpy array."""
    datatype = Datatype(entry.datatype)
    raw = np.asarray(entry.value)
    if datatype.is_string or datatype == Datatype.CHAR:
        return raw.tobytes().decode("utf-8", "surrogateescape")
    if datatype in (Datatype.BLOB, Datatype.ANY):
        return raw.tobytes()
    return raw[0] if raw.size == 1 else raw


#: the keys TileDB-Py stores a numpy array's values and shape under (tiledb/metadata.py)
NP_FLAT, NP_SHAPE = "__np_flat_", "__np_shape_"


def tiledb_py_metadata(entries: dict) -> dict:
    """Folded metadata ``{key: entry}`` as TileDB-Py's ``A.meta`` decodes it, in TileDB's key order: a
    numpy array under its own key (values from ``__np_flat_<key>``, shape from ``__np_shape_<key>``),
    one integer or float as a numpy scalar, several as a tuple of Python numbers, UTF-8 text as str, CHAR text
    and blobs as bytes."""
    out = {}
    for k in sorted(entries):
        if k.startswith(NP_SHAPE):
            continue
        value = metadata_value(entries[k])
        if Datatype(entries[k].datatype) == Datatype.CHAR:  # TileDB-Py reads CHAR as numpy "S": bytes
            value = value.encode("utf-8", "surrogateescape")
        if k.startswith(NP_FLAT):
            value = np.atleast_1d(value)
            shape = entries.get(NP_SHAPE + k[len(NP_FLAT):])
            out[k[len(NP_FLAT):]] = value if shape is None else value.reshape(np.asarray(shape.value).tolist())
        elif isinstance(value, np.ndarray):
            out[k] = tuple(value.tolist())
        elif isinstance(value, np.generic) and value.dtype.kind not in "if":
            out[k] = value.item()
        else:
            out[k] = value
    return out


def nonempty_bound(info, value):
    """A non-empty domain bound as TileDB-Py's ``nonempty_domain()`` gives it: bytes for string dimensions,
    datetime64 for datetime ones, else a numpy scalar of the dimension's type."""
    dtype = info.datatype.numpy_dtype
    if info.var or dtype.kind == "S":
        return value.encode() if isinstance(value, str) else bytes(value)
    if dtype.kind in "mM":
        return np.array(int(value), "<i8").view(dtype)[()]
    return dtype.type(value)


def ordinal(column: np.ndarray) -> np.ndarray:
    """A coordinate column as the values TileDB orders it by: datetimes and times as their int64."""
    return column.view("<i8") if column.dtype.kind in "mM" else column


def from_ordinal(column: np.ndarray, info) -> np.ndarray:
    """The inverse of :func:`ordinal` for a field: int64 back to its datetime64/timedelta64 unit."""
    dtype = info.datatype.numpy_dtype
    return column.view(dtype) if dtype.kind in "mM" and column.dtype.kind == "i" else column


def range_bound(info, value, name: str):
    """A ``ranges=`` bound of dimension ``info`` as the read compares it: datetime64/timedelta64 in any unit
    (or an int of the dimension's unit) for datetime and time dimensions, a number for numeric ones, str or
    bytes for string ones."""
    dtype = info.datatype.numpy_dtype
    if info.var or dtype.kind == "S":
        if isinstance(value, (str, bytes)):
            return value
    elif dtype.kind in "mM":
        if isinstance(value, (np.datetime64, np.timedelta64)) and np.dtype(type(value)).kind == dtype.kind:
            return int(value.astype(dtype).astype("<i8"))
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.datetime64, np.timedelta64)):
            return int(value)
    elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
            value, (bool, np.datetime64, np.timedelta64)):
        return value
    raise TypeError(f"ranges[{name!r}]: {value!r} is not a bound of a {info.datatype.name} dimension")
