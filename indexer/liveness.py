"""Which documents are live: segments here are given, give me per segment a mask of its ordinals
that serve.

Versions: a newer segment masks older versions of the same URL (its ``docs`` and ``drops``
bitmaps), so a page re-indexed or dropped by a later run is served by its newest version only
(:func:`live_masks`).  The indexing run uses the masks to count live documents and to merge
segments (indexer/build.py); the searcher computes them once at open (indexer/searcher.py).

Shards: several index directories (one per crawler's data directory) are searched as one when
they share one URL ID space (a page's ID names the same URL everywhere).  A URL ID held by two
shards as different URLs is refused (:class:`ShardsConflict`); held as the same URL (a page one
crawler fetched and another only saw linked), the copy with the most indexed words serves
(:func:`shard_live_masks`).

Invariant: a mask is as long as its segment's ``doc_ids``; segments never change, so neither do
their masks for a given list of segments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pyroaring import BitMap

from websift.core.id_set import sorted_members
from websift.indexer.errors import IndexCorrupt
from websift.indexer.manifest import Manifest
from websift.indexer.segment import SegmentReader

# Overlapping URL IDs whose URLs are compared between shards (evenly spread): IDs from separate
# ID spaces name different URLs almost everywhere, so a sample finds them.
CONFLICT_SAMPLE = 1000


@dataclass(frozen=True)
class Shard:
    """One index directory at one generation: the segments its manifest names."""

    index_dir: Path | None  # None: segments handed to the constructor, not opened from a dir
    manifest: Manifest
    segments: list[SegmentReader]


class ShardsConflict(IndexCorrupt):
    """Two shards hold one URL ID as different pages: they were crawled in separate ID spaces."""


def live_masks(segments: Sequence[SegmentReader]) -> list[np.ndarray]:
    """Per segment, which ordinals are live: a newer segment's docs and drops mask older ones."""
    masked = BitMap()
    out: list[np.ndarray] = [np.zeros(0, dtype=bool)] * len(segments)
    for i in range(len(segments) - 1, -1, -1):
        seg = segments[i]
        # the segment's own IDs among the masked ones (``docs`` holds its doc IDs): found in
        # the bitmaps, so the work grows with what newer segments mask, not with the index
        gone = masked & seg.docs if len(masked) else None
        out[i] = (~sorted_members(seg.doc_ids, gone.to_array()) if gone
                  else np.ones(len(seg.doc_ids), dtype=bool))
        masked |= seg.docs
        masked |= seg.drops
    return out


def live_count(segments: Sequence[SegmentReader]) -> int:
    """Documents visible through the newest-wins masking of :func:`live_masks`."""
    return int(sum(int(m.sum()) for m in live_masks(segments)))


def shard_live_masks(shards: Sequence[Shard]) -> list[np.ndarray]:
    """Per segment of every shard in order, which ordinals are live.

    Inside a shard newer segments mask older ones (:func:`live_masks`).  Across shards a URL ID
    is one page: held by several shards as the same URL, the copy with the most indexed words
    stays live (a fetched page beats another crawler's anchor-only record of it; ties: the
    first shard); held as different URLs, :class:`ShardsConflict`.
    """
    masks = [live_masks(s.segments) for s in shards]
    if len(shards) > 1:
        _settle_overlaps(shards, masks)
    return [m for per_shard in masks for m in per_shard]


def _settle_overlaps(shards: Sequence[Shard], masks: list[list[np.ndarray]]) -> None:
    ids = [np.concatenate([seg.doc_ids[m] for seg, m in zip(s.segments, ms, strict=True)]
                          or [np.zeros(0, dtype=np.int64)]) for s, ms in zip(shards, masks,
                                                                             strict=True)]
    everything = np.sort(np.concatenate(ids))
    shared = np.unique(everything[1:][everything[1:] == everything[:-1]])
    if len(shared) == 0:
        return
    # Per shard: (ordinal location, words indexed, URL) of each shared ID it holds live.
    n = len(shards)
    words = np.full((n, len(shared)), -1, dtype=np.int64)
    where: list[dict[int, tuple[int, int]]] = [{} for _ in shards]
    for i, (shard, ms) in enumerate(zip(shards, masks, strict=True)):
        for si, (seg, live) in enumerate(zip(shard.segments, ms, strict=True)):
            ords = np.flatnonzero(live & np.isin(seg.doc_ids, shared))
            cols = np.searchsorted(shared, seg.doc_ids[ords])
            words[i, cols] = seg.field_lens[ords].sum(axis=1)
            where[i].update(zip(cols.tolist(), zip([si] * len(ords), ords.tolist(),
                                                   strict=True), strict=True))
    step = max(1, len(shared) // CONFLICT_SAMPLE)
    for col in range(0, len(shared), step):
        urls = {i: shards[i].segments[where[i][col][0]].head(where[i][col][1])["url"]
                for i in range(n) if col in where[i]}
        if len(set(urls.values())) > 1:
            (a, ua), (b, ub) = list(urls.items())[:2]
            raise ShardsConflict(
                f"shards {_shard_name(shards[a])} and {_shard_name(shards[b])} both hold URL ID "
                f"{int(shared[col])}, as {ua} and {ub}: they come from separate URL ID spaces; "
                "serve each with its own 'websift serve' and join them with --shard URL")
    winner = np.argmax(words, axis=0)  # the first shard among equals
    for i in range(n):
        for col, (si, o) in where[i].items():
            if winner[col] != i:
                masks[i][si][o] = False


def _shard_name(shard: Shard) -> str:
    return str(shard.index_dir.parent) if shard.index_dir is not None else "(given)"
