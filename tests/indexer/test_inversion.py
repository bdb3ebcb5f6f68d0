"""Inverting a barrel: whatever the memory budget and however many runs (each in word order)
its hits were flushed in, the hits come out as numpy's stable sort by word of all of them (runs in order), in chunks
within the budget cut between postings."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer.barrels import CHUNK_SHARE, _word_counts, invert, stable_order, words_path
from websift.indexer.settings import HIT_BYTES


@settings(max_examples=200, deadline=None)
@given(base=st.integers(0, 2**30), span=st.sampled_from([1, 3, 2**16 - 1, 2**16, 2**20]),
       raw=st.lists(st.integers(0, 2**20), max_size=300))
def test_stable_order_is_the_stable_argsort(base: int, span: int, raw: list[int]) -> None:
    keys = np.asarray([base + r % span for r in raw], dtype=np.int32)
    assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))


@settings(max_examples=200, deadline=None)
@given(raw=st.lists(st.integers(-2**31, 2**31 - 1) | st.integers(0, 40), max_size=300))
def test_stable_order_of_keys_of_any_span_is_the_stable_argsort(raw: list[int]) -> None:
    """Keys wider than 16 bits (a run's hit buffer holds every barrel's words) take two radix
    passes: the order is still the stable argsort's, ties in place."""
    keys = np.asarray(raw, dtype=np.int32)
    assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), runs=st.integers(1, 4), n=st.integers(1, 400),
       words=st.integers(1, 50), budget_hits=st.sampled_from([1, 7, 100, 10**6]),
       tables=st.booleans())
def test_invert_is_the_stable_sort_whatever_the_budget(seed: int, runs: int, n: int, *,
                                                       words: int, budget_hits: int,
                                                       tables: bool) -> None:
    """``tables``: each run has its word table beside it, as ForwardBarrels.flush writes
    (the ranges are planned from those), else the inverter counts the runs' words itself."""
    rng = np.random.default_rng(seed)
    hits = rng.integers(0, 1000, size=(n, 4), dtype=np.int32)
    hits[:, 0] = 5 * 2**16 + rng.integers(0, words, size=n)  # one barrel's word IDs
    hits[:, 1] = np.arange(n)  # distinct: the order within a word shows
    with TemporaryDirectory() as tmp:
        d = Path(tmp)
        paths = []
        for i, part in enumerate(np.array_split(hits, runs)):
            paths.append(d / f"fwd-00005-{i:05d}.npy")
            run = part[np.argsort(part[:, 0], kind="stable")]
            np.save(paths[-1], run)  # as flush writes
            if tables:
                np.save(words_path(paths[-1]), np.vstack(_word_counts(run[:, 0])).astype(np.int64))
        out = list(invert(paths, budget_hits * HIT_BYTES * CHUNK_SHARE))
    got = np.concatenate(out)
    assert np.array_equal(got, hits[np.argsort(hits[:, 0], kind="stable")])
    # chunks end between two postings: a word goes on in the next chunk only at a new document
    assert all(a[-1, 0] < b[0, 0] or (a[-1, 0] == b[0, 0] and a[-1, 1] < b[0, 1])
               for a, b in pairwise(out))
    # and hold at most the budget's hits, but for a single posting that is longer
    for chunk in out:
        postings = len({(int(w), int(d)) for w, d in chunk[:, :2]})
        assert len(chunk) <= budget_hits or postings == 1
