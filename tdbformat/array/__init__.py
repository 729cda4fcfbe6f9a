"""Reading an array's cells into numpy without TileDB (REFERENCE.md §3, §4, §11-14).

:func:`open_array` finds the array's schemas, committed fragments, delete commits, array metadata and
enumerations (:mod:`tdbformat.layout` knows where they are); :meth:`Array.read` decodes the tiles it
needs (:mod:`.tiles`) and merges the fragments as TileDB does (:mod:`.dense`, :mod:`.sparse`).

The rooms: :mod:`.fragment` (a committed fragment), :mod:`.tiles` (tile bytes to cells), :mod:`.cells`
(numpy dtypes, var cells, fills), :mod:`.dense` and :mod:`.sparse` (the merges), :mod:`.order` (cell-order
arithmetic), :mod:`.evaluate` (query conditions), :mod:`.options` (memory budget, window, ranges).
"""

from __future__ import annotations

import functools
import os
import sys
import types
import warnings
from concurrent.futures import ThreadPoolExecutor

from .. import layout as directory, show
from ..errors import FormatError
from ..enums import ArrayType, EncryptionType, Layout
from ..filters.encryption import normalize_key
from ..filters.pipeline import thread_count
from ..structs import array_schema as schema_mod
from ..show.notebook import array_html
from ..structs.names import parse_timestamped_name
from ..storage import storage_for
from .cells import metadata_value, nonempty_bound, tiledb_py_metadata
from .condition import ConditionError
from .dense import MemoryBudgetError, check_budget, read_dense
from .fragment import Fragment, in_tiledb_order, load_fragments
from .dask import to_dask
from .indexing import Query, TileDBPyReads
from . import options
from .options import ORDERS, read_window, wanted_attributes
from .prev1 import LegacyArray
from .ranges import RangeError, check_ranges
from .ranged import listing_and_tails
from .sparse import read_sparse
from .tiles import Tiles

__all__ = ["open_array", "Array", "Fragment", "read_window", "check_ranges", "MEMORY_BUDGET", "MemoryBudgetError",
           "Query", "ConditionError", "RangeError"]

class Array(TileDBPyReads):
    """An opened array: its schemas, committed fragments, delete commits, metadata and enumerations."""

    def __init__(self, path, key=None, timestamp=None, storage_options=None):
        # (storage, path): opened by open_array, whose snapshot of the folders this open reuses
        self.storage, self.path = path if isinstance(path, tuple) else storage_for(path, storage_options)
        self.key = normalize_key(key)
        #: the (start, end) window in ms the array is opened at (reads default to it)
        self.window = read_window(timestamp)
        self.schemas, self._listing, self._committed, self._fetched_metadata = _load(self.storage, self.path,
                                                                                     self.key, self.window)
        #: the schema in force at the window's end, as TileDB-Py's ``A.schema`` (the latest, opened at now)
        self.schema = self.schema_at(self.window[1])
        self.encrypted = self.schema["_generic_tile"].encryption_type != EncryptionType.NO_ENCRYPTION
        self.dims = schema_mod.dimensions(self.schema)
        self.attrs = schema_mod.attributes(self.schema)
        self.tiles = Tiles(self.storage, self.key, self.encrypted)

    @property
    def fragments(self) -> list[Fragment]:
        """The fragments a read at the opening window sees, in timestamp order."""
        return self.live_fragments(self.window)

    @property
    def deletes(self) -> list:
        """The delete commits a read at the opening window applies, oldest first."""
        return self._listing.live_deletes(self.window)

    def live_fragments(self, window) -> list[Fragment]:
        """The committed fragments a read of ``window`` sees (:meth:`directory.Listing.live`)."""
        live = self._listing.live(window, sparse=self.schema.array_type != ArrayType.DENSE)
        # TileDB sorts the fragments a read sees, not all of them: ties can fall otherwise (in_tiledb_order)
        return in_tiledb_order([f for f in self._committed if f.name in live], self._listing)

    def schema_at(self, timestamp: int):
        """The schema TileDB opens the array with at ``timestamp`` (ms): the last of :attr:`schemas` (legacy
        file aside) whose timestamp is at most ``timestamp``, else the first (select_latest_array_schema_uri)."""
        older = [s for name, s in self.schemas
                 if name != directory.LEGACY_SCHEMA and parse_timestamped_name(name).t2 <= timestamp]
        return older[-1] if older else self.schemas[0][1]

    def __repr__(self) -> str:
        kind = "DenseArray" if self.schema.array_type == ArrayType.DENSE else "SparseArray"
        return f"{kind}(uri={str(self.path)!r}, ndim={len(self.dims)}, fragments={len(self.fragments)})"

    def __str__(self) -> str:
        """The schema, laid out as TileDB-Py prints ``A.schema``."""
        return show.schema_repr(show.schema_json(self.schema, self.enumerations))

    def nonempty_domain(self, timestamp=None, raw: bool = False):
        """Per dimension, the inclusive (lo, hi) holding every written cell, as TileDB-Py's
        ``nonempty_domain()``: the union of the non-empty domains of the fragments a read of ``timestamp``
        (default: the opening window) sees; numpy scalars, datetime64 for datetime dimensions, bytes for
        string dimensions (``raw``: the values as stored, datetimes as ints). None if no fragment is live."""
        window = self.window if timestamp is None else read_window(timestamp)
        frags = self.live_fragments(window)
        if not frags:
            return None
        out = []
        for j, d in enumerate(self.dims):
            bounds = (min(f.non_empty_domain[j][0] for f in frags), max(f.non_empty_domain[j][1] for f in frags))
            out.append(bounds if raw else tuple(nonempty_bound(d, v) for v in bounds))
        return tuple(out)

    def read(self, attrs=None, timestamp=None, order=None, ranges=None, threads=None, memory_budget=None,
             provenance=False) -> dict:
        """The array's cells as ``{name: numpy array}`` (TileDB-Py conventions).

        ``attrs``: attribute names (default all). ``timestamp``: read as of this time (ms), or a
        ``(start, end)`` range (default: the window the array was opened at). ``order``: "C" row-major,
        "F" column-major, "G" global order, "U" unordered: what TileDB-Py's ``A[:]`` and
        ``query(order="U")`` give, global order without duplicates, else each fragment's cells in its own
        order, oldest fragment first (the default of sparse reads; dense reads default to "C" N-D arrays).
        ``ranges``: ``{dim: (lo, hi)}`` inclusive subarray (datetime64 bounds for datetime dimensions).
        ``threads``: tile-decoding threads (default: one per core). ``memory_budget``: the bytes a dense
        result may take (default :data:`MEMORY_BUDGET`), refused before allocating (:class:`MemoryBudgetError`).
        ``provenance`` (sparse): also ``"__fragment"``, each cell's fragment's index in :meth:`live_fragments`.

        The attributes are those of the schema in force at the end of the timestamp range (TileDB opens
        an array with it); fragments written with another schema lack some (read as fill values).
        """
        window = self.window if timestamp is None else read_window(timestamp)
        schema = self.schema_at(window[1])
        wanted, layout = wanted_attributes(schema, attrs), _layout(self.schema, order)
        sparse = self.schema.array_type != ArrayType.DENSE
        ranges = check_ranges(self.dims, ranges, schema)
        frags = self.live_fragments(window)
        pool = _pool(threads)
        if not sparse:
            check_budget(self, schema, wanted, ranges, memory_budget)
            return read_dense(self, schema, frags, wanted, ranges, layout, pool)
        return read_sparse(self, schema, frags, wanted, ranges, layout, window,
                           self._listing.live_deletes(window), pool, provenance)

    @property
    def metadata(self) -> dict:
        """Array metadata folded over its files, as stored: ``{key: value}`` (numpy values; str for strings)."""
        return {k: metadata_value(e) for k, e in _metadata_entries(self).items()}

    @property
    def meta(self) -> dict:
        """Array metadata as TileDB-Py's ``A.meta`` gives it: numpy arrays stored under ``__np_flat_`` keys
        back under their own names and shapes, tuples as tuples, single numbers as numpy scalars."""
        return tiledb_py_metadata(_metadata_entries(self))

    def to_dask(self, attrs=None):
        """A lazy dask view: ``{attribute: dask.array}`` (dense, one chunk per space tile) or a
        ``dask.dataframe`` (sparse); each task reads only its own tiles (:func:`.dask.to_dask`)."""
        return to_dask(self, attrs)

    @property
    def enumerations(self) -> dict:
        """``{enumeration name: list of values}``; an enumerated attribute's cells are codes into these."""
        return {name: values for name, (values, _) in self._enumerations.items()}

    @functools.cached_property
    def _enumerations(self) -> dict:
        """``{enumeration name: (values, ordered)}``, parsed on first use."""
        return directory.load_enumerations(self.storage, self.path, self.schema, self.key)


Array._repr_html_ = array_html  # the notebook view (the class is at its 120-line limit)


def _metadata_entries(arr) -> dict:
    """The array's metadata entries, from the bytes its open fetched where it fetched them."""
    return directory.read_metadata(arr.path, arr.key, arr.window, arr.storage, arr._fetched_metadata)

#: the tile-decoding pools, one per thread count, shared by every read: starting and joining a pool cost a
#: small read a tenth of its time. Safe to share because no task in them waits for another.
_POOLS: dict = {}
os.register_at_fork(after_in_child=_POOLS.clear)  # a forked child has none of the parent's threads


def _pool(threads) -> ThreadPoolExecutor:
    # one thread per core by default: more only contend for the GIL between the codecs' GIL-free stretches
    n = thread_count(threads, os.cpu_count() or 1)
    if n == 1:
        return _INLINE
    pool = _POOLS.get(n)
    return pool if pool is not None else _POOLS.setdefault(n, ThreadPoolExecutor(n, "tdbformat-read"))


class _Inline:
    """``threads=1``: tiles decode in the calling thread, so callers that run reads side by side (dask's
    tasks do) each keep a thread of their own rather than queue for one shared worker."""

    @staticmethod
    def map(fn, *iterables):
        return map(fn, *iterables)


_INLINE = _Inline()




def _layout(schema, order) -> Layout:
    """The cell order ``order=`` asks of an array: sparse reads default to "U", dense ones to "C"."""
    if order not in (None, *ORDERS):
        raise ValueError(f"order: expected one of {', '.join(map(repr, ORDERS))}, not {order!r}")
    sparse = schema.array_type != ArrayType.DENSE
    layout = ORDERS[order or ("U" if sparse else "C")]
    if sparse and layout == Layout.UNORDERED and not schema.allows_dups:
        return Layout.GLOBAL_ORDER  # TileDB answers an unordered query without duplicates in global order
    return layout


def _load(storage, root, key, window) -> tuple[list, directory.Listing, list, list | None]:
    """An array's schemas, listing, committed fragments and, on an object store, the bytes of the metadata
    files a read at ``window`` folds (None: read when asked for), from one view of its folders (on an
    object store: one recursive listing)."""
    with storage.snapshot(prefetch=[root]):
        fetched = listing_and_tails(storage, root, key)  # an object store: what the open reads, in one round
        read = directory.read_schemas(storage, root, key)
        schemas = [(n, show.Schema(s)) for n, _, s in read]
        if reason := schema_mod.evolution_mismatch(schemas):
            raise FormatError(f"{root}: {reason}")
        listing = fetched or directory.Listing.of(storage, root, key)
        # fragments name the schema they were written with (v10+); their metadata parses depend on its bytes
        return schemas, listing, load_fragments(storage, listing, dict(schemas), key, tuple(d for _, d, _ in read)), \
            _metadata(storage, root, window) if fetched else None


def _metadata(storage, root, window) -> list | None:
    """The metadata files' bytes, from what the open fetched; None where they do not list (a bad vacuum
    file): ``metadata`` then reports it when asked for, as on a local disk."""
    try:
        return directory.metadata_bytes(storage, root, window)
    except FormatError:
        return None


def open_array(path, mode: str = "r", key=None, timestamp=None, storage_options=None) -> Array:
    """Open the array at ``path`` (a local path or an fsspec URL: s3://, gs://, az://, http(s)://, memory://,
    file://) as ``tiledb.open`` does: ``mode`` "r" to read, "w" to write (an ``open_writer``); ``key``:
    AES-256-GCM key of an encrypted array; ``timestamp``: the end, or (start, end), in ms, of what reads see
    by default (the current time if None), or the writes' timestamp; ``storage_options``: passed to fsspec,
    as pandas and dask do.
    An array from before format version 1 (TileDB 0.x, 1.0-1.3) opens as a :class:`~.prev1.LegacyArray`."""
    if mode != "r":  # "w" is tdbformat.open_array's (the writer is a floor above)
        raise ValueError(f"mode: expected 'r' (read) or 'w' (write, through tdbformat.open_array), not {mode!r}")
    storage, root = storage_for(path, storage_options)
    with storage.snapshot(prefetch=[root]):  # one view of the folders for the dialect check and the open
        found = directory.dialect(storage, root)
        if not found:
            return Array((storage, root), key=key, timestamp=timestamp)
    legacy = LegacyArray((storage, root), found)
    if key is not None:
        raise FormatError(f"{path}: an array of the {legacy.version} dialect (before format version 1) is never "
                          "encrypted: open it without key=")
    if timestamp is not None:
        raise ValueError("timestamp: fragments before format version 1 have no timestamps to open at")
    return legacy


class _Module(types.ModuleType):
    """``tdbformat.array.MEMORY_BUDGET`` (read or set) is :data:`.options.MEMORY_BUDGET` for one more release."""

    @property
    def MEMORY_BUDGET(self):  # noqa: N802 (the old module constant's name)
        warnings.warn("tdbformat.array.MEMORY_BUDGET moved to tdbformat.array.options.MEMORY_BUDGET",
                      DeprecationWarning, stacklevel=2)
        return options.MEMORY_BUDGET

    @MEMORY_BUDGET.setter
    def MEMORY_BUDGET(self, value):  # noqa: N802
        warnings.warn("tdbformat.array.MEMORY_BUDGET moved to tdbformat.array.options.MEMORY_BUDGET",
                      DeprecationWarning, stacklevel=2)
        options.MEMORY_BUDGET = value


sys.modules[__name__].__class__ = _Module
