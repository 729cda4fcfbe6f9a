"""AES-256-GCM, the implicit last filter of encrypted arrays (REFERENCE.md §7.11).

Like a compressor it consumes every part: its header gives, per part (metadata parts first), the
plaintext and ciphertext sizes, the 12-byte IV and the 16-byte tag; its data is the ciphertexts.
There is no additional authenticated data. A wrong key fails the tag check and raises EncryptionError.
"""

from __future__ import annotations

import os

import numpy as np
from construct import Bytes, Int32ul, this
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..enums import Datatype, FilterType
from ..errors import EncryptionError, FormatError
from ..fields import Counted, Struct
from .pipeline import Codec, register

__all__ = ["EncryptedParts", "normalize_key"]

_PART = np.dtype([("plaintext_size", "<u4"), ("encrypted_size", "<u4"), ("iv", "V12"), ("tag", "V16")])

EncryptedPart = Struct(
    "plaintext_size" / Int32ul * "bytes of the plaintext part",
    "encrypted_size" / Int32ul * "bytes of the ciphertext part (GCM adds none)",
    "iv" / Bytes(12) * "initialisation vector, fresh per part",
    "tag" / Bytes(16) * "GCM authentication tag",
)

#: Header of the AES-256-GCM filter's output metadata.
EncryptedParts = Struct(
    "num_metadata_parts" / Int32ul * "encrypted metadata parts",
    "num_data_parts" / Int32ul * "encrypted data parts",
    "parts" / Counted(this.num_metadata_parts + this.num_data_parts, EncryptedPart, 36)
    * "one entry per part, metadata parts first",
)


def normalize_key(key) -> bytes | None:
    """The 32 raw key bytes from bytes, a 32-character string, or a 64-digit hex string."""
    if key is None:
        return None
    if isinstance(key, str):
        key = _key_from_str(key)
    elif not isinstance(key, (bytes, bytearray, memoryview)):  # bytes(32) would be a silent all-zero key
        raise EncryptionError(f"a key is bytes or a string, not {type(key).__name__}")
    key = bytes(key)
    if len(key) != 32:
        raise EncryptionError(f"an AES-256-GCM key has 32 bytes, this one has {len(key)}")
    return key


def _key_from_str(key: str) -> bytes:
    if len(key) == 64:
        try:
            return bytes.fromhex(key)
        except ValueError:
            raise EncryptionError("a 64-character key is 64 hex digits, this one is not") from None
    try:
        return key.encode("latin-1")  # one byte per character, as TileDB-Py passes a str key
    except UnicodeEncodeError as e:
        raise EncryptionError(f"a key string has one byte per character (U+0000 to U+00FF), this one has "
                              f"U+{ord(key[e.start]):04X} at position {e.start}") from None


@register(FilterType.AES_256_GCM)
class Aes256Gcm(Codec):
    metadata = EncryptedParts

    def output_datatype(self, ctx):
        return Datatype.BLOB

    def forward(self, ctx, metadata, data):
        return self.forward_many(ctx, [(metadata, data)])[0]

    def forward_many(self, ctx, chunks):
        """Each chunk's parts sealed with a fresh IV each, the headers of all of them made as one array (a chunk
        at a time, the header cost more than AES-GCM itself)."""
        key = normalize_key(ctx.key)
        if key is None:
            raise EncryptionError("encrypting needs key=")
        aes = AESGCM(key)
        parts = [p for metadata, data in chunks for p in (*metadata, *data)]
        ivs = os.urandom(12 * len(parts))
        sealed = [aes.encrypt(ivs[12 * i:12 * i + 12], p, None) for i, p in enumerate(parts)]  # ciphertext, tag
        header = np.zeros(len(parts), _PART)
        header["plaintext_size"] = header["encrypted_size"] = np.fromiter(map(len, parts), np.uint32, len(parts))
        header["iv"] = np.frombuffer(ivs, "V12")
        header["tag"] = np.frombuffer(b"".join(s[-16:] for s in sealed), "V16")
        out, at = [], 0
        for metadata, data in chunks:
            end = at + len(metadata) + len(data)
            counts = np.array([len(metadata), len(data)], "<u4").tobytes()
            out.append(([counts + header[at:end].tobytes()], [b"".join(memoryview(s)[:-16] for s in sealed[at:end])]))
            at = end
        return out

    def reverse(self, ctx, metadata, data):
        key = normalize_key(ctx.key)
        if key is None:
            raise EncryptionError("the data is encrypted with AES-256-GCM: pass key=")
        if len(metadata) < 8:
            raise FormatError(f"AES-256-GCM header needs 8 bytes, found {len(metadata)}")
        nmd, ndata = (int(x) for x in np.frombuffer(metadata, "<u4", 2))
        n = nmd + ndata
        if 8 + n * _PART.itemsize > len(metadata):
            raise FormatError(f"AES-256-GCM header lists {n} parts but has only {len(metadata)} bytes")
        parts = np.frombuffer(metadata, _PART, n, 8)
        if int(parts["encrypted_size"].sum()) != len(data):
            raise FormatError(f"AES-256-GCM parts add up to {int(parts['encrypted_size'].sum())} bytes but the "
                              f"chunk holds {len(data)}")
        aes = AESGCM(key)
        out, pos = [], 0
        for p in parts:
            size = int(p["encrypted_size"])
            try:
                plain = aes.decrypt(bytes(p["iv"]), bytes(data[pos:pos + size]) + bytes(p["tag"]), None)
            except InvalidTag:
                raise EncryptionError("AES-256-GCM authentication failed: wrong key or tampered data") from None
            if len(plain) != p["plaintext_size"]:
                raise FormatError(f"AES-256-GCM part decrypted to {len(plain)} bytes, expected {p['plaintext_size']}")
            out.append(plain)
            pos += size
        return memoryview(b"".join(out[:nmd])), memoryview(b"".join(out[nmd:]))
