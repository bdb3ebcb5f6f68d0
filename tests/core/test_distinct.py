"""Distinct values by sorting (core/distinct.py) are numpy's np.unique."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from websift.core.distinct import distinct, distinct_small


@given(arrays(st.sampled_from([np.int32, np.int64, np.uint8, np.uint32]),
              st.integers(0, 300), elements=st.integers(0, 200)))
def test_distinct_is_np_unique(x: np.ndarray) -> None:
    got = distinct(x)
    assert np.array_equal(got, np.unique(x))
    assert got.dtype == x.dtype
    assert np.array_equal(distinct_small(x), np.unique(x).astype(np.int64))


def test_negative_and_large_values() -> None:
    x = np.array([5, -3, 1 << 40, 5, -3, 0], dtype=np.int64)
    assert distinct(x).tolist() == [-3, 0, 5, 1 << 40]
    assert distinct_small(np.zeros(0, dtype=np.uint8)).tolist() == []
