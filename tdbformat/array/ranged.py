"""Opening fragments by their footers alone: the tail of each ``__fragment_metadata.tdb``, fetched in one
batch of concurrent ranged reads (REFERENCE.md §12.1), instead of every metadata file whole.

The footer sits at the end of the file: from v10 (and v5-9 with a var-sized dimension) a u64 footer length
is its last 8 bytes, and before that its size follows from the schema (:func:`structs.footer.find_footer`
knows both). One read of the last :data:`TAIL` bytes holds the footer of any array but one with huge var
non-empty domains; a longer footer with a stored length costs one more ranged read, and a fragment whose
name carries no version (v1-4, where the whole file may be one legacy generic tile) is read whole as
before. The sections (tile offsets, R-tree, mins and maxes) stay behind a :class:`storage.FileView` and
are fetched when a read first needs them.
"""

from __future__ import annotations

from .. import layout
from ..errors import FormatError
from ..storage import FileView, LocalStorage
from ..structs import fragment as fragment_mod
from ..structs.names import parse_timestamped_name

__all__ = ["TAIL", "open_fragment_metadata", "listing_and_tails"]

#: bytes fetched from the end of each metadata file: a footer of a few dimensions and fields is < 1 KiB
TAIL = 64 << 10
_WHAT = "fragment metadata file"


def open_fragment_metadata(storage, entries, schemas: dict, key=None) -> list:
    """A :class:`structs.fragment.FragmentMetadata` per ``(metadata file path, fragment folder name)`` of
    ``entries``, each parsed from its file's tail; the tails are fetched together by
    :meth:`storage.Storage.read_many` (one concurrent batch on an object store)."""
    ranges = []
    for path, _ in entries:
        size = storage.size_of(path, _WHAT)
        ranges.append((path, max(0, size - TAIL), size))
    tails = storage.read_many(ranges, _WHAT)
    return [_from_tail(storage, path, name, schemas, key, start, tail)
            for (path, name), (_, start, _), tail in zip(entries, ranges, tails)]


def listing_and_tails(storage, root, key=None):
    """On an object store, inside a snapshot: the array's :class:`layout.Listing`, with its schema files,
    its array metadata files and every fragment metadata file's tail fetched in one concurrent round (kept
    by the storage for the open's reads: a round apiece was a third of an open; the metadata took two
    more, a listing and the files). None on a local disk, or where no schema is (the open then fails as it
    does without this)."""
    if isinstance(storage, LocalStorage) or not (schemas := layout.schema_files(storage, root)):
        return None
    listing = layout.Listing.of(storage, root, key)
    meta = storage.join(root, layout.META_DIR)
    files = schemas + [p for p in (storage.join(meta, n) for n in storage.list(meta)) if not storage.is_dir(p)]
    ranges = [(p, 0, storage.size_of(p, "array schema" if p in schemas else "metadata file")) for p in files]
    for entry in listing.fragments:
        size = storage.size_of(entry.metadata_file, _WHAT)
        ranges.append((entry.metadata_file, max(0, size - TAIL), size))
    storage.keep(ranges)
    return listing


def _from_tail(storage, path, name, schemas, key, start: int, tail: bytes):
    version = parse_timestamped_name(name).version
    view = FileView(storage, path, _WHAT, segments=[(start, tail)])
    if start == 0 or version is None:  # the whole file is here, or it may be a v1-2 legacy tile
        return fragment_mod.FragmentMetadata.parse(bytes(view), schema=schemas, key=key, name=name,
                                                   filename=str(path))
    try:
        offset, size, _ = fragment_mod.find_footer(tail, schemas, version, name)
    except FormatError:
        stored = int.from_bytes(tail[-8:], "little")  # a u64 footer length longer than the tail: fetch it all
        if len(tail) < 8 or not len(tail) - 8 < stored <= len(view) - 8:
            return fragment_mod.FragmentMetadata.parse(bytes(view), schema=schemas, key=key, name=name,
                                                       filename=str(path))
        start = len(view) - 8 - stored
        tail = view[start:len(view)]
        offset, size, _ = fragment_mod.find_footer(tail, schemas, version, name)
    footer = fragment_mod.Footer.parse(tail[offset:offset + size], schema=schemas, filename=str(path))
    schema = fragment_mod.pick_schema(schemas, footer.get("array_schema_name"))
    meta = fragment_mod.FragmentMetadata(footer, schema=schema, key=key, data=view)
    meta.footer_offset = start + offset
    return meta
