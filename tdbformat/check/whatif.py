"""``du --what-if``: what other filter pipelines would make of an array's own tiles. A sample of each fixed-size
field's tiles (and of var-sized data tiles whose pipeline keeps its offsets apart) is unfiltered, filtered
again with each candidate pipeline (zstd levels, lz4, shuffles, delta and double delta, bit-width reduction,
RLE), and unfiltered once more: the bytes it would take and how fast it decodes here.
"""

from __future__ import annotations

import time

import numpy as np

from ..array import Array, open_array
from .. import schema as S
from ..errors import FormatError
from ..filters.pipeline import FilterPlan
from ..structs.fragment import data_files
from ..structs.tile import read_tile, tile_nbytes
from .validate.tiles import data_fields, field_offsets
from .dataset import per_array

__all__ = ["what_if", "CANDIDATES"]

#: (name, filters, which data: "any" or "integer" (ints and datetimes)); string dictionary and RLE, which
#: carry the offsets inside the data, are not tried: the sample holds the var data alone
CANDIDATES = [
    ("zstd(1)", [S.ZstdFilter(1)], "any"), ("zstd(3)", [S.ZstdFilter(3)], "any"),
    ("zstd(9)", [S.ZstdFilter(9)], "any"), ("zstd(19)", [S.ZstdFilter(19)], "any"),
    ("lz4", [S.LZ4Filter()], "any"),
    ("byteshuffle → zstd(3)", [S.ByteShuffleFilter(), S.ZstdFilter(3)], "any"),
    ("bitshuffle → zstd(3)", [S.BitShuffleFilter(), S.ZstdFilter(3)], "any"),
    ("delta → zstd(3)", [S.DeltaFilter(), S.ZstdFilter(3)], "integer"),
    ("double delta", [S.DoubleDeltaFilter()], "integer"),
    ("bit width reduction → zstd(3)", [S.BitWidthReductionFilter(), S.ZstdFilter(3)], "integer"),
    ("rle", [S.RleFilter()], "any"),
]


def _kind(info) -> str:
    return "integer" if info.datatype.numpy_dtype.kind in "iumM" and not info.var else "other"


def _decode_rate(plan, tiles, nbytes: int) -> float | None:
    t0 = time.perf_counter()
    for t in tiles:
        plan.unfilter(t, threads=1)
    seconds = time.perf_counter() - t0
    return round(nbytes / seconds / 1e6, 1) if seconds > 0 else None


def _sample(arr, frag, idx, kind: str, n: int) -> list:
    """Up to ``n`` tiles of one data file, evenly spread, parsed."""
    found = field_offsets(frag, kind, idx)
    if found is None or not len(found[0]):
        return []
    offsets, size = found
    ends = np.append(offsets[1:], np.uint64(size))
    picks = sorted(set(np.linspace(0, len(offsets) - 1, min(n, len(offsets))).astype(int).tolist()))
    path = arr.storage.join(frag.path, data_files(frag.metadata, idx)[("", "_var").index(kind)])
    return [read_tile(arr.storage.read(path, int(offsets[k]), int(ends[k]), what="data file")) for k in picks]


def _field(arr, frags, name: str, sample: int) -> dict | None:
    """The what-if row of field ``name``: its fixed data, or its var data (offsets apart)."""
    tiles, plan, info = [], None, None
    for f in frags:
        idx = f.index(name)
        if idx is None or idx not in data_fields(f):
            continue
        info = f.metadata.index_fields[idx]
        kind = "_var" if info.var else ""
        pipeline = info.filters
        cell = 1 if info.var else info.datatype.size * info.cell_val_num
        plan = FilterPlan(pipeline, datatype=info.datatype, version=f.version, cell_size=cell, key=arr.key,
                          encrypted=arr.tiles.encrypted)
        if plan.strings:
            return None  # string RLE/dictionary hold the offsets inside the data: no plain bytes to re-encode
        tiles += [(t, plan) for t in _sample(arr, f, idx, kind, sample - len(tiles))]
        if len(tiles) >= sample:
            break
    if not tiles:
        return None
    raw = [bytes(p.unfilter(t, threads=1)) for t, p in tiles]
    nbytes = sum(map(len, raw))
    version = max(f.version for f in frags)
    row = {"field": name, "datatype": info.datatype.name, "tiles": len(tiles), "memory_bytes": nbytes,
           "current": {"bytes": sum(tile_nbytes(t) for t, _ in tiles),
                       "decode_mb_s": _decode_rate(plan, [t for t, _ in tiles], nbytes)}, "candidates": []}
    cell = 1 if info.var else info.datatype.size * info.cell_val_num
    for label, filters, wants in CANDIDATES:
        if wants == "integer" and _kind(info) != "integer":
            continue
        try:
            pipeline = S.FilterList(filters).to_dict(version)
            candidate = FilterPlan(pipeline, datatype=info.datatype, version=version, cell_size=cell)
            encoded = [candidate.filter(r) for r in raw]
        except (ValueError, TypeError, FormatError):
            continue  # a filter this datatype or version does not take
        size = sum(tile_nbytes(t) for t in encoded)
        row["candidates"].append({"filters": label, "bytes": size,
                                  "vs_current": round(size / row["current"]["bytes"], 3) if row["current"]["bytes"]
                                  else None, "decode_mb_s": _decode_rate(candidate, encoded, nbytes)})
    return row


def array_what_if(path, key=None, sample: int = 8) -> list[dict]:
    """The what-if rows of every field of the array at ``path`` (its live fragments' tiles)."""
    arr = open_array(path, key=key)
    if not isinstance(arr, Array):
        return []
    names = [d.name for d in arr.dims] + [a.name for a in arr.attrs]
    return [r for r in (_field(arr, arr.fragments, n, sample) for n in names) if r is not None]


def what_if(path, key=None, sample: int = 8, progress=None) -> list[dict]:
    """``[{"object", "field", ...}]`` for the array at ``path`` or each array of the group there."""
    rows = per_array(path, lambda obj: {"what_if": array_what_if(obj.path, key, sample)}, key, progress)
    return [{"object": r["key"], **f} for r in rows for f in r.get("what_if", [])]
