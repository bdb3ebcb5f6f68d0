"""barrels.stable_order is numpy's stable argsort, by radix when the keys span < 2**16."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.barrels import stable_order


@settings(max_examples=200, deadline=None)
@given(base=st.integers(0, 2**30), span=st.sampled_from([1, 3, 2**16 - 1, 2**16, 2**20]),
       raw=st.lists(st.integers(0, 2**20), max_size=300))
def test_stable_order_is_the_stable_argsort(base: int, span: int, raw: list[int]) -> None:
    keys = np.asarray([base + r % span for r in raw], dtype=np.int32)
    assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))
