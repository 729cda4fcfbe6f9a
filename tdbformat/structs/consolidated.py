"""Consolidated fragment metadata: a ``.meta`` file holds the footers of many fragments, each following its
own format version (consolidated_fragment_metadata_file.md; REFERENCE.md §13).
"""

from __future__ import annotations

from construct import Construct, Int32ul, Int64ul, ListContainer, Rebuild, this

from ..errors import FormatError
from ..fields import Counted, Section, Struct, text_field
from .footer import FooterPayload
from .generic_tile import generic_tile

__all__ = ["ConsolidatedFragmentMetadata"]

# ---------------------------------------------------------------------------------------------------------
# Consolidated fragment metadata (§13)


def _footer_offset(ctx):
    """Where footer ``ctx._index`` starts in the payload: after the table, footers back to back."""
    root = ctx._
    offset = 4 + sum(16 + len(f.name.encode("utf-8", "surrogateescape")) for f in root.fragments)
    for footer in root.footers[:ctx._index]:
        offset += len(FooterPayload.build(footer, schema=root._params.schema))
    return offset


class _Footers(Construct):
    """The footers, back to back, each at the offset its table entry gives."""

    spec_type = ("Fragment metadata footer[]: one per fragment, each at its footer_offset, each following "
                 "its own version, with no footer length")
    spec_size = "to the end"

    def _parse(self, stream, context, path):
        out = ListContainer()
        for entry in context.fragments:
            if stream.tell() != entry.footer_offset:
                raise FormatError(f"the footer of {entry.name} is at payload offset {stream.tell()}, "
                                  f"not at the {entry.footer_offset} its entry says", path=path)
            out.append(FooterPayload._parsereport(stream, context, path))
        return out

    def _build(self, obj, stream, context, path):
        for footer in obj:
            FooterPayload._build(footer, stream, context, path)
        return obj


ConsolidatedFragmentMetadata = Section("Consolidated fragment metadata (.meta)",
                                       "consolidated_fragment_metadata_file.md", generic_tile(Struct(
    "fragment_num" / Rebuild(Int32ul, lambda ctx: len(ctx.fragments)) * "number of fragments (u32)",
    "fragments" / Counted(this.fragment_num, Struct(
        *text_field("name", Int64ul, "fragment name (v9+ .meta) or absolute URI (before)"),
        "footer_offset" / Rebuild(Int64ul, _footer_offset) * "offset of its footer within this payload",
    ), min_size=16) * "one entry per fragment",
    "footers" / _Footers() * "each fragment's footer, following its own version (no footer length)",
)), since=5)
