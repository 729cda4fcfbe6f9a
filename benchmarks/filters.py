"""Decode and encode throughput of every filter on 64 MiB of typical data, next to the raw library.

Run: python benchmarks/filters.py [MiB]. The tile is chunked as TileDB chunks it (64 KiB), so the raw
library columns compress the same 64 KiB pieces and copy the decompressed ones into one buffer, as
decoding a tile must; MB/s are of unfiltered bytes.
"""

from __future__ import annotations

import bz2
import sys
import time
import zlib

import lz4.block
import numpy as np
import zstandard
from construct import Container

from tdbformat.enums import Compressor, Datatype, FilterType
from tdbformat.filters import filter_tile, unfilter

MIB = int(sys.argv[1]) if len(sys.argv) > 1 else 64
KEY = bytes(range(32))


def data_for(datatype):
    """A smooth random walk (sensor-like data), in the filter's datatype."""
    rng = np.random.default_rng(0)
    n = MIB * 2**20 // datatype.size
    walk = np.cumsum(rng.integers(-3, 4, n)) + 1000
    if datatype.is_real:
        return (walk / 8).astype(datatype.numpy_dtype)
    if datatype == Datatype.UINT64:
        return np.sort(walk).astype(np.uint64)
    return walk.astype(datatype.numpy_dtype)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def f(ftype, **options):
    return Container(type=ftype, options=Container(options))


CASES = [
    ("GZIP level 6", [f(FilterType.GZIP, compressor=Compressor.GZIP, level=6)], Datatype.INT32, "zlib"),
    ("ZSTD level 3", [f(FilterType.ZSTD, compressor=Compressor.ZSTD, level=3)], Datatype.INT32, "zstd"),
    ("LZ4", [f(FilterType.LZ4, compressor=Compressor.LZ4, level=1)], Datatype.INT32, "lz4"),
    ("BZIP2 level 9", [f(FilterType.BZIP2, compressor=Compressor.BZIP2, level=9)], Datatype.INT32, "bz2"),
    ("RLE", [f(FilterType.RLE, compressor=Compressor.RLE, level=-1)], Datatype.INT32, None),
    ("DOUBLE_DELTA", [f(FilterType.DOUBLE_DELTA, compressor=Compressor.DOUBLE_DELTA, level=-1,
                        reinterpret_datatype=Datatype.ANY)], Datatype.INT64, None),
    ("DELTA", [f(FilterType.DELTA, compressor=Compressor.DELTA, level=-1, reinterpret_datatype=Datatype.ANY)],
     Datatype.INT64, None),
    ("BYTESHUFFLE", [f(FilterType.BYTESHUFFLE)], Datatype.INT32, None),
    ("BITSHUFFLE", [f(FilterType.BITSHUFFLE)], Datatype.INT32, None),
    ("XOR", [f(FilterType.XOR)], Datatype.FLOAT64, None),
    ("BIT_WIDTH_REDUCTION w256", [f(FilterType.BIT_WIDTH_REDUCTION, max_window_size=256)], Datatype.INT32, None),
    ("POSITIVE_DELTA w256", [f(FilterType.POSITIVE_DELTA, max_window_size=256)], Datatype.UINT64, None),
    ("CHECKSUM_MD5", [f(FilterType.CHECKSUM_MD5)], Datatype.INT32, None),
    ("CHECKSUM_SHA256", [f(FilterType.CHECKSUM_SHA256)], Datatype.INT32, None),
    ("SCALE_FLOAT w4", [f(FilterType.SCALE_FLOAT, scale=0.125, offset=0.0, byte_width=4)], Datatype.FLOAT64, None),
    ("AES-256-GCM", [], Datatype.INT32, None),
]

RAW = {
    "zlib": (lambda b: zlib.compress(b, 6), lambda c, n: zlib.decompress(c)),
    "zstd": (lambda b: zstandard.ZstdCompressor(level=3).compress(b),
             lambda c, n: zstandard.ZstdDecompressor().decompress(c, max_output_size=n)),
    "lz4": (lambda b: lz4.block.compress(b, store_size=False),
            lambda c, n: lz4.block.decompress(c, uncompressed_size=n)),
    "bz2": (lambda b: bz2.compress(b, 9), lambda c, n: bz2.decompress(c)),
}


def raw_library(name, data: bytes):
    compress, decompress = RAW[name]
    pieces = [data[i:i + 65536] for i in range(0, len(data), 65536)]
    packed, t_enc = timed(lambda: [compress(p) for p in pieces])
    _, t_dec = timed(lambda: _into_one(decompress(c, len(p)) for c, p in zip(packed, pieces)))
    return t_dec, t_enc


def _into_one(pieces) -> np.ndarray:
    """The pieces in one buffer, each copied in as it comes (what unfilter does with chunks)."""
    out, pos = np.empty(MIB * 2**20, np.uint8), 0
    for piece in pieces:
        out[pos:pos + len(piece)] = np.frombuffer(piece, np.uint8)
        pos += len(piece)
    return out


def main():
    mb = MIB * 2**20 / 1e6
    print(f"{MIB} MiB per filter, 64 KiB chunks; MB/s of unfiltered data\n")
    print("| filter | datatype | decode MB/s | encode MB/s | raw library decode MB/s | raw library encode MB/s | "
          "decode vs raw |")
    print("|---|---|---|---|---|---|---|")
    for name, filters, datatype, lib in CASES:
        data = data_for(datatype).tobytes()
        pipeline = Container(max_chunk_size=65536, filters=filters)
        kw = dict(datatype=datatype, version=22, cell_size=datatype.size, key=KEY if not filters else None,
                  encrypted=not filters)
        tile, t_enc = timed(lambda: filter_tile(data, pipeline, **kw))
        out, t_dec = timed(lambda: unfilter(tile, pipeline, **kw))
        assert out == data
        row = f"| {name} | {datatype.name} | {mb / t_dec:,.0f} | {mb / t_enc:,.0f} |"
        if lib:
            r_dec, r_enc = raw_library(lib, data)
            row += f" {mb / r_dec:,.0f} | {mb / r_enc:,.0f} | {t_dec / r_dec:.2f}x |"
        else:
            row += " | | |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
