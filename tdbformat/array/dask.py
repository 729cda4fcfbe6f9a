"""An array as a lazy dask collection: a ``dask.array`` per attribute of a dense array, one chunk per space
tile, and a ``dask.dataframe`` of a sparse array, one partition per group of tiles. Each task reads and
decodes only the tiles its box meets, through :meth:`Array.read` with ``ranges=``, so the same graph runs
on dask's threads and on a ``dask.distributed`` cluster (where each worker opens the array once: an
:class:`Array` holds open storage and is not pickled; the task carries its path, key and window).
"""

from __future__ import annotations

import numpy as np

from ..enums import ArrayType
from ..errors import UnsupportedError
from ..storage import FsspecStorage
from .cells import result_dtype
from .dense import read_box
from .options import wanted_attributes

__all__ = ["to_dask", "TILES_PER_PARTITION"]

#: sparse tiles per dataframe partition (a partition reads the tiles its slice of the first dimension meets)
TILES_PER_PARTITION = 4

#: arrays opened in this process, by what a task names them with: the caller's own array on a local
#: scheduler, one opening per worker process on a cluster
_OPENED: dict = {}


def _dask(part: str):
    try:
        return __import__(f"dask.{part}", fromlist=[part])
    except ImportError:
        raise UnsupportedError(f"to_dask needs dask: pip install 'tdbformat[dask]' (dask.{part} failed to import)") \
            from None


def _spec(arr) -> tuple:
    """What a task opens the array by: its class (an :class:`Array`), path, key, window and storage options
    (nested dicts and all, as fsspec takes them: dask tokenizes them, and :data:`_OPENED` is keyed by that
    token)."""
    options = arr.storage.storage_options if isinstance(arr.storage, FsspecStorage) else {}
    return type(arr), str(arr.path), arr.key, tuple(arr.window), options


def _opened(spec):
    token = _dask("base").tokenize(spec)
    if token not in _OPENED:
        cls, path, key, window, options = spec
        _OPENED[token] = cls(path, key=key, timestamp=window, storage_options=options or None)
    return _OPENED[token]


def to_dask(arr, attrs=None):
    """Dense: ``{attribute: dask.array}`` shaped as ``arr.read()``'s result, chunked by space tile;
    sparse: a ``dask.dataframe`` with a column per dimension and attribute, its partitions disjoint slices
    of the first dimension (an integer or datetime one; other arrays make one partition). ``compute()``
    gives what ``arr.read(attrs)`` gives (a sparse frame's rows in partition order)."""
    wanted = wanted_attributes(arr.schema, attrs)
    spec = _spec(arr)
    _OPENED.setdefault(_dask("base").tokenize(spec), arr)
    if arr.schema.array_type == ArrayType.DENSE:
        return {a.name: _dense(arr, spec, a) for a in wanted}
    return _sparse(arr, spec, [a.name for a in wanted])


def _tile_chunks(d, lo: int, hi: int) -> tuple:
    """The lengths of ``[lo, hi]`` cut at dimension ``d``'s space tile boundaries."""
    first, extent = int(d.domain[0]), int(d.tile_extent)
    cuts = np.arange(first + ((lo - first) // extent + 1) * extent, hi + 1, extent)
    edges = np.concatenate([[lo], cuts, [hi + 1]])
    return tuple(int(n) for n in np.diff(edges))


def _dense(arr, spec, attribute):
    da = _dask("array")
    lo, hi = (list(map(int, b)) for b in read_box(arr, arr.schema, {}))
    chunks = tuple(_tile_chunks(d, a, b) for d, a, b in zip(arr.schema.domain.dimensions, lo, hi))
    dtype = result_dtype(attribute)
    meta = np.empty((0,) * len(lo), dtype)
    if attribute.nullable:
        meta = np.ma.masked_array(meta, mask=np.ones_like(meta, bool))
    return da.map_blocks(_dense_block, dtype=dtype, chunks=chunks, meta=meta, spec=spec, attribute=attribute.name,
                         lo=tuple(lo), dims=tuple(d.name for d in arr.dims),
                         name=f"tdbformat-{attribute.name}-{_dask('base').tokenize(spec, attribute.name)}")


def _dense_block(spec, attribute, lo, dims, block_info=None):
    where = block_info[None]["array-location"]
    ranges = {d: (a + start, a + stop - 1) for d, a, (start, stop) in zip(dims, lo, where)}
    return _opened(spec).read(attrs=[attribute], ranges=ranges, threads=1)[attribute]


def _slices(arr) -> list:
    """Disjoint inclusive ``(lo, hi)`` slices of the first dimension that cover every live fragment, cut
    between sparse tiles so that about :data:`TILES_PER_PARTITION` tiles start in each."""
    d = arr.dims[0]
    frags = arr.fragments
    if not frags or d.var or d.datatype.numpy_dtype.kind not in "iumM":
        return [None]
    starts = np.sort(np.concatenate([np.asarray(f.mbrs(arr.dims)[0][0], np.int64) if not f.dense else
                                     np.asarray([f.non_empty_domain[0][0]], np.int64) for f in frags]))
    lo = min(int(f.non_empty_domain[0][0]) for f in frags)
    hi = max(int(f.non_empty_domain[0][1]) for f in frags)
    cuts = np.unique(starts[TILES_PER_PARTITION::TILES_PER_PARTITION])
    cuts = cuts[(cuts > lo) & (cuts <= hi)].tolist()
    edges = [lo, *cuts, hi + 1]
    return [(a, b - 1) for a, b in zip(edges, edges[1:])]


def _sparse(arr, spec, attrs):
    dd = _dask("dataframe")
    dim = arr.dims[0].name
    # dask would turn object columns into pyarrow strings, decoding the bytes of byte-string fields
    with _dask("config").set({"dataframe.convert-string": False}):
        return dd.from_map(_sparse_part, _slices(arr), spec=spec, attrs=attrs, dim=dim, label="tdbformat-sparse")


def _sparse_part(cut, spec, attrs, dim):
    import pandas as pd
    ranges = None if cut is None else {dim: cut}
    out = _opened(spec).read(attrs=attrs, ranges=ranges, threads=1)
    return pd.DataFrame({k: _column(v) for k, v in out.items()})


def _column(values):
    """A result column for pandas: a masked (nullable) one as objects, None where masked."""
    if not isinstance(values, np.ma.MaskedArray):
        return values
    out = values.data.astype(object)
    out[np.ma.getmaskarray(values)] = None
    return out
