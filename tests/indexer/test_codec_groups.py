"""Delta coding within groups (indexer/codec.py): decoding gives back every group's values,
whatever the groups' lengths (many empty, as a word's (document, field) groups are)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer.codec import delta_decode_groups, delta_encode_groups

GROUPS = st.lists(st.lists(st.integers(0, 2**24 - 1), max_size=12).map(sorted), max_size=40)


@given(groups=GROUPS)
@settings(max_examples=300, deadline=None)
def test_delta_decoding_inverts_encoding(groups: list[list[int]]) -> None:
    lengths = np.array([len(g) for g in groups], dtype=np.uint16)
    values = np.array([v for g in groups for v in g], dtype=np.int64)
    deltas = delta_encode_groups(values, lengths)
    assert (deltas >= 0).all()  # sorted within a group: bit-packable
    got = delta_decode_groups(deltas.astype(np.uint32), lengths)
    assert got.dtype == np.int64
    assert got.tolist() == values.tolist()
