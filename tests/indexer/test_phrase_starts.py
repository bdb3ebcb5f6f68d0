"""phrase_starts (indexer/postings.py) finds where a phrase starts as a set computation does."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer.postings import DOC_SHIFT, FIELD_SHIFT, POS_MASK, phrase_starts

KEY = st.builds(lambda d, f, p: (d << DOC_SHIFT) | (f << FIELD_SHIFT) | p,
                st.integers(0, 5), st.integers(0, 2), st.integers(0, 12))


def _by_sets(lists: list[tuple[np.ndarray, int]]) -> list[int]:
    out: set[int] | None = None
    for keys, off in lists:
        starts = {int(k) - off for k in keys.tolist() if int(k) & POS_MASK >= off}
        out = starts if out is None else out & starts
    return sorted(out or ())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sets(KEY, max_size=40), st.integers(0, 3)), min_size=1,
                max_size=4))
def test_phrase_starts_equals_the_set_intersection(words: list[tuple[set[int], int]]) -> None:
    lists = [(np.array(sorted(keys), dtype=np.int64), off) for keys, off in words]
    assert phrase_starts(lists).tolist() == _by_sets(lists)


def test_a_phrase_of_one_word_twice() -> None:
    k = np.array([(1 << DOC_SHIFT) | p for p in (3, 4, 5, 9)], dtype=np.int64)
    assert phrase_starts([(k, 0), (k, 1)]).tolist() == [(1 << DOC_SHIFT) | 3,
                                                         (1 << DOC_SHIFT) | 4]
