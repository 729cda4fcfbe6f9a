"""The cells of an array as rows for people and tools (``tdbformat cat``), and a group's members as a tree.

Dense arrays stream: the cells printed are those of the non-empty domain (cut to the current domain and to
``--range``), read in blocks of at most :data:`BLOCK_CELLS` cells along the slowest dimension of the order,
so ``--limit N`` decodes only the tiles the first N cells need and a domain of 2**31 cells per dimension
never gets allocated."""

from __future__ import annotations

import csv
import json

import numpy as np

from ..array import check_ranges
from ..array.cells import from_ordinal, tiledb_py_metadata
from ..array.dense import read_box
from ..layout import group_members, is_group, read_metadata
from ..enums import ArrayType
from ..show import jsonable, meta_json, text

__all__ = ["BLOCK_CELLS", "group_tree", "parse_range", "dense_blocks", "write_cells"]

#: cells per block of a streamed dense read: large enough that each tile is decoded about once
BLOCK_CELLS = 1 << 20
#: rows formatted at a time
ROWS = 1 << 16


def group_tree(storage, root, key=None, seen=None) -> dict:
    """A group's metadata (decoded as TileDB-Py does) and members, recursively: ``{"metadata", "members":
    [{"name", "uri", "type", "members"?}]}``; a member that is missing on disk has type "missing"."""
    seen = set() if seen is None else seen
    seen.add(str(root))
    members = []
    for m in group_members(root, key=key, storage=storage):
        uri = m.uri if not m.relative else str(storage.join(root, m.uri))
        where = uri.removeprefix("file://")
        entry = {"name": m.name if m.name_set else m.uri, "uri": m.uri, "type": m.object_type.name.lower()}
        if m.object_type.name == "GROUP" and where not in seen and is_group(storage, where):
            entry["members"] = group_tree(storage, where, key, seen)["members"]
        elif not storage.is_dir(where):
            entry["type"] = "missing"
        members.append(entry)
    return {"metadata": meta_json(tiledb_py_metadata(read_metadata(root, key=key, storage=storage))),
            "members": members}


def parse_range(arr, spec: str) -> tuple[str, tuple]:
    """``--range DIM=LO:HI`` (or ``DIM=LO,HI`` when the bounds hold colons, as datetimes do) as
    ``(dim, (lo, hi))`` of the dimension's kind: numbers, datetime64, or text."""
    name, sep, bounds = spec.partition("=")
    parts = bounds.split("," if "," in bounds else ":")
    dims = {d.name: d for d in arr.dims}
    if not sep or len(parts) != 2:
        raise ValueError(f"--range: expected DIM=LO:HI (or DIM=LO,HI), not {spec!r}")
    if name not in dims:
        raise ValueError(f"--range: {name!r} is not a dimension ({', '.join(dims)})")
    dtype = dims[name].datatype.numpy_dtype
    try:
        if dims[name].var or dtype.kind == "S":
            return name, tuple(parts)
        if dtype.kind in "mM":
            return name, tuple(np.array(p, dtype=dtype)[()] for p in parts)
        return name, tuple(dtype.type(p) for p in parts)
    except ValueError:
        raise ValueError(f"--range: {bounds!r} are not bounds of the {dims[name].datatype.name} dimension "
                         f"{name}") from None


def dense_blocks(lo: list, hi: list, slow_first: list, target: int):
    """Sub-boxes of the box ``lo..hi`` (ints per dimension) that tile it in the order whose dimensions run
    slowest first as ``slow_first`` (indexes), each of at most ``target`` cells where one slab allows it."""
    def split(level, prefix):
        j = slow_first[level]
        inner = 1
        for k in slow_first[level + 1:]:
            inner *= hi[k] - lo[k] + 1
        if inner > target and level + 1 < len(slow_first):
            for x in range(lo[j], hi[j] + 1):
                yield from split(level + 1, {**prefix, j: (x, x)})
            return
        step = max(1, target // inner)
        for x in range(lo[j], hi[j] + 1, step):
            box = {**prefix, j: (x, min(x + step - 1, hi[j]))}
            yield [box.get(k, (lo[k], hi[k])) for k in range(len(lo))]
    yield from split(0, {})


def _dense_cells(arr, attrs, order, ranges, limit, progress):
    """Blocks of a dense array's cells as ``{column: 1-D array}``: coordinates, then attributes."""
    box = arr.nonempty_domain(raw=True)
    if box is None:
        return
    c_lo, c_hi = read_box(arr, arr.schema, ranges)
    lo = [max(int(a), int(b)) for (a, _), b in zip(box, c_lo)]
    hi = [min(int(a), int(b)) for (_, a), b in zip(box, c_hi)]
    if any(a > b for a, b in zip(lo, hi)):
        return
    n = len(lo)
    slow_first = list(range(n)) if order == "C" else list(range(n))[::-1]
    left = limit
    for block in _progress(dense_blocks(lo, hi, slow_first, BLOCK_CELLS if left is None else
                                        max(1, min(left, BLOCK_CELLS))), lo, hi, progress):
        cells = arr.read(attrs=attrs, ranges={d.name: b for d, b in zip(arr.dims, block)})
        axes = np.meshgrid(*[np.arange(a, b + 1, dtype=np.int64) for a, b in block], indexing="ij")
        out = {d.name: _coordinates(np.ravel(c, order=order), d) for d, c in zip(arr.dims, axes)}
        out.update({k: np.ma.ravel(v, order=order) for k, v in cells.items()})
        if left is not None:
            out = {k: v[:left] for k, v in out.items()}
            left -= len(next(iter(out.values())))
        yield out
        if left is not None and left <= 0:
            return


def _coordinates(column: np.ndarray, dim) -> np.ndarray:
    """int64 coordinates as the dimension's values (datetime64 for datetime dimensions)."""
    return from_ordinal(column, dim) if dim.datatype.numpy_dtype.kind in "mM" else column.astype(
        dim.datatype.numpy_dtype)


def _progress(blocks, lo, hi, show: bool):
    if not show:
        yield from blocks
        return
    from rich.console import Console
    from rich.progress import Progress

    total = 1
    for a, b in zip(lo, hi):
        total *= b - a + 1
    with Progress(transient=True, console=Console(stderr=True)) as bar:  # shown only when both streams are terminals
        task = bar.add_task("reading", total=total)
        for block in blocks:
            yield block
            cells = 1
            for a, b in block:
                cells *= b - a + 1
            bar.advance(task, cells)


def _labelled(arr, cells: dict) -> dict:
    """Enumerated attributes' codes replaced by their labels (TileDB-Py's ``A[:]``); codes outside the
    enumeration stay codes."""
    enums = None
    for a in arr.schema.attributes:
        name = a.get("enumeration_name")
        if name and a.name in cells:
            enums = arr.enumerations if enums is None else enums
            values = np.empty(len(enums[name]), object)
            values[:] = list(enums[name])
            codes = np.ma.getdata(cells[a.name]).astype(np.int64)
            ok = (codes >= 0) & (codes < len(values))
            labels = np.empty(len(codes), object)
            labels[:] = codes.tolist()
            labels[ok] = values[codes[ok]]
            cells[a.name] = np.ma.masked_array(labels, mask=np.ma.getmaskarray(cells[a.name]))
    return cells


def _blocks(arr, attrs, order, ranges, limit, progress):
    if arr.schema.array_type == ArrayType.DENSE:
        if order not in ("C", "F"):
            raise ValueError(f"--order: a dense array is printed in order C or F, not {order}")
        yield from _dense_cells(arr, attrs, order, ranges, limit, progress)
        return
    cells = arr.read(attrs=attrs, order=order, ranges=ranges or None)
    yield {k: (v if limit is None else v[:limit]) for k, v in cells.items()}


def _cell_text(v) -> str:
    s = text(v) if isinstance(v, (str, bytes)) else str(jsonable(v) if isinstance(v, np.generic) else v)
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n") if isinstance(v, (str, bytes)) else s


def _json_text(v) -> str:
    return json.dumps(jsonable(v), ensure_ascii=False, allow_nan=False)


def _column_text(column, fmt: str) -> list[str]:
    """Each cell of a column as its text in ``fmt``, numbers and booleans a whole column at a time (a dense
    block holds a million cells); null cells as ``null`` (empty in csv)."""
    mask = np.ma.getmaskarray(column)
    if mask.dtype.names:  # a fixed cell of several values: TileDB's null flag is per cell, set in every field
        mask = np.logical_and.reduce([mask[f] for f in mask.dtype.names])
    data = np.ma.getdata(column)[~mask] if mask.any() else np.ma.getdata(column)
    if data.dtype.kind in "iu" or (data.dtype.kind == "b" and fmt != "json"):
        texts = list(map(str, data.tolist()))
    elif data.dtype.kind == "b":
        texts = ["true" if v else "false" for v in data.tolist()]
    elif data.dtype.kind == "f":
        texts = list(map(repr, data.tolist()))
        for i in np.flatnonzero(~np.isfinite(data)).tolist():
            texts[i] = _json_text(data[i]) if fmt == "json" else jsonable(data[i])
    else:
        values = data.tolist() if data.dtype.kind in "SUO" else list(data)
        one = _json_text if fmt == "json" else _cell_text
        if len(set(map(type, values))) == 1 and isinstance(values[0], (str, bytes)):  # each distinct text once
            table = {v: one(v) for v in dict.fromkeys(values)}
            texts = list(map(table.__getitem__, values))
        else:
            texts = list(map(one, values))
    if not mask.any():
        return texts
    out = np.full(len(mask), "" if fmt == "csv" else "null", dtype=object)
    out[~mask] = texts
    return out.tolist()


def write_cells(arr, out, fmt="tsv", attrs=None, order=None, ranges=(), limit=None, labels=True,
                progress=False) -> None:
    """Print an array's cells to ``out``: one row per cell, coordinates first. ``fmt``: "tsv" (text
    escaped: ``\\t``, ``\\n``, ``\\\\`` and ``\\xNN`` for bytes that are not UTF-8; null cells as ``null``),
    "csv", or "json" (JSON Lines, one object per cell). ``ranges``: ``--range`` strings."""
    if limit is not None and limit < 0:
        raise ValueError(f"--limit: expected a number of cells >= 0, not {limit}")
    ranges = check_ranges(arr.dims, dict(parse_range(arr, r) for r in ranges or ()), arr.schema)
    order = order or ("C" if arr.schema.array_type == ArrayType.DENSE else None)
    header = None
    writer = csv.writer(out) if fmt == "csv" else None
    for cells in _blocks(arr, attrs, order, ranges, limit, progress):
        cells = _labelled(arr, cells) if labels else cells
        names = list(cells)
        if header is None and fmt != "json":
            header = names
            writer.writerow(names) if writer else out.write("\t".join(names) + "\n")
        row = ("{" + ", ".join(json.dumps(n, ensure_ascii=False).replace("%", "%%") + ": %s" for n in names) + "}\n"
               if fmt == "json" else "\t".join(["%s"] * len(names)) + "\n")
        count = len(cells[names[0]]) if names else 0
        for start in range(0, count, ROWS):  # a slice at a time: the texts of a whole block would take GBs
            columns = [_column_text(cells[n][start:start + ROWS], fmt) for n in names]
            if writer:
                writer.writerows(zip(*columns))
            else:
                out.writelines(map(row.__mod__, zip(*columns)))
    if header is None and fmt != "json":
        names = [d.name for d in arr.dims] + [a.name for a in arr.attrs if attrs is None or a.name in attrs]
        writer.writerow(names) if writer else out.write("\t".join(names) + "\n")
