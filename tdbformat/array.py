"""Reading an array's cells into numpy without TileDB (REFERENCE.md §3, §4, §11-14).

:func:`open_array` finds the array's schemas, its committed fragments (per format era: fragment folders
in the array root up to v11 and under ``__fragments`` from v12; committed by ``__fragment_metadata.tdb``
(v1-4), ``<name>.ok`` (v5-11) or ``__commits/<name>.wrt`` and ``.con`` lists (v12+); minus those named in
vacuum files), its delete commits, array metadata and enumerations. :meth:`Array.read` decodes the
tiles it needs and merges the fragments as TileDB does:

- dense: the result starts as fill values; fragments apply in timestamp order, later ones overwriting
  earlier ones, each only inside its non-empty domain;
- sparse: cells of every fragment, minus deleted ones, minus older duplicates unless the schema allows
  duplicates, sorted row-major (or column-major, global order, or left unordered).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import _order
from ._query import evaluate
from .enums import ArrayType, Datatype, EncryptionType, FilterType, Layout
from .errors import FormatError
from .filters import skips_offsets, unfilter, unfilter_strings
from .filters.encryption import normalize_key
from .structs import array_schema as schema_mod
from .structs import commits
from .structs import enumeration as enumeration_mod
from .structs import fragment as fragment_mod
from .structs import metadata as metadata_mod
from .structs.names import parse_timestamped_name
from .structs.tile import read_tile

__all__ = ["open_array", "Array", "Fragment"]

_ORDERS = {"C": Layout.ROW_MAJOR, "F": Layout.COL_MAJOR, "G": Layout.GLOBAL_ORDER, "U": Layout.UNORDERED}
#: folders of the array root that are not legacy fragment folders
_RESERVED = {"__schema", "__meta", "__fragments", "__commits", "__fragment_meta", "__labels"}
_U64 = np.dtype("<u8")


@dataclass
class Fragment:
    """One committed fragment."""

    name: str
    path: Path
    version: int
    timestamp_range: tuple[int, int]
    #: (lo, hi) per dimension
    non_empty_domain: list
    cell_num: int
    #: the parsed fragment metadata (``structs.fragment.FragmentMetadata``)
    metadata: object = field(repr=False)

    @property
    def dense(self) -> bool:
        return bool(self.metadata.dense)

    @property
    def has_timestamps(self) -> bool:
        """Cells carry their own timestamps (consolidated with timestamps, v14+)."""
        return bool(self.metadata.footer is not None and self.metadata.footer.get("has_timestamps"))

    @property
    def has_delete_meta(self) -> bool:
        """Cells carry delete timestamps and condition indexes (consolidated across deletes, v15+)."""
        return bool(self.metadata.footer is not None and self.metadata.footer.get("has_delete_meta"))

    @property
    def processed_conditions(self) -> list:
        """Delete commits already applied to this fragment's cells (v16+)."""
        return (self.metadata.footer is not None and self.metadata.processed_conditions) or []

    @property
    def schema(self):
        """The array schema this fragment was written with (arrays evolve: it may not be the latest)."""
        return self.metadata.schema

    def index(self, name: str) -> int | None:
        """Index-space position (REFERENCE.md §11) of the field called ``name`` in this fragment's schema;
        None if the fragment has no such field (an attribute added after it was written)."""
        for i, f in enumerate(self.metadata.index_fields):
            if f.name == name:
                return i
        return None

    def tile_offsets(self, kind: str, idx: int):
        """(tile offsets, file size) of index-space field ``idx``'s ``kind`` file ("", "_var", "_validity")."""
        meta = self.metadata
        name = {"": "tile_offsets", "_var": "tile_var_offsets", "_validity": "tile_validity_offsets"}[kind]
        sizes = {"": meta.file_sizes, "_var": meta.file_var_sizes, "_validity": meta.file_validity_sizes}[kind]
        offsets = meta.legacy[name][idx].data if meta.legacy is not None else getattr(meta, name)[idx]
        return offsets, sizes[idx]

    def mbrs(self, dims) -> list[tuple]:
        """Per dimension, the (lows, highs) of every sparse tile's minimum bounding rectangle."""
        meta = self.metadata
        leaves = meta.legacy.mbrs if meta.legacy is not None else meta.rtree.levels[-1].mbrs
        if isinstance(leaves, np.ndarray):
            return [(leaves[d.name][:, 0], leaves[d.name][:, 1]) for d in dims]
        out = []
        for j in range(len(dims)):
            rs = [m[j] for m in leaves]
            lo, hi = np.empty(len(rs), object), np.empty(len(rs), object)
            lo[:] = [r.start if isinstance(r, dict) else r[0] for r in rs]
            hi[:] = [r.end if isinstance(r, dict) else r[1] for r in rs]
            out.append((lo, hi))
        return out


@dataclass
class _Delete:
    """A delete commit: cells written before ``timestamp`` that fail ``condition`` are deleted."""

    marker: str
    timestamp: int
    condition: object


#: the newest timestamp (ms) TileDB accepts; opening "at" it opens at the current time
_MAX_TS = 2**64 - 1
#: fragment names of this format version and later may overlap a sparse read's window partially
#: (consolidation with timestamps; constants::consolidation_with_timestamps_min_version)
_PARTIAL_OVERLAP_SINCE = 15


def read_window(timestamp) -> tuple[int, int]:
    """The inclusive (start, end) in ms that ``timestamp`` (None, an end, or a (start, end) pair, either
    part None) selects, as TileDB opens arrays for reading: an end of None or UINT64_MAX is the current
    time (Array::set_timestamps), so cells and deletes stamped in the future stay invisible."""
    start, end = (0, timestamp) if timestamp is None or np.isscalar(timestamp) else tuple(timestamp)
    start = 0 if start is None else start
    for name, value in (("start", start), ("end", end)):
        if value is not None and (not isinstance(value, (int, np.integer)) or not 0 <= value <= _MAX_TS):
            raise ValueError(f"timestamp: the {name} must be an int in [0, 2**64-1] (ms), not {value!r}")
    if end is None or end == _MAX_TS:
        end = time.time_ns() // 1_000_000
    return int(start), int(end)


def _overlaps(t1: int, t2: int, window, partial: bool) -> bool:
    """Whether ``[t1, t2]`` falls in ``window``: wholly, or with ``partial`` at all
    (ArrayDirectory::timestamps_overlap)."""
    if partial:
        return t1 <= window[1] and window[0] <= t2
    return window[0] <= t1 and t2 <= window[1]


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _listing(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _name_from_uri(uri: str) -> str:
    """The fragment or commit name of a vacuum/ignore/consolidated-commits line (absolute before v19)."""
    return uri.rstrip("/").rsplit("/", 1)[-1]


class Array:
    """An opened array: its schemas, committed fragments, delete commits, metadata and enumerations."""

    def __init__(self, path, key=None, timestamp=None):
        self.path = Path(path)
        self.key = normalize_key(key)
        #: the (start, end) window in ms the array is opened at (reads default to it)
        self.window = read_window(timestamp)
        self.schemas = self._schemas()
        self.schema = self.schemas[-1][1]
        self._by_name = dict(self.schemas)  # fragments name the schema they were written with (v10+)
        self.encrypted = self.schema["_generic_tile"].encryption_type != EncryptionType.NO_ENCRYPTION
        self.dims = schema_mod.dimensions(self.schema)
        self.attrs = schema_mod.attributes(self.schema)
        self._deletes: list[_Delete] = []
        self._vacuums: list[tuple] = []
        self._committed = self._fragments()

    @property
    def fragments(self) -> list[Fragment]:
        """The fragments a read at the opening window sees, in timestamp order."""
        return self.live_fragments(self.window)

    @property
    def deletes(self) -> list[_Delete]:
        """The delete commits a read at the opening window applies, in timestamp order."""
        return self.live_deletes(self.window)

    def live_fragments(self, window) -> list[Fragment]:
        """Committed fragments that a read of ``window`` sees (ArrayDirectory::filtered_fragment_uris):
        those inside it, or for sparse arrays, partly inside it when their name allows consolidation with
        timestamps; minus those listed in vacuum files that the same rule admits."""
        partial = self.schema.array_type != ArrayType.DENSE

        def seen(ts):
            return _overlaps(ts.t1, ts.t2, window,
                             partial and ts.version is not None and ts.version >= _PARTIAL_OVERLAP_SINCE)
        gone = {name for ts, names in self._vacuums if seen(ts) for name in names}
        return [f for f in self._committed if f.name not in gone and seen(parse_timestamped_name(f.name))]

    def live_deletes(self, window) -> list[_Delete]:
        """Delete commits wholly inside ``window``."""
        return [d for d in self._deletes if _overlaps(d.timestamp, d.timestamp, window, False)]

    # ----------------------------------------------------------------- discovery

    def _schemas(self):
        """(name, parsed schema) in TileDB's order: the legacy ``__array_schema.tdb``, then ``__schema/``
        files by name (a directory listing: by name, not by timestamp; DISCREPANCIES.md)."""
        legacy = self.path / "__array_schema.tdb"
        found = ([legacy] if legacy.is_file() else []) + [p for p in _listing(self.path / "__schema") if p.is_file()]
        if not found:
            raise FormatError(f"{self.path} is not a TileDB array: no array schema")
        return [(p.name, schema_mod.ArraySchema.parse(_read(p), key=self.key, filename=str(p))) for p in found]

    def _fragments(self) -> list[Fragment]:
        commit_dir = self.path / "__commits"
        committed, ignored = set(), set()
        deletes = {}
        for p in _listing(self.path) + _listing(commit_dir):
            suffix = p.suffix
            if suffix in (".ok", ".wrt"):
                committed.add(p.stem)
            elif suffix == ".vac" and p.parent.name != "__meta":
                self._vacuums.append((parse_timestamped_name(p.name),
                                      {_name_from_uri(u) for u in commits.VacuumFile.parse(_read(p)).uris}))
            elif suffix == ".ign":
                ignored.update(_name_from_uri(u) for u in commits.IgnoreFile.parse(_read(p)).uris)
            elif suffix == ".del":
                deletes[p.name] = commits.DeleteCommit.parse(_read(p), key=self.key, filename=str(p))
        for p in _listing(commit_dir):
            if p.suffix == ".con" and p.name not in ignored:
                for entry in commits.ConsolidatedCommits.parse(_read(p), key=self.key).entries:
                    name = _name_from_uri(entry.uri)
                    if name in ignored:
                        continue
                    if name.endswith(".wrt"):
                        committed.add(name[:-4])
                    elif name.endswith(".del"):
                        deletes.setdefault(name, entry.delete)
        self._deletes = sorted(
            (_Delete(f"__commits/{n}", parse_timestamped_name(n).t1, d.condition) for n, d in deletes.items()),
            key=lambda d: d.timestamp)
        folders = [p for p in _listing(self.path) if p.is_dir() and p.name not in _RESERVED]
        folders += [p for p in _listing(self.path / "__fragments") if p.is_dir()]
        footers = self._consolidated_footers()
        frags = []
        for folder in folders:
            ts = parse_timestamped_name(folder.name)
            meta_file = folder / "__fragment_metadata.tdb"
            # v1-4 have no commit markers: the metadata file is the commit
            if ts.version is not None and ts.version >= 5 and folder.name not in committed:
                continue
            if not meta_file.is_file():
                continue
            frags.append(self._fragment(folder, ts, footers))
        frags.sort(key=lambda f: (f.timestamp_range, f.name))
        return frags

    def _fragment(self, folder: Path, ts, footers: dict) -> Fragment:
        path = folder / "__fragment_metadata.tdb"
        data = _read(path)
        if folder.name in footers:  # the consolidated footer stands in for the file's own
            footer = footers[folder.name]
            meta = fragment_mod.FragmentMetadata(
                footer, schema=fragment_mod.pick_schema(self._by_name, footer.get("array_schema_name")),
                key=self.key, data=data)
        else:
            meta = fragment_mod.FragmentMetadata.parse(data, schema=self._by_name, key=self.key, name=folder.name,
                                                       filename=str(path))
        ned = [(r.start, r.end) if isinstance(r, dict) else tuple(np.asarray(r).tolist())
               for r in meta.non_empty_domain]
        return Fragment(folder.name, folder, meta.version, (ts.t1, ts.t2), ned, int(meta.cell_num), meta)

    def _consolidated_footers(self) -> dict:
        """Fragment name -> footer, from consolidated fragment metadata files (newest last, so it wins)."""
        files = [p for p in _listing(self.path) + _listing(self.path / "__fragment_meta") if p.suffix == ".meta"]
        files.sort(key=lambda p: (parse_timestamped_name(p.name).t1, p.name))
        out = {}
        for p in files:
            parsed = fragment_mod.ConsolidatedFragmentMetadata.parse(_read(p), schema=self._by_name, key=self.key,
                                                                    filename=str(p))
            out.update({_name_from_uri(f.name): footer for f, footer in zip(parsed.fragments, parsed.footers)})
        return out

    # ----------------------------------------------------------------- tiles

    def _tile(self, frag: Fragment, idx: int, kind: str, k: int, strings: bool = False, out=None):
        """Tile ``k`` of index-space field ``idx``'s ``kind`` file ("", "_var", "_validity"), unfiltered:
        bytes (into ``out`` if given), or with ``strings`` (var strings that carry their own offsets, §4.2)
        (data, offsets)."""
        info = frag.metadata.index_fields[idx]
        tile_offsets, file_size = frag.tile_offsets(kind, idx)
        start = int(tile_offsets[k])
        end = int(tile_offsets[k + 1]) if k + 1 < len(tile_offsets) else int(file_size)
        fixed, var, validity = fragment_mod.data_files(frag.metadata, idx)
        path = frag.path / {"": fixed, "_var": var, "_validity": validity}[kind]
        if kind == "_validity":
            pipeline, datatype, cell_size = frag.schema.cell_validity_filters, Datatype.UINT8, 1
        elif info.var and kind == "":
            pipeline, datatype, cell_size = frag.schema.cell_var_offsets_filters, Datatype.UINT64, 8
        else:
            pipeline, datatype = info.filters, info.datatype
            cell_size = datatype.size * (1 if info.var else info.cell_val_num)
        try:
            with path.open("rb") as f:
                f.seek(start)
                tile = read_tile(f.read(end - start), start)
            if strings:
                return unfilter_strings(tile, pipeline, datatype=datatype, version=frag.version, key=self.key,
                                        encrypted=self.encrypted)
            return unfilter(tile, pipeline, datatype=datatype, version=frag.version, cell_size=cell_size,
                            key=self.key, encrypted=self.encrypted, out=out)
        except FormatError as e:
            where = f"fragment {frag.name}, field {info.name}{kind}, tile {k} at byte offset {start} of {path.name}"
            raise type(e)(f"{where}: {e.reason}", file=str(path), path=e.path, offset=start + (e.offset or 0),
                          version=frag.version) from e

    def _cells(self, frag: Fragment, idx: int, k: int, cell_num: int | None = None):
        """(values, validity or None) of tile ``k`` of index-space field ``idx``; a fixed-size tile of a
        known ``cell_num`` cells is decoded straight into its result array."""
        info = frag.metadata.index_fields[idx]
        if info.var and skips_offsets(info.filters, info.datatype, frag.version):
            data, offsets = self._tile(frag, idx, "_var", k, strings=True)
            values = _split(bytes(data), np.asarray(offsets, _U64), info)
        elif info.var:
            offsets = np.frombuffer(self._tile(frag, idx, "", k), _U64)
            values = _split(bytes(self._tile(frag, idx, "_var", k)), offsets, info)
        elif cell_num is not None:
            values = np.empty(cell_num, _dtype(info))
            self._tile(frag, idx, "", k, out=values)
        else:
            values = np.frombuffer(self._tile(frag, idx, "", k), _dtype(info))
        valid = np.frombuffer(self._tile(frag, idx, "_validity", k), np.uint8) != 0 if info.nullable else None
        return values, valid

    def _field(self, frag: Fragment, idx: int, tiles, pool) -> tuple[np.ndarray, np.ndarray | None]:
        """Values (and validity) of index-space field ``idx`` over ``tiles`` of ``frag``, in tile order."""
        info = frag.metadata.index_fields[idx]
        parts = list(pool.map(lambda k: self._cells(frag, idx, k), tiles))
        if not parts:
            return np.empty(0, _result_dtype(info)), (np.empty(0, bool) if info.nullable else None)
        values = np.concatenate([p[0] for p in parts])
        valid = np.concatenate([p[1] for p in parts]) if info.nullable else None
        return values, valid

    def _coords(self, frag: Fragment, tiles, pool) -> list[np.ndarray]:
        """The coordinates of sparse tiles, one array per dimension: from v5 each dimension's own file, before
        from the shared __coords file."""
        if frag.version >= 5:
            return [self._field(frag, frag.index(d.name), tiles, pool)[0] for d in self.dims]
        ndim, idx = len(self.dims), frag.index("__coords")
        # v1 zips coordinates (x1 y1 x2 y2 ...) unless the coords pipeline compresses them
        zipped = frag.version == 1 and not any(
            f.type in _COMPRESSORS for f in frag.schema.coords_filters.filters)
        dtype = self.dims[0].datatype.numpy_dtype

        def one(k):
            cells = np.frombuffer(self._tile(frag, idx, "", k), dtype)
            return cells.reshape(-1, ndim).T if zipped else cells.reshape(ndim, -1)
        parts = list(pool.map(one, tiles))
        return [np.concatenate([p[j] for p in parts]) if parts else np.empty(0, dtype) for j in range(ndim)]

    # ----------------------------------------------------------------- reads

    def read(self, attrs=None, timestamp=None, order=None, ranges=None, threads=None) -> dict:
        """The array's cells as ``{name: numpy array}`` (TileDB-Py conventions).

        ``attrs``: attribute names (default all). ``timestamp``: read as of this time (ms), or a
        ``(start, end)`` range. ``order``: "C" row-major, "F" column-major, "G" global order, "U"
        unordered (dense reads default to "C" N-D arrays, sparse ones to "C"). ``ranges``:
        ``{dim: (lo, hi)}`` inclusive subarray. ``threads``: tile-decoding threads (default: one per core).

        The attributes are those of the schema in force at the end of the timestamp range (TileDB opens
        an array with it); fragments written with another schema lack some (read as fill values).
        """
        window = self.window if timestamp is None else read_window(timestamp)
        schema = self.schema_at(window[1])
        wanted = [a for a in schema_mod.attributes(schema) if attrs is None or a.name in attrs]
        if attrs is not None and len(wanted) != len(attrs):
            raise KeyError(f"no attribute(s) {sorted(set(attrs) - {a.name for a in wanted})}")
        layout = _ORDERS[order or "C"]
        frags = self.live_fragments(window)
        # one thread per core: more only contend for the GIL between the codecs' GIL-free stretches
        with ThreadPoolExecutor(threads or os.cpu_count()) as pool:
            if self.schema.array_type == ArrayType.DENSE:
                return self._read_dense(schema, frags, wanted, ranges or {}, layout, pool)
            return self._read_sparse(schema, frags, wanted, ranges or {}, layout, window, pool)

    def schema_at(self, timestamp: int):
        """The schema TileDB opens the array with at ``timestamp`` (ms): the last of :attr:`schemas` (legacy
        file aside) whose timestamp is at most ``timestamp``, else the first (select_latest_array_schema_uri)."""
        older = [s for name, s in self.schemas
                 if name != "__array_schema.tdb" and parse_timestamped_name(name).t2 <= timestamp]
        return older[-1] if older else self.schemas[0][1]

    def _box(self, schema, ranges):
        """Per dimension, the inclusive bounds read: ``ranges``, else the current domain (v22+) if the schema
        sets one, else the domain."""
        current = schema.get("current_domain")
        bounds = ([(r.start, r.end) for r in current.ndrectangle] if current is not None and not current.empty
                  else [dim.domain for dim in schema.domain.dimensions])
        lo, hi = [], []
        for d, r in zip(self.dims, bounds):
            r = ranges.get(d.name, r)
            lo.append(r[0])
            hi.append(r[1])
        return lo, hi

    def _read_dense(self, schema, frags, wanted, ranges, layout, pool):
        dom = self.schema.domain.dimensions
        dom_lo = [d.domain[0] for d in dom]
        extents = [d.tile_extent for d in dom]
        cell_num = int(np.prod(extents))
        cell_order = self.schema.cell_order
        lo, hi = self._box(schema, ranges)
        shape = tuple(int(b) - int(a) + 1 for a, b in zip(lo, hi))
        # a dense fragment holds every cell of its non-empty domain: one that covers the result leaves no fill
        covered = any(f.dense and _covers(f.non_empty_domain, lo, hi) for f in frags)
        attribute = {a.name: _attribute(schema, a.name) for a in wanted}
        out = {a.name: _filled(a, attribute[a.name], shape, empty=covered) for a in wanted}
        fills = {a.name: _filled(a, attribute[a.name], ()) for a in wanted}
        fill_valid = {a.name: bool(attribute[a.name].get("fill_value_validity")) for a in wanted if a.nullable}
        valid = {name: np.full(shape, v) for name, v in fill_valid.items()}

        def put(a, at, values, validity):
            out[a.name][at] = values
            if a.nullable:
                valid[a.name][at] = validity

        def place(frag, a, k, src, dst):
            idx = frag.index(a.name)
            if idx is None:  # an attribute added after the fragment was written: its cells read as fill
                return put(a, dst, fills[a.name], fill_valid.get(a.name))
            values, validity = self._cells(frag, idx, k, cell_num)
            put(a, dst, _order.as_tile(values, extents, cell_order)[src],
                _order.as_tile(validity, extents, cell_order)[src] if a.nullable else None)

        for frag in frags:  # in timestamp order: later fragments overwrite earlier ones
            if not frag.dense:
                continue
            ned = frag.non_empty_domain
            first, last = _order.tile_range(dom_lo, extents, [r[0] for r in ned], [r[1] for r in ned])
            jobs = []
            for k, tile in enumerate(_order.tiles_in_order(first, last, self.schema.tile_order)):
                t_lo, t_hi = _order.tile_box(dom_lo, extents, tile)
                b_lo = [max(a, int(n[0]), int(q)) for a, n, q in zip(t_lo, ned, lo)]
                b_hi = [min(b, int(n[1]), int(q)) for b, n, q in zip(t_hi, ned, hi)]
                if all(a <= b for a, b in zip(b_lo, b_hi)):
                    src = tuple(slice(a - t, b - t + 1) for a, b, t in zip(b_lo, b_hi, t_lo))
                    dst = tuple(slice(a - int(q), b - int(q) + 1) for a, b, q in zip(b_lo, b_hi, lo))
                    jobs += [(frag, a, k, src, dst) for a in wanted]
            # each tile is decoded and placed in a worker; tiles of one fragment never overlap
            list(pool.map(lambda job: place(*job), jobs))
        # Sparse fragments (unordered writes of old TileDB) go on top of every dense one, later over earlier,
        # except tiles whose MBR a later dense fragment covers (legacy Reader; DISCREPANCIES.md).
        box = {d.name: (a, b) for d, a, b in zip(self.dims, lo, hi)}
        for i, frag in enumerate(frags):
            if frag.dense:
                continue
            later = [f.non_empty_domain for f in frags[i + 1:] if f.dense]
            mbrs = frag.mbrs(self.dims)
            tiles = [k for k in self._sparse_tiles(frag, box)
                     if not any(_covers(ned, [m[0][k] for m in mbrs], [m[1][k] for m in mbrs]) for ned in later)]
            coords = self._coords(frag, tiles, pool)
            keep = np.logical_and.reduce([(c >= a) & (c <= b) for c, a, b in zip(coords, lo, hi)])
            at = tuple((c[keep] - a).astype(np.int64) for c, a in zip(coords, lo))
            for a in wanted:
                idx = frag.index(a.name)
                if idx is None:
                    put(a, at, fills[a.name], fill_valid.get(a.name))
                else:
                    values, validity = self._field(frag, idx, tiles, pool)
                    put(a, at, values[keep], validity[keep] if a.nullable else None)
        if layout == Layout.COL_MAJOR:
            out = {k: np.asfortranarray(v) for k, v in out.items()}
        return {k: _masked(v, valid.get(k)) for k, v in out.items()}

    def _read_sparse(self, schema, frags, wanted, ranges, layout, window, pool):
        names = [d.name for d in self.dims]
        deletes = self.live_deletes(window)
        need = {c.comparison.field_name for d in deletes for c in _leaves(d.condition)}
        fields = self.dims + [a for a in schema_mod.attributes(schema) if a in wanted or a.name in need]
        columns = {f.name: [] for f in fields}
        validity = {f.name: [] for f in fields if f.nullable}
        stamps, alives, order_in = [], [], []
        for fi, frag in enumerate(frags):
            tiles = self._sparse_tiles(frag, ranges)
            cols = dict(zip(names, self._coords(frag, tiles, pool)))
            for f in fields:  # dimensions first: an attribute the fragment lacks takes n fill values
                if f.name in cols:
                    continue
                idx = frag.index(f.name)
                if idx is None:
                    attribute = _attribute(schema, f.name)
                    cols[f.name] = np.repeat(_filled(f, attribute, (1,)), len(cols[names[0]]))
                    v = np.full(len(cols[names[0]]), bool(attribute.get("fill_value_validity")))
                else:
                    cols[f.name], v = self._field(frag, idx, tiles, pool)
                if f.nullable:
                    validity[f.name].append(v)
            n = len(cols[names[0]])
            keep = np.ones(n, bool)
            for d, col in zip(self.dims, (cols[x] for x in names)):
                if d.name in ranges:
                    r = ranges[d.name]
                    keep &= (col >= _like(r[0], col)) & (col <= _like(r[1], col))
            t = (self._field(frag, frag.index("__timestamps"), tiles, pool)[0].astype(np.int64)
                 if frag.has_timestamps else np.full(n, frag.timestamp_range[1], np.int64))
            keep &= (t >= window[0]) & (t <= window[1])
            # deletes apply after deduplication: a deleted newer cell still hides older ones
            alive = np.ones(n, bool)
            if frag.has_delete_meta:  # consolidation kept deleted cells, stamped with their delete time
                # (UINT64_MAX: never deleted; the window ends before it, read_window)
                alive &= self._field(frag, frag.index("__delete_timestamps"), tiles, pool)[0] > np.uint64(window[1])
            colvals = {k: v for k, v in cols.items() if v is not None}
            valids = {f.name: validity[f.name][-1] for f in fields if f.nullable}
            for d in deletes:  # SparseIndexReaderBase::apply_query_condition
                if d.timestamp < frag.timestamp_range[0] or d.marker in frag.processed_conditions:
                    continue
                kept = evaluate(d.condition, colvals, valids, n)  # the stored condition is negated
                # with cell timestamps, only cells written at or before the delete are hit
                alive &= kept | (t > d.timestamp) if frag.has_timestamps else kept
            for k, v in cols.items():
                columns[k].append(v[keep])
            for k in validity:
                validity[k][-1] = validity[k][-1][keep]
            stamps.append(t[keep])
            alives.append(alive[keep])
            order_in.append(np.full(int(keep.sum()), fi))
        sel = np.concatenate(alives) if alives else np.empty(0, bool)
        if not self.schema.allows_dups and len(sel):
            # the newest cell (timestamp, then fragment) of each coordinate wins
            stamp, frag_of = np.concatenate(stamps), np.concatenate(order_in)
            # coordinates are the same cell only if their bytes are: TileDB keeps -0.0 and 0.0 apart
            keys = [c.view(f"u{c.itemsize}") if c.dtype.kind == "f" else _order.ranks(c)
                    for c in (np.concatenate(columns[x]) for x in names)]
            perm = np.lexsort([-frag_of, -stamp] + keys[::-1])
            first = np.ones(len(perm), bool)
            first[1:] = np.any([k[perm][1:] != k[perm][:-1] for k in keys], axis=0)
            newest = np.zeros(len(perm), bool)
            newest[perm[first]] = True
            sel &= newest
        cat = {k: np.concatenate(v)[sel] if v else np.empty(0, _result_dtype(f))
               for f, (k, v) in zip(fields, columns.items())}
        valid = {k: np.concatenate(v)[sel] if v else np.empty(0, bool) for k, v in validity.items()}
        coords = [cat[x] for x in names]
        if layout != Layout.UNORDERED:
            # TileDB's global-order merge gives equal coordinates newest fragment first
            first = (np.argsort(-np.concatenate(order_in)[sel], kind="stable") if layout == Layout.GLOBAL_ORDER
                     and order_in else np.arange(len(coords[0])))
            perm = first[self._sort([c[first] for c in coords], layout)]
            cat = {k: v[perm] for k, v in cat.items()}
            valid = {k: v[perm] for k, v in valid.items()}
        if not len(coords[0]):
            cat = {f.name: _empty(f, cat[f.name]) for f in fields}
        out = {x: cat[x] for x in names}
        out.update({a.name: _masked(cat[a.name], valid.get(a.name)) for a in wanted})
        return out

    def _sort(self, coords, layout):
        dom = self.schema.domain.dimensions
        hilbert = (_order.hilbert_values(coords, [d.domain or None for d in dom])
                   if layout == Layout.GLOBAL_ORDER and self.schema.cell_order == Layout.HILBERT else None)
        return _order.order_cells(
            coords, layout, dom_lo=[d.domain[0] if d.domain else None for d in dom],
            extents=[d.tile_extent for d in dom],
            tile_order=self.schema.tile_order, cell_order=self.schema.cell_order, hilbert=hilbert)

    def _sparse_tiles(self, frag: Fragment, ranges) -> list[int]:
        """Tiles of a sparse fragment whose MBR meets ``ranges`` (all tiles without ranges)."""
        boxes = frag.mbrs(self.dims)
        keep = np.ones(len(boxes[0][0]) if boxes else 0, bool)
        for d, (lows, highs) in zip(self.dims, boxes):
            if d.name in ranges:
                lo, hi = (_like(r, lows) for r in ranges[d.name])
                keep &= (lows <= hi) & (highs >= lo)
        return [int(k) for k in np.flatnonzero(keep)]

    # ----------------------------------------------------------------- extras

    @property
    def metadata(self) -> dict:
        """Array metadata folded over its files: ``{key: value}`` (numpy values; str for strings)."""
        return {k: _metadata_value(e) for k, e in metadata_mod.read_metadata(self.path, key=self.key).items()}

    @property
    def enumerations(self) -> dict:
        """``{enumeration name: list of values}``; an enumerated attribute's cells are codes into these."""
        refs = self.schema.get("enumerations") or []
        folder = self.path / "__schema" / "__enumerations"
        return {r.name: enumeration_mod.enumeration_values(
                    enumeration_mod.Enumeration.parse(_read(folder / r.filename), key=self.key,
                                                      filename=str(folder / r.filename)))
                for r in refs}


def _metadata_value(entry):
    """Text as str, blobs as bytes, one number as a scalar, several as a numpy array."""
    datatype = Datatype(entry.datatype)
    raw = np.asarray(entry.value)
    if datatype.is_string or datatype == Datatype.CHAR:
        return raw.tobytes().decode("utf-8", "surrogateescape")
    if datatype in (Datatype.BLOB, Datatype.ANY):
        return raw.tobytes()
    return raw[0] if raw.size == 1 else raw


#: filter types that compress (v1 stores coordinates zipped unless one of these is in the coords pipeline)
_COMPRESSORS = {FilterType.GZIP, FilterType.ZSTD, FilterType.LZ4, FilterType.RLE, FilterType.BZIP2,
                FilterType.DOUBLE_DELTA, FilterType.DELTA}
def _covers(ned, lo, hi) -> bool:
    """Whether the non-empty domain ``ned`` ((lo, hi) per dimension) contains the box ``lo..hi``."""
    return all(int(n[0]) <= int(a) and int(b) <= int(n[1]) for n, a, b in zip(ned, lo, hi))


def _attribute(schema, name: str):
    return next(a for a in schema.attributes if a.name == name)


def _leaves(node):
    if node.expression is not None:
        for child in node.expression.children:
            yield from _leaves(child)
    else:
        yield node


def _dtype(info) -> np.dtype:
    base = info.datatype.numpy_dtype
    if info.cell_val_num == 1:
        return base
    if base.kind == "S":
        return np.dtype(f"S{info.cell_val_num}")
    return np.dtype(",".join([base.str] * info.cell_val_num))


def _result_dtype(info) -> np.dtype:
    return np.dtype(object) if info.var else _dtype(info)


def _empty(info, column: np.ndarray) -> np.ndarray:
    """An empty result column as TileDB-Py gives it: var strings as "S1" (UTF-8: "U1") rather than objects."""
    if len(column) or not info.var or info.datatype not in _STRINGS:
        return column
    return np.empty(0, "U1" if info.datatype == Datatype.STRING_UTF8 else "S1")


_STRINGS = {Datatype.STRING_ASCII, Datatype.STRING_UTF8, Datatype.CHAR, Datatype.BLOB}


def _split(data: bytes, offsets: np.ndarray, info) -> np.ndarray:
    """A var tile's cells as an object array: str for UTF-8, bytes for other strings, arrays otherwise."""
    ends = np.append(offsets[1:], np.uint64(len(data))).tolist()
    cells = [data[a:b] for a, b in zip(offsets.tolist(), ends)]
    out = np.empty(len(cells), object)
    if info.datatype == Datatype.STRING_UTF8:
        out[:] = [c.decode("utf-8", "surrogateescape") for c in cells]
    elif info.datatype == Datatype.STRING_ASCII:  # TileDB-Py reads ASCII through numpy "S": no trailing NULs
        out[:] = [c.rstrip(b"\0") for c in cells]
    elif info.datatype in (Datatype.CHAR, Datatype.BLOB, Datatype.ANY):
        out[:] = cells
    else:
        out[:] = [np.frombuffer(c, info.datatype.numpy_dtype) for c in cells]
    return out


def _like(value, column: np.ndarray):
    """A range bound as the kind of value ``column`` holds (bytes bounds for byte-string dimensions)."""
    if column.dtype == object and isinstance(value, str) and column.size and isinstance(column[0], bytes):
        return value.encode()
    return value


def _filled(info, attribute, shape, empty: bool = False) -> np.ndarray:
    """A dense result array of ``shape`` holding ``attribute``'s fill value (uninitialised if ``empty``)."""
    fill = schema_mod.fill_value(attribute)
    if info.var:
        data = bytes(fill) if fill is not None else _default_fill(info).tobytes()
        if info.datatype.is_string and data == b"\0":  # the default string fill, which TileDB-Py shows as ""
            data = b""
        out = np.empty(shape, object)
        out[...] = _split(data, np.zeros(1, _U64), info)[0]
        return out
    dtype = _dtype(info)
    if empty:
        return np.empty(shape, dtype)
    value = np.frombuffer(fill.tobytes(), dtype)[0] if fill is not None else _default_fill(info)
    return np.full(shape, value, dtype)


def _default_fill(info):
    """TileDB's default fill value of a datatype (before v6 schemas stored one): min of signed integers,
    max of unsigned ones, NaN for floats, 0x80 for characters."""
    dt = info.datatype.numpy_dtype
    if dt.kind == "f":
        return np.array(np.nan, dt)
    if dt.kind == "i" or dt.kind in "Mm":
        return np.array(np.iinfo(np.int64 if dt.kind in "Mm" else dt).min).astype(dt)
    if dt.kind == "u":
        return np.array(np.iinfo(dt).max, dt)
    return np.frombuffer(b"\x80" * dt.itemsize, dt)[0]


def _masked(values: np.ndarray, valid):
    return values if valid is None else np.ma.masked_array(values, mask=~valid)


def open_array(path, key=None, timestamp=None) -> Array:
    """Open the array at ``path`` (``key``: AES-256-GCM key of an encrypted array; ``timestamp``: the end,
    or (start, end), in ms, of what reads see by default, as ``tiledb.open``: the current time if None)."""
    return Array(path, key=key, timestamp=timestamp)
