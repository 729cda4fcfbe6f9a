"""Reading by dimension label (format v18+), as TileDB-Py's ``A.label_index([...])[...]``.

A dimension label is a dense array inside the array (``__labels/l<n>``: dimension "index", attribute "label")
whose labels are ordered along the labelled dimension's indices, increasing or decreasing. A label range
selects the indices whose labels lie in it (found by binary search on the label array's cells over its
non-empty domain, as TileDB's ``OrderedDimLabelReader``); the read is then ``multi_index`` over those index
ranges, and the result holds each label's values over them, before the attributes.
"""

from __future__ import annotations

import numpy as np

from ..enums import ArrayType, DataOrder
from ..errors import FormatError
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
            or attr.datatype != label.label_datatype or attr.cell_val_num != label.label_cell_val_num:
        raise FormatError(f"dimension label {label.name!r}: its array is not a dense array of one dimension with the "
                          f"attribute {label.label_attr_name!r} of the label's type", file=str(labels.path))
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


def _bound(values: np.ndarray, v):
    """A label bound comparable with the label array's values: bytes for string labels."""
    if values.dtype == object:
        return v.encode() if isinstance(v, str) else bytes(v)
    return values.dtype.type(v)


def _indices(arr, label, ranges) -> tuple[list, np.ndarray, np.ndarray]:
    """The index ranges the label ranges select, and the label array's indices and values."""
    labels = open_label(arr.storage, arr.path, label, type(arr), arr.key, arr.window)
    ned = labels.nonempty_domain(raw=True)
    if ned is None:
        raise RangeError(f"dimension label {label.name!r}: no label was written")
    values = labels.read(attrs=[label.label_attr_name])[label.label_attr_name]
    first = int(ned[0][0])
    decreasing = label.label_order == DataOrder.DECREASING_DATA
    key = values[::-1] if decreasing else values
    if len(key) > 1 and not (key[1:] > key[:-1]).all():
        raise FormatError(f"dimension label {label.name!r}: the labels are not in {'de' if decreasing else 'in'}"
                          "creasing order (TileDB reads nothing from such a label either)", file=str(labels.path))
    out = []
    for lo, hi in ranges:
        lo, hi = _bound(values, lo), _bound(values, hi)
        if values.dtype.kind == "f" and (np.isnan(lo) or np.isnan(hi)):
            raise RangeError(f"dimension label {label.name!r}: Range contains NaN")
        if lo > hi:
            raise RangeError(f"dimension label {label.name!r}: Lower range bound {lo} cannot be larger than the "
                             f"higher bound {hi}")
        a, b = np.searchsorted(key, lo, "left"), np.searchsorted(key, hi, "right") - 1
        if a > b:
            raise RangeError(f"DimensionLabelQuery: Failed to process and update index ranges for label "
                             f"'{label.name}'. OrderedDimLabelReader: Range contained no values")
        if decreasing:
            a, b = len(key) - 1 - b, len(key) - 1 - a
        out.append((first + int(a), first + int(b)))
    return out, first, values


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
        ranges, first, cells = _indices(arr, label, _label_ranges(sel[j]))
        sel[j] = ranges
        values[label.name] = np.concatenate([cells[lo - first:hi - first + 1] for lo, hi in ranges])
    got = query._results(multi_index_ranges(arr, tuple(sel)), (), multi=True)
    fields = list(got)
    dims = [k for k in fields if k in query.multi_fields[0]]
    out = {k: got[k] for k in dims}
    out.update((label.name, values[label.name]) for label in reversed([by_dim[j] for j in by_dim]))
    out.update((k, got[k]) for k in fields if k not in dims)
    return out
