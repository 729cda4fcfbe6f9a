"""Writing arrays: :func:`open_writer` gives an array in write mode with TileDB-Py's assignment forms, and
:func:`write` is the same as one call. Each assignment is one fragment (:mod:`.fragment_writer`).

- dense: ``arr[:] = values``, ``arr[0:10, 5:7] = {"a": ..., "b": ...}`` (slices are half-open, in coordinates,
  as TileDB-Py's; an omitted dimension is its whole domain);
- sparse: ``arr[coords_dim0, coords_dim1] = values`` or ``= {"a": ...}``.

Values are numpy arrays; var-sized fields take object arrays of str/bytes (or arrays), nullable ones masked
arrays or ``validity=``. Timestamps are ms, as TileDB-Py's: ``timestamp=`` is the fragment's t1 = t2, or a (t1, t2) pair.
"""

from __future__ import annotations

import functools

import numpy as np
from construct import Container

from ..layout import load_enumerations, load_schemas
from ..enums import ArrayType, Layout
from ..filters.pipeline import MAX_CHUNK, thread_count
from ..storage import storage_for
from ..structs.array_schema import attributes, dimensions, value_dtype
from ..array.cells import cell_dtype, range_bound
from .create import create, default_fill, new_uuid, now_ms
from .fragment_writer import FragmentStream, FragmentWrite, tile_streams, write_fragment
from .labels import prepare_labels, sparse_label_ranges, split_labels
from .metadata import delete_metadata, put_metadata
from .tiling import dense_box, dense_tiles, sparse_order, tile_bounds
from .values import check_codes, check_coordinates, check_current_domain, column, validity as _validity

__all__ = ["open_writer", "write", "ArrayWriter", "create"]


def _by_attribute(schema, data) -> dict:
    attrs = attributes(schema)
    if not isinstance(data, dict):
        if len(attrs) != 1:
            raise ValueError(f"data: the array has {len(attrs)} attributes, so give a dict of them")
        data = {attrs[0].name: data}
    names = {a.name for a in attrs}
    unknown = set(data) - names
    missing = names - set(data)
    if unknown or missing:
        raise ValueError(f"data: every attribute is written at once; unknown {sorted(unknown)}, missing "
                         f"{sorted(missing)}")
    return data


def _padding(info, version: int):
    """What TileDB's dense writer leaves in the cells of a tile outside the written subarray (readers never see
    them: the non-empty domain excludes them): from v9 zeroed memory (a var cell of one zero value; null),
    before the datatype's default fill value (the corpus's v6-v7 fill_values; v8, of the same 2.2 releases,
    is taken to be the same)."""
    if version >= 9:
        return bytes(info.datatype.size) if info.var else np.zeros((), cell_dtype(info))[()]
    fill = default_fill(info.datatype, info.cell_val_num)
    return fill if info.var else np.frombuffer(fill, cell_dtype(info))[0]


def dense_fragment(schema, schema_name, subarray, data, validity, lossy=False, enumerations=None,
                   non_empty_domain=None, streams=None) -> FragmentWrite:
    """``non_empty_domain``: where not ``subarray`` (a consolidation's whole tiles over the union it merges).
    ``streams(info, extent)``: a var attribute's :class:`~.tiling.TileStreams` (:func:`tile_streams`, or None),
    where the write is whole tiles of one dimension, so that its tiles of str cells are filtered as the check
    encodes them."""
    dims = dimensions(schema)
    shape = tuple(int(hi) - int(lo) + 1 for lo, hi in subarray)
    tiles, valid = {}, {}
    order = (Layout(schema.tile_order), Layout(schema.cell_order))
    counts, extents, _ = dense_box(schema.domain.dimensions, subarray)
    runs = len(dims) == 1 and list(shape) == [counts[0] * extents[0]]  # (its tiles are runs of its cells)
    for info, values, cells, mask in _attribute_columns(schema, data, validity, shape, lossy, enumerations,
                                                        streams and runs and functools.partial(streams,
                                                                                               extent=extents[0])):
        tiles[info.name] = list(dense_tiles(cells, subarray, schema.domain.dimensions, _padding(info, schema.version), *order))
        if mask is not None:
            valid[info.name] = list(dense_tiles(mask, subarray, schema.domain.dimensions, False, *order))
    cells = int(np.prod([int(d.tile_extent) for d in schema.domain.dimensions]))
    written = None  # whole tiles: every cell written
    if list(shape) != [c * e for c, e in zip(counts, extents)]:
        written = list(dense_tiles(np.ones(shape, bool), subarray, schema.domain.dimensions, False, *order))
    ned = [np.array([lo, hi], value_dtype(d.datatype)) for d, (lo, hi) in zip(dims, non_empty_domain or subarray)]
    return FragmentWrite(schema, schema_name, True, ned, tiles, valid, last_tile_cell_num=cells, written=written)


def _attribute_columns(schema, data, validity, shape, lossy, enumerations, streams=None):
    """(field, values, column, validity) of each attribute, every one checked before any is written."""
    out = []
    for info, attr in zip(attributes(schema), schema.attributes):
        values, name = data[info.name], f"data[{info.name!r}]"
        cells = column(values, info, name, shape, lossy=lossy, streams=streams(info) if streams and info.var else None)
        mask = _validity(values, (validity or {}).get(info.name), info, name, shape)
        if attr.get("enumeration_name"):
            count = (enumerations or {}).get(attr.enumeration_name)
            if count is not None:
                check_codes(cells, mask, count, name, attr.enumeration_name)
        out.append((info, values, cells, mask))
    return out


def _coordinate(values, info, name, lossy=False) -> np.ndarray:
    shape = np.shape(values)
    if len(shape) != 1:
        raise ValueError(f"coords[{name!r}]: expected one coordinate per cell, got shape {shape}")
    return column(values, info, f"coords[{name!r}]", shape, lossy=lossy, dimension=True)


def _ordinal(column: np.ndarray, info) -> np.ndarray:
    """Coordinates as TileDB compares them: datetimes as int64, strings as bytes."""
    if info.var:
        out = np.empty(len(column), object)
        out[:] = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in column.tolist()]
        return out
    return column.view("<i8") if column.dtype.kind in "mM" else column


def sparse_fragment(schema, schema_name, coords, data, validity, meta=None, lossy=False,
                     enumerations=None) -> FragmentWrite:
    """``meta``: the cell timestamps and delete metadata of a consolidated fragment (:func:`_cell_meta`)."""
    dims = dimensions(schema)
    if len(coords) != len(dims):
        raise ValueError(f"coords: the array has {len(dims)} dimensions, {len(coords)} coordinate arrays given")
    columns = {d.name: _coordinate(c, d, d.name, lossy) for d, c in zip(dims, coords)}
    keys = {d.name: _ordinal(columns[d.name], d) for d in dims}
    check_coordinates(keys, dims, schema)
    n = len(next(iter(columns.values())))
    if any(len(c) != n for c in columns.values()):
        raise ValueError("coords: every dimension needs one coordinate per cell")
    if not n:
        raise ValueError("coords: a write needs at least one cell")
    checked = _attribute_columns(schema, data, validity, (n,), lossy, enumerations)
    stamps = (meta or {}).get("__timestamps")
    # equal coordinates newest first, as consolidation with timestamps writes them (the sort is stable)
    pre = None if stamps is None else np.argsort(-stamps.astype(np.int64), kind="stable")
    if pre is not None:
        keys = {k: v[pre] for k, v in keys.items()}
    perm = sparse_order([keys[d.name] for d in dims], schema.domain.dimensions, Layout(schema.tile_order),
                        Layout(schema.cell_order))
    perm = perm if pre is None else pre[perm]
    del keys
    columns = {name: c[perm] for name, c in columns.items()}  # in global order from here on
    sorted_keys = {d.name: _ordinal(columns[d.name], d) for d in dims}
    if not schema.get("allows_dups") and stamps is None and n > 1:
        same = np.ones(n - 1, bool)
        for k in sorted_keys.values():
            same &= k[1:] == k[:-1]
        if same.any():
            raise ValueError("coords: duplicate coordinates, and the array does not allow duplicates")
    bounds = tile_bounds(n, int(schema.capacity))
    starts = bounds[:-1]

    def split(column, ordered=False):
        return np.split(column if ordered else column[perm], bounds[1:-1])

    tiles = {d.name: split(columns[d.name], ordered=True) for d in dims}
    valid = {}
    for info, values, cells, mask in checked:
        tiles[info.name] = split(cells)
        if mask is not None:
            valid[info.name] = split(mask)
    for name, values in (meta or {}).items():
        if name != "processed_conditions":
            if values.shape != (n,):
                raise ValueError(f"{_META_ARGS[name]}: {len(values)} values for {n} cells")
            tiles[name] = split(values)
    mbrs, ned, global_bounds = _sparse_bounds(dims, sorted_keys, columns, starts, bounds)
    last = int(bounds[-1] - bounds[-2]) if n else 0
    return FragmentWrite(schema, schema_name, False, ned, tiles, valid, mbrs=mbrs, last_tile_cell_num=last,
                         global_bounds=global_bounds, has_timestamps=stamps is not None,
                         has_delete_meta="__delete_timestamps" in (meta or {}),
                         processed_conditions=(meta or {}).get("processed_conditions", []))


_META_ARGS = {"__timestamps": "cell_timestamps", "__delete_timestamps": "delete_timestamps",
              "__delete_condition_index": "delete_conditions"}
#: the first format version that stores each (REFERENCE §11: t v14, dt and dci v15, processed conditions v16)
CELL_META_SINCE = {"cell_timestamps": 14, "delete_timestamps": 15, "delete_conditions": 15, "processed_conditions": 16}


def _cell_meta(version: int, dense: bool, cell_timestamps, delete_timestamps, delete_conditions,
               processed_conditions) -> dict | None:
    """The per-cell fields a consolidated sparse fragment carries, checked: None when none is given."""
    given = {"cell_timestamps": cell_timestamps, "delete_timestamps": delete_timestamps,
             "delete_conditions": delete_conditions, "processed_conditions": processed_conditions}
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        return None
    if dense:
        raise ValueError(f"{next(iter(given))}: only sparse fragments carry cell timestamps or delete metadata")
    for name in given:
        if version < CELL_META_SINCE[name]:
            raise ValueError(f"{name}: needs format version {CELL_META_SINCE[name]} or later, not {version}")
    if (delete_timestamps is None) != (delete_conditions is None) or (
            delete_timestamps is not None and cell_timestamps is None):
        raise ValueError("delete_timestamps: goes with delete_conditions and cell_timestamps (TileDB writes "
                         "delete metadata only in fragments consolidated with timestamps)")
    out = {}
    for arg, values in given.items():
        if arg == "processed_conditions":
            if isinstance(values, (str, bytes)) or not all(isinstance(m, str) for m in values):
                raise TypeError("processed_conditions: expected a list of delete commit names (str)")
            out[arg] = list(values)
            continue
        column = np.asarray(values)
        if column.ndim != 1 or column.dtype.kind not in "iu" or (len(column) and column.min() < 0):
            raise ValueError(f"{arg}: expected one non-negative integer per cell")
        out[next(k for k, a in _META_ARGS.items() if a == arg)] = column.astype(np.uint64)
    return out


def _sparse_bounds(dims, keys, columns, starts, bounds):
    """Per tile MBRs, the non-empty domain, and each tile's first and last coordinates in global order (``keys``
    and ``columns`` in global order)."""
    ends = bounds[1:] - 1
    global_bounds = {d.name: (columns[d.name][starts], columns[d.name][ends]) for d in dims}
    if any(d.var for d in dims):
        mbrs = []
        for a, b in zip(starts.tolist(), (ends + 1).tolist()):
            rect = []
            for d in dims:
                k = keys[d.name][a:b]
                rect.append(Container(start=min(k), end=max(k)) if d.var
                            else np.array([k.min(), k.max()], value_dtype(d.datatype)))
            mbrs.append(rect)
        ned = [Container(start=min(keys[d.name]), end=max(keys[d.name])) if d.var
               else np.array([keys[d.name].min(), keys[d.name].max()], value_dtype(d.datatype)) for d in dims]
        return mbrs, ned, global_bounds
    mbrs = np.zeros(len(starts), [(d.name, value_dtype(d.datatype), (2,)) for d in dims])
    for d in dims:
        k = keys[d.name].view(value_dtype(d.datatype))
        mbrs[d.name][:, 0] = np.minimum.reduceat(k, starts)
        mbrs[d.name][:, 1] = np.maximum.reduceat(k, starts)
    ned = [np.array([mbrs[d.name][:, 0].min(), mbrs[d.name][:, 1].max()], value_dtype(d.datatype)) for d in dims]
    return mbrs, ned, global_bounds


class ArrayWriter:
    """An array opened for writing (:func:`open_writer`): each assignment writes one fragment."""

    def __init__(self, path, timestamp=None, key=None, max_chunk_size: int = MAX_CHUNK, threads: int | None = None,
                 fsync: bool | None = None, lossy: bool = False):
        self.path, self.threads = path, None if threads is None else thread_count(threads)
        self.lossy = _flag(lossy, "lossy")
        self.storage, self.root = storage_for(path, fsync=fsync)
        self.key, self.timestamp, self.max_chunk_size = key, _timestamp(timestamp), _chunk_bound(max_chunk_size)
        schemas = load_schemas(self.storage, self.root, key=key)
        self.schema_name, self.schema = schemas[-1]
        self.fragments: list[str] = []

    @property
    def version(self) -> int:
        return self.schema.version

    def _enumerations(self) -> dict:
        """The number of values of each enumeration, which an enumerated attribute's codes index."""
        if not self.schema.get("enumerations"):
            return {}
        return {k: len(v) for k, (v, _) in load_enumerations(self.storage, self.root, self.schema, self.key).items()}

    @property
    def dense(self) -> bool:
        return self.schema.array_type == ArrayType.DENSE

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        pass

    @property
    def meta(self) -> "_WriteMeta":
        """TileDB-Py's ``A.meta`` of an array opened for writing: ``A.meta[k] = v`` and ``del A.meta[k]`` each
        write one ``__meta`` file at the writer's timestamp."""
        return _WriteMeta(self)

    def stream(self, uuid: str | None = None, var_bounds: dict | None = None) -> FragmentStream:
        """A fragment written a batch of whole tiles at a time (:class:`~.fragment_writer.FragmentStream`),
        at the writer's timestamp (default now), named by ``uuid``: batches from :func:`dense_fragment` and
        :func:`sparse_fragment`, in global order."""
        return FragmentStream(self.storage, self.root, self.schema, timestamp=now_ms() if self.timestamp is None
                              else self.timestamp, uuid=_uuid(uuid), key=self.key, max_chunk=self.max_chunk_size,
                              threads=self.threads, var_bounds=var_bounds)

    def __setitem__(self, index, value):
        self.write(value, **({"subarray": _subarray(self.schema, index)} if self.dense else
                             {"coords": index if isinstance(index, tuple) else (index,)}))

    def write(self, data, *, subarray=None, coords=None, validity=None, uuid: str | None = None,
              cell_timestamps=None, delete_timestamps=None, delete_conditions=None,
              processed_conditions=None, lossy: bool | None = None) -> str:
        """Write one fragment: ``data`` (an array, or a dict by attribute) at ``subarray`` (dense; default the
        whole domain) or ``coords`` (sparse: one array per dimension). ``uuid`` (32 hex digits) names the
        fragment, to reproduce a given one. Returns the fragment's name.

        A sparse fragment can hold what consolidation keeps of its cells: ``cell_timestamps`` (ms, one per
        cell, v14+; equal coordinates may then repeat, newest first), ``delete_timestamps`` and
        ``delete_conditions`` (v15+: when a delete removed each cell and the index of its commit in
        ``processed_conditions``, the delete commits' names ``__commits/<name>.del``, v16+; 2**64 - 1 for a
        cell no delete removed).

        Every argument is checked before the first byte is written. A value its field cannot hold exactly
        (a float into an int attribute or dimension, an int past its type's range, a finer datetime unit into
        a coarser one) is refused, unless ``lossy=True`` (default: the writer's ``lossy``) casts it as numpy's
        ``astype`` does."""
        lossy = self.lossy if lossy is None else _flag(lossy, "lossy")
        data, labels = split_labels(self.schema, data)  # dimension labels' values go to their own arrays
        data = _by_attribute(self.schema, data)
        if validity is not None and not isinstance(validity, dict):
            raise TypeError(f"validity: expected a dict of validity arrays by attribute, not {type(validity).__name__}")
        uuid = _uuid(uuid)
        meta = _cell_meta(self.version, self.dense, cell_timestamps, delete_timestamps, delete_conditions,
                          processed_conditions)
        if self.dense:
            if coords is not None:
                raise ValueError("coords: a dense array is written by subarray")
            subarray = (_subarray(self.schema, slice(None)) if subarray is None
                        else _check_subarray(self.schema, subarray))
            check_current_domain(self.schema, subarray)
            fw = dense_fragment(self.schema, self.schema_name, subarray, data, validity, lossy, self._enumerations(),
                                streams=functools.partial(tile_streams, self.schema, key=self.key,
                                                          max_chunk=self.max_chunk_size, threads=self.threads))
            write_labels = prepare_labels(self, subarray, labels, dense_fragment)
        else:
            if subarray is not None:
                raise ValueError("subarray: a sparse array is written by the coordinates of its cells (coords=)")
            if coords is None:
                raise ValueError("coords: a sparse array is written with the coordinates of its cells")
            if isinstance(coords, (str, bytes)) or not isinstance(coords, (list, tuple)):
                raise TypeError(f"coords: expected one array of coordinates per dimension (a list or tuple), not "
                                f"{type(coords).__name__}")
            fw = sparse_fragment(self.schema, self.schema_name, list(coords), data, validity, meta, lossy,
                                  self._enumerations())
            write_labels = prepare_labels(self, sparse_label_ranges(list(coords), labels), labels, dense_fragment)
        t = now_ms() if self.timestamp is None else self.timestamp
        write_labels(t)
        name = write_fragment(self.storage, self.root, fw, timestamp=t, uuid=uuid, key=self.key,
                              max_chunk=self.max_chunk_size, threads=self.threads)
        self.fragments.append(name)
        return name


def _timestamp(value):
    """None, ms, or a (t1, t2) pair with t1 <= t2 (a fragment spanning a range, as consolidation makes)."""
    if value is None:
        return None
    if isinstance(value, tuple) and len(value) == 2:
        t1, t2 = (_timestamp(v) for v in value)
        if t1 is None or t2 is None or t1 > t2:
            raise ValueError(f"timestamp: expected (t1, t2) with t1 <= t2, not {value!r}")
        return t1, t2
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**63:
        raise ValueError(f"timestamp: expected ms since the epoch, a non-negative int, or a (t1, t2) pair, "
                          f"not {value!r}")
    return int(value)


def _end(timestamp):
    return timestamp[1] if isinstance(timestamp, tuple) else timestamp


class _WriteMeta:
    def __init__(self, writer: ArrayWriter):
        self._writer = writer

    def __setitem__(self, name, value):
        w = self._writer
        put_metadata(w.path, {name: value}, timestamp=_end(w.timestamp), key=w.key)

    def __delitem__(self, name):
        w = self._writer
        delete_metadata(w.path, [name], timestamp=_end(w.timestamp), key=w.key)

    def update(self, mapping):
        w = self._writer
        put_metadata(w.path, dict(mapping), timestamp=_end(w.timestamp), key=w.key)


def _flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: expected True or False, not {value!r}")
    return bool(value)


def _uuid(value) -> str:
    if value is None:
        return new_uuid()
    if not isinstance(value, str) or len(value) != 32 or any(c not in "0123456789abcdef" for c in value):
        raise ValueError(f"uuid: expected 32 lowercase hex digits, not {value!r}")
    return value


def _chunk_bound(value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"max_chunk_size: expected a positive number of bytes, not {value!r}")
    return int(value)


def _subarray(schema, index) -> list:
    """TileDB-Py's dense index (slices half-open in coordinates, ints, omitted dims: whole domain; datetime64
    slices inclusive, in any unit, as TileDB-Py's index_domain_subarray takes them) as inclusive [lo, hi] per
    dimension."""
    dims = schema.domain.dimensions
    index = index if isinstance(index, tuple) else (index,)
    if len(index) > len(dims):
        raise IndexError(f"index: {len(index)} indices for {len(dims)} dimensions")
    out = []
    for d, info, i in zip(dims, dimensions(schema), list(index) + [slice(None)] * (len(dims) - len(index))):
        lo, hi = (int(x) for x in d.domain)
        if isinstance(i, slice):
            if i.step not in (None, 1):
                raise IndexError(f"index: dimension {d.name} takes no step")
            stop = hi if i.stop is None else _bound(info, i.stop)
            out.append((lo if i.start is None else _bound(info, i.start),
                        stop - 1 if isinstance(i.stop, (int, np.integer)) else stop))
        elif isinstance(i, (int, np.integer, np.datetime64)):
            out.append((_bound(info, i),) * 2)
        else:
            raise IndexError(f"index: dimension {d.name} takes a slice or an int, not {type(i).__name__}")
    return _check_subarray(schema, out)


def _bound(info, value) -> int:
    """A bound of dimension ``info`` as its int64 (datetime64 in any unit converted to the dimension's)."""
    if isinstance(value, (int, np.integer, np.datetime64)) and not isinstance(value, bool):
        return int(range_bound(info, value, "index"))
    raise IndexError(f"index: dimension {info.name} takes ints or datetime64, not {value!r}")


def _check_subarray(schema, subarray) -> list:
    dims = schema.domain.dimensions
    if not isinstance(subarray, (list, tuple)) or not all(isinstance(r, (list, tuple)) and len(r) == 2
                                                          for r in subarray):
        raise TypeError(f"subarray: expected one (low, high) pair per dimension, not {subarray!r}")
    if len(subarray) != len(dims):
        raise ValueError(f"subarray: {len(subarray)} ranges for {len(dims)} dimensions")
    out = []
    for d, info, (lo, hi) in zip(dims, dimensions(schema), subarray):
        dlo, dhi = (int(x) for x in d.domain)
        if any(isinstance(v, (float, np.floating)) for v in (lo, hi)):
            raise TypeError(f"subarray: dimension {d.name} takes int bounds, not {lo!r}, {hi!r}")
        lo, hi = (int(range_bound(info, v, "subarray")) for v in (lo, hi))
        if not dlo <= lo <= hi <= dhi:
            raise ValueError(f"subarray: [{lo}, {hi}] is not inside dimension {d.name}'s domain [{dlo}, {dhi}]")
        out.append((lo, hi))
    return out


def open_writer(path, timestamp=None, key=None, max_chunk_size: int = MAX_CHUNK, threads: int | None = None,
                fsync: bool | None = None, lossy: bool = False) -> ArrayWriter:
    """The array at ``path`` opened for writing (``tdbformat.open_array(path, "w")``): assignments write
    fragments at ``timestamp`` (ms; default now), encrypted with ``key``; tiles are chunked at
    ``max_chunk_size`` bytes from v5 (TileDB's default 64 KiB; v1-4 chunk by the pipeline's bound) and
    filtered by ``threads`` threads (default ``tdbformat.filters.set_threads``: one per core), which give
    the same bytes in any number. ``fsync`` (default on, or the environment's ``TDBFORMAT_FSYNC=0``): data
    files and fragment metadata reach the disk before the commit marker is renamed into place; ``False``
    for scratch writes that a crash of the machine may lose. ``lossy=True`` lets assignments cast values their
    fields cannot hold exactly (:meth:`ArrayWriter.write`)."""
    return ArrayWriter(path, timestamp=timestamp, key=key, max_chunk_size=max_chunk_size, threads=threads,
                       fsync=fsync, lossy=lossy)


def write(path, data, *, subarray=None, coords=None, validity=None, timestamp=None, key=None,
          max_chunk_size: int = MAX_CHUNK, uuid: str | None = None, cell_timestamps=None, delete_timestamps=None,
          delete_conditions=None, processed_conditions=None, threads: int | None = None,
          fsync: bool | None = None, lossy: bool = False) -> str:
    """Write one fragment to the array at ``path`` (see :meth:`ArrayWriter.write`: ``lossy=True`` casts values
    their fields cannot hold exactly, which are otherwise refused); returns its name. ``fsync``: as
    :func:`open_writer` (``False``: no syncs, for scratch writes)."""
    return open_writer(path, timestamp, key, max_chunk_size, threads, fsync, lossy).write(
        data, subarray=subarray, coords=coords, validity=validity, uuid=uuid, cell_timestamps=cell_timestamps,
        delete_timestamps=delete_timestamps, delete_conditions=delete_conditions,
        processed_conditions=processed_conditions)
