"""TileDB-Py's read API over :meth:`Array.read`: ``A[...]``, ``A.multi_index[...]``, ``A.query(...)``, ``.df``
and Arrow output, with TileDB-Py's semantics (``tiledb/array.py``, ``tiledb/multirange_indexing.py``).

Selections become inclusive ranges per dimension; the read covers their bounding box, then keeps the cells
in the ranges (sparse) or gathers the rows of each range in order (dense, ranges concatenated as TileDB
returns them). A query condition is evaluated after the read, so after deduplication, as TileDB does:
sparse cells that fail it are dropped, dense cells read as fill values.
"""

from __future__ import annotations

import math

import numpy as np

from ..enums import ArrayType
from ..errors import FormatError
from .cells import empty_column, filled, like, range_bound, result_bytes
from .condition import parse_condition
from .evaluate import evaluate
from .labels import label_index
from .selection import expand, multi_index_ranges
from .options import budget_or_default
from .ranges import check_range, domain_bounds
from .sparse import FRAGMENT_COLUMN

__all__ = ["Query", "TileDBPyReads", "getitem_ranges", "multi_index_ranges"]


def _bounds(arr, j: int):
    """The (lo, hi) a whole-dimension slice covers: the current domain if set, else the domain; string
    dimensions, which have none, their non-empty domain (TileDB-Py's index_domain_subarray)."""
    d = arr.dims[j]
    if d.var or d.datatype.numpy_dtype.kind == "S":
        ned = arr.nonempty_domain()
        return ned[j] if ned else (None, None)
    current = arr.schema.get("current_domain")
    if current is not None and not current.empty:
        r = current.ndrectangle[j]
        return r.start, r.end
    return tuple(arr.schema.domain.dimensions[j].domain)


def getitem_ranges(arr, sel) -> tuple[list, tuple]:
    """``A[sel]`` as (one inclusive (lo, hi) or None for all of it per dimension, the axes integers drop):
    slices are half-open on the domain's coordinates, negative numbers count back from its end, floats and
    datetimes inclusive; open ends stand for the current domain where the schema sets one (TileDB-Py)."""
    sel = expand(sel, len(arr.dims))
    ranges, drop = [], []
    for j, (d, s) in enumerate(zip(arr.dims, sel)):
        lo, hi = _bounds(arr, j)
        dlo, dhi = (domain_bounds(arr.schema, j) or ((lo, hi),))[0]  # stops are clamped to the whole domain
        kind = d.datatype.numpy_dtype.kind
        if not isinstance(s, slice):
            if not np.isscalar(s) and not isinstance(s, (np.datetime64, np.generic)):
                raise IndexError(f"invalid index type {type(s).__name__!r} for dimension {d.name}")
            drop.append(j)
            if isinstance(s, (int, np.integer)) and not isinstance(s, bool):
                start = int(s) + dhi + 1 if s < 0 and kind in "iu" else int(s)
                s = slice(start, start + 1)
            else:
                s = slice(s, s)
        if s.step not in (None, 1):
            raise IndexError(f"steps are not supported (dimension {d.name}: step {s.step})")
        if d.var or kind == "S":  # an empty array's string dimension has no bounds: all of it (no cells)
            r = (lo if s.start is None else s.start, hi if s.stop is None else s.stop)
            ranges.append(None if r[0] is None or r[1] is None else r)
            continue
        start, stop = s.start, s.stop
        if start is not None and kind in "iu":
            _integral(start, d)
            start = int(start) + dhi + 1 if start < 0 else int(start)
        elif start is not None:
            start = range_bound(d, start, d.name)
        if start is not None and start < dlo:
            raise IndexError(f"index {s.start} out of bounds of dimension {d.name} [{dlo}, {dhi}]")
        if stop is None:
            ranges.append((lo if start is None else start, hi))
            continue
        if kind in "iu":
            _integral(stop, d)
            stop = int(stop) + dhi if stop < 0 else min(int(stop), dhi + 1)
            ranges.append((lo if start is None else start, stop - 1))
        else:  # floats and datetimes: inclusive, the stop clamped to the domain
            ranges.append((lo if start is None else start, min(range_bound(d, stop, d.name), dhi)))
        if ranges[-1][0] > ranges[-1][1]:  # TileDB-Py refuses an empty range too
            raise IndexError(f"dimension {d.name}: the slice {s.start}:{s.stop} runs from {ranges[-1][0]} to "
                             f"{ranges[-1][1]}, which is empty")
    return ranges, tuple(drop)


def _integral(v, d):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise IndexError(f"cannot index the integral dimension {d.name} with {v!r}")


class Query:
    """``A.query(...)``: a read with chosen attributes, dimensions, condition and order, indexed like the
    array (``[...]``, ``.multi_index[...]``, ``.df[...]``)."""

    def __init__(self, arr, attrs=None, cond=None, dims=None, coords=None, order=None, return_incomplete=False,
                 return_arrow=False, use_arrow=None, memory_budget=None, timestamp=None, labels=False, index_col=True):
        self.arr, self.cond, self.order, self.timestamp, self.index_col = arr, cond, order, timestamp, index_col
        self.return_incomplete, self.return_arrow, self.memory_budget = return_incomplete, return_arrow, memory_budget
        self.labels = labels
        names = [a.name for a in arr.attrs]
        if isinstance(attrs, str) or (attrs is not None and not all(isinstance(a, str) for a in attrs)):
            raise TypeError(f"attrs: expected a list of attribute names, not {attrs!r}")
        if attrs is not None and set(attrs) - set(names):
            raise ValueError(f"attrs: no attribute(s) {sorted(set(attrs) - set(names))} (attributes: {names})")
        self.attrs = names if attrs is None else list(dict.fromkeys(attrs))  # in the order asked, as TileDB-Py
        dim_names = [d.name for d in arr.dims]
        if dims is not None and (isinstance(dims, str) or set(dims) - set(dim_names)):
            raise ValueError(f"dims: expected a list of dimension names among {dim_names}, not {dims!r}")
        sparse = arr.schema.array_type != ArrayType.DENSE
        if dims is not None:
            self.dims = list(dict.fromkeys(dims))
        elif coords is None:
            self.dims = dim_names if sparse else []
        else:
            self.dims = dim_names if coords else []
        self.frame_dims = dim_names if dims is None and coords is None else self.dims  # .df shows coordinates
        # multi_index and .df give the fields in the schema's order, and take dims=[] as the default
        asked = self.dims or (dim_names if sparse and dims is not None else [])
        self.multi_fields = [d for d in dim_names if d in asked], [a for a in names if a in self.attrs]
        self.node = None
        if cond:  # TileDB-Py reads an empty condition as none
            fields = {f.name: f for f in arr.dims + arr.attrs}
            self.node = parse_condition(cond, fields, dim_names, sparse=sparse, enumerations=arr.enumeration_labels())

    def __getitem__(self, sel):
        ranges, drop = getitem_ranges(self.arr, sel)
        got = self._results([None if r is None else [r] for r in ranges], drop, multi=False)
        # TileDB-Py's dense [...] gives the array itself where the one attribute is anonymous (from_numpy's)
        attrs = self.arr.attrs
        if self.arr.schema.array_type != ArrayType.DENSE or self.dims or len(attrs) != 1 or attrs[0].name:
            return got
        return (batch[""] for batch in got) if self.return_incomplete else got[""]

    @property
    def multi_index(self):
        return _Indexer(lambda sel: self._results(multi_index_ranges(self.arr, sel), (), multi=True))

    def label_index(self, labels):
        """``.label_index(labels)[sel]``: the cells whose dimension labels lie in ``sel`` (:mod:`.labels`)."""
        return _Indexer(lambda sel: label_index(self, labels, sel))

    @property
    def df(self):
        def frame(sel):
            results = self._results(multi_index_ranges(self.arr, sel), (), multi=True, frame=True)
            if self.return_incomplete:
                return (self._frame(r) for r in results)
            return self._frame(results)
        return _Indexer(frame)

    def _frame(self, result):
        from .frames import to_arrow_table, with_pandas_meta
        table = to_arrow_table(self.arr, result)
        return table if self.return_arrow else with_pandas_meta(table.to_pandas(), self.arr.meta, self.index_col)

    def _results(self, ranges, drop, multi, frame=False):
        # bounds as the read compares them: str or bytes for strings, ints of the unit for datetimes
        ranges = [None if rs is None else [tuple(range_bound(d, v, d.name) for v in r) for r in rs]
                  for d, rs in zip(self.arr.dims, ranges)]
        for j, (d, rs) in enumerate(zip(self.arr.dims, ranges)):
            for r in rs or ():
                check_range(d, *r, domain_bounds(self.arr.schema, j))
        if self.return_incomplete:
            return self._batches(ranges, drop, multi, frame)
        return self.read(ranges, drop, multi, frame)

    def _batches(self, ranges, drop, multi, frame):
        """Results over slabs of the first dimension, each estimated to fit the memory budget."""
        empty = None
        for slab in slabs(self.arr, ranges, self.memory_budget):
            got = self.read(slab, drop, multi, frame)
            if self.arr.schema.array_type == ArrayType.DENSE or len(next(iter(got.values()), ())):
                empty = False
                yield got
            elif empty is None:
                empty = got
            got = None  # not held while the next batch is read
        if empty:  # nothing in any slab: one empty result, as a complete read gives
            yield empty

    def read(self, ranges, drop=(), multi=True, frame=False) -> dict:
        """The cells in ``ranges`` (per dimension a list of inclusive (lo, hi), or None for all of it)."""
        arr = self.arr
        sparse = arr.schema.array_type != ArrayType.DENSE
        order = _result_fields(self, sparse, multi, frame)
        need = set(self.attrs) | _fields(self.node)
        attrs = [a.name for a in arr.attrs if a.name in need]
        box = {d.name: (min(r[0] for r in rs), max(r[1] for r in rs)) for d, rs in zip(arr.dims, ranges) if rs}
        # 1-D, several ranges, row- or column-major: the order depends on the fragments the cells come from
        by_range = sparse and len(arr.dims) == 1 and self.order in ("C", "F") and len(ranges[0] or ()) > 1
        got = arr.read(attrs=attrs, ranges=box, order=self.order, timestamp=self.timestamp,
                       memory_budget=self.memory_budget, provenance=by_range)
        if sparse:
            got = _filter_sparse(arr, got, ranges, self.node, self.order)
        else:
            coords = self.frame_dims if frame else self.multi_fields[0] if multi else self.dims
            got = _gather_dense(arr, got, ranges, box, self.node, coords, drop)
            if self.order == "F":  # TileDB-Py gives the column-major cells in the result's (row-major) shape
                got = {k: v.ravel(order="F").reshape(v.shape) for k, v in got.items()}
        labels = (multi or self.labels) and not frame
        out = {}
        for name in order:
            values = got[name]
            if multi and not frame:  # TileDB-Py's multi_index gives a nullable field's values without a mask
                values = np.ma.getdata(values)
            out[name] = _labelled(arr, name, values) if labels else values
        return out


class TileDBPyReads:
    """TileDB-Py's read API on :class:`tdbformat.array.Array` (``tiledb.open(...)``): indexing, multi_index,
    query, df, Arrow; the array provides ``read``, ``schema``, ``dims``, ``attrs`` and ``_enumerations``."""

    def enumeration_labels(self) -> dict:
        """``{attribute name: (labels, ordered)}`` of the enumerated attributes."""
        enums = self._enumerations
        return {a.name: enums[a.enumeration_name] for a in self.schema.attributes
                if a.get("enumeration_name") and a.enumeration_name in enums}

    def query(self, attrs=None, cond=None, dims=None, coords=None, order=None, return_incomplete=False,
              return_arrow=False, use_arrow=None, memory_budget=None, timestamp=None, index_col=True) -> Query:
        """A read as TileDB-Py's ``A.query(...)``: index it with ``[...]``, ``.multi_index[...]`` or
        ``.df[...]``. ``cond``: a query-condition string (TileDB-Py's language); ``dims``/``coords``: the
        dimensions returned; ``return_incomplete``: indexing yields results batch by batch, each within
        ``memory_budget`` bytes (estimated); ``return_arrow``: ``.df`` gives a pyarrow Table;
        ``index_col``: ``.df``'s index (True: the dimensions ``tiledb.from_pandas`` recorded, if any)."""
        return Query(self, attrs=attrs, cond=cond, dims=dims, coords=coords, order=order,
                     return_incomplete=return_incomplete, return_arrow=return_arrow, use_arrow=use_arrow,
                     memory_budget=memory_budget, timestamp=timestamp, index_col=index_col)

    def __getitem__(self, sel) -> dict:
        """``A[sel]`` as TileDB-Py: slices half-open on the domain's coordinates, enumerations as labels."""
        return Query(self, labels=True)[sel]

    @property
    def multi_index(self):
        """``A.multi_index[sel]``: inclusive ranges, lists of ranges and points per dimension."""
        return Query(self).multi_index

    def label_index(self, labels):
        """``A.label_index(labels)[sel]``: a dense read selecting by dimension labels (format v18+), as TileDB-Py."""
        return Query(self).label_index(labels)

    @property
    def df(self):
        """``A.df[sel]``: the cells of ``multi_index[sel]`` as a pandas DataFrame (needs pandas and pyarrow)."""
        return Query(self).df

    def to_arrow(self, attrs=None, cond=None, dims=None, order=None, ranges=None, memory_budget=None,
                 batches=False):
        """The cells (``ranges``: ``multi_index``'s selection, default all) as a pyarrow Table, or with
        ``batches`` a ``pyarrow.RecordBatchReader`` reading slab by slab within ``memory_budget``."""
        from .frames import require
        pa = require("pyarrow")
        q = Query(self, attrs=attrs, cond=cond, dims=dims, order=order, return_incomplete=batches,
                  return_arrow=True, memory_budget=memory_budget)
        got = q.df[slice(None) if ranges is None else ranges]
        if not batches:
            return got
        first = next(got, None)
        if first is None:
            return pa.RecordBatchReader.from_batches(pa.schema([]), [])
        return pa.RecordBatchReader.from_batches(first.schema, (b for t in _chain(first, got)
                                                                for b in t.to_batches()))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Nothing to release (files are read per call); kept for ``with`` and TileDB-Py's API."""




def _result_fields(query: Query, sparse: bool, multi: bool, frame: bool) -> list:
    """A query's result fields in TileDB-Py's order: ``[...]`` as asked (a sparse array's attributes first),
    ``multi_index`` and ``.df`` the schema's."""
    if frame:
        order = query.frame_dims + query.multi_fields[1]
    elif multi:
        order = query.multi_fields[0] + query.multi_fields[1]
    else:
        order = (query.dims + query.attrs) if not sparse else (query.attrs + query.dims)
    if not order:
        raise ValueError("query: nothing to read: no attribute (attrs=[]) and no coordinates (dims, coords); "
                         "TileDB-Py refuses it too")
    return order


def _chain(first, rest):
    yield first
    yield from rest


class _Indexer:
    def __init__(self, run):
        self.run = run

    def __getitem__(self, sel):
        return self.run(sel)


def _fields(node) -> set:
    if node is None:
        return set()
    if node.expression is not None:
        return set().union(*(_fields(c) for c in node.expression.children))
    return {node.comparison.field_name}


def _columns(got: dict):
    """(values, validity) dicts of a result for :func:`evaluate` (masked arrays split)."""
    values = {k: np.ma.getdata(v) for k, v in got.items()}
    validity = {k: ~np.ma.getmaskarray(v) for k, v in got.items() if isinstance(v, np.ma.MaskedArray)}
    return values, validity


def _in_ranges(column: np.ndarray, ranges) -> np.ndarray:
    keep = np.zeros(len(column), bool)
    for lo, hi in ranges:
        keep |= (column >= lo) & (column <= hi)
    return keep


def _filter_sparse(arr, got, ranges, node, order) -> dict:
    """The cells of ``got`` (read over the ranges' bounding box) in the ranges and meeting ``node``. A
    row- or column-major read gives a cell once per range combination holding it (in 1-D arrays range
    after range, in the order given, if the cells in the ranges come from one fragment; else sorted:
    TileDB's ``Reader::compute_subarray_coords``); other orders give it once, and a global-order read
    coalesces the ranges, refusing disjoint ones, as TileDB does."""
    fragment = got.pop(FRAGMENT_COLUMN, None)
    if node is None and all(not rs or len(rs) == 1 for rs in ranges):
        return got  # the read kept the cells of its box, which is the one range of each dimension
    n = len(got[arr.dims[0].name])
    keys = {d.name: _ordinals(got[d.name]) for d in arr.dims}
    ranges = [rs and [(like(lo, keys[d.name]), like(hi, keys[d.name])) for lo, hi in rs]
              for d, rs in zip(arr.dims, ranges)]
    keep, times = np.ones(n, bool), None
    for d, rs in zip(arr.dims, ranges):
        if rs and len(rs) > 1:
            if order == "G":  # TileDB coalesces them first: one range left is the box read
                if len(_coalesced(rs, d.datatype.numpy_dtype.kind in "iuMm")) > 1:
                    raise ValueError(f"order: TileDB reads disjoint ranges (dimension {d.name}) in no global order")
                continue
            if order in ("C", "F"):
                count = _coverage(keys[d.name], rs)
                times = count if times is None else times * count
                keep &= count > 0
            else:
                keep &= _in_ranges(keys[d.name], rs)
    # TileDB asks whether the cells in the ranges (before the condition) are of one fragment
    one_fragment = fragment is not None and len(np.unique(fragment[keep])) <= 1
    if node is not None:
        values, validity = _columns(got)
        keep &= evaluate(node, values, validity, n)
    by_range = times is not None and len(arr.dims) == 1 and one_fragment
    if keep.all() and (times is None or (times == 1).all()) and not by_range:
        return got
    if by_range:  # range after range, as given
        column = keys[arr.dims[0].name]
        index = np.concatenate([np.flatnonzero(keep & (column >= lo) & (column <= hi)) for lo, hi in ranges[0]])
    else:
        index = np.flatnonzero(keep) if times is None else np.repeat(np.arange(n), np.where(keep, times, 0))
    infos = {f.name: f for f in arr.dims + arr.attrs}
    return {k: empty_column(infos[k], v[index]) for k, v in got.items()}


def _ordinals(column: np.ndarray) -> np.ndarray:
    """A result column as selection bounds compare with it: datetimes as the int64 TileDB stores."""
    return column.view("<i8") if column.dtype.kind in "mM" else column


def _coalesced(ranges, integral: bool) -> list:
    """``ranges`` sorted, with overlapping (and, for integers, adjacent) ones merged."""
    out = []
    for lo, hi in sorted(ranges, key=lambda r: r[0]):
        if out and (lo <= out[-1][1] or (integral and int(lo) == int(out[-1][1]) + 1)):
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _coverage(column: np.ndarray, ranges) -> np.ndarray:
    """How many of ``ranges`` hold each value of ``column``."""
    count = np.zeros(len(column), np.int64)
    for lo, hi in ranges:
        count += (column >= lo) & (column <= hi)
    return count


def _gather_dense(arr, got, ranges, box, node, dims, drop) -> dict:
    """The dense result of the ranges: rows of each range in order, coordinates of ``dims`` alongside,
    cells failing ``node`` as fill values, the axes of integer indexes dropped."""
    lo = [box[d.name][0] if d.name in box else _bounds(arr, j)[0] for j, d in enumerate(arr.dims)]
    picks = []
    for j, (d, rs) in enumerate(zip(arr.dims, ranges)):
        if rs and len(rs) > 1:
            picks.append(np.concatenate([np.arange(int(a), int(b) + 1) for a, b in rs]) - int(lo[j]))
        else:
            picks.append(None)
    if got and any(p is not None for p in picks):
        index = np.ix_(*[p if p is not None else np.arange(next(iter(got.values())).shape[j])
                         for j, p in enumerate(picks)])
        got = {k: v[index] for k, v in got.items()}
    # no attribute asked for (only coordinates): the shape is the box's
    shape = next(iter(got.values())).shape if got else tuple(
        len(p) if p is not None else int(box[d.name][1] if d.name in box else _bounds(arr, j)[1]) - int(lo[j]) + 1
        for j, (d, p) in enumerate(zip(arr.dims, picks)))
    coords = {}
    for j, d in enumerate(arr.dims):
        if d.name in dims:
            axis = (picks[j] if picks[j] is not None else np.arange(shape[j])) + np.int64(lo[j])
            axis = axis.astype(d.datatype.numpy_dtype)
            coords[d.name] = np.broadcast_to(axis.reshape([-1 if i == j else 1 for i in range(len(shape))]),
                                             shape).copy()
    if node is not None:
        values, validity = _columns(got)
        flat = {k: v.reshape(-1) for k, v in values.items()}
        fail = ~evaluate(node, flat, {k: v.reshape(-1) for k, v in validity.items()}, math.prod(shape))
        got = {k: _fill_failed(arr, k, v, fail.reshape(shape)) for k, v in got.items()}
    got.update(coords)
    if drop:
        got = {k: v.reshape([s for i, s in enumerate(v.shape) if i not in drop]) for k, v in got.items()}
    return got


def _fill_failed(arr, name, values, fail):
    info = next(a for a in arr.attrs if a.name == name)
    attribute = next(a for a in arr.schema.attributes if a.name == name)
    out = values.copy()
    out[fail] = filled(info, attribute, ())
    if isinstance(out, np.ma.MaskedArray):  # a nullable cell that fails is null
        out[fail] = np.ma.masked
    return out


def _labelled(arr, name, values):
    """An enumerated attribute's codes as its labels, as TileDB-Py decodes them (a numpy array of the labels).
    Null cells whose codes lie outside the enumeration (an attribute added by an evolution holds its fill
    value there, -2**31 for int32) fail TileDB-Py with an IndexError; here they come back masked."""
    labels = arr.enumeration_labels().get(name)
    if labels is None:
        return values
    codes, null = np.ma.getdata(values), np.ma.getmaskarray(values)
    outside = (codes < 0) | (codes >= len(labels[0]))
    if (outside & ~null).any():
        raise FormatError(f"attribute {name}: code {int(codes[outside & ~null][0])} is outside the "
                          f"{len(labels[0])} values of its enumeration")
    if not outside.any():
        return _labels_of(labels[0], codes)
    valid = _labels_of(labels[0], codes[~null])
    out = np.ma.masked_all(len(codes), valid.dtype)
    out[~null] = valid
    return out


def _labels_of(labels: list, codes: np.ndarray) -> np.ndarray:
    # numpy picks the dtype from the labels present (TileDB-Py builds the array from them): "<U4" if the
    # longest label read has 4 characters
    used = np.unique(codes)
    table = np.array([labels[int(i)] for i in used])
    return table[np.searchsorted(used, codes)] if len(codes) else np.array([])


def slabs(arr, ranges, budget):
    """``ranges`` cut along the first dimension into slabs whose results fit ``budget`` bytes (estimated:
    written cells over the slab's share of the non-empty domain, at the bytes of a result cell)."""
    budget = budget_or_default(budget)
    d0 = arr.dims[0]
    ned = arr.nonempty_domain(raw=True)
    if ned is None or d0.var or d0.datatype.numpy_dtype.kind not in "iuMm":
        yield ranges
        return
    lo, hi = int(ned[0][0]), int(ned[0][1])
    if ranges[0]:
        lo, hi = max(lo, min(int(r[0]) for r in ranges[0])), min(hi, max(int(r[1]) for r in ranges[0]))
    # a var cell is a pointer plus its Python object; decoded tiles, masks, sort permutations and the result
    # took up to 6 times the result's bytes at their peak (tracemalloc, sparse and dense reads, tests)
    per_cell = 6 * sum(result_bytes(f) + 56 * f.var + f.nullable for f in arr.dims + arr.attrs)
    if arr.schema.array_type == ArrayType.DENSE:
        cells = math.prod(int(b) - int(a) + 1 for a, b in (
            [(lo, hi)] + [(_bounds(arr, j) if not rs else (min(r[0] for r in rs), max(r[1] for r in rs)))
                          for j, rs in enumerate(ranges) if j]))
    else:
        cells = sum(f.cell_num for f in arr.fragments)
    count = max(1, min(hi - lo + 1, -(-cells * per_cell // max(budget, 1))))
    edges = np.linspace(lo, hi + 1, count + 1).astype(np.int64)
    for a, b in zip(edges[:-1], edges[1:]):
        if b > a:
            first = [(max(int(a), int(r[0])), min(int(b) - 1, int(r[1]))) for r in (ranges[0] or [(a, b - 1)])]
            first = [r for r in first if r[0] <= r[1]]
            if first:
                yield [first] + list(ranges[1:])
