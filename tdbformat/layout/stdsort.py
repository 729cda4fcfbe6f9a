"""libstdc++'s ``std::sort``, step for step: TileDB sorts an array's fragments with it by their first
timestamp alone (``ArrayDirectory``, ``TimestampedURI::operator<``). It is not stable: of fragments with one
first timestamp, which comes last (and so wins where they overlap) depends on the whole list, and only the
same algorithm gives the same order. Introsort: median-of-three quicksort down to runs of 16, a heapsort
past ``2 * log2(n)`` levels, then one insertion sort over everything."""

from __future__ import annotations

__all__ = ["std_sort"]

_THRESHOLD = 16  # _S_threshold


def std_sort(items: list, key) -> list:
    """``items`` in the order ``std::sort`` leaves them with ``key(a) < key(b)`` as its comparison."""
    v = [(key(x), x) for x in items]
    if len(v) > 1:
        _introsort_loop(v, 0, len(v), 2 * (len(v).bit_length() - 1))
        _final_insertion_sort(v, 0, len(v))
    return [x for _, x in v]


def _less(a, b) -> bool:
    return a[0] < b[0]


def _introsort_loop(v, first, last, depth):
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(v, first, last)
            return
        depth -= 1
        cut = _partition_pivot(v, first, last)
        _introsort_loop(v, cut, last, depth)
        last = cut


def _partition_pivot(v, first, last) -> int:
    mid = first + (last - first) // 2
    _median_to_first(v, first, first + 1, mid, last - 1)
    # __unguarded_partition(first + 1, last, pivot = first)
    lo, hi = first + 1, last
    while True:
        while _less(v[lo], v[first]):
            lo += 1
        hi -= 1
        while _less(v[first], v[hi]):
            hi -= 1
        if not lo < hi:
            return lo
        v[lo], v[hi] = v[hi], v[lo]
        lo += 1


def _median_to_first(v, result, a, b, c):
    if _less(v[a], v[b]):
        pick = b if _less(v[b], v[c]) else c if _less(v[a], v[c]) else a
    else:
        pick = a if _less(v[a], v[c]) else c if _less(v[b], v[c]) else b
    v[result], v[pick] = v[pick], v[result]


def _final_insertion_sort(v, first, last):
    if last - first > _THRESHOLD:
        _insertion_sort(v, first, first + _THRESHOLD)
        for i in range(first + _THRESHOLD, last):  # __unguarded_insertion_sort
            _linear_insert(v, i)
    else:
        _insertion_sort(v, first, last)


def _insertion_sort(v, first, last):
    for i in range(first + 1, last):
        if _less(v[i], v[first]):
            v[first:i + 1] = [v[i]] + v[first:i]
        else:
            _linear_insert(v, i)


def _linear_insert(v, last):
    value = v[last]
    while _less(value, v[last - 1]):
        v[last] = v[last - 1]
        last -= 1
    v[last] = value


def _heap_sort(v, first, last):
    """``std::__partial_sort(first, last, last)``: make a heap, then pop it into sorted order."""
    n = last - first
    for parent in range((n - 2) // 2, -1, -1):
        _adjust_heap(v, first, parent, n, v[first + parent])
    while n > 1:
        n -= 1
        value, v[first + n] = v[first + n], v[first]
        _adjust_heap(v, first, 0, n, value)


def _adjust_heap(v, first, hole, n, value):
    top, child = hole, hole
    while child < (n - 1) // 2:
        child = 2 * (child + 1)
        if _less(v[first + child], v[first + child - 1]):
            child -= 1
        v[first + hole], hole = v[first + child], child
    if n % 2 == 0 and child == (n - 2) // 2:
        child = 2 * (child + 1)
        v[first + hole], hole = v[first + child - 1], child - 1
    parent = (hole - 1) // 2  # __push_heap
    while hole > top and _less(v[first + parent], value):
        v[first + hole], hole = v[first + parent], parent
        parent = (hole - 1) // 2
    v[first + hole] = value
