"""``salvage``: copy every cell of a broken array that can still be read into a new array, and say exactly what
was lost (fragment, field, tile, cells).

The source is only read. :func:`~tdbformat.check.validate.validate` runs first and its findings go into the report;
then each fragment is loaded on its own (one whose metadata or schema is broken is lost whole) and rewritten
with the writer at its own timestamp, into an array created with the same schema and format version:

- a dense fragment is read whole through the read path; if that fails, tile by tile, each readable tile
  (clipped to the non-empty domain) becomes its own fragment at the fragment's timestamp;
- a sparse fragment is read tile by tile (``array.tiles.Tiles``); a tile any field of which fails to decode
  is dropped, and where the schema forbids duplicates, every later copy of a coordinate is dropped.

The writer recomputes tile statistics, offsets and counts, so metadata that lies about them loses nothing.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from construct import Container

from .. import layout
from ..array import Array
from ..array.cells import filled
from ..write.create import create
from ..array.fragment import field_index, listed_tile_num, load_fragments
from ..array.tiles import Tiles
from ..array import order
from ..write.writer import write
from ..enums import ArrayType, EncryptionType
from ..errors import FormatError, located
from ..filters.encryption import normalize_key
from ..storage import storage_for
from ..structs.array_schema import attributes, dimensions
from ..structs.commits import DeleteCommit
from ..structs.enumeration import Enumeration
from ..structs.metadata import ArrayMetadata
from .validate import validate
from ..versions import FEATURES

__all__ = ["Loss", "SalvageReport", "salvage"]


@dataclass
class Loss:
    """Cells that could not be copied, and why. ``fragment`` None: the array itself (nothing was readable) or
    its metadata; ``tile`` None: the whole fragment; ``cells``: inclusive (first, last) positions in the
    fragment's tile order; ``box``: inclusive (lo, hi) per dimension holding them."""

    fragment: str | None
    reason: str
    field: str | None = None
    tile: int | None = None
    cells: tuple | None = None
    box: list | None = None
    count: int | None = None

    def __str__(self) -> str:
        what = ("array metadata" if self.fragment is None and self.field == "__meta" else
                "the whole array" if self.fragment is None else f"fragment {self.fragment}")
        if self.tile is not None:
            what += f", tile {self.tile}"
        if self.field:
            what += f", field {self.field}" if self.fragment is not None else ""
        if self.cells is not None:
            what += f", cells {self.cells[0]}-{self.cells[1]}"
        if self.box is not None:
            what += ", box " + " x ".join(f"[{lo}, {hi}]" for lo, hi in self.box)
        count = "" if self.count is None else f" ({self.count} cells)"
        return f"lost: {what}{count}: {self.reason}"

    def to_json(self) -> dict:
        from ..show import jsonable

        return {k: jsonable(v) for k, v in dataclasses.asdict(self).items()}


@dataclass
class SalvageReport:
    """What :func:`salvage` did: ``fragments`` maps each source fragment to the ones written for it."""

    src: str
    dst: str
    findings: list = field(default_factory=list)
    lost: list = field(default_factory=list)
    fragments: dict = field(default_factory=dict)
    #: every live array metadata file was readable, and copied
    metadata_copied: bool = False

    @property
    def complete(self) -> bool:
        """Nothing was lost."""
        return not self.lost

    def __str__(self) -> str:
        written = sum(len(x) for x in self.fragments.values())
        lines = [f"salvaged {self.src} into {self.dst}: {len(self.fragments)} fragment(s) copied as {written}, "
                 f"{len(self.lost)} loss(es)"]
        lines += [f"  {f}" for f in self.findings]
        lines += [f"  {loss}" for loss in self.lost]
        return "\n".join(lines)

    def to_json(self) -> dict:
        """The body of ``tdbformat salvage --json`` (docs/json-schema/salvage.v1.json; the envelope adds SRC)."""
        return {"dst": self.dst, "complete": self.complete,
                "findings": [f.to_json() for f in self.findings], "lost": [x.to_json() for x in self.lost],
                "fragments": self.fragments, "metadata_copied": self.metadata_copied}


class _Source(Array):
    """The source array with each fragment loaded on its own (a broken one is a loss, not a failure to open:
    ``Array.__init__`` loads them all at once), and reads that see only :attr:`only`."""

    def __init__(self, path, key, lost: list):
        self.storage, self.path = storage_for(path)
        self.key, self.window, self.only = key, (0, np.iinfo(np.int64).max), None
        self.schemas = layout.load_schemas(self.storage, self.path, self.key)
        self.schema = self.schemas[-1][1]
        self.encrypted = self.schema["_generic_tile"].encryption_type != EncryptionType.NO_ENCRYPTION
        self.dims, self.attrs = dimensions(self.schema), attributes(self.schema)
        self.tiles = Tiles(self.storage, self.key, self.encrypted)
        self._listing = layout.Listing.of(self.storage, self.path, self.key)
        self._committed = []
        for entry in self._listing.fragments:
            try:
                frags = load_fragments(self.storage, dataclasses.replace(self._listing, fragments=[entry]),
                                       dict(self.schemas), self.key)
                for f in frags:  # metadata is parsed on first use: use it now, so a broken one is a loss here
                    f.metadata
                self._committed += frags
            except FormatError as e:
                err = located(e, file=str(entry.metadata_file))
                lost.append(Loss(entry.name, f"its metadata cannot be read: {err}"))
        self._committed.sort(key=lambda f: (f.timestamp_range, f.name))

    def live_fragments(self, window):
        return [] if self.only is None else [self.only]


def _box(ned, lo, hi) -> list:
    return [(max(int(n[0]), int(a)), min(int(n[1]), int(b))) for n, a, b in zip(ned, lo, hi)]


def _failing(arr, ranges) -> str:
    """The attributes whose read of ``ranges`` fails (the read names only the first tile that failed)."""
    bad = []
    for a in arr.attrs:
        try:
            arr.read(attrs=[a.name], ranges=ranges)
        except FormatError:
            bad.append(a.name)
    return ", ".join(bad) or None


def _dense(arr, frag, dst, key, lost) -> list:
    """``frag`` rewritten whole, else tile by tile: the names of the fragments written."""
    ned, t = frag.non_empty_domain, frag.timestamp_range[1]
    names = [d.name for d in arr.dims]
    arr.only = frag
    try:
        data = arr.read(ranges=dict(zip(names, ned)))
    except FormatError:
        data = None  # some tile is broken: find which, tile by tile
    if data is not None:
        return [write(dst, data, subarray=[tuple(int(x) for x in r) for r in ned], timestamp=t, key=key)]
    tile_order = arr.schema.tile_order
    dom_lo, extents = order.tile_grid(arr.schema.domain.dimensions)
    first, last = order.tile_range(dom_lo, extents, [r[0] for r in ned], [r[1] for r in ned])
    counts = [b - a + 1 for a, b in zip(first, last)]
    written = []
    for tile in order.tiles_in_order(first, last, tile_order):
        k = order.tile_position(tile, first, counts, tile_order)
        box = _box(ned, *order.tile_box(dom_lo, extents, tile))
        ranges = dict(zip(names, box))
        try:
            data = arr.read(ranges=ranges)
        except FormatError as e:
            lost.append(Loss(frag.name, str(e), field=_failing(arr, ranges), tile=k, box=box,
                             count=int(np.prod([b - a + 1 for a, b in box]))))
            continue
        written.append(write(dst, data, subarray=box, timestamp=t, key=key))
    return written


def _sparse_tile(arr, frag, k, pool):
    """(coordinates, values, validity, timestamps, alive) of tile ``k`` of a sparse fragment: attributes the
    fragment lacks (the schema evolved after it) take their fill values, as a read gives them; each cell's
    timestamp is its own (consolidated with timestamps) or the fragment's; cells a consolidation kept with a
    delete time (``__delete_timestamps``) are not alive, as a read now sees them."""
    coords = arr.tiles.coords(frag, arr.dims, [k], pool)
    n = len(coords[0])
    values, valid = {}, {}
    for a in arr.attrs:
        idx = field_index(frag, a)
        if idx is None:
            attribute = next(x for x in arr.schema.attributes if x.name == a.name)
            values[a.name] = np.repeat(filled(a, attribute, (1,)), n)
            v = np.full(n, bool(attribute.get("fill_value_validity")))
        else:
            values[a.name], v = arr.tiles.field(frag, idx, [k], pool)
        if len(values[a.name]) != n:
            raise FormatError(f"fragment {frag.name}, field {a.name}, tile {k}: {len(values[a.name])} cells, but "
                              f"the tile has {n} coordinates", file=str(frag.path))
        if a.nullable:
            valid[a.name] = v
    stamps = (arr.tiles.field(frag, frag.index("__timestamps"), [k], pool)[0].astype(np.int64)
              if frag.has_timestamps else np.full(n, frag.timestamp_range[1], np.int64))
    alive = (arr.tiles.field(frag, frag.index("__delete_timestamps"), [k], pool)[0] == np.uint64(2**64 - 1)
             if frag.has_delete_meta else np.ones(n, bool))
    return coords, values, valid, stamps, alive


def _failing_fields(arr, frag, k, pool) -> str | None:
    """The fields :func:`_sparse_tile` reads (dimensions, attributes, timestamps) whose tile ``k`` fails to
    decode."""
    coords = [d.name for d in arr.dims] if FEATURES["coordinates_per_dimension"](frag.version) else ["__coords"]
    names = coords + [a.name for a in arr.attrs] + ["__timestamps"] * frag.has_timestamps + \
        ["__delete_timestamps"] * frag.has_delete_meta
    bad = []
    for name in names:
        try:
            if frag.index(name) is not None:
                arr.tiles.field(frag, frag.index(name), [k], pool)
        except FormatError:
            bad.append(name)
    return ", ".join(bad) or None


def _sparse(arr, frag, dst, key, lost, pool) -> list:
    """``frag``'s readable tiles rewritten, one fragment per cell timestamp (one, unless consolidated with
    timestamps): the names of the fragments written."""
    capacity, parts = int(arr.schema.capacity), []
    listed = listed_tile_num(frag)
    for k in range(listed):
        cells = (k * capacity, min(frag.cell_num, (k + 1) * capacity) - 1)
        try:
            part = _sparse_tile(arr, frag, k, pool)
        except FormatError as e:
            try:
                box = [(lo[k], hi[k]) for lo, hi in frag.mbrs(arr.dims)]
            except (FormatError, IndexError):
                box = None
            lost.append(Loss(frag.name, str(e), field=_failing_fields(arr, frag, k, pool), tile=k, cells=cells,
                             box=box, count=cells[1] - cells[0] + 1))
            continue
        parts.append(part + (np.full(len(part[0][0]), k, np.int64), np.arange(len(part[0][0]))))  # (tile, place)
    if frag.tile_num() > listed:  # a count no offsets list backs (a lie): lost in one piece, not tile by tile
        first = listed * capacity
        lost.append(Loss(frag.name, f"the fragment metadata counts {frag.tile_num()} tiles, its tile offsets "
                                    f"lists at most {listed}", tile=listed, cells=(first, frag.cell_num - 1),
                         count=max(0, frag.cell_num - first)))
    if not parts:
        return []
    coords = [np.concatenate([p[0][j] for p in parts]) for j in range(len(arr.dims))]
    values = {a.name: np.concatenate([p[1][a.name] for p in parts]) for a in arr.attrs}
    valid = {a.name: np.concatenate([p[2][a.name] for p in parts]) for a in arr.attrs if a.nullable}
    stamps, alive, tiles, places = (np.concatenate([p[i] for p in parts]) for i in (3, 4, 5, 6))
    # a coordinate may repeat only as versions of a cell (timestamps), unless the schema allows duplicates
    keep = alive & (_first_copies(coords + [stamps], alive) if not arr.schema.allows_dups else True)
    for i in np.flatnonzero(alive & ~keep):
        at = int(tiles[i]) * capacity + int(places[i])  # (Python ints: a lying capacity may pass 2**63)
        lost.append(Loss(frag.name, "a later copy of coordinates the fragment already holds; the schema forbids "
                                    "duplicates", tile=int(tiles[i]), cells=(at, at), box=[(c[i], c[i]) for c in coords],
                         count=1))
    written = []
    for t in np.unique(stamps[keep]):
        sel = keep & (stamps == t)
        written.append(write(dst, {n: v[sel] for n, v in values.items()}, coords=[c[sel] for c in coords],
                             validity={n: v[sel] for n, v in valid.items()} or None, timestamp=int(t), key=key))
    return written


def _first_copies(keys, among) -> np.ndarray:
    """True at the first of the cells ``among`` (a mask) with each distinct tuple of ``keys`` (columns)."""
    ranked = np.stack([order.ranks(c[among]) for c in keys], axis=1)
    first = np.zeros(int(among.sum()), bool)
    first[np.unique(ranked, axis=0, return_index=True)[1]] = True
    out = np.zeros(len(among), bool)
    out[among] = first
    return out


def _copy_deletes(arr, dst, key) -> None:
    """The delete (and update: TileDB reads them as deletes) conditions of the source, as ``.del`` commits of
    ``dst`` under their own timestamped names."""
    d_storage, d_root = storage_for(dst)
    for d in arr._listing.deletes:
        name = d.marker.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        data = DeleteCommit.build(Container(condition=d.condition), version=arr.schema.version, key=key)
        d_storage.commit(layout.delete_commit_path(d_storage, d_root, name), data)


def _copy_enumerations(arr, dst, lost) -> None:
    """Each enumeration file the schema names, copied byte for byte once it parses."""
    d_storage, d_root = storage_for(dst)
    for r in arr.schema.get("enumerations") or []:
        p = layout.enumeration_path(arr.storage, arr.path, r.filename)
        try:
            data = arr.storage.read(p, what="enumeration file")
            Enumeration.parse(data, key=arr.key, filename=str(p))
        except FormatError as e:
            lost.append(Loss(None, f"enumeration {r.name} cannot be read (TileDB cannot open the copy): {e}",
                             field="__enumerations"))
            continue
        target = layout.enumeration_path(d_storage, d_root, r.filename)
        d_storage.makedirs(d_storage.join(d_root, layout.SCHEMA_DIR, layout.ENUMERATIONS_DIR))
        d_storage.commit(target, data)


def _uncommitted(findings) -> list:
    return [Loss(str(f.file).replace("\\", "/").rstrip("/").rsplit("/", 1)[-1],
                 "the fragment is not committed, so TileDB does not read it; it is not copied")
            for f in findings if f.rule == "uncommitted"]


def _copy_metadata(arr, dst, lost) -> bool:
    """Each live array metadata file that parses, copied byte for byte under its own name (its entries, types
    and timestamp as they are); True if all were."""
    storage = arr.storage
    d_storage, d_root = storage_for(dst)
    whole = True
    for p in layout.metadata_files(storage, storage.join(arr.path, layout.META_DIR)):
        try:
            data = storage.read(p, what="metadata file")
            ArrayMetadata.parse(data, key=arr.key, filename=str(p))
        except FormatError as e:
            lost.append(Loss(None, f"an array metadata file cannot be read: {e}", field="__meta"))
            whole = False
            continue
        d_storage.makedirs(d_storage.join(d_root, layout.META_DIR))
        d_storage.commit(layout.metadata_path(d_storage, d_root, storage.name(p)), data)
    return whole


def _check_paths(src, dst):
    (s_storage, s_root), (d_storage, d_root) = storage_for(src), storage_for(dst)
    if layout.is_group(s_storage, s_root):
        raise ValueError(f"src: {src} is a group; salvage its member arrays one by one")
    if str(s_root).rstrip("/") == str(d_root).rstrip("/"):
        raise ValueError("dst: the copy must go to another path than src")
    if d_storage.is_file(d_root) or d_storage.is_dir(d_root) and d_storage.list(d_root):
        raise ValueError(f"dst: {dst} exists and is not empty")


def salvage(src, dst, key=None) -> SalvageReport:
    """Copy every cell of the array at ``src`` that can still be read into a new array at ``dst`` (same schema
    and format version, ``key``: of an encrypted array), each fragment at its own timestamp, and the array
    metadata; ``src`` is only read. The report holds validate's findings and every :class:`Loss`."""
    key = normalize_key(key)
    _check_paths(src, dst)
    report = SalvageReport(str(src), str(dst), findings=validate(src, key=key))
    try:
        arr = _Source(src, key, report.lost)
    except FormatError as e:
        report.lost.insert(0, Loss(None, f"the array cannot be opened, so nothing was copied: {e}"))
        return report
    report.lost += _uncommitted(report.findings)
    create(dst, arr.schema, arr.schema.version, key)
    _copy_enumerations(arr, dst, report.lost)
    with ThreadPoolExecutor(1) as pool:
        for frag in arr._committed:
            if not frag.dense and arr.schema.array_type == ArrayType.DENSE:  # TileDB 1.x wrote these
                report.lost.append(Loss(frag.name, "a sparse fragment of a dense array: the writer writes dense "
                                                   "arrays by subarray only", count=frag.cell_num))
                continue
            report.fragments[frag.name] = _dense(arr, frag, dst, key, report.lost) if frag.dense else \
                _sparse(arr, frag, dst, key, report.lost, pool)
    _copy_deletes(arr, dst, key)
    report.metadata_copied = _copy_metadata(arr, dst, report.lost)
    return report
