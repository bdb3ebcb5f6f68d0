"""One crawl (or recrawl) run: the state Scrapy's components share, and what to fetch next.

Question: Scrapy asks for the next request; which one may go now?  The session answers from
websift's own parts, in this order for every host that has pending URLs:

1. politeness (``crawler/politeness.py``): the host is not full and its delay has passed;
2. robots.txt (``crawler/robots_cache.py``): known and fresh, else its request goes first;
3. the frontier (``crawler/frontier.py``): among the ready hosts, the URL OPIC picks (Greedy by
   cash unless told otherwise); robots.txt refusals are recorded and the pick repeats.

When nothing may go yet, ``wake_at`` says when something will, and the scheduler wakes Scrapy's
engine then (its own heartbeat is 5 s).  Responses and failures come back through
:meth:`on_response` / :meth:`on_failure` and are recorded by ``crawler/pipeline.py``.

All state lives on this object (created by ``crawler/runner.py`` and handed to the spider); the
store, the WARC writer and the OPIC state are opened here and closed by :meth:`close`.
"""

from __future__ import annotations

import json
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from core.datadir import DataDir
from crawler import settings as S
from crawler.dedup import NearDuplicateIndex
from crawler.errors import ScopeError
from crawler.frontier import DEFAULT_STRATEGY, Frontier
from crawler.groupcommit import GroupCommit
from crawler.pipeline import Fetched, PageRecorder
from crawler.politeness import HostSlot, Politeness, parse_retry_after
from crawler.robots import ROBOTS_PATH
from crawler.robots_cache import RobotsCache, RobotsState
from crawler.scope import Scope, ScopeConfig
from crawler.urls import canonicalize, host_of, port_of
from ranking.opic import Strategy
from store.crawl_store import CrawlStore
from store.warc import WarcWriterFile

KIND_CRAWL = "crawl"
KIND_RECRAWL = "recrawl"


class RequestFactory(Protocol):
    """What the session needs from the spider: requests bound to its callbacks."""

    def page_request(self, url: str, meta: dict[str, Any], headers: dict[str, str]) -> Any: ...

    def robots_request(self, url: str, meta: dict[str, Any]) -> Any: ...


@dataclass
class CrawlConfig:
    seeds: list[str] = field(default_factory=list)
    max_pages: int = S.DEFAULT_MAX_PAGES
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


class CrawlSession:
    """Store, WARC writer, frontier, politeness and robots state of one run."""

    def __init__(self, data: DataDir, config: CrawlConfig) -> None:
        self.config = config
        self.store = CrawlStore.open(data.store_path)
        self.warc = WarcWriterFile(data.warc_dir)
        self.frontier = Frontier.load(self.store, config.strategy)
        self.politeness = Politeness(config.delay, config.concurrency)
        self.robots = RobotsCache(ttl=config.robots_ttl)
        self.scope = Scope(config.scope)
        self.stats: Counter[str] = Counter()
        self.near = NearDuplicateIndex()
        for uid, fp in self.store.conn.execute(
            "SELECT id, simhash FROM urls WHERE simhash IS NOT NULL AND duplicate_of IS NULL"
        ):
            self.near.add(int(uid), int(fp))
        self.batch = GroupCommit(self.store, self.warc)
        self.recorder = PageRecorder(
            self.store, self.warc, self.frontier, self.judge, self.stats, near=self.near,
            batch=self.batch, max_url_length=config.scope.max_url_length,
        )
        self.factory: RequestFactory | None = None
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
        self.started_at = time.time()
        self.crawl_id = self.store.start_crawl(config.kind)
        self.closed = False

    # ------------------------------------------------------------------ scope
    def judge(self, url: str, depth: int) -> str | None:
        """Scope reason for a URL at a depth, address check included; None when in scope."""
        reason = self.scope.check(url, depth)
        if reason is not None:
            return reason
        return self.scope.check_address(host_of(url), port_of(url))

    def add_seeds(self) -> None:
        """Frontier the seeds (a seed already known keeps its state; if unread it is pending)."""
        seeds = checked_seeds(self.scope, self.config.seeds)
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
            self.frontier.persist(self.store, self.frontier.distribute_virtual())

    def schedule_recrawl(self) -> None:
        """Recrawl: the pending set is the given schedule, ordered by its priorities."""
        for uid in list(self.frontier.urls):
            self.frontier.drop(uid)
        ids = [uid for uid, _ in self.config.recrawl]
        prio = np.zeros(len(self.frontier.pending), dtype=np.float64)
        for uid, priority in self.config.recrawl:
            page = self.store.page(uid)
            if page is None or not self.frontier.is_known(uid):
                continue
            prio[uid] = priority
            self.frontier.revive(uid, page.url)
        self.frontier.priority = prio
        self.frontier.accept_new = False
        self.stats["recrawl/scheduled"] = len(ids)

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
        return slot

    def save_host(self, slot: HostSlot) -> None:
        state = self.store.host_by_id(slot.host_id)
        assert state is not None
        self.politeness.save_into(slot, state)
        with self.store.transaction():
            self.store.save_host(state)

    def _drop_host(self, host_id: int, reason: str) -> None:
        """Leave a host's pending URLs for a later run (they stay ``discovered``)."""
        ids = np.flatnonzero(self.frontier.pending & (self.frontier.host_of == host_id))
        for uid in ids.tolist():
            self.frontier.drop(uid)
        self.stats[f"skipped/{reason}"] += len(ids)

    # ------------------------------------------------------------------ what next
    def budget_left(self) -> bool:
        return self.started_pages < self.config.max_pages

    def has_pending(self) -> bool:
        if self.extra:
            return True
        return self.budget_left() and self.frontier.pending_count() > 0 and not self.stalled

    def next_request(self, now: float) -> Any | None:
        """The next request politeness allows now, or None (then ``wake_at`` is set)."""
        assert self.factory is not None
        self.wake_at = None
        self.stalled = False
        if self.batch.due():
            self.batch.commit()
        if self.extra:
            return self.extra.popleft()
        if not self.budget_left():
            return None
        ready: list[int] = []
        earliest = float("inf")
        for host_id in self.frontier.pending_hosts():
            slot = self._slot(host_id, now)
            robots = self.robots.hosts[host_id]
            if robots.state is RobotsState.UNAVAILABLE:
                self._drop_host(host_id, "robots_unavailable")
                continue
            if self.pages_per_host[host_id] >= self.config.max_pages_per_host:
                self._drop_host(host_id, "host_page_limit")
                continue
            at = self.politeness.ready_at(slot)
            if at is None or robots.state is RobotsState.FETCHING:
                continue
            if at > now:
                earliest = min(earliest, at)
                continue
            if robots.state is RobotsState.NEEDED:
                self.robots.fetching(host_id)
                self.politeness.started(slot, now)
                meta = {"websift_robots": host_id, "websift_host": host_id, "websift_t0": now}
                return self.factory.robots_request(slot.origin + ROBOTS_PATH, meta)
            ready.append(host_id)
        while ready:
            uid = self.frontier.select(ready)
            if uid is None:
                break
            url = self.frontier.take(uid)
            host_id = int(self.frontier.host_of[uid])
            depth = int(self.frontier.depth_of[uid])
            reason = self.judge(url, depth)
            if reason is not None:  # pending from an earlier run with a different scope
                self.stats[f"skipped/scope_{reason}"] += 1
                continue
            decision = self.robots.decide(host_id, url)
            if not decision.allowed:
                self.recorder.disallowed(uid, decision)
                continue
            return self._page_request(uid, url, host_id, depth, now)
        if earliest < float("inf"):
            self.wake_at = earliest
        waiting = any(s.in_flight for s in self.politeness.slots.values()) or any(
            r.state is RobotsState.FETCHING for r in self.robots.hosts.values()
        )
        self.stalled = self.wake_at is None and not waiting and self.frontier.pending_count() > 0
        if self.stalled:
            self.stats["skipped/stalled"] = self.frontier.pending_count()
        return None

    def _page_request(self, uid: int, url: str, host_id: int, depth: int, now: float) -> Any:
        assert self.factory is not None
        slot = self._slot(host_id, now)
        self.politeness.started(slot, now)
        retry = self.tries[uid] > 0
        if not retry:
            self.started_pages += 1
            self.pages_per_host[host_id] += 1
        headers: dict[str, str] = {}
        if self.config.kind == KIND_RECRAWL:
            page = self.store.page(uid)
            if page is not None and page.etag:
                headers["If-None-Match"] = page.etag
            if page is not None and page.last_modified:
                headers["If-Modified-Since"] = page.last_modified
        meta = {
            "websift_id": uid,
            "websift_host": host_id,
            "websift_depth": depth,
            "websift_hops": self.redirect_hops.pop(uid, 0),
            "websift_t0": now,
            "download_slot": slot.origin,
        }
        return self.factory.page_request(url, meta, headers)

    # ------------------------------------------------------------------ results
    def release(self, meta: dict[str, Any], elapsed: float | None) -> None:
        """The request left the downloader: free its host's in-flight place (once)."""
        if meta.get("websift_released") or "websift_host" not in meta:
            return
        meta["websift_released"] = True
        slot = self.politeness.slots.get(int(meta["websift_host"]))
        if slot is not None:
            self.politeness.finished(slot, elapsed, time.time())

    def on_robots(self, meta: dict[str, Any], status: int, body: bytes) -> None:
        host_id = int(meta["websift_robots"])
        try:
            self._on_robots(host_id, status, body)
        except BaseException:
            # never leave the host waiting for an answer that was lost; the error propagates
            # (Scrapy counts it, the summary shows it as internal_error)
            self.robots.hosts[host_id].state = RobotsState.UNAVAILABLE
            raise

    def _on_robots(self, host_id: int, status: int, body: bytes) -> None:
        now = time.time()
        state = self.store.host_by_id(host_id)
        assert state is not None
        entry = self.robots.answered(state, status, body, now)
        slot = self._slot(host_id, now)
        self.politeness.set_crawl_delay(slot, self.robots.crawl_delay(host_id))
        self.politeness.save_into(slot, state)
        with self.store.transaction():
            self.store.save_host(state)
        self.stats["robots/fetched"] += 1
        if entry.state is RobotsState.UNAVAILABLE:
            self.stats["failure/robots_unavailable"] += 1

    def on_response(self, meta: dict[str, Any], f: Fetched) -> None:
        uid, host_id = int(meta["websift_id"]), int(meta["websift_host"])
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
            hops = int(meta.get("websift_hops", 0)) + 1
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

    def on_failure(self, meta: dict[str, Any], reason: str) -> None:
        now = time.time()
        if "websift_robots" in meta:
            self.on_robots(meta, 0, b"")
            self.stats[f"robots/{reason}"] += 1
            return
        if "websift_id" not in meta:
            self.stats[f"failure/{reason}"] += 1
            return
        uid = int(meta["websift_id"])
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
        elapsed = max(1e-9, time.time() - self.started_at)
        pages = self.done_pages
        errors = sum(v for k, v in self.stats.items() if k.startswith("failure/"))
        in_flight = sum(s.in_flight for s in self.politeness.slots.values())
        return {
            "pages": pages,
            "rate": pages / elapsed,
            "queue": self.frontier.pending_count(),
            "in_flight": in_flight,
            "errors": errors,
            "elapsed": elapsed,
        }

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
        }

    def close(self, reason: str) -> dict[str, Any]:
        """Persist every estimate and host, record the summary, close files (once)."""
        if self.closed:
            return {}
        self.closed = True
        self.batch.commit()
        with self.store.transaction():
            self.frontier.persist_all(self.store)
        for slot in self.politeness.slots.values():
            self.save_host(slot)
        summary = self.summary(reason)
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
