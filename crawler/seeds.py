"""Did any seed get fetched?  If none could be, why: the one line such a crawl ends with.

A new user's first crawl often starts from a seed that cannot be fetched (a typo in the host, a
server not started, a 404).  Such a run fetches nothing and would end like a finished crawl of
0 pages; instead ``websift crawl`` exits 1 with one line naming each seed and what went wrong
(:func:`no_seed_line`).

A seed's outcome is read from the store after the run, following its redirects: fetched, failed
(an error, refused by robots.txt or by the scope, or its host's robots.txt unreachable, which
keeps every page of the host off limits), or undecided (the run stopped before reaching it).
Only a run where every seed failed and no page at all was fetched is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from http import HTTPStatus

from websift.crawler import settings as S
from websift.store.schema import DISALLOWED, ERROR, FETCHED, OUT_OF_SCOPE, REDIRECT
from websift.store.views import StoreReader

# the outcomes (crawler/pipeline.py stats) of a page answered with content or "not modified"
FETCH_OUTCOMES = ("outcome/fetched", "outcome/unchanged", "outcome/not_modified")


def reason_words(reason: str) -> str:
    """A failure reason key (``http_404``, ``connection_refused``) in words."""
    if reason.startswith("http_") and reason[5:].isdigit():
        code = int(reason[5:])
        try:
            return f"HTTP {code} {HTTPStatus(code).phrase}"
        except ValueError:
            return f"HTTP {code}"
    if reason == "dns":
        return "DNS lookup failed"
    if reason == "timeout":
        return "timed out"
    return reason.replace("_", " ")


def seed_failure(
    store: StoreReader, url: str, robots_failure: Callable[[int], str | None]
) -> str | None:
    """Why ``url`` could not be fetched, or None when it was fetched or is undecided.

    ``robots_failure(host_id)`` says why a host's robots.txt could not be had in this run."""
    page = store.page_by_url(url)
    seen: set[int] = set()
    while page is not None and page.status == REDIRECT and page.redirect_to is not None:
        if page.id in seen or len(seen) > S.MAX_REDIRECTS:
            return "redirects in a loop" if page.id in seen else "too many redirects"
        seen.add(page.id)
        page = store.page(page.redirect_to)
    if page is None or page.status == FETCHED:
        return None
    via = "" if page.url == url else f"redirected to {page.url}, "
    if page.status == ERROR:
        return via + reason_words(page.error or "error")
    if page.status == DISALLOWED:
        where = page.error or "robots.txt"
        return via + (f"disallowed by {where}" if where.startswith("robots.txt")
                      else f"disallowed by robots.txt: {where}")
    if page.status == OUT_OF_SCOPE:
        return f"{via}out of the crawl's scope: {page.error or 'refused'}"
    robots = robots_failure(page.host_id)
    return None if robots is None else f"{via}robots.txt: {robots}"


def failed_seeds(
    store: StoreReader, seeds: list[str], robots_failure: Callable[[int], str | None],
    stats: Mapping[str, int],
) -> dict[str, str]:
    """Every seed with why it failed, when all of them did and the run fetched nothing;
    else empty."""
    if not seeds or any(stats.get(key, 0) for key in FETCH_OUTCOMES):
        return {}
    found: dict[str, str] = {}
    for url in seeds:
        why = seed_failure(store, url, robots_failure)
        if why is None:
            return {}
        found[url] = why
    return found


def no_seed_line(command: str, failures: Mapping[str, str]) -> str:
    """The one line a crawl whose every seed failed ends with."""
    each = "; ".join(f"{url} ({why})" for url, why in failures.items())
    return f"websift {command}: no seed could be fetched: {each}"
