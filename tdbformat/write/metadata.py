"""Writing array metadata (metadata.md; REFERENCE.md §10), format v4 and later.

:func:`put_metadata` and :func:`delete_metadata` write one ``__meta/__<t>_<t>_<uuid>`` file, a generic tile
of the array's format version, with the entries TileDB-Py's ``A.meta[key] = value`` and ``del A.meta[key]``
would write in one session: each assignment first deletes the key and its numpy forms (``__np_flat_<key>``,
``__np_shape_<key>``), then puts; the last operation on a key wins, and entries are in key order, as
TileDB's ``std::map`` writes them. Values are typed as TileDB-Py types them: int → INT64, float →
FLOAT64, str → STRING_UTF8, bytes → BLOB, a list or tuple of ints or floats → INT64 or FLOAT64 values (an
empty one → INT32, no values), a numpy scalar keeps its dtype, a numpy array keeps its dtype under
``__np_flat_<key>`` with its shape under ``__np_shape_<key>`` unless it is one-dimensional.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from construct import Container, ListContainer

from .. import layout
from ..enums import Datatype
from ..storage import storage_for
from ..structs.metadata import ArrayMetadata
from ..versions import DEFAULT_WRITE_VERSION
from ..array.cells import NP_FLAT, NP_SHAPE
from ..schema import datatype_of

__all__ = ["put_metadata", "delete_metadata", "metadata_entries"]

#: the first format version with array metadata
METADATA_SINCE = 4

def _datatype(dtype: np.dtype, key: str) -> Datatype:
    """The datatype of numeric, bool, datetime and time values (one value each)."""
    if dtype.kind in "SUVOc":
        raise TypeError(f"mapping[{key!r}]: numpy dtype {dtype} has no TileDB metadata datatype")
    try:
        return datatype_of(dtype)[0]
    except TypeError:
        raise TypeError(f"mapping[{key!r}]: numpy dtype {dtype} has no TileDB metadata datatype") from None


def _sequence(value, key: str) -> tuple[Datatype, np.ndarray]:
    """A Python number or list/tuple of numbers, as TileDB-Py's ``pack_metadata_val`` types it."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values:
        return Datatype.INT32, np.zeros(0, np.int32)
    kind = int if isinstance(values[0], int) else float if isinstance(values[0], float) else None
    if kind is None:
        raise TypeError(f"mapping[{key!r}]: unsupported value type {type(values[0]).__name__}")
    if not all(isinstance(v, kind) for v in values):
        raise TypeError(f"mapping[{key!r}]: mixed-type sequences are not supported: {value!r}")
    if kind is int:
        return Datatype.INT64, np.array(values, np.int64)
    return Datatype.FLOAT64, np.array(values, np.float64)


def _typed(value, key: str) -> tuple[Datatype, np.ndarray]:
    """(datatype, values) of a scalar value (not an ndarray), as TileDB-Py types it."""
    if isinstance(value, np.generic):
        if value.dtype.kind == "S":
            return Datatype.CHAR, np.frombuffer(value.tobytes(), "S1")
        if value.dtype.kind == "U":
            return Datatype.STRING_UTF8, np.frombuffer(str(value).encode("utf-8"), np.uint8)
        return _datatype(value.dtype, key), np.atleast_1d(value).astype(value.dtype.newbyteorder("<"))
    if isinstance(value, bytes):
        return Datatype.BLOB, np.frombuffer(value, np.uint8)
    if isinstance(value, str):
        return Datatype.STRING_UTF8, np.frombuffer(value.encode("utf-8"), np.uint8)
    return _sequence(value, key)


def _put(ops: dict, key: str, value) -> None:
    """The operations of TileDB-Py's ``meta[key] = value`` (tiledb/metadata.py ``__setitem__``)."""
    _delete(ops, key)
    if isinstance(value, np.ndarray):
        flat = value.ravel()
        datatype = _datatype(flat.dtype, key)
        ops[NP_FLAT + key] = Container(key=NP_FLAT + key, deleted=False, datatype=datatype,
                                       value=flat.astype(flat.dtype.newbyteorder("<")))
        if value.shape != flat.shape:
            _put(ops, NP_SHAPE + key, tuple(value.shape))
        return
    datatype, values = _typed(value, key)
    ops[key] = Container(key=key, deleted=False, datatype=datatype, value=values)


def _delete(ops: dict, key: str) -> None:
    """The operations of TileDB-Py's ``del meta[key]``: the key and its numpy forms."""
    for k in (key, NP_FLAT + key, NP_SHAPE + key):
        ops[k] = Container(key=k, deleted=True, datatype=None, value=None)


def _check_key(key) -> str:
    if not isinstance(key, str):
        raise TypeError(f"metadata keys are str, not {type(key).__name__} ({key!r})")
    return key


def metadata_entries(puts: Mapping | None = None, deletes: Iterable = ()) -> list:
    """The entries of one metadata file that deletes ``deletes`` and then puts ``puts``, in key order."""
    ops = {}
    for k in deletes:
        _delete(ops, _check_key(k))
    for k, v in (puts or {}).items():
        _put(ops, _check_key(k), v)
    return [ops[k] for k in sorted(ops)]


def _version(storage, root, key) -> int:
    """The array's format version; a group's is that of its details files (the newest if it has none)."""
    if layout.is_group(storage, root):
        return layout.group_format_version(storage, root, key) or DEFAULT_WRITE_VERSION
    return layout.array_format_version(storage, root, key)


def _write(path, entries: list, timestamp, key) -> str:
    """Write ``entries`` as one metadata file of the array or group at ``path``; returns its path."""
    storage, root = storage_for(path)
    version = _version(storage, root, key)
    if version < METADATA_SINCE:
        raise ValueError(f"array metadata exists from format version {METADATA_SINCE}; this array is v{version}")
    name = layout.new_name(timestamp)
    data = ArrayMetadata.build(Container(entries=ListContainer(entries)), version=version, key=key)
    target = layout.metadata_path(storage, root, name)
    storage.commit(target, data)
    return str(target)


def put_metadata(path, mapping: Mapping, timestamp=None, key=None) -> str:
    """Put ``mapping`` into the metadata of the array (or group) at ``path`` at ``timestamp`` (ms; None: now), as one
    new ``__meta`` file (written whole under a temporary name, then renamed); returns the file's path."""
    if not isinstance(mapping, Mapping):
        raise TypeError(f"mapping: expected a mapping of str to values, not {type(mapping).__name__}")
    if not mapping:
        raise ValueError("mapping: empty (TileDB never writes a metadata file without entries)")
    return _write(path, metadata_entries(mapping), timestamp, key)


def delete_metadata(path, keys, timestamp=None, key=None) -> str:
    """Delete ``keys`` (a str or an iterable of them) from the metadata of the array (or group) at ``path`` at
    ``timestamp``, as TileDB-Py's ``del A.meta[k]`` does; returns the new file's path."""
    keys = [keys] if isinstance(keys, str) else list(keys)
    if not keys:
        raise ValueError("keys: no key to delete")
    return _write(path, metadata_entries(deletes=keys), timestamp, key)
