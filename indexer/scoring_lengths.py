"""The average field lengths a generation is scored with, kept while the exact ones move little.

Question: BM25F normalises each field's term frequency by the document's length over the
collection's average (indexer/bm25f.py); a follower publishes a new generation every few
seconds, each moving the averages a little; must every cached saturation be made again?

A searcher keeps each decoded list's saturations (tf~ / (k1 + tf~), indexer/postings.py) and
its block maxima; they depend on the averages.  With the exact averages every cut changes them
all, so after every swap the server computes again the saturations of every list it uses, in
the reload and on the request path (the p99 of ``/search`` under ``websift up``).  So:

- **The manifest names the averages to score with** (``stats["avg_field_lengths"]``, field ->
  average).  Each publish (indexer/build.py ``publish_manifest``: a cut, a merge) keeps the
  previous manifest's while every field's exact average over the live documents stays within
  ``PIN_TOLERANCE`` (relative) of them, else writes the exact ones.  A full rebuild writes the
  exact ones.  At the scale a live index grows to, the averages are re-pinned rarely: a cut of
  a few hundred pages moves them by hundredths of a percent.
- **A searcher scores with them** while each is within ``SERVE_TOLERANCE`` of the exact average
  it computes itself (which also counts removal rules and every shard), else with its exact
  ones: a manifest's pins never move the scores further than that, whoever wrote it.
- The choice is a function of the manifest and the segments: every process that opens a
  generation scores it alike (a restarted server, a second ``--workers`` process, a fresh
  searcher in a test), and a backup restored answers as the original did.

What it costs in ranking: a field's length normalisation ``1 - b + b len / avg`` computed with
an average off by at most 2%, less than the 1-byte lossy length norms Lucene scores with
(``SmallFloat``, up to about 12% off a document's length).  Robertson & Zaragoza (2009, 3.3)
treat the average as a collection constant; here it is constant between re-pins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from websift.indexer.segment import SegmentReader
from websift.indexer.settings import FIELDS, N_FIELDS

# A publish keeps the pinned averages while each field's exact one is within this (relative).
PIN_TOLERANCE = 0.02
# A searcher scores with the manifest's averages while each is within this of its exact ones.
SERVE_TOLERANCE = 2 * PIN_TOLERANCE
STATS_KEY = "avg_field_lengths"


def live_length_sums(readers: Sequence[SegmentReader], masks: Sequence[np.ndarray]
                     ) -> tuple[np.ndarray, int]:
    """(per field, the lengths of the live documents summed; live documents): each segment's
    stored sums less its masked documents' lengths, so the work grows with what is masked."""
    sums = np.zeros(N_FIELDS, dtype=np.float64)
    live = 0
    for seg, mask in zip(readers, masks, strict=True):
        n_live = int(mask.sum())
        live += n_live
        if n_live == len(mask):
            sums += seg.field_length_sums
        elif n_live:
            sums += seg.field_lens[mask].sum(axis=0, dtype=np.float64)
    return sums, live


def pinned(exact: np.ndarray, kept: np.ndarray | None, tolerance: float) -> bool:
    """Whether every field of ``kept`` is within ``tolerance`` (relative) of ``exact``
    (a field empty in both is; one empty in only one is not)."""
    if kept is None or kept.shape != exact.shape:
        return False
    both_empty = (exact <= 0) & (kept <= 0)
    scale = np.where(exact > 0, exact, 1.0)
    return bool(np.all(both_empty | ((kept > 0) & (np.abs(kept - exact) <= tolerance * scale))))


def from_stats(stats: Mapping[str, Any]) -> np.ndarray | None:
    """The averages a manifest's stats pin, in FIELDS order; None when it pins none (written
    before, or malformed: then the exact averages serve).  A field it does not name is 0."""
    named = stats.get(STATS_KEY)
    if not isinstance(named, dict):
        return None
    try:
        return np.array([float(named.get(f, 0.0)) for f in FIELDS], dtype=np.float64)
    except (TypeError, ValueError):
        return None


def to_stats(averages: np.ndarray) -> dict[str, float]:
    return {f: float(a) for f, a in zip(FIELDS, averages, strict=True)}


def averages_to_publish(sums: np.ndarray, live: int, previous: Mapping[str, Any] | None
                        ) -> dict[str, float]:
    """The averages a new manifest pins, from its live documents' length ``sums`` and count
    (:func:`live_length_sums`): ``previous`` (the manifest it replaces: its stats)'s while
    within PIN_TOLERANCE of the exact live averages, else the exact ones."""
    exact = sums / max(live, 1)
    kept = None if previous is None else from_stats(previous)
    return to_stats(kept if kept is not None and pinned(exact, kept, PIN_TOLERANCE) else exact)


def scoring_averages(exact: np.ndarray, manifest_stats: Mapping[str, Any]) -> np.ndarray:
    """What a searcher scores with: the manifest's averages while within SERVE_TOLERANCE of
    its own ``exact`` ones, else ``exact``."""
    kept = from_stats(manifest_stats)
    return kept if kept is not None and pinned(exact, kept, SERVE_TOLERANCE) else exact
