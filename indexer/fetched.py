"""Pages known only from links: which documents were never fetched, and the prior that puts
them below fetched pages.

An anchor-only document (indexer/build.py) has no title, headings, body or definitions of its
own: its only evidence is other pages' anchor text and its URL's words.  A fetched page's text
is evidence the searcher has read; an anchor-only page's is hearsay, however well its anchors
match.  So fetched pages gain ``BM25FSettings.fetched_prior``, added to their text score as the
language prior is (indexer/searcher.py): a page known only from links ranks above a fetched page
only when its text score is higher by more than that.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from websift.core.id_set import IdSet
from websift.indexer.segment import SegmentReader
from websift.indexer.settings import FIELDS

OWN_FIELDS = ("title", "headings", "body", "defs")  # what only a fetched page has

Prior = Callable[[np.ndarray], np.ndarray]


def unfetched_ids(segments: Sequence[SegmentReader]) -> np.ndarray:
    """The URL IDs of the documents with no text of their own (sorted int64)."""
    cols = [FIELDS.index(f) for f in OWN_FIELDS]
    parts = [np.asarray(seg.doc_ids)[np.asarray(seg.field_lens)[:, cols].sum(axis=1) == 0]
             for seg in segments]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate(parts).astype(np.int64))


def with_fetched(unfetched: IdSet | np.ndarray, bonus: float, prior: Prior | None,
                 bound: float | None, key: Hashable | None
                 ) -> tuple[Prior, float | None, Hashable | None]:
    """``prior`` plus ``bonus`` for every document not in ``unfetched`` (URL IDs); its bound
    and key."""
    known = unfetched if isinstance(unfetched, IdSet) else IdSet(unfetched)

    def fetched_prior(doc_ids: np.ndarray) -> np.ndarray:
        extra = np.where(known.contains(doc_ids), 0.0, bonus)
        return extra if prior is None else np.asarray(prior(doc_ids)) + extra

    if prior is None:
        return fetched_prior, bonus, ("fetched", bonus)
    return (fetched_prior, None if bound is None else bound + bonus,
            None if key is None else (key, "fetched", bonus))
