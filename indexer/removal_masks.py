"""Which documents the operator removed: segments and the removal rules in force here, give me
per segment a mask of its ordinals that are out of search.

The rules are store/removals.py's.  A mask is computed once per segment each time the searcher
is built (at a reload check that found new rules or a new index generation), never per query:
URL rules by the store's IDs of the removed URLs (looked up in the segment's ascending doc IDs,
``core.id_set.sorted_members``), host rules by the segment's per-host document bitmaps
(``site:``'s), patterns by one search over the URL of each document of the segment (the only
part that grows with the segment: a few microseconds a document,
scripts/benchmarks/bench_removals.py).  The searcher ands the complement into its liveness masks
(indexer/liveness.py), so removed pages are out of the results, the totals and the collection
statistics alike.  The indexing run drops them with the same masks (indexer/build.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pyroaring import BitMap

from websift.core.id_set import sorted_members
from websift.indexer.segment import SegmentReader
from websift.store.removals import RemovalRules


def removal_mask(seg: SegmentReader, rules: RemovalRules) -> np.ndarray:
    """Which ordinals of ``seg`` a rule in force takes out."""
    n = len(seg.doc_ids)
    mask = np.zeros(n, dtype=bool)
    if not rules or n == 0:
        return mask
    if len(rules.url_ids):
        mask |= sorted_members(seg.doc_ids, rules.url_ids)
    if rules.hosts:
        ids = BitMap()
        for host in seg.hosts():
            if rules.host_removed(host):
                ids |= seg.host_docs(host)
        if len(ids):
            mask |= sorted_members(seg.doc_ids, ids.to_array())
    if rules.patterns:
        mask |= np.fromiter((rules.pattern_removed(u) for u in seg.urls()), dtype=bool, count=n)
    return mask


def removal_masks(segments: Sequence[SegmentReader], rules: RemovalRules) -> list[np.ndarray]:
    """:func:`removal_mask` of each segment."""
    return [removal_mask(seg, rules) for seg in segments]


def removed_live_ids(segments: Sequence[SegmentReader], live: Sequence[np.ndarray],
                     rules: RemovalRules) -> np.ndarray:
    """The URL IDs of live documents a rule in force takes out (what an indexing run drops)."""
    if not rules:
        return np.zeros(0, dtype=np.int64)
    found = [seg.doc_ids[m & removal_mask(seg, rules)] for seg, m in zip(segments, live,
                                                                         strict=True)]
    return np.unique(np.concatenate([*found, np.zeros(0, dtype=np.int64)]))
