"""``explain``: why reads of an array are slow, from its metadata alone (no tile decoded). Each finding has
an ``id``, its ``value``, what it means and the ``action`` that fixes it:

- ``fragments``: live fragments, and how many of them overlap another (sparse: every read merges them);
- ``fragment_metadata``: footers an open reads one by one (not in a consolidated ``.meta``): a request each
  on an object store;
- ``deletes``: delete conditions every read applies again;
- ``schemas``: schema files an open lists and reads;
- ``duplicates`` (a sparse array that allows them) / ``overwritten`` (one that does not): cells that share
  their coordinates with another, within a fragment and across live fragments (reads return every one /
  merge and drop them), counted exactly from the coordinate tiles (:mod:`.duplicates`). The only finding
  that reads tiles, so it stays bounded: the coordinate tiles of a whole dataset read at most ``read_budget``
  bytes, on disk or decoded, whichever is more (:data:`READ_BUDGET`); an array past what is left says "not counted" and how many bytes it needs;
- ``tile_size``: median tile bytes far from 64 KiB-64 MiB;
- ``capacity``: sparse fragments whose cells fill few tiles of ``capacity``;
- ``dense_padding``: dense cells the tile extents add around the written ones;
- ``current_domain``: cells written outside the current domain.

:func:`read_estimate` gives the fragments, tiles and bytes a read of a box touches: the R-tree's MBRs
(sparse) or the tile grid (dense) against the box, each field's tile sizes from the tile offsets.
"""

from __future__ import annotations

import numpy as np

from ..array import Array, check_ranges, open_array
from ..array.dense import _tile_jobs, read_box
from ..array.sparse import sparse_tiles
from ..enums import ArrayType
from ..errors import FormatError
from ..structs.consolidated import ConsolidatedFragmentMetadata
from .validate.tiles import data_fields, field_offsets
from .dataset import per_array
from .duplicates import coordinate_bytes, coordinate_tiles, count_shared, overlapping, tile_bytes

__all__ = ["explain", "explain_array", "read_estimate", "READ_BUDGET"]

_SANE_TILE = (64 << 10, 64 << 20)
#: bytes of coordinate tiles ``explain`` reads at most over a whole dataset, to count shared coordinates
READ_BUDGET = 64 << 20


def _finding(id_: str, value, message: str, action: str | None, **more) -> dict:
    return {"id": id_, "value": value, "message": message, "action": action, **more}


def _overlapping(arr, frags) -> int:
    """How many of the fragments' non-empty domains meet another's (all dimensions); exact for every type."""
    return int(overlapping(arr, frags).any(axis=1).sum()) if len(frags) > 1 else 0


class _Budget:
    """The bytes of coordinate tiles still to be read, shared by the arrays of one ``explain``."""

    def __init__(self, limit: int):
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"read_budget: expected an int (bytes), not {type(limit).__name__}")
        if limit < 0:
            raise ValueError(f"read_budget: expected 0 or more bytes, not {limit}")
        self.left = limit

    def take(self, n: int) -> bool:
        if n > self.left:
            return False
        self.left -= n
        return True


def _shared_cells(arr, frags, budget: _Budget) -> dict:
    """The ``duplicates`` or ``overwritten`` finding (the module doc)."""
    dups = bool(arr.schema.get("allows_dups"))
    tiles = coordinate_tiles(arr, frags)
    need = coordinate_bytes(arr, frags, tiles)
    counted = {"within_fragments": None, "across_fragments": None, "coordinate_tiles": sum(map(len, tiles.values())),
               "coordinate_bytes": need}
    id_ = "duplicates" if dups else "overwritten"
    if not budget.take(need):
        return _finding(id_, None, f"not counted: it needs {need} bytes of coordinate tiles, more than the "
                        f"{budget.left} left of the read budget", "raise the read budget (--read-budget BYTES)",
                        counted=counted)
    within, across = count_shared(arr, frags, tiles)
    counted.update(within_fragments=within, across_fragments=across)
    n = within + across
    if dups:
        return _finding(id_, n, f"{n} cells share their coordinates with another ({within} within a fragment, "
                        f"{across} across fragments): every read returns each of them",
                        "rewrite the cells into an array that does not allow duplicates (or write them again with "
                        "sm.dedup_coords=true): consolidation keeps every duplicate" if n else None, counted=counted)
    return _finding(id_, n, f"{n} cells are overwritten by a newer one at the same coordinates ({within} within "
                    f"fragments consolidated with timestamps, {across} across fragments): every read merges and "
                    "drops them", "consolidate the fragments without sm.consolidation.with_timestamps (then "
                    "vacuum): one cell per coordinate is kept" if n else None, counted=counted)


def _unconsolidated_footers(arr, frags) -> int:
    covered = set()
    for p in arr._listing.consolidated_metadata:
        parsed = ConsolidatedFragmentMetadata.parse(arr.storage.read(p, what="consolidated fragment metadata"),
                                                    schema=dict(arr.schemas), key=arr.key, filename=str(p))
        covered |= {f.name.rstrip("/").rsplit("/", 1)[-1] for f in parsed.fragments}
    return sum(f.name not in covered for f in frags)


def _tile_sizes(frags) -> np.ndarray:
    sizes = []
    for f in frags:
        for idx in data_fields(f):
            found = field_offsets(f, "", idx)
            if found is not None and len(found[0]):
                sizes.append(np.diff(np.append(found[0].astype(np.int64), found[1])))
    return np.concatenate(sizes) if sizes else np.empty(0, np.int64)


def _dense_padding(arr, frags) -> float | None:
    """Cells the tile grid spans around the dense fragments' non-empty domains, per written cell."""
    from ..array import order

    dense = [f for f in frags if f.dense]
    if not dense:
        return None
    dom_lo, extents = order.tile_grid(arr.schema.domain.dimensions)
    written = spanned = 0
    for f in dense:
        w = s = 1
        for (a, b), lo, e in zip(f.non_empty_domain, dom_lo, extents):
            w *= int(b) - int(a) + 1
            s *= ((int(b) - int(lo)) // int(e) - (int(a) - int(lo)) // int(e) + 1) * int(e)
        written, spanned = written + w, spanned + s
    return round(spanned / written - 1, 3) if written else None


def _outside_current_domain(arr, frags) -> int | None:
    """Cells of the fragments whose non-empty domain reaches past the current domain (None: it has none)."""
    current = arr.schema.get("current_domain")
    if current is None or current.empty:
        return None
    box = [(r.start, r.end) for r in current.ndrectangle]
    return sum(f.cell_num for f in frags if any(a < lo or b > hi for (a, b), (lo, hi) in zip(f.non_empty_domain, box)))


def explain_array(path, key=None, read_budget: int | _Budget = READ_BUDGET) -> list[dict]:
    """The findings of the array at ``path`` (see the module doc); ``read_budget``: bytes of coordinate tiles
    it may read to count shared coordinates."""
    budget = read_budget if isinstance(read_budget, _Budget) else _Budget(read_budget)
    arr = open_array(path, key=key)
    if not isinstance(arr, Array):
        raise FormatError("explain reads arrays of format version 1 or later", file=str(path))
    frags, sparse = arr.fragments, arr.schema.array_type != ArrayType.DENSE
    overlapping = _overlapping(arr, frags)
    out = [_finding("fragments", len(frags), f"{len(frags)} live fragments, {overlapping} of them overlapping "
                    "another" + (": a sparse read merges them cell by cell" if sparse and overlapping else ""),
                    "consolidate the fragments (then vacuum)" if len(frags) > 1 else None)]
    footers = _unconsolidated_footers(arr, frags)
    out.append(_finding("fragment_metadata", footers, f"an open reads {footers} fragment metadata footers one by "
                        "one (a request each on an object store)",
                        "consolidate fragment metadata (sm.consolidation.mode=fragment_meta)" if footers > 1 else None))
    deletes = arr.deletes
    out.append(_finding("deletes", len(deletes), f"{len(deletes)} delete conditions every read applies again",
                        "consolidate the fragments: their cells are then removed once" if deletes else None))
    out.append(_finding("schemas", len(arr.schemas), f"{len(arr.schemas)} schema files an open lists and reads",
                        None))
    if sparse:
        out.append(_shared_cells(arr, frags, budget))
    sizes = _tile_sizes(frags)
    median = float(np.median(sizes)) if len(sizes) else None
    far = median is not None and not _SANE_TILE[0] <= median <= _SANE_TILE[1]
    out.append(_finding("tile_size", median, f"median tile {median} bytes over {len(sizes)} tiles",
                        ("larger tiles: raise the tile extents (dense) or the capacity (sparse)" if median < _SANE_TILE[0]
                         else "smaller tiles: lower the tile extents or the capacity") if far else None))
    if sparse and frags:
        cap = int(arr.schema.capacity)
        tiles = sum(int(f.tile_num()) for f in frags)
        cells = sum(f.cell_num for f in frags)
        fill = round(cells / (tiles * cap), 3) if tiles and cap else None  # (capacity 0: a damaged schema)
        out.append(_finding("capacity", fill, f"{cells} cells in {tiles} tiles of capacity {cap}",
                            "write fewer, larger fragments, or consolidate" if fill is not None and fill < 0.5 else None))
    padding = _dense_padding(arr, frags)
    if padding is not None:
        out.append(_finding("dense_padding", padding, f"the tile grid adds {padding} cells per written cell",
                            "align writes with the tile extents" if padding > 0.5 else None))
    outside = _outside_current_domain(arr, frags)
    if outside is not None:
        out.append(_finding("current_domain", outside, f"{outside} cells in fragments past the current domain",
                            "resize the current domain, or rewrite those cells" if outside else None))
    return out


def read_estimate(path, ranges: dict | None = None, key=None) -> dict:
    """``{"fragments", "tiles", "bytes"}`` a read of ``ranges`` (``{dim: (lo, hi)}``, inclusive; None: all)
    of the array at ``path`` touches: fragments with a tile in the box, the tiles (sparse: whose MBR meets
    it; dense: of the grid inside it), and the bytes on disk of every field's tiles there."""
    arr = open_array(path, key=key)
    ranges = check_ranges(arr.dims, ranges or {})
    frags_hit = tiles = nbytes = 0
    lo, hi = read_box(arr, arr.schema, ranges) if arr.schema.array_type == ArrayType.DENSE else (None, None)
    for f in arr.fragments:
        ks = sorted({k for k, _, _ in _tile_jobs(arr, f, lo, hi)}) if f.dense else sparse_tiles(arr, f, ranges)
        if not ks:
            continue
        frags_hit, tiles = frags_hit + 1, tiles + len(ks)
        nbytes += sum(tile_bytes(f, idx, ks) for idx in data_fields(f))
    return {"fragments": frags_hit, "tiles": tiles, "bytes": nbytes}


def explain(path, key=None, ranges: dict | None = None, progress=None, read_budget: int = READ_BUDGET) -> dict:
    """The ``explain`` document: ``{"objects": [{key, type, uri, missing, findings, read_estimate?}]}`` for
    the array at ``path`` or each array of the group there; for an array also ``findings`` and, with
    ``ranges``, ``read_estimate`` at the top (docs/json-schema/explain.v1.json). ``read_budget``: bytes of
    coordinate tiles all of it may read (the module doc)."""
    budget = _Budget(read_budget)

    def one(obj):
        row = {"findings": explain_array((obj.storage, obj.path), key, budget)}
        if ranges is not None:
            row["read_estimate"] = read_estimate((obj.storage, obj.path), ranges, key)
        return row
    rows = per_array(path, one, key, progress)
    doc = {"objects": rows}
    if rows[0]["type"] == "array":
        doc.update({k: rows[0][k] for k in ("findings", "read_estimate") if k in rows[0]})
    return doc
