"""One crawl (or recrawl) run: the state Scrapy's components share, and what to fetch next.

Question: Scrapy asks for the next request; which one may go now?  The session answers from
websift's own parts, in this order for every host that has pending URLs:

1. politeness (``crawler/politeness.py``): the host is not full and its delay has passed;
2. robots.txt (``crawler/robots_cache.py``): known and fresh, else its request goes first;
3. the frontier (``crawler/frontier.py``): among the ready hosts, the URL OPIC picks (Greedy by
   cash unless told otherwise); robots.txt refusals are recorded and the pick repeats.

When nothing may go yet, ``wake_at`` says when something will, and the scheduler wakes Scrapy's
engine then (its own heartbeat is 5 s).  Each request carries a :class:`crawler.meta.FetchMeta`
(URL and host IDs, depth, redirect hops); responses and failures come back with it through
:meth:`on_response` / :meth:`on_failure` and are recorded by ``crawler/pipeline.py``.  Requests
are made by a :class:`RequestFactory` (the spider) and time is read from an injectable clock, so
the session runs without Scrapy in unit tests.

All state lives on this object (created by ``crawler/runner.py`` and handed to the spider); the
store, the WARC writer and the OPIC state are opened here and closed by :meth:`close`.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Protocol

from websift.core.datadir import DataDir
from websift.core.errors import StageFailed, WebsiftError
from websift.core.extras import require
from websift.core.gc_pauses import gc_pauses
from websift.crawler import settings as S
from websift.crawler.dedup import NearDuplicateIndex
from websift.crawler.dns import ADDRESS_PENDING, HostVerdicts
from websift.crawler.errors import FrontierLost, ScopeError
from websift.crawler.focus import build_focus
from websift.crawler.frontier import DEFAULT_STRATEGY, CrawlFrontier, Frontier
from websift.crawler.groupcommit import GroupCommit
from websift.crawler.identity import agent_token
from websift.crawler.meta import FetchMeta
from websift.crawler.pipeline import Fetched, PageRecorder
from websift.crawler.politeness import HostSlot, Politeness, parse_retry_after
from websift.crawler.pushes import Pushes
from websift.crawler.robots import ROBOTS_PATH
from websift.crawler.robots_cache import RobotsCache, RobotsState
from websift.crawler.runs import run_record
from websift.crawler.scope import Resolve, Scope, ScopeConfig
from websift.crawler.seeds import failed_seeds, reason_words
from websift.crawler.signals import SITEMAP, Signals, Source
from websift.crawler.urls import canonicalize, host_of, port_of
from websift.ranking.opic import OpicParams, Strategy
from websift.store.crawl_store import FETCHED, CrawlStore
from websift.store.errors import WRITE_ERRORS, write_failure
from websift.store.warc import WarcWriterFile

KIND_CRAWL = "crawl"
KIND_RECRAWL = "recrawl"


class RequestFactory(Protocol):
    """What the session needs from the spider: requests bound to its callbacks.

    ``slot`` is the politeness origin, Scrapy's ``download_slot`` for the request."""

    def page_request(
        self, url: str, meta: FetchMeta, headers: dict[str, str], slot: str
    ) -> Any: ...

    def robots_request(self, url: str, meta: FetchMeta) -> Any: ...

    def signal_request(
        self, url: str, meta: FetchMeta, headers: dict[str, str], slot: str, maxsize: int
    ) -> Any: ...


@dataclass
class CrawlConfig:
    seeds: list[str] = field(default_factory=list)
    max_pages: int | None = S.DEFAULT_MAX_PAGES  # pages this run fetches; None: no limit
    scope: ScopeConfig = field(default_factory=ScopeConfig)
    delay: float = S.DEFAULT_DELAY
    concurrency: int = S.DEFAULT_CONCURRENCY_PER_HOST
    strategy: Strategy = DEFAULT_STRATEGY
    max_pages_per_host: int = S.MAX_PAGES_PER_HOST
    robots_ttl: float = S.ROBOTS_TTL
    max_redirects: int = S.MAX_REDIRECTS
    retry_times: int = S.RETRY_TIMES
    kind: str = KIND_CRAWL
    recrawl: list[tuple[int, float]] = field(default_factory=list)  # (url id, priority)
    continuous: bool = False  # run until stopped (or --duration / --max-pages), never idle out
    duration: float | None = None  # seconds this run may last; None: no limit
    # One schedule for discovery and refresh (the frontier reads them; crawler/settings.py)
    discovery_share: float = S.DISCOVERY_SHARE
    window: float = S.OPIC_WINDOW
    min_refetch_interval: float = S.MIN_REFETCH_INTERVAL
    focus_patterns: tuple[str, ...] = ()  # --focus regexes
    focus_topic: str | None = None  # --focus-topic: a topic set's name
    focus_share: float = S.FOCUS_SHARE
    # --frontier: a shared frontier's URL (redis://...; crawler/redis_frontier.py); None: the
    # embedded one.  Never holds a password (that comes from the environment).
    frontier: str | None = None
    frontier_lease: float = S.FRONTIER_LEASE_TTL  # --frontier-lease
    frontier_hosts: int = S.FRONTIER_MAX_HOSTS  # --frontier-hosts
    # --partitioned: the coordinator's URL (redis://...) of a partitioned crawl
    # (crawler/mailbox.py); this crawler runs the embedded frontier for the partitions it leases
    partitioned: str | None = None
    partitions: int = S.PARTITIONS  # --partitions
    partition_lease: float = S.PARTITION_LEASE_TTL  # --partition-lease
    partition_mirror: bool = False  # --partition-mirror
    partition_rejoin: float | None = S.PARTITION_REJOIN  # --partition-rejoin
    # --signals: sitemaps, lastmod and feeds as OPIC evidence (crawler/signals.py)
    signals: bool = S.SIGNALS
    sitemap_interval: float = S.SITEMAP_INTERVAL  # --sitemap-interval
    feed_min_interval: float = S.FEED_MIN_INTERVAL  # --feed-min-interval
    feed_max_interval: float = S.FEED_MAX_INTERVAL  # --feed-max-interval
    # --user-agent: sent with every request; its product token picks the robots.txt group
    user_agent: str = S.USER_AGENT


class CrawlSession:
    """Store, WARC writer, frontier, politeness and robots state of one run."""

    def __init__(
        self, data: DataDir, config: CrawlConfig, clock: Callable[[], float] = time.time,
        resolve: Resolve | None = None,
    ) -> None:
        self.config = config
        # wall-clock seconds (politeness persists back-off deadlines); tests drive a fake one
        self.clock = clock
        # bad shares or a bad focus are refused (OpicError, FocusError) before any file opens
        params = OpicParams(window=config.window, discovery_share=config.discovery_share,
                            focus_share=config.focus_share)
        focus = build_focus(list(config.focus_patterns), config.focus_topic, data.topics_dir)
        self.store = CrawlStore.open(data.store_path)
        self.frontier: CrawlFrontier
        if config.frontier is not None:
            require("cluster", "a shared frontier (--frontier)", ("redis",))
            from websift.crawler.redis_frontier import open_frontier  # redis only when asked for

            try:
                shared = open_frontier(config.frontier, self.store, params, focus=focus,
                                       clock=clock,
                                       min_refetch_interval=config.min_refetch_interval,
                                       lease_ttl=config.frontier_lease,
                                       max_hosts=config.frontier_hosts,
                                       scope=config.scope)
            except BaseException:
                self.store.close()
                raise
            shared.on_lease = self._leased
            shared.busy = self._host_busy
            self.frontier = shared
        elif config.partitioned is not None:
            require("cluster", "a partitioned crawl (--partitioned)", ("redis",))
            from websift.crawler.mailbox import open_partitioned  # redis only when asked for

            try:
                self.frontier = open_partitioned(
                    config.partitioned, self.store, config.partitions, config.partition_lease,
                    config.partition_mirror, rejoin=config.partition_rejoin,
                    strategy=config.strategy, params=params, focus=focus, clock=clock,
                    min_refetch_interval=config.min_refetch_interval)
            except BaseException:
                self.store.close()
                raise
        else:
            self.frontier = Frontier.load(
                self.store, config.strategy, params, focus=focus, clock=clock,
                min_refetch_interval=config.min_refetch_interval,
            )
        self.warc = WarcWriterFile(data.warc_dir)
        self.politeness = Politeness(config.delay, config.concurrency)
        self.agent = agent_token(config.user_agent)  # robots.txt, meta robots, X-Robots-Tag
        self.robots = RobotsCache(agent=self.agent, ttl=config.robots_ttl)
        self.scope = Scope(config.scope, resolve)  # resolve: the system resolver unless a test's
        # each host's address verdict, looked up in DNS threads (never on the reactor thread)
        self.addresses = HostVerdicts(self.scope)
        self.stats: Counter[str] = Counter()
        self.near = NearDuplicateIndex()
        for uid, fp in self.store.simhashes():
            self.near.add(uid, fp)
        self.batch = GroupCommit(self.store, self.warc)
        self.recorder = PageRecorder(
            self.store, self.warc, self.frontier, self.judge, self.stats, near=self.near,
            batch=self.batch, max_url_length=config.scope.max_url_length, agent=self.agent,
        )
        # the web's own signals: the embedded frontier of a crawl only (a recrawl has its
        # explicit schedule; a shared frontier takes no evidence)
        self.signals: Signals | None = None
        if config.signals and config.kind == KIND_CRAWL:
            if isinstance(self.frontier, Frontier) and config.partitioned is None:
                self.signals = Signals(
                    self.frontier, self.recorder, self.store, self.stats, clock,
                    sitemap_interval=config.sitemap_interval,
                    feed_min_interval=config.feed_min_interval,
                    feed_max_interval=config.feed_max_interval,
                )
            else:
                self.stats["signals/off_shared_frontier"] = 1
        # site owners' pushes (IndexNow, crawler/pushes.py): taken at each commit and idle tick
        # by a crawl on the embedded frontier, with or without the other signals (a shared or
        # partitioned crawl's pushes wait in the store)
        self.pushes: Pushes | None = None
        if (config.kind == KIND_CRAWL and isinstance(self.frontier, Frontier)
                and config.partitioned is None):
            self.pushes = Pushes(self.frontier, self.recorder, self.store, self.stats)
        self.factory: RequestFactory | None = None
        self.seeds: list[str] = []  # canonical, once add_seeds has run
        self.robots_failures: dict[int, str] = {}  # host ID: why its robots.txt was not had
        self.started_pages = 0
        self.done_pages = 0  # page requests answered or finally failed (retries not counted)
        self.pages_per_host: Counter[int] = Counter()
        self.redirect_hops: dict[int, int] = {}
        self.tries: Counter[int] = Counter()
        self.extra: deque[Any] = deque()  # requests Scrapy handed us (robots.txt redirects)
        self.wake_at: float | None = None
        # nothing in flight, nothing timed, yet URLs pending: no host can make progress (a
        # robots.txt answer that never came back); the run ends instead of idling for ever
        self.stalled = False
        self.started_at = clock()
        # why the run stops early ("SIGTERM", "duration"), once something asked it to
        self.stop_reason: str | None = None
        self.deadline = None if config.duration is None else self.started_at + config.duration
        self.record = run_record(config.scope, self.run_settings())
        self.crawl_id = self.store.start_crawl(config.kind, json.dumps(self.record))
        self.live_at = float("-inf")  # when the live figures were last written
        self.rate_samples: deque[tuple[float, int]] = deque()  # (time, pages) for the recent rate
        # the live figures commit with every batch (and so does the OPIC state they describe)
        self.batch.before_commit.append(self.publish_live)
        self.batch.after_commit.append(self.frontier.after_commit)
        before = getattr(self.frontier, "before_commit", None)
        if before is not None:  # a partitioned crawl's transfers commit with their cash
            self.batch.before_commit.append(before)
        # the operator's removals: read now and again after every commit (crawler/scope.py)
        self.reload_removals()
        self.batch.after_commit.append(self.reload_removals)
        if self.pushes is not None:
            self.batch.after_commit.append(self.take_pushes)
        self.closed = False
        # why Scrapy could not be used (e.g. a missing internal), raised once Scrapy has stopped
        self.start_refused: WebsiftError | None = None
        # the first I/O error writing the store or a WARC file (a full disk): the run stops at
        # once, and the command exits 1 with this (``StageFailed``) once Scrapy has stopped
        self.failed: StageFailed | None = None
        # how the runner tells Scrapy to close the spider now (set by crawler/runner.py)
        self.on_failed: Callable[[], None] | None = None
        self.store_path = data.store_path
        self.out_of_space = False  # the failure is a full disk: freeing space resumes

    # ------------------------------------------------------------------ scope
    def judge(self, url: str, depth: int) -> str | None:
        """Scope reason for a URL at a depth, address check included; None when in scope;
        ``ADDRESS_PENDING`` while its host's lookup runs (the recorder parks the URL)."""
        reason = self.scope.check(url, depth)
        if reason is not None:
            return reason
        return self.addresses.reason(host_of(url), port_of(url))

    def reload_removals(self) -> None:
        """Take the removal rules in force now (``websift remove`` writes them into the store
        while the crawl runs): one small read per batch commit (and per live-figures update
        of a crawl that commits nothing, crawler/settings.py LIVE_EVERY); a change drops the recorder's
        remembered scope verdicts, so a URL removed or restored is judged again."""
        rules = self.store.removal_rules()
        if rules.key != self.scope.removals.key:
            self.scope.removals = rules
            self.recorder.forget_verdicts()
            self.stats["removals/reloads"] += 1

    def take_pushes(self) -> None:
        """Take the site owners' pushes waiting in the store (crawler/pushes.py)."""
        if self.pushes is not None:
            self.pushes.take()

    def _settle_addresses(self) -> None:
        """Take the DNS threads' answers: links parked for a host enter the frontier or are
        recorded out of scope (the only caller of ``drain``, so parked hosts are always asked
        hosts and ``addresses.busy()`` covers them)."""
        for answer in self.addresses.drain():
            self.stats["dns/lookups"] += 1
            if answer.error is not None:
                self.stats[f"dns/error/{answer.error}"] += 1
            for uid, hops in self.recorder.settle(answer.host, answer.verdict.reason):
                if hops:
                    self.redirect_hops[uid] = hops

    def add_seeds(self) -> None:
        """Frontier the seeds (a seed already known keeps its state; if unread it is pending)."""
        seeds = self.seeds = checked_seeds(self.scope, self.config.seeds)
        for url in seeds:  # judged just now (blocking, before the reactor runs): no lookup again
            self.addresses.keep(host_of(url), self.scope.verdict(host_of(url), port_of(url)))
        with self.store.transaction():
            for url in seeds:
                uid, _ = self.recorder.discover(url, 0, follow=True)
                page = self.store.page(uid)
                if page is not None and page.status == "discovered":
                    self.frontier.revive(uid, url)
            self.start_cash()

    def start_cash(self) -> None:
        """Hand the virtual page's cash out at the start of a run, so pending pages have some
        (section 2.1: "initially, we distribute some cash to each node")."""
        with self.store.transaction():
            self.frontier.distribute_virtual()
            self.frontier.persist(self.store)

    def schedule_recrawl(self) -> None:
        """Recrawl (refresh only, discovery share 0): the pending set is the given schedule,
        ordered by its priorities; URLs discovered meanwhile enter OPIC unqueued."""
        self.frontier.schedule_explicit(self.config.recrawl)
        self.stats["recrawl/scheduled"] = len(self.config.recrawl)

    # ------------------------------------------------------------------ host state
    def _slot(self, host_id: int, now: float) -> HostSlot:
        slot = self.politeness.slots.get(host_id)
        if slot is None:
            state = self.store.host_by_id(host_id)
            assert state is not None
            slot = self.politeness.load(state)
            self.robots.load(state, now)
            cd = self.robots.crawl_delay(host_id)
            if cd is not None:
                self.politeness.set_crawl_delay(slot, cd)
            self._robots_known(host_id, slot.origin)
        return slot

    def _robots_known(self, host_id: int, origin: str) -> None:
        """A host's robots.txt is known (fetched, or fresh in the store): its sitemaps."""
        entry = self.robots.hosts.get(host_id)
        if self.signals is None or entry is None or entry.policy is None:
            return
        if entry.state is RobotsState.READY:
            self.signals.robots_known(host_id, origin, entry.policy.sitemaps())

    def save_host(self, slot: HostSlot) -> None:
        state = self.store.host_by_id(slot.host_id)
        assert state is not None
        self.politeness.save_into(slot, state)
        with self.store.transaction():
            self.store.save_host(state)
        self.frontier.host_saved(state)

    def _leased(self, host_id: int, last_start: float) -> None:
        """A shared frontier gave this run a host: its politeness and robots.txt state come
        from the frontier (now in the store row), and no request starts before ``last_start``
        plus the delay."""
        self.politeness.slots.pop(host_id, None)
        self.robots.hosts.pop(host_id, None)
        slot = self._slot(host_id, self.clock())
        slot.last_start = max(slot.last_start, last_start)

    def _host_busy(self, host_id: int) -> bool:
        slot = self.politeness.slots.get(host_id)
        robots = self.robots.hosts.get(host_id)
        return (slot is not None and slot.in_flight > 0) or (
            robots is not None and robots.state is RobotsState.FETCHING)

    def _drop_host(self, host_id: int, reason: str) -> None:
        """Leave a host's pending URLs for a later run (they stay ``discovered``)."""
        self.stats[f"skipped/{reason}"] += self.frontier.drop_host(host_id)

    # ------------------------------------------------------------------ what next
    def budget_left(self) -> bool:
        return self.config.max_pages is None or self.started_pages < self.config.max_pages

    def has_pending(self) -> bool:
        if self.extra:
            return True
        if self.stop_reason is not None or not self.budget_left() or self._time_is_up(self.clock()):
            return False
        if self.config.continuous:
            return True  # nothing due now means wait (``wake_at``), not the end of the run
        if self._sendable_sources(self.clock()):
            return True  # a sitemap or feed to read now may name more pages
        # links waiting for their host's address verdict may still enter the frontier
        pending = self.frontier.pending_count() > 0 or self.addresses.busy()
        return pending and not self.stalled

    def _time_is_up(self, now: float) -> bool:
        """True once ``--duration`` has passed (and the run's stop reason says so)."""
        if self.deadline is None or now < self.deadline:
            return False
        if self.stop_reason is None:
            self.stop_reason = "duration"
        return True

    def request_stop(self, reason: str) -> None:
        """Hand out no more requests; those in flight finish and the run closes (its batch
        committed).  Plain attribute writes: safe to call from a signal handler."""
        if self.stop_reason is None:
            self.stop_reason = reason

    def next_request(self, now: float) -> Any | None:
        """The next request politeness allows now, or None (then ``wake_at`` is set)."""
        if self.failed is not None:
            return None
        with self.writing():  # it commits a batch past its age
            return self._next_request(now)
        return None  # the write failed: the run stops

    def _next_request(self, now: float) -> Any | None:  # noqa: C901 - the one place politeness, leases and the OPIC pick meet
        assert self.factory is not None
        self.wake_at = None
        self.stalled = False
        if self.batch.due():
            self.batch.commit()
        if self.frontier.lost is not None:
            self.request_stop("frontier_lost")
        self._settle_addresses()
        if self.extra:
            return self.extra.popleft()
        if not self.budget_left():
            return None
        if self.stop_reason is not None or self._time_is_up(now):
            return None
        ready: list[int] = []
        earliest = float("inf")
        if self.signals is not None:
            request, earliest = self._signal_request(now)
            if request is not None:
                return request
        for host_id in self.frontier.pending_hosts():
            slot = self._slot(host_id, now)
            robots = self.robots.hosts[host_id]
            if robots.state is RobotsState.UNAVAILABLE:
                self._drop_host(host_id, "robots_unavailable")
                continue
            if self.pages_per_host[host_id] >= self.config.max_pages_per_host:
                self._drop_host(host_id, "host_page_limit")
                continue
            if self.scope.removals.hosts and self.scope.removals.host_removed(
                    host_of(slot.origin)):  # not even its robots.txt is fetched
                self._drop_host(host_id, "scope_removed")
                continue
            at = self.politeness.ready_at(slot)
            if at is None or robots.state is RobotsState.FETCHING:
                continue
            if at > now:
                earliest = min(earliest, at)
                continue
            address = self.addresses.reason(host_of(slot.origin), port_of(slot.origin))
            if address == ADDRESS_PENDING:
                continue  # not ready: its lookup runs in a DNS thread, whose answer wakes us
            if address is not None:  # refused since its URLs entered (TTL, another run's scope)
                self._drop_host(host_id, f"scope_{address}")
                continue
            if robots.state is RobotsState.NEEDED:
                self.robots.fetching(host_id)
                self.politeness.started(slot, now)
                return self.factory.robots_request(
                    slot.origin + ROBOTS_PATH, FetchMeta.robots(host_id)
                )
            ready.append(host_id)
        while ready:
            uid = self.frontier.select(ready)
            if uid is None:
                break
            refresh = self.frontier.was_read(uid)  # a refetch of a read page, or discovery
            url = self.frontier.take(uid)
            host_id = int(self.frontier.host_of[uid])
            depth = int(self.frontier.depth_of[uid])
            reason = self.scope.check(url, depth)  # its host's addresses passed above
            if reason is not None:  # pending from an earlier run with a different scope
                self.stats[f"skipped/scope_{reason}"] += 1
                self.frontier.drop(uid)
                continue
            decision = self.robots.decide(host_id, url)
            if not decision.allowed:
                self.recorder.disallowed(uid, decision)
                continue
            return self._page_request(uid, url, host_id, depth, now, refresh=refresh)
        if earliest < float("inf"):
            self.wake_at = earliest
        poll = self.frontier.poll_at(now)  # a shared frontier: others hold the work
        if poll is not None and self.frontier.pending_count() > 0:
            self.wake_at = poll if self.wake_at is None else min(self.wake_at, poll)
        if self.config.continuous:
            # nothing due now: look again soon (read pages gather cash and come due with time)
            poll = now + S.CONTINUOUS_POLL
            self.wake_at = poll if self.wake_at is None else min(self.wake_at, poll)
        else:
            waiting = (
                any(s.in_flight for s in self.politeness.slots.values())
                or any(r.state is RobotsState.FETCHING for r in self.robots.hosts.values())
                or self.addresses.busy()
            )
            self.stalled = (
                self.wake_at is None and not waiting and self.frontier.pending_count() > 0
            )
            if self.stalled:
                self.stats["skipped/stalled"] = self.frontier.pending_count()
        if self.signals is not None and self.config.continuous:
            at = self.signals.next_due()  # a sitemap or feed to read again
            if at is not None and at > now:
                self.wake_at = at if self.wake_at is None else min(self.wake_at, at)
        if self.deadline is not None:  # wake to end the run on time even while it waits
            at = self.deadline
            self.wake_at = at if self.wake_at is None else min(self.wake_at, at)
        return None

    def _sendable_sources(self, now: float) -> list[Source]:
        """Sources due now on hosts whose robots.txt is known and whose address passes; a
        source of a host robots.txt puts off limits is dropped."""
        if self.signals is None:
            return []
        out: list[Source] = []
        for src in self.signals.due(now):
            slot = self._slot(src.host_id, now)
            robots = self.robots.hosts[src.host_id]
            if robots.state is RobotsState.UNAVAILABLE:
                self.signals.drop(src, "robots_unavailable")
                continue
            if robots.state is not RobotsState.READY:
                continue  # fetched with the host's pages
            if self.addresses.reason(host_of(slot.origin), port_of(slot.origin)) is not None:
                continue
            out.append(src)
        return out

    def _signal_request(self, now: float) -> tuple[Any | None, float]:
        """A sitemap or feed due now on a host politeness and robots.txt let us ask, and
        (when none may go) the earliest time politeness lets one of them go."""
        assert self.signals is not None and self.factory is not None
        earliest = float("inf")
        for src in self._sendable_sources(now):
            slot = self._slot(src.host_id, now)
            at = self.politeness.ready_at(slot)
            if at is None or at > now:
                if at is not None:
                    earliest = min(earliest, at)
                continue
            if not src.from_robots and not self.robots.decide(src.host_id, src.url).allowed:
                self.signals.drop(src, "robots_disallowed")
                continue
            headers = self.signals.started(src)
            self.politeness.started(slot, now)
            self.stats[f"fetch/{src.kind}"] += 1
            maxsize = S.SITEMAP_MAX_BYTES if src.kind == SITEMAP else S.FEED_MAX_BYTES
            return self.factory.signal_request(
                src.url, FetchMeta.signal(src.host_id, src.url), headers, slot.origin, maxsize
            ), earliest
        return None, earliest

    def _page_request(
        self, uid: int, url: str, host_id: int, depth: int, now: float, *, refresh: bool = False
    ) -> Any:
        assert self.factory is not None
        slot = self._slot(host_id, now)
        self.politeness.started(slot, now)
        retry = self.tries[uid] > 0
        if not retry:
            self.started_pages += 1
            self.pages_per_host[host_id] += 1
            self.stats["fetch/refresh" if refresh else "fetch/discovery"] += 1
        headers: dict[str, str] = {}
        if refresh or self.config.kind == KIND_RECRAWL:  # a refetch asks "changed since?"
            page = self.store.page(uid)
            if page is not None and page.etag:
                headers["If-None-Match"] = page.etag
            if page is not None and page.last_modified:
                headers["If-Modified-Since"] = page.last_modified
        meta = FetchMeta.page(uid, host_id, depth, self.redirect_hops.pop(uid, 0))
        return self.factory.page_request(url, meta, headers, slot.origin)

    # ------------------------------------------------------------------ results
    def release(self, meta: FetchMeta | None, elapsed: float | None) -> None:
        """The request left the downloader: free its host's in-flight place (once)."""
        if meta is None or meta.released:
            return
        meta.released = True
        slot = self.politeness.slots.get(meta.host_id)
        if slot is not None:
            self.politeness.finished(slot, elapsed, self.clock())

    # ------------------------------------------------------------------ I/O failures
    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Around everything that writes the store or a WARC file: the first I/O error (a full
        disk) stops the run (:meth:`fail`) instead of surfacing as one traceback per page."""
        try:
            yield
        except WRITE_ERRORS as exc:
            self.fail(exc)

    def fail(self, exc: Exception) -> None:
        """Stop at once: no more requests, results still arriving dropped (their URLs stay
        pending for the next run), Scrapy told to close the spider."""
        if self.failed is not None:
            return
        what, full = write_failure(exc, self.warc.path if isinstance(exc, OSError)
                                   else self.store_path)
        self.failed = StageFailed(what)
        self.failed.__cause__ = exc
        self.out_of_space = full
        self.stats["failure/storage"] += 1
        self.request_stop("storage_error")
        if self.on_failed is not None:
            self.on_failed()

    def failure_line(self, committed: int | None) -> str:
        """The command's error line once the run has stopped."""
        assert self.failed is not None
        advice = "free space and rerun to resume" if self.out_of_space else "rerun to resume"
        pages = "" if committed is None else f"; {committed} pages in the store"
        return f"{self.failed}: stopped{pages}; {advice}"

    def on_robots(self, meta: FetchMeta, status: int, body: bytes) -> None:
        if self.failed is not None:
            return
        with self.writing():
            self._robots(meta, status, body)

    def _robots(self, meta: FetchMeta, status: int, body: bytes) -> None:
        host_id = meta.host_id
        try:
            self._on_robots(host_id, status, body)
        except BaseException:
            # never leave the host waiting for an answer that was lost; the error propagates
            # (Scrapy counts it, the summary shows it as internal_error)
            self.robots.hosts[host_id].state = RobotsState.UNAVAILABLE
            raise

    def _on_robots(self, host_id: int, status: int, body: bytes) -> None:
        now = self.clock()
        state = self.store.host_by_id(host_id)
        assert state is not None
        entry = self.robots.answered(state, status, body, now)
        slot = self._slot(host_id, now)
        self.politeness.set_crawl_delay(slot, self.robots.crawl_delay(host_id))
        self.politeness.save_into(slot, state)
        with self.store.transaction():
            self.store.save_host(state)
        self.frontier.host_saved(state)
        self.stats["robots/fetched"] += 1
        self._robots_known(host_id, slot.origin)
        if entry.state is RobotsState.UNAVAILABLE:
            self.stats["failure/robots_unavailable"] += 1
            self.robots_failures.setdefault(host_id, reason_words(f"http_{status}"))

    def on_signal(self, meta: FetchMeta, f: Fetched) -> None:
        """A sitemap's or feed's answer (crawler/signals.py), in the batch's transaction."""
        slot = self._slot(meta.host_id, f.fetched_at)
        if self.signals is not None:
            self.signals.answered(meta.source, f)
        self._after(slot, f.status)

    def on_response(self, meta: FetchMeta, f: Fetched) -> None:
        if self.failed is not None:
            return
        with self.writing():
            self._response(meta, f)

    def _response(self, meta: FetchMeta, f: Fetched) -> None:
        try:
            self._on_response(meta, f)
        except FrontierLost:
            # a shared frontier went away while the page's links got their IDs: its step was
            # undone (still taken in the frontier, fetched again by the next run); stop
            self.stats["failure/frontier_lost"] += 1
            self.request_stop("frontier_lost")

    def _on_response(self, meta: FetchMeta, f: Fetched) -> None:
        uid, host_id = meta.page_id, meta.host_id
        now = f.fetched_at
        slot = self._slot(host_id, now)
        status = f.status
        if status in S.RETRY_STATUSES:
            pause = None
            if status in S.BACKOFF_STATUSES:
                retry_after = parse_retry_after(f.header("Retry-After"), now)
                pause = self.politeness.back_off(slot, now, retry_after)
            self._retry_or_fail(uid, f"http_{status}", status, now)
            if pause is not None:
                self.stats["backoff/pauses"] += 1
            return self._after(slot, status)
        self.done_pages += 1
        if status == 304:
            self.recorder.not_modified(f)
        elif 300 <= status < 400 and f.header("Location"):
            hops = meta.hops + 1
            target = self.recorder.redirect(f, f.header("Location") or "", hops, self.config.max_redirects)
            if target is not None:
                self.redirect_hops[target[0]] = hops
        elif 200 <= status < 300:
            self.recorder.page(f)
        else:
            self.recorder.failed(uid, f"http_{status}", status, now)
        self._after(slot, status)

    def _after(self, slot: HostSlot, status: int) -> None:
        if status < 400:
            self.politeness.succeeded(slot)
        if slot.dirty:
            self.save_host(slot)

    def on_failure(self, meta: FetchMeta | None, reason: str) -> None:
        if self.failed is not None:
            return
        with self.writing():
            self._failure(meta, reason)

    def _failure(self, meta: FetchMeta | None, reason: str) -> None:
        now = self.clock()
        if meta is not None and meta.is_robots:
            self.robots_failures[meta.host_id] = reason_words(reason)
            self.on_robots(meta, 0, b"")
            self.stats[f"robots/{reason}"] += 1
            return
        if meta is None:  # not a request websift made
            self.stats[f"failure/{reason}"] += 1
            return
        if meta.is_signal:
            if self.signals is not None:
                self.signals.failed(meta.source, reason)
            return
        uid = meta.page_id
        if reason in ("too_large", "ignored"):
            self.done_pages += 1
            self.recorder.failed(uid, reason, None, now)
        else:
            self._retry_or_fail(uid, reason, None, now)

    def _retry_or_fail(self, uid: int, reason: str, http_status: int | None, now: float) -> None:
        self.tries[uid] += 1
        if self.tries[uid] <= self.config.retry_times:
            self.stats[f"retry/{reason}"] += 1
            page = self.store.page(uid)
            assert page is not None
            self.frontier.revive(uid, page.url)
            return
        self.done_pages += 1
        self.recorder.failed(uid, reason, http_status, now)

    # ------------------------------------------------------------------ progress and end
    def progress(self) -> dict[str, float]:
        elapsed = max(1e-9, self.clock() - self.started_at)
        pages = self.done_pages
        errors = sum(v for k, v in self.stats.items() if k.startswith("failure/"))
        in_flight = sum(s.in_flight for s in self.politeness.slots.values())
        return {
            "pages": pages,
            "discovery": self.stats["fetch/discovery"],
            "refresh": self.stats["fetch/refresh"],
            "rate": pages / elapsed,
            "queue": self.frontier.pending_count(),
            "in_flight": in_flight,
            "errors": errors,
            "elapsed": elapsed,
        }

    def run_settings(self) -> dict[str, Any]:
        """The run's settings as JSON values (every CrawlConfig field but the scope, kept
        apart, and a recrawl's schedule)."""
        out: dict[str, Any] = {}
        for f in fields(self.config):
            if f.name in ("scope", "recrawl"):
                continue
            value = getattr(self.config, f.name)
            if isinstance(value, Enum):
                value = value.value
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    def live(self, state: str | None = None) -> dict[str, Any]:
        """The figures an operator watches (``crawler/runs.py`` LIVE_KEYS)."""
        now = self.clock()
        prog = self.progress()
        pages = int(prog["pages"])
        samples = self.rate_samples
        samples.append((now, pages))
        while len(samples) > 2 and now - samples[1][0] >= S.RATE_WINDOW:
            samples.popleft()  # keep one sample at least RATE_WINDOW old
        t0, p0 = samples[0]
        recent = (pages - p0) / (now - t0) if now > t0 else 0.0
        if state is None:
            if self.stop_reason is not None:
                state = "stopping"
            else:
                state = "running" if prog["in_flight"] else "waiting"
        errors = {k: v for k, v in sorted(self.stats.items())
                  if k.startswith(("failure/", "internal_error/"))}
        frontier = self.frontier.stats()
        return {
            "pid": os.getpid(),
            "kind": self.config.kind,
            "continuous": self.config.continuous,
            "state": state,
            "started": self.started_at,
            "updated": now,
            "pages": pages,
            "discovery_fetches": int(prog["discovery"]),
            "refresh_fetches": int(prog["refresh"]),
            "pages_per_second": round(prog["rate"], 3),
            "recent_pages_per_second": round(recent, 3),
            "in_flight": int(prog["in_flight"]),
            "errors": errors,
            "frontier": frontier,
            "virtual_cash": float(frontier.get("virtual_cash", 0.0)),
            "removals": len(self.scope.removals.removals),  # rules in force (crawler/scope.py)
            "signals": self.signal_figures(),
            "gc": {"threshold": list(gc.get_threshold()), "pauses": gc_pauses().as_dict()},
        }

    def signal_figures(self) -> dict[str, Any]:
        """Sitemaps, feeds and lastmod figures of the run (counters and per-host trust)."""
        prefixes = ("sitemaps/", "feeds/", "lastmod/", "fetch/sitemap", "fetch/feed", "signals/",
                    "pushes/")
        counts = {k: v for k, v in sorted(self.stats.items()) if k.startswith(prefixes)}
        if self.signals is None:
            return {"on": False, "counts": counts}
        return {"on": True, "counts": counts, **self.signals.figures()}

    def publish_live(self) -> None:
        """Write the live figures into the run's row (inside the open batch if there is one:
        they commit with it; else in a transaction of their own)."""
        self.live_at = self.clock()
        record = {**self.record, "live": self.live()}
        self.store.update_crawl(self.crawl_id, json.dumps(record, sort_keys=True))

    def tick(self) -> None:
        """Every ``LIVE_EVERY`` seconds (``crawler/progress.py`` LiveFigures): commit a batch
        past its age even when Scrapy asks for nothing (its downloader full, or the run
        stopping), and keep the live figures fresh while no batch commits (a crawl that waits)."""
        if self.closed or self.failed is not None:
            return
        if self.frontier.lost is not None:
            self.request_stop("frontier_lost")
        with self.writing():
            if self.batch.due():
                self.batch.commit()  # writes the figures (before_commit), then reloads removals
            elif self.clock() - self.live_at >= S.LIVE_EVERY:
                self.reload_removals()  # a crawl that waits takes them too
                self.take_pushes()
                self.publish_live()

    def summary(self, reason: str) -> dict[str, Any]:
        prog = self.progress()
        return {
            "kind": self.config.kind,
            "finish_reason": reason,
            "seconds": round(prog["elapsed"], 3),
            "pages": int(prog["pages"]),
            "pages_per_second": round(prog["rate"], 2),
            "queue_left": int(prog["queue"]),
            "counts": dict(sorted(self.stats.items())),
            "store": self.store.status_counts(),
            **self.record,
            "live": self.live(reason),
        }

    def close(self, reason: str) -> dict[str, Any]:
        """Persist every estimate and host, record the summary, close files (once)."""
        if self.closed:
            return {}
        self.closed = True
        if self.failed is None:
            with self.writing():
                return self._close(reason)
        self.addresses.close()
        return self._close_failed()

    def _close_failed(self) -> dict[str, Any]:
        """Close after an I/O error: what the open batch holds commits if the disk takes it
        (else it is rolled back: those URLs are fetched again by the next run, as after a
        kill), the run's summary is recorded if it fits, and the files are closed."""
        summary = self.summary("storage_error")
        with contextlib.suppress(*WRITE_ERRORS):
            self.batch.commit()
            self.store.finish_crawl(self.crawl_id, json.dumps(summary, sort_keys=True))
        with contextlib.suppress(*WRITE_ERRORS):
            self.store.rollback()  # whatever did not commit
        committed: int | None = None
        with contextlib.suppress(*WRITE_ERRORS):
            committed = int(self.store.status_counts().get(FETCHED, 0))
        with contextlib.suppress(OSError):
            self.warc.close()
        with contextlib.suppress(*WRITE_ERRORS):
            self.frontier.close()
        self.store.close()
        assert self.failed is not None
        self.failed.args = (self.failure_line(committed),)
        return summary

    def _close(self, reason: str) -> dict[str, Any]:
        if self.stop_reason is not None and reason in ("finished", "shutdown"):
            reason = self.stop_reason  # Scrapy's word for a stop the session asked for
        # links still waiting for their host's lookup: enter (or are refused) if it ends soon
        self.addresses.wait_all(S.DNS_CLOSE_WAIT)
        self._settle_addresses()
        self.addresses.close()
        if self.recorder.parked_count():  # stored, not in OPIC: a later link brings them back
            self.stats["skipped/address_pending"] += self.recorder.parked_count()
        self.batch.commit()
        with self.store.transaction():
            self.frontier.persist_all(self.store)
        for slot in self.politeness.slots.values():
            self.save_host(slot)
        self.frontier.close()  # a shared frontier: acknowledgements, leases given back
        if self.frontier.lost is not None:
            reason = "frontier_lost"
            self.stats["failure/frontier_lost"] = max(1, self.stats["failure/frontier_lost"])
        summary = self.summary(reason)
        if self.frontier.lost is not None:
            summary["frontier_lost"] = self.frontier.lost
            if getattr(self.frontier, "data_lost", False):  # gone, not just unreachable
                summary["frontier_data_lost"] = True
                summary["url_ids_up_to"] = self.store.max_url_id()
        failed = failed_seeds(self.store, self.seeds, self.robots_failures.get, self.stats)
        if failed:
            summary["seeds_failed"] = failed
        self.store.finish_crawl(self.crawl_id, json.dumps(summary, sort_keys=True))
        self.warc.close()
        self.store.close()
        return summary



def checked_seeds(scope: Scope, seeds: list[str]) -> list[str]:
    """Canonical seeds, or a :class:`ScopeError` saying which one is refused and why."""
    out: list[str] = []
    for raw in seeds:
        url = canonicalize(raw)
        if scope.check_address(host_of(url), port_of(url)) is not None:
            raise ScopeError(scope.private_error(url))
        reason = scope.check(url, 0)
        if reason is not None:
            raise ScopeError(f"seed {url} is out of the crawl's scope ({reason})")
        out.append(url)
    return out
