"""core/id_set.py: membership of URL IDs by a table, the same answers as ``np.isin``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from websift.core.id_set import IdSet, sorted_members

IDS = st.lists(st.integers(0, 5000), max_size=200)


@given(IDS, IDS, st.sampled_from([1 << 22, 0, 64]))
def test_contains_is_isin(members: list[int], asked: list[int], byte_table_max: int) -> None:
    """A byte per ID, a bit per ID, or either as the set's largest ID falls."""
    ids = IdSet(np.asarray(members, dtype=np.int64), byte_table_max)
    got = ids.contains(np.asarray(asked, dtype=np.int64))
    assert got.dtype == bool
    assert got.tolist() == np.isin(np.asarray(asked, dtype=np.int64),
                                   np.asarray(members, dtype=np.int64)).tolist()
    assert len(ids) == len(set(members))


@pytest.mark.parametrize("byte_table_max", [1 << 22, 0])
def test_ids_past_the_largest_are_not_members(byte_table_max: int) -> None:
    ids = IdSet(np.array([3, 7], dtype=np.int64), byte_table_max)
    assert ids.contains(np.array([7, 8, 15, 16, 10**12, 0], dtype=np.int64)).tolist() == [
        True, False, False, False, False, False]
    assert IdSet(np.zeros(0, dtype=np.int64)).contains(np.array([0, 5])).tolist() == [
        False, False]


def test_negative_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        IdSet(np.array([-1, 2], dtype=np.int64))


@given(st.sets(st.integers(0, 5000), max_size=200), IDS)
def test_sorted_members_is_isin(doc_ids: set[int], asked: list[int]) -> None:
    """A segment's doc IDs (ascending, distinct) looked up from a set: ``np.isin``'s answer,
    asked IDs absent, repeated, past the largest or below the smallest included."""
    ids = np.asarray(sorted(doc_ids), dtype=np.int64)
    got = sorted_members(ids, np.asarray(asked, dtype=np.int64))
    assert got.dtype == bool and len(got) == len(ids)
    assert got.tolist() == np.isin(ids, np.asarray(asked, dtype=np.int64)).tolist()
