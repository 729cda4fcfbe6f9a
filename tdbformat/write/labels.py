"""Writing dimension labels (format v18+), as TileDB-Py's ``A[...] = {"a": ..., "label": ...}``: each label's
values go to its label array (``__labels/l<n>``, dimension "index", attribute "label") over the write's range of
the labelled dimension (a sparse write's coordinates of it must be consecutive points), as a fragment at the
write's timestamp, before the array's own fragment (TileDB writes them first too).

Labels must keep their order: TileDB refuses written values that are not strictly increasing (decreasing), and
values that break the order with the labels already beside them make every later read by label fail in TileDB
("Attribute out of order"), so those are refused here too, with the neighbour named.
"""

from __future__ import annotations

import numpy as np

from ..enums import DataOrder

__all__ = ["split_labels", "prepare_labels", "sparse_label_ranges"]


def split_labels(schema, data):
    """``data`` without the dimension labels' values, and ``[(label, values)]`` of those (a dict ``data`` only)."""
    from ..structs.array_schema import dimensions
    from ..array.labels import checked_label
    dims = dimensions(schema)
    labels = {lab.name: checked_label(lab, dims) for lab in schema.get("labels") or []}
    if not isinstance(data, dict) or not labels.keys() & data.keys():
        return data, []
    return ({k: v for k, v in data.items() if k not in labels},
            [(labels[k], v) for k, v in data.items() if k in labels])


def sparse_label_ranges(coords: list, labels: list) -> dict:
    """``{dimension index: (lo, hi)}`` a sparse write's labels cover: the labelled dimension's coordinates must
    be consecutive points, lo, lo + 1, ..., hi (TileDB's rule), one label each."""
    out = {}
    for label, _ in labels:
        points = np.asarray(coords[label.dim_index]) if label.dim_index < len(coords) else np.array([])
        if points.ndim != 1 or not len(points) or points.dtype.kind not in "iu" \
                or not np.array_equal(points, np.arange(int(points[0]), int(points[0]) + len(points))):
            raise ValueError(f"coords: the dimension data must contain consecutive points when writing to a dimension "
                             f"label ({label.name!r}, dimension {label.dim_index})")
        out[label.dim_index] = (int(points[0]), int(points[-1]))
    return out


def _check_order(label, values: np.ndarray, before, after) -> None:
    """``values`` strictly in the label's order, and after ``before`` / before ``after`` (its neighbours
    already written, None if none)."""
    from ..array.labels import keys
    decreasing = label.label_order == DataOrder.DECREASING_DATA
    word = "decreasing" if decreasing else "increasing"
    v = keys(values)
    run = np.concatenate([keys(np.asarray(x)) for x in (before, values, after) if x is not None]) \
        if before is not None or after is not None else v
    steps = run[:-1] > run[1:] if decreasing else run[:-1] < run[1:]
    if not steps.all():
        i = int(np.argmin(steps))
        which = "the written values" if run is v else "the written values and the labels beside them"
        shown = np.concatenate([np.asarray(x) for x in (before, values, after) if x is not None])
        raise ValueError(f"data[{label.name!r}]: dimension label values must be strictly {word}; {which} are not "
                         f"({shown[i]!r} then {shown[i + 1]!r}); TileDB cannot read by a label out of order")


def _neighbours(labels, attr: str, lo: int, hi: int):
    """The labels already written just before ``lo`` and just after ``hi`` (None where there are none)."""
    ned = labels.nonempty_domain(raw=True)
    if ned is None:
        return None, None
    first, last = int(ned[0][0]), int(ned[0][1])
    index = labels.dims[0].name
    return tuple(labels.read(attrs=[attr], ranges={index: (i, i)})[attr] if first <= i <= last else None
                 for i in (lo - 1, hi + 1))


def prepare_labels(writer, subarray, labels: list, dense_fragment):
    """The label fragments of a write over ``subarray`` (per dimension index, (lo, hi)), checked now (before
    anything is written) and laid out by ``dense_fragment`` (the writer's, which imports this module); returns a
    function of the timestamp that writes them."""
    from ..array import Array
    from ..array.labels import open_label
    from .values import cast

    pending = []
    for label, values in labels:
        lo, hi = subarray[label.dim_index]
        values = np.asarray(values)
        if label.label_datatype.numpy_dtype.kind in "mM":  # compared as the int64 TileDB stores (NaT: its least)
            values = cast(values, label.label_datatype.numpy_dtype, f"data[{label.name!r}]")
        if values.shape != (hi - lo + 1,):
            raise ValueError(f"data[{label.name!r}]: a dimension label takes one value per index of dimension "
                             f"{label.dim_index} written ({hi - lo + 1}), not shape {values.shape}")
        existing = open_label(writer.storage, writer.root, label, Array, writer.key)
        _check_order(label, values, *_neighbours(existing, label.label_attr_name, lo, hi))
        w = type(writer)(existing.path, key=writer.key, max_chunk_size=writer.max_chunk_size, threads=writer.threads)
        pending.append((w, dense_fragment(w.schema, w.schema_name, [(lo, hi)], {label.label_attr_name: values},
                                          None)))

    def write(timestamp):
        from .create import new_uuid
        from .fragment_writer import write_fragment
        for w, fw in pending:
            w.fragments.append(write_fragment(w.storage, w.root, fw, timestamp=timestamp, uuid=new_uuid(),
                                              key=w.key, max_chunk=w.max_chunk_size, threads=w.threads))
    return write
