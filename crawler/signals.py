"""The web's own signals as evidence in OPIC's one cash flow: sitemaps, lastmod, feeds.

Question: a site says which URLs it has (sitemaps), when each changed (``lastmod``) and what is
new (feeds); how does that move the crawl's schedule without a second scheduler?

Everything is said in the OPIC paper's terms (seed: opic-adaptive-online-page-importance.txt):
the frontier fetches the richest page whose refetch interval has passed, and cash comes from
links and from the virtual page's payouts (section 3.3).  A signal is evidence that moves cash
and due times, never a queue of its own:

- **sitemap URLs** are *discovered*: they enter OPIC as a link would name them (depth 1), with
  no cash of their own, and gather the discovery dividends of unread pages like any new page;
- **lastmod after the page's last fetch** is evidence of change: the page's remaining refetch
  wait shrinks by the host's *trust* (``Frontier.hasten``), and it gets ``LASTMOD_GRANT *
  trust`` times a live page's mean cash from the virtual page (``Frontier.grant``, section 3.3:
  extra cash "taken from the virtual page").  trust is the share of the host's lastmod checks
  that found it right -- a lastmod-driven refetch that found the page changed (its content hash;
  a 304 or the same bytes is unchanged), or a refetch of a page whose lastmod had not moved that
  found it unchanged -- with a Beta(1, 1) prior: ``(right + 1) / (checks + 2)`` (stored as
  ``changed`` / ``refetches``), so a host whose lastmod lies loses its say.  While a host is on
  probation (``LASTMOD_PROBES`` checks) one read of its sitemap asks for at most that many
  refetches, and once it proved wrong for one, so a lying host wastes at most one fetch a read;
- **lastmod not after the page's last fetch** is evidence of no change: the page waits
  ``1 + LASTMOD_UNCHANGED_STRETCH * trust`` times its refetch interval (``Frontier.defer``, as
  Nutch's adaptive fetch schedule lengthens the interval of a page seen unchanged), until the
  lastmod moves or a refetch finds it changed;
- **a feed's new items** get ``FEED_ITEM_GRANT`` times a live page's mean cash at once, so the
  Greedy pick reaches them within a politeness delay or two; the feed itself is read again on
  an adaptive interval (halved after new items, doubled after none, within
  ``FEED_MIN_INTERVAL .. FEED_MAX_INTERVAL``).

The virtual page may advance grants (go below 0 by ``SIGNAL_ADVANCE_LIMIT``); its next payouts
are smaller by as much, and stored plus virtual cash stays 1 (Lemma 2.2).

Sources (sitemaps, feeds) are fetched between pages under the host's politeness and robots.txt,
with a conditional GET (ETag / Last-Modified) when read again.  Their state lives in this run
(a later run finds them again through robots.txt and the pages it fetches); the trust per host
is kept in the store (``lastmod_trust``), written with each batch.  Only the embedded
frontier takes evidence: with a shared (Redis) frontier the crawl runs without signals.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from websift.crawler import settings as S
from websift.crawler.feeds import FeedError, parse_feed
from websift.crawler.frontier import Frontier
from websift.crawler.pipeline import Fetched, PageRecorder
from websift.crawler.sitemaps import INDEX, SitemapError, in_scope, is_gzip_answer, parse
from websift.crawler.urls import UrlError, canonicalize, host_of
from websift.store.crawl_store import CrawlStore

SITEMAP, FEED = "sitemap", "feed"
SITEMAP_PATH = "/sitemap.xml"


@dataclass
class Source:
    """A sitemap or feed of one host, and when to read it next."""

    url: str
    kind: str  # SITEMAP or FEED
    host_id: int
    from_robots: bool = False  # named by robots.txt (or by an index robots.txt named)
    guessed: bool = False  # /sitemap.xml tried without being named (a 404 is not an error)
    interval: float = 0.0
    due: float = 0.0
    etag: str | None = None
    last_modified: str | None = None
    in_flight: bool = False
    seen: set[str] = field(default_factory=set)  # a feed's item URLs met so far
    reads: int = 0


@dataclass
class Trust:
    """How often a host's lastmod was right: checks (``refetches``) and right ones (``changed``,
    the column's name: a hinted refetch found change, or a vouched-for one found none)."""

    refetches: int = 0
    changed: int = 0

    @property
    def value(self) -> float:
        return (self.changed + 1) / (self.refetches + 2)  # Beta(1, 1) posterior mean


class Signals:
    """The run's sources and lastmod trust, and what their answers do to the frontier."""

    def __init__(
        self, frontier: Frontier, recorder: PageRecorder, store: CrawlStore,
        stats: Counter[str], clock: Callable[[], float], *,
        sitemap_interval: float = S.SITEMAP_INTERVAL,
        feed_min_interval: float = S.FEED_MIN_INTERVAL,
        feed_max_interval: float = S.FEED_MAX_INTERVAL,
    ) -> None:
        self.frontier = frontier
        self.recorder = recorder
        self.store = store
        self.stats = stats
        self.clock = clock
        self.sitemap_interval = sitemap_interval
        self.feed_min = feed_min_interval
        self.feed_max = max(feed_min_interval, feed_max_interval)
        self.sources: dict[str, Source] = {}
        self.per_host: Counter[tuple[int, str]] = Counter()  # (host, kind) -> sources
        self.queue: list[tuple[float, str]] = []  # (due, URL); stale entries skipped
        self.ready: dict[str, Source] = {}  # due, waiting for their host (in due order)
        # per host, kept across runs in the store (written with each batch)
        self.trust = {h: Trust(n, c) for h, (n, c) in store.lastmod_trust().items()}
        self.trust_dirty: set[int] = set()
        recorder.batch.before_commit.append(self.flush)
        self.hinted: dict[int, int] = {}  # page -> host, a lastmod-driven refetch pending
        self.read_hints: Counter[int] = Counter()  # host -> hints of the sitemap being read
        self.deferred: dict[int, int] = {}  # page -> host, its lastmod vouched for no change
        recorder.refetched = self.refetched
        recorder.found_feeds = self.found_feeds
        # rel="canonical" (crawler/canonical.py): variants are retired, links to them pay
        # their canonical page
        recorder.retire = frontier.retire
        recorder.variants = dict(store.canonical_variants())

    # ------------------------------------------------------------------ sources
    def add(self, url: str, kind: str, host_id: int, *, from_robots: bool = False,
            guessed: bool = False) -> bool:
        """Start reading a source (now); False when known already or over the host's limit."""
        if url in self.sources:
            return False
        limit = S.SITEMAP_MAX_FILES if kind == SITEMAP else S.FEEDS_PER_HOST
        if self.per_host[(host_id, kind)] >= limit:
            self.stats[f"{kind}s/over_host_limit"] += 1
            return False
        self.per_host[(host_id, kind)] += 1
        interval = self.sitemap_interval if kind == SITEMAP else self.feed_min
        src = Source(url, kind, host_id, from_robots, guessed, interval, self.clock())
        self.sources[url] = src
        heapq.heappush(self.queue, (src.due, url))
        self.stats[f"{kind}s/found"] += 1
        return True

    def robots_known(self, host_id: int, origin: str, named: list[str]) -> None:
        """A host's robots.txt is known: its named sitemaps (same host) and /sitemap.xml."""
        for raw in named:
            try:
                url = canonicalize(raw)
            except UrlError:
                self.stats["sitemaps/bad/bad_url"] += 1
                continue
            if host_of(url) != host_of(origin) or not in_scope(origin + "/", url, from_robots=True):
                self.stats["sitemaps/bad/other_host"] += 1
                continue
            self.add(url, SITEMAP, host_id, from_robots=True)
        self.add(origin + SITEMAP_PATH, SITEMAP, host_id, guessed=True)

    def found_feeds(self, uid: int, base: str, hrefs: list[str]) -> None:
        """A fetched page names feeds (``<link rel="alternate">``): those on its host."""
        host_id = int(self.frontier.host_of[uid])
        for href in hrefs:
            try:
                url = canonicalize(href, base)
            except UrlError:
                self.stats["feeds/bad/bad_url"] += 1
                continue
            if host_of(url) != host_of(base):
                self.stats["feeds/other_host"] += 1
                continue
            self.add(url, FEED, host_id)

    def due(self, now: float) -> list[Source]:
        """Sources due now, earliest first (not in flight): O(newly due x log n) per call."""
        queue = self.queue
        while queue and queue[0][0] <= now:
            at, url = heapq.heappop(queue)
            src = self.sources.get(url)
            if src is not None and src.due == at and not src.in_flight:
                self.ready[url] = src
        return list(self.ready.values())

    def next_due(self) -> float | None:
        """When the next source is due (None: none waits)."""
        queue = self.queue
        while queue:
            at, url = queue[0]
            src = self.sources.get(url)
            if src is not None and src.due == at and not src.in_flight:
                return at
            heapq.heappop(queue)
        return None

    def started(self, src: Source) -> dict[str, str]:
        """A source's request goes out: its conditional-GET headers."""
        self.ready.pop(src.url, None)
        src.in_flight = True
        headers: dict[str, str] = {}
        if src.etag:
            headers["If-None-Match"] = src.etag
        if src.last_modified:
            headers["If-Modified-Since"] = src.last_modified
        return headers

    def drop(self, src: Source, reason: str) -> None:
        """Stop reading a source for this run (robots.txt refuses it, ...)."""
        self.sources.pop(src.url, None)
        self.ready.pop(src.url, None)
        self.stats[f"{src.kind}s/dropped/{reason}"] += 1

    def _again(self, src: Source, interval: float) -> None:
        src.in_flight = False
        src.interval = interval
        src.due = self.clock() + interval
        heapq.heappush(self.queue, (src.due, src.url))

    # ------------------------------------------------------------------ answers
    def failed(self, url: str, reason: str) -> None:
        """A source's request failed (timeout, too large, ...): counted, tried again later."""
        src = self.sources.get(url)
        if src is None:
            return
        self.stats[f"{src.kind}s/bad/{reason}"] += 1
        self._again(src, src.interval if src.kind == SITEMAP else min(self.feed_max,
                                                                      2 * src.interval))

    def answered(self, url: str, f: Fetched) -> None:
        """A source's answer: parsed, its URLs discovered, its evidence applied."""
        src = self.sources.get(url)
        if src is None:
            return
        src.reads += 1
        if f.status == 304:
            self.stats[f"{src.kind}s/not_modified"] += 1
            self._again(src, src.interval if src.kind == SITEMAP else min(self.feed_max,
                                                                          2 * src.interval))
            return
        if not 200 <= f.status < 300:
            if src.guessed and f.status in (404, 410):
                self.stats["sitemaps/absent"] += 1
                self.sources.pop(url, None)  # no /sitemap.xml here: not asked again this run
                return
            self.failed(url, f"http_{f.status}")
            return
        src.etag = f.header("ETag")
        src.last_modified = f.header("Last-Modified")
        if src.kind == SITEMAP:
            self._sitemap(src, f)
        else:
            self._feed(src, f)

    def _sitemap(self, src: Source, f: Fetched) -> None:
        try:
            sitemap = parse(f.body, gzipped=is_gzip_answer(f.url, f.header("Content-Type")))
        except SitemapError as exc:
            self.failed(src.url, exc.reason)
            return
        self.stats["sitemaps/read"] += 1
        self.stats["sitemaps/bad_lastmod"] += sitemap.bad_lastmod
        if sitemap.kind == INDEX:
            for entry in sitemap.entries:
                child = self._in_scope(src, entry.loc)
                if child is not None:
                    self.add(child, SITEMAP, src.host_id, from_robots=src.from_robots)
        else:
            self.read_hints.clear()
            with self.recorder.batch.step():
                for entry in sitemap.entries:
                    url = self._in_scope(src, entry.loc)
                    if url is not None:
                        self._listed(url, entry.lastmod, src.host_id)
        self._again(src, self.sitemap_interval)

    def _in_scope(self, src: Source, loc: str) -> str | None:
        try:
            url = canonicalize(loc, src.url)
        except UrlError:
            self.stats["sitemaps/refused_url/bad_url"] += 1
            return None
        if not in_scope(src.url, url, from_robots=src.from_robots):
            same = host_of(url) == host_of(src.url)
            self.stats[f"sitemaps/refused_url/{'out_of_path' if same else 'other_host'}"] += 1
            return None
        return url

    def _listed(self, url: str, lastmod: float | None, host_id: int) -> None:
        """A sitemap lists ``url``: discovered; a lastmod after its last fetch is evidence of
        change (``_hint``), one not after it evidence of none (``Frontier.defer``)."""
        uid, entered = self.recorder.discover(url, 1, follow=True)
        self.stats["sitemaps/urls"] += 1
        if entered:
            self.stats["sitemaps/urls_new"] += 1
            return
        if lastmod is None or uid in self.hinted or not self.frontier.was_read(uid):
            return
        page = self.store.page(uid)
        if page is None or page.fetched_at is None:
            return
        trust = self.trust.setdefault(host_id, Trust())
        if lastmod <= page.fetched_at:
            if self.frontier.defer(uid, S.LASTMOD_UNCHANGED_STRETCH * trust.value):
                self.deferred[uid] = host_id  # its next refetch checks the host's word
                self.stats["lastmod/deferred"] += 1
            return
        self.deferred.pop(uid, None)
        self.frontier.defer(uid, 0.0)  # the site says it changed: no longer deferred
        if self.read_hints[host_id] >= self._hint_limit(trust):
            self.stats["lastmod/hints_held"] += 1
            return
        self.read_hints[host_id] += 1
        self.frontier.hasten(uid, trust.value)
        self.frontier.grant(uid, S.LASTMOD_GRANT * trust.value)
        self.hinted[uid] = host_id
        self.stats["lastmod/hints"] += 1

    @staticmethod
    def _hint_limit(trust: Trust) -> float:
        """How many lastmod-driven refetches one read of a host's sitemap may ask for:
        ``LASTMOD_PROBES`` while its lastmod is on probation, one when it has proved wrong, no
        limit when trusted."""
        if trust.refetches < S.LASTMOD_PROBES:
            return S.LASTMOD_PROBES
        return float("inf") if trust.value >= S.LASTMOD_MIN_TRUST else 1

    def refetched(self, uid: int, changed: bool) -> None:
        """A page was fetched again (the recorder calls this): if its lastmod asked for it or
        vouched that it had not changed, the answer is evidence about the host's lastmod (right
        when a hinted page changed, or a vouched-for page had not)."""
        host_id = self.hinted.pop(uid, None)
        right = changed
        if host_id is not None:
            self.stats["lastmod/refetches"] += 1
            self.stats["lastmod/changed"] += changed
        else:
            host_id = self.deferred.pop(uid, None)
            if host_id is None:
                return
            right = not changed
            self.stats["lastmod/vouched_refetches"] += 1
            self.stats["lastmod/vouched_changed"] += changed
        trust = self.trust.setdefault(host_id, Trust())
        trust.refetches += 1
        trust.changed += right
        self.trust_dirty.add(host_id)

    def _feed(self, src: Source, f: Fetched) -> None:
        try:
            items = parse_feed(f.body)
        except FeedError as exc:
            self.failed(src.url, exc.reason)
            return
        self.stats["feeds/read"] += 1
        new = 0
        listed: list[str] = []
        with self.recorder.batch.step():
            for href in items:
                try:
                    url = canonicalize(href, src.url)
                except UrlError:
                    self.stats["feeds/bad_item_url"] += 1
                    continue
                listed.append(url)
                if url in src.seen:
                    continue
                src.seen.add(url)
                new += 1
                uid, _ = self.recorder.discover(url, 1, follow=True)
                if self.frontier.is_known(uid) and not self.frontier.was_read(uid):
                    self.frontier.grant(uid, S.FEED_ITEM_GRANT)
        if len(src.seen) > 4 * S.FEED_MAX_ITEMS:  # bounded: keep what the feed holds now
            src.seen = set(listed)
        self.stats["feeds/new_items"] += new
        interval = src.interval / 2 if new and src.reads > 1 else src.interval * 2
        if src.reads == 1:
            interval = self.feed_min
        self._again(src, min(self.feed_max, max(self.feed_min, interval)))

    def flush(self) -> None:
        """Write the trust of hosts that changed (inside the batch's transaction)."""
        if self.trust_dirty:
            self.store.save_lastmod_trust({h: (self.trust[h].refetches, self.trust[h].changed)
                                           for h in self.trust_dirty})
            self.trust_dirty.clear()

    # ------------------------------------------------------------------ figures
    def figures(self) -> dict[str, Any]:
        """Per host (by origin): lastmod-driven refetches, how many found change, the trust."""
        hosts: dict[str, dict[str, float]] = {}
        for host_id, t in sorted(self.trust.items()):
            state = self.store.host_by_id(host_id)
            hosts[state.origin if state is not None else str(host_id)] = {
                "refetches": t.refetches, "changed": t.changed, "trust": round(t.value, 3)}
        return {
            "sources": {k: sum(1 for s in self.sources.values() if s.kind == k)
                        for k in (SITEMAP, FEED)},
            "lastmod_hosts": hosts,
        }
