"""A fixed set of URL IDs asked about many IDs at once: a table of one flag per ID.

A query's priors ask, for every page it scores, whether the page is in a set the searcher
keeps (the pages of the query's language, the pages known only from links).  ``np.isin``
sorts both arrays on every call, so its cost grows with the set (milliseconds a call against
a million IDs), and the pruned path asks once per round of candidates.  A table of one flag
per ID up to the largest in the set answers with one gather: a byte per ID up to
BYTE_TABLE_MAX_IDS, a bit per ID past it (a few more operations, an eighth of the memory: 2.5
MB for IDs up to 20 million).  URL IDs are the crawl store's row IDs, dense from 1.

The other way round, which of a segment's documents (its URL IDs, ascending) are in a small
set (a host's pages), :func:`sorted_members` looks each ID of the set up by binary search:
no sort, no table, a cost that grows with the set and only by its logarithm with the segment.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

BYTE_TABLE_MAX_IDS = 1 << 22  # up to this many IDs a byte each (4 MB), past it a bit each


class IdSet:
    """Membership of non-negative integer IDs (URL IDs) in a fixed set."""

    def __init__(self, ids: np.ndarray, byte_table_max: int = BYTE_TABLE_MAX_IDS) -> None:
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) and int(ids.min()) < 0:
            raise ValueError("IdSet holds non-negative IDs only")
        top = int(ids.max()) + 1 if len(ids) else 0
        # one flag past the largest ID, always False: every larger ID is clipped to it
        flags = np.zeros(top + 1, dtype=bool)
        flags[ids] = True
        self.count = int(flags.sum())
        self._bits: np.ndarray | None = None
        self._table: np.ndarray | None = None
        if top <= byte_table_max:
            self._table = flags
        else:  # the last byte is all False whatever the padding: 8 IDs past the largest
            self._bits = np.append(np.packbits(flags, bitorder="little"), np.uint8(0))

    def __len__(self) -> int:
        return self.count

    def contains(self, doc_ids: np.ndarray) -> np.ndarray:
        """Which of ``doc_ids`` (non-negative) are in the set: a bool array of their length."""
        ids = np.asarray(doc_ids, dtype=np.int64)
        if self._table is not None:
            return np.take(self._table, ids, mode="clip")
        assert self._bits is not None
        held = np.take(self._bits, ids >> 3, mode="clip")
        return ((held >> (ids & 7).astype(np.uint8)) & 1) != 0

    def nbytes(self) -> int:
        table = self._table if self._table is not None else self._bits
        return 0 if table is None else int(table.nbytes)


def sorted_members(sorted_ids: np.ndarray, ids: ArrayLike) -> np.ndarray:
    """Which of ``sorted_ids`` (ascending, distinct: a segment's doc IDs) are among ``ids``:
    a bool array as long as ``sorted_ids``, the same as ``np.isin(sorted_ids, ids)``."""
    out = np.zeros(len(sorted_ids), dtype=bool)
    if not len(sorted_ids):
        return out
    wanted = np.asarray(ids, dtype=np.int64)
    at = np.minimum(np.searchsorted(sorted_ids, wanted), len(sorted_ids) - 1)
    out[at[sorted_ids[at] == wanted]] = True
    return out
