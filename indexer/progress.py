"""``websift index``'s progress line: pages indexed of the pages this run will index, and the rate.

The total counts the fetched pages a full document is made of (archived HTML, not noindex, not a
duplicate: ``store.views.StoreReader.indexable_types``), not every URL the run considers: URLs
known only from links become small anchor-only documents and are not counted as pages.  It is
read when the first line is said (after the first batch of pages), so ``--quiet`` does not
pay for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from websift.core.html import is_html
from websift.indexer.settings import PROGRESS_SECONDS
from websift.store.views import StoreReader


def pages_to_index(store: StoreReader, ids: list[int] | None, max_seq: int) -> int:
    """Full documents the run will make from ``ids`` (None: every page up to ``max_seq``)."""
    return sum(n for kind, n in store.indexable_types(ids, max_seq).items() if is_html(kind))


def progress_line(done: int, total: int, seconds: float) -> str:
    rate = done / seconds if seconds > 0 else 0.0
    return f"{done} of {total} pages, {rate:.0f} pages/s"


class PageMeter:
    """Says :func:`progress_line` after the first batch (so the total shows at once), then at
    most every ``every`` seconds as pages are indexed."""

    def __init__(self, say: Callable[[str], None], total: Callable[[], int],
                 every: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.say = say
        self._total = total
        self.total: int | None = None
        self.every = PROGRESS_SECONDS if every is None else every
        self.clock = clock
        self.started = clock()
        self.last = float("-inf")

    def update(self, done: int) -> None:
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        if self.total is None:
            self.total = self._total()
        self.say(progress_line(done, max(done, self.total), now - self.started))
