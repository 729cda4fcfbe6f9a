"""Checksum filters MD5 and SHA-256 (REFERENCE.md §7.10).

The data passes through unchanged. The header counts the metadata and data parts and gives, per part
(metadata first), the bytes checksummed and the digest; earlier metadata follows the header. A digest
that does not match raises :class:`~tdbformat.errors.ChecksumError`.
"""

from __future__ import annotations

import hashlib

import numpy as np
from construct import Bytes, Int32ul, Int64ul, this

from ..enums import FilterType
from ..errors import ChecksumError, FormatError
from ..fields import Counted, Struct
from .pipeline import Codec, Header, nonempty, register

__all__ = ["ChecksumHeader", "MD5_HEADER", "SHA256_HEADER"]


def ChecksumHeader(digest_size: int):
    """The checksum filters' header, with digests of ``digest_size`` bytes."""
    entry = Struct(
        "nbytes" / Int64ul * "bytes the digest covers",
        "digest" / Bytes(digest_size) * "the digest",
    )
    return Struct(
        "num_metadata_checksums" / Int32ul * "checksummed metadata parts",
        "num_data_checksums" / Int32ul * "checksummed data parts",
        "checksums" / Counted(this.num_metadata_checksums + this.num_data_checksums, entry, 8 + digest_size)
        * "per part, metadata parts first",
    )


MD5_HEADER, SHA256_HEADER = ChecksumHeader(16), ChecksumHeader(32)


class _Checksum(Codec):
    def forward(self, ctx, metadata, data):
        parts = list(metadata) + list(data)
        head = np.array([len(metadata), len(data)], "<u4").tobytes()
        head += b"".join(np.array([len(p)], "<u8").tobytes() + self.digest(p).digest() for p in parts)
        return [head, *nonempty(metadata)], nonempty(data)

    def reverse(self, ctx, metadata, data):
        head = Header(metadata, self.name)
        nmd, ndata = head.u32(), head.u32()
        entry = np.dtype([("nbytes", "<u8"), ("digest", f"V{self.size}")])
        sums = head.array(entry, nmd + ndata)
        rest = head.rest()
        for kind, covered, entries in (("metadata", rest, sums[:nmd]), ("data", data, sums[nmd:])):
            pos = 0
            for i, (nbytes, digest) in enumerate(entries.tolist()):
                if pos + nbytes > len(covered):
                    raise FormatError(f"{self.name}: {kind} part {i} covers {nbytes} bytes from byte {pos}, but "
                                      f"only {len(covered)} are there")
                found = self.digest(covered[pos:pos + nbytes]).digest()
                if found != bytes(digest):
                    raise ChecksumError(f"{self.name}: {kind} part {i} (bytes {pos} to {pos + nbytes}) has digest "
                                        f"{found.hex()}, the header says {bytes(digest).hex()}")
                pos += nbytes
        return rest, data


@register(FilterType.CHECKSUM_MD5)
class Md5(_Checksum):
    name, size, metadata = "CHECKSUM_MD5", 16, MD5_HEADER
    digest = staticmethod(hashlib.md5)


@register(FilterType.CHECKSUM_SHA256)
class Sha256(_Checksum):
    name, size, metadata = "CHECKSUM_SHA256", 32, SHA256_HEADER
    digest = staticmethod(hashlib.sha256)
