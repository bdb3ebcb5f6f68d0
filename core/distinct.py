"""Distinct values of an integer array, by sorting.

numpy 2.4's ``np.unique`` (without ``return_index``/``inverse``/``counts``) finds distinct
values with a hash table, then sorts them: 10 to 40 times slower than a sort and one pass over
int arrays of every size a query meets (50 to 100,000 values; ``python -m
scripts.benchmarks.bench_query_tail --pruned``).  A query's hot paths call these instead.
"""

from __future__ import annotations

import numpy as np


def distinct(x: np.ndarray) -> np.ndarray:
    """The distinct values of ``x``, ascending (``np.unique(x)``)."""
    s = np.sort(x)
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def distinct_small(x: np.ndarray) -> np.ndarray:
    """The distinct values of ``x``, small non-negative integers (segment numbers, bit
    widths), ascending as int64: one ``bincount``."""
    if len(x) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.bincount(np.asarray(x, dtype=np.int64)))
