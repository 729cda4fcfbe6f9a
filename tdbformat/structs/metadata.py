"""Array and group metadata files (metadata.md; REFERENCE.md §10), format v4 and later.

Each ``__meta/__<t1>_<t2>_<uuid>`` is one generic tile of entries back to back (no count): a put
(key, datatype, values) or a deletion of a key. A consolidated file has ``t1 < t2``; ``.vac`` files in
``__meta`` list the files a consolidation replaced.

:func:`fold_metadata` gives the metadata a user sees, the way TileDB loads it (array_directory.cc
``load_array_meta_uris``, ``compute_uris_to_vacuum``/``compute_filtered_uris``): files listed in any
``.vac`` are skipped whether or not they were vacuumed yet, the rest are applied in order of their first
timestamp, and later entries override earlier ones.
"""

from __future__ import annotations

from pathlib import Path

from construct import Flag, If, Int32ul, Rebuild, this

from ..enums import Datatype, DatatypeEnum
from ..fields import RepeatToEnd, Section, Struct, text_field
from ..numpy_array import NumpyArray
from .commits import VacuumFile
from .generic_tile import generic_tile
from .names import parse_timestamped_name

__all__ = ["ArrayMetadata", "MetadataEntry", "fold_metadata", "loaded_files", "read_metadata"]

# Metadata entry (metadata.md; REFERENCE.md §10)
MetadataEntry = Struct(
    *text_field("key", Int32ul, "metadata key"),
    "deleted" / Flag * "the spec's `del`: 1 = this entry deletes the key",
    "datatype" / If(lambda ctx: not ctx.deleted, DatatypeEnum) * "datatype of the values (puts only)",
    "value_num" / If(lambda ctx: not ctx.deleted, Rebuild(Int32ul, lambda ctx: len(ctx.value)))
    * "number of values (not bytes; puts only)",
    "value" / If(lambda ctx: not ctx.deleted, NumpyArray(this.value_num, lambda ctx: Datatype(ctx.datatype).numpy_dtype))
    * "the values as a numpy array of the datatype (puts only)",
)

#: A whole metadata file (a generic tile), of an array or of a group.
ArrayMetadata = Section("Metadata", "metadata.md", generic_tile(Struct(
    "entries" / RepeatToEnd(MetadataEntry) * "entries until the end of the payload",
)), since=4)


def loaded_files(meta_dir) -> list[Path]:
    """The timestamped files of a ``__meta`` (or ``__group``) folder that TileDB loads, in the order it
    applies them."""
    meta_dir = Path(meta_dir)
    if not meta_dir.is_dir():
        return []
    names = sorted(p.name for p in meta_dir.iterdir() if p.is_file())
    replaced = {uri.rstrip("/").rsplit("/", 1)[-1]
                for name in names if name.endswith(".vac")
                for uri in VacuumFile.parse((meta_dir / name).read_bytes()).uris}
    loaded = [n for n in names if "." not in n and n not in replaced]  # skips .vac and partial .tmp files
    # TileDB sorts by the first timestamp only; ties are broken here by name, to be deterministic.
    loaded.sort(key=lambda n: (parse_timestamped_name(n).t1, n))
    return [meta_dir / n for n in loaded]


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


def read_metadata(folder, key=None) -> dict:
    """The metadata of the array or group at ``folder``: ``{key: entry}`` with ``entry.datatype`` and
    ``entry.value`` (numpy)."""
    files = loaded_files(Path(folder) / "__meta")
    return fold_metadata([(p.name, ArrayMetadata.parse(p.read_bytes(), key=key, filename=str(p)).entries)
                          for p in files])
