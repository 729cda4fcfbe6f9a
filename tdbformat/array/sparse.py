"""Sparse reads: the cells of every fragment in the read's window, minus deleted ones, minus older duplicates
unless the schema allows duplicates, sorted row-major (or column-major, global order, or left unordered)."""

from __future__ import annotations

import numpy as np

from ..enums import Layout
from ..errors import FormatError
from ..structs import array_schema as schema_mod
from . import order
from .cells import empty_column, filled, from_ordinal, like, masked, result_dtype
from .fetch_ahead import fetched_ahead
from .fragment import field_index
from .evaluate import kept_by_delete

__all__ = ["read_sparse", "sparse_tiles"]


def sparse_tiles(arr, frag, ranges, inside: bool = False):
    """Tiles of a sparse fragment whose MBR meets ``ranges`` (all tiles without ranges); with ``inside``,
    (those tiles, whether each one's MBR lies wholly in the ranges: every cell of it is in the box)."""
    boxes = frag.mbrs(arr.dims)
    keep = np.ones(len(boxes[0][0]) if boxes else 0, bool)
    within = keep.copy()
    for d, (lows, highs) in zip(arr.dims, boxes):
        if d.name in ranges:
            lo, hi = (like(r, lows) for r in ranges[d.name])
            keep &= (lows <= hi) & (highs >= lo)
            within &= (lows >= lo) & (highs <= hi)
    tiles = [int(k) for k in np.flatnonzero(keep)]
    return (tiles, within[keep]) if inside else tiles


def _located(arr, frag, ranges, pool, met) -> tuple[list, list | None]:
    """(the tiles of ``frag`` whose attributes a read of ``ranges`` decodes, their coordinates or None): the
    tiles whose MBR meets the box; where some MBRs lie only partly in it, the coordinates of those tiles are
    decoded first and the tiles with no cell in the box dropped, their attribute tiles never fetched (as
    TileDB reads coordinates, then the attribute tiles that hold results). None: the coordinates are
    decoded with the attributes. ``met``: what ``sparse_tiles(..., inside=True)`` gave."""
    tiles, inside = met
    if inside.all():
        return tiles, None
    coords = arr.tiles.coords(frag, arr.dims, tiles, pool)
    # a sparse fragment's tiles are full but its last (Python ints: a footer's counts may pass any int64)
    cap, total = max(1, int(frag.schema.capacity)), frag.cell_num
    sizes = [max(0, min(cap, total - k * cap)) for k in tiles]
    hit = _box(arr, frag, coords, ranges)
    if hit is None or sum(sizes) != len(coords[0]):  # (counts the decode checks against the attributes)
        return tiles, coords
    tile_of = np.repeat(np.arange(len(tiles)), sizes)
    needed = inside | (np.bincount(tile_of[hit], minlength=len(tiles)) > 0)
    if needed.all():
        return tiles, coords
    cells = needed[tile_of]
    return [k for k, n in zip(tiles, needed) if n], [c[cells] for c in coords]


def _box(arr, frag, cols, ranges):
    """Which cells of columns ``cols`` (one per dimension) lie in ``ranges``; None: every one (the
    fragment's non-empty domain lies inside)."""
    keep = None
    for j, (d, col) in enumerate(zip(arr.dims, cols)):
        if d.name in ranges and not _inside(frag.non_empty_domain[j], ranges[d.name], d):
            r = ranges[d.name]
            keep = _and(keep, (col >= like(r[0], col)) & (col <= like(r[1], col)))
    return keep


def _leaves(node):
    if node.expression is not None:
        for child in node.expression.children:
            yield from _leaves(child)
    else:
        yield node


def _attribute(schema, name: str):
    return next(a for a in schema.attributes if a.name == name)


def _fragment_cells(arr, schema, frag, fields, ranges, window, deletes, pool, located):
    """One fragment's cells: ``(columns, validity, (timestamps, tiles), alive, keep)``; ``keep`` marks the
    cells in the ranges and the window, ``alive`` those no delete removed; cell timestamps and tiles are
    None unless the fragment has cell timestamps. ``located``: what :func:`_located` gave for it."""
    names = [d.name for d in arr.dims]
    tiles, coords = located
    stored = {f.name: idx for f in fields if f.name not in names and (idx := field_index(frag, f)) is not None}
    extra = [n for n in ("__timestamps", "__delete_timestamps")
             if (frag.has_timestamps if n == "__timestamps" else frag.has_delete_meta)]
    idxs = [*stored.values(), *map(frag.index, extra)]
    if coords is None:
        coords, decoded = arr.tiles.columns(frag, arr.dims, idxs, tiles, pool)
    else:
        decoded = arr.tiles.columns(frag, (), idxs, tiles, pool)[1]
    decoded = dict(zip([*stored, *extra], decoded))
    cols = dict(zip(names, coords))
    n = len(cols[names[0]])
    attrs, validity = _attribute_columns(schema, frag, [f for f in fields if f.name not in cols],
                                         {k: decoded[k] for k in stored}, n)
    cols.update(attrs)
    keep = _box(arr, frag, coords, ranges)  # None: every cell
    tile_of = None  # each cell's tile, where a fragment may hold a cell twice (dedup ties, _newest)
    if frag.has_timestamps:
        t = _counted(frag, "__timestamps", decoded["__timestamps"][0], n).astype(np.int64)
        keep = _and(keep, (t >= window[0]) & (t <= window[1]))
        cap = max(1, int(frag.schema.capacity))  # a sparse fragment's tiles are full but its last
        sizes = [max(0, min(cap, frag.cell_num - k * cap)) for k in tiles]
        _proven(frag, "__coords", sum(sizes), n)  # before allocating
        tile_of = np.repeat(np.asarray(tiles, np.int64), sizes)
    else:  # every cell has the fragment's timestamp
        t = None
        if not window[0] <= frag.timestamp_range[1] <= window[1]:
            keep = np.zeros(n, bool)
    # deletes apply after deduplication: a deleted newer cell still hides older ones
    alive = None
    if frag.has_delete_meta:  # consolidation kept deleted cells, stamped with their delete time
        # (UINT64_MAX: never deleted; the window ends before it, read_window)
        alive = _counted(frag, "__delete_timestamps", decoded["__delete_timestamps"][0], n) > np.uint64(window[1])
    for d in deletes:  # SparseIndexReaderBase::apply_query_condition
        if d.timestamp < frag.timestamp_range[0] or d.marker in frag.processed_conditions:
            continue
        kept = kept_by_delete(d, cols, validity, n)
        # with cell timestamps, only cells written at or before the delete are hit
        alive = _and(alive, kept | (t > d.timestamp) if frag.has_timestamps else kept)
    return cols, validity, (t, tile_of), alive, keep


def _attribute_columns(schema, frag, fields, decoded: dict, n: int) -> tuple[dict, dict]:
    """(columns, validity) of attributes ``fields`` of a fragment of ``n`` cells: the (values, validity) in
    ``decoded`` where the fragment stores the attribute, else its fill value (an attribute added later)."""
    cols, validity = {}, {}
    for f in fields:
        if f.name not in decoded:
            attribute = _attribute(schema, f.name)
            cols[f.name] = np.repeat(filled(f, attribute, (1,)), n)
            v = np.full(n, bool(attribute.get("fill_value_validity")))
        else:
            cols[f.name], v = (_counted(frag, f.name, c, n) for c in decoded[f.name])
        if f.nullable:
            validity[f.name] = v
    return cols, validity


def _late_parts(arr, schema, kept, f, pool):
    """Attribute ``f`` of each fragment in ``kept`` ((fragment, keep, cells, tiles) after the merge), as
    :func:`_fragment_cells` decodes it, kept as its ``keep`` says: a (values, validity or None) per
    fragment, each decoded when asked for."""
    for frag, keep, n, tiles in kept:
        idx = field_index(frag, f)
        decoded = {} if idx is None else {f.name: arr.tiles.field(frag, idx, tiles, pool)}
        cols, validity = _attribute_columns(schema, frag, [f], decoded, n)
        yield _take(cols[f.name], keep), (_take(validity[f.name], keep) if f.nullable else None)


def _counted(frag, name: str, values, n: int):
    """``values`` (None passes), if they are one per coordinate of the fragment's tiles read."""
    if values is not None:
        _proven(frag, name, len(values), n)
    return values


def _proven(frag, name: str, count: int, n: int):
    if count != n:
        raise FormatError(f"fragment {frag.name}: field {name} holds {count} cells in the tiles read, "
                          f"where the coordinates number {n} (a datatype or tile size that does not fit)",
                          file=str(frag.path))


def _inside(ned, r, dim) -> bool:
    """Whether a numeric dimension's non-empty domain ``ned`` lies in the range ``r``: then no cell of the
    fragment needs checking against it (a read of ``A[:]`` asks for the whole domain)."""
    if dim.var or dim.datatype.numpy_dtype.kind not in "iufmM":
        return False
    return bool(r[0] <= ned[0] and ned[1] <= r[1])


def _and(mask, other):
    """``mask & other`` where a mask of None keeps every cell."""
    return other if mask is None else mask & other


def _take(values, mask):
    return values if mask is None else values[mask]


def _joined(parts: list, empty) -> np.ndarray:
    """The parts end to end (one part as it is: no copy)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else empty


def _newest(keys, stamp, frag_of, tile_of) -> np.ndarray:
    """Which cells are the newest (timestamp, then fragment) of their coordinates. Of cells a consolidation
    kept with one timestamp (writes in one millisecond), TileDB's global-order reader keeps the first in a
    tile and, across tiles, the one in the later tile (dedup_tiles_with_timestamps, then
    dedup_fragments_with_timestamps, which keeps the next tile's on a tie); its row-major reader differs
    (DISCREPANCIES.md)."""
    # lexsort is stable: of cells equal in every key, the earlier stays first. A key equal for every cell
    # (one timestamp per fragment, no tiles with timestamps) orders nothing, and is left out
    ties = [-k for k in (tile_of, frag_of, stamp) if len(k) and k.min() != k.max()]
    perm = np.lexsort(ties + keys[::-1])
    first = np.ones(len(perm), bool)
    first[1:] = False
    for k in keys:
        ordered = k[perm]
        first[1:] |= ordered[1:] != ordered[:-1]
    newest = np.zeros(len(perm), bool)
    newest[perm[first]] = True
    return newest


#: with ``read(..., provenance=True)``: each cell's fragment, its position among the read's fragments
FRAGMENT_COLUMN = "__fragment"


def read_sparse(arr, schema, frags, wanted, ranges, layout, window, deletes, pool, provenance=False) -> dict:
    need = {c.comparison.field_name for d in deletes for c in _leaves(d.condition)}
    fields = arr.dims + [a for a in schema_mod.attributes(schema) if a in wanted or a.name in need]
    met = {id(frag): sparse_tiles(arr, frag, ranges, inside=True) for frag in frags}
    # on an object store, two rounds: every coordinate tile the MBRs meet, with the other fields of the tiles
    # wholly in the box; then the other fields of the tiles partly in it that hold one of its cells
    with fetched_ahead(arr, frags, fields, lambda frag: _inside_tiles(*met[id(frag)]),
                       coords_of=lambda frag: met[id(frag)][0]):
        located = [_located(arr, frag, ranges, pool, met[id(frag)]) for frag in frags]
        rest = {id(frag): sorted(set(tiles) - set(_inside_tiles(*met[id(frag)])))
                for frag, (tiles, _) in zip(frags, located)}
        with fetched_ahead(arr, frags, fields, lambda frag: rest[id(frag)], coords_of=lambda frag: ()):
            return _read_sparse(arr, schema, frags, wanted, ranges, layout, window, deletes, pool, provenance,
                                need, fields, located)


def _inside_tiles(tiles, inside) -> list:
    return [k for k, i in zip(tiles, inside) if i]


def _read_sparse(arr, schema, frags, wanted, ranges, layout, window, deletes, pool, provenance, need,
                 fields, located) -> dict:
    names = [d.name for d in arr.dims]
    # attributes that neither the merge nor a delete looks at are decoded after the merge, one at a time: it
    # then holds the coordinates alone beside its keys (20 fragments: a peak of 29 MiB instead of 37.5)
    late = [f for f in fields[len(names):] if f.name not in need] if _mergeable(arr, frags, layout) else []
    columns = {f.name: [] for f in fields if f not in late}
    validity = {f.name: [] for f in fields if f.nullable and f not in late}
    stamps, tile_ofs, alives, counts, kept = [], [], [], [], []
    for i, frag in enumerate(frags):
        tiles = located[i][0]
        cols, valid, (t, tile_of), alive, keep = _fragment_cells(
            arr, schema, frag, [f for f in fields if f not in late], ranges, window, deletes, pool, located[i])
        located[i] = None  # its coordinates are in the columns now
        kept.append((frag, keep, len(cols[names[0]]), tiles))
        for k, v in cols.items():
            columns[k].append(_take(v, keep))
        for k in validity:
            validity[k].append(_take(valid[k], keep))
        counts.append(len(columns[names[0]][-1]))
        stamps.append(_take(t, keep) if t is not None else frag.timestamp_range[1])  # a scalar: every cell's
        tile_ofs.append(_take(tile_of, keep) if tile_of is not None else 0)
        alives.append(None if alive is None else _take(alive, keep))
    # None: every cell survives
    sel = None if all(a is None for a in alives) else np.concatenate(
        [np.ones(c, bool) if a is None else a for a, c in zip(alives, counts)])
    merged = _merge(arr, frags, columns, counts, sel, layout)
    if merged is not None:
        origin = _fragment_of(counts)[merged] if provenance else None
        place = _Placer(merged, counts)
        del merged
        out = _result(arr, fields, wanted, columns, validity, place, late,
                      lambda f: _late_parts(arr, schema, kept, f, pool))
        return dict(out, **{FRAGMENT_COLUMN: origin}) if provenance else out
    for f in late:  # no merge after all (no integer global-order key): every column's parts, in field order
        columns[f.name], parts = map(list, zip(*_late_parts(arr, schema, kept, f, pool)))
        if f.nullable:
            validity[f.name] = parts
    columns = {f.name: columns[f.name] for f in fields}
    # a fragment is written in global order without duplicates (unless consolidated with cell timestamps,
    # which keeps every version): one fragment needs neither a dedup nor a global sort
    one = len(frags) == 1
    if not arr.schema.allows_dups and sum(counts) and not (one and not frags[0].has_timestamps):
        # coordinates are the same cell only if their bytes are: TileDB keeps -0.0 and 0.0 apart
        keys = [c.view(f"u{c.itemsize}") if c.dtype.kind == "f" else order.ranks(c)
                for c in (_joined(columns[x], None) for x in names)]
        stamp, tile_of = (np.concatenate([np.full(c, t, np.int64) if np.isscalar(t) else t
                                          for t, c in zip(parts, counts)]) for parts in (stamps, tile_ofs))
        sel = _and(sel, _newest(keys, stamp, _fragment_of(counts), tile_of))
    cat = {k: _take(_joined(v, np.empty(0, result_dtype(f))), sel) for f, (k, v) in zip(fields, columns.items())}
    valid = {k: _take(_joined(v, np.empty(0, bool)), sel) for k, v in validity.items()}
    if provenance:  # permuted with the validity columns, then handed out beside the fields
        valid[FRAGMENT_COLUMN] = _take(_fragment_of(counts), sel)
    columns.clear(), validity.clear()  # the parts: each column is permuted below while nothing else holds it
    if layout != Layout.UNORDERED and not (one and layout == Layout.GLOBAL_ORDER):
        coords = [cat[x] for x in names]
        if layout == Layout.GLOBAL_ORDER:  # TileDB's global-order merge gives equal coordinates newest fragment first
            first = np.argsort(-_take(_fragment_of(counts), sel), kind="stable")
            perm = first[_sort(arr, [c[first] for c in coords], layout)]
        else:
            perm = _sort(arr, coords, layout)
        del coords
        for got in (cat, valid):
            for k in list(got):
                got[k] = got[k][perm]
    return _output(arr, fields, wanted, cat, valid)


def _fragment_of(counts) -> np.ndarray:
    """Each cell's fragment (its position in the read's fragments, oldest first)."""
    return np.repeat(np.arange(len(counts)), counts)


def _output(arr, fields, wanted, cat, valid) -> dict:
    if not len(cat[arr.dims[0].name]):
        cat = {f.name: empty_column(f, cat[f.name]) for f in fields}
    out = {d.name: from_ordinal(cat[d.name], d) for d in arr.dims}
    out.update({a.name: masked(cat[a.name], valid.get(a.name)) for a in wanted})
    if FRAGMENT_COLUMN in valid:
        out[FRAGMENT_COLUMN] = valid[FRAGMENT_COLUMN]
    return out


def _merge(arr, frags, columns, counts, sel, layout):
    """The permutation of the fragments' cells (concatenated oldest first) that a read in ``layout`` gives,
    found by merging the fragments' sorted runs: each fragment is in global order, so a stable sort of their
    global-order keys, newest fragment first, is a k-way merge (timsort merges runs) that leaves the newest of
    equal coordinates first, where deduplication keeps it. None where the general path must sort: one
    fragment, cell timestamps, duplicates in an order other than global, or no integer global-order key."""
    schema = arr.schema
    if not _mergeable(arr, frags, layout):
        return None
    # fragment by fragment, newest first, into one array: no concatenated coordinates, small temporaries
    key, at = np.empty(sum(counts), np.int64), 0
    for i in reversed(range(len(frags))):
        part = order.global_keys([columns[d.name][i] for d in arr.dims], schema.domain.dimensions,
                                 schema.tile_order, schema.cell_order)
        if part is None or len(part) != counts[i]:
            return None
        key[at:at + counts[i]] = part
        at += counts[i]
    del part
    # positions in the newest-first concatenation, for now; deduplicated first: each step below then holds
    # only the kept cells
    perm = _sort_positions(key, dedup=not schema.allows_dups)
    del key
    # back to the cells' own (oldest first) positions: each newest-first segment moves by its own shift
    newest_first, oldest_first = np.cumsum([0] + counts[::-1]), np.cumsum([0] + counts)
    shift = np.array([oldest_first[len(counts) - 1 - s] - newest_first[s] for s in range(len(counts))], np.int64)
    for at in range(0, len(perm), _BLOCK):  # in place, a block at a time
        block = perm[at:at + _BLOCK]
        block += shift[np.searchsorted(newest_first, block, side="right") - 1]
    if sel is not None:  # deletes apply after deduplication
        perm = perm[sel[perm]]
    if layout in (Layout.ROW_MAJOR, Layout.COL_MAJOR):
        perm = perm[_sort(arr, [_joined(columns[d.name], None)[perm] for d in arr.dims], layout)]
    return perm


def _sort_positions(key: np.ndarray, dedup: bool) -> np.ndarray:
    """The positions of ``key``'s cells in a stable sort of it, with ``dedup`` only the first of equal keys.
    Where a position fits beside each key in 63 bits, the keys are sorted with it in their low bits, in
    their own memory (then overwritten): no index array of their size, 8 bytes a cell less at the merge's
    peak. A block at a time, the passes have small temporaries."""
    bits = len(key).bit_length()
    packed = bool(len(key)) and key.min() >= 0 and bits + int(key.max()).bit_length() <= _PACKED_BITS
    if packed:
        for at in range(0, len(key), _BLOCK):
            block = key[at:at + _BLOCK]
            block <<= bits
            block |= np.arange(at, at + len(block))
        key.sort(kind="stable")  # distinct values: stable or not alike, but this sort uses the fragments' runs
        perm = key
    else:
        perm = np.argsort(key, kind="stable")
    first = np.ones(len(perm), bool) if dedup else None
    for at in range(0, len(perm) if dedup else 0, _BLOCK):
        k = key[at:at + _BLOCK + 1] >> bits if packed else key[perm[at:at + _BLOCK + 1]]
        first[at + 1:at + len(k)] = k[1:] != k[:-1]
    if packed:
        key &= (1 << bits) - 1
    return perm if first is None else perm[first]


#: cells per step of the merge's passes over whole columns (their temporaries stay this small)
_BLOCK = 1 << 16
#: bits of an int64 that a key and a position packed together may fill (the sign bit stays clear)
_PACKED_BITS = 63


def _mergeable(arr, frags, layout) -> bool:
    """Whether :func:`_merge` may merge the fragments' sorted runs (it still needs an integer key)."""
    return len(frags) >= 2 and not any(f.has_timestamps for f in frags) and not (
        arr.schema.allows_dups and layout != Layout.GLOBAL_ORDER)


def _result(arr, fields, wanted, columns, validity, place, late=(), decode=None) -> dict:
    """The merged cells, a column at a time (``place``: a :class:`_Placer`), each column's parts let go as it
    is placed; each of the ``late`` attributes decoded (``decode(field)``: a (values, validity) per
    fragment) only then, a fragment at a time."""
    cat = {k: place(columns.pop(k)) for k in list(columns)}
    valid = {k: place(validity.pop(k)) for k in list(validity)}
    for f in late:
        cat[f.name], got = place((), decode(f))
        if f.nullable:
            valid[f.name] = got
    return _output(arr, fields, wanted, cat, valid)


class _Placer:
    """Puts a column's parts, one per fragment, in the merged order ``perm`` (positions in the parts laid end
    to end): each part's cells straight into their places in the result, rather than the column joined
    first and then permuted, which held it two and a half times. It keeps two int32 a cell (where the
    result has fewer than 2**31 cells), made a fragment at a time."""

    def __init__(self, perm, counts):
        small = np.int16 if len(counts) < 2**15 else np.int64
        index = np.int32 if len(perm) < 2**31 else np.int64
        frag_of = np.repeat(np.arange(len(counts), dtype=small), counts)[perm]  # each result cell's fragment
        self.at = np.argsort(frag_of, kind="stable").astype(index)  # the result's places, fragment by fragment
        self.bounds = np.concatenate([[0], np.cumsum(np.bincount(frag_of, minlength=len(counts)))])
        del frag_of
        starts, self.src = np.cumsum([0] + list(counts)), np.empty(len(perm), index)
        for i in range(len(counts)):  # where each comes from in its fragment's part
            sl = slice(self.bounds[i], self.bounds[i + 1])
            self.src[sl] = perm[self.at[sl]] - starts[i]

    def __call__(self, parts, decoded=None):
        """The placed column of ``parts``; with ``decoded`` instead (an iterator of (values, validity) per
        fragment), (values, validity) placed as each fragment's pair arrives."""
        out = valid = None
        for i, part in enumerate(parts if decoded is None else decoded):
            values, flags = (part, None) if decoded is None else part
            sl = slice(self.bounds[i], self.bounds[i + 1])
            out = _placed(out, values, self.at[sl], self.src[sl], len(self.at))
            valid = None if flags is None else _placed(valid, flags, self.at[sl], self.src[sl], len(self.at))
            if decoded is None:
                parts[i] = None  # let go as placed
        return out if decoded is None else (out, valid)


def _placed(out, values, at, src, n):
    """``out[at] = values[src]``, ``out`` made (or widened, as concatenating would) for ``values``' dtype."""
    if out is None:
        out = np.empty(n, values.dtype)
    elif out.dtype != np.result_type(out, values):
        out = out.astype(np.result_type(out, values))
    out[at] = values[src]
    return out


def _sort(arr, coords, layout):
    dom = arr.schema.domain.dimensions
    if layout in (Layout.ROW_MAJOR, Layout.COL_MAJOR):
        key = order.linear_keys(coords, dom, layout)
        if key is not None:
            return np.argsort(key, kind="stable")
    hilbert = (order.hilbert_values(coords, [d.domain or None for d in dom])
               if layout == Layout.GLOBAL_ORDER and arr.schema.cell_order == Layout.HILBERT else None)
    dom_lo, extents = order.tile_grid(dom)
    return order.order_cells(
        coords, layout, dom_lo=dom_lo, extents=extents,
        tile_order=arr.schema.tile_order, cell_order=arr.schema.cell_order, hilbert=hilbert)
