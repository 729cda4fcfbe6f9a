"""The values a write is given, checked and brought to the columns a fragment stores, before the first byte is
written: a value the field cannot hold exactly is refused with the argument named (``lossy=True`` casts as
numpy's ``astype`` does), coordinates outside the domain (and from v22 the current domain) or NaN are refused,
as are strings a field cannot store, and enumeration codes past their enumeration's values.

Belongs with the writer (``write/`` in the target layout); it sits in ``array/`` beside ``writer.py`` until
that moves, since ``array/`` may not import from ``write/``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numpy.lib.recfunctions import structured_to_unstructured

from ..enums import Datatype
from ..structs.array_schema import value_dtype
from ..array.cells import cell_dtype
from .tiling import Utf8Column, utf8_cells

__all__ = ["column", "cast", "validity", "check_coordinates", "check_current_domain", "check_codes"]

_STRINGS = {Datatype.STRING_ASCII, Datatype.STRING_UTF8, Datatype.CHAR, Datatype.BLOB, Datatype.ANY,
            Datatype.GEOM_WKB, Datatype.GEOM_WKT}
_BYTES = (bytes, bytearray, memoryview, np.bytes_)
_BOOL_RANGE = SimpleNamespace(min=0, max=1)  # (as np.iinfo gives a range)


def column(values, info, name: str, shape: tuple, *, lossy: bool = False, dimension: bool = False,
           streams=None) -> np.ndarray:
    """``values`` as the column field ``info`` stores, of ``shape`` cells: its cell dtype (several values a cell
    as a record; a complex number as its (real, imaginary) pair), or objects for var-sized fields. ``name``:
    the argument, as messages give it; a ``dimension``'s ASCII strings hold ASCII only (TileDB-Py refuses
    others; its ASCII attributes take any bytes). ``streams``: where the column is one tile, the
    :class:`~..filters.pipeline.TileStream` of its bytes and of its offsets, to take its str cells as they
    are encoded."""
    data = np.ma.getdata(values) if isinstance(values, np.ma.MaskedArray) else values
    if info.var:
        arr = _var_column(data, info, name, shape, info.nullable, dimension and info.datatype == Datatype.STRING_ASCII,
                          streams)
    else:
        arr = _fixed_column(data, info, name, shape, lossy)
    if arr.shape != tuple(shape):
        raise ValueError(f"{name}: shape {arr.shape} does not match the {tuple(shape)} cells written")
    return arr


def _fixed_column(data, info, name, shape, lossy) -> np.ndarray:
    dtype = cell_dtype(info)
    arr = _as_array(data, name)
    if dtype.names:
        arr = _records(arr, info, dtype, shape, name, lossy)
    elif dtype.kind == "c" and (arr.dtype.names or arr.dtype.kind in "iuf" and arr.shape[:-1] == tuple(shape)
                                and arr.shape[-1:] == (2,)):
        arr = _complex_pairs(arr, dtype, name, lossy)
    elif dtype.kind == "S":
        arr = _chars(arr, dtype, name, lossy)
    else:
        arr = cast(arr, dtype, name, lossy=lossy)
    return arr


def _complex_pairs(arr, dtype, name, lossy) -> np.ndarray:
    """Records of (real, imaginary), or pairs on an axis past the cells', as the complex numbers a cell of two
    floats stores (what tdbformat read before it read complex numbers, as TileDB-Py does)."""
    if arr.dtype.names:
        arr = structured_to_unstructured(arr)
    pairs = cast(arr, np.dtype(f"<f{dtype.itemsize // 2}"), name, lossy=lossy)
    return np.ascontiguousarray(pairs).view(dtype)[..., 0]


def _as_array(data, name: str) -> np.ndarray:
    arr = np.asarray(data)
    if arr.dtype == object:  # a list of mixed Python values: numpy's own type for them, if it has one
        try:
            arr = np.asarray(arr.tolist())
        except (TypeError, ValueError, OverflowError):
            pass
        if arr.dtype == object:
            raise TypeError(f"{name}: values of mixed or non-numeric types ({_first_type(arr)}) for a fixed-size field")
    return arr


def _first_type(arr) -> str:
    return next((type(v).__name__ for v in arr.reshape(-1).tolist() if not isinstance(v, (int, float))), "object")


def cast(arr: np.ndarray, dtype: np.dtype, name: str, *, lossy: bool = False) -> np.ndarray:
    """``arr`` as ``dtype``, refused (TypeError for a kind numpy's ``same_kind`` rule refuses, ValueError for a
    value the cast would change) unless it is exact or ``lossy``. Ints go into any integer type whose range
    holds them, and into datetimes and times as the int64 TileDB stores."""
    src = arr.dtype
    if src == dtype:
        return arr
    if lossy:
        try:
            return arr.astype(dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{name}: values of dtype {src} cannot be stored as {dtype}: {e}") from None
    kinds = src.kind + dtype.kind
    if kinds in ("UM", "SM"):  # dates as text: parsed in their own unit, then brought to the field's exactly
        text = arr.astype("U")
        # (a year of four digits first: numpy reads "7" as the year 7, which no one means)
        year = text.astype("U4")
        if not ((np.char.str_len(year) == 4) & np.char.isdigit(year) | (text == "NaT")).all():
            raise TypeError(f"{name}: text that is not dates of a four-digit year for {dtype} cells")
        try:
            parsed = text.astype("M8")
        except ValueError as e:
            raise TypeError(f"{name}: {e} (expected dates for {dtype} cells)") from None
        return cast(parsed, dtype, name, lossy=lossy)
    if kinds[0] in "iu" and kinds[1] in "iumMb":  # (ints into bools: 0 and 1)
        _check_range(arr, _BOOL_RANGE if kinds[1] == "b" else np.iinfo(dtype if kinds[1] in "iu" else np.int64),
                     name, dtype)
        return arr.astype(dtype) if kinds[1] in "iub" else arr.astype(np.int64).view(dtype)
    if kinds in ("MM", "mm") or kinds[0] == "b" and kinds[1] in "iuf":
        out = arr.astype(dtype)
    elif kinds[1] in "mM" or not np.can_cast(src, dtype, "same_kind") or src.kind not in "biufc":
        raise TypeError(f"{name}: values of dtype {src} cannot be stored as {dtype} without loss (pass lossy=True "
                        "to cast them anyway)")
    else:
        with np.errstate(all="ignore"):
            out = arr.astype(dtype)
    _check_exact(arr, out, name, dtype)
    return out


def _check_range(arr, info, name, dtype):
    if arr.size and (int(arr.min()) < info.min or int(arr.max()) > info.max):
        bad = arr.reshape(-1)[np.flatnonzero((arr.reshape(-1) < info.min) | (arr.reshape(-1) > info.max))[0]]
        raise ValueError(f"{name}: {bad} does not fit {dtype} ([{info.min}, {info.max}]; pass lossy=True to wrap)")


def _check_exact(arr, out, name, dtype):
    """Ints and datetimes must come back equal; floats may round but not overflow to infinity."""
    with np.errstate(all="ignore"):
        if arr.dtype.kind in "iumM":  # (ints into a complex field: its real part comes back, not a ComplexWarning)
            back = (out.real if out.dtype.kind == "c" else out).astype(arr.dtype)
            changed = (back != arr) & ~(np.isnat(arr) if arr.dtype.kind in "mM" else False)
        else:
            changed = np.isfinite(arr) & ~np.isfinite(out)
    if changed.any():
        bad = arr.reshape(-1)[np.flatnonzero(changed.reshape(-1))[0]]
        raise ValueError(f"{name}: {bad!r} cannot be stored as {dtype} exactly (pass lossy=True to cast anyway)")


def _records(arr, info, dtype, shape, name, lossy) -> np.ndarray:
    """Cells of several values: records, a value axis last, or complex numbers for two floats."""
    n, base = info.cell_val_num, dtype[0]
    if arr.dtype.names:
        if len(arr.dtype.names) != n:
            raise ValueError(f"{name}: records of {len(arr.dtype.names)} fields for cells of {n} values")
        parts = [arr[f] for f in arr.dtype.names]
    elif arr.dtype.kind == "c" and n == 2 and base.kind == "f":
        parts = [arr.real, arr.imag]
    elif arr.shape == tuple(shape) + (n,):
        parts = [arr[..., i] for i in range(n)]
    else:
        raise ValueError(f"{name}: shape {arr.shape} does not match the {tuple(shape)} cells of {n} values written "
                         f"(give records, complex numbers for two floats, or a last axis of {n} values)")
    out = np.empty(parts[0].shape, dtype)
    for f, part in zip(dtype.names, parts):
        out[f] = cast(np.asarray(part), base, name, lossy=lossy)
    return out


def _chars(arr, dtype, name, lossy) -> np.ndarray:
    """Fixed-size CHAR cells ("S<n>"): bytes or ASCII str of at most n characters."""
    if arr.dtype.kind not in "SU":
        raise TypeError(f"{name}: expected str or bytes for {dtype} cells, not {arr.dtype}")
    try:
        out = arr.astype(dtype) if arr.dtype.kind == "S" or lossy else np.char.encode(arr, "ascii")
    except UnicodeEncodeError as e:
        raise ValueError(f"{name}: a fixed-size CHAR cell holds ASCII only ({e.reason} at {e.start})") from None
    if not lossy and out.dtype.itemsize > dtype.itemsize and (np.char.str_len(out) > dtype.itemsize).any():
        raise ValueError(f"{name}: a cell longer than {dtype.itemsize} bytes (pass lossy=True to cut it)")
    return out.astype(dtype)


def _var_column(data, info, name, shape, nullable_none, ascii_only, streams=None) -> np.ndarray:
    """An object column of var cells, each one the field can store: str or bytes for strings (UTF-8 text, ASCII
    where the type says so), arrays of values otherwise; None only where a nullable field's cell is null."""
    if isinstance(data, np.ndarray) and data.dtype == object:
        out = data
    else:
        out = np.empty(np.shape(data), object)
        out[...] = data if isinstance(data, np.ndarray) else np.asarray(data, object)
    if info.datatype in _STRINGS:
        encoded = _str_cells(out.reshape(-1), name, ascii_only, streams if out.flags.c_contiguous else None)
        if encoded is not _NOT_ALL_STR:
            return Utf8Column.of(out, encoded, streams) if encoded is not None and out.flags.c_contiguous else out
    values = out.reshape(-1).tolist()
    if nullable_none and None in values:  # a null cell (validity() marks it): stored empty, the input kept
        out = out.copy()
        out[np.equal(out, None)] = b""
    if info.datatype in _STRINGS:
        _check_strings(values, name, nullable_none, ascii_only)
    else:
        for i, v in enumerate(values):
            if v is None and nullable_none:
                continue
            if isinstance(v, (str, _BYTES)) or v is None:
                raise TypeError(f"{name}: cell {i} is {type(v).__name__}, expected an array of "
                                f"{info.datatype.name} values")
            cast(_as_array(v, f"{name}[{i}]"), info.datatype.numpy_dtype, f"{name}[{i}]")
    return out


_NOT_ALL_STR = object()


def _str_cells(flat: np.ndarray, name, ascii_only, streams=None) -> tuple | None:
    """:func:`~.tiling.utf8_cells` of a column of str cells, checked (text UTF-8 can hold, ASCII only for ASCII
    dimensions): made once, for this check and for the tiles (:class:`~.tiling.Utf8Column`), without a list of
    the column's cells (1M: 8 MB of fresh pages); ``_NOT_ALL_STR`` where a cell is not str."""
    try:
        encoded = utf8_cells(flat, streams)
    except TypeError:
        return _NOT_ALL_STR
    except UnicodeEncodeError:
        values = flat.tolist()
        i = next(i for i, v in enumerate(values) if not _encodes(v))
        raise ValueError(f"{name}: cell {i} ({values[i]!r}) is not text UTF-8 can hold (a lone surrogate)") from None
    if ascii_only and not ((encoded[0] < 0x80).all() if encoded is not None else all(map(str.isascii, flat))):
        _not_ascii(flat.tolist(), name)
    return encoded


def _check_strings(values: list, name, nullable_none, ascii_only) -> None:
    """Every cell str or bytes (None where null), its text UTF-8 can hold, ASCII only for ASCII dimensions, of a
    column not all str (:func:`_str_cells`); in whole-column C loops where the cells are all bytes (a Python
    loop cost 0.3 s a million)."""
    texts, raw = None, _joined(values, b"")
    if raw is None:  # mixed: each cell checked, the text and bytes apart
        for i, v in enumerate(values):
            if not (isinstance(v, (str, _BYTES)) or v is None and nullable_none):
                what = "None in a non-nullable field" if v is None else type(v).__name__
                raise TypeError(f"{name}: cell {i} is {what}, expected str or bytes")
        texts = "".join(v for v in values if isinstance(v, str))
        raw = b"".join(bytes(v) for v in values if isinstance(v, _BYTES))
    if ascii_only and not raw.isascii():
        raise ValueError(f"{name}: an ASCII dimension holds bytes 0-127 only")
    if not texts or texts.isascii():
        return
    if ascii_only:
        _not_ascii(values, name)
    if not _encodes(texts):
        i = next(i for i, v in enumerate(values) if isinstance(v, str) and not _encodes(v))
        raise ValueError(f"{name}: cell {i} ({values[i]!r}) is not text UTF-8 can hold (a lone surrogate)")


def _not_ascii(values: list, name):
    i = next(i for i, v in enumerate(values) if isinstance(v, str) and not v.isascii())
    raise ValueError(f"{name}: cell {i} ({values[i]!r}) is not ASCII, and the dimension is STRING_ASCII")


def _joined(values: list, empty):
    """The cells joined if all are of ``empty``'s type (str or bytes), else None."""
    try:
        return empty.join(values)
    except TypeError:
        return None


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validity(values, given, info, name: str, shape) -> np.ndarray | None:
    """The validity of a nullable field's cells: ``given`` (``validity=``), else a masked array's mask (a
    record cell null when all its values are masked), and None cells of var columns null. None for a field
    that is not nullable, which takes no validity."""
    mask = np.ma.getmask(values) if isinstance(values, np.ma.MaskedArray) else np.ma.nomask
    if mask is not np.ma.nomask and mask.dtype.names:
        fields = np.stack([mask[f] for f in mask.dtype.names], axis=-1)
        if (fields.any(-1) != fields.all(-1)).any():
            raise ValueError(f"{name}: a cell with some of its values masked (a cell is null as a whole)")
        mask = fields.all(-1)
    if not info.nullable:
        if given is not None or np.any(mask):
            raise ValueError(f"{name}: the attribute is not nullable, so it takes no validity")
        return None
    if given is not None:
        valid = np.asarray(given, bool)
        if valid.shape != tuple(shape):
            raise ValueError(f"validity[{info.name!r}]: shape {valid.shape} is not the values' {tuple(shape)}")
    else:
        valid = ~np.broadcast_to(mask, tuple(shape)) if mask is not np.ma.nomask else np.ones(shape, bool)
    if info.var:
        nones = np.equal(np.asarray(np.ma.getdata(values), object), None)
        if nones.any():  # None is a null cell, as TileDB-Py takes it
            if given is not None and (valid & nones).any():
                raise ValueError(f"{name}: None in a cell validity= marks valid")
            valid = valid & ~nones
    return valid


def check_coordinates(keys: dict, dims, schema) -> None:
    """Every coordinate inside its dimension's domain and, from v22, the current domain (compared in the
    dimension's own type, never through float64), and no NaN (a fragment with one is invisible to readers)."""
    current = _current(schema)
    for j, ((name, col), d, sd) in enumerate(zip(keys.items(), dims, schema.domain.dimensions)):
        if not len(col):
            continue
        if d.var:
            if current is not None:
                lo, hi = current[j]
                out = [v for v in col.tolist() if not lo <= v <= hi]
                if out:
                    raise ValueError(f"coords[{name!r}]: {out[0]!r} is outside the current domain [{lo!r}, {hi!r}]")
            continue
        if col.dtype.kind == "f" and np.isnan(col).any():
            raise ValueError(f"coords[{name!r}]: NaN at cell {int(np.flatnonzero(np.isnan(col))[0])}; a fragment "
                             "with a NaN coordinate has a NaN non-empty domain and no reader sees its cells")
        vt = value_dtype(d.datatype)
        for what, bounds in (("domain", sd.domain), ("current domain", current and current[j])):
            if not bounds:
                continue
            lo_, hi_ = np.array(bounds, vt)
            values = col.view(vt) if col.dtype.kind in "mM" else col
            bad = (values < lo_) | (values > hi_)
            if bad.any():
                raise ValueError(f"coords[{name!r}]: {values[np.flatnonzero(bad)[0]]!r} is outside dimension "
                                 f"{d.name}'s {what} [{lo_}, {hi_}]")


def _current(schema) -> list | None:
    current = schema.get("current_domain")
    if current is None or current.empty:
        return None
    return [(r.start, r.end) for r in current.ndrectangle]


def check_current_domain(schema, subarray) -> None:
    """A dense write's inclusive ``subarray`` inside the current domain (v22+), as TileDB refuses one outside."""
    current = _current(schema)
    for d, (lo, hi), cur in zip(schema.domain.dimensions, subarray, current or []):
        if not int(cur[0]) <= lo <= hi <= int(cur[1]):
            raise ValueError(f"subarray: [{lo}, {hi}] is outside dimension {d.name}'s current domain "
                             f"[{int(cur[0])}, {int(cur[1])}]")


def check_codes(column: np.ndarray, valid, count: int, name: str, enumeration: str) -> None:
    """An enumerated attribute's codes index its enumeration's ``count`` values (null cells aside)."""
    codes = column if valid is None else column[valid]
    if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= count):
        bad = codes[(codes < 0) | (codes >= count)][0]
        raise ValueError(f"{name}: code {bad} is not an index of enumeration {enumeration!r}'s {count} values")
