"""Rewriting an array at another format version (issue #16): :func:`convert`.

The destination gets, in timestamp order, what a reader of the source sees: the schema history (from v10 each
schema at its own timestamp; before v10 one schema, the latest, through which every fragment is then read),
every live fragment (its cells alone, rewritten at its timestamp with its uuid), the array metadata files
(their entries and names kept) and the delete commits (v16+, under their uuids). A fragment consolidated with
timestamps keeps its cell timestamps (v14+) and delete metadata (v16+); a target without them gets what they
select, the cells a read sees now. ``merge=True`` writes instead every cell a read sees now as one fragment,
deletes applied. A feature the target cannot hold is a ValueError naming it and the
first version that has it, raised before anything is written.

The source is only read. The destination must not exist; a failure part-way leaves it half-written, for the
user to delete.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from construct import Container, ListContainer

from .. import layout
from ..enums import ArrayType, Datatype, Layout, NodeType
from ..filters.pipeline import MAX_CHUNK
from ..storage import storage_for, syncing
from ..structs.array_schema import ArraySchema, attributes
from ..structs.commits import negate
from ..structs.enumeration import Enumeration
from ..structs.metadata import ArrayMetadata
from ..structs.names import parse_timestamped_name, timestamped_name
from ..versions import DEFAULT_WRITE_VERSION
from ..array import Array, check_ranges, open_array
from ..array.cells import filled, from_ordinal, nonempty_bound
from .create import check_version, create, new_uuid, schema_at
from .deletes import DELETES_SINCE, delete_cells
from ..array.dense import read_dense
from ..array.fragment import field_index
from .metadata import METADATA_SINCE
from ..array.sparse import read_sparse
from .writer import CELL_META_SINCE, open_writer, write
from .writer import _chunk_bound as checked_chunk_bound

__all__ = ["convert", "convertible"]

# writes at one timestamp go schema first, then cells, then what applies to cells
_SCHEMA, _FRAGMENT, _METADATA, _DELETE = range(4)


def convert(src, dst, version: int = DEFAULT_WRITE_VERSION, merge: bool = False, key=None,
            max_chunk_size: int = MAX_CHUNK, timestamp=None, attrs=None, fsync: bool | None = None) -> list[str]:
    """Rewrite the array at ``src`` as a new array at ``dst`` in format ``version`` (see the module doc;
    default :data:`~tdbformat.versions.DEFAULT_WRITE_VERSION`, the newest a released TileDB writes);
    ``key`` decrypts the source and encrypts the destination; ``max_chunk_size`` is the writer's chunk bound
    (v5+; TileDB's default 64 KiB, 192 bytes in the tiledb-py 0.19-0.25 wheels); ``timestamp`` (ms): copy the
    array as it was then (the fragments, deletes, schemas and metadata files a read at that time sees; the
    cells of a fragment consolidated with timestamps up to it); ``attrs``: copy only these attributes (the
    dimensions always; a delete whose condition names another is refused); ``fsync`` (default on, or the
    environment's ``TDBFORMAT_FSYNC=0``): each commit reaches the disk after what it commits, ``False`` for a
    scratch copy. Returns the names of the fragments written (not counting those of dimension labels'
    arrays)."""
    with syncing(fsync):
        return _convert(src, dst, version, merge, key, max_chunk_size, timestamp, attrs)


def _convert(src, dst, version, merge, key, max_chunk_size, timestamp, attrs) -> list[str]:
    version = check_version(version)
    max_chunk_size = checked_chunk_bound(max_chunk_size)
    if not isinstance(merge, bool):
        raise TypeError(f"merge: expected a bool, not {type(merge).__name__}")
    storage, root = storage_for(dst)
    if storage.is_file(root) or storage.is_dir(root):
        raise ValueError(f"dst: {dst} exists (convert writes a new array)")
    array = open_array(src, key=key, timestamp=timestamp)
    if not isinstance(array, Array):  # a LegacyArray (TileDB 0.x, 1.0-1.3): no timestamps, one schema
        return [_convert_legacy(array, dst, version, key)]
    until = None if timestamp is None else array.window[1]
    attrs = _checked_attrs(array, attrs)
    written = []
    for t, kind, _, item in sorted(_plan(array, version, merge, until, attrs), key=lambda e: e[:3]):
        if kind == _SCHEMA:
            _write_schema(array, dst, item, t, version, key)
        elif kind == _FRAGMENT:
            written.append(_write_fragment(array, dst, item, t, version, key, max_chunk_size, until, attrs))
        elif kind == _METADATA:
            _write_metadata(array.storage, dst, item, version, key)
        else:  # under the source's uuid: the processed conditions of consolidated fragments name it
            delete_cells(dst, negate(item.condition), timestamp=t, key=key, uuid=_uuid(item.marker))
    _convert_labels(array, dst, version, merge, key, max_chunk_size, timestamp)
    return written


def attr_names(attrs) -> frozenset:
    """``attrs`` (a list of attribute names) as a set; a TypeError unless it is one."""
    if isinstance(attrs, str) or not all(isinstance(a, str) for a in attrs):
        raise TypeError("attrs: expected a list of attribute names")
    return frozenset(attrs)


def _checked_attrs(array, attrs) -> frozenset | None:
    """``attrs`` as a set of names of the array's attributes (any schema's), None for all."""
    if attrs is None:
        return None
    attr_names(attrs)
    known = {a.name for _, s in array.schemas for a in s.attributes}
    unknown = [a for a in attrs if a not in known]
    if unknown or not attrs:
        raise ValueError(f"attrs: {', '.join(map(repr, unknown)) or 'none given'}: not attributes of the array "
                         f"({', '.join(sorted(known))})")
    return frozenset(attrs)


def _only(schema, attrs):
    """``schema`` with the attributes in ``attrs`` alone (and the enumerations they use); None: all."""
    if attrs is None:
        return schema
    out = Container(schema)
    out.attributes = ListContainer(a for a in schema.attributes if a.name in attrs)
    if schema.get("enumerations") is not None:
        used = {a.get("enumeration_name") for a in out.attributes}
        out.enumerations = ListContainer(e for e in schema.enumerations if e.name in used)
    if schema.array_type == ArrayType.DENSE and not out.attributes:
        raise ValueError(f"attrs: a dense array needs an attribute; the schema's are "
                         f"{', '.join(a.name for a in schema.attributes)}")
    return out


_ORDERS = {Layout.ROW_MAJOR: "row-major", Layout.COL_MAJOR: "col-major"}
#: a pre-v1 compressor as the filter that does its job today (blosc's codecs left TileDB in 1.4: zstd)
_LEGACY_FILTERS = {"GZIP": "GzipFilter", "ZSTD": "ZstdFilter", "LZ4": "LZ4Filter", "RLE": "RleFilter",
                   "BZIP2": "Bzip2Filter", "DOUBLE_DELTA": "DoubleDeltaFilter"}


def _legacy_field(field, stored):
    """A pre-v1 attribute as a schema helper ``Attr``, its compressor as a filter."""
    from .. import schema as S

    comp = stored.compressor.name
    name = _LEGACY_FILTERS.get(comp, "ZstdFilter" if comp.startswith("BLOSC") else None)
    filters = [getattr(S, name)()] if name else []
    dt = field.datatype.numpy_dtype
    if field.var:
        return S.Attr(field.name, bytes if field.datatype == Datatype.CHAR else str, var=True, filters=filters)
    if field.cell_val_num > 1:
        dt = np.dtype([(f"f{i}", dt) for i in range(field.cell_val_num)])
    return S.Attr(field.name, dt, filters=filters)


def _convert_legacy(array, dst, version: int, key) -> str:
    """A 0.x or 1.x array as one fragment holding every cell it reads now (those arrays have no timestamps),
    under its schema in v1+ terms: dimensions, attributes, orders, capacity, each compressor as its filter."""
    from .. import schema as S

    if key is not None:
        raise ValueError("key: arrays from before format version 1 are never encrypted")
    sch = array.schema
    dims = [S.Dim(d.name, domain=(d.domain[0].item(), d.domain[1].item()), tile=d.tile_extent,
                  dtype=d.datatype.numpy_dtype) for d in sch.domain.dimensions]
    attrs = [_legacy_field(f, stored) for f, stored in zip(array.attrs, array.fields)]
    sparse = sch.array_type == ArrayType.SPARSE
    create(dst, S.ArraySchema(domain=S.Domain(*dims), attrs=attrs, sparse=sparse, capacity=int(sch.capacity),
                              cell_order=_ORDERS[Layout(sch.cell_order)], tile_order=_ORDERS[Layout(sch.tile_order)]),
           version)
    cells, ned = array.read(), array.nonempty_domain()
    data = {f.name: cells[f.name] for f in array.attrs}
    if sparse:
        return write(dst, data, coords=[cells[d.name] for d in sch.domain.dimensions])
    return write(dst, data, subarray=[(int(lo), int(hi)) for lo, hi in ned])


def _convert_labels(array, dst, version: int, merge: bool, key, max_chunk_size: int, timestamp=None) -> None:
    """Each dimension label's array (v18+, kept inside the array under ``__labels/``) converted likewise."""
    storage, root = storage_for(dst)
    for label in array.schema.get("labels") or []:
        if label.is_external or not label.relative_uri:
            raise ValueError(f"dimension label {label.name!r}: its array lies outside the array ({label.uri}); "
                             "convert it on its own")
        src = array.storage.join(array.path, *label.uri.split("/"))
        convert(src, storage.join(root, *label.uri.split("/")), version, merge=merge, key=key,
                max_chunk_size=max_chunk_size, timestamp=timestamp)


def _name_time(name: str) -> int:
    return parse_timestamped_name(name).t1


def _plan(array, version: int, merge: bool, until: int | None = None, attrs=None) -> list:
    """(timestamp, kind, order, item) of every write, after checking that ``version`` holds all of them;
    ``until``: only the schemas and metadata files from before then (the array was opened at it); ``attrs``:
    the attributes kept (None: all)."""
    frags, meta, deletes = array.fragments, _metadata_files(array, until), array.deletes
    if version < DELETES_SINCE:  # a delete every fragment it reaches has applied (their delete metadata) goes
        deletes = [d for d in deletes if not _absorbed(d, frags)]
    cell_times = [f.timestamp_range[1] for f in frags] + [d.timestamp for d in deletes]
    # a consolidated fragment's cells go back to its t1
    times = [f.timestamp_range[0] for f in frags] + cell_times + [_name_time(array.storage.name(p)) for p in meta]
    schemas = array.schemas if until is None else (
        [(n, s) for n, s in array.schemas if n != layout.LEGACY_SCHEMA and _name_time(n) <= until]
        or array.schemas[:1])
    schemas = [(n, _only(s, attrs)) for n, s in (schemas if version >= 10 and not merge else schemas[-1:])]
    for _, s in schemas:
        schema_at(s, version)  # a ValueError naming a schema feature the version lacks
    if meta and version < METADATA_SINCE:
        raise ValueError(f"array metadata need format version {METADATA_SINCE} or later, not {version}")
    dropped = {a.name for _, s in array.schemas for a in s.attributes} - (attrs or set()) if attrs else set()
    for d in deletes:
        if names := sorted(_condition_fields(d.condition) & dropped):
            raise ValueError(f"attrs: the delete {d.marker} names {', '.join(names)}, which attrs leaves out")
    if deletes and version < DELETES_SINCE and not merge:
        raise ValueError(f"delete commits need format version {DELETES_SINCE} or later, not {version} "
                         "(merge=True writes the cells left after them instead)")
    first = min(times, default=layout.checked_timestamp(None))
    # the legacy schema file has no timestamp, and a schema written later than the first write (the latest one,
    # before v10) would hide that write's cells from TileDB: such a schema is written at the first write's time
    plan = [(first if name == layout.LEGACY_SCHEMA else min(first, _name_time(name)) if i == 0
             else _name_time(name), _SCHEMA, i, (name, s)) for i, (name, s) in enumerate(schemas)]
    if merge:  # one fragment at the time of the last write or delete
        plan += [(max(cell_times), _FRAGMENT, 0, None)] if frags else []
    else:
        plan += [(f.timestamp_range[1], _FRAGMENT, i, f) for i, f in enumerate(frags)]
        plan += [(d.timestamp, _DELETE, i, d) for i, d in enumerate(deletes)]
    plan += [(_name_time(array.storage.name(p)), _METADATA, i, p) for i, p in enumerate(meta)]
    return plan


def _condition_fields(node) -> set:
    """The field names a (stored) delete condition compares."""
    if node["node_type"] == NodeType.EXPRESSION:
        return set().union(*(_condition_fields(c) for c in node["expression"]["children"]))
    return {node["comparison"]["field_name"]}


def _absorbed(delete, frags) -> bool:
    """Whether every fragment ``delete`` reaches (from its t1 on) was consolidated across it: their delete
    metadata say which cells it removed, so the converted fragments can leave those out."""
    return all(delete.marker in f.processed_conditions for f in frags if f.timestamp_range[0] <= delete.timestamp)


def _metadata_files(array, until: int | None = None) -> list:
    folder = array.storage.join(array.path, layout.META_DIR)
    window = None if until is None else (0, until)
    return layout.metadata_files(array.storage, folder, window) if array.storage.is_dir(folder) else []


def _write_schema(array, dst, item, t: int, version: int, key) -> None:
    """The first schema through ``create``; later ones (v10+) beside it at their own timestamps; each under its
    source name when it has one (fragments name their schema); the enumeration files the schema names (v20+),
    rebuilt at ``version``, before it."""
    name, schema = item
    storage, root = storage_for(dst)
    folder = storage.join(root, layout.SCHEMA_DIR)
    keep = version >= 10 and name != layout.LEGACY_SCHEMA and _name_time(name) == t
    data = ArraySchema.build(schema_at(schema, version), key=key, version=version)
    values = {}
    for ref in schema.get("enumerations") or []:
        src = layout.enumeration_path(array.storage, array.path, ref.filename)
        values[ref.filename] = Enumeration.parse(array.storage.read(src, what="enumeration file"), key=key,
                                                 filename=str(src))
    if not storage.is_dir(root):
        create(dst, schema, version, key=key, timestamp=t, enumerations=values)
        if keep:  # create names the file with a new uuid: put it under the source's name instead
            made = layout.schema_files(storage, root)[0]
            storage.commit(storage.join(folder, name), data)
            storage.delete(made)
        return
    for filename, value in values.items():
        target = layout.enumeration_path(storage, root, filename)
        if not storage.is_file(target):
            storage.commit(target, Enumeration.build(value, version=version, key=key))
    storage.commit(storage.join(folder, name if keep else timestamped_name(t, t, new_uuid())), data)


def _cells(array, frag, schema, until: int | None = None) -> dict:
    """The cells of ``frag`` alone (stamped up to ``until``), through ``schema`` (attributes it lacks read as
    fill values), no deletes."""
    dims, wanted = array.dims, attributes(schema)
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        if frag.dense:
            ranges = check_ranges(dims, {d.name: tuple(nonempty_bound(d, v) for v in bounds)
                                         for d, bounds in zip(dims, frag.non_empty_domain)})
            return read_dense(array, schema, [frag], wanted, ranges, Layout.ROW_MAJOR, pool)
        return read_sparse(array, schema, [frag], wanted, {}, Layout.UNORDERED, _range(frag, until), [], pool)


def _range(frag, until: int | None) -> tuple[int, int]:
    """The fragment's timestamp range, ended at ``until``: a fragment consolidated with timestamps across
    it keeps the cells stamped up to then."""
    t1, t2 = (int(t) for t in frag.timestamp_range)
    return (t1, t2) if until is None else (t1, min(t2, until))


def _consolidated_cells(array, frag, schema, version: int) -> tuple[list, dict, dict]:
    """(coordinates, attributes, cell timestamps and delete metadata) of a fragment consolidated with
    timestamps, every cell as stored (the versions of a cell, and the cells deleted since, too). Delete
    metadata goes along from v16 (the version of delete commits); below, the cells it marks deleted are
    dropped, as a read at any time after their delete leaves them out."""
    tiles = list(range(frag.tile_num()))
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        def column(name):
            return array.tiles.field(frag, frag.index(name), tiles, pool)

        coords = [from_ordinal(c, d) for c, d in zip(array.tiles.coords(frag, array.dims, tiles, pool), array.dims)]
        n = len(coords[0])
        data = {}
        for info in attributes(schema):
            if field_index(frag, info) is None:  # added by a later schema: its fill value (sparse.py does the same)
                stored = next(a for a in schema.attributes if a.name == info.name)
                values, valid = filled(info, stored, (n,)), np.full(n, bool(stored.get("fill_value_validity")))
            else:
                values, valid = column(info.name)
            data[info.name] = values if not info.nullable else np.ma.masked_array(values, ~valid)
        meta = {"cell_timestamps": column("__timestamps")[0]}
        if frag.has_delete_meta:
            deleted_at, condition = column("__delete_timestamps")[0], column("__delete_condition_index")[0]
    if frag.has_delete_meta and version >= DELETES_SINCE:
        meta.update(delete_timestamps=deleted_at, delete_conditions=condition,
                    processed_conditions=[_marker(m, version) for m in frag.processed_conditions])
    elif frag.has_delete_meta:
        alive = _alive(coords, deleted_at == np.uint64(2**64 - 1), array.schema.get("allows_dups"))
        coords = [c[alive] for c in coords]
        data = {k: v[alive] for k, v in data.items()}
        meta["cell_timestamps"] = meta["cell_timestamps"][alive]
    return coords, data, meta


def _until(coords, data, meta, until: int | None):
    """A consolidated fragment's cells stamped up to ``until``, deleted only by deletes up to then."""
    if until is None:
        return coords, data, meta
    keep = np.asarray(meta["cell_timestamps"]) <= np.uint64(until)
    meta = {k: (v[keep] if k != "processed_conditions" else v) for k, v in meta.items()}
    if "delete_timestamps" in meta:  # a delete after then had not happened yet
        meta["delete_timestamps"] = np.where(meta["delete_timestamps"] > np.uint64(until), np.uint64(2**64 - 1),
                                             meta["delete_timestamps"]).astype(np.uint64)
    return [c[keep] for c in coords], {k: v[keep] for k, v in data.items()}, meta


def _alive(coords, kept, allows_dups) -> np.ndarray:
    """The cells a read sees once the deleted ones (``~kept``) go: without duplicates, a deleted version of a
    cell also hides its older versions (equal coordinates lie together, newest first)."""
    if allows_dups or kept.all():
        return kept
    first = np.ones(len(kept), bool)
    first[1:] = np.any([c[1:] != c[:-1] for c in coords], axis=0)
    starts = np.flatnonzero(first)
    dead = np.cumsum(~kept)
    before = (dead - ~kept)[starts][np.cumsum(first) - 1]  # deleted cells before each cell's group
    return dead == before


def _marker(marker: str, version: int) -> str:
    """A processed condition's delete commit (``__commits/<name>.del``) as convert names it at ``version``."""
    ts = parse_timestamped_name(marker.rsplit("/", 1)[-1].removesuffix(".del"))
    return f"{layout.COMMITS_DIR}/{timestamped_name(ts.t1, ts.t2, ts.uuid, version)}.del"


def _uuid(name: str) -> str | None:
    """A fragment's (or delete commit's) uuid when it is one the writer can name a fragment with (32 lowercase
    hex digits)."""
    u = parse_timestamped_name(name.rsplit("/", 1)[-1].removesuffix(".del")).uuid
    return u if len(u) == 32 and all(c in "0123456789abcdef" for c in u) else None


def _write_fragment(array, dst, frag, t: int, version: int, key, max_chunk: int, until: int | None = None,
                    attrs=None) -> str:
    """``frag`` (None: every cell a read sees now) rewritten into ``dst`` at ``t``; only its cells stamped up
    to ``until``, only the attributes in ``attrs`` (None: all)."""
    dims = array.dims
    if frag is None:
        ned = array.nonempty_domain(raw=True)
        dense = array.schema.array_type == ArrayType.DENSE
        ranges = {d.name: tuple(nonempty_bound(d, v) for v in b) for d, b in zip(dims, ned)} if dense else None
        cells, uuid = array.read(attrs=None if attrs is None else sorted(attrs), ranges=ranges), None
    else:
        schema = _only(frag.schema if version >= 10 else array.schema, attrs)
        ned, dense, uuid = frag.non_empty_domain, frag.dense, _uuid(frag.name)
        if frag.has_timestamps and not dense and version >= CELL_META_SINCE["cell_timestamps"]:
            coords, data, meta = _until(*_consolidated_cells(array, frag, schema, version), until)
            writer = open_writer(dst, timestamp=_range(frag, until), key=key, max_chunk_size=max_chunk)
            return writer.write(data, coords=coords, uuid=uuid, **meta)
        cells = _cells(array, frag, schema, until)
    names = {d.name for d in dims}
    data = {k: v for k, v in cells.items() if k not in names}
    # a consolidated fragment keeps its range, so reads inside it see it as in the source
    writer = open_writer(dst, timestamp=t if frag is None else _range(frag, until), key=key,
                         max_chunk_size=max_chunk)
    if dense:
        return writer.write(data, subarray=[(int(lo), int(hi)) for lo, hi in ned], uuid=uuid)
    return writer.write(data, coords=[cells[d.name] for d in dims], uuid=uuid)


def _write_metadata(source, dst, path, version: int, key) -> None:
    """One metadata file (read from storage ``source``) of an array or group, its entries rebuilt at
    ``version`` under the file's own name (its timestamps)."""
    storage, root = storage_for(dst)
    entries = ArrayMetadata.parse(source.read(path, what="metadata file"), key=key, filename=str(path)).entries
    data = ArrayMetadata.build(Container(entries=entries), version=version, key=key)
    storage.commit(layout.metadata_path(storage, root, source.name(path)), data)


def convertible(array, version: int, merge: bool = False) -> str | None:
    """None when :func:`convert` can rewrite ``array`` (an open :class:`~tdbformat.array.Array`) at
    ``version``, else why not: the ValueError it would raise before writing, naming the feature."""
    version = check_version(version)
    if not isinstance(array, Array):
        return None  # before format version 1: one schema, no features a later version lacks
    try:
        _plan(array, version, merge)
        for label in array.schema.get("labels") or []:
            if label.is_external or not label.relative_uri:
                raise ValueError(f"dimension label {label.name!r}: its array lies outside the array ({label.uri})")
            convertible_label = open_array(array.storage.join(array.path, *label.uri.split("/")), key=array.key)
            if (reason := convertible(convertible_label, version, merge)) is not None:
                raise ValueError(f"dimension label {label.name!r}: {reason}")
    except ValueError as e:
        return str(e)
    return None
