"""An object store's tiles fetched ahead: before a read decodes its first fragment, the stored bytes of every
fragment's tiles it will decode are fetched in one bounded concurrent batch (:meth:`storage.Storage.keep`),
not a fragment and a field at a time (100 fragments were some 200 GETs in a row, a round trip each)."""

from __future__ import annotations

from contextlib import contextmanager

from ..errors import FormatError
from ..storage import LocalStorage, coalesce
from ..versions import FEATURES

__all__ = ["fetched_ahead", "AHEAD_BYTES"]

#: stored bytes a read fetches ahead and holds at once; the fragments past it are fetched as they are read
AHEAD_BYTES = 256 << 20


@contextmanager
def fetched_ahead(arr, frags, fields, tiles_of, coords_of=None):
    """Within the block, reads of the tiles of ``fields`` (dimensions and attributes) that ``tiles_of(frag)``
    gives for each of ``frags`` are answered from bytes fetched at its start, in one batch, as far as
    :data:`AHEAD_BYTES` goes; a sparse fragment's coordinate tiles are those ``coords_of(frag)`` gives
    (default: ``tiles_of``'s). Nothing is fetched from a local disk."""
    storage = arr.storage
    if isinstance(storage, LocalStorage) or len(frags) < 2:  # one fragment already fetches its blocks ahead
        yield
        return
    with storage.snapshot():
        blocks, total = [], 0
        for frag in frags:
            mine = _blocks(arr, frag, fields, tiles_of(frag), (coords_of or tiles_of)(frag))
            total += sum(end - start for _, start, end in mine)
            if total > AHEAD_BYTES:
                break
            blocks += mine
        if blocks:
            storage.keep(blocks, "data file")
        yield


def _blocks(arr, frag, fields, tiles, coord_tiles=None) -> list:
    """The ``(path, start, end)`` blocks of ``frag``'s files that hold ``tiles`` of ``fields`` and
    ``coord_tiles`` (default ``tiles``) of its coordinates, ranges of a file less than the storage's gap apart merged (as
    :class:`tiles._Blocks` merges them, so that each of its blocks lies in one of these)."""
    idxs = {frag.index(f.name) for f in fields if f not in arr.dims}  # (a dense fragment stores no coordinates)
    idxs |= {frag.index(n) for n in ("__timestamps", "__delete_timestamps")}
    coords = set()
    if not frag.dense:
        coords = {frag.index(d.name) for d in arr.dims} if FEATURES["coordinates_per_dimension"](frag.version) \
            else {frag.index("__coords")}
    spans = _spans(arr, frag, idxs - {None}, tiles) + _spans(arr, frag, coords - {None}, tiles if coord_tiles is None else coord_tiles)
    return coalesce(sorted(set(spans)), arr.storage.merge_gap)[0]


def _spans(arr, frag, idxs, tiles) -> list:
    """The ``(path, start, end)`` of ``tiles`` of each index-space field of ``idxs`` (every file of it)."""
    spans = []
    for idx in idxs if len(tiles) else ():
        info = frag.metadata.index_fields[idx]
        for kind in ("", *(("_var",) if info.var else ()), *(("_validity",) if info.nullable else ())):
            plan = arr.tiles.plan(frag, idx, kind)
            for k in tiles:
                try:
                    name, start, end = frag.tile_span(kind, idx, k)
                except FormatError:  # left to the tile's own read, which reports it against that tile
                    continue
                path = plan.path(arr.storage, name)
                if 0 <= start <= end <= arr.storage.size_of(path, "data file"):
                    spans.append((path, start, end))
    return spans
