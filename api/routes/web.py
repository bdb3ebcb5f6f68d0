"""The search page for people: ``GET /`` (and ``/?q=``) and ``GET /page?url=``, plain HTML.

Server-rendered with Jinja2 (autoescape on), no JavaScript.  Result titles, URLs and snippets come
from crawled pages, so they are text: snippets are escaped except for the ``<mark>`` spans that
:func:`api.highlight.highlight` adds.  The page-info view is a separate URL (``/page?url=``) rather
than content negotiation on ``/pages``, so that a link works in any browser and the JSON API keeps
one media type.

Bad input never gets a JSON error here: it is shown in the page with a 4xx status; a query that
breaks a cap is refused with the cap named, and an offset beyond the cap is clamped with a notice.
Results some shard is missing from (a front server's shard down or late) say so in a notice.

A front server (``websift serve --shard http://...``) has no crawl store: its results link to
no page-info view, and ``/page`` says which server to ask.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any
from urllib.parse import urlencode

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from websift.api.dependencies import (
    get_app_settings,
    get_holder,
    get_schedule_cache,
    with_store,
)
from websift.api.errors import InvalidParameter, NotFound, status_of
from websift.api.highlight import highlight
from websift.api.page_info import page_info
from websift.api.retrieval import (
    LANG_MAX_CHARS,
    Outcome,
    SearchEngine,
    SearchRequest,
    with_fragment,
)
from websift.api.schedule_cache import ScheduleCache
from websift.api.settings import Settings
from websift.api.snapshot import SnapshotHolder
from websift.core.errors import WebsiftError
from websift.indexer.languages import is_rtl

MAX_PAGE_LINKS = 9  # numbered result pages shown around the current one
# Defence in depth behind autoescaping: the only script is the search box's completions
# (static/suggest.js, served by this server); the page works without it.
HTML_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True)
class PageLink:
    number: int
    href: str
    current: bool


def _fmt(value: float | None) -> str:
    return "not ranked yet" if value is None else f"{value:.4f}"


def safe_href(url: str) -> str:
    """Only http(s) URLs become links; anything else (``javascript:``...) becomes inert."""
    return url if url.lower().startswith(("http://", "https://")) else "#"


def _jump_href(url: str, fragment: str | None) -> str | None:
    """The "jump to" link of a hit that names an element of its page (``url#fragment``)."""
    target = with_fragment(url, fragment)
    return None if target is None else safe_href(target)


def page_href(url: str) -> str:
    return "/page?" + urlencode({"url": url})


def _search_href(q: str, topic: str | None, offset: int, *, as_typed: bool = False) -> str:
    params: dict[str, str | int] = {"q": q}
    if topic:
        params["topic"] = topic
    if offset:
        params["offset"] = offset
    if as_typed:
        params["as_typed"] = 1
    return "/?" + urlencode(params)


def _pagination(
    q: str, topic: str | None, *, offset: int, size: int, total: int, max_offset: int
) -> dict[str, Any]:
    last_offset = min(max(total - 1, 0) // size * size, max_offset // size * size)
    current = offset // size
    pages = last_offset // size + 1
    lo = max(0, min(current - MAX_PAGE_LINKS // 2, pages - MAX_PAGE_LINKS))
    hi = min(pages, lo + MAX_PAGE_LINKS)
    links = [
        PageLink(p + 1, _search_href(q, topic, p * size), p == current) for p in range(lo, hi)
    ]
    prev_href = _search_href(q, topic, max(0, offset - size)) if offset > 0 else None
    next_href = (
        _search_href(q, topic, offset + size) if offset + size <= last_offset else None
    )
    return {"page_links": links, "prev_href": prev_href, "next_href": next_href}


def _notices(outcome: Outcome) -> list[str]:
    """What the reader should know of how the results were made."""
    out = []
    shards = outcome.shards
    if outcome.partial:
        out.append("Partial results: this query took longer than the search deadline; these "
                   "are the best pages found in time.")
    if shards.answered < shards.total:
        out.append(f"Partial results: {shards.answered} of {shards.total} index shards "
                   "answered in time; pages held by the others are missing.")
    if outcome.index_outdated:
        out.append("The index is being rebuilt for this version of websift: until it is done, "
                   "some words may not be found.")
    return out


def _results(outcome: Outcome, page_info_links: bool) -> list[dict[str, Any]]:
    return [
        {
            "url": r.hit.url,
            "href": safe_href(r.hit.url),
            "jump_href": _jump_href(r.hit.url, r.hit.fragment),
            "title": r.hit.title,
            "fragment": r.hit.fragment,
            "snippet_html": highlight(r.hit.snippet, r.hit.highlights),
            "info_href": page_href(r.hit.url) if page_info_links else None,
            "score": float(r.hit.score),
            "text": float(r.hit.text_score),
            "prior": r.prior,
            "pagerank_text": _fmt(r.pagerank),
            "opic_text": _fmt(r.opic),
            "topic": r.topic,
            "lang": r.hit.lang or None,
            "dir": "rtl" if is_rtl(r.hit.lang) else "ltr",
            "fetched": r.hit.fetched,
        }
        for r in outcome.hits
    ]


def _parse_offset(raw: str | None, settings: Settings, notices: list[str]) -> int:
    if raw is None or raw == "":
        return 0
    try:
        offset = int(raw)
    except ValueError:
        raise InvalidParameter(f"offset: must be a whole number (got {raw[:20]!r})") from None
    if offset < 0:
        raise InvalidParameter("offset: must be at least 0")
    if offset > settings.max_offset:
        notices.append(f"Results go only as far as {settings.max_offset}; showing the last page.")
        offset = settings.max_offset
    return offset - offset % settings.page_size


def build_router(templates: Jinja2Templates) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    def render(
        request: Request, name: str, context: dict[str, Any], status: int = 200
    ) -> HTMLResponse:
        settings: Settings = request.app.state.settings
        holder: SnapshotHolder | None = request.app.state.holder
        base = {
            "q": "",
            "topic": None,
            "error": None,
            "notices": [],
            "outcome": None,
            "typed_href": None,
            "did_you_mean_href": None,
            "max_query_chars": settings.max_query_chars,
            "topic_names": [] if holder is None else _topic_names(holder),
            "page_href": page_href,
            "safe_href": safe_href,
        }
        base.update(context)
        return templates.TemplateResponse(
            request, name, base, status_code=status, headers=HTML_HEADERS
        )

    @router.get("/", response_class=HTMLResponse)
    def search_page(
        *,
        request: Request,
        settings: Annotated[Settings, Depends(get_app_settings)],
        q: str | None = None,
        topic: str | None = None,
        offset: str | None = None,
        lang: str | None = None,
        as_typed: str | None = None,
    ) -> HTMLResponse:
        q = (q or "").strip()
        topic = topic or None
        context: dict[str, Any] = {"q": q, "topic": topic, "notices": []}
        if not q:
            return render(request, "search.html", context)
        try:
            if len(q) > settings.max_query_chars:
                raise InvalidParameter(
                    f"The query is {len(q)} characters long; the most is "
                    f"{settings.max_query_chars}."
                )
            off = _parse_offset(offset, settings, context["notices"])
            req = SearchRequest(
                q=q, k=settings.page_size, offset=off, topic=topic,
                lang=(lang or "")[:LANG_MAX_CHARS] or None,
                lang_hint=request.headers.get("accept-language", "")[:LANG_MAX_CHARS] or None)
            engine: SearchEngine = request.app.state.engine
            # This handler runs in a worker thread (it renders, and may read the disk for the
            # topic list); the engine is async (a front server awaits its shards).
            outcome = anyio.from_thread.run(engine.search, req)
            # A query that finds nothing, or whose misspelt words are in no page (its
            # pages are those of its other words: ``hashmpa insert``), with a spelling that
            # finds pages, shows the pages of that spelling, as a reader expects of a search
            # engine; ``as_typed`` (the "search instead for" link) keeps the query as typed.
            typed = None
            if ((outcome.total == 0 or outcome.corrects_unfound)
                    and outcome.did_you_mean is not None and off == 0
                    and (as_typed or "").lower() not in ("1", "true", "yes", "on")):
                fixed = anyio.from_thread.run(engine.search, replace(req, q=outcome.did_you_mean))
                if fixed.total:
                    typed, q, outcome = q, outcome.did_you_mean, fixed
                    context["q"] = q
        except WebsiftError as exc:
            status, _ = status_of(exc)
            context["error"] = str(exc)
            return render(request, "search.html", context, status)
        context["notices"].extend(_notices(outcome))
        context.update(
            typed=typed,
            typed_href=None if typed is None else _search_href(typed, topic, 0, as_typed=True),
            did_you_mean_href=(None if outcome.did_you_mean is None or typed is not None
                               else _search_href(outcome.did_you_mean, topic, 0)),
            outcome=outcome,
            results=_results(outcome, request.app.state.holder is not None),
            first=off + 1 if outcome.hits else off,
            last=off + len(outcome.hits),
            **_pagination(q, topic, offset=off, size=settings.page_size, total=outcome.total,
                          max_offset=settings.max_offset),
        )
        return render(request, "search.html", context)

    @router.get("/page", response_class=HTMLResponse)
    async def page_view(
        request: Request,
        settings: Annotated[Settings, Depends(get_app_settings)],
        holder: Annotated[SnapshotHolder | None, Depends(get_holder)],
        schedule: Annotated[ScheduleCache, Depends(get_schedule_cache)],
        url: str | None = None,
    ) -> HTMLResponse:
        try:
            if holder is None:
                raise NotFound("this front server holds no crawl: ask the shard server whose "
                               "crawl holds the page for /page?url=")
            if not url:
                raise InvalidParameter("url: say which page, e.g. /page?url=https://example.org/")
            if len(url) > 4096:
                raise InvalidParameter("url: at most 4096 characters")
            with holder.lease() as snap:
                info = await with_store(request, lambda store: page_info(
                    store, snap, url, settings.max_page_links, schedule))
        except WebsiftError as exc:
            status, _ = status_of(exc)
            return render(request, "error.html", {"error": str(exc)}, status)
        context = {"info": info, "json_href": "/pages?" + urlencode({"url": info.url})}
        return render(request, "page.html", context)

    return router


def _topic_names(holder: SnapshotHolder) -> list[str]:
    try:
        snap = holder.refresh()
    except WebsiftError:
        return []
    view = snap.rank_view
    return [] if view is None else sorted(view.topics)

