"""Recrawl by importance: which known pages to fetch again, in which order.

Question: with a budget of N fetches, which fetched pages are most worth refreshing?

Refresh priority (OPIC paper, section 3.3 "Focused crawling and pages discovery": the cash a page
gathers while it is not read is what the refresh side of the crawl spends):

    priority = cash * (1 + RECRAWL_CHANGE_WEIGHT * change_count / fetch_count)

``urls.cash`` is the OPIC cash the page accumulated since its last fetch (from its in-links and
from the virtual page's refresh share), so important pages come back sooner; the second factor is
the observed change rate, so pages that changed at most of their refetches come back sooner still.
Ties go to the page fetched longest ago.

:func:`recrawl_schedule` is the one computation; ``websift recrawl --dry-run`` prints it and the
API's ``GET /recrawl`` returns it.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler import settings as S
from store.crawl_store import FETCHED, CrawlStore


@dataclass(frozen=True)
class RecrawlItem:
    url_id: int
    url: str
    priority: float
    fetched_at: float | None
    fetch_count: int
    change_count: int


def recrawl_schedule(
    store: CrawlStore, limit: int, change_weight: float = S.RECRAWL_CHANGE_WEIGHT
) -> list[RecrawlItem]:
    """The ``limit`` fetched pages with the highest refresh priority, highest first."""
    if limit <= 0:
        return []
    rows = store.conn.execute(
        "SELECT id, url, cash * (1.0 + ? * change_count * 1.0 / max(fetch_count, 1)) AS p, "
        "fetched_at, fetch_count, change_count FROM urls WHERE status=? "
        "ORDER BY p DESC, fetched_at ASC, id ASC LIMIT ?",
        (change_weight, FETCHED, limit),
    ).fetchall()
    return [
        RecrawlItem(int(i), str(u), float(p), None if f is None else float(f), int(n), int(c))
        for i, u, p, f, n, c in rows
    ]
