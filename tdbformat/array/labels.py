"""Reading by dimension label (format v18+), as TileDB-Py's ``A.label_index([...])[...]``.

A dimension label is a dense array inside the array (``__labels/l<n>``: dimension "index", attribute "label")
whose labels are ordered along the labelled dimension's indices, increasing or decreasing. A label range
selects the indices whose labels lie in it, found as TileDB's ``OrderedDimLabelReader`` finds them: the label
fragments' tile minimums and maximums point to the tiles that may hold each end, and only those are read
(:class:`_Ordered`); the read is then ``multi_index`` over those index ranges, and the result holds each
label's values over them, before the attributes. Datetime and time labels compare as their int64, bounds of
any unit brought to the label's exactly (:func:`datetime_key`).
"""

from __future__ import annotations

import numpy as np

from ..enums import ArrayType, DataOrder
from ..errors import FormatError
from ..structs.fragment import read_section
from .order import tile_grid
from .ranges import RangeError
from .selection import expand, multi_index_ranges

__all__ = ["label_index", "open_label"]


def _label(arr, name: str):
    found = [lab for lab in arr.schema.get("labels") or [] if lab.name == name]
    if not found:
        names = [lab.name for lab in arr.schema.get("labels") or []]
        raise ValueError(f"labels: the array has no dimension label {name!r} (labels: {names})")
    return checked_label(found[0], arr.dims)


def checked_label(label, dims: list):
    """``label`` (a schema's dimension label), if it labels one of ``dims`` (FieldInfo), a fixed-size one."""
    if not 0 <= label.dim_index < len(dims):
        raise FormatError(f"dimension label {label.name!r}: dimension {label.dim_index} of {len(dims)} does not "
                          "exist", structure="Array schema", path="labels.dim_index")
    if dims[label.dim_index].var:
        raise FormatError(f"dimension label {label.name!r}: dimension {dims[label.dim_index].name} is var-sized; a "
                          "label's dimension has integer indices", structure="Array schema", path="labels.dim_index")
    return label


def open_label(storage, root, label, array_class, key=None, timestamp=None):
    """The label array of ``label`` (a schema's dimension label) of the array at ``root``, checked to be one; opened
    as ``array_class`` (:class:`tdbformat.array.Array`: this module is a floor below the package's __init__)."""
    if label.is_external or not label.relative_uri:
        raise FormatError(f"dimension label {label.name!r}: its array lies outside the array ({label.uri})")
    labels = array_class((storage, storage.join(root, *label.uri.split("/"))), key=key, timestamp=timestamp)
    attr = next((a for a in labels.attrs if a.name == label.label_attr_name), None)
    if labels.schema.array_type != ArrayType.DENSE or len(labels.dims) != 1 or attr is None \
            or labels.dims[0].datatype.numpy_dtype.kind not in "iu" or labels.dims[0].var \
            or attr.datatype != label.label_datatype or attr.cell_val_num != label.label_cell_val_num:
        raise FormatError(f"dimension label {label.name!r}: its array is not a dense array of one dimension with the "
                          f"attribute {label.label_attr_name!r} of the label's type (and integer indices)",
                          file=str(labels.path))
    return labels


def _label_ranges(sel) -> list:
    """A label selection as (lo, hi) pairs, as TileDB-Py's ``label_ranges_from_selection``."""
    if isinstance(sel, np.ndarray):
        return [(x, x) for x in sel]
    out = []
    for item in sel if isinstance(sel, list) else [sel]:
        if isinstance(item, slice):
            if item.start is None or item.stop is None:
                raise NotImplementedError("partial and full indexing is not yet supported on dimension labels")
            out.append((item.start, item.stop))
        elif isinstance(item, tuple):
            if len(item) != 2:
                raise ValueError(f"label_index: a range is a (lo, hi) pair, not {item!r}")
            out.append(item)
        else:
            out.append((item, item))
    return out


def keys(values: np.ndarray) -> np.ndarray:
    """Label values as TileDB compares them: datetimes and times as their int64, strings as bytes."""
    if values.dtype.kind in "mM":
        return values.view("<i8")
    if values.dtype == object or values.dtype.kind in "US":
        out = np.empty(len(values), object)
        out[:] = [v.encode() if isinstance(v, str) else bytes(v) for v in values.tolist()]
        return out
    return values


def _bound(dtype: np.dtype, v, side: int):
    """A label bound as a key (:func:`keys`); ``side`` 0 for a lower bound, 1 for an upper one. A datetime64
    or timedelta64 in another unit becomes the nearest value of the label's unit inside the range (exactly,
    in integers: TileDB-Py's ``astype`` floors both bounds and wraps past int64); an int is a count of the
    label's unit, as TileDB-Py takes it; NaT is int64's minimum, as TileDB stores it."""
    if dtype.kind in "mM":
        return datetime_key(v, dtype, side)
    if dtype == object or dtype.kind in "US":
        return v.encode() if isinstance(v, str) else bytes(v)
    return dtype.type(v)


def datetime_key(v, dtype: np.dtype, side: int) -> int:
    """The int64 bound (:func:`_bound`) of ``v`` for labels of ``dtype`` (a datetime64 or timedelta64 unit);
    outside int64, one past its end on that side, which no label reaches."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_, np.timedelta64)):
        if not _I64.min <= int(v) <= _I64.max:
            raise ValueError(f"label_index: {v} does not fit the label's int64 ({dtype})")
        return int(v)
    kind = dtype.kind
    if not isinstance(v, (np.datetime64, np.timedelta64)) or np.dtype(type(v)).kind != kind:
        raise TypeError(f"label_index: a {dtype} label takes {'datetime64' if kind == 'M' else 'timedelta64'} "
                        f"or int bounds, not {v!r}")
    if np.isnat(v):
        return int(_I64.min)
    unit, count = np.datetime_data(v.dtype)
    ticks = int(v.astype("<i8")) * count
    target = np.datetime_data(dtype)[0]
    if kind == "m" and "Y" in (unit, target) or kind == "m" and "M" in (unit, target):
        raise TypeError(f"label_index: {v!r} has no exact length in {target} (years and months vary)")
    exact = _attoseconds(ticks, unit)
    k = _floor_in(exact, target)
    k += side == 0 and _attoseconds(k, target) < exact  # a lower bound rounds up
    return min(max(k, int(_I64.min) - 1), int(_I64.max) + 1)


_I64 = np.iinfo(np.int64)
_DAY = 86_400 * 10 ** 18
#: attoseconds per unit of the fixed-length units
_AS = {"W": 7 * _DAY, "D": _DAY, "h": 3600 * 10 ** 18, "m": 60 * 10 ** 18, "s": 10 ** 18, "ms": 10 ** 15,
       "us": 10 ** 12, "ns": 10 ** 9, "ps": 10 ** 6, "fs": 10 ** 3, "as": 1}


def _attoseconds(k: int, unit: str) -> int:
    """``k`` units since 1970 in attoseconds (years and months by the proleptic Gregorian calendar)."""
    if unit == "Y":
        return _days_from_civil(1970 + k, 1) * _DAY
    if unit == "M":
        return _days_from_civil(1970 + k // 12, k % 12 + 1) * _DAY
    return k * _AS[unit]


def _floor_in(attoseconds: int, unit: str) -> int:
    """The last ``unit`` count at or before ``attoseconds`` since 1970."""
    if unit not in ("Y", "M"):
        return attoseconds // _AS[unit]
    year, month = _civil_from_days(attoseconds // _DAY)
    return year - 1970 if unit == "Y" else (year - 1970) * 12 + month - 1


def _days_from_civil(year: int, month: int) -> int:
    """Days since 1970-01-01 of the first of ``month`` of ``year`` (H. Hinnant's algorithm, any year)."""
    year -= month <= 2
    era, yoe = divmod(year, 400)
    doy = (153 * ((month + 9) % 12) + 2) // 5
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def _civil_from_days(days: int) -> tuple[int, int]:
    """(year, month) of the day ``days`` since 1970-01-01 (the inverse of :func:`_days_from_civil`)."""
    era, doe = divmod(days + 719468, 146097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month

class _Ordered:
    """The labels of a label array as TileDB's ``OrderedDimLabelReader`` searches them: each index's label is the
    newest fragment's that covers it; a fragment's tile minimums and maximums (its metadata) say which tiles
    may hold a bound, and only those are read (through the array's range read), a tile at a time."""

    def __init__(self, labels, label):
        self.labels, self.label, self.attr = labels, label, label.label_attr_name
        self.info = next(a for a in labels.attrs if a.name == self.attr)  # (open_label checked it is there)
        self.decreasing = label.label_order == DataOrder.DECREASING_DATA
        (d0,), (extent,) = tile_grid(labels.schema.domain.dimensions)
        if d0 is None or extent is None:
            raise FormatError(f"dimension label {label.name!r}: its array's dimension has no domain or tile extent",
                              file=str(labels.path))
        self.d0, self.extent = int(d0), int(extent)
        frags = labels.fragments
        if not frags:
            raise RangeError(f"dimension label {label.name!r}: no label was written")
        self.pieces = _pieces(labels, frags, label.name)  # (first index, last index, fragment), in index order
        self.bounds = {id(f): self._tile_bounds(f) for _, _, f in self.pieces}
        self._blocks = {}
        self._check_pieces()

    def _fail(self, why: str):
        word = "decreasing" if self.decreasing else "increasing"
        return FormatError(f"dimension label {self.label.name!r}: the labels are not in {word} order ({why}; "
                           "TileDB reads nothing from such a label either)", file=str(self.labels.path))

    def _tile_bounds(self, frag):
        """(mins, maxes) of ``frag``'s label tiles as keys, or None where the metadata keeps none usable (then
        its labels are read whole); checked to be in the label's order from tile to tile."""
        idx, meta = frag.index(self.attr), frag.metadata
        lo, hi = frag.non_empty_domain[0]
        tiles = (int(hi) - self.d0) // self.extent - (int(lo) - self.d0) // self.extent + 1
        if idx is None or meta.footer is None or meta.footer.get("tile_min_offsets") is None:
            return None
        mins, maxes = (_stat_keys(read_section(meta, name, idx), self.info) for name in ("tile_mins", "tile_maxes"))
        if len(mins) != tiles or len(maxes) != tiles or frag.tile_num() != tiles \
                or mins.dtype.kind == "f" and (np.isnan(mins).any() or np.isnan(maxes).any()):
            return None
        if mins.dtype == object and any(b"\0" in v for v in (*mins, *maxes)):
            return None  # TileDB orders strings by strncmp, stopping at a NUL (DISCREPANCIES.md): not byte order
        steps = mins[:-1] > maxes[1:] if self.decreasing else maxes[:-1] < mins[1:]
        if not (mins <= maxes).all() or not steps.all():
            raise self._fail(f"fragment {frag.name}'s tile minimums and maximums")
        return mins, maxes

    def _block(self, piece: int, tile: int | None) -> tuple[int, np.ndarray]:
        """(first index, label keys) of space tile ``tile`` of piece ``piece`` (None: the whole piece), read
        once and checked to be in order."""
        got = self._blocks.get((piece, tile))
        if got is None:
            s, e, _ = self.pieces[piece]
            if tile is not None:
                s, e = max(s, self.d0 + tile * self.extent), min(e, self.d0 + (tile + 1) * self.extent - 1)
            got = self._blocks[piece, tile] = (s, self._in_order(self.read(s, e)))
        return got

    def read(self, lo: int, hi: int) -> np.ndarray:
        """The labels of indices ``lo..hi``, as the label array holds them."""
        return self.labels.read(attrs=[self.attr], ranges={self.labels.dims[0].name: (lo, hi)})[self.attr]

    def _in_order(self, values: np.ndarray) -> np.ndarray:
        k = keys(values)
        if len(k) > 1 and not ((k[1:] < k[:-1]) if self.decreasing else (k[1:] > k[:-1])).all():
            raise self._fail("labels side by side")
        return k

    def _check_pieces(self):
        """Where one fragment's labels meet another's, they keep the order: proven by the tile bounds, else by
        the two labels read (TileDB's ``validate_attribute_order``)."""
        for j in range(len(self.pieces) - 1):
            (_, e, f), (s, _, g) = self.pieces[j], self.pieces[j + 1]
            if s != e + 1:
                raise FormatError(f"dimension label {self.label.name!r}: indices {e + 1} to {s - 1} have no label "
                                  "(TileDB: \"Discontinuity found in array domain\")", file=str(self.labels.path))
            a, b = self._edge(f, e), self._edge(g, s)
            if a is None or b is None or not (a[0] > b[1] if self.decreasing else a[1] < b[0]):
                self._in_order(self.read(e, s))

    def _edge(self, frag, index: int):
        """(min, max) of the tile of ``frag`` that holds ``index``, or None."""
        bounds = self.bounds[id(frag)]
        if bounds is None:
            return None
        k = (index - self.d0) // self.extent - (int(frag.non_empty_domain[0][0]) - self.d0) // self.extent
        return bounds[0][k], bounds[1][k]

    def first(self, test, use_max: bool) -> int:
        """The first index whose label passes ``test`` (a test that, along the labels, fails then passes), or
        one past the last; ``use_max``: a tile whose maximum (else minimum) fails it holds no label passing."""
        for j, (s, e, frag) in enumerate(self.pieces):
            bounds = self.bounds[id(frag)]
            if bounds is None:
                candidates = [None]
            else:
                t0, t1 = (s - self.d0) // self.extent, (e - self.d0) // self.extent
                k0 = t0 - (int(frag.non_empty_domain[0][0]) - self.d0) // self.extent
                best = bounds[1 if use_max else 0][k0:k0 + t1 - t0 + 1]
                candidates = (t0 + np.flatnonzero(test(best))).tolist()
            for tile in candidates:
                at, k = self._block(j, tile)
                hits = test(k)
                if hits.any():
                    return at + int(np.argmax(hits))
        return self.pieces[-1][1] + 1

    def indices(self, lo, hi) -> tuple[int, int]:
        """The index range whose labels lie in ``[lo, hi]`` (keys)."""
        if self.decreasing:
            return self.first(lambda v: v <= hi, False), self.first(lambda v: v < lo, False) - 1
        return self.first(lambda v: v >= lo, True), self.first(lambda v: v > hi, True) - 1


def _stat_keys(section, info) -> np.ndarray:
    """A tile minimums or maximums section as keys (:func:`keys`): var-sized values split at their offsets."""
    if not info.var:
        return keys(np.asarray(section.fixed))
    offsets = np.asarray(section.fixed, np.int64)
    ends = np.append(offsets[1:], len(section.var))
    if len(offsets) and (offsets[0] != 0 or (ends < offsets).any() or ends[-1] > len(section.var)):
        raise FormatError("the label's tile minimums or maximums have offsets out of order",
                          structure="TileMinMax", path="fixed")
    out = np.empty(len(offsets), object)
    out[:] = [bytes(section.var[a:b]) for a, b in zip(offsets.tolist(), ends.tolist())]
    return out


def _pieces(labels, frags, name: str) -> list:
    """(first index, last index, fragment) of the labels each fragment shows (newer fragments cover older
    ones), in index order."""
    covered, out = [], []
    for frag in reversed(frags):
        if not frag.dense:
            raise FormatError(f"dimension label {name!r}: fragment {frag.name} of its array is sparse; a label "
                              "array is dense", file=str(labels.path))
        todo = [tuple(int(x) for x in frag.non_empty_domain[0])]
        for a, b in covered:
            todo = [p for s, e in todo for p in ((s, min(e, a - 1)), (max(s, b + 1), e)) if p[0] <= p[1]]
        out += [(s, e, frag) for s, e in todo]
        covered.append(tuple(int(x) for x in frag.non_empty_domain[0]))
    return sorted(out, key=lambda p: p[0])


def _indices(arr, label, ranges) -> list:
    """The index ranges the label ranges select."""
    ordered = _Ordered(open_label(arr.storage, arr.path, label, type(arr), arr.key, arr.window), label)
    dtype = np.dtype(object) if ordered.info.var else ordered.info.datatype.numpy_dtype
    out = []
    for lo, hi in ranges:
        lo, hi = _bound(dtype, lo, 0), _bound(dtype, hi, 1)
        if dtype.kind == "f" and (np.isnan(lo) or np.isnan(hi)):
            raise RangeError(f"dimension label {label.name!r}: Range contains NaN")
        if lo > hi:
            raise RangeError(f"dimension label {label.name!r}: Lower range bound {lo} cannot be larger than the "
                             f"higher bound {hi}")
        a, b = ordered.indices(lo, hi)
        if a > b:
            raise RangeError(f"DimensionLabelQuery: Failed to process and update index ranges for label "
                             f"'{label.name}'. OrderedDimLabelReader: Range contained no values")
        out.append((a, b))
    return out, ordered


def label_index(query, names, sel) -> dict:
    """``query.label_index(names)[sel]``: the cells of the index ranges the labels select (``multi_index`` on
    the other dimensions), each label's values over them first, in the reverse of ``names``' order, as
    TileDB-Py gives them."""
    arr = query.arr
    if arr.schema.array_type != ArrayType.DENSE:
        raise NotImplementedError("querying sparse arrays by label is not yet implemented")
    if query.return_incomplete:
        raise ValueError("return_incomplete: a read by label is whole (TileDB-Py reads dense arrays so too: "
                         "\"Incomplete queries are only supported for sparse arrays at this time\")")
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"labels: expected a list of label names, not {names!r}")
    by_dim = {}
    for name in names:
        label = _label(arr, name)
        if label.dim_index in by_dim:
            raise ValueError(f"cannot set labels `{by_dim[label.dim_index].name}` and `{name}` defined on the same "
                             "dimension")
        by_dim[label.dim_index] = label
    sel = list(expand(sel, len(arr.dims)))
    values = {}
    for j, label in by_dim.items():
        ranges, ordered = _indices(arr, label, _label_ranges(sel[j]))
        sel[j] = ranges
        values[label.name] = np.concatenate([ordered.read(lo, hi) for lo, hi in ranges])
    got = query._results(multi_index_ranges(arr, tuple(sel)), (), multi=True)
    fields = list(got)
    dims = [k for k in fields if k in query.multi_fields[0]]
    out = {k: got[k] for k in dims}
    out.update((label.name, values[label.name]) for label in reversed([by_dim[j] for j in by_dim]))
    out.update((k, got[k]) for k in fields if k not in dims)
    return out
