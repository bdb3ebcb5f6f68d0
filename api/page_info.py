"""Everything the engine knows of one page, gathered from the crawl store, the index and the ranks.

Used by ``GET /pages`` (JSON) and ``GET /page`` (the same facts as HTML for people).  Reads only:
the store through a read-only connection, the index and ranks through the request's snapshot.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np

from websift.api.errors import NotFound
from websift.api.models import LinkOut, PageInfo, RobotsVerdict
from websift.api.schedule_cache import Schedule, ScheduleCache
from websift.api.snapshot import Snapshot
from websift.core.html import is_html
from websift.crawler.robots import RobotsPolicy
from websift.crawler.settings import ROBOTS_AGENT
from websift.crawler.urls import canonicalize
from websift.indexer.searcher import Searcher
from websift.ranking.fusion import gather
from websift.store import schema as st
from websift.store.schema import Page, origin_of
from websift.store.views import StoreReader


def iso(ts: float | None) -> str | None:
    """A unix time as ISO 8601 UTC, to the second."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def find_page(store: StoreReader, url: str) -> Page:
    """The store's row for ``url`` (as given, else in canonical form); 404 if unknown."""
    page = store.page_by_url(url)
    if page is None:
        page = store.page_by_url(canonicalize(url))
    if page is None:
        raise NotFound(f"the crawl store does not know {url!r}")
    return page


def indexed_head(searcher: Searcher, doc_id: int) -> dict[str, str] | None:
    """URL and title of the live indexed version of ``doc_id``, or None if not indexed.

    Newest segment first; a version masked by a newer segment or a drop is not live
    (``Searcher.live``).  The indexer has no by-ID lookup of its own yet.
    """
    for si in range(len(searcher.segments) - 1, -1, -1):
        seg = searcher.segments[si]
        ords = np.flatnonzero(seg.doc_ids == doc_id)
        for o in ords:
            if searcher.live[si][o]:
                return seg.head(int(o))
    return None


def schedule_position(schedule: Schedule, url_id: int) -> dict[str, Any]:
    """Where a fetched page stands in the refresh schedule (``crawler.recrawl``), if near the top.

    ``schedule`` holds the schedule's first entries: the position of a page further down is
    reported as "after the first ``len(schedule.items)``".
    """
    position = schedule.position.get(url_id)
    if position is not None:
        item = schedule.items[position - 1]
        return {"position": position, "priority": item.priority,
                "meaning": f"refetched as number {position} by the next 'websift recrawl'"}
    return {"position": None, "priority": None,
            "meaning": f"not among the first {len(schedule.items)} pages of the refresh schedule"}


def robots_verdict(store: StoreReader, url: str) -> RobotsVerdict:
    host = store.host(origin_of(url))
    if host is None or host.robots_fetched is None:
        return RobotsVerdict(
            allowed=None, robots_status=None, detail="robots.txt not fetched yet"
        )
    decision = RobotsPolicy.from_response(host.robots_status, host.robots_body).decide(
        ROBOTS_AGENT, url
    )
    detail = decision.reason
    if decision.rule:
        detail = f"{decision.rule} (line {decision.line})"
    return RobotsVerdict(
        allowed=decision.allowed, robots_status=host.robots_status, detail=detail
    )


def unfetched_reason(page: Page, url_of: dict[int, str]) -> str | None:
    """Why the page's own content is not in the store, or None if it was fetched."""
    if page.status == st.DISALLOWED:
        return "disallowed by robots.txt"
    if page.status == st.ERROR:
        return f"fetch failed: {page.error or 'error'}"
    if page.status == st.REDIRECT:
        return f"redirects to {url_of.get(page.redirect_to or 0, 'another page')}"
    if page.status == st.OUT_OF_SCOPE:
        return f"out of the crawl's scope: {page.error or 'refused'}"
    if page.status == st.DISCOVERED:
        return "not fetched yet"
    return None


def index_status(
    page: Page, indexed: bool, url_of: dict[int, str],
    canonical: tuple[int, bool] | None = None,
) -> tuple[str | None, str | None]:
    """(what the index holds of the page, why it holds nothing) in a site owner's words.

    The indexer indexes a page it could not fetch by the anchor text of links to it (Brin and
    Page 1998, section 2.2), so a disallowed page can be indexed "by anchor text only".
    """
    unfetched = unfetched_reason(page, url_of)
    if indexed:
        if unfetched is None:
            return "page text and anchor text", None
        return f"anchor text only ({unfetched})", None
    if unfetched is not None:
        return None, unfetched
    if canonical is not None and canonical[1] and page.duplicate_of == canonical[0]:
        target = url_of.get(canonical[0], f"page {canonical[0]}")
        return None, f"a variant of {target} (rel=canonical): indexed under that URL"
    if page.duplicate_of is not None:
        return None, f"duplicate of {url_of.get(page.duplicate_of, f'page {page.duplicate_of}')}"
    if page.noindex:
        return None, "the page asks not to be indexed (noindex)"
    if not is_html(page.content_type):  # the indexer's rule
        return None, f"content type {page.content_type or '(none)'} is not indexed"
    return None, "not indexed yet: run 'websift index'"


def _links(
    store: StoreReader, rows: list[tuple[int, str, bool]]
) -> list[LinkOut]:
    """The links as URLs (one query for all their URLs)."""
    urls = store.urls_of(other for other, _, _ in rows)
    return [
        LinkOut(url=urls.get(other, f"#{other}"), anchor=anchor, nofollow=nofollow)
        for other, anchor, nofollow in rows
    ]


def page_info(
    store: StoreReader, snap: Snapshot, url: str, max_links: int, schedule: ScheduleCache
) -> PageInfo:
    """The page's facts.  The work is bounded by ``max_links``, not by the page's links: the
    first ``max_links`` in- and out-links are read, the rest only counted on the index."""
    page = find_page(store, url)
    searcher = snap.searcher.value
    doc = indexed_head(searcher, page.id)
    indexed = doc is not None
    url_of = store.urls_of(ref for ref in (page.duplicate_of, page.redirect_to) if ref is not None)
    view = snap.rank_view
    pagerank = pagerank_n = None
    topics: dict[str, float] = {}
    ids = np.asarray([page.id], dtype=np.int64)
    if view is not None:
        pagerank = float(gather(view.ranks.pagerank, ids)[0])
        pagerank_n = float(gather(view.pagerank, ids)[0])
        topics = {name: float(gather(vec, ids)[0]) for name, vec in view.topics.items()}
    due = None
    if page.status == st.FETCHED:
        due = schedule_position(schedule.get(store), page.id)
    graph = None
    if view is not None and 0 <= page.id < len(view.ranks.level):
        level = int(view.ranks.level[page.id])
        graph = {"level": None if level < 0 else level,
                 "in_giant_scc": bool(view.ranks.giant_scc[page.id]),
                 "site": view.ranks.host_facts(page.id)}
    canonical = store.canonical_of(page.id)
    variant_ids = store.variants_of(page.id)
    alternates = store.hreflang_of(page.id)
    url_of.update(store.urls_of([*variant_ids, *alternates.values(),
                                 *([canonical[0]] if canonical else [])]))
    indexed_as, why_not = index_status(page, indexed, url_of, canonical)
    return PageInfo(
        url=page.url,
        id=page.id,
        status=page.status,
        http_status=page.http_status,
        fetched_at=page.fetched_at,
        fetched_at_iso=iso(page.fetched_at),
        fetch_count=page.fetch_count,
        change_count=page.change_count,
        robots=robots_verdict(store, page.url),
        indexed=indexed,
        indexed_as=indexed_as,
        not_indexed_reason=why_not,
        duplicate_of=url_of.get(page.duplicate_of) if page.duplicate_of else None,
        canonical=url_of.get(canonical[0]) if canonical else None,
        canonical_honoured=canonical[1] if canonical else None,
        variants=[url_of[v] for v in variant_ids if v in url_of],
        hreflang={lang: url_of[alt] for lang, alt in alternates.items() if alt in url_of},
        redirect_to=url_of.get(page.redirect_to) if page.redirect_to else None,
        error=page.error,
        title=(doc.get("title") or None) if doc is not None else None,
        lang=(doc.get("lang") or None) if doc is not None else None,
        pagerank=pagerank,
        pagerank_normalised=pagerank_n,
        opic_importance=page.importance,
        # The schedule's priority when the page is near the top, else its cash (the main factor).
        refresh_priority=page.cash if due is None or due["priority"] is None else due["priority"],
        next_due=due,
        graph=graph,
        topics=topics,
        in_link_count=store.in_link_count(page.id),
        out_link_count=store.out_link_count(page.id),
        in_links=_links(store, store.in_links(page.id, max_links)),
        out_links=_links(store, store.out_links(page.id, max_links)),
    )
