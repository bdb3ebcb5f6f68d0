"""One schedule for discovery and refresh, through the session (fake clock, fake spider).

A read page keeps gathering cash; once its refetch interval has passed it competes with every
other pending page, and Greedy fetches it again (conditionally) when it is the richest.  The
fixtures are test_session_unit's: a real store, frontier and politeness, a fake request factory
and a clock that moves only when told.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_session_unit import A, Run, crawl  # noqa: F401  (crawl: fixture)

from tests.crawler.fake_session import DELAY, HTML, Sent
from websift.core.datadir import DataDir
from websift.crawler.focus import FocusError
from websift.crawler.session import CrawlConfig, CrawlSession

INTERVAL = 100.0
LINKS = {  # path -> links on it; after one pass "/" has cash from "/a" and "/b", "/b" from "/c"
    "/": ["/a", "/b"],
    "/a": ["/"],
    "/b": ["/", "/c"],
    "/c": ["/b"],
}


def _body(path: str) -> bytes:
    links = "".join(f'<a href="{href}">{href}</a> ' for href in LINKS[path])
    return f"<html><body><p>{path}</p>{links}</body></html>".encode()


def _drain(run: Run, answer: Callable[[Sent], None]) -> list[Sent]:
    """Hand out and answer requests until nothing is pending; the requests, in order."""
    sent: list[Sent] = []
    while run.session.has_pending():
        request = run.next()
        if request is None:
            assert run.session.wake_at is not None
            run.clock.now = run.session.wake_at
            continue
        sent.append(request)
        answer(request)
    return sent


def _first_fetch(run: Run, request: Sent) -> None:
    path = request.url.removeprefix(A)
    run.respond(request, body=_body(path), headers=[*HTML, ("ETag", f'"{path}-v1"')])


def test_read_pages_are_refetched_richest_first_once_their_interval_has_passed(
    crawl: Any,  # noqa: F811
) -> None:
    run = crawl([A + "/"], min_refetch_interval=INTERVAL)
    run.robots_ready(A)
    first = _drain(run, lambda r: _first_fetch(run, r))
    assert [r.url for r in first] == [A + "/", A + "/a", A + "/b", A + "/c"]
    frontier = run.session.frontier
    assert all(frontier.was_read(r.meta.page_id) for r in first)
    # everything is read and nothing is due: the run has nothing to do ...
    assert not run.session.has_pending()
    assert frontier.stats()["waiting_refresh"] == 4
    run.clock.advance(INTERVAL)
    # ... until the refetch interval has passed: the read pages compete by cash
    assert run.session.has_pending()
    cash = {r.url: frontier.cash(r.meta.page_id) for r in first}
    richest_first = sorted(cash, key=lambda url: -cash[url])
    # "/" was given cash by two pages read after it, "/b" by one, the others by none: not the
    # order of their IDs (nor of the first pass)
    assert richest_first[:2] == [A + "/", A + "/b"]

    def not_modified(request: Sent) -> None:
        assert frontier.was_read(request.meta.page_id)  # a refresh, asked conditionally
        path = request.url.removeprefix(A)
        assert request.headers.get("If-None-Match") == f'"{path}-v1"'
        run.respond(request, status=304, body=b"", headers=[])

    again = _drain(run, not_modified)
    assert [r.url for r in again] == richest_first  # more cash, refetched sooner
    assert run.session.stats["outcome/not_modified"] == 4
    for request in first:
        page = run.page(request.url)
        assert page.fetch_count == 2 and page.status == "fetched"


def test_a_richer_read_page_goes_before_a_poorer_unread_one(crawl: Any) -> None:  # noqa: F811
    run = crawl([A + "/", A + "/a"], min_refetch_interval=INTERVAL)
    run.robots_ready(A)
    frontier = run.session.frontier
    home, leaf = run.uid(A + "/"), run.uid(A + "/a")
    frontier.set_cash(leaf, 0.0)  # the unread page has nothing
    request = run.next()
    assert request is not None and request.url == A + "/"
    run.respond(request, body=b"<html><body>no links</body></html>")
    run.clock.advance(INTERVAL)
    frontier.set_cash(home, 0.4)  # the read page has gathered more meanwhile
    frontier.set_cash(leaf, 0.1)
    refresh = run.next()
    assert refresh is not None and refresh.url == A + "/"
    assert frontier.was_read(home) and not frontier.was_read(leaf)
    run.respond(refresh, body=b"<html><body>no links</body></html>")
    run.clock.advance(DELAY)
    discovery = run.next()
    assert discovery is not None and discovery.url == A + "/a"
    assert run.page(A + "/").fetch_count == 2


def test_a_focus_gets_its_share_and_is_fetched_first(crawl: Any) -> None:  # noqa: F811
    run = crawl([A + "/other", A + "/news/today"], focus_patterns=("/news/",), focus_share=0.5)
    frontier = run.session.frontier
    news, other = run.uid(A + "/news/today"), run.uid(A + "/other")
    assert frontier.opic.focus[news] and not frontier.opic.focus[other]
    assert frontier.cash(news) > frontier.cash(other)  # the focus share on top of the rest
    run.robots_ready(A)
    request = run.next()
    assert request is not None and request.url == A + "/news/today"


def test_a_bad_focus_is_refused_before_the_store_opens(tmp_path: Path) -> None:
    data = DataDir.create(tmp_path / "data")
    config = CrawlConfig(seeds=[A + "/"], focus_patterns=("(",))
    with pytest.raises(FocusError, match="bad focus pattern"):
        CrawlSession(data, config)
    assert not data.store_path.exists()
