"""Compression filters: GZIP, ZSTD, LZ4, BZIP2 (REFERENCE.md §7.5).

A compressor consumes all its input parts: its header lists each part's original and compressed size
(metadata parts first), and its data is the compressed parts back to back. Earlier filters' metadata is
compressed along with the data.
"""

from __future__ import annotations

import bz2
import zlib

import lz4.block
import numpy as np
import zstandard
from construct import Int32ul, Rebuild, this

from ..enums import FilterType
from ..errors import FormatError
from ..fields import Counted, Struct
from .pipeline import Codec, FilterContext, register

__all__ = ["CompressedPartSizes", "CompressionCodec"]

CompressedPart = Struct(
    "orig_size" / Int32ul * "bytes of the part before compression",
    "compressed_size" / Int32ul * "bytes of the compressed part",
)

#: Header of every compression filter's output metadata.
CompressedPartSizes = Struct(
    "num_metadata_parts" / Int32ul * "compressed metadata parts",
    "num_data_parts" / Int32ul * "compressed data parts",
    "parts" / Counted(this.num_metadata_parts + this.num_data_parts, CompressedPart, 8)
    * "sizes of each part, metadata parts first",
)

_HEADER = Struct("num_metadata_parts" / Int32ul, "num_data_parts" / Int32ul)


def read_part_sizes(metadata: memoryview):
    """(metadata part sizes, data part sizes, header length) from a compressor's header."""
    if len(metadata) < 8:
        raise FormatError(f"compressor header needs 8 bytes, found {len(metadata)}")
    nmd, ndata = np.frombuffer(metadata, "<u4", 2)
    nparts = int(nmd) + int(ndata)
    hdr = 8 + 8 * nparts
    if hdr > len(metadata):
        raise FormatError(f"compressor header lists {nparts} parts ({hdr} bytes) but has {len(metadata)} bytes")
    sizes = np.frombuffer(metadata, "<u4", 2 * nparts, 8).reshape(-1, 2)
    return sizes[: int(nmd)], sizes[int(nmd):], hdr


def write_part_sizes(md_sizes, data_sizes) -> bytes:
    head = np.array([len(md_sizes), len(data_sizes)], "<u4").tobytes()
    return head + np.array(list(md_sizes) + list(data_sizes), "<u4").reshape(-1).tobytes()


class CompressionCodec(Codec):
    """A compressor of whole parts; subclasses give ``compress`` and ``decompress``."""

    metadata = CompressedPartSizes

    def compress(self, ctx: FilterContext, raw: bytes) -> bytes:
        raise NotImplementedError

    def decompress(self, ctx: FilterContext, packed: bytes, orig_size: int) -> bytes:
        raise NotImplementedError

    def forward(self, ctx, metadata, data):
        parts = list(metadata) + list(data)
        packed = [self.compress(ctx, bytes(p)) for p in parts]
        sizes = [(len(p), len(c)) for p, c in zip(parts, packed)]
        return [write_part_sizes(sizes[: len(metadata)], sizes[len(metadata):])], [b"".join(packed)]

    def reverse(self, ctx, metadata, data):
        md_sizes, data_sizes, hdr = read_part_sizes(metadata)
        total = int(md_sizes[:, 1].sum() + data_sizes[:, 1].sum())
        if total != len(data):
            raise FormatError(f"{type(self).__name__}: compressed parts add up to {total} bytes but the chunk "
                              f"holds {len(data)}")
        pos, out = 0, []
        for orig, size in list(md_sizes) + list(data_sizes):
            raw = self.decompress(ctx, bytes(data[pos:pos + int(size)]), int(orig))
            if len(raw) != orig:
                raise FormatError(f"{type(self).__name__}: a part decompressed to {len(raw)} bytes, expected {orig}")
            out.append(raw)
            pos += int(size)
        nmd = len(md_sizes)
        return memoryview(b"".join(out[:nmd])), memoryview(b"".join(out[nmd:]))


# What the codec libraries raise on corrupt input.
_CODEC_ERRORS = (zlib.error, zstandard.ZstdError, lz4.block.LZ4BlockError, OSError, EOFError, ValueError)


def _bounded(decompress, packed, orig_size, name):
    try:
        return decompress(packed, orig_size)
    except _CODEC_ERRORS as e:
        raise FormatError(f"{name} data is corrupt: {e}") from None


@register(FilterType.GZIP)
class Gzip(CompressionCodec):
    def compress(self, ctx, raw):
        level = ctx.options["level"]
        return zlib.compress(raw, level if level >= 0 else -1)

    def decompress(self, ctx, packed, orig_size):
        def inflate(p, n):
            d = zlib.decompressobj()
            out = d.decompress(p, n)  # bounded: never more than the declared size
            if d.unconsumed_tail or not d.eof:
                raise ValueError("stream longer than the declared size or incomplete")
            return out
        return _bounded(inflate, packed, orig_size, "gzip")


@register(FilterType.ZSTD)
class Zstd(CompressionCodec):
    def compress(self, ctx, raw):
        level = ctx.options["level"]
        return zstandard.ZstdCompressor(level=3 if level < -7 else level).compress(raw)

    def decompress(self, ctx, packed, orig_size):
        return _bounded(lambda p, n: zstandard.ZstdDecompressor().decompress(p, max_output_size=n), packed,
                        orig_size, "zstd")


@register(FilterType.LZ4)
class Lz4(CompressionCodec):
    def compress(self, ctx, raw):
        return lz4.block.compress(raw, store_size=False)

    def decompress(self, ctx, packed, orig_size):
        return _bounded(lambda p, n: lz4.block.decompress(p, uncompressed_size=n), packed, orig_size, "lz4")


@register(FilterType.BZIP2)
class Bzip2(CompressionCodec):
    def compress(self, ctx, raw):
        return bz2.compress(raw, max(1, min(9, ctx.options["level"])))

    def decompress(self, ctx, packed, orig_size):
        def unpack(p, n):
            d = bz2.BZ2Decompressor()
            out = d.decompress(p, n)
            if not d.eof:
                raise ValueError("stream longer than the declared size or incomplete")
            return out
        return _bounded(unpack, packed, orig_size, "bzip2")
