"""The web's own signals (crawler/signals.py): sitemaps, lastmod trust, feeds.

Parsing is tested on bytes; the crawl's behaviour on a real loopback test web, with the session
driven request by request on a fake clock (each request the session makes is sent over HTTP to
the test web and its answer handed back), so time-driven behaviour (re-reading a sitemap, a
feed's interval, refetch waits) needs no waiting.
"""

from __future__ import annotations

import functools
import gzip
import io
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testkit.testweb import Answer, Site, TestWeb, html, words
from websift.api.page_info import index_status
from websift.core.datadir import DataDir
from websift.crawler import settings as S
from websift.crawler.extract import extract
from websift.crawler.feeds import FeedError, parse_feed
from websift.crawler.frontier import Frontier
from websift.crawler.meta import FetchKind, FetchMeta
from websift.crawler.pipeline import Fetched
from websift.crawler.progress import print_summary
from websift.crawler.scope import ScopeConfig
from websift.crawler.session import CrawlConfig, CrawlSession
from websift.crawler.signals import FEED
from websift.crawler.sitemaps import INDEX, TEXT, URLSET, SitemapError, in_scope, parse
from websift.indexer.anchors import in_anchors_many, redirect_aliases
from websift.indexer.build import build_index
from websift.indexer.searcher import Searcher
from websift.ranking.opic import LazyOpicState
from websift.store.schema import Page
from websift.store.views import StoreReader

T0 = 1_700_000_000.0
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(entries: list[tuple[str, str | None]]) -> bytes:
    rows = "".join(
        f"<url><loc>{loc}</loc>{f'<lastmod>{mod}</lastmod>' if mod else ''}</url>"
        for loc, mod in entries
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS}>{rows}</urlset>'.encode()


def index(children: list[str]) -> bytes:
    rows = "".join(f"<sitemap><loc>{c}</loc></sitemap>" for c in children)
    return f'<?xml version="1.0"?><sitemapindex {NS}>{rows}</sitemapindex>'.encode()


def rss(items: list[str]) -> bytes:
    rows = "".join(f"<item><title>t</title><link>{i}</link></item>" for i in items)
    return (f'<?xml version="1.0"?><rss version="2.0"><channel><title>news</title>'
            f"<link>http://x/</link>{rows}</channel></rss>").encode()


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat()


# ============================================================================ parsing
def test_a_urlset_with_lastmod_an_index_gzip_and_text() -> None:
    sm = parse(urlset([("http://h/a", "2024-05-01"), ("http://h/b", "2024-05-01T10:00:00Z"),
                       ("http://h/c", "yesterday")]))
    assert sm.kind == URLSET and [e.loc for e in sm.entries] == ["http://h/a", "http://h/b",
                                                                  "http://h/c"]
    assert sm.entries[0].lastmod == datetime(2024, 5, 1, tzinfo=UTC).timestamp()
    assert sm.entries[1].lastmod == datetime(2024, 5, 1, 10, tzinfo=UTC).timestamp()
    assert sm.entries[2].lastmod is None and sm.bad_lastmod == 1
    idx = parse(gzip.compress(index(["http://h/s1.xml.gz", "http://h/s2.txt"])))
    assert idx.kind == INDEX and [e.loc for e in idx.entries] == ["http://h/s1.xml.gz",
                                                                   "http://h/s2.txt"]
    text = parse(b"http://h/x\n\nhttp://h/y\n")
    assert text.kind == TEXT and [e.loc for e in text.entries] == ["http://h/x", "http://h/y"]


@pytest.mark.parametrize(("body", "reason", "limits"), [
    (urlset([(f"http://h/{i}", None) for i in range(11)]), "too_many_urls", {"max_urls": 10}),
    (urlset([("http://h/a", None)]) + b" " * 100, "too_large", {"max_bytes": 100}),
    (gzip.compress(urlset([("http://h/a", None)]) + b" " * 200), "too_large", {"max_bytes": 150}),
    (b"\x1f\x8bnot gzip at all", "bad_gzip", {}),
    (b"<html><body>hi</body></html>", "not_a_sitemap", {}),
    (b"<urlset><url><loc>http://h/a</loc></url>", "bad_xml", {}),
    (b"not a url\n", "not_a_sitemap", {}),
    (b"   ", "empty", {}),
])
def test_bad_sitemaps_are_refused_with_a_reason(body: bytes, reason: str,
                                                 limits: dict[str, int]) -> None:
    with pytest.raises(SitemapError) as err:
        parse(body, **limits)
    assert err.value.reason == reason


def test_entities_are_not_expanded_and_no_dtd_is_fetched() -> None:
    body = (b'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "http://h/expanded">'
            b'<!ENTITY ext SYSTEM "http://127.0.0.1:9/evil.dtd">]>'
            b"<urlset><url><loc>&a;</loc></url><url><loc>http://h/plain</loc></url></urlset>")
    sm = parse(body)
    assert [e.loc for e in sm.entries] == ["http://h/plain"]  # the entity stays unexpanded


def test_scope_same_host_and_under_the_sitemaps_directory_unless_robots_named_it() -> None:
    s = "http://h:80/blog/sitemap.xml"
    assert in_scope(s, "http://h:80/blog/post", from_robots=False)
    assert not in_scope(s, "http://h:80/shop/item", from_robots=False)
    assert in_scope(s, "http://h:80/shop/item", from_robots=True)
    assert not in_scope(s, "http://other:80/blog/post", from_robots=True)
    assert not in_scope(s, "https://h:80/blog/post", from_robots=True)


def test_rss_and_atom_items() -> None:
    assert parse_feed(rss(["http://h/1", "http://h/2"])) == ["http://h/1", "http://h/2"]
    atom = (b'<feed xmlns="http://www.w3.org/2005/Atom"><link href="http://h/"/>'
            b'<entry><link rel="edit" href="http://h/e"/><link href="http://h/a1"/></entry>'
            b'<entry><link rel="alternate" href="/a2"/></entry></feed>')
    assert parse_feed(atom) == ["http://h/a1", "/a2"]
    guid = (b'<rss><channel><item><guid>http://h/g</guid></item>'
            b'<item><guid isPermaLink="false">tag:x</guid></item></channel></rss>')
    assert parse_feed(guid) == ["http://h/g"]
    with pytest.raises(FeedError) as err:
        parse_feed(b"<html/>")
    assert err.value.reason == "not_a_feed"


def test_feed_links_of_a_page() -> None:
    body = html("t", "x", head='<link rel="alternate" type="application/rss+xml" href="/f.rss">'
                '<link rel="alternate" type="application/atom+xml" href="/f.atom">'
                '<link rel="alternate" hreflang="de" href="/de/">'
                '<link rel="stylesheet" type="text/css" href="/s.css">')
    assert extract(body, "http://h/", None, []).feeds == ["/f.rss", "/f.atom"]


def test_a_grant_comes_from_the_virtual_page_and_keeps_the_total() -> None:
    opic = LazyOpicState()
    opic.add_pages([1, 2, 3])
    opic.pay_virtual()
    opic.read(1, [2, 3])
    before = opic.virtual_cash
    assert opic.grant(2, 0.01) == pytest.approx(0.01)
    assert opic.virtual_cash == pytest.approx(before - 0.01)
    # an advance: the virtual page goes below 0 by at most the limit
    moved = opic.grant(3, 10.0, advance_limit=0.05)
    assert moved == pytest.approx(before - 0.01 + 0.05) and opic.virtual_cash == pytest.approx(-0.05)
    assert opic.grant(3, 1.0, advance_limit=0.05) == 0.0
    assert opic.total_cash() == pytest.approx(1.0, abs=1e-12)
    opic.kill(2)
    assert opic.grant(2, 0.01, advance_limit=1.0) == 0.0  # dead pages take nothing


def _read_once(now: list[float]) -> Frontier:
    """A frontier on the clock ``now[0]`` (refetch interval 100 s) whose one page was read."""
    f = Frontier(clock=lambda: now[0], min_refetch_interval=100.0)
    f.add(1, "http://h/1", 1, 0)
    f.distribute_virtual()
    f.take(1)
    f.read(1, [])
    return f


def test_hasten_shortens_a_waiting_pages_wait_by_the_share() -> None:
    now = [T0]
    f = _read_once(now)
    assert f.due[1] == T0 + 100.0
    now[0] = T0 + 20.0
    assert f.hasten(1, 0.5) and f.due[1] == pytest.approx(T0 + 60.0)
    assert f.pending_ids() == []
    assert f.hasten(1, 1.0) and f.pending_ids() == [1]  # full trust: a candidate now
    assert not f.hasten(1, 1.0)  # queued already: nothing to hasten
    total = float(f.opic.cash_of(np.array([1])).sum() + f.opic.virtual_cash)
    assert total == pytest.approx(1.0, abs=1e-12)


def test_defer_lengthens_a_pages_wait_until_hasten_or_a_change() -> None:
    now = [T0]
    f = _read_once(now)
    assert f.defer(1, 2.0) and f.due[1] == pytest.approx(T0 + 300.0)
    assert f.defer(1, 2.0) and f.due[1] == pytest.approx(T0 + 300.0)  # the same word: no further
    now[0] = T0 + 300.0
    assert f.pending_ids() == [1]
    f.take(1)
    f.read(1, [], changed=False)  # unchanged: still deferred (and stretched as unchanged)
    assert f.due[1] == pytest.approx(now[0] + 100.0 * (1 + S.REFETCH_UNCHANGED_STRETCH) * 3.0)
    assert f.hasten(1, 1.0) and 1 not in f.deferred and f.pending_ids() == [1]
    f.defer(1, 2.0)
    f.take(1)
    f.read(1, [], changed=True)  # the site's word was wrong: the plain interval again
    assert 1 not in f.deferred


# ============================================================================ a crawl, driven
@dataclass
class Req:
    url: str
    meta: FetchMeta
    headers: dict[str, str] = field(default_factory=dict)


class Factory:
    def page_request(self, url: str, meta: FetchMeta, headers: dict[str, str], slot: str) -> Req:
        return Req(url, meta, dict(headers))

    def robots_request(self, url: str, meta: FetchMeta) -> Req:
        return Req(url, meta)

    def signal_request(self, url: str, meta: FetchMeta, headers: dict[str, str], slot: str,
                       maxsize: int) -> Req:
        return Req(url, meta, dict(headers))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def http_get(url: str, headers: dict[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers), timeout=10) as resp:
            return resp.status, list(resp.getheaders()), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, list(exc.headers.items()), exc.read()


class Driver:
    """Sends the session's requests to the test web over HTTP, one at a time, at clock time."""

    def __init__(self, session: CrawlSession, clock: list[float]) -> None:
        self.s = session
        self.clock = clock
        self.done: list[Req] = []

    def step(self) -> Req | None:
        s = self.s
        req = s.next_request(self.clock[0])
        if req is None:
            return None
        assert isinstance(req, Req)
        s.release(req.meta, 0.001)
        status, headers, body = http_get(req.url, req.headers)
        ctype = dict((k.lower(), v) for k, v in headers).get("content-type", "")
        meta = req.meta
        if meta.kind is FetchKind.ROBOTS:
            s.on_robots(meta, status, body)
        else:
            f = Fetched(uid=meta.url_id or 0, url=req.url, status=status, headers=headers,
                        body=body, looks_html="html" in ctype, depth=meta.depth,
                        fetched_at=self.clock[0])
            (s.on_signal if meta.kind is FetchKind.SIGNAL else s.on_response)(meta, f)
        self.done.append(req)
        return req

    def run(self, limit: int = 500) -> list[Req]:
        """Every request due by now, the clock moved on to politeness's next start while
        less than a second away (the adaptive delay follows the response times)."""
        start = len(self.done)
        for _ in range(limit):
            if self.step() is None:
                at = self.s.wake_at
                if at is None or not self.clock[0] < at < self.clock[0] + 1.0:
                    break
                self.clock[0] = at
        return self.done[start:]

    def advance(self, seconds: float) -> list[Req]:
        self.clock[0] += seconds
        return self.run()


@dataclass
class World:
    web: TestWeb
    news: list[str]  # paths of the feed's items (the test appends)
    version: dict[str, int]  # path -> content version (the test bumps)
    changed_at: dict[str, float]  # path -> fake time of its last change (truthful lastmod)


@functools.cache
def huge() -> bytes:
    """A gzip sitemap of 50 MiB + 1 byte uncompressed (about 50 kB on the wire)."""
    return gzip.compress(b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                         + b" " * (50 * 1024 * 1024 + 1) + b"</urlset>", compresslevel=1)


def build_web() -> World:
    web = TestWeb()
    world = World(web, ["/news/1", "/news/2"], {}, {})
    a = web.add_site("a", "127.0.0.2", None)
    b = web.add_site("b", "127.0.0.3", None)
    c = web.add_site("c", "127.0.0.4", "User-agent: *\nDisallow:\n")
    web.start()
    a.robots = f"User-agent: *\nDisallow:\nSitemap: {a.origin}/maps/index.xml\n"
    b.robots = "User-agent: *\nDisallow:\n"

    def page(path: str, h: dict[str, str], n: int) -> Answer:
        v = world.version.get(path.split("?", maxsplit=1)[0], 0)
        return Answer(body=html(path, f"<p>{words(zlib.crc32(path.encode()) + 97 * v)}</p>"))

    feed = '<link rel="alternate" type="application/rss+xml" href="/feed.xml">'
    a.page("/", html("home", "<p>home</p>", head=feed))
    index_body = index([a.url("/maps/a.xml.gz"), a.url("/maps/b.txt"),
                        a.url("/maps/huge.xml.gz"), a.url("/maps/other.xml")])

    def index_xml(path: str, h: dict[str, str], n: int) -> Answer:  # answers "changed since?"
        if h.get("if-none-match") == '"i1"':
            return Answer(304, b"", headers={"ETag": '"i1"'}, content_type="")
        return Answer(body=index_body, headers={"ETag": '"i1"'}, content_type="application/xml")

    a.page("/maps/index.xml", index_xml)
    a.page("/maps/a.xml.gz", lambda p, h, n: Answer(body=gzip.compress(urlset(
        [(a.url(f"/p/{i}"), iso(world.changed_at.get(f"/p/{i}", T0 - 86400.0)))
         for i in (1, 2, 3)])), content_type="application/gzip"))
    a.page("/maps/b.txt", Answer(body=f"{a.url('/p/4')}\n{a.url('/p/5')}\n".encode(),
                                 content_type="text/plain"))
    a.page("/maps/huge.xml.gz", lambda p, h, n: Answer(body=huge(),
                                                       content_type="application/gzip"))
    a.page("/maps/other.xml", Answer(body=urlset([(b.url("/q/9"), None)]),
                                     content_type="application/xml"))
    a.page("/feed.xml", lambda p, h, n: Answer(
        body=rss([a.url(i) for i in reversed(world.news)]), content_type="application/rss+xml"))
    a.prefix("/p/", page)
    a.prefix("/news/", page)
    a.prefix("/more/", page)
    # b's sitemap lies: every page "changed" now (wall-clock time), none ever does
    b.page("/", html("b home", "<p>b</p>"))
    b.page("/sitemap.xml", lambda p, h, n: Answer(body=urlset(
        [(b.url(f"/q/{i}"), datetime.now(UTC).isoformat()) for i in (1, 2, 3)]),
        content_type="application/xml"))
    b.prefix("/q/", page)
    # c: one article under four URLs, each naming /article/ canonical (their sidebars differ,
    # so neither the content hash nor SimHash calls them duplicates); a page whose canonical is
    # on another site; a PDF-like file naming its canonical in a Link header
    canon = '<link rel="canonical" href="/article/">'
    c.page("/", html("c home", "".join(f"<a href='{p}'>the article</a> " for p in (
        "/article", "/article/index.html", "/article?utm_source=feed", "/elsewhere", "/doc.txt",
        "/doc.html")), head='<link rel="alternate" hreflang="de" href="/de/">'
                          '<link rel="alternate" hreflang="x-default" href="/">'))
    def article(path: str, h: dict[str, str], n: int) -> Answer:  # the aside differs by URL
        aside = words(zlib.crc32(path.encode()) % 10_000 + 600, 150)
        return Answer(body=html("article", f"<p>{words(500)}</p><aside>{aside}</aside>",
                                head=canon))

    for p in ("/article/", "/article", "/article/index.html"):
        c.page(p, article)
    c.page("/elsewhere", html("e", f"<p>{words(800)}</p>",
                              head=f'<link rel="canonical" href="{a.url("/p/1")}">'))
    c.page("/doc.txt", Answer(body=b"plain text", content_type="text/plain",
                              headers={"Link": '</doc.html>; rel="canonical"'}))
    c.page("/doc.html", html("doc", f"<p>{words(900)}</p>"))
    return world


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    w = build_web()
    yield w
    w.web.stop()


def start(tmp_path: Path, world: World, signals: bool = True, sites: tuple[str, ...] = ("a", "b")
          ) -> tuple[CrawlSession, Driver, DataDir]:
    clock = [T0]
    data = DataDir.create(tmp_path / f"data-{signals}")
    cfg = CrawlConfig(seeds=[world.web.sites[n].url("/") for n in sites], scope=ScopeConfig(allow_private=True),
                      delay=0.0, max_pages=None, continuous=True, signals=signals,
                      sitemap_interval=600.0, feed_min_interval=60.0, feed_max_interval=3600.0)
    s = CrawlSession(data, cfg, clock=lambda: clock[0])
    s.factory = Factory()
    s.add_seeds()
    return s, Driver(s, clock), data


def page_of(s: CrawlSession, url: str) -> Page:
    page = s.store.page_by_url(url)
    assert page is not None, url
    return page


def paths(reqs: list[Req], site: Site) -> list[str]:
    return [r.url.removeprefix(site.origin) for r in reqs if r.url.startswith(site.origin)]


def test_sitemaps_index_gzip_text_limits_and_scope(tmp_path: Path, world: World) -> None:
    s, d, data = start(tmp_path, world)
    try:
        a, b = world.web.sites["a"], world.web.sites["b"]
        got = paths(d.run(), a)
        # the index robots.txt names, its gzip and text children; every listed page fetched
        for p in ("/maps/index.xml", "/maps/a.xml.gz", "/maps/b.txt", "/p/1", "/p/5"):
            assert p in got, p
        assert "/sitemap.xml" in got  # tried unnamed: absent here (404, not an error)
        c = s.stats
        # a: the index, the gzip, text and other-host children; b: its /sitemap.xml
        assert c["sitemaps/read"] == 5 and c["sitemaps/absent"] == 1
        assert c["sitemaps/bad/too_large"] == 1  # 50 MB + 1 uncompressed: refused, not fatal
        assert c["sitemaps/refused_url/other_host"] == 1  # /maps/other.xml names b's page
        assert "/q/9" not in paths(d.done, b)
        with StoreReader.open(data.store_path) as r:
            assert r.page_by_url(b.url("/q/9")) is None
        assert c["sitemaps/urls"] == 5 + 3 and c["sitemaps/urls_new"] == 5 + 3
        live = s.live()["signals"]
        assert live["on"] and live["counts"]["sitemaps/bad/too_large"] == 1
        # conditional GET when a sitemap is read again
        again = d.advance(601.0)
        index_again = [r for r in again if r.url.endswith("/maps/index.xml")]
        assert index_again and index_again[0].meta.kind is FetchKind.SIGNAL
        assert index_again[0].headers.get("If-None-Match") == '"i1"'
        assert s.stats["sitemaps/not_modified"] == 1  # the 304: nothing parsed again
        assert s.stats["sitemaps/read"] == 5 + 4  # the other files had no validator
    finally:
        s.close("test_end")
    with StoreReader.open(data.store_path) as r:
        assert r.opic_cash_total() == pytest.approx(1.0, abs=1e-9)


def test_lastmod_trust_rises_where_it_is_true_and_drops_where_it_lies(
    tmp_path: Path, world: World
) -> None:
    s, d, data = start(tmp_path, world)
    try:
        a, b = world.web.sites["a"], world.web.sites["b"]
        d.run()
        assert s.signals is not None
        host_a, host_b = page_of(s, a.url("/p/1")).host_id, page_of(s, b.url("/q/1")).host_id
        for _ in range(3):
            d.clock[0] += 601.0
            for p in ("/p/1", "/p/2"):  # a's pages change, and its sitemap says when
                world.version[p] = world.version.get(p, 0) + 1
                world.changed_at[p] = d.clock[0] - 1.0
            d.run()  # the sitemaps are read again: lastmod hints
            d.advance(3 * 86400.0)  # every hinted page is refetched by now
        trust = s.signals.trust
        assert trust[host_a].refetches >= 4 and trust[host_a].changed == trust[host_a].refetches
        assert trust[host_b].refetches >= 4 and trust[host_b].changed == 0
        assert trust[host_a].value > 0.8 and trust[host_b].value < 0.2
        checks = s.stats["lastmod/refetches"] + s.stats["lastmod/vouched_refetches"]
        assert checks == trust[host_a].refetches + trust[host_b].refetches
        hosts = s.live()["signals"]["lastmod_hosts"]
        assert hosts[b.origin]["changed"] == 0
        # the lying host's lastmod now moves its pages less than the truthful one's
        assert hosts[b.origin]["trust"] < hosts[a.origin]["trust"]
        # a's /p/3 never changed and its lastmod says so: it waits longer than the interval
        p3 = page_of(s, a.url("/p/3"))
        assert p3.fetched_at is not None and s.frontier.deferred[p3.id] > 0
        assert s.frontier.due[p3.id] >= p3.fetched_at + 3600.0 * (
            1 + S.LASTMOD_UNCHANGED_STRETCH * 0.5)
        # b lies again: proved wrong, it gets one lastmod-driven refetch at a time
        d.clock[0] += 601.0
        d.run()
        assert sum(1 for h in s.signals.hinted.values() if h == host_b) == 1
        assert s.stats["lastmod/hints_held"] >= 1
        table = io.StringIO()
        print_summary(s.summary("test"), table)  # the run's summary table shows the trust
        assert f"lastmod {b.origin}" in table.getvalue()
        kept = {h: (t.refetches, t.changed) for h, t in trust.items()}
    finally:
        s.close("test_end")
    with StoreReader.open(data.store_path) as r:
        assert r.opic_cash_total() == pytest.approx(1.0, abs=1e-9)
        assert r.lastmod_trust() == kept  # the next run starts from this evidence


def test_a_feeds_new_item_gets_cash_at_once_and_is_fetched_next(
    tmp_path: Path, world: World
) -> None:
    s, d, data = start(tmp_path, world)
    try:
        a = world.web.sites["a"]
        first = paths(d.run(), a)
        assert "/feed.xml" in first and "/news/1" in first and "/news/2" in first
        assert s.signals is not None
        feed = s.signals.sources[a.url("/feed.xml")]
        assert feed.kind == FEED and feed.interval == 60.0
        d.advance(61.0)  # no new item: the interval doubles
        assert feed.interval == 120.0 and s.stats["feeds/read"] == 2
        world.news.append("/news/3")
        d.clock[0] = feed.due
        req = d.step()
        assert req is not None and req.url == a.url("/feed.xml")
        uid = page_of(s, a.url("/news/3")).id
        assert isinstance(s.frontier, Frontier)
        live = s.frontier.opic.members[0]
        assert s.frontier.cash(uid) >= 1.0 / live  # the grant: more than a mean page's cash
        pages = [r.url for r in d.run() if r.meta.kind is FetchKind.PAGE]
        assert pages[:1] == [a.url("/news/3")]  # the next page fetched
        assert feed.interval == 60.0 and s.stats["feeds/new_items"] == 3
    finally:
        s.close("test_end")
    with StoreReader.open(data.store_path) as r:
        assert r.opic_cash_total() == pytest.approx(1.0, abs=1e-9)


def test_without_signals_no_sitemap_or_feed_is_read(tmp_path: Path, world: World) -> None:
    s, d, _ = start(tmp_path, world, signals=False)
    try:
        got = [r.url for r in d.run()]
        assert not any("/maps/" in u or u.endswith(("/feed.xml", "/sitemap.xml")) for u in got)
        assert s.live()["signals"]["on"] is False
    finally:
        s.close("test_end")


def test_canonical_variants_are_indexed_once_under_the_canonical_url(
    tmp_path: Path, world: World
) -> None:
    c = world.web.sites["c"]
    s, d, data = start(tmp_path, world, sites=("c",))
    try:
        d.run()
        got = paths(d.done, c)
        canonical = page_of(s, c.url("/article/"))
        variants = [page_of(s, c.url(p)) for p in
                    ("/article", "/article/index.html", "/article?utm_source=feed")]
        assert got.count("/article/") == 1  # fetched once, named by the variants
        for v in variants:
            assert s.store.canonical_of(v.id) == (canonical.id, True)
            assert v.duplicate_of == canonical.id  # indexed under the canonical URL
        assert sorted(s.store.variants_of(canonical.id)) == sorted(v.id for v in variants)
        # a Link header names the canonical of a non-HTML answer
        assert s.store.canonical_of(page_of(s, c.url("/doc.txt")).id) == (
            page_of(s, c.url("/doc.html")).id, True)
        # another site's canonical is recorded, not followed, and the page stays itself
        elsewhere = page_of(s, c.url("/elsewhere"))
        foreign = s.store.page_by_url(world.web.sites["a"].url("/p/1"))
        assert foreign is not None and foreign.status == "discovered"
        assert s.store.canonical_of(elsewhere.id) == (foreign.id, False)
        assert elsewhere.duplicate_of is None
        assert s.stats["canonical/variants"] == 4 and s.stats["canonical/other_site"] == 1
        # hreflang alternates are recorded as the page's group (not fetched for that)
        home = page_of(s, c.url("/"))
        assert s.store.hreflang_of(home.id) == {"de": page_of(s, c.url("/de/")).id,
                                                "x-default": home.id}
        assert page_of(s, c.url("/de/")).status == "discovered"
        # the variants are not fetched again; the canonical page is
        later = paths(d.advance(30 * 86400.0), c)
        assert "/article/" in later
        assert not {"/article", "/article/index.html", "/article?utm_source=feed"} & set(later)
        indexable = {p.url for p in s.store.pages("fetched") if p.duplicate_of is None}
        assert c.url("/article/") in indexable
        assert not indexable & {c.url(p) for p in ("/article", "/article/index.html",
                                                    "/article?utm_source=feed")}
    finally:
        s.close("test_end")
    with StoreReader.open(data.store_path) as r:
        assert r.opic_cash_total() == pytest.approx(1.0, abs=1e-9)
        assert len(list(r.canonical_variants())) == 4
        # the indexer counts links to the variants for the canonical page: the home page
        # links only to variants, and its anchor text reaches /article/
        aliases = redirect_aliases(r)
        assert sorted(aliases[canonical.id]) == sorted(v.id for v in variants)
        anchors = in_anchors_many(r, [canonical.id], aliases)[canonical.id]
        assert "the article" in anchors.texts
        # /pages says why a variant is not indexed, and lists a canonical page's variants
        variant = r.page(variants[0].id)
        assert variant is not None
        url_of = r.urls_of([canonical.id])
        _, why = index_status(variant, False, url_of, r.canonical_of(variant.id))
        assert why == f"a variant of {c.url('/article/')} (rel=canonical): indexed under that URL"
    # the real indexer: the article is one document, under its canonical URL
    build_index(data, procs=1)
    searcher = Searcher.open(data)
    live = {int(doc) for seg, mask in zip(searcher.segments, searcher.live, strict=True)
            for doc in seg.doc_ids[mask]}
    assert canonical.id in live and not live & {v.id for v in variants}


def test_without_canonical_handling_the_variants_are_separate_pages(
    tmp_path: Path, world: World
) -> None:
    c = world.web.sites["c"]
    s, d, data = start(tmp_path, world, signals=False, sites=("c",))
    try:
        d.run()
        urls = {c.url(p) for p in ("/article", "/article/index.html",
                                   "/article?utm_source=feed")}
        ids = {page_of(s, u).id for u in urls}
        indexable = {p.url for p in s.store.pages("fetched") if p.duplicate_of is None}
        assert urls <= indexable
    finally:
        s.close("test_end")
    build_index(data, procs=1)
    searcher = Searcher.open(data)
    live = {int(doc) for seg, mask in zip(searcher.segments, searcher.live, strict=True)
            for doc in seg.doc_ids[mask]}
    assert ids <= live  # the one article, three times


SIGNAL_OPS = st.lists(
    st.tuples(st.sampled_from(["add", "read", "read", "grant", "grant", "hasten", "retire",
                               "pay", "wait"]),
              st.integers(0, 10**6), st.lists(st.integers(0, 10**6), max_size=5),
              st.floats(0.0, 50.0)),
    min_size=1, max_size=80,
)


@settings(max_examples=50, deadline=None)
@given(SIGNAL_OPS)
def test_grants_hastes_and_retirements_keep_the_cash_and_the_greedy_order(
    ops: list[tuple[str, int, list[int], float]]
) -> None:
    """Lemma 2.2 with the signals' moves interleaved (grant, hasten, retire): stored plus
    virtual cash stays 1, the virtual page never goes below the advance limit, and Greedy still
    picks the richest pending page."""
    now = [T0]
    f = Frontier(clock=lambda: now[0], min_refetch_interval=30.0)
    count = 1
    for _ in range(3):
        f.add(count, f"http://h{count % 3}/{count}", count % 3, 0)
        count += 1
    f.distribute_virtual()
    for op, pick, kids, amount in ops:
        known = [int(u) for u in f.known_ids() if not f.opic.dead[u]]
        if not known:
            break
        uid = known[pick % len(known)]
        if op == "add":
            f.add(count, f"http://h{count % 3}/{count}", count % 3, 0)
            count += 1
        elif op == "read" and f.where[uid] == 1:  # a queued page: taken and read
            f.take(uid)
            f.read(uid, [known[k % len(known)] for k in kids], changed=bool(pick % 2))
        elif op == "grant":
            f.grant(uid, amount)
        elif op == "hasten":
            f.hasten(uid, amount / 50.0)
        elif op == "retire":
            f.retire(uid)
        elif op == "pay":
            f.distribute_virtual()
        elif op == "wait":
            now[0] += amount
        ids = f.known_ids()
        total = float(f.opic.cash_of(ids).sum() + f.opic.virtual_cash)
        assert total == pytest.approx(1.0, abs=1e-9)
        assert f.opic.virtual_cash >= -S.SIGNAL_ADVANCE_LIMIT - 1e-12
        pending = f.pending_ids()
        if pending:
            best = float(f.opic.cash_of(np.asarray(pending)).max())
            pickd = f.select(list(f.host_pending))
            assert pickd is not None and f.cash(pickd) == pytest.approx(best, abs=1e-15)
