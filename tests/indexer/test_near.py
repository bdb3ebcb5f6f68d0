"""PostingStore.near (indexer/postings.py) finds the pages where one word follows another
within the window (and, weighted by proximity_reverse, precedes it within
proximity_reverse_window) as a set computation does, by either of its two ways."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer import postings as postings_module
from websift.indexer.postings import DOC_SHIFT, FIELD_SHIFT, PostingStore
from websift.indexer.settings import BM25FSettings

KEY = st.builds(lambda d, f, p: (d << DOC_SHIFT) | (f << FIELD_SHIFT) | p,
                st.integers(0, 6), st.integers(0, 3), st.integers(0, 30))


def _by_sets(store: PostingStore, ka: list[int], kb: list[int]) -> dict[int, float]:
    count: dict[int, float] = {}
    for a in ka:
        following = [b for b in kb if b > a]
        preceding = [b for b in kb if b < a]
        weight = float(bool(following) and min(following) - a <= store.window)
        weight += store.reverse * (bool(preceding) and a - max(preceding) <= store.reverse_window)
        if weight and store.weighted_field[(a >> FIELD_SHIFT) & 0xF]:
            count[a >> DOC_SHIFT] = count.get(a >> DOC_SHIFT, 0.0) + weight
    return {d: c / (c + 1.0) for d, c in sorted(count.items())}


@settings(max_examples=300, deadline=None)
@given(st.sets(KEY, max_size=60), st.sets(KEY, max_size=12), st.sampled_from([0, 8, 10**9]),
       st.sampled_from([0.0, 0.5, 1.0]), st.integers(1, 4))
def test_near_equals_the_set_computation(a: set[int], b: set[int], ratio: int,
                                         reverse: float, back: int) -> None:
    store = PostingStore([], [], [], BM25FSettings(proximity_reverse=reverse,
                                                   proximity_reverse_window=back), norms_key=b"")
    ka = np.array(sorted(a), dtype=np.int64)
    kb = np.array(sorted(b), dtype=np.int64)
    with pytest.MonkeyPatch.context() as mp:
        # 0: the many a looked up around each b; 10**9: one pass over both.
        mp.setattr(postings_module, "NEAR_FEW_RATIO", ratio)
        docs, share = store.near(ka, kb)
    assert dict(zip(docs.tolist(), share.tolist(), strict=True)) == _by_sets(
        store, sorted(a), sorted(b))
