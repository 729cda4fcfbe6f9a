"""The rules about one fragment's data: file sizes, tile offsets, every tile decoded (through the reader's
:class:`~tdbformat.array.tiles.Tiles`) with its cell count, the last tile, the dense tile count, and the tile
statistics recomputed from the cells; sparse fragments go on to :mod:`.sparse`."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...array import order
from ...array.cells import cell_dtype
from ...array.fragment import _KINDS
from ...array.dense import _tile_jobs
from ...layout import FRAGMENT_METADATA
from ...write.fragment_writer import _saturating_sum as saturating_sum
from ...write.fragment_writer import _sum_dtype as sum_dtype
from ...enums import FilterType
from ...errors import FormatError
from ...structs.array_schema import attributes, value_dtype
from ...structs.fragment import data_files
from ...versions import FEATURES
from .sparse import check_sparse

__all__ = ["check_fragment", "data_fields", "field_offsets"]

#: TileDB keeps no min/max for these (TileMetadataGenerator::has_min_max_metadata), nor sums
_NO_STATS = {"ANY", "BLOB", "GEOM_WKB", "GEOM_WKT", "STRING_UTF8", "STRING_UTF16", "STRING_UTF32", "STRING_UCS2",
             "STRING_UCS4", "STRING_ASCII", "CHAR"}


def data_fields(frag) -> list[int]:
    """Index-space positions of the fields that have tiles in ``frag``: the attributes, and for sparse
    fragments the coordinates (``__coords`` before v5, each dimension from v5) and the cell timestamps and
    delete metadata (consolidated fragments)."""
    fields = frag.metadata.index_fields
    n_attrs = len(attributes(frag.schema))
    if frag.dense:
        return list(range(n_attrs))
    per_dim = FEATURES["coordinates_per_dimension"](frag.version)
    return list(range(n_attrs)) + [i for i in range(n_attrs, len(fields)) if (fields[i].name != "__coords") == per_dim]


def field_offsets(frag, kind: str, idx: int):
    """(tile offsets as u64, file size the footer records) of ``kind`` ("", "_var", "_validity") of field
    ``idx``; None where the fragment has none."""
    meta = frag.metadata
    name, sizes, _ = _KINDS[kind]
    per_field = meta.legacy[name] if meta.legacy is not None else getattr(meta, name)
    recorded = getattr(meta, sizes)
    if per_field is None or recorded is None or idx >= len(per_field) or idx >= len(recorded):
        return None
    offsets = per_field[idx].data if meta.legacy is not None else per_field[idx]
    return np.asarray(offsets, "<u8"), int(recorded[idx])


def _kinds(frag, idx) -> list[str]:
    info = frag.metadata.index_fields[idx]
    return [""] + (["_var"] if info.var else []) + (["_validity"] if info.nullable else [])


def check_fragment(storage, frag, tiles, report, pool) -> list:
    """Run the data rules over ``frag``; the paths of the data files it names."""
    fm, paths = frag.metadata, []
    try:
        tile_num = fm.tile_num
    except FormatError as e:
        report.error(e, rule="dense-tile-count" if frag.dense else "tile-offsets", file=frag.path)
        return paths
    good = {}
    for idx in data_fields(frag):
        ok = True
        for kind in _kinds(frag, idx):
            path = storage.join(frag.path, data_files(fm, idx)[("", "_var", "_validity").index(kind)])
            paths.append(path)
            ok &= _file(storage, frag, idx, kind, path, tile_num, report)
        good[idx] = ok
    readable = [idx for idx, ok in good.items() if ok]  # their offsets list tile_num tiles: a bounded count
    try:
        boxes = _dense_boxes(frag) if frag.dense and readable else None
    except FormatError as e:
        report.error(e, rule="dense-tile-count", file=frag.path)
        return paths
    report.progress(total=tile_num * len(readable))
    decoded = {idx: _decode_field(frag, idx, tile_num, tiles, boxes, report, pool) for idx in readable}
    if not frag.dense and report.wants("rtree-mbrs", "global-order", "duplicates"):
        check_sparse(frag, tiles, decoded, report, pool)
    return paths


def _file(storage, frag, idx, kind, path, tile_num, report) -> bool:
    """File size and tile offsets of one data file; whether its tiles can be read at all."""
    info = frag.metadata.index_fields[idx]
    found = field_offsets(frag, kind, idx)
    if found is None:
        report.add("file-parses", f"fragment {frag.name}: the metadata has no {kind or 'fixed'} tile offsets for "
                   f"field {info.name}", file=path)
        return False
    offsets, size = found
    disk = storage.size(path) if storage.is_file(path) else None
    if disk != size and not (disk is None and size == 0):
        report.add("file-sizes", f"fragment {frag.name}, field {info.name}: the metadata records another size "
                   "than the file has on disk" + (" (the file is missing)" if disk is None else ""),
                   file=path, field=_KINDS[kind][1], expected=size, found=disk)
    rule = "dense-tile-count" if frag.dense else "tile-offsets"
    if len(offsets) != tile_num:
        what = "its non-empty domain covers" if frag.dense else "the footer counts"
        report.add(rule, f"fragment {frag.name}, field {info.name}: {len(offsets)} tile offsets, but {what} "
                   f"{tile_num} tiles", file=path, field=_KINDS[kind][0], expected=tile_num, found=len(offsets))
        return False
    if not len(offsets):
        return True
    bad = np.flatnonzero(np.diff(offsets.astype(np.int64)) <= 0)
    where = [(0, "the first tile starts at", "0")] if offsets[0] != 0 else []
    where += [(int(k) + 1, f"tile {int(k) + 1} starts at", f"> {int(offsets[k])}") for k in bad[:1]]
    if offsets[-1] >= size:
        where.append((len(offsets) - 1, "the last tile starts at", f"< {size} (the file size)"))
    for k, what, expected in where:
        report.add("tile-offsets", f"fragment {frag.name}, field {info.name}{kind}: {what} {int(offsets[k])}",
                   file=path, field=f"{_KINDS[kind][0]}[{k}]", offset=int(offsets[k]), expected=expected,
                   found=int(offsets[k]))
    return not where


def _dense_boxes(frag) -> dict:
    """Per tile of a dense fragment, the N-D slice of the tile its non-empty domain covers: TileDB computes
    tile statistics over the written cells, not the cells that pad a tile (since 2.12: DISCREPANCIES.md)."""
    ned = frag.non_empty_domain
    dims = frag.schema.domain.dimensions
    _, extents = order.tile_grid(dims)
    boxes = {k: src for k, src, _ in _tile_jobs(SimpleNamespace(schema=frag.schema), frag, [r[0] for r in ned],
                                                 [r[1] for r in ned])}
    return {"extents": extents, "cell_order": frag.schema.cell_order, "src": boxes}


def _decode_field(frag, idx, tile_num, tiles, boxes, report, pool) -> list:
    """Decode every tile of field ``idx``: per tile a dict (cell count, statistics) or the FormatError; the
    decode, count and statistics findings reported."""
    results = list(pool.map(lambda k: _tile(frag, idx, k, tiles, boxes), range(tile_num)))
    report.progress(done=tile_num)
    fm = frag.metadata
    info = fm.index_fields[idx]
    cells_per_tile = (int(np.prod([int(d.tile_extent) for d in frag.schema.domain.dimensions]))
                      if frag.dense else int(frag.schema.capacity))
    var_sizes = fm.tile_var_sizes[idx] if info.var and fm.tile_var_sizes is not None else None
    for k, r in enumerate(results):
        if isinstance(r, FormatError):
            report.error(r, rule="tile-decodes")
            continue
        last = k == tile_num - 1 and not frag.dense
        expected = int(fm.last_tile_cell_num) if last else cells_per_tile
        path, start = _where(tiles, frag, idx, "", k)
        if r["n"] != expected:
            report.add("last-tile-cells" if last else "tile-decodes",
                       f"fragment {frag.name}, field {info.name}, tile {k} holds {r['n']} cells, but the metadata "
                       + ("records last_tile_cell_num " if last else "implies ") + str(expected),
                       file=path, field="last_tile_cell_num" if last else None, offset=start, expected=expected,
                       found=r["n"])
        if var_sizes is not None and k < len(var_sizes) and r["var_size"] != int(var_sizes[k]):
            report.add("tile-decodes", f"fragment {frag.name}, field {info.name}, tile {k}: the var tile unfilters "
                       "to another size than tile_var_sizes records", file=_where(tiles, frag, idx, "_var", k)[0],
                       field=f"tile_var_sizes[{idx}][{k}]", offset=_where(tiles, frag, idx, "_var", k)[1],
                       expected=int(var_sizes[k]), found=r["var_size"])
        if info.nullable and r["valid_n"] != r["n"]:
            report.add("tile-decodes", f"fragment {frag.name}, field {info.name}, tile {k}: {r['valid_n']} "
                       f"validity values for {r['n']} cells", file=_where(tiles, frag, idx, "_validity", k)[0],
                       offset=_where(tiles, frag, idx, "_validity", k)[1], expected=r["n"], found=r["valid_n"])
    if report.wants("tile-stats"):
        _check_stats(frag, idx, results, tiles, report)
    return results


def _where(tiles, frag, idx, kind, k):
    name, start, _ = frag.tile_span(kind, idx, k)
    return tiles.storage.join(frag.path, name), start


def _tile(frag, idx, k, tiles, boxes):
    """Tile ``k`` of field ``idx`` decoded: {"n": cells, "var_size", "valid_n", "stats"}, or the FormatError."""
    info = frag.metadata.index_fields[idx]
    try:
        # dense tiles: "stats" over the cells of the non-empty domain (TileDB 2.12+), "whole" over the whole
        # padded tile (TileDB before 2.12, #3527; DISCREPANCIES.md)
        out = {"var_size": None, "valid_n": None, "stats": None, "whole": None}
        if info.var:
            data, offsets = tiles.raw(frag, idx, "_var", k, strings=True)
            out["var_size"] = len(data)
            if offsets is None:
                raw = tiles.raw(frag, idx, "", k)
                _whole(raw, 8, frag, info, k)
                offsets = np.frombuffer(raw, "<u8")
                _rising(offsets, len(data), frag, idx, k, tiles)
            out["n"] = len(offsets)
        else:
            data = tiles.raw(frag, idx, "", k)
            out["n"] = _whole(data, info.datatype.size * info.cell_val_num, frag, info, k)
            if not frag.dense and any(info.name == d.name for d in frag.metadata.dimensions):
                out["values"] = np.frombuffer(data, cell_dtype(info))  # kept for the coordinate rules
        valid = None
        if info.nullable:
            valid = np.frombuffer(tiles.raw(frag, idx, "_validity", k), np.uint8)
            out["valid_n"] = len(valid)
        if _has_stats(info) and (valid is None or len(valid) == out["n"]):
            values = np.frombuffer(data, value_dtype(info.datatype))
            out["stats"] = out["whole"] = _stats(values, valid, info)
            src = boxes["src"].get(k) if boxes is not None else None
            if src is not None and out["n"] == int(np.prod(boxes["extents"])) and not _covers(src, boxes["extents"]):
                def written(a):
                    return order.as_tile(a, boxes["extents"], boxes["cell_order"])[boxes["src"][k]].ravel()
                out["stats"] = _stats(written(values), None if valid is None else written(valid), info)
        return out
    except FormatError as e:
        return e


def _rising(offsets, var_size: int, frag, idx, k, tiles) -> None:
    """Cell offsets start at 0, never decrease, and stay inside the var tile (what the reader's split_var
    trusts); else a FormatError at the offsets tile."""
    bad = np.flatnonzero(np.diff(offsets.astype(np.int64)) < 0)
    if len(offsets) and (offsets[0] != 0 or len(bad) or int(offsets[-1]) > var_size):
        path, start = _where(tiles, frag, idx, "", k)
        cell = 0 if offsets[0] != 0 else int(bad[0]) + 1 if len(bad) else len(offsets) - 1
        raise FormatError(f"fragment {frag.name}, field {frag.metadata.index_fields[idx].name}, tile {k}: cell "
                          f"{cell}'s offset {int(offsets[cell])} does not rise from 0 to at most the {var_size} bytes "
                          "of the var tile", file=str(path), offset=start, version=frag.version)


def _whole(data, cell: int, frag, info, k) -> int:
    if len(data) % cell:
        raise FormatError(f"fragment {frag.name}, field {info.name}, tile {k}: the tile holds {len(data)} bytes, "
                          f"not whole {cell}-byte cells", file=str(frag.path), version=frag.version)
    return len(data) // cell


def _covers(src, extents) -> bool:
    """Whether the slices ``src`` take the whole tile."""
    return all(s.start == 0 and s.stop == int(e) for s, e in zip(src, extents))


def _has_stats(info) -> bool:
    """TileDB keeps min, max and sum for it, and they can be recomputed from the stored cells: a lossy filter
    (float scaling, WebP) stores other values than the ones TileDB computed them from."""
    lossy = any(f.type in (FilterType.SCALE_FLOAT, FilterType.WEBP) for f in (info.filters or {}).get("filters", ()))
    return not info.var and info.cell_val_num == 1 and info.datatype.name not in _NO_STATS and not lossy


def _stats(values: np.ndarray, valid, info):
    """(min, max, sum, null count) of a tile's valid cells as TileDB computes them, sums clamped at their
    type's limits (None where it keeps none: no valid cell, NaNs)."""
    nulls = 0 if valid is None else int(np.count_nonzero(valid == 0))
    if valid is not None:
        values = values[valid != 0]
    if not len(values) or (values.dtype.kind == "f" and np.isnan(values).any()):
        return None, None, None, nulls
    lo, hi = values.min(), values.max()
    return lo, hi, saturating_sum(values, sum_dtype(values.dtype.kind), (lo, hi)).item(), nulls


#: section -> (the footer field that locates it, what one value is)
_STATS = {"tile_mins": ("tile_min_offsets", "min"), "tile_maxes": ("tile_max_offsets", "max"),
          "tile_sums": ("tile_sum_offsets", "sum"), "tile_null_counts": ("tile_null_count_offsets", "null count")}


def _check_stats(frag, idx, results, tiles, report) -> None:
    """The stored tile mins, maxes, sums and null counts of field ``idx`` against the recomputed ones."""
    fm = frag.metadata
    info = fm.index_fields[idx]
    n = len(results)
    for name, pos in (("tile_mins", 0), ("tile_maxes", 1), ("tile_sums", 2), ("tile_null_counts", 3)):
        if (name != "tile_null_counts" and not _has_stats(info)) or (name == "tile_null_counts" and not info.nullable):
            continue
        section = getattr(fm, name)
        if section is None or idx >= len(section):
            continue
        try:
            stored = section[idx]
        except FormatError:
            continue  # reported by file-parses
        stored = stored.fixed if name in ("tile_mins", "tile_maxes") else stored
        if len(stored) != n:
            continue  # TileDB kept none for this field (dense fragments of some versions)
        have = [k for k, r in enumerate(results) if isinstance(r, dict) and r["stats"] is not None
                and r["stats"][pos] is not None]
        if not have:
            continue
        got = stored[have]
        same = np.zeros(len(have), bool)
        for which in ("whole", "stats"):  # see _tile: TileDB before 2.12 counted a dense tile's padding too
            want = np.array([(results[k][which] or results[k]["stats"])[pos] for k in have], dtype=stored.dtype)
            same |= np.isclose(got, want, rtol=1e-9, atol=0) if stored.dtype.kind == "f" and pos == 2 else got == want
        if np.all(same):
            continue
        k = have[int(np.flatnonzero(~same)[0])]
        section_at = fm.footer[_STATS[name][0]][idx]
        report.add("tile-stats", f"fragment {frag.name}, field {info.name}, tile {k}: the stored "
                   f"{_STATS[name][1]} lies ({int(np.count_nonzero(~same))} tiles differ)",
                   file=tiles.storage.join(frag.path, FRAGMENT_METADATA),
                   structure=name, field=f"{name}[{idx}][{k}]", offset=int(section_at),
                   expected=want[np.flatnonzero(~same)[0]].item(), found=got[np.flatnonzero(~same)[0]].item())
