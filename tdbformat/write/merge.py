"""The merge of one consolidation step in bounded memory (fragment_consolidator.cc, the global-order reader
feeding the global-order writer): the new fragment is written a batch of whole tiles at a time
(:class:`~.fragment_writer.FragmentStream`) while the fragments it replaces are read a few tiles at a time.

- Sparse: one cursor per fragment holds its next tiles' cells (each fragment is in global order); a round
  takes, of the cells the cursors hold, every one up to the least of the last cells of the cursors with tiles
  still unread (nothing unread can come before it), sorts them (``np.lexsort`` of the global-order keys, then
  newest timestamp, then fragment, then position: the order a sort of all the cells at once gives), and hands
  them to the writer, which cuts them into tiles of ``capacity`` cells. Cursors whose cells are all taken
  read their next tiles.
- Dense: the union of the non-empty domains is read and written a slab of whole tiles at a time, slabs in
  tile order (the same tiles, in the same order, as one write of the union). Cut at a max fragment size,
  each new fragment is a rectangle of tiles (:class:`_Rectangles`); the tiles past the last rectangle of
  the fragment being written wait, filtered, until it is known which fragment they fall in.

The ``budget`` bounds the decoded cells held at once: the cursors' tiles take a third of it, a round's sort a
third, and the cells being written a third; each fragment gets at least its largest tile, and a budget that
cannot give every fragment one (or a dense slab one tile) is refused before anything is written.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from typing import NamedTuple

import numpy as np
from construct import Container

from ..array import check_ranges
from ..array.cells import filled, from_ordinal, nonempty_bound
from ..array.dense import read_dense
from ..array.evaluate import kept_by_delete
from ..array.fragment import field_index, listed_tile_num
from ..array.order import global_order_keys, hilbert_values, tile_range
from ..array.sparse import _attribute_columns
from ..enums import Layout
from ..layout import COMMITS_DIR
from ..errors import FormatError
from ..structs import fragment as fragment_mod
from ..structs.array_schema import VAR_NUM, attributes
from .fragment_writer import whole_write_var_bound
from .metadata_modes import commit_together, commits_name
from .tiling import sparse_grid, var_cells
from .writer import dense_fragment, sparse_fragment

__all__ = ["merge_sparse", "merge_dense", "stored_text"]

_U64 = 2**64 - 1
#: bytes a var-sized cell costs beyond its data, decoded into an object column (pointer and object header)
_OBJECT = 64
#: the cursors' tiles take a share of the budget; the round's sort as much; the cells written as much
_SHARES = 3
#: the most bytes of cells handed to the writer at once, whatever the budget
_BATCH = 256 * 2**20
#: bytes a cell's merge keys cost: tile index and coordinate per dimension, timestamp, fragment, position
_KEY = 8


def _cell_bytes(schema, fields) -> int:
    """Decoded bytes of a cell's fixed parts: fixed values, var cells' object overhead, validity."""
    out = 0
    for f in fields:
        out += _OBJECT if f.var else f.datatype.size * f.cell_val_num
        out += 1 if f.nullable else 0
    return out


def stored_text(values):
    """A column of str that UTF-8 cannot hold (cells whose stored bytes are no UTF-8, read back with
    surrogateescape) as those bytes: the merge copies cells as stored, as TileDB's does."""
    data = np.ma.getdata(values) if isinstance(values, np.ma.MaskedArray) else values
    if not (isinstance(data, np.ndarray) and data.dtype == object):
        return values
    try:
        "".join(v for v in data.tolist() if isinstance(v, str)).encode()
        return values
    except UnicodeEncodeError:
        out = np.empty(len(data), object)
        out[:] = [v.encode("utf-8", "surrogateescape") if isinstance(v, str) else v for v in data.tolist()]
        return np.ma.masked_array(out, np.ma.getmaskarray(values)) if isinstance(values, np.ma.MaskedArray) else out


# --- sparse ---

class _Cursor:
    """A fragment's cells, read a few tiles at a time (:meth:`load`): ``buffer`` holds the columns of the
    cells read and not yet merged (each a numpy array, names as :func:`_flat`), ``keys`` their merge keys."""

    def __init__(self, number: int, frag, costs: np.ndarray, share: int, read):
        self.number, self.frag, self.costs, self.share, self._read = number, frag, costs, share, read
        self.next, self.buffer, self.keys, self.position = 0, None, None, 0

    @property
    def more(self) -> bool:
        return self.next < len(self.costs)

    @property
    def empty(self) -> bool:
        return self.buffer is None or not len(self.keys[0])

    def load(self, keys_of) -> None:
        """The next tiles, as many as the cursor's share holds (at least one), until some cell survives."""
        while self.empty and self.more:
            end = self.next + 1
            total = int(self.costs[self.next])
            while end < len(self.costs) and total + int(self.costs[end]) <= self.share:
                total += int(self.costs[end])
                end += 1
            self.buffer = self._read(self.frag, range(self.next, end))
            self.next = end
            n = len(self.buffer["__timestamps"])
            self.buffer["__position"] = np.arange(self.position, self.position + n, dtype=np.int64)
            self.position += n
            self.keys = keys_of(self.buffer, self.number)

    def take(self, taken: np.ndarray) -> None:
        """Drop the cells ``taken`` (a mask over the buffer): a view of the rest where they are a prefix."""
        k = int(taken.sum())
        keep = slice(k, None) if taken[:k].all() else ~taken
        self.buffer = {name: column[keep] for name, column in self.buffer.items()}
        self.keys = [key[keep] for key in self.keys]


def merge_sparse(arr, writer, frags, uuid: str, *, budget: int, with_timestamps: bool, delete_meta: bool,
                 purge: bool, processed: list | None, max_fragment_size: int | None, pool) -> list:
    """Merge ``frags`` into a new fragment of ``writer`` (named by ``uuid``, module doc), or several of at most
    ``max_fragment_size`` stored bytes (:class:`_Output`); returns their names. ``with_timestamps``: every cell
    version with its timestamp (v15+), else the newest of equal coordinates (duplicates kept where the array
    allows them, newest fragment first); ``delete_meta``: with the delete metadata; ``purge``: without the cells
    a delete removed; ``processed``: the delete commits the new fragment lists (None: before v16)."""
    schema = writer.schema
    attrs = attributes(schema)
    per_cell = _cell_bytes(schema, arr.dims + attrs) + _KEY * (2 * len(arr.dims) + 4) + 16
    costs = [_tile_costs(f, per_cell, schema) for f in frags]
    need = sum(int(c.max(initial=0)) for c in costs)
    if _SHARES * need > budget:
        raise ValueError(f"memory_budget: {budget} bytes cannot merge these {len(frags)} fragments: the merge "
                         f"holds a tile of each at once, {need} bytes decoded, in a third of the budget: it "
                         f"needs {_SHARES * need} bytes")
    spare = (budget // _SHARES - need) // max(len(frags), 1)
    deletes = arr.deletes

    def read(frag, tiles):
        return _flat(_cells(arr, schema, frag, deletes, pool, list(tiles)), arr.dims, attrs, purge)

    dims = schema.domain.dimensions
    var = [d.get("cell_val_num") == VAR_NUM for d in dims]
    dom_lo, extents = sparse_grid(dims)
    grid = dict(dom_lo=dom_lo, extents=extents, tile_order=Layout(schema.tile_order), cell_order=Layout(schema.cell_order))
    domains = [None if v else d.domain for v, d in zip(var, dims)]

    def keys_of(buffer, number):
        coords = [buffer[d.name] for d in arr.dims]
        hilbert = hilbert_values(coords, domains) if grid["cell_order"] == Layout.HILBERT else None
        n = len(coords[0])
        # ties: the newest timestamp first, then (with timestamps) the fragment read first, or (without) the
        # newest fragment first; then the cell's place in its fragment
        tie = [buffer["__position"]]
        tie += [np.full(n, number, np.int64), np.uint64(_U64) - buffer["__timestamps"]] if with_timestamps \
            else [np.full(n, len(frags) - number, np.int64)]
        return tie + global_order_keys(coords, hilbert=hilbert, **grid)

    cursors = [_Cursor(i, f, c, int(c.max(initial=0)) + spare, read) for i, (f, c) in enumerate(zip(frags, costs))]
    with ExitStack() as streams:
        output = _Output(writer, uuid, max_fragment_size, streams)
        out = _Tiles(arr, writer, output, budget // _SHARES, per_cell, delete_meta, processed, with_timestamps)
        for batch in _rounds(cursors, keys_of, out.step):
            out.add(batch)
        out.finish()
        return output.finish()


class _Output:
    """The new fragments of a step: one, or with a ``max_size`` (sm.consolidation.max_fragment_size) a new
    one, of the same timestamps, each time the next full tile would take the current one's stored bytes past
    it (GlobalOrderWriter::identify_fragment_tile_boundaries; the last tile, not full, goes to the last
    fragment whatever its size); all committed at the end, as TileDB commits them when the write finalizes."""

    def __init__(self, writer, uuid, max_size, streams: ExitStack, var_bounds: dict | None = None):
        self.writer, self.max_size, self.streams, self.var_bounds = writer, max_size, streams, var_bounds
        self.done = [streams.enter_context(writer.stream(uuid, var_bounds=var_bounds))]
        self.size = 0

    def _too_large(self, size: int) -> None:
        if size > self.max_size:
            raise ValueError(f"config: sm.consolidation.max_fragment_size = {self.max_size} is too small to "
                             f"write a single tile ({size} bytes stored)")

    def _next(self) -> None:
        """The current fragment done (committed with the others at :meth:`finish`), a new one begun."""
        self.done[-1].finish(commit=False)
        self.done.append(self.streams.enter_context(self.writer.stream(var_bounds=self.var_bounds)))

    def add(self, fw, final: bool) -> None:
        stream = self.done[-1]
        if self.max_size is None:
            stream.add(fw)
            return
        encoded, sizes = stream.encode(fw)
        n, start = len(sizes), 0
        whole = n - 1 if final and fw.last_tile_cell_num < int(self.writer.schema.capacity) else n
        for t in range(whole):
            self._too_large(int(sizes[t]))
            if self.size + sizes[t] > self.max_size:
                if t > start:
                    self.done[-1].add(_tiles_of(fw, start, t), {i: e[start:t] for i, e in encoded.items()})
                self._next()
                self.size, start = 0, t
            self.size += int(sizes[t])
        self.done[-1].add(_tiles_of(fw, start, n), {i: e[start:] for i, e in encoded.items()})

    def finish(self) -> list:
        """Every new fragment committed, in order (several at once, in one consolidated commits file, as
        GlobalOrderWriter::finalize_global_write_state commits them); their names."""
        self.done[-1].finish(commit=False)
        if len(self.done) == 1:
            self.done[0].commit_now()
        else:
            lines = [f"{COMMITS_DIR}/{stream.name}.wrt" for stream in self.done]
            name = commits_name(lines[0], lines[-1], self.writer.version)
            commit_together(self.writer.storage, self.writer.root, name,
                            [Container(uri=line, delete=None) for line in lines], self.writer.key)
        return [stream.name for stream in self.done]


def _tiles_of(fw, start: int, end: int):
    """Tiles ``start`` to ``end`` of a sparse :class:`FragmentWrite`, as one: their non-empty domain is their
    MBRs' union (as TileDB's fragment metadata grows it tile by tile)."""
    n = len(next(iter(fw.tiles.values())))
    if (start, end) == (0, n):
        return fw
    mbrs = fw.mbrs[start:end]
    dims = [d.name for d in fw.schema.domain.dimensions]
    if isinstance(mbrs, np.ndarray):
        ned = [np.array([mbrs[d][:, 0].min(), mbrs[d][:, 1].max()], mbrs.dtype[d].base) for d in dims]
    else:
        ned = [Container(start=min(r[j].start for r in mbrs), end=max(r[j].end for r in mbrs))
               if isinstance(mbrs[0][j], dict) else
               np.array([min(r[j][0] for r in mbrs), max(r[j][1] for r in mbrs)], mbrs[0][j].dtype)
               for j in range(len(dims))]
    return replace(fw, non_empty_domain=ned, tiles={k: v[start:end] for k, v in fw.tiles.items()},
                   validity={k: v[start:end] for k, v in fw.validity.items()}, mbrs=mbrs,
                   last_tile_cell_num=fw.last_tile_cell_num if end == n else int(fw.schema.capacity),
                   global_bounds={k: (a[start:end], b[start:end]) for k, (a, b) in fw.global_bounds.items()})


def _tile_costs(frag, per_cell: int, schema) -> np.ndarray:
    """Decoded bytes of each tile of ``frag``: its cells times ``per_cell``, and its var data."""
    n, cap = listed_tile_num(frag), int(schema.capacity)
    last = int(frag.metadata.last_tile_cell_num) or cap
    if max(cap, last) * max(per_cell, 1) >= 2**62:  # (a hostile capacity: no budget holds such a tile)
        raise FormatError(f"fragment {frag.name}: tiles of {max(cap, last)} cells of {per_cell} bytes each")
    cells = np.full(n, cap, np.int64)
    if n:
        cells[-1] = last
    costs = cells * per_cell
    meta = frag.metadata
    for i, info in enumerate(meta.index_fields):
        if info.var and meta.legacy is None:
            sizes = np.asarray(fragment_mod.read_section(meta, "tile_var_sizes", i), np.int64)[:n]
            if len(sizes) < n:
                raise FormatError(f"fragment {frag.name}: {len(sizes)} var tile sizes of field {i} for {n} tiles")
            costs += sizes
    return costs


def _flat(cells: dict, dims, attrs, purge: bool) -> dict:
    """:func:`_cells`'s columns by name (dimensions, attributes, ``__valid_<a>``, the cell metadata), without
    the cells a delete removed where ``purge``."""
    out = {d.name: c for d, c in zip(dims, cells["coords"])}
    out.update(cells["data"])
    out.update({f"__valid_{k}": v for k, v in cells["validity"].items()})
    out.update(__timestamps=cells["timestamps"], __delete_timestamps=cells["delete_timestamps"],
               __delete_condition_index=cells["delete_conditions"])
    if purge:
        keep = cells["delete_timestamps"] == np.uint64(_U64)
        out = {k: v[keep] for k, v in out.items()}
    return out


def _rounds(cursors, keys_of, most: int):
    """The merged cells, a sorted batch of at most ``most`` at a time (module doc): a round sorts once, and
    hands its cells out ``most`` at a time."""
    while True:
        for c in cursors:
            if c.empty and c.more:
                c.load(keys_of)
        held = [c for c in cursors if not c.empty]
        if not held:
            return
        pending = [c for c in held if c.more]
        takers = held
        if pending:  # rank every held cursor's first cell and each unfinished cursor's last cell at once
            rows = [np.concatenate([k[:1] for k in keys]) for keys in
                    zip(*([c.keys for c in held] + [[k[-1:] for k in c.keys] for c in pending]))]
            rank = np.empty(len(held) + len(pending), np.int64)
            rank[np.lexsort(rows)] = np.arange(len(rank))
            bound = int(rank[len(held):].min())
            bounding = pending[int(rank[len(held):].argmin())]
            takers = [c for c, r in zip(held, rank[:len(held)]) if r <= bound]
        sizes = [len(c.keys[0]) for c in takers]
        order = np.lexsort([np.concatenate(k) for k in zip(*(c.keys for c in takers))])
        if pending:
            last = sum(sizes[:takers.index(bounding) + 1]) - 1
            order = order[:int(np.flatnonzero(order == last)[0]) + 1]
        taken = np.zeros(sum(sizes), bool)
        taken[order] = True
        joined = {name: np.concatenate([c.buffer[name] for c in takers]) for name in takers[0].buffer}
        for at in range(0, len(order), most):
            yield {name: column[order[at:at + most]] for name, column in joined.items()}
        del joined
        at = 0
        for c, n in zip(takers, sizes):
            c.take(taken[at:at + n])
            at += n


class _Tiles:
    """The merged cells cut into tiles of ``capacity`` and handed to the new fragments (:class:`_Output`) a
    few at a time (at most ``limit`` bytes); the cells of a tile not yet full wait for the next batch."""

    def __init__(self, arr, writer, stream, limit, per_cell, delete_meta, processed, with_timestamps):
        self.arr, self.schema, self.stream, self.processed = arr, writer.schema, stream, processed
        self.schema_name = writer.schema_name
        self.delete_meta, self.with_timestamps = delete_meta, with_timestamps
        self.capacity = int(self.schema.capacity)
        # a quarter of the limit (at most _BATCH): a round's cells, those waiting, and the writer's two copies
        self.step = max(1, min(limit, _BATCH) // (4 * per_cell * self.capacity)) * self.capacity
        self.waiting, self.held, self.count, self.last = [], 0, 0, None

    def add(self, batch: dict) -> None:
        """Cells after those added before; written once a step of whole tiles waits."""
        if not self.with_timestamps:
            batch = self._newest(batch)
        self.waiting.append(batch)
        self.held += len(batch["__position"])
        if self.held >= self.step:
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        batch = {k: np.concatenate([b[k] for b in self.waiting]) for k in self.waiting[0]}
        n = len(batch["__position"])
        whole = n if final else n - n % self.capacity
        for at in range(0, whole, self.step):
            end = min(at + self.step, whole)
            self._write({k: v[at:end] for k, v in batch.items()}, final and end == whole)
        self.waiting = [{k: v[whole:] for k, v in batch.items()}]
        self.held = n - whole

    def finish(self) -> None:
        if self.held:
            self._flush(final=True)
        if not self.count:
            raise ValueError("uri: every cell of the fragments is deleted, and purge_deleted_cells drops them all "
                             "(TileDB writes no fragment then either)")

    def _newest(self, batch: dict) -> dict:
        """Without cell timestamps, the first (newest) of equal coordinates, unless the array allows
        duplicates; the last cell of the batch before counts too. Coordinates are the same cell only if their
        bytes are (TileDB keeps -0.0 and 0.0 apart)."""
        n = len(batch["__position"])
        if self.schema.allows_dups or not n:
            return batch
        same = np.ones(n, bool)
        last = {}
        for d in self.arr.dims:
            col = batch[d.name]
            col = col.view(f"u{col.itemsize}") if col.dtype.kind == "f" else col
            before = self.last[d.name] if self.last is not None else col[:1]
            same &= np.concatenate([before, col[:-1]]) == col
            last[d.name] = col[-1:]
        if self.last is None:
            same[0] = False
        self.last = last
        return {k: v[~same] for k, v in batch.items()} if same.any() else batch

    def _write(self, cells: dict, final: bool = False) -> None:
        attrs = attributes(self.schema)
        meta = None
        if self.with_timestamps:
            meta = {"__timestamps": cells["__timestamps"]}
            if self.delete_meta:
                meta.update(__delete_timestamps=cells["__delete_timestamps"],
                            __delete_condition_index=cells["__delete_condition_index"])
            if self.processed is not None:
                meta["processed_conditions"] = self.processed
        fw = sparse_fragment(self.schema, self.schema_name, [from_ordinal(cells[d.name], d) for d in self.arr.dims],
                             {a.name: stored_text(cells[a.name]) for a in attrs},
                             {a.name: cells[f"__valid_{a.name}"] for a in attrs if a.nullable}, meta)
        self.stream.add(fw, final)
        self.count += len(cells["__position"])


def _cells(arr, schema, frag, deletes, pool, tiles) -> dict:
    """Tiles ``tiles`` of a fragment: its cells as stored, their timestamps (the fragment's first timestamp
    where it keeps none), and when and by which delete (an index into ``deletes``) each was removed: the
    delete metadata it keeps, or that of the first delete that removes it, whichever is older (UINT64_MAX:
    none; SparseGlobalOrderReader::copy_delete_meta_tiles)."""
    names = [d.name for d in arr.dims]
    attrs = attributes(schema)
    stored = {a.name: idx for a in attrs if (idx := field_index(frag, a)) is not None}
    extra = (["__timestamps"] if frag.has_timestamps else []) + (
        ["__delete_timestamps", "__delete_condition_index"] if frag.has_delete_meta else [])
    coords, decoded = arr.tiles.columns(frag, arr.dims, [*stored.values(), *map(frag.index, extra)], tiles, pool)
    decoded = dict(zip([*stored, *extra], decoded))
    n = len(coords[0])
    data, validity = _attribute_columns(schema, frag, attrs, {k: decoded[k] for k in stored}, n)
    for k in extra:
        if len(decoded[k][0]) != n:
            raise FormatError(f"fragment {frag.name}: {k} holds {len(decoded[k][0])} cells, its coordinates {n}",
                              file=str(frag.path))
    t1, t2 = frag.timestamp_range
    stamps = decoded["__timestamps"][0].astype(np.uint64) if frag.has_timestamps else np.full(n, t1, np.uint64)
    columns = dict(zip(names, coords), **data)
    when, which = np.full(n, _U64, np.uint64), np.full(n, _U64, np.uint64)
    open_cells = np.ones(n, bool)
    for i, d in enumerate(deletes):  # SparseIndexReaderBase::apply_query_condition, oldest delete first
        if d.timestamp < t1 or d.marker in frag.processed_conditions:
            continue
        hit = ~kept_by_delete(d, columns, validity, n)
        if frag.has_timestamps and d.timestamp <= t2:
            hit &= stamps <= np.uint64(d.timestamp)
        when[hit & open_cells], which[hit & open_cells] = d.timestamp, i
        open_cells &= ~hit
    if frag.has_delete_meta:
        old_when, old_which = (decoded[k][0].astype(np.uint64) for k in extra[-2:])
        index = {d.marker: i for i, d in enumerate(deletes)}
        processed = frag.processed_conditions
        if len(old_which) and int(old_which[old_which != np.uint64(_U64)].max(initial=0)) >= max(len(processed), 1) \
                and (old_which != np.uint64(_U64)).any():
            raise FormatError(f"fragment {frag.name}: a delete condition index is past its {len(processed)} "
                              "processed conditions", file=str(frag.path))
        # a processed delete since vacuumed maps to 0, as TileDB's map lookup gives
        converted = np.array([index.get(m, 0) for m in processed] + [0], np.uint64)
        mapped = np.where(old_which == np.uint64(_U64), np.uint64(_U64),
                          converted[np.minimum(old_which, np.uint64(len(processed))).astype(np.int64)])
        older = when >= old_when
        when, which = np.where(older, old_when, when), np.where(older, mapped, which)
    return {"coords": coords, "data": data, "validity": validity, "timestamps": stamps,
            "delete_timestamps": when, "delete_conditions": which}


# --- dense ---

#: the dense merge holds a slab's cells about this many times: the read, its tiles (padded), the filtered bytes
MIN_TILES = 3


def merge_dense(arr, writer, frags, union, uuid: str, *, budget: int, max_fragment_size: int | None, pool) -> list:
    """Merge the dense ``frags`` over ``union`` into a new fragment of ``writer`` (named by ``uuid``), a slab
    of whole tiles at a time (module doc), or into several of at most ``max_fragment_size`` stored bytes, each
    a rectangle of tiles (:class:`_Rectangles`); returns their names."""
    schema = writer.schema
    attrs = attributes(schema)
    dims = schema.domain.dimensions
    box = [(int(lo), int(hi)) for lo, hi in union]
    cell_bytes = _cell_bytes(schema, attrs) + max((_var_per_cell(f, attrs) for f in frags), default=0)
    tile_cells = int(np.prod([int(d.tile_extent) for d in dims], dtype=object))
    need = MIN_TILES * tile_cells * cell_bytes
    if need > budget:
        raise ValueError(f"memory_budget: {budget} bytes cannot merge a dense tile of {tile_cells} cells: a tile "
                         f"is {tile_cells * cell_bytes} bytes decoded and the merge holds it {MIN_TILES} times: it "
                         f"needs {need} bytes")
    grid = _grid(dims, box, Layout(schema.tile_order))
    slabs = list(_slabs(grid, budget // need))

    def cells(sub):
        grown = _whole_tiles(grid, sub)
        inside = [(lo, min(hi, int(d.domain[1]))) for (lo, hi), d in zip(grown, dims)]
        ranges = check_ranges(arr.dims, {d.name: tuple(nonempty_bound(d, v) for v in b) for d, b in zip(arr.dims, inside)})
        got = read_dense(arr, schema, frags, attrs, ranges, Layout.ROW_MAJOR, pool)
        return _as_stored(schema, attrs, frags, got, grown, inside)

    # a var attribute's chunk bound of the whole write, where TileDB's dense tiler makes it of that
    bounds = _dense_var_bounds(schema, attrs, slabs, cells) if len(slabs) > 1 else {}
    with ExitStack() as streams:
        output = _Output(writer, uuid, None, streams, bounds) if max_fragment_size is None else \
            _Rectangles(writer, uuid, max_fragment_size, streams, grid)
        for sub in slabs:
            output.add(dense_fragment(schema, writer.schema_name, _whole_tiles(grid, sub), cells(sub), None,
                                      non_empty_domain=sub), final=False)
        return output.finish()


def _as_stored(schema, attrs, frags, got: dict, grown, inside) -> dict:
    """The cells of the whole tiles ``grown`` as TileDB's merge stores them (it reads the union grown to whole
    tiles): ``got`` (the read of ``inside``, ``grown`` within the domain) where a fragment wrote, the fill value
    as stored everywhere else (the default string fill one zero byte, which reads show as "")."""
    shape = tuple(hi - lo + 1 for lo, hi in grown)
    written = np.zeros(shape, bool)
    for f in frags:
        written[tuple(slice(max(int(n[0]), lo) - lo, max(min(int(n[1]), hi) - lo + 1, 0))
                      for n, (lo, hi) in zip(f.non_empty_domain, grown))] = True
    at = tuple(slice(0, hi - lo + 1) for lo, hi in inside)
    stored = {a.name: a for a in schema.attributes}
    out = {}
    for a in attrs:
        values = filled(a, stored[a.name], shape, stored=True)
        values[written] = np.ma.getdata(got[a.name])[written[at]]
        if a.nullable:
            valid = np.full(shape, bool(stored[a.name].get("fill_value_validity")))
            valid[written] = ~np.ma.getmaskarray(got[a.name])[written[at]]
            values = np.ma.masked_array(values, ~valid)
        out[a.name] = stored_text(values)
    return out


#: is_rectangular_domain's answers (tiledb/sm/tile/arithmetic.h): a run of tiles is a rectangle, is not one
#: but more tiles can make it one, or can never be one
YES, NO, NEVER = "yes", "no", "never"


def rectangle(hyperrows, start: int, num: int) -> str:
    """Whether tiles ``start`` to ``start + num - 1`` (in tile order) of a grid are a rectangle:
    ``hyperrows[j]`` is the number of tiles of a hyperrow of the grid's ``j``-th slowest dimension (the
    product of the counts of the faster ones). A run may cross a hyperrow only from its start, and then
    covers whole ones."""
    for h in hyperrows:
        offset = start % h
        if offset + num > h:
            if offset:
                return NEVER
            if num % h:
                return NO
    return YES


class _Rectangles(_Output):
    """The dense fragments of a step cut at ``max_size`` as GlobalOrderWriter::identify_fragment_tile_boundaries
    cuts a dense write. Tiles go in tile order; each run that is a rectangle (:func:`rectangle`) moves
    ``end`` past it; when the next tile would take the fragment past the size, or the fragment can never
    again be a rectangle, it ends at ``end`` and the tiles after wait (``pending``) for the next. Each
    fragment's non-empty domain is its tiles' box, cropped to the union (domain_tile_offset)."""

    def __init__(self, writer, uuid, max_size, streams: ExitStack, grid):
        super().__init__(writer, uuid, max_size, streams)
        self.grid = grid
        # tile numbers of the union: the fragment's first, past its last rectangle (None: none yet), the next
        self.start, self.end, self.seen = 0, None, 0
        self.running, self.size = 0, 0  # stored bytes from start: of every tile seen, of those before end
        self.pending = []  # (FragmentWrite, its filtered tiles, its first tile's number) not yet stored

    def add(self, fw, final: bool) -> None:
        encoded, sizes = self.done[-1].encode(fw)
        self.pending.append((fw, encoded, self.seen))
        hyperrows = self.grid.hyperrows
        for size in sizes.tolist():
            t = self.seen
            self._too_large(size)
            if self.running + size > self.max_size or rectangle(hyperrows, self.start, t - self.start + 1) == NEVER:
                if self.end is None:  # (TileDB's writer would go on from tile 0 and write out of its buffers)
                    raise ValueError(f"config: sm.consolidation.max_fragment_size = {self.max_size}: TileDB's "
                                     f"writer cannot cut this dense array: the fragment from tile {self.start} is "
                                     f"no rectangle of tiles yet where tile {t} must begin the next")
                self._store(self.end)
                self._next()
                self.running -= self.size
                self.start, self.end = self.end, None
            if rectangle(hyperrows, self.start, t - self.start + 1) == YES:
                self.size, self.end = self.running + size, t + 1
            self.running += size
            self.seen += 1
        if self.end is not None:
            self._store(self.end)

    def finish(self) -> list:
        self._store(self.seen)
        return super().finish()

    def _store(self, end: int) -> None:
        """The waiting tiles before tile ``end`` into the current fragment."""
        keep = []
        for fw, encoded, first in self.pending:
            n = len(next(iter(fw.tiles.values())))
            k = min(max(end - first, 0), n)
            if k:
                self.done[-1].add(self._part(fw, first, 0, k), {i: e[:k] for i, e in encoded.items()})
            if k < n:
                keep.append((self._part(fw, first, k, n), {i: e[k:] for i, e in encoded.items()}, first + k))
        self.pending = keep

    def _part(self, fw, first: int, start: int, end: int):
        """Tiles ``start`` to ``end`` of ``fw`` (whose first tile is the union's ``first``), as one."""
        if (start, end) == (0, len(next(iter(fw.tiles.values())))):
            return fw
        box = _run_box(self.grid, first + start, end - start)
        return replace(fw, tiles={k: v[start:end] for k, v in fw.tiles.items()},
                       validity={k: v[start:end] for k, v in fw.validity.items()},
                       written=None if fw.written is None else fw.written[start:end],
                       non_empty_domain=[np.array(b, n.dtype) for b, n in zip(box, fw.non_empty_domain)])


def _var_per_cell(frag, attrs) -> int:
    """The most var bytes a cell of ``frag`` holds in a tile, over its var attributes."""
    meta, total = frag.metadata, 0
    cells = max(1, int(frag.metadata.cell_num) // max(1, frag.tile_num()))
    for a in attrs:
        idx = field_index(frag, a)
        if a.var and idx is not None and meta.legacy is None and frag.tile_num():
            total += int(np.asarray(fragment_mod.read_section(meta, "tile_var_sizes", idx)).max()) // cells + 1
    return total


class _Grid(NamedTuple):
    """The tiles of a box (the union of a dense merge): per dimension the domain's start, the tile extent, the
    box's first tile and its number of tiles; the dimensions from the slowest to the fastest in tile order,
    and the tiles of a hyperrow of each (:func:`rectangle`)."""

    origin: list
    ext: list
    first: list
    counts: list
    axes: list
    hyperrows: list
    box: list


def _grid(dims, box, tile_order: Layout) -> _Grid:
    origin = [int(d.domain[0]) for d in dims]
    ext = [int(d.tile_extent) for d in dims]
    first, last = tile_range(origin, ext, [lo for lo, _ in box], [hi for _, hi in box])
    counts = [b - a + 1 for a, b in zip(first, last)]
    axes = list(range(len(dims)))[::-1 if tile_order == Layout.COL_MAJOR else 1]
    hyperrows = [int(np.prod([counts[a] for a in axes[j + 1:]], dtype=object)) for j in range(len(axes))]
    return _Grid(origin, ext, first, counts, axes, hyperrows, box)


def _run_box(grid: _Grid, start: int, n: int) -> list:
    """The box of tiles ``start`` to ``start + n - 1`` (in tile order) of ``grid``: per dimension the span of
    its tiles over the run, cropped to the grid's box."""
    out, end, spans = [], start + n - 1, {}
    for a, h in zip(grid.axes, grid.hyperrows):
        q0, q1, c = start // h, end // h, grid.counts[a]
        spans[a] = (q0 % c, q1 % c) if q1 - q0 < c and q0 % c <= q1 % c else (0, c - 1)
    for a, (lo, hi) in enumerate(grid.box):
        t0, t1 = spans[a]
        out.append((max(lo, grid.origin[a] + (grid.first[a] + t0) * grid.ext[a]),
                    min(hi, grid.origin[a] + (grid.first[a] + t1 + 1) * grid.ext[a] - 1)))
    return out


def _whole_tiles(grid: _Grid, box) -> list:
    """``box`` grown to whole tiles of ``grid`` (past the domain's end where its last tile is cut short)."""
    return [(o + (lo - o) // e * e, o + ((hi - o) // e + 1) * e - 1)
            for (lo, hi), o, e in zip(box, grid.origin, grid.ext)]


def _slabs(grid: _Grid, most: int):
    """Sub-boxes of the grid's box that are runs of whole tiles in tile order (each at most ``most`` tiles, and
    at least one, and a rectangle), in tile order: the tiles of the union in the order one write of it stores
    them."""
    counts = [grid.counts[a] for a in grid.axes]
    # the slowest axes fixed a tile at a time, then a run along the next one, every tile of the faster ones
    inner, split = 1, len(counts)
    while split > 0 and inner * counts[split - 1] <= most:
        split -= 1
        inner *= counts[split]
    if split == 0:
        yield grid.box
        return
    along, run = counts[split - 1], max(1, most // inner)
    for row in range(int(np.prod(counts[:split - 1], dtype=object))):
        for start in range(0, along, run):
            yield _run_box(grid, (row * along + start) * inner, min(run, along - start) * inner)


def _dense_var_bounds(schema, attrs, slabs, cells) -> dict:
    """Each var attribute's chunk bound where TileDB's dense tiler makes it of the whole write's var buffer
    (:func:`~.fragment_writer.whole_write_var_bound`): the var bytes of every cell of the union, a slab at a
    time."""
    wanted = [a for a in attrs if a.var and whole_write_var_bound(schema.version)]
    total = {a.name: 0 for a in wanted}
    for sub in slabs if wanted else []:
        data = cells(sub)
        for a in wanted:
            total[a.name] += len(var_cells(np.ma.getdata(data[a.name]).reshape(-1), a.datatype.numpy_dtype)[0])
    return total
