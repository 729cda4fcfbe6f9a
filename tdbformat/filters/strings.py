"""RLE and dictionary on var-size strings, which carry the cell offsets in the data (REFERENCE.md §7.6).

They apply to STRING_ASCII from v12 (RLE) and v13 (dictionary), and to STRING_UTF8 from v17, when the
filter is first in the pipeline; the tile is one chunk and its offsets tile is skipped (8 bytes, no
chunks, §4.2). Earlier versions ran numeric RLE over the raw bytes; dictionary did not exist.

Both write five u32 LE (0 metadata parts, 1 data part, uncompressed size, compressed size, the byte
size of the offsets), then their own fields; lengths, run lengths and ids are big-endian.
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np
from construct import Bytes, Int8ul, Int32ul, this

from ..enums import FilterType
from ..errors import FormatError
from ..fields import Struct
from .pipeline import Codec, Entries, Header, byte_ranges, register

__all__ = ["StringRleHeader", "DictionaryHeader", "bytesize", "cell_words", "extreme_cells", "cell_hash", "equal_cells",
           "sampled_distinct", "SAMPLE", "arrow", "arrow_ints", "set_pyarrow"]

_common = (
    "num_metadata_parts" / Int32ul * "always 0",
    "num_data_parts" / Int32ul * "always 1",
    "uncompressed_size" / Int32ul * "bytes of the var data",
    "compressed_size" / Int32ul * "bytes of the encoded data",
    "offsets_size" / Int32ul * "bytes of the offsets the data rebuilds (8 per cell)",
)

#: Metadata of string RLE; the data is runs of [run length BE][string length BE][string].
StringRleHeader = Struct(
    *_common,
    "rle_len_bytesize" / Int8ul * "bytes of each run length: 1, 2, 4 or 8",
    "string_len_bytesize" / Int8ul * "bytes of each string length: 1, 2, 4 or 8",
)

#: Metadata of dictionary encoding; the data is one big-endian id per cell.
DictionaryHeader = Struct(
    *_common,
    "ids_bytesize" / Int8ul * "bytes of each id: 1, 2, 4 or 8 (from the number of cells)",
    "strlen_bytesize" / Int8ul * "bytes of each dictionary length prefix: 1, 2, 4 or 8",
    "dict_size" / Int32ul * "bytes of the dictionary",
    "dictionary" / Bytes(this.dict_size) * "[length BE][bytes] per distinct string, in first-seen order",
)

_WIDTHS = (1, 2, 4, 8)

#: whether var strings go through pyarrow where it is installed (:func:`set_pyarrow`)
_pyarrow = True
#: cells of a tile from which pyarrow is imported for it: the import takes some 75 ms once, what pyarrow
#: saves on about 60,000 cells (3.5 of a tile's 4.6 ms per 131,072 cells of 2,005 words)
_IMPORT_FROM = 1 << 14


def set_pyarrow(enabled: bool):
    """Whether var strings are grouped and turned into values by pyarrow where it is installed (the default),
    or by numpy alone. The results are the same."""
    global _pyarrow
    _pyarrow = bool(enabled)


def arrow(cells: int):
    """pyarrow for a tile of ``cells`` var strings, or None: too few cells to pay for the round trip, not
    installed, or turned off (:func:`set_pyarrow`). It is imported once a tile of :data:`_IMPORT_FROM` cells
    wants it, as pandas imports it where it is installed."""
    if not _pyarrow or cells < 64 or ("pyarrow" not in sys.modules and cells < _IMPORT_FROM):
        return None
    return _import_pyarrow()  # (an import, even of a loaded module: it waits for another thread's to end)


@functools.cache
def _import_pyarrow():
    try:
        import pyarrow
    except Exception:  # not installed, or it cannot load (a process short of address space): numpy does it
        return None
    return pyarrow



def bytesize(n: int) -> int:
    """The smallest of 1, 2, 4, 8 bytes that holds ``n`` (compute_bytesize)."""
    return next(w for w in _WIDTHS if n < 1 << (8 * w))


def _be(values, width) -> np.ndarray:
    """``values`` as ``width``-byte big-endian rows (truncated like a C cast)."""
    return np.asarray(values).astype(f">u{width}").view(np.uint8).reshape(-1, width)


def _from_be(raw: np.ndarray, width: int) -> np.ndarray:
    return raw.reshape(-1, width).copy().view(f">u{width}").reshape(-1).astype(np.int64)


def _be_at(buf: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """The ``width``-byte big-endian numbers at positions ``at`` of ``buf``, as int64 (8-byte ones past
    2**63 come out negative, which every caller rejects as a length)."""
    out = np.zeros(len(at), np.uint64)
    for i in range(width):
        out <<= np.uint64(8)
        out |= buf[at + i]
    return out.view(np.int64)


_WINDOW = 1 << 18  # bytes of records walked at once (jump tables of 1 MiB; with 64 KiB a tile took 2-17% longer)


def _lengths(buf: np.ndarray, start: int, count: int, width: int) -> np.ndarray:
    """The ``width``-byte big-endian numbers at each of ``count`` bytes from ``start``, as int32 capped at
    2**20 (past any window: 8-byte ones past 2**63 included)."""
    out = buf[start:start + count].astype(np.int32 if width <= 2 else np.uint64)
    for i in range(1, width):
        out <<= 8 if width <= 2 else np.uint64(8)
        out |= buf[start + i:start + i + count]
    return out if width <= 2 else np.minimum(out, np.uint64(1 << 20)).astype(np.int32)


def _chain(step: np.ndarray) -> np.ndarray:
    """The records from index 0 along ``step`` (each byte's next record if one started there; the last index
    is the sink that ends the chain). Squaring ``step`` twice gives the record 4 on, which a Python walk
    follows; four gathers fill in the records between. (Measured against full pointer doubling, strides of 8
    and 16, and a second table 64 on: this is the fastest over short, long and mixed strings.)"""
    sink, far = len(step) - 1, step
    for _ in range(2):
        far = np.take(far, far)  # (np.take: half the time of far[far])
    at, walk, far = 0, [], memoryview(far)  # (a memoryview gives Python ints, at a third of numpy's cost)
    while at < sink:
        walk.append(at)
        at = far[at]
    rows = np.empty((4, len(walk)), np.int32)
    rows[0] = walk
    for j in range(1, 4):
        rows[j] = np.take(step, rows[j - 1])
    chain = rows.T.reshape(-1)
    return chain[chain < sink]


def _records(buf: np.ndarray, skip: int, width: int, what: str) -> np.ndarray:
    """Positions of the records laid back to back in ``buf``, each ``skip`` bytes, a ``width``-byte big-endian
    string length, and the string.

    A record's place depends on the length before it, so rather than a step per record, the next record is
    worked out after every byte of a window (as if a record started there), and :func:`_chain` follows them.
    The record that leaves the window starts the next one.
    """
    n, head, pos, pieces = len(buf), skip + width, 0, []
    while pos < n:
        size = min(_WINDOW, n - pos)
        fits = max(0, min(size, n - head + 1 - pos))  # bytes of the window where a whole header fits
        # past the window, or not a record (a header cut off, a length past the data): the sink ``size``
        step = np.full(size + 1, size, np.int32)
        step[:fits] = _lengths(buf, pos + skip, fits, width)
        step[:fits] += np.arange(head, fits + head, dtype=np.int32)
        np.minimum(step, size, out=step)
        chain = _chain(step)
        pieces.append(chain.astype(np.int64) + pos)
        last = pos + int(chain[-1])
        if last + head > n:
            raise FormatError(f"{what}: the record at byte {last} is cut off")
        length = int(_be_at(buf, np.array([last + skip]), width)[0]) % 2**64
        if last + head + length > n:
            raise FormatError(f"{what}: a {length}-byte string at byte {last + head} runs past the {n} bytes")
        pos = last + head + length
    return np.concatenate(pieces) if pieces else np.zeros(0, np.int64)


#: the low j bytes of a u64 set, for j = 0..8
_LOW_BYTES = np.array([(1 << (8 * j)) - 1 for j in range(9)], np.uint64)


def _word_at(buf: np.ndarray) -> np.ndarray:
    """The little-endian u64 at each byte of ``buf`` (the bytes in memory order; zeros past the end)."""
    padded = np.concatenate([buf, np.zeros(8, np.uint8)])  # (a cell's last word may read past the data)
    return np.lib.stride_tricks.as_strided(padded, (len(buf) + 1, 8), (1, 1)).view("<u8")[:, 0]


def _word(at: np.ndarray, starts, lengths, k: int) -> np.ndarray:
    """Word ``k`` of each cell [start, start+length), zero past the cell's end (np.take: half the time of
    indexing a strided view; its "clip" mode keeps positions in ``at`` and picks the mask of the bytes left)."""
    lengths = np.asarray(lengths, np.int64)
    return (np.take(at, starts + 8 * k if k else starts, mode="clip") &
            np.take(_LOW_BYTES, lengths - 8 * k if k else lengths, mode="clip"))


def cell_words(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, words: int) -> list:
    """Cells of ``buf`` as columns of u64, a gather per column: their lengths, then their first ``words`` words
    of bytes, as little-endian u64 (the bytes in memory order), zero past each cell's end. A word that fewer
    than half the cells reach is gathered for those cells only (one long word among short ones is common)."""
    at, cols = _word_at(buf), [lengths.astype(np.uint64)]
    for k in range(words):
        longer = np.flatnonzero(lengths > 8 * k) if k else None
        if longer is None or 2 * len(longer) > len(lengths):
            cols.append(_word(at, starts, lengths, k))
        else:
            cols.append(np.zeros(len(lengths), np.uint64))
            cols[-1][longer] = _word(at, np.take(starts, longer), np.take(lengths, longer), k)
    return cols


def extreme_cells(buf: np.ndarray, starts, sizes) -> tuple[int, int]:
    """The indices of the cells TileDB keeps as the least and the greatest of the cells [start, start+size) of
    ``buf`` (TileMetadataGenerator::min_max<char> and min_max_var, and the fragment's bound of them). It
    compares with strncmp over the shorter size, which stops at a NUL, then by size (the shorter is less),
    and keeps the first of equals: an order by the bytes before the first NUL, then by size. We compare
    those bytes a word at a time, big-endian, among the cells still tied; both ends share the first word."""
    starts, sizes = np.asarray(starts, np.int64), np.asarray(sizes, np.int64)
    zero, lengths = buf == 0, sizes
    if zero.any():  # each cell's bytes up to its first NUL
        nul = np.flatnonzero(zero)
        after = np.searchsorted(nul, starts)
        lengths = np.minimum(sizes, np.where(after < len(nul), nul[np.minimum(after, len(nul) - 1)] - starts, sizes))
    at = _word_at(buf)
    first = _word(at, starts, lengths, 0).byteswap()
    return _narrowed(at, starts, lengths, sizes, first, False), _narrowed(at, starts, lengths, sizes, first, True)


def _narrowed(at, starts, lengths, sizes, first, largest: bool) -> int:
    """:func:`extreme_cells`' least (``largest``: greatest) cell, from each cell's ``first`` word."""
    pick = np.max if largest else np.min
    tied, k = np.flatnonzero(first == pick(first)), 1
    while len(tied) > 1 and 8 * k < lengths[tied].max():
        word = _word(at, starts[tied], lengths[tied], k).byteswap()
        tied = tied[word == pick(word)]
        k += 1
    return int(tied[np.argmax(sizes[tied]) if largest else np.argmin(sizes[tied])])


def _check_offsets(offsets: np.ndarray, size: int):
    if len(offsets) and (offsets[0] != 0 or np.any(np.diff(offsets) < 0) or offsets[-1] > size):
        raise FormatError("the offsets do not start at 0 and increase within the data")


def _checked(data, offsets, terminated: bool) -> tuple:
    """(u8 bytes, i64 offsets, cell lengths) of cells at ``offsets`` of ``data``; ``terminated``: each cell is
    followed by one byte that is not its own (the writer's NUL, see ``StringRle.forward_strings``)."""
    buf = np.frombuffer(data, np.uint8)
    offsets = np.asarray(offsets, np.int64)
    _check_offsets(offsets, len(buf))
    lengths = np.diff(np.append(offsets, len(buf))) - terminated
    if terminated and (lengths < 0).any():
        raise ValueError("offsets: terminated cells are at least their terminator apart")
    return buf, offsets, lengths


def _cells(data, offsets, terminated: bool):
    """(u8 bytes, cell lengths, u64 columns equal in every row iff the cells are: the length, then the bytes
    zero-padded to whole words, which numpy compares and sorts eight bytes at a time)."""
    buf, offsets, lengths = _checked(data, offsets, terminated)
    words = -(-int(lengths.max(initial=0)) // 8)
    if len(lengths) * words <= len(buf) // 2 + len(lengths):  # short cells: a gather per word of all
        return buf, lengths, cell_words(buf, offsets, lengths, words)
    rows = np.zeros((len(lengths), 1 + words), np.uint64)
    rows[:, 0] = lengths
    cells = np.take(buf, byte_ranges(offsets, lengths)) if terminated else buf  # (without the terminators)
    rows.view(np.uint8).reshape(-1)[byte_ranges(8 * (1 + words) * np.arange(len(lengths)) + 8, lengths)] = cells
    return buf, lengths, list(np.ascontiguousarray(rows.T))


def _differs(cols: list) -> np.ndarray:
    """Whether each row of the columns differs from the one before it: a column at a time (``any(axis=1)``
    over a few columns cost ten times more)."""
    out = cols[0][1:] != cols[0][:-1]
    for col in cols[1:]:
        out |= col[1:] != col[:-1]
    return out


def _distinct(rows):
    """(first index of each distinct row, in sorted order; each row's group in that order), as np.unique's
    return_index and return_inverse: a stable sort by the u64 columns (a sort of the rows as opaque
    bytes costs numpy many times more)."""
    order = np.lexsort(rows.T[::-1])
    ordered = rows[order]
    new = np.ones(len(rows), bool)
    new[1:] = _differs(list(ordered.T))
    inverse = np.empty(len(rows), np.int64)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def equal_cells(cols: list, distinct: int) -> tuple[np.ndarray, np.ndarray]:
    """(one cell of each group of equal cells, the group of each cell), like np.unique's return_index and
    return_inverse in no particular order, of cells given as u64 columns (:func:`cell_words`: cells are equal
    iff every column is), about ``distinct`` of them different.

    A hash table in numpy, with some 16 slots per distinct cell, keeps one cell per slot; a cell equal, word
    for word, to its slot's cell joins that cell's group. Every cell of a string lands in the same slot, so
    either all join or all go round again, on other bits of the hash; what is left after two rounds is
    sorted (:func:`_distinct`). No sort of all the cells: numpy's sort of 262,144 u64 took 11.5 ms here, the
    table 2.5 ms a tile of 32,768 cells."""
    n = len(cols[0])
    hashes, bits = cell_hash(cols), max(_MIN_BITS, (_SPREAD * max(distinct, 1)).bit_length())
    group, firsts, todo = np.empty(n, np.int64), [], np.arange(n)
    for shift in (64 - bits, 64 - 2 * bits):  # the top bits of a multiplicative hash mix best
        every = len(todo) == n  # (the first round: every cell, no gathers of the columns)
        here = [hashes] + cols if every else [np.take(c, todo) for c in [hashes] + cols]
        slot = ((here[0] >> np.uint64(shift)) & np.uint64((1 << bits) - 1)).astype(np.intp)
        table, used = np.empty(1 << bits, np.intp), np.zeros(1 << bits, bool)
        table[slot], used[slot] = np.arange(len(todo)), True
        held = np.take(table, slot)  # (indices into ``here``)
        same = here[1] == np.take(here[1], held)
        for col in here[2:]:
            same &= col == np.take(col, held)
        group[todo[same]] = sum(map(len, firsts)) + np.take(np.cumsum(used) - 1, slot[same])
        firsts.append(todo[table[used]])
        todo = todo[~same]
    if len(todo):
        first, inverse = _distinct(np.stack([col[todo] for col in cols], axis=1))
        group[todo] = sum(map(len, firsts)) + inverse
        firsts.append(todo[first])
    return np.concatenate(firsts), group


def cell_hash(cols: list) -> np.ndarray:
    """A u64 hash of each cell of :func:`cell_words` columns."""
    out = cols[0] * _GOLDEN
    for col in cols[1:]:
        out ^= col
        out *= _GOLDEN
    return out


def sampled_distinct(cols: list) -> tuple[int, int]:
    """(about how many distinct cells, cells) among up to :data:`SAMPLE` spread over the cells of ``cols``:
    linear counting (Whang et al., 1990), from the share of a 65,536-bit table their hashes leave unset,
    within 1% at this size (1,965 for 1,973); an exact count's sort took three times as long."""
    pick = np.linspace(0, len(cols[0]) - 1, min(len(cols[0]), SAMPLE)).astype(np.int64)
    seen = np.zeros(1 << _COUNT_BITS, bool)
    seen[(cell_hash([np.take(col, pick) for col in cols]) >> np.uint64(64 - _COUNT_BITS)).astype(np.intp)] = True
    unset = max(1, len(seen) - int(np.count_nonzero(seen)))
    return min(len(pick), round(-len(seen) * math.log(unset / len(seen)))), len(pick)


#: cells sampled to guess how many distinct ones a tile has: sharing values pays from about one distinct cell
#: in four, and a sample this size sees up to some 2,000 distinct cells repeat
SAMPLE = 8192
#: table slots per distinct cell (a power of two above), and the fewest bits of a table
_SPREAD, _MIN_BITS = 16, 10
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_COUNT_BITS = 16  # bits of sampled_distinct's table: 8 per sampled cell  # 2**64 / golden ratio: Fibonacci hashing


def _assemble(fields, buf, starts, lengths) -> bytes:
    """Records of fixed-width big-endian ``fields`` each followed by bytes of ``buf`` [start, start+length): one
    gather from ``buf`` with the headers after it, each header a range as each string is (0.6 ms a tile of
    32,901 runs; scatters of the headers and the strings apart, 0.86)."""
    header = np.concatenate(fields, axis=1) if len(fields) > 1 else fields[0]
    n, width = header.shape
    source = np.concatenate([buf, header.reshape(-1)])
    range_starts, range_lengths = np.empty(2 * n, np.int64), np.empty(2 * n, np.int64)
    range_starts[0::2], range_starts[1::2] = np.arange(len(buf), len(buf) + width * n, width), starts
    range_lengths[0::2], range_lengths[1::2] = width, lengths
    return np.take(source, byte_ranges(range_starts, range_lengths)).tobytes()


def _entries(buf, starts, lengths, codes, repeats, total: int, expect: int, what: str) -> Entries:
    """Entries of the strings of ``buf`` [start, start+length), whose cells add up to ``total`` bytes."""
    if total != expect:
        raise FormatError(f"{what}: the cells add up to {total} bytes, the header says {expect}")
    return Entries(buf, starts, lengths, codes, repeats, total)


def _common_header(head: Header, data, what: str, limit: int):
    """(var data size, offsets size, the two field widths) from the front of string RLE/dictionary metadata."""
    nmd, ndata, size, csize, osize = (head.u32() for _ in range(5))
    if (nmd, ndata) != (0, 1):
        raise FormatError(f"{what}: expected 0 metadata parts and 1 data part, found {nmd} and {ndata}")
    if csize != len(data):
        raise FormatError(f"{what}: the header says {csize} encoded bytes but the chunk holds {len(data)}")
    if size > limit:
        raise FormatError(f"{what}: the header claims {size} bytes, more than the chunk holds")
    widths = head.u8(), head.u8()
    if any(w not in _WIDTHS for w in widths):
        raise FormatError(f"{what}: field widths {widths[0]} and {widths[1]} are not 1, 2, 4 or 8")
    return size, osize, widths


def _common_fields(size: int, offsets, encoded_size) -> bytes:
    return np.array([0, 1, size, encoded_size, 8 * len(offsets)], "<u4").tobytes()


def _runs(data, offsets, terminated: bool) -> tuple:
    """(the length of each run of equal cells, (bytes, starts, lengths) of each run's string), found by
    comparing neighbours' words (pyarrow's dictionary_encode, then neighbours' ids, took as long)."""
    buf, lengths, cols = _cells(data, offsets, terminated)
    first = np.flatnonzero(np.concatenate([[True], _differs(cols)]))
    return np.diff(np.append(first, len(lengths))), (buf, np.asarray(offsets, np.int64)[first], lengths[first])


def _dictionary(data, offsets, terminated: bool) -> tuple:
    """(each cell's id, (bytes, starts, lengths) of each distinct string), ids in the order strings are first
    seen (TileDB's): :func:`_arrow_coded` through pyarrow (1.9 ms a tile of 131,072 cells of 2,005
    words), else through :func:`equal_cells` (5.6 ms)."""
    coded = _arrow_coded(data, offsets, terminated)
    if coded is not None:
        return coded
    buf, lengths, cols = _cells(data, offsets, terminated)
    _, group = equal_cells(cols, sampled_distinct(cols)[0])
    first = np.full(int(group.max()) + 1, len(group), np.int64)
    np.minimum.at(first, group, np.arange(len(group)))  # each string's first cell
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    words = first[order]
    return rank[group], (buf, np.asarray(offsets, np.int64)[words], lengths[words])


def _arrow_coded(data, offsets, terminated: bool):
    """pyarrow's ``dictionary_encode`` of the cells, which numbers strings in the order first seen: (each
    cell's id, (bytes, starts, lengths) of each distinct string); None without pyarrow (:func:`arrow`).
    Terminated cells are encoded with their terminators, which makes equal cells equal all the same."""
    pa = arrow(len(offsets))
    if pa is None:
        return None
    _, offsets, _ = _checked(data, offsets, terminated)
    bounds = np.append(offsets, len(data))
    cells = pa.Array.from_buffers(pa.large_binary(), len(offsets), [None, pa.py_buffer(bounds), pa.py_buffer(data)])
    coded = cells.dictionary_encode()
    buf, starts, lengths = _arrow_entries(coded.dictionary)
    return arrow_ints(coded.indices), (buf, starts, lengths - terminated)


def arrow_ints(ints) -> np.ndarray:
    """A pyarrow integer array without nulls as numpy values over its buffer (its ``to_numpy`` imports
    pandas where it is installed: 0.2 s in a process's first read or write of strings)."""
    width = ints.type.bit_width // 8
    return np.frombuffer(ints.buffers()[1], f"<i{width}", len(ints), ints.offset * width)


def _arrow_entries(strings) -> tuple:
    """(u8 bytes, starts, lengths) of a pyarrow ``large_binary`` array's values."""
    _, bounds, values = strings.buffers()
    bounds = np.frombuffer(bounds, np.int64)[strings.offset:strings.offset + len(strings) + 1]
    buf = np.frombuffer(values, np.uint8) if values is not None else np.zeros(0, np.uint8)
    return buf, bounds[:-1], np.diff(bounds)


@register(FilterType.RLE, strings=True)
class StringRle:
    metadata = StringRleHeader

    def forward_strings(self, ctx, data, offsets, terminated: bool = False):
        """(metadata, data) of the cells at ``offsets`` of ``data``, back to back, or ``terminated``: each
        followed by one byte that is not its own (the writer's NUL after each cell, read in place rather than
        copied without them: 0.6 ms a tile of 131,072 cells)."""
        runs, (buf, starts, run_lens) = _runs(data, offsets, terminated)
        rle_w = bytesize(int(runs.max()))
        # TileDB sizes the length field without the last run's string (rle_compressor.cc)
        str_w = bytesize(int(max(run_lens[0], run_lens[:-1].max(initial=0))))
        encoded = _assemble([_be(runs, rle_w), _be(run_lens, str_w)], buf, starts, run_lens)
        md = _common_fields(len(data) - terminated * len(offsets), offsets, len(encoded)) + bytes([rle_w, str_w])
        return [md], [encoded]

    def reverse_entries(self, ctx, metadata, data):
        head = Header(metadata, "string RLE")
        size, osize, (rle_w, str_w) = _common_header(head, data, "string RLE", ctx.limit)
        buf = np.frombuffer(data, np.uint8)
        at = _records(buf, rle_w, str_w, "string RLE")
        runs, lens, starts = _be_at(buf, at, rle_w), _be_at(buf, at + rle_w, str_w), at + rle_w + str_w
        if (runs < 0).any() or (runs > osize).any() or runs.sum() > osize:
            raise FormatError(f"string RLE: the runs make {runs.sum()} cells, more than the {osize} offsets allowed")
        return head.rest(), _entries(buf, starts, lens, None, runs, int((runs * lens).sum()), size, "string RLE")


@register(FilterType.DICTIONARY, strings=True)
class StringDictionary:
    metadata = DictionaryHeader

    def forward_strings(self, ctx, data, offsets, terminated: bool = False):
        """As ``StringRle.forward_strings``."""
        ids, (buf, starts, lengths) = _dictionary(data, offsets, terminated)
        ids_w, len_w = bytesize(len(offsets)), bytesize(int(lengths.max()))
        dictionary = _assemble([_be(lengths, len_w)], buf, starts, lengths)
        encoded = _be(ids, ids_w).tobytes()
        md = (_common_fields(len(data) - terminated * len(offsets), offsets, len(encoded)) + bytes([ids_w, len_w]) +
              np.array([len(dictionary)], "<u4").tobytes() + dictionary)
        return [md], [encoded]

    def reverse_entries(self, ctx, metadata, data):
        head = Header(metadata, "string dictionary")
        size, osize, (ids_w, len_w) = _common_header(head, data, "string dictionary", ctx.limit)
        buf = np.frombuffer(head.take(head.u32()), np.uint8)
        at = _records(buf, 0, len_w, "string dictionary")
        lens, starts = _be_at(buf, at, len_w), at + len_w
        if len(data) % ids_w:
            raise FormatError(f"string dictionary: {len(data)} bytes are not whole {ids_w}-byte ids")
        ids = _from_be(np.frombuffer(data, np.uint8), ids_w)
        if len(ids) > osize:
            raise FormatError(f"string dictionary: {len(ids)} cells, more than the {osize} offsets allowed")
        wrong = ids[(ids >= len(lens)) | (ids < 0)]
        if len(wrong):
            raise FormatError(f"string dictionary: id {int(wrong[0]) % 2**64} but the dictionary has {len(lens)} entries")
        return head.rest(), _entries(buf, starts, lens, ids, None, int(lens[ids].sum()), size, "string dictionary")


@register(FilterType.DICTIONARY)
class Dictionary(Codec):
    """Dictionary encoding outside var strings: TileDB refuses it, and so do we."""

    metadata = DictionaryHeader

    def forward(self, ctx, metadata, data):
        raise FormatError("dictionary encoding only applies to var-size strings (ASCII from v13, UTF-8 from v17)")

    reverse = forward
