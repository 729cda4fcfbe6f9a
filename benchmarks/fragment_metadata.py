"""Parse time of a fragment metadata file with 1,000,000 tiles: the footer, then the tile offsets.

The file is made with our builders (FragmentMetadata(...).build()) for the schema of the corpus case
v23 sparse_delete (dimension d int64, attributes a int32 and s var UTF-8): every section holds one entry
per tile, the R-tree has fanout 10. Run: python benchmarks/fragment_metadata.py
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from construct import Container, ListContainer

from tdbformat.structs.array_schema import ArraySchema
from tdbformat.structs.fragment import FragmentMetadata, index_fields

TILES = 1_000_000
CAPACITY = 4
SCHEMA = next((Path(__file__).parents[1] / "tests/data/corpus").glob("v23_*/sparse_delete/array/__schema/__*"))


def make(schema) -> bytes:
    fields = index_fields(schema, 23)
    n = len(fields)
    tiles = np.arange(TILES, dtype="<u8")
    offsets = lambda size: tiles * size  # noqa: E731  (tiles of equal on-disk size)
    empty = np.zeros(0, "<u8")
    lo = (tiles * CAPACITY).astype("<i8")
    mbr = np.dtype([("d", "<i8", (2,))])
    levels, leaves = [], np.stack([lo, lo + CAPACITY - 1], axis=1)
    while True:
        level = np.zeros(len(leaves), mbr)
        level["d"] = leaves
        levels.insert(0, Container(mbrs=level))
        if len(leaves) == 1:
            break
        groups = np.arange(0, len(leaves), 10)
        leaves = np.stack([leaves[groups, 0], np.maximum.reduceat(leaves[:, 1], groups)], axis=1)
    per_field = {  # a (int32), s (var), __coords (unused), d (int64)
        "tile_offsets": [offsets(40), offsets(60), empty, offsets(48)],
        "tile_var_offsets": [empty, offsets(90), empty, empty],
        "tile_var_sizes": [empty, np.full(TILES, 24, "<u8"), empty, empty],
        "tile_validity_offsets": [empty] * n,
        "tile_mins": [Container(fixed=(lo * 10).astype("<i4"), var=b"")] + [Container(fixed=empty, var=b"")] * 3,
        "tile_maxes": [Container(fixed=(lo * 10 + 30).astype("<i4"), var=b"")] + [Container(fixed=empty, var=b"")] * 3,
        "tile_global_order_mins": [Container(fixed=lo, var=b"")],
        "tile_global_order_maxes": [Container(fixed=lo + CAPACITY - 1, var=b"")],
        "tile_sums": [(lo * 40 + 60).astype("<i8"), empty, empty, empty],
        "tile_null_counts": [np.zeros(TILES, "<u8")] + [empty] * 3,
    }
    zeros = np.zeros(n, "<u8")
    footer = Container(
        version=23, array_schema_name=SCHEMA.name, dense=False, null_non_empty_domain=False,
        non_empty_domain=ListContainer([np.array([0, TILES * CAPACITY - 1], "<i8")]),
        sparse_tile_num=TILES, last_tile_cell_num=CAPACITY, has_timestamps=False, has_delete_meta=False,
        file_sizes=np.array([40 * TILES, 60 * TILES, 0, 48 * TILES], "<u8"),
        file_var_sizes=np.array([0, 90 * TILES, 0, 0], "<u8"), file_validity_sizes=zeros,
        rtree_offset=0, tile_offsets_offsets=zeros, tile_var_offsets_offsets=zeros, tile_var_sizes_offsets=zeros,
        tile_validity_offsets_offsets=zeros, tile_min_offsets=zeros, tile_max_offsets=zeros,
        tile_sum_offsets=zeros, tile_null_count_offsets=zeros, fragment_min_max_sum_null_count_offset=0,
        processed_conditions_offset=0,
        optional_sections=ListContainer([Container(identifier=0, data=Container(
            min_offsets=np.zeros(1, "<u8"), max_offsets=np.zeros(1, "<u8")))]),
    )
    summary = [Container(min=b"", max=b"", sum=0, null_count=0) for _ in range(n)]
    return FragmentMetadata(footer, schema=schema, rtree=Container(fanout=10, levels=ListContainer(levels)),
                            fragment_summary=summary, processed_conditions=[], **per_field).build()


def main():
    schema = ArraySchema.parse(SCHEMA.read_bytes())
    start = time.perf_counter()
    data = make(schema)
    built = time.perf_counter() - start
    print(f"built {len(data) / 1e6:.1f} MB with {TILES:,} tiles in {built:.2f} s")
    best = [float("inf")] * 3
    for _ in range(5):
        start = time.perf_counter()
        fm = FragmentMetadata.parse(data, schema=schema)
        footer = time.perf_counter() - start
        offsets = fm.tile_offsets
        first = offsets[0]
        one = time.perf_counter() - start
        arrays = [first] + [offsets[i] for i in range(1, len(offsets))]
        every = time.perf_counter() - start
        best = [min(b, t) for b, t in zip(best, (footer, one, every))]
    assert [len(a) for a in arrays] == [TILES, TILES, 0, TILES] and arrays[1][-1] == 60 * (TILES - 1)
    footer, one, every = (t * 1e3 for t in best)
    print(f"best of 5: footer {footer:.2f} ms; footer + tile offsets of one field {one:.2f} ms; "
          f"footer + tile offsets of all {len(arrays)} fields ({3 * TILES:,} offsets) {every:.2f} ms")


if __name__ == "__main__":
    main()
