"""A committed fragment: its name, timestamps and metadata (parsed on first use: footer, then sections), where its
tiles are, and the bounding rectangles of its sparse tiles (REFERENCE.md §11-§13)."""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import show
from ..errors import EncryptionError, FormatError, FormatWarning
from ..fields import ParseMemo
from ..show.notebook import fragment_html
from ..structs import consolidated as consolidated_mod
from ..structs import fragment as fragment_mod
from ..storage import LocalStorage
from ..structs.names import parse_timestamped_name
from ..layout.stdsort import std_sort
from .ranged import open_fragment_metadata

__all__ = ["Fragment", "load_fragments", "in_tiledb_order", "mbr_bounds", "field_index", "listed_tile_num"]

_KINDS = {"": ("tile_offsets", "file_sizes", 0), "_var": ("tile_var_offsets", "file_var_sizes", 1),
          "_validity": ("tile_validity_offsets", "file_validity_sizes", 2)}


class Fragment:
    """One committed fragment. Opening an array lists it; its metadata file is read and parsed only when a
    read, or one of the properties below, first needs it (TileDB too loads fragment metadata on demand)."""

    def __init__(self, name: str, path, timestamp_range: tuple[int, int], load):
        self.name, self.path, self.timestamp_range = name, path, timestamp_range
        self._load = load
        self._spans = {}  # (kind, field index) -> what tile_span needs of them

    @functools.cached_property
    def metadata(self):
        """The parsed fragment metadata (``structs.fragment.FragmentMetadata``), its cell count checked (which
        proves a dense fragment's tile grid) before anything uses it."""
        meta = self._load()
        int(meta.cell_num)
        return meta

    @functools.cached_property
    def version(self) -> int:  # asked for every tile a read decodes
        return self.metadata.version

    @functools.cached_property
    def non_empty_domain(self) -> list:
        """(lo, hi) per dimension."""
        return [(r.start, r.end) if isinstance(r, dict) else tuple(np.asarray(r).tolist())
                for r in self.metadata.non_empty_domain]

    @property
    def cell_num(self) -> int:
        return int(self.metadata.cell_num)

    def __repr__(self) -> str:
        return show.fragment_repr(self)

    def _repr_html_(self) -> str:
        return fragment_html(self)

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
        return self._positions.get(name)

    @functools.cached_property
    def _positions(self) -> dict:
        # the first field of a name wins, as a scan of index_fields would find it
        out = {}
        for i, f in enumerate(self.metadata.index_fields):
            out.setdefault(f.name, i)
        return out

    def tile_num(self) -> int:
        """Data tiles per field, as the metadata counts them."""
        return self._tile_num

    @functools.cached_property
    def _tile_num(self) -> int:
        return int(self.metadata.tile_num)

    def tile_span(self, kind: str, idx: int, k: int) -> tuple[str, int, int]:
        """(data file name, start, end) of tile ``k`` of index-space field ``idx``'s ``kind`` file ("", "_var",
        "_validity"); the end of the last tile is the file size the footer records."""
        spans = self._spans.get((kind, idx))
        if spans is None:  # a read asks once per tile: the offsets list and file name are looked up once
            spans = self._spans[kind, idx] = self._tile_offsets(kind, idx)
        file, offsets, sizes = spans
        if not 0 <= k < len(offsets):
            raise FormatError(f"tile {k} of field {idx} is past the {len(offsets)} tiles its {_KINDS[kind][0]} list")
        end = offsets[k + 1] if k + 1 < len(offsets) else sizes[idx]
        return file, int(offsets[k]), int(end)

    def _tile_offsets(self, kind: str, idx: int) -> tuple:
        """(data file name, tile offsets, the file sizes) of index-space field ``idx``'s ``kind`` file."""
        meta = self.metadata
        name, sizes, which = _KINDS[kind]
        per_field = meta.legacy[name] if meta.legacy is not None else getattr(meta, name)
        if per_field is None or idx >= len(per_field):
            raise FormatError(f"the fragment metadata has no {name} for field {idx}")
        offsets = per_field[idx].data if meta.legacy is not None else fragment_mod.read_section(meta, name, idx)
        return fragment_mod.data_files(meta, idx)[which], offsets, getattr(meta, sizes)

    def mbrs(self, dims) -> list[tuple]:
        """Per dimension, the (lows, highs) of every sparse tile's minimum bounding rectangle."""
        meta = self.metadata
        rtree = fragment_mod.read_section(meta, "rtree") if meta.legacy is None else None
        if meta.legacy is not None:
            leaves = meta.legacy.mbrs
        elif not rtree.levels:
            if meta.footer.sparse_tile_num:
                raise FormatError(f"the R-tree has no levels but the footer counts {meta.footer.sparse_tile_num} "
                                  "sparse tiles")
            leaves = []
        else:
            leaves = rtree.levels[-1].mbrs
        return mbr_bounds(leaves, dims)


def listed_tile_num(frag: Fragment) -> int:
    """:meth:`Fragment.tile_num`, but at most what the longest tile offsets list holds: loops and allocations
    are sized by a count bytes back, never by a lied one."""
    longest = 0
    for idx in range(len(frag.metadata.index_fields)):
        try:
            longest = max(longest, len(frag._tile_offsets("", idx)[1]))
        except FormatError:  # a field without offsets: the others still count
            pass
    return min(frag.tile_num(), longest)


def field_index(frag: Fragment, info) -> int | None:
    """:meth:`Fragment.index` of the field ``info`` (a FieldInfo of the schema a read uses). An attribute
    dropped and added back must keep what its tiles were written as: TileDB decodes an old fragment's tiles
    with the newest schema's attribute, and so reinterprets their bytes as the new type (DISCREPANCIES.md)
    and fails on a validity the old schema had not ("Trying to access tile validity offsets metadata that's
    not loaded"). Neither has a right answer; we raise. Added back not nullable, TileDB reads the old cells'
    values and drops their validity, and so do we."""
    idx = frag.index(info.name)
    if idx is None:
        return None
    old = frag.metadata.index_fields[idx]
    if (old.datatype, old.cell_val_num) != (info.datatype, info.cell_val_num):
        raise FormatError(f"fragment {frag.name}: attribute {info.name} was written as {_typed(old)} and the schema "
                          f"read with has {_typed(info)} (dropped and added back?); TileDB reads its bytes as the "
                          "new type", file=str(frag.path))
    if info.nullable and not old.nullable:
        raise FormatError(f"fragment {frag.name}: attribute {info.name} is nullable in the schema read with but "
                          "not in the one it was written with (dropped and added back?); TileDB cannot read it "
                          "either", file=str(frag.path))
    return idx


def _typed(info) -> str:
    """A field's type and values per cell, in words."""
    return f"{info.datatype.name}, " + ("var-sized" if info.var else f"{info.cell_val_num} per cell")


def mbr_bounds(mbrs, dims) -> list[tuple]:
    """Per dimension, the (lows, highs) of a list of MBRs as an R-tree level stores them (a numpy structured
    array for fixed-size dimensions, NDRectangles with a var-sized one, or v1-2 [lo, hi] pairs)."""
    if isinstance(mbrs, np.ndarray):
        return [(mbrs[d.name][:, 0], mbrs[d.name][:, 1]) for d in dims]
    out = []
    for j in range(len(dims)):
        rs = [m[j] for m in mbrs]
        lo, hi = np.empty(len(rs), object), np.empty(len(rs), object)
        lo[:] = [r.start if isinstance(r, dict) else r[0] for r in rs]
        hi[:] = [r.end if isinstance(r, dict) else r[1] for r in rs]
        out.append((lo, hi))
    return out


def load_fragments(storage, listing, schemas: dict, key=None, sources=None) -> list[Fragment]:
    """Every committed fragment of ``listing``, in TileDB's order, its metadata parsed with the schemas
    (``{file name: schema}``; ``sources``: the bytes of their files, in order, where known: a local
    fragment's parse is then kept for the next open, :data:`_PARSED`); a consolidated ``.meta`` footer
    stands in for the file's own."""
    footers = {}
    for p in listing.consolidated_metadata:  # oldest first, so the newest wins
        data = storage.read(p, what="consolidated fragment metadata")
        try:
            parsed = consolidated_mod.ConsolidatedFragmentMetadata.parse(data, schema=schemas, key=key,
                                                                         filename=str(p))
        except EncryptionError:
            raise
        except FormatError as e:
            # a .meta only copies footers that each fragment's own file holds: TileDB >= 2.8 writes v11 ones
            # at offsets 8 bytes off (DISCREPANCIES.md), which TileDB cannot open, and we read past
            warnings.warn(f"{e}; reading each fragment's own metadata file instead", FormatWarning, stacklevel=3)
            continue
        footers.update({f.name.rstrip("/").rsplit("/", 1)[-1]: footer
                        for f, footer in zip(parsed.fragments, parsed.footers)})
    tails = {}
    if not isinstance(storage, LocalStorage):  # an object store: fetch only the footers, all in one batch
        own = [e for e in listing.fragments if e.name not in footers]
        tails = dict(zip((e.name for e in own), open_fragment_metadata(
            storage, [(e.metadata_file, e.name) for e in own], schemas, key)))
    memo = (tuple(schemas), sources) if sources is not None and key is None else None
    frags = [_fragment(storage, entry, schemas, key, footers.get(entry.name), tails.get(entry.name), memo)
             for entry in listing.fragments]
    return in_tiledb_order(frags)


def in_tiledb_order(frags: list, listing=None) -> list:
    """``frags`` (in the listing's order, or put in ``listing``'s) as TileDB orders them: by first timestamp,
    with ``std::sort``, which decides which of two fragments with one first timestamp wins where they
    overlap."""
    firsts = [f.timestamp_range[0] for f in frags]
    if len(set(firsts)) == len(firsts):  # no ties: every sort agrees
        return sorted(frags, key=lambda f: f.timestamp_range[0])
    if listing is not None:
        rank = {e.name: i for i, e in enumerate(listing.fragments)}
        frags = sorted(frags, key=lambda f: rank[f.name])
    return std_sort(frags, key=lambda f: f.timestamp_range[0])


#: fragment metadata parsed from local files, kept by the file's bytes, the fragment's name and the names and
#: bytes of the array's schema files (all a parse depends on, without a key): a process opens the same arrays
#: again and again, and each open parsed each footer (0.3 ms of construct) and, at its first read, the tile
#: offsets and MBRs it needs. Shared, not copied: nothing edits one once parsed (its sections are parsed
#: into it as reads first need them). At most 256 files of at most 64 KiB.
_PARSED = ParseMemo(fragment_mod.FragmentMetadata, size=256, largest=64 << 10, copy=lambda fm: fm)


def _fragment(storage, entry, schemas, key, footer, meta=None, memo=None) -> Fragment:
    ts = parse_timestamped_name(entry.name)
    if meta is not None:
        return Fragment(entry.name, entry.folder, (ts.t1, ts.t2), lambda: meta)

    def load():  # the listing proved the file exists; it is read (locally, whole) when first needed
        if isinstance(storage, LocalStorage):
            data = storage.read(entry.metadata_file, what="fragment metadata file")
        else:  # sections are fetched when a read first needs them
            data = storage.view(entry.metadata_file, what="fragment metadata file")
        if footer is not None:
            return fragment_mod.FragmentMetadata(
                footer, schema=fragment_mod.pick_schema(schemas, footer.get("array_schema_name")), key=key, data=data)
        return _parsed(data, schemas, key, entry, memo)
    return Fragment(entry.name, entry.folder, (ts.t1, ts.t2), load)


def _parsed(data, schemas, key, entry, memo):
    """``entry``'s metadata parsed from ``data``, through :data:`_PARSED` where ``memo`` (the schema files'
    names and bytes) is known and the whole file is at hand."""
    parse = fragment_mod.FragmentMetadata.parse if memo is None or not isinstance(data, bytes) else \
        functools.partial(_PARSED.parse, context=(entry.name, *memo))
    return parse(data, schema=schemas, key=key, name=entry.name, filename=str(entry.metadata_file))
