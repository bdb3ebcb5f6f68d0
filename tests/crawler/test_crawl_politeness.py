"""Politeness rules, Retry-After, robots.txt freshness and robots directives, without a network."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from websift.crawler.extract import extract, robots_directives
from websift.crawler.politeness import Politeness, parse_retry_after
from websift.crawler.robots_cache import RobotsCache, RobotsState
from websift.store.crawl_store import HostState


def test_delay_in_force_takes_the_largest_rule() -> None:
    pol = Politeness(delay=0.2, concurrency=2, max_crawl_delay=5.0, max_delay=10.0)
    slot = pol.load(HostState(id=1, origin="http://a.test"))
    assert pol.delay_in_force(slot) == 0.2
    pol.set_crawl_delay(slot, 1.5)
    assert pol.delay_in_force(slot) == 1.5
    pol.set_crawl_delay(slot, 600.0)
    assert pol.delay_in_force(slot) == 5.0  # Crawl-delay is capped
    pol.set_crawl_delay(slot, None)
    pol.finished(slot, 3.0, now=100.0)  # a slow answer: 3 s / K=2 in flight
    assert pol.delay_in_force(slot) == pytest.approx(1.5)


def test_may_start_respects_in_flight_delay_and_backoff() -> None:
    pol = Politeness(delay=1.0, concurrency=1)
    slot = pol.load(HostState(id=1, origin="http://a.test"))
    assert pol.may_start(slot, 0.0)
    pol.started(slot, 10.0)
    assert not pol.may_start(slot, 50.0) and pol.ready_at(slot) is None  # full
    pol.finished(slot, None, now=10.5)  # the delay runs from the answer's arrival too
    assert not pol.may_start(slot, 11.4) and pol.may_start(slot, 11.5)
    pause = pol.back_off(slot, 11.0, retry_after=30.0)
    assert pause == 30.0 and not pol.may_start(slot, 40.0) and pol.may_start(slot, 41.0)
    # no Retry-After: exponential from the base, capped
    assert pol.back_off(slot, 50.0, None) == pol.backoff_base * 2
    pol.succeeded(slot)
    assert pol.back_off(slot, 60.0, None) == pol.backoff_base
    assert pol.back_off(slot, 60.0, 10**9) == pol.max_backoff


def test_a_late_answer_spaces_the_next_start_from_its_arrival() -> None:
    # handed to Scrapy at 10.0, but a slow connect: the server may have seen it only at 10.6
    pol = Politeness(delay=1.0, concurrency=2)
    slot = pol.load(HostState(id=1, origin="http://a.test"))
    pol.started(slot, 10.0)
    assert pol.ready_at(slot) == pytest.approx(11.0)
    pol.finished(slot, 0.1, now=10.6)
    assert pol.ready_at(slot) == pytest.approx(11.6)


def test_learned_state_comes_from_and_goes_to_the_store() -> None:
    pol = Politeness(delay=0.5)
    state = HostState(id=3, origin="http://b.test", crawl_delay=2.0, avg_response=0.3,
                      backoff_until=1e12)
    slot = pol.load(state)
    assert pol.delay_in_force(slot) == 2.0 and not pol.may_start(slot, 1e11)
    pol.finished(slot, 0.5, now=1.0)
    out = HostState(id=3, origin="http://b.test")
    pol.save_into(slot, out)
    assert out.avg_response == pytest.approx(0.7 * 0.3 + 0.3 * 0.5)
    assert out.backoff_until == 1e12 and out.delay == 2.0 and out.crawl_delay == 2.0


def test_retry_after_forms() -> None:
    assert parse_retry_after("120", 0.0) == 120.0
    assert parse_retry_after(formatdate(1000.0, usegmt=True), 990.0) == pytest.approx(10.0)
    assert parse_retry_after(formatdate(1000.0, usegmt=True), 2000.0) == 0.0
    assert parse_retry_after("soon", 0.0) is None
    assert parse_retry_after(None, 0.0) is None


def test_robots_are_reused_while_fresh_and_refetched_when_old_or_failed() -> None:
    cache = RobotsCache(ttl=100.0)
    fresh = HostState(id=1, origin="http://a.test", robots_status=200,
                      robots_body=b"User-agent: *\nDisallow: /x\n", robots_fetched=950.0)
    assert cache.load(fresh, now=1000.0).state is RobotsState.READY
    assert not cache.decide(1, "http://a.test/x/1").allowed
    old = HostState(id=2, origin="http://b.test", robots_status=200, robots_body=b"",
                    robots_fetched=800.0)
    assert cache.load(old, now=1000.0).state is RobotsState.NEEDED
    failed = HostState(id=3, origin="http://c.test", robots_status=503, robots_body=b"",
                       robots_fetched=990.0)
    assert cache.load(failed, now=1000.0).state is RobotsState.NEEDED
    entry = cache.answered(failed, 0, b"", now=1000.0)  # unreachable
    assert entry.state is RobotsState.UNAVAILABLE and failed.robots_status == 0
    entry = cache.answered(old, 404, b"", now=1000.0)
    assert entry.state is RobotsState.READY and cache.decide(2, "http://b.test/any").allowed
    assert old.robots_fetched == 1000.0


def test_robots_directives_per_agent() -> None:
    assert robots_directives(["noindex, nofollow"], "websift") == {"noindex", "nofollow"}
    assert robots_directives(["none"], "websift") == {"noindex", "nofollow"}
    assert robots_directives(["otherbot: noindex"], "websift") == set()
    assert robots_directives(["otherbot: noindex, websift: nofollow"], "websift") == {"nofollow"}
    assert robots_directives(["unavailable_after: 25 Jun 2010 15:00:00 PST"], "websift") == set()


def test_extract_links_anchors_and_meta() -> None:
    body = (b"<html><head><base href='http://x.test/dir/'><meta name='robots' "
            b"content='NOINDEX'></head><body><script>var a='<a href=/no>';</script>"
            b"<a href='a.html'>  A \n  link </a><a rel='ugc' href='/u'>u</a>"
            b"<a href='/img'><img alt='picture'></a><area href='/m' alt='map'>"
            b"<a name='anchor-only'>x</a></body></html>")
    ex = extract(body, "http://x.test/page", "utf-8", [])
    assert ex.base == "http://x.test/dir/"
    assert ex.noindex and not ex.nofollow
    assert [(ln.href, ln.anchor, ln.nofollow) for ln in ex.links] == [
        ("a.html", "A link", False), ("/u", "u", True), ("/img", "picture", False),
        ("/m", "map", False),
    ]
    assert "var a" not in ex.text and "A link" in ex.text
    assert extract(b"   ", "http://x.test/", None, []).parse_error == "empty_document"
    assert extract(b"\x00\xff\xfe<a href=x>y", "http://x.test/", "no-such-codec", []).links
