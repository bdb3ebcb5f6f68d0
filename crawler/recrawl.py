"""Recrawl by importance: which known pages to fetch again, in which order.

Question: with a budget of N fetches, which fetched pages are most worth refreshing?

Refresh priority (OPIC paper, section 3.3 "Focused crawling and pages discovery": the cash a page
gathers while it is not read is what the refresh side of the crawl spends):

    priority = cash * (1 + RECRAWL_CHANGE_WEIGHT * change_count / fetch_count)

``cash`` is the OPIC cash the page accumulated since its last fetch (from its in-links and from
the virtual page's refresh dividends: its stored base plus the dividends pending since its last
update, ``store.schema.cash_sql``), so important pages come back sooner; the second factor is the
observed change rate, so pages that changed at most of their refetches come back sooner still.
Ties go to the page fetched longest ago.

``websift crawl`` refreshes in its own schedule (crawler/frontier.py: a read page competes with
unread ones by cash once its refetch interval has passed); ``websift recrawl`` is the
refresh-only run of the top of this schedule (discovery share 0, ``Frontier.schedule_explicit``).
:func:`recrawl_schedule` is the one computation; ``websift recrawl --dry-run`` prints it and the
API's ``GET /recrawl`` returns it.
"""

from __future__ import annotations

from dataclasses import dataclass

from websift.crawler import settings as S
from websift.store.views import StoreReader


@dataclass(frozen=True)
class RecrawlItem:
    url_id: int
    url: str
    priority: float
    fetched_at: float | None
    fetch_count: int
    change_count: int


def recrawl_schedule(
    store: StoreReader, limit: int, change_weight: float = S.RECRAWL_CHANGE_WEIGHT
) -> list[RecrawlItem]:
    """The ``limit`` fetched pages with the highest refresh priority, highest first (the store
    ranks them in SQL: the schedule is read per API request, and all fetched pages compete)."""
    if limit <= 0:
        return []
    return [RecrawlItem(*row) for row in store.refresh_schedule(limit, change_weight)]
