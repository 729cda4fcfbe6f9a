"""Fragment consolidation as TileDB does it (fragment_consolidator.cc), at the array's own format version:
:func:`consolidate` with TileDB-Py's arguments and TileDB's ``sm.consolidation.*`` config keys.

A step merges a run of fragments (chosen by TileDB's step algorithm, :func:`plan`) into one fragment named
``__<t1 of the first>_<t2 of the last>_<uuid>_<v>``, then lists what it replaces in a vacuum file
(``__commits/<name>.vac`` from v12, ``<name>.vac`` in the array folder before; its lines relative to the
array from v19, absolute URIs before). Sparse arrays from v15 keep every version of every cell with its
timestamp (``__timestamps``), and from v16, unless ``purge_deleted_cells``, the cells a delete commit removed
with its timestamp and index (``__delete_timestamps``, ``__delete_condition_index``) when a delete follows
the first fragment or a fragment carries them; the new fragment lists every delete commit as processed.
Dense arrays merge into one dense fragment over the union of the non-empty domains (fill values where no
fragment wrote), or cut at ``max_fragment_size`` into several, each a rectangle of tiles, once TileDB's
checks say no older fragment shows through.

The new fragment is invisible until its commit (``.wrt``/``.ok``) is renamed into place; the old fragments
stay readable until the vacuum file lands, and are removed only by :func:`~tdbformat.write.vacuum.vacuum`.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .. import layout as directory
from ..array import Array, open_array
from ..array.dense_tiles import check_in_domain
from .create import new_uuid
from .merge import merge_dense, merge_sparse
from .writer import open_writer
from .vacuum_lists import VACUUM_FILES, vacuum_lines
from ..enums import ArrayType
from ..errors import FormatError
from ..filters.pipeline import MAX_CHUNK
from ..structs.array_schema import attributes, dimensions
from ..structs.commits import VacuumFile
from ..versions import FEATURES

__all__ = ["consolidate", "plan", "parse_config", "ConsolidationConfig"]

_U32, _U64 = 2**32 - 1, 2**64 - 1
MODES = ("fragments", "commits", "fragment_meta", "array_meta", "group_meta")
#: TileDB's defaults (tiledb.Config() of TileDB 2.30); buffer_size 0: not set (TileDB then sizes its buffers
#: from sm.mem.total_budget, 10 GiB)
_DEFAULTS = {"mode": "fragments", "step_min_frags": _U32, "step_max_frags": _U32, "step_size_ratio": 0.0,
             "steps": _U32, "amplification": 1.0, "buffer_size": 0, "max_fragment_size": _U64,
             "purge_deleted_cells": False, "timestamp_start": 0, "timestamp_end": _U64}
_PREFIX = "sm.consolidation."
_TOTAL_BUDGET, _TOTAL_KEY = 10 * 2**30, "sm.mem.total_budget"

WITH_TIMESTAMPS = FEATURES["consolidation_with_timestamps"]
DELETE_META = FEATURES["consolidation_delete_meta"]
MAX_FRAGMENT_SIZE = FEATURES["consolidation_max_fragment_size"]


@dataclass(frozen=True)
class ConsolidationConfig:
    """The ``sm.consolidation.*`` settings (TileDB's names without the prefix)."""

    mode: str
    step_min_frags: int
    step_max_frags: int
    step_size_ratio: float
    steps: int
    amplification: float
    buffer_size: int
    max_fragment_size: int
    purge_deleted_cells: bool
    timestamp_start: int
    timestamp_end: int
    total_budget: int = _TOTAL_BUDGET  # sm.mem.total_budget


def _value(name: str, raw, default):
    """``raw`` (a config string, or a Python value) as the type of ``default``, or ValueError naming the key."""
    try:
        if isinstance(default, bool):
            text = str(raw).strip().lower()
            if text not in ("true", "false", "1", "0"):
                raise ValueError
            return text in ("true", "1")
        if isinstance(default, float):
            return float(np.float32(float(raw)))  # TileDB keeps these as float
        if isinstance(default, int):
            value = int(str(raw).strip()) if not isinstance(raw, (int, np.integer)) or isinstance(raw, bool) else int(raw)
            if not 0 <= value <= (_U32 if default == _U32 else _U64):
                raise ValueError
            return value
        return str(raw)
    except (TypeError, ValueError):
        raise ValueError(f"config: {name} = {raw!r} is not a valid {type(default).__name__}") from None


def parse_config(config=None, timestamp=None, mode: str | None = None) -> ConsolidationConfig:
    """TileDB's consolidation settings from ``config`` (a dict, or anything with ``items()`` such as a
    ``tiledb.Config``; other keys are ignored), ``timestamp`` ((start, end) ms, as TileDB-Py's
    ``consolidate(timestamp=)``) and ``mode``; checked as FragmentConsolidator::set_config checks them."""
    items = {} if config is None else dict(config.items()) if hasattr(config, "items") else None
    if items is None:
        raise TypeError(f"config: expected a mapping of TileDB config keys, not {type(config).__name__}")
    values = dict(_DEFAULTS)
    for k, raw in items.items():
        if isinstance(k, str) and k.startswith(_PREFIX) and k[len(_PREFIX):] in _DEFAULTS:
            values[k[len(_PREFIX):]] = _value(k, raw, _DEFAULTS[k[len(_PREFIX):]])
    if _TOTAL_KEY in items:
        values["total_budget"] = _value(_TOTAL_KEY, items[_TOTAL_KEY], _U64 - 1)
    if mode is not None:
        values["mode"] = mode
    if timestamp is not None:
        if not isinstance(timestamp, (tuple, list)) or len(timestamp) != 2:
            raise ValueError(f"timestamp: expected (start, end) in ms, not {timestamp!r}")
        for name, t in zip(("timestamp_start", "timestamp_end"), timestamp):
            if t is not None:
                values[name] = _value(_PREFIX + name, t, _DEFAULTS[name])
    cfg = ConsolidationConfig(**values)
    if cfg.mode not in MODES:
        raise ValueError(f"config: {_PREFIX}mode must be one of {', '.join(MODES)}, not {cfg.mode!r}")
    if cfg.step_min_frags > cfg.step_max_frags:
        raise ValueError("config: step_min_frags is larger than step_max_frags")
    if not 0.0 <= cfg.step_size_ratio <= 1.0:
        raise ValueError("config: step_size_ratio must be in [0.0, 1.0]")
    if cfg.amplification < 0:
        raise ValueError("config: amplification must be non-negative")
    return cfg


# --- the step algorithm (FragmentConsolidator::compute_next_to_consolidate) ---

@dataclass
class _Info:
    """What the step algorithm knows of a fragment (SingleFragmentInfo)."""

    name: str
    timestamp_range: tuple
    size: int
    ned: list
    expanded: list
    dense: bool


def _union(a, b):
    return [(min(x[0], y[0]), max(x[1], y[1])) for x, y in zip(a, b)] if a else list(b)


def _overlap(a, b) -> bool:
    return bool(a) and bool(b) and all(x[0] <= y[1] and y[0] <= x[1] for x, y in zip(a, b))


def _cell_num(r) -> int:
    out = 1
    for lo, hi in r:
        out *= int(hi) - int(lo) + 1
    return out


def _expand_to_tiles(r, schema):
    """``r`` grown to whole tiles of ``schema`` (CurrentDomain::expand_to_tiles): exact integers, no float.
    Where the schema sets a current domain (v22+), TileDB 2.30 grows a copy of each range and leaves ``r``
    as it is (spec_versions/DISCREPANCIES.md), which its step algorithm's amplification then counts."""
    current = schema.get("current_domain")
    if current is not None and not current.empty:
        return list(r)
    out = []
    for (lo, hi), d in zip(r, schema.domain.dimensions):
        start, ext = int(d.domain[0]), int(d.tile_extent)
        out.append((start + (int(lo) - start) // ext * ext, start + ((int(hi) - start) // ext + 1) * ext - 1))
    return out


def _next(infos, anterior, cfg, dims, dense):
    """(first, last) indexes of the run of ``infos`` the next step merges, and its union, or None. Row i of
    TileDB's matrices is the runs of i + 1 fragments (a run breaks where two neighbours' size ratio, in
    float32, is under step_size_ratio, or, dense, where it is not consolidatable); a row at a time in numpy."""
    n = len(infos)
    lo, hi = min(cfg.step_min_frags, n), min(cfg.step_max_frags, n)
    if hi == 0:
        return None
    size = np.array([f.size for f in infos], np.uint64)
    joins = np.zeros(n, bool)  # joins[k]: fragments k - 1 and k may be in one run
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = size[:-1].astype(np.float32) / size[1:].astype(np.float32)
    joins[1:] = np.where(ratio <= 1, ratio, np.float32(1) / ratio) >= np.float32(cfg.step_size_ratio)
    rows, valid = [size], np.ones(n, bool)
    unions = [list(f.ned) for f in infos] if dense else None
    for i in range(1, hi):
        step = np.zeros(n, bool)
        step[:n - i] = joins[i:]
        valid &= step
        if dense:
            for j in np.flatnonzero(valid).tolist():
                unions[j] = _union(unions[j], infos[i + j].ned)
                valid[j] = _consolidatable(infos, anterior, j, j + i, unions[j], cfg)
        grown = np.full(n, _U64, np.uint64)
        grown[valid] = rows[-1][valid] + size[i:][valid[:n - i]] if valid.any() else grown[valid]
        rows.append(grown)
        if not valid.any():
            break
    for i in range(len(rows) - 1, max(lo - 1, 0) - 1, -1):
        if not (rows[i] != np.uint64(_U64)).any():
            continue
        best, col = _U64, 0
        for j, got in enumerate(rows[i].tolist()):
            if best == _U64 or got < best / 1.25:  # an earlier set wins unless 25% bigger
                best, col = got, j
        run = infos[col:col + i + 1]
        union = []
        for f in run:
            union = _union(union, f.ned)
        return col, col + i, union
    return None


def _consolidatable(infos, anterior, start, end, union, cfg) -> bool:
    """FragmentConsolidator::are_consolidatable: no older fragment shows through the union, and the union
    holds at most ``amplification`` times the cells of the fragments' tiles."""
    if _overlap(union, anterior) or any(_overlap(union, infos[i].ned) for i in range(start)):
        return False
    total = sum(_cell_num(infos[i].expanded) for i in range(start, end + 1))
    return _cell_num(union) / total <= cfg.amplification


def _fragment_size(arr, frag) -> int:
    """FragmentMetadata::fragment_size: the data files' sizes the footer records plus the metadata file's."""
    meta = frag.metadata
    total = sum(int(x) for k in ("file_sizes", "file_var_sizes", "file_validity_sizes")
                for x in (getattr(meta, k, None) if getattr(meta, k, None) is not None else []))
    if total >= 2**63:  # more than any storage holds: the footer lies (and TileDB's uint64 sum would wrap)
        raise FormatError(f"fragment {frag.name}: the data file sizes its metadata records add up to {total} bytes",
                          file=str(arr.storage.join(frag.path, directory.FRAGMENT_METADATA)),
                          structure="Fragment metadata footer", path="file_sizes")
    return total + arr.storage.size(arr.storage.join(frag.path, directory.FRAGMENT_METADATA))


def _infos(arr, cfg, hidden=frozenset()) -> tuple[list, list]:
    """The fragments the step algorithm sees (FragmentInfo::load): those inside the config's window, and the
    union of the non-empty domains of those that start before it (the anterior range). ``hidden``: fragments
    a step wrote after its first (cut at max_fragment_size), which TileDB's fragment info never loads
    (load_and_replace adds the first alone)."""
    infos, anterior = [], []
    for f in arr.fragments:
        if f.name in hidden:
            continue
        t1, t2 = f.timestamp_range
        if t1 < cfg.timestamp_start:
            anterior = _union(anterior, f.non_empty_domain)
        elif t2 <= cfg.timestamp_end:
            ned = list(f.non_empty_domain)
            infos.append(_Info(f.name, (t1, t2), _fragment_size(arr, f), ned,
                               _expand_to_tiles(ned, f.schema) if f.dense else ned, f.dense))
    return infos, anterior


def plan(uri, config=None, key=None, timestamp=None) -> dict:
    """The steps :func:`consolidate` would take, without writing: ``{"steps": [{"fragments": [names],
    "timestamp_range": [t1, t2]}]}``, by TileDB's step algorithm. After the first step the merged fragment's
    size is taken as the sum of those it replaces (TileDB measures the fragment it wrote)."""
    cfg = parse_config(config, timestamp)
    arr = _open_for_consolidation(uri, key)
    infos, anterior = _infos(arr, cfg)
    steps = []
    dense = arr.schema.array_type == ArrayType.DENSE
    while len(steps) < cfg.steps and len(infos) > 1:
        found = _next(infos, anterior, cfg, arr.schema.domain.dimensions, dense)
        if found is None or found[1] == found[0]:
            break
        first, last, union = found
        run = infos[first:last + 1]
        t = (run[0].timestamp_range[0], run[-1].timestamp_range[1])
        steps.append({"fragments": [i.name for i in run], "timestamp_range": list(t)})
        merged = _Info(f"(the fragment of step {len(steps)})", t, sum(i.size for i in run), union,
                       _expand_to_tiles(union, arr.schema) if dense else union, dense)
        infos[first:last + 1] = [merged]
    return {"steps": steps}


# --- consolidating ---

def _open_for_consolidation(uri, key) -> Array:
    arr = open_array(uri, key=key, timestamp=_U64 // 2)  # every fragment: TileDB loads up to timestamp_end
    if not isinstance(arr, Array):
        raise ValueError(f"uri: {uri} is an array from before format version 1, which TileDB never consolidated")
    version = arr.schema.version
    if not VACUUM_FILES(version):
        raise ValueError(f"uri: format version {version} has no vacuum files: TileDB of that version deleted the "
                         f"fragments it consolidated at once; consolidate needs version {VACUUM_FILES.since}+")
    for f in arr.fragments:
        if f.dense != (arr.schema.array_type == ArrayType.DENSE):
            raise ValueError(f"uri: fragment {f.name} is sparse in a dense array, which consolidate does not merge")
        if f.version != version:
            raise ValueError(f"uri: fragment {f.name} is of format version {f.version}, the array of {version}: "
                             "convert the array first")
        if f.dense:  # (before its non-empty domain sizes a merge)
            check_in_domain(arr.schema.domain.dimensions, f)
    return arr


def consolidate(uri, config=None, key=None, timestamp=None, fragment_uris=None, dry_run: bool = False,
                max_chunk_size: int = MAX_CHUNK, memory_budget: int | None = None):
    """Consolidate the array at ``uri`` as TileDB-Py's ``tiledb.consolidate`` does, at the array's own
    format version (module doc). ``config``: TileDB config keys (``sm.consolidation.mode``, ``step_*``,
    ``steps``, ``amplification``, ``purge_deleted_cells``, ``timestamp_start``/``end``); ``timestamp``:
    (start, end) ms; ``fragment_uris``: merge exactly these fragments (names or URIs inside the array), in one
    step; ``dry_run``: only return :func:`plan`'s plan; ``max_chunk_size``: the writer's chunk bound (TileDB's
    64 KiB; 192 bytes in the tiledb-py 0.19-0.25 wheels, as ``convert`` takes it); ``memory_budget``: the bytes
    of cells a step holds at once (default: ``sm.consolidation.buffer_size`` per buffer where the config sets
    it, else ``sm.mem.total_budget``; :mod:`.merge`), a ValueError before the step writes anything where one
    tile of each fragment it merges does not fit. Returns the plan carried out, each step with the name of the
    fragment it wrote (``"fragment"``)."""
    cfg = parse_config(config, timestamp)
    if memory_budget is not None:
        memory_budget_of(cfg, None, memory_budget)  # (checked before anything is read)
    if cfg.mode != "fragments":
        from . import metadata_modes
        return metadata_modes.consolidate_mode(uri, cfg, key=key, dry_run=dry_run, max_chunk_size=max_chunk_size)
    if dry_run:
        if fragment_uris is not None:
            arr = _open_for_consolidation(uri, key)
            run = _chosen(arr, fragment_uris)
            return {"steps": [{"fragments": [f.name for f in run],
                               "timestamp_range": [run[0].timestamp_range[0], run[-1].timestamp_range[1]]}]}
        return plan(uri, config, key, timestamp)
    done = []
    if fragment_uris is not None:
        arr = _open_for_consolidation(uri, key)
        run = _chosen(arr, fragment_uris)
        if len(run) > 1:
            done.append(_step(arr, run, _union_of(run), cfg, key, max_chunk_size, memory_budget))
        return {"steps": done}
    hidden = set()
    while len(done) < cfg.steps:
        arr = _open_for_consolidation(uri, key)  # the fragments as the last step left them
        infos, anterior = _infos(arr, cfg, hidden)
        if len(infos) <= 1:
            break
        found = _next(infos, anterior, cfg, arr.schema.domain.dimensions, arr.schema.array_type == ArrayType.DENSE)
        if found is None or found[1] == found[0]:
            break
        names = {i.name for i in infos[found[0]:found[1] + 1]}
        done.append(_step(arr, [f for f in arr.fragments if f.name in names], found[2], cfg, key, max_chunk_size,
                          memory_budget))
        hidden.update(done[-1]["written"][1:])
    return {"steps": done}


def _union_of(frags) -> list:
    out = []
    for f in frags:
        out = _union(out, f.non_empty_domain)
    return out


def _chosen(arr, fragment_uris) -> list:
    """The fragments ``fragment_uris`` name (FragmentConsolidator::consolidate_fragments), in TileDB's order;
    for dense arrays refused where an older fragment would show through (ValueError before any write)."""
    if isinstance(fragment_uris, (str, bytes)):
        raise TypeError("fragment_uris: expected a list of fragment names or URIs")
    wanted = set()
    for u in fragment_uris:
        if not isinstance(u, str):
            raise TypeError(f"fragment_uris: expected names (str), not {type(u).__name__}")
        wanted.add(u.rstrip("/").rsplit("/", 1)[-1])
    run = [f for f in arr.fragments if f.name in wanted]
    if len(run) != len(wanted):
        raise ValueError(f"fragment_uris: found {len(run)} of the {len(wanted)} fragments named")
    if arr.schema.array_type == ArrayType.DENSE and run:
        last = max(f.timestamp_range[1] for f in run)
        grown = _expand_to_tiles(_union_of(run), arr.schema)
        for f in arr.fragments:
            if f.name not in wanted and f.timestamp_range[0] <= last and _overlap(grown, f.non_empty_domain):
                raise ValueError(f"fragment_uris: fragment {f.name} overlaps the union of the fragments named and "
                                 "was written before them: consolidating would hide its cells")
    return run


def _step(arr, frags, union, cfg, key, max_chunk_size, memory_budget) -> dict:
    """One step: the merged fragment (or fragments, cut at ``max_fragment_size``), committed, then its vacuum
    file, named after the first. A write that fails takes its uncommitted folders away (as TileDB's
    consolidate_internal)."""
    version = arr.schema.version
    t = (frags[0].timestamp_range[0], frags[-1].timestamp_range[1])
    writer = open_writer(arr.path, timestamp=t, key=key, max_chunk_size=max_chunk_size)
    written = _merge(arr, writer, frags, union, cfg, new_uuid(), memory_budget_of(cfg, writer.schema, memory_budget))
    _write_vacuum_file(arr, written[0], frags, version)
    return {"fragments": [f.name for f in frags], "timestamp_range": list(t), "fragment": written[0],
            "written": written}


def _merge(arr, writer, frags, union, cfg, uuid, budget) -> list:
    """The merged fragments of ``frags``, in bounded memory (:mod:`.merge`); their names."""
    version = writer.version
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        if cfg.max_fragment_size != _U64 and not MAX_FRAGMENT_SIZE(version):
            raise ValueError(f"config: sm.consolidation.max_fragment_size: format version {version} has none (TileDB "
                             f"2.13 brought it, writing version {MAX_FRAGMENT_SIZE.since})")
        max_size = None if cfg.max_fragment_size == _U64 else cfg.max_fragment_size
        if arr.schema.array_type == ArrayType.DENSE:
            return merge_dense(arr, writer, frags, union, uuid, budget=budget, max_fragment_size=max_size, pool=pool)
        first = frags[0].timestamp_range[0]
        with_timestamps = WITH_TIMESTAMPS(version)
        delete_meta = with_timestamps and DELETE_META(version) and not cfg.purge_deleted_cells and (
            any(d.timestamp >= first for d in arr.deletes) or any(f.has_delete_meta for f in frags))
        return merge_sparse(arr, writer, frags, uuid, budget=budget, with_timestamps=with_timestamps,
                            delete_meta=delete_meta, purge=cfg.purge_deleted_cells,
                            processed=[d.marker for d in arr.deletes] if DELETE_META(version) else None,
                            max_fragment_size=max_size,
                            pool=pool)


def memory_budget_of(cfg, schema, memory_budget=None) -> int:
    """The bytes a step's merge may hold (:mod:`.merge`): ``memory_budget``; else, as TileDB sizes its
    consolidation buffers, ``sm.consolidation.buffer_size`` per buffer where the config sets it (one a field,
    one more for var offsets and for validity, three for cell timestamps and delete metadata), or
    ``sm.mem.total_budget``."""
    if memory_budget is not None:
        if isinstance(memory_budget, bool) or not isinstance(memory_budget, (int, np.integer)) or memory_budget < 1:
            raise ValueError(f"memory_budget: expected a positive number of bytes, not {memory_budget!r}")
        return int(memory_budget)
    if cfg.buffer_size:
        fields = dimensions(schema) + attributes(schema)
        return cfg.buffer_size * (sum(1 + f.var + f.nullable for f in fields) + 3)
    return cfg.total_budget


def _write_vacuum_file(arr, name: str, frags, version: int) -> None:
    """The replaced fragments' URIs, one a line (:func:`.vacuum_lines`)."""
    storage, root = arr.storage, arr.path
    inner = (directory.FRAGMENTS_DIR,) if FEATURES["fragments_folder"](version) else ()
    lines = vacuum_lines(storage, root, [inner + (f.name,) for f in frags], version)
    folder = storage.join(root, directory.COMMITS_DIR) if FEATURES["fragments_folder"](version) else root
    storage.commit(storage.join(folder, name + ".vac"), VacuumFile.build({"uris": lines}))
