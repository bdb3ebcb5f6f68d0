"""Which segments to merge: segment sizes here are given, give me the merges to run.

A log-structured policy (Lucene's ``LogMergePolicy``, as tantivy's ``LogMergePolicy``): each
segment has a *level*, ``log(size) / log(merge_factor)`` (sizes below ``min_size`` count as
``min_size``, so every small cut is on the lowest level).  From the oldest segment on, the
policy takes the largest level among the segments left, ``top``, and the segments up to the
last one with a level of at least ``top - LEVEL_SPAN`` form one level group; inside it, every
``merge_factor`` adjacent segments are merged into one, a level higher.  A large old segment
is therefore merged only with segments of about its size: a document is rewritten about once
per level it climbs, so the bytes merges write over the life of an index are bounded by about
``log_F(index size / min_size)`` times the bytes indexed, and at most about
``merge_factor - 1`` segments stay on each level (tests/indexer/test_merge_policy.py checks
both over long simulated runs; scripts/benchmarks/bench_follow.py measures them).

Only *adjacent* segments are merged: a newer segment masks the older versions of its pages
(indexer/liveness.py), so a merged segment takes the place of its run of segments and the
order of the rest is kept.

Deleted documents (versions masked by newer segments, pages dropped) are reclaimed when a
segment's live share falls below ``1 - deletes_allowed``: it is rewritten alone with its live
documents (Lucene's ``forceMergeDeletes`` done as routine); a segment under ``min_size`` is left
to the level merges, which take it soon.  Its size for the levels is its live
size, so a segment mostly masked sinks to the level of what it still holds.

Pure code: sizes in, merges out.  indexer/build.py runs the merges, each a new manifest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from websift.indexer.settings import (
    MERGE_DELETES_ALLOWED,
    MERGE_FACTOR,
    MERGE_LEVEL_SPAN,
    MERGE_MIN_BYTES,
)


@dataclass(frozen=True)
class SegmentSize:
    """One segment as the policy sees it: its bytes on disk and the share of its documents
    that are live (1.0: none masked)."""

    size: int
    live: float = 1.0

    @property
    def live_size(self) -> float:
        return self.size * min(max(self.live, 0.0), 1.0)


@dataclass(frozen=True)
class MergePolicy:
    """The policy's numbers (defaults in indexer/settings.py)."""

    merge_factor: int = MERGE_FACTOR
    min_size: int = MERGE_MIN_BYTES
    level_span: float = MERGE_LEVEL_SPAN
    deletes_allowed: float = MERGE_DELETES_ALLOWED
    # The policy this one replaced, for scripts/benchmarks/bench_follow.py to compare with: set,
    # more than this many segments are merged, all of them, into one (nothing else is).
    merge_all_over: int | None = None

    def __post_init__(self) -> None:
        if self.merge_factor < 2 or self.min_size < 1 or self.level_span < 0 \
                or not 0.0 <= self.deletes_allowed <= 1.0:
            raise ValueError(f"merge policy needs merge_factor >= 2, min_size >= 1, "
                             f"level_span >= 0, 0 <= deletes_allowed <= 1; got {self}")

    def level(self, size: float) -> float:
        return math.log(max(size, self.min_size)) / math.log(self.merge_factor)


DEFAULT_MERGE_POLICY = MergePolicy()


def find_merges(segments: Sequence[SegmentSize], policy: MergePolicy = DEFAULT_MERGE_POLICY
                ) -> list[range]:
    """The merges to run now, as disjoint ranges of adjacent segment positions (oldest first):
    a range of two or more is a merge, a range of one a rewrite that reclaims its deleted
    documents.  Empty when the segments are in shape."""
    if policy.merge_all_over is not None:
        return merge_all_over(segments, policy.merge_all_over)
    n = len(segments)
    levels = [policy.level(s.live_size) for s in segments]
    floor = policy.level(policy.min_size)
    merges: list[range] = []
    start = 0
    while start < n:
        top = max(levels[start:])
        bottom = -1.0 if top <= floor else max(top - policy.level_span, floor)
        upto = max(i for i in range(start, n) if levels[i] >= bottom)
        end = start + policy.merge_factor
        while end <= upto + 1:
            merges.append(range(start, end))
            start, end = end, end + policy.merge_factor
        start = upto + 1
    taken = {i for r in merges for i in r}
    for i, s in enumerate(segments):
        # Segments under min_size are left to the level merges, which come soon for them.
        if i not in taken and s.size >= policy.min_size \
                and s.live < 1.0 - policy.deletes_allowed:
            merges.append(range(i, i + 1))
    return sorted(merges, key=lambda r: r.start)


def merge_all_over(segments: Sequence[SegmentSize], max_segments: int) -> list[range]:
    """The policy this one replaced, kept for scripts/benchmarks/bench_follow.py to compare
    with: more than ``max_segments`` segments are merged, all of them, into one."""
    return [range(0, len(segments))] if len(segments) > max_segments else []
