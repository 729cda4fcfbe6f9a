"""Decode and encode throughput of every filter on 64 MiB of typical data, next to the raw library and TileDB-Py
(medians of 3 to 5 runs, alternating).

Run: python benchmarks/filters.py [MiB] [codecs,strings,reads,writes] (default: all four). The tile is
chunked as TileDB chunks it (64 KiB), so the raw library columns compress the same 64 KiB pieces and copy
the decompressed ones into one buffer, as decoding a tile must; MB/s are of unfiltered bytes; codec columns
use one thread.

The reads table writes the same data with TileDB-Py as a dense array (8 tiles) through every single filter
and the common two-filter pipelines (:func:`tiledb_pipelines`) and reads it with tdbformat on 1 and 2
threads and with TileDB-Py (its default: a thread per core), each read in a fresh process as a script
reads, alternating, median of 5 (a read of 64 MiB takes 30-60 ms, and one run moves by 10%); the ratios
are tdbformat's time over TileDB-Py's (below 1: tdbformat is faster). tdbformat uses pyarrow where it is
installed, as a user with the ``fast`` extra would. The writes table does the same for ``tdbformat.write``
against TileDB-Py's write (median of 9: a write of 64 MiB takes 50-200 ms, and five moved rows by 10%; each
array removed once timed, so that no write waits for an earlier one's pages to reach the disk).
"""

from __future__ import annotations

import bz2
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib

import lz4.block
import numpy as np
import zstandard
from construct import Container

import tdbformat
from tdbformat.enums import Compressor, Datatype, FilterType
from tdbformat.filters import filter_tile, set_threads, unfilter, unfilter_strings

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


def cpu_timed(fn):
    """(result, wall seconds, CPU seconds of the whole process: every thread, TileDB's included)."""
    cpu = time.process_time()
    out, wall = timed(fn)
    return out, wall, time.process_time() - cpu


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


def tiledb_pipelines():
    """(name, TileDB-Py filters, datatype, encrypted) of every single filter TileDB-Py can write on this data
    and the common two-filter pipelines (the issue #22 rows among them); STRING_ASCII rows are var strings,
    UINT8 rows a 2-D image."""
    import tiledb
    t, fmt = tiledb, tiledb.filter.lt.WebpInputFormat
    i64, f64, s = Datatype.INT64, Datatype.FLOAT64, Datatype.STRING_ASCII
    return [
        ("gzip", [t.GzipFilter()], i64, False),
        ("zstd", [t.ZstdFilter()], i64, False),
        ("lz4", [t.LZ4Filter()], i64, False),
        ("bzip2", [t.Bzip2Filter()], i64, False),
        ("RLE", [t.RleFilter()], i64, False),
        ("double delta", [t.DoubleDeltaFilter()], i64, False),
        ("delta", [t.DeltaFilter()], i64, False),
        ("byteshuffle", [t.ByteShuffleFilter()], i64, False),
        ("bitshuffle", [t.BitShuffleFilter()], i64, False),
        ("bit-width reduction", [t.BitWidthReductionFilter()], i64, False),
        ("positive delta", [t.PositiveDeltaFilter()], i64, False),
        ("XOR (float64)", [t.XORFilter()], f64, False),
        ("float scale w4 (float64)", [t.FloatScaleFilter(0.125, 0.0, 4)], f64, False),
        ("MD5", [t.ChecksumMD5Filter()], i64, False),
        ("SHA-256", [t.ChecksumSHA256Filter()], i64, False),
        ("AES-256-GCM", [], i64, True),
        ("string RLE", [t.RleFilter()], s, False),
        ("string dictionary", [t.DictionaryFilter()], s, False),
        ("string zstd", [t.ZstdFilter()], s, False),
        ("bitshuffle+lz4", [t.BitShuffleFilter(), t.LZ4Filter()], i64, False),
        ("byteshuffle+zstd", [t.ByteShuffleFilter(), t.ZstdFilter()], i64, False),
        ("byteshuffle+lz4", [t.ByteShuffleFilter(), t.LZ4Filter()], i64, False),
        ("positive delta+lz4", [t.PositiveDeltaFilter(), t.LZ4Filter()], i64, False),
        ("XOR+zstd (float64)", [t.XORFilter(), t.ZstdFilter()], f64, False),
        ("delta+zstd", [t.DeltaFilter(), t.ZstdFilter()], i64, False),
        ("double delta+zstd", [t.DoubleDeltaFilter(), t.ZstdFilter()], i64, False),
        ("bit-width reduction+zstd", [t.BitWidthReductionFilter(), t.ZstdFilter()], i64, False),
        ("float scale+zstd (float64)", [t.FloatScaleFilter(0.125, 0.0, 4), t.ZstdFilter()], f64, False),
        ("zstd+MD5", [t.ZstdFilter(), t.ChecksumMD5Filter()], i64, False),
        ("zstd, encrypted", [t.ZstdFilter()], i64, True),
        ("WebP lossless (RGBA image)", [t.WebpFilter(input_format=fmt.WEBP_RGBA, quality=100.0, lossless=True)],
         Datatype.UINT8, False),
        ("WebP quality 80 (RGBA image)", [t.WebpFilter(input_format=fmt.WEBP_RGBA, quality=80.0, lossless=False)],
         Datatype.UINT8, False),
    ]


def _values(name, datatype):
    """The benchmark's data for a pipeline: the random walk (sorted for positive delta, which needs it), or
    for strings about a tenth of MIB of words from a 2,005-word vocabulary, in runs."""
    if datatype == Datatype.STRING_ASCII:
        rng = np.random.default_rng(0)
        words = np.array(["alpha", "beta", "gamma", "delta-long-name", "e"] + [f"w{i}" for i in range(2000)], object)
        n = MIB * 2**20 // 64
        return words[np.repeat(rng.integers(0, len(words), n), rng.integers(1, 8, n))[:n]]
    if datatype == Datatype.UINT8:  # 2,048 rows of RGBA pixels: a smooth picture with some noise, opaque
        rows = 2048
        cols = MIB * 2**20 // rows
        rng = np.random.default_rng(0)
        image = (np.add.outer(np.arange(rows) // 4, np.arange(cols) // 16) + rng.integers(0, 6, (rows, cols))
                 ).astype(np.uint8)
        image.reshape(rows, -1, 4)[:, :, 3] = 255  # (lossless WebP keeps no colour under a transparent pixel)
        return image
    values = data_for(datatype)
    return np.sort(values) if "positive" in name else values


def _tiledb_ctx(encrypted):
    import tiledb
    if not encrypted:
        return tiledb.Ctx()
    return tiledb.Ctx({"sm.encryption_type": "AES_256_GCM", "sm.encryption_key": KEY.hex()[:32]})


def create_with_tiledb(path, filters, values, encrypted=False):
    """A dense array of 8 tiles for ``values`` (an image: 2 x 4 tiles, y and x)."""
    import tiledb
    n = len(values)
    dom = tiledb.Domain(tiledb.Dim("d", domain=(0, n - 1), tile=-(-n // 8), dtype=np.int64))
    if values.ndim == 2:
        dom = tiledb.Domain(*(tiledb.Dim(d, domain=(0, m - 1), tile=m // k, dtype=np.uint32)
                              for d, m, k in zip("yx", values.shape, (2, 4))))
    dtype = str if values.dtype == object else values.dtype
    attr = tiledb.Attr("a", dtype=dtype, var=values.dtype == object, filters=tiledb.FilterList(filters))
    tiledb.Array.create(path, tiledb.ArraySchema(domain=dom, attrs=[attr]), ctx=_tiledb_ctx(encrypted))


def write_with_tiledb(path, filters, values, encrypted=False):
    import tiledb
    create_with_tiledb(path, filters, values, encrypted)
    with tiledb.open(path, "w", ctx=_tiledb_ctx(encrypted)) as arr:
        arr[:] = values


def _same(got, values, lossy=False) -> bool:
    """Whether ``got`` holds ``values`` (lossy: about, as a lossy image does)."""
    got = got["a"] if isinstance(got, dict) else got
    if lossy:
        return got.shape == values.shape and np.abs(got.astype(int) - values).mean() < 4
    return got.tolist() == values.tolist() if values.dtype == object else np.array_equal(got, values)


def _key(encrypted):
    return KEY.hex()[:32] if encrypted else None


def writes_versus_tiledb(reps=9):
    """Dense writes of the same data through each pipeline into fresh arrays of one schema (made by TileDB-Py):
    tdbformat.write against TileDB-Py, alternating, median of ``reps``; what TileDB-Py reads back from
    tdbformat's first write is checked."""
    import tiledb
    print(f"\n{MIB} MiB dense writes (8 tiles); ratio = tdbformat time / TileDB-Py time\n")
    print("| pipeline | TileDB-Py MB/s | tdbformat MB/s | ratio |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, filters, datatype, encrypted in tiledb_pipelines():
            values = _values(name, datatype)
            mb = _nbytes(values) / 1e6
            times = {"TileDB-Py": [], "tdbformat": []}
            for r in range(reps):
                for lib in times:
                    path = os.path.join(tmp, f"{lib}-{r}-" + _slug(name))
                    create_with_tiledb(path, filters, values, encrypted)
                    if lib == "TileDB-Py":
                        def write():
                            with tiledb.open(path, "w", ctx=_tiledb_ctx(encrypted)) as arr:
                                arr[:] = values
                    else:
                        def write():
                            tdbformat.write(path, {"a": values}, key=_key(encrypted))
                    times[lib].append(timed(write)[1])
                    if r == 0 and lib == "tdbformat":
                        with tiledb.open(path, ctx=_tiledb_ctx(encrypted)) as arr:
                            assert _same(arr[:], values, "quality" in name)
                    shutil.rmtree(path)  # (gigabytes of dirty pages left behind would be written back during later rows)
            med = {lib: statistics.median(ts) for lib, ts in times.items()}
            print(f"| {name} | {mb / med['TileDB-Py']:,.0f} | {mb / med['tdbformat']:,.0f} | "
                  f"{med['tdbformat'] / med['TileDB-Py']:.2f} |", flush=True)


def _slug(name):
    return "".join(c if c.isalnum() else "_" for c in name)


def _nbytes(values) -> int:
    return sum(map(len, values)) if values.dtype == object else values.nbytes


def versus_tiledb(reps=5):
    """Dense reads of the same array by tdbformat (1 thread; 2 threads, which decode tiles in parallel) and
    TileDB-Py (open and read both timed), each read in a fresh process after one untimed read there (a
    script or the CLI reads in such a process: glibc hands freed memory back to the system and codecs
    fault it in again, which a process that has freed a large block, such as one that just made the data,
    no longer does). The CPU ratio (process CPU seconds, all threads) is the work each does."""
    import tiledb
    print(f"\n{MIB} MiB dense array of 8 tiles (strings: {MIB * 2**20 // 64:,} cells), written by TileDB-Py "
          f"{tiledb.__version__}; each read in a fresh process, median of {reps} alternating; ratio = tdbformat "
          "time / TileDB-Py time\n")
    ways = {"1 thread": "1", "2 threads": "2"}
    print("| pipeline | TileDB-Py MB/s | " + " | ".join(f"tdbformat {w} MB/s | ratio" for w in ways) +
          " | CPU ratio, 2 threads |")
    print("|---|---|" + "---|---|" * len(ways) + "---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, filters, datatype, encrypted in tiledb_pipelines():
            values = _values(name, datatype)
            mb = _nbytes(values) / 1e6
            path = os.path.join(tmp, _slug(name))
            write_with_tiledb(path, filters, values, encrypted)
            if "quality" in name:  # lossy: the cells are what TileDB-Py reads
                with tiledb.open(path) as arr:
                    values = arr[:]["a"]
            np.save(os.path.join(tmp, "values.npy"), values, allow_pickle=True)
            runs = {w: [] for w in ["TileDB-Py", *ways]}
            for _ in range(reps):
                for w, reader in [("TileDB-Py", "tiledb"), *ways.items()]:
                    runs[w].append(_read_in_a_fresh_process(path, reader, encrypted, tmp))
            med = {w: statistics.median(t for t, _ in r) for w, r in runs.items()}
            cpu = {w: statistics.median(c for _, c in r) for w, r in runs.items()}
            row = f"| {name} | {mb / med['TileDB-Py']:,.0f} |"
            row += "".join(f" {mb / med[w]:,.0f} | {med[w] / med['TileDB-Py']:.2f} |" for w in ways)
            print(row + f" {cpu['2 threads'] / cpu['TileDB-Py']:.2f} |", flush=True)


def _read_in_a_fresh_process(path, reader, encrypted, tmp):
    """(wall, CPU seconds) of the second read of ``path`` by ``reader`` ("tiledb", or tdbformat's thread
    count) in a new process, which checks the cells against ``tmp``/values.npy."""
    out = subprocess.run([sys.executable, __file__, str(MIB), "--read", path, reader, str(int(encrypted)), tmp],
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def _read_here(path, reader, encrypted, tmp):
    encrypted = encrypted == "1"
    if reader == "tiledb":
        import tiledb

        def read():
            with tiledb.open(path, ctx=_tiledb_ctx(encrypted)) as arr:
                return arr[:]
    else:
        def read():
            return tdbformat.open_array(path, key=_key(encrypted)).read(threads=int(reader))
    read()
    got, wall, cpu = cpu_timed(read)  # checked after: making a large array and freeing it raises glibc's thresholds
    assert _same(got, np.load(os.path.join(tmp, "values.npy"), allow_pickle=True))
    print(wall, cpu)


def codecs():
    """Each codec on one thread against its raw library."""
    set_threads(1)
    mb = MIB * 2**20 / 1e6
    print(f"{MIB} MiB per filter, 64 KiB chunks; MB/s of unfiltered data\n")
    print("| filter | datatype | decode MB/s | encode MB/s | raw library decode MB/s | raw library encode MB/s | "
          "decode vs raw | encode vs raw |")
    print("|---|---|---|---|---|---|---|---|")
    for name, filters, datatype, lib in CASES:
        data = data_for(datatype).tobytes()
        pipeline = Container(max_chunk_size=65536, filters=filters)
        kw = dict(datatype=datatype, version=22, cell_size=datatype.size, key=KEY if not filters else None,
                  encrypted=not filters)
        # median of 3 runs, each of ours next to the raw library's, so both see the same load
        t_enc, t_dec, r_enc, r_dec = [], [], [], []
        for _ in range(3):
            tile, t = timed(lambda: filter_tile(data, pipeline, **kw))
            t_enc.append(t)
            out, t = timed(lambda: unfilter(tile, pipeline, **kw))
            t_dec.append(t)
            assert out == data
            if lib:
                dec, enc = raw_library(lib, data)
                r_dec.append(dec)
                r_enc.append(enc)
        t_enc, t_dec = statistics.median(t_enc), statistics.median(t_dec)
        row = f"| {name} | {datatype.name} | {mb / t_dec:,.0f} | {mb / t_enc:,.0f} |"
        if lib:
            r_dec, r_enc = statistics.median(r_dec), statistics.median(r_enc)
            row += f" {mb / r_dec:,.0f} | {mb / r_enc:,.0f} | {t_dec / r_dec:.2f}x | {t_enc / r_enc:.2f}x |"
        else:
            row += " | | | |"
        print(row, flush=True)
    set_threads(os.cpu_count() or 1)


SECTIONS = {"codecs": codecs, "strings": lambda: strings(), "reads": lambda: versus_tiledb(),
            "writes": lambda: writes_versus_tiledb()}


def main():
    for name in (sys.argv[2].split(",") if len(sys.argv) > 2 else SECTIONS):
        SECTIONS[name]()


def strings():
    """String RLE and dictionary (one chunk per tile, the offsets inside): 5 words in runs, and 2,000 words."""
    print("\n| string filter | cells | decode MB/s | encode MB/s |\n|---|---|---|---|")
    rng = np.random.default_rng(0)
    words = np.array([b"alpha", b"beta", b"gamma", b"delta-long-name", b"e"] + [b"w%d" % i for i in range(2000)])
    n = MIB * 2**20 // 64  # about a tenth of MIB of strings: one tile, one chunk
    for label, pick in [("5 words in runs", np.repeat(rng.integers(0, 5, n), rng.integers(1, 8, n))[:n]),
                        ("2,005 words", rng.integers(0, len(words), n))]:
        cells = words[pick]
        lengths = np.char.str_len(cells)
        data = b"".join(cells.tolist())
        offsets = (np.cumsum(lengths) - lengths).astype("<u8")
        for ftype, compressor in [(FilterType.RLE, Compressor.RLE), (FilterType.DICTIONARY,
                                                                     Compressor.DICTIONARY_ENCODING)]:
            pipeline = Container(max_chunk_size=65536, filters=[f(ftype, compressor=compressor, level=-1)])
            kw = dict(datatype=Datatype.STRING_ASCII, version=22)
            tile, t_enc = timed(lambda: filter_tile(data, pipeline, cell_size=1, offsets=offsets, **kw))
            (out, _), t_dec = timed(lambda: unfilter_strings(tile, pipeline, **kw))
            assert bytes(out) == data
            mb = len(data) / 1e6
            print(f"| {ftype.name} | {label} | {mb / t_dec:,.0f} | {mb / t_enc:,.0f} |", flush=True)


if __name__ == "__main__":
    _read_here(*sys.argv[3:7]) if sys.argv[2:3] == ["--read"] else main()
