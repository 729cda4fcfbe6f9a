"""The R-tree of a sparse fragment (REFERENCE.md §12.2; TileDB's ``RTree::build_tree`` in ``rtree/rtree.cc``):
the tiles' MBRs are the leaves, and each level above unites ``fanout`` neighbours, up to one root. Levels
are stored root first. Dense fragments store no levels.
"""

from __future__ import annotations

import numpy as np
from construct import Container, ListContainer

__all__ = ["FANOUT", "build_levels"]

#: TileDB's R-tree fanout (constants::rtree_fanout)
FANOUT = 10


def _unite_fixed(mbrs: np.ndarray, fanout: int) -> np.ndarray:
    groups = np.arange(0, len(mbrs), fanout)
    out = np.empty(len(groups), mbrs.dtype)
    for name in mbrs.dtype.names:
        out[name][:, 0] = np.minimum.reduceat(mbrs[name][:, 0], groups)
        out[name][:, 1] = np.maximum.reduceat(mbrs[name][:, 1], groups)
    return out


def _unite_ranges(group):
    """One NDRectangle covering the NDRectangles of ``group``: per dimension the least start, greatest end."""
    out = ListContainer()
    for ranges in zip(*group):
        if isinstance(ranges[0], dict):
            out.append(Container(start=min(bytes(r["start"]) for r in ranges),
                                 end=max(bytes(r["end"]) for r in ranges)))
        else:
            out.append(np.array([min(r[0] for r in ranges), max(r[1] for r in ranges)], dtype=ranges[0].dtype))
    return out


def build_levels(leaves, fanout: int = FANOUT) -> ListContainer:
    """The levels of the R-tree over ``leaves`` (a structured numpy array, or a list of NDRectangles when a
    dimension is var-sized), root first."""
    if len(leaves) == 0:
        return ListContainer()
    levels = [leaves]
    while len(levels[-1]) > 1:
        level = levels[-1]
        if isinstance(level, np.ndarray):
            levels.append(_unite_fixed(level, fanout))
        else:
            levels.append(ListContainer(_unite_ranges(level[i:i + fanout]) for i in range(0, len(level), fanout)))
    return ListContainer(Container(mbrs=level) for level in reversed(levels))
