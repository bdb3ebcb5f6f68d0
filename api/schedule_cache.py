"""The refresh schedule as the API reads it: worked out at most once per time window.

Question: where does a page stand in the refresh schedule, and what are its first entries?
The schedule (``crawler.recrawl.recrawl_schedule``) ranks every fetched page by a priority that
SQL computes per row, so one reading costs a scan of all of them whatever its limit (0.4-0.5 s
at 500,000 URLs, in SQLite).  ``GET /pages``, ``GET /page`` and ``GET /recrawl`` therefore
share one reading of its first ``entries`` entries per application (``app.state``), made again
when it is older than ``max_age_s``: a request costs a lookup, and a burst of requests costs one scan per window.
One lock guards the reading, so requests that arrive while it is made wait for it instead of
each scanning the store.  The answers may lag the store by up to ``max_age_s``; ``max_age_s`` 0
reads the schedule afresh for every request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from websift.crawler.recrawl import RecrawlItem, recrawl_schedule
from websift.store.views import StoreReader


@dataclass(frozen=True)
class Schedule:
    """The first entries of the refresh schedule, highest priority first."""

    items: list[RecrawlItem]
    position: dict[int, int] = field(init=False)  # URL ID -> 1-based position

    def __post_init__(self) -> None:
        positions = {item.url_id: n for n, item in enumerate(self.items, start=1)}
        object.__setattr__(self, "position", positions)


class ScheduleCache:
    """The schedule's first ``entries`` entries, read at most once per ``max_age_s`` seconds."""

    def __init__(
        self, entries: int, max_age_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.entries = entries
        self.max_age_s = max_age_s
        self.readings = 0  # times the store was scanned
        self._clock = clock
        self._lock = threading.Lock()
        self._schedule: Schedule | None = None
        self._made = 0.0

    def get(self, store: StoreReader) -> Schedule:
        with self._lock:
            if self._schedule is None or self._clock() - self._made >= self.max_age_s:
                self._schedule = Schedule(recrawl_schedule(store, self.entries))
                self._made = self._clock()
                self.readings += 1
            return self._schedule
