"""CrawlSession without Scrapy: what it asks for next, and what it makes of answers.

The session is driven as Scrapy's engine and the spider would drive it, but synchronously: a
fake request factory stands in for the spider (it records the requests the session makes) and a
fake clock stands in for time, so politeness is asserted to the millisecond without waiting.
The store, the WARC files, the frontier and politeness are the real ones, in ``tmp_path``.
Hosts are loopback IP literals (never contacted: no request is sent anywhere).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from tests.crawler import fake_session
from tests.crawler.fake_session import (
    ALLOW_ALL,
    DELAY,
    HTML,
    T0,
    FakeClock,
    FakeFactory,
    Sent,
    Sessions,
)
from websift.core.datadir import DataDir
from websift.crawler.meta import FetchMeta
from websift.crawler.pipeline import Fetched
from websift.crawler.scope import ScopeConfig
from websift.crawler.session import CrawlConfig, CrawlSession
from websift.store.crawl_store import Page, StoreReader

A = "http://127.0.0.2:8001"
B = "http://127.0.0.3:8002"


class Run(fake_session.Run):
    """The spider's side: robots.txt answers, responses and failures, as its callbacks give them."""
    def robots(self, request: Sent, body: bytes = ALLOW_ALL, status: int = 200) -> None:
        """The spider's parse_robots: release the host's place, then hand over the answer."""
        assert request.meta.is_robots
        self.session.release(request.meta, 0.01)
        self.session.on_robots(request.meta, status, body)

    def respond(
        self,
        request: Sent,
        status: int = 200,
        body: bytes = b"<html><body>x</body></html>",
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        """The spider's parse: release, then the response in plain values."""
        meta = request.meta
        self.session.release(meta, 0.01)
        fetched = Fetched(
            uid=meta.page_id, url=request.url, status=status,
            headers=HTML if headers is None else headers, body=body, depth=meta.depth,
            fetched_at=self.clock(),
        )
        self.session.on_response(meta, fetched)

    def fail(self, request: Sent | None, reason: str) -> None:
        """The spider's errback: release (no latency), then the failure's reason."""
        meta = None if request is None else request.meta
        self.session.release(meta, None)
        self.session.on_failure(meta, reason)

    def page(self, url: str) -> Page:
        page = self.session.store.page_by_url(url)
        assert page is not None, f"{url} is not in the store"
        return page

    def uid(self, url: str) -> int:
        return int(self.page(url).id)

    def robots_ready(self, *origins: str, body: bytes = ALLOW_ALL) -> None:
        """Answer the robots.txt request of each origin (asked for first), then wait out the
        delay their start began."""
        for origin in origins:
            request = self.next()
            assert request is not None and request.url == origin + "/robots.txt"
            self.robots(request, body)
        self.clock.advance(DELAY)


@pytest.fixture
def crawl(sessions: Sessions) -> Callable[..., Run]:
    def start(seeds: list[str], **config: Any) -> Run:
        clock = FakeClock()
        config.setdefault("delay", DELAY)
        cfg = CrawlConfig(seeds=seeds, scope=ScopeConfig(allow_private=True), **config)
        factory = FakeFactory(clock)
        session, data = sessions.start(cfg, clock, factory)
        return Run(session, clock, factory, data)

    return start


def total_cash_committed(data: DataDir) -> float:
    """Stored cash (pending dividends included) plus the virtual page's, read through a
    separate connection."""
    with StoreReader.open(data.store_path) as reader:
        return reader.opic_cash_total()


# ---------------------------------------------------------------------------- robots.txt first
def test_robots_txt_is_requested_before_any_page_and_a_disallowed_page_never(crawl: Any) -> None:
    run = crawl([A + "/", A + "/private/secret", A + "/open"])
    first = run.next()
    assert first is not None and first.url == A + "/robots.txt"
    assert first.meta == FetchMeta.robots(first.meta.host_id)
    # while robots.txt is in flight nothing of the host goes, however long it takes
    for _ in range(3):
        run.clock.advance(10 * DELAY)
        assert run.next() is None
        assert not run.session.stalled  # waiting for an answer is not a stall
    run.robots(first, b"User-agent: *\nDisallow: /private\n")
    while run.session.has_pending():
        request = run.next()
        if request is None:
            assert run.session.wake_at is not None
            run.clock.now = run.session.wake_at
            continue
        run.respond(request)
    assert sorted(run.factory.page_urls()) == [A + "/", A + "/open"]
    secret = run.page(A + "/private/secret")
    assert secret.status == "disallowed"
    assert secret.error == "robots.txt line 2: Disallow: /private"
    assert run.session.stats["outcome/disallowed"] == 1
    assert run.session.stats["robots/fetched"] == 1


def test_robots_unavailable_leaves_the_hosts_pages_for_later(crawl: Any) -> None:
    run = crawl([A + "/", A + "/x", B + "/"])
    robots_a = run.next()
    robots_b = run.next()
    assert robots_a is not None and robots_b is not None
    assert {robots_a.url, robots_b.url} == {A + "/robots.txt", B + "/robots.txt"}
    run.robots(robots_a, b"", status=503)
    run.robots(robots_b)
    run.clock.advance(DELAY)
    request = run.next()
    assert request is not None and request.url == B + "/"
    run.respond(request)
    run.clock.advance(DELAY)
    assert run.next() is None
    assert not run.session.has_pending()
    assert run.factory.page_urls() == [B + "/"]
    assert run.session.stats["skipped/robots_unavailable"] == 2
    assert run.session.stats["failure/robots_unavailable"] == 1
    assert run.page(A + "/x").status == "discovered"  # a later crawl tries again


def test_a_lost_robots_answer_counts_its_reason_and_makes_the_host_unavailable(crawl: Any) -> None:
    run = crawl([A + "/"])
    robots = run.next()
    assert robots is not None
    run.fail(robots, "timeout")
    run.clock.advance(DELAY)
    assert run.next() is None
    assert run.session.stats["robots/timeout"] == 1
    assert run.session.stats["skipped/robots_unavailable"] == 1
    assert run.factory.page_urls() == []


# ---------------------------------------------------------------------------- politeness
def test_delay_between_starts_and_k_in_flight_per_host(crawl: Any) -> None:
    run = crawl([A + f"/{i}" for i in range(5)], concurrency=2)
    robots = run.next()
    assert robots is not None
    run.robots(robots)  # started and answered at T0: the next start is due at T0 + DELAY
    assert run.next() is None
    assert run.session.wake_at == pytest.approx(T0 + DELAY)
    run.clock.advance(DELAY - 0.001)
    assert run.next() is None  # a millisecond early
    run.clock.now = T0 + DELAY
    first = run.next()
    assert first is not None and first.at == T0 + DELAY
    assert run.next() is None and run.session.wake_at == pytest.approx(T0 + 2 * DELAY)
    run.clock.now = T0 + 2 * DELAY
    second = run.next()
    assert second is not None
    slot = run.session.politeness.slots[first.meta.host_id]
    assert slot.in_flight == 2
    # the host is full: no start and no wake-up time, whatever the clock says, yet no stall
    run.clock.advance(30 * DELAY)
    assert run.next() is None
    assert run.session.wake_at is None and not run.session.stalled
    # an answer frees one place; the next start is spaced from that answer's arrival
    answered_at = run.clock()
    run.respond(first)
    assert slot.in_flight == 1
    assert run.next() is None and run.session.wake_at == pytest.approx(answered_at + DELAY)
    run.clock.now = answered_at + DELAY
    third = run.next()
    assert third is not None
    starts = [s.at for s in run.factory.sent]
    assert all(b - a >= DELAY for a, b in itertools.pairwise(starts))


def test_hosts_are_paced_independently(crawl: Any) -> None:
    run = crawl([A + "/", B + "/"])
    run.robots_ready(A, B)
    first, second = run.next(), run.next()
    assert first is not None and second is not None
    assert {first.url, second.url} == {A + "/", B + "/"}
    assert first.at == second.at  # one host's delay does not hold the other back
    assert first.slot == A and second.slot == B  # Scrapy's download slot is the origin


def test_429_backs_the_host_off_until_retry_after(crawl: Any) -> None:
    run = crawl([A + "/busy"])
    run.robots_ready(A)
    request = run.next()
    assert request is not None
    run.respond(request, status=429, headers=[("Retry-After", "30")])
    assert run.session.stats["backoff/pauses"] == 1
    assert run.session.stats["retry/http_429"] == 1
    assert run.next() is None
    assert run.session.wake_at == pytest.approx(run.clock() + 30)
    run.clock.advance(29.9)
    assert run.next() is None
    run.clock.advance(0.1)
    again = run.next()
    assert again is not None and again.url == A + "/busy"
    assert again.meta.url_id == request.meta.url_id


def test_page_budget_counts_first_tries_only(crawl: Any) -> None:
    run = crawl([A + f"/{i}" for i in range(4)], max_pages=2, retry_times=1)
    run.robots_ready(A)
    first = run.next()
    assert first is not None
    run.fail(first, "timeout")  # retried: the budget is not spent again
    for _ in range(3):
        run.clock.advance(DELAY)
        if (request := run.next()) is not None:
            run.respond(request)
    assert len(run.factory.page_urls()) == 3
    assert len(set(run.factory.page_urls())) == 2  # one URL twice, one more, then the budget
    assert not run.session.has_pending()


# ---------------------------------------------------------------------------- the frontier
def test_greedy_picks_the_richest_url_among_ready_hosts(crawl: Any) -> None:
    urls = [A + "/poor", A + "/rich", A + "/middle", B + "/richest"]
    run = crawl(urls)
    run.robots_ready(A, B)
    cash = dict(zip(urls, [0.05, 0.3, 0.15, 0.5], strict=True))
    for url, amount in cash.items():
        run.session.frontier.set_cash(run.uid(url), amount)
    order: list[str] = []
    for _ in range(4):
        request = run.next()
        assert request is not None
        order.append(request.url)
        run.respond(request)
        run.clock.advance(DELAY)
    # B's page first (the richest of all), then A's by cash; answering each page moved its cash
    # on but gave none to its (link-less) siblings
    assert order == [B + "/richest", A + "/rich", A + "/middle", A + "/poor"]


# ---------------------------------------------------------------------------- answers
def test_a_response_stores_the_page_its_links_and_moves_its_cash(crawl: Any) -> None:
    body = (
        b'<html><body><a href="/a">to a</a> <a href="/b">to b</a>'
        b' <a rel="nofollow" href="/c">c</a></body></html>'
    )
    run = crawl([A + "/"])
    run.robots_ready(A)
    request = run.next()
    assert request is not None
    frontier = run.session.frontier
    opic = frontier.opic
    uid = request.meta.page_id
    cash_before = frontier.cash(uid)
    assert cash_before > 0
    run.respond(request, body=body)
    page = run.page(A + "/")
    assert page.status == "fetched" and page.http_status == 200 and page.warc_file
    links = run.session.store.out_links(uid)
    names = run.session.store.urls_of(dst for dst, _, _ in links)
    targets = {names[dst]: (anchor, nofollow) for dst, anchor, nofollow in links}
    assert targets == {A + "/a": ("to a", False), A + "/b": ("to b", False), A + "/c": ("c", True)}
    assert frontier.url(run.uid(A + "/a")) == A + "/a"
    assert frontier.url(run.uid(A + "/c")) is None  # a nofollow link is stored, not followed
    # a third of the page's cash to each followed child, a third to the virtual page
    assert frontier.cash(run.uid(A + "/a")) == pytest.approx(cash_before / 3)
    assert frontier.cash(uid) == 0.0
    assert opic.total_cash() == pytest.approx(1.0)
    run.session.close("done")
    assert total_cash_committed(run.data) == pytest.approx(1.0)


def test_errors_are_counted_by_reason_and_retried_up_to_the_limit(crawl: Any) -> None:
    run = crawl([A + "/flaky", A + "/gone", A + "/huge"], retry_times=1)
    run.robots_ready(A)
    seen: dict[str, int] = {}
    while run.session.has_pending():
        request = run.next()
        if request is None:
            run.clock.advance(DELAY)
            continue
        seen[request.url] = seen.get(request.url, 0) + 1
        if request.url.endswith("/flaky"):
            run.fail(request, "timeout")
        elif request.url.endswith("/gone"):
            run.respond(request, status=404)
        else:
            run.fail(request, "too_large")
    assert seen == {A + "/flaky": 2, A + "/gone": 1, A + "/huge": 1}
    stats = run.session.stats
    assert stats["retry/timeout"] == 1
    assert stats["failure/timeout"] == 1
    assert stats["failure/http_404"] == 1
    assert stats["failure/too_large"] == 1
    assert (run.page(A + "/flaky").status, run.page(A + "/flaky").error) == ("error", "timeout")
    assert run.page(A + "/gone").http_status == 404
    assert run.session.done_pages == 3
    summary = run.session.summary("finished")
    assert summary["counts"]["failure/timeout"] == 1
    run.fail(None, "dns")  # a request websift did not make: still counted
    assert stats["failure/dns"] == 1


def test_release_on_failure_frees_the_hosts_place_once(crawl: Any) -> None:
    run = crawl([A + "/1", A + "/2", A + "/3"], concurrency=2)
    run.robots_ready(A)
    first = run.next()
    run.clock.advance(DELAY)
    second = run.next()
    assert first is not None and second is not None
    slot = run.session.politeness.slots[first.meta.host_id]
    assert slot.in_flight == 2
    run.clock.advance(DELAY)
    assert run.next() is None and run.session.wake_at is None  # full
    run.fail(first, "connection_refused")
    assert slot.in_flight == 1 and first.meta.released
    # the scheduler's request_left_downloader comes too: the place is not freed twice
    run.session.release(first.meta, None)
    assert slot.in_flight == 1
    run.clock.advance(DELAY)
    third = run.next()
    assert third is not None
    assert slot.in_flight == 2


def test_a_redirect_counts_its_hops_up_to_the_limit(crawl: Any) -> None:
    run = crawl([A + "/r0"], max_redirects=2)
    run.robots_ready(A)
    hops: list[int] = []
    while (request := run.next()) is not None or run.session.wake_at is not None:
        if request is None:
            run.clock.advance(DELAY)
            continue
        hops.append(request.meta.hops)
        n = int(request.url.rsplit("/r", 1)[1])
        run.respond(request, status=301, headers=[("Location", f"/r{n + 1}")])
    assert run.factory.page_urls() == [A + "/r0", A + "/r1", A + "/r2"]
    assert hops == [0, 1, 2]
    r0 = run.page(A + "/r0")
    assert r0.status == "redirect" and r0.redirect_to == run.uid(A + "/r1")
    assert run.page(A + "/r2").error == "too_many_redirects"
    assert run.session.store.page_by_url(A + "/r3") is None  # past the limit: never stored
    assert run.session.stats["outcome/redirect"] == 2
    assert run.session.stats["failure/too_many_redirects"] == 1


def test_recrawl_asks_conditionally_with_the_stored_validators(crawl: Any) -> None:
    run = crawl([A + "/"])
    run.robots_ready(A)
    request = run.next()
    assert request is not None
    validators = [("ETag", '"v1"'), ("Last-Modified", "Tue, 14 Nov 2023 22:13:20 GMT")]
    run.respond(request, headers=[*HTML, *validators])
    uid = request.meta.page_id
    run.session.close("done")
    config = CrawlConfig(
        kind="recrawl", recrawl=[(uid, 1.0)], delay=DELAY, scope=ScopeConfig(allow_private=True)
    )
    session = CrawlSession(run.data, config, clock=run.clock)
    factory = FakeFactory(run.clock)
    session.factory = factory
    try:
        session.schedule_recrawl()
        run.clock.advance(DELAY)
        again = session.next_request(run.clock())  # robots.txt is fresh: straight to the page
        assert isinstance(again, Sent) and again.url == A + "/"
        assert again.headers == {
            "If-None-Match": '"v1"', "If-Modified-Since": "Tue, 14 Nov 2023 22:13:20 GMT"
        }
    finally:
        session.close("done")
