"""Array and group metadata files (metadata.md; REFERENCE.md §10), format v4 and later.

Each ``__meta/__<t1>_<t2>_<uuid>`` is one generic tile of entries back to back (no count): a put
(key, datatype, values) or a deletion of a key. A consolidated file has ``t1 < t2``; ``.vac`` files in
``__meta`` list the files a consolidation replaced.

:func:`fold_metadata` gives the metadata a user sees from the files TileDB loads, in the order it applies
them (:func:`tdbformat.layout.metadata_files` finds those): later entries override earlier ones.
"""

from __future__ import annotations

from construct import Flag, If, Int32ul, Rebuild, this

from ..enums import Datatype, DatatypeEnum
from ..fields import RepeatToEnd, Section, Struct, rule, text_field
from ..numpy_array import NumpyArray
from .generic_tile import generic_tile

__all__ = ["ArrayMetadata", "MetadataEntry", "fold_metadata"]

_put = rule("deleted is 0")(lambda ctx: not ctx.deleted)

# Metadata entry (metadata.md; REFERENCE.md §10)
MetadataEntry = Struct(
    *text_field("key", Int32ul, "metadata key"),
    "deleted" / Flag * "the spec's `del`: 1 = this entry deletes the key",
    "datatype" / If(_put, DatatypeEnum) * "datatype of the values (puts only)",
    "value_num" / If(_put, Rebuild(Int32ul, lambda ctx: len(ctx.value)))
    * "number of values (not bytes; puts only)",
    "value" / If(_put, NumpyArray(this.value_num, rule("the entry's datatype")(
        lambda ctx: Datatype(ctx.datatype).numpy_dtype)))
    * "the values as a numpy array of the datatype (puts only)",
)

#: A whole metadata file (a generic tile), of an array or of a group.
ArrayMetadata = Section("Metadata", "metadata.md", generic_tile(Struct(
    "entries" / RepeatToEnd(MetadataEntry) * "entries until the end of the payload",
)), since=4)


def fold_metadata(files_entries) -> dict:
    """Apply ``[(name, entries), ...]`` (already in load order) into ``{key: entry}``, deletions applied."""
    out = {}
    for _name, entries in files_entries:
        for entry in entries:
            if entry.deleted:
                out.pop(entry.key, None)
            else:
                out[entry.key] = entry
    return out
