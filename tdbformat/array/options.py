"""What a read is allowed and asked for, checked before it starts: the memory budget, the timestamp window,
the attributes, cell orders and ranges asked for. Every read module takes these from here (none imports back
from the package's ``__init__``)."""

from __future__ import annotations

import os
import time

import numpy as np

from ..enums import Layout
from ..structs import array_schema as schema_mod

__all__ = ["MEMORY_BUDGET", "budget_or_default", "read_window", "wanted_attributes", "ORDERS"]

#: the cell orders ``read(order=)`` names
ORDERS = {"C": Layout.ROW_MAJOR, "F": Layout.COL_MAJOR, "G": Layout.GLOBAL_ORDER, "U": Layout.UNORDERED}
#: the newest timestamp (ms) TileDB accepts; opening "at" it opens at the current time
_MAX_TS = 2**64 - 1


def _default_budget() -> int:
    """A quarter of physical memory (4 GiB where the OS will not say): a dense result is allocated whole,
    then masking or a column-major copy can double it, and other processes need the rest."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4
    except (ValueError, OSError, AttributeError):
        return 4 << 30


#: bytes a read may allocate for its result unless ``read(memory_budget=)`` says otherwise (TileDB's
#: ``sm.memory_budget`` plays this part); change it here to change every read's default
MEMORY_BUDGET = _default_budget()


def read_window(timestamp) -> tuple[int, int]:
    """The inclusive (start, end) in ms that ``timestamp`` (None, an end, or a (start, end) pair, either
    part None) selects, as TileDB opens arrays for reading: an end of None or UINT64_MAX is the current
    time (Array::set_timestamps), so cells and deletes stamped in the future stay invisible."""
    start, end = (0, timestamp) if timestamp is None or np.isscalar(timestamp) else tuple(timestamp)
    start = 0 if start is None else start
    for name, value in (("start", start), ("end", end)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                                  or not 0 <= value <= _MAX_TS):
            raise ValueError(f"timestamp: the {name} must be an int in [0, 2**64-1] (ms), not {value!r}")
    if end is None or end == _MAX_TS:
        end = time.time_ns() // 1_000_000
    return int(start), int(end)


def budget_or_default(budget):
    """``memory_budget=`` as given, or :data:`MEMORY_BUDGET` read at call time (so that changing it changes
    every later read's default)."""
    return MEMORY_BUDGET if budget is None else budget


def wanted_attributes(schema, attrs) -> list:
    """The attributes ``attrs=`` names (all if None), checked against ``schema``."""
    if isinstance(attrs, str) or (attrs is not None and not all(isinstance(a, str) for a in attrs)):
        raise TypeError(f"attrs: expected a list of attribute names, not {attrs!r}")
    every = schema_mod.attributes(schema)
    by_name = {a.name: a for a in every}
    # TileDB-Py returns the attributes in the order asked for
    wanted = every if attrs is None else [by_name[a] for a in dict.fromkeys(attrs) if a in by_name]
    if attrs is not None and len(wanted) != len(set(attrs)):
        raise ValueError(f"attrs: no attribute(s) {sorted(set(attrs) - {a.name for a in wanted})} "
                         f"(attributes: {', '.join(a.name for a in schema_mod.attributes(schema))})")
    return wanted
