"""The frontier: which known URL to fetch next, chosen by Adaptive OPIC, at a flat cost per page.

Question: among the URLs waiting to be fetched on hosts that politeness allows now, which one
next?  Answer (OPIC paper, section 3.1): the one with the most cash (Greedy), whether it was
never read (discovery) or read before (refresh): one cash flow schedules both (section 3.3,
"Focused crawling and pages discovery").  Random and Cycle are there for comparison.

The frontier owns the crawl's :class:`ranking.opic.LazyOpicState` and drives it:
- a URL enters OPIC (``add``) when an in-scope, followed link (or a seed) names it; from then on
  it is *known* (its ``urls.g_last`` is not NULL).  Out-of-scope URLs and targets of nofollow
  links only are stored but never enter OPIC;
- fetching a page is an OPIC *read* (section 2.1): its cash goes in equal shares to its followed
  in-scope children and the virtual page.  A page that fails for good or is disallowed is
  *dead*: its cash goes to the virtual page and it gets no more;
- every ``virtual_every`` reads the virtual page pays its cash out as dividends, in O(1): a
  ``discovery_share`` to unread pages, a ``focus_share`` to the focus pages (``focus``: URL
  regexes or a topic, crawler/focus.py), the rest to every live page (refresh).

Queues (cost per page O(log n), whatever the number of URLs known):
- per host, one heap per kind of page: unread, unread focus, read, read focus.  A heap's key is
  the page's base cash minus the dividend level it last saw, so a dividend moves every page of a
  heap alike and never reorders it; cash now = key + the levels of the heap's classes.  A child's
  share re-pushes the child (the old entry is left behind, recognised by its version stamp and
  dropped when it surfaces; a heap with more stale entries than live ones is rebuilt);
- a read page waits in a time-ordered queue until ``min_refetch_interval`` seconds after its
  fetch (stretched for pages seen unchanged, ``settings.REFETCH_UNCHANGED_STRETCH``), then
  joins its host's read heap as a refresh candidate;
- ``select(ready_hosts)``: Greedy compares the tops of the ready hosts' heaps, O(ready hosts +
  log n).  Random and Cycle gather the ready hosts' pending pages: O(pending on those hosts).
- ``websift recrawl`` is refresh only: its explicit schedule (``schedule_explicit``: the pages
  of ``crawler.recrawl.recrawl_schedule``, by their priority) replaces the queues, no unread
  page is picked, discovery share 0, and URLs discovered meanwhile enter OPIC unqueued.

Persistence: every page whose stored OPIC row changed (read, a child that got a share, a new
page, a class change) is *dirty*; :meth:`persist` writes those rows with the globals (clock,
virtual cash, dividend levels) through ``CrawlStore.save_opic_state`` inside the batch's
transaction.  A payout changes no row, so no step rewrites every row, and the stored cash (base
plus pending dividends) plus the virtual page's stays the constant of Lemma 2.2 after every
commit; a killed crawl reloads exactly the last committed state (``CrawlStore.opic_table``).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np

from websift.crawler import settings as S
from websift.ranking.opic import Dividend, LazyOpicState, OpicParams, Strategy
from websift.store.crawl_store import CrawlStore, HostState, OpicGlobals, OpicRows
from websift.store.schema import OPIC_DEAD, OPIC_FOCUS, OPIC_READ

DEFAULT_STRATEGY = Strategy(S.DEFAULT_STRATEGY)

# Where a known page is in this run.
IDLE, QUEUED, WAITING, TAKEN = 0, 1, 2, 3
# The heaps of a host: by the dividend classes their pages collect, and a recrawl's schedule.
UNREAD, UNREAD_FOCUS, REFRESH, REFRESH_FOCUS, EXPLICIT = range(5)
KINDS = 5
REBUILD_SLACK = 32  # a heap is rebuilt when its entries exceed 2 x live + this

Entry = tuple[float, int, int]  # (-key, URL ID, version stamp)


class HostQueue:
    """The heaps of one host and how many live (not stale) entries each holds."""

    __slots__ = ("heaps", "live")

    def __init__(self) -> None:
        self.heaps: list[list[Entry]] = [[] for _ in range(KINDS)]
        self.live = [0] * KINDS


class CrawlFrontier(Protocol):
    """What a crawl session and its recorder ask of a frontier: the embedded :class:`Frontier`
    (one process) or ``crawler.redis_frontier.RedisFrontier`` (several processes on Redis)."""

    shared: bool  # several crawlers share it (URL IDs, leases, OPIC state in Redis)
    lost: str | None  # why a shared frontier went away mid-crawl; None while it works
    discovery_share: float | None

    @property
    def host_of(self) -> Any: ...  # URL ID -> host ID, of a taken page at least
    @property
    def depth_of(self) -> Any: ...  # URL ID -> depth, of a taken page at least
    def url_id(self, url: str) -> int | None: ...  # the ID to store a new URL under (None: own)
    def prefetch_ids(self, urls: list[str]) -> None: ...  # url_id of these is asked next
    def is_known(self, uid: int) -> bool: ...
    def add(self, uid: int, url: str, host_id: int, depth: int) -> bool: ...
    def revive(self, uid: int, url: str) -> None: ...
    def take(self, uid: int) -> str: ...
    def drop(self, uid: int) -> None: ...  # leave a pending or taken URL for this run
    def drop_host(self, host_id: int) -> int: ...
    def pending_count(self) -> int: ...
    def pending_hosts(self) -> list[int]: ...
    def was_read(self, uid: int) -> bool: ...
    def select(self, ready_hosts: Iterable[int]) -> int | None: ...
    def schedule_explicit(self, priorities: Iterable[tuple[int, float]]) -> int: ...
    def read(self, uid: int, children: Iterable[int], *, dead: bool = False,
             changed: bool | None = None) -> set[int]: ...
    def virtual_due(self) -> bool: ...
    def distribute_virtual(self) -> float: ...
    def stats(self) -> dict[str, float]: ...
    def persist(self, store: CrawlStore, ids: Iterable[int] = ()) -> None: ...
    def persist_all(self, store: CrawlStore) -> None: ...
    def after_commit(self) -> None: ...  # the batch is durable (acknowledge its reads)
    def host_saved(self, state: HostState) -> None: ...  # politeness/robots learned of a host
    def poll_at(self, now: float) -> float | None: ...  # when to look again though idle
    def close(self) -> None: ...


class Frontier:
    """Pending URLs, their hosts, and the OPIC state that orders them."""

    shared = False
    lost: str | None = None

    def __init__(
        self,
        opic: LazyOpicState | None = None,
        strategy: Strategy = DEFAULT_STRATEGY,
        *,
        virtual_every: int = S.VIRTUAL_EVERY,
        seed: int = S.RANDOM_SEED,
        min_refetch_interval: float = S.MIN_REFETCH_INTERVAL,
        clock: Callable[[], float] = time.time,
        focus: Callable[[str], bool] | None = None,
        lookup: Callable[[int], str | None] | None = None,
    ) -> None:
        self.opic = opic or LazyOpicState(OpicParams())
        self.strategy = strategy
        self.virtual_every = max(1, virtual_every)
        self.rng = np.random.default_rng(seed)
        self.cycle_position = 0
        self.min_refetch_interval = min_refetch_interval
        self.clock = clock  # seconds; the session's (tests drive a fake one)
        self.focus = focus  # URL -> one of the focus pages?  (decided once, when added)
        # URL of an ID from the store; without one (tests, benchmarks) the frontier keeps the
        # URL of every page it is given
        self.lookup = lookup
        self._urls: dict[int, str] = {}
        size = len(self.opic.cash)
        self.host_of = np.zeros(size, dtype=np.int32)
        self.depth_of = np.zeros(size, dtype=np.int32)
        self.stamp = np.zeros(size, dtype=np.int64)  # bumped whenever a page's entries go stale
        self.where = np.zeros(size, dtype=np.int8)
        self.fetch_count = np.zeros(size, dtype=np.int32)
        self.change_count = np.zeros(size, dtype=np.int32)
        self.due = np.zeros(size, dtype=np.float64)  # a waiting page: when it becomes eligible
        # pages whose site says they did not change since their last fetch (a sitemap's lastmod,
        # crawler/signals.py) -> how much longer than its interval each waits (``defer``)
        self.deferred: dict[int, float] = {}
        self.queues: dict[int, HostQueue] = {}
        self.host_pending: dict[int, int] = {}  # hosts with queued pages -> how many
        self.queued = [0] * KINDS
        self.waiting: list[tuple[float, int, int]] = []  # (eligible at, URL ID, stamp)
        self.waiting_count = 0
        self.known_count = int(self.opic.known.sum())
        self.dirty: set[int] = set()  # pages whose stored OPIC row is behind
        self.reads_since_virtual = 0
        # Recrawl: an explicit priority per ID replaces the queues (highest first), unread
        # pages get no dividend, and URLs discovered meanwhile enter OPIC without being queued.
        self.explicit: dict[int, float] | None = None
        self.accept_new = True
        self.discovery_share: float | None = None  # None: the OPIC parameters'

    # ------------------------------------------------------------------ growth
    def _grow(self, size: int) -> None:
        self.opic._grow(size)
        new = len(self.opic.cash)
        if new <= len(self.where):
            return
        for name in ("host_of", "depth_of", "stamp", "where", "fetch_count", "change_count",
                     "due"):
            arr = getattr(self, name)
            grown = np.zeros(new, dtype=arr.dtype)
            grown[: len(arr)] = arr
            setattr(self, name, grown)

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(
        cls,
        store: CrawlStore,
        strategy: Strategy = DEFAULT_STRATEGY,
        params: OpicParams | None = None,
        *,
        virtual_every: int = S.VIRTUAL_EVERY,
        seed: int = S.RANDOM_SEED,
        min_refetch_interval: float = S.MIN_REFETCH_INTERVAL,
        clock: Callable[[], float] = time.time,
        focus: Callable[[str], bool] | None = None,
    ) -> Frontier:
        """The frontier and OPIC state as the store last committed them (in bulk: numpy over
        the stored arrays, one Python tuple per queued page and nothing else per URL)."""
        size = store.max_url_id() + 1
        opic = LazyOpicState(params or OpicParams(), capacity=max(1024, size))
        frontier = cls(
            opic, strategy, virtual_every=virtual_every, seed=seed,
            min_refetch_interval=min_refetch_interval, clock=clock, focus=focus,
            lookup=lambda uid: store.urls_of([uid]).get(uid),
        )
        saved = store.opic_globals(OpicGlobals(0.0, opic.virtual_cash, 0.0))
        opic.clock = saved.clock
        opic.virtual_cash = saved.virtual_cash
        opic.default_history = saved.default_history
        opic.levels = list(saved.levels)
        t = store.opic_table()
        ids = t.ids
        opic.known[ids] = True
        opic.cash[ids] = t.cash
        opic.history[ids] = t.history
        opic.g_last[ids] = t.g_last
        opic.level[ids] = t.level
        read = (t.flags & OPIC_READ) != 0
        dead = (t.flags & OPIC_DEAD) != 0
        opic.reads[ids] = read
        opic.dead[ids] = dead
        opic.focus[ids] = (t.flags & OPIC_FOCUS) != 0
        opic.recount()
        frontier.known_count = int(ids.size)
        frontier.host_of[ids] = t.host_id
        frontier.depth_of[ids] = t.depth
        frontier.fetch_count[ids] = t.fetch_count
        frontier.change_count[ids] = t.change_count
        frontier._queue_all(ids[t.discovered & ~read & ~dead])
        again = read & ~dead
        # a read page without a fetch time (not one the crawler stored) counts as fetched now
        fetched_at = np.nan_to_num(t.fetched_at[again], nan=clock())
        frontier._wait_all(ids[again], fetched_at + frontier._intervals(ids[again]))
        return frontier

    def _queue_all(self, ids: np.ndarray) -> None:
        """Queue unqueued pages ``ids`` at once (heapify per host and kind)."""
        if ids.size == 0:
            return
        self.stamp[ids] += 1
        self.where[ids] = QUEUED
        kinds = self._kinds(ids)
        hosts = self.host_of[ids].astype(np.int64)
        negkeys = -(self.opic.cash[ids] - self.opic.level[ids])
        order = np.lexsort((kinds, hosts))
        ids, kinds, hosts, negkeys = ids[order], kinds[order], hosts[order], negkeys[order]
        cut = np.flatnonzero((np.diff(hosts) != 0) | (np.diff(kinds) != 0)) + 1
        for lo, hi in zip([0, *cut.tolist()], [*cut.tolist(), ids.size], strict=True):
            host, kind = int(hosts[lo]), int(kinds[lo])
            hq = self._host_queue(host)
            heap = hq.heaps[kind]
            heap.extend(zip(negkeys[lo:hi].tolist(), ids[lo:hi].tolist(),
                            self.stamp[ids[lo:hi]].tolist(), strict=True))
            heapq.heapify(heap)
            hq.live[kind] += hi - lo
            self.queued[kind] += hi - lo
            self.host_pending[host] = self.host_pending.get(host, 0) + hi - lo

    def _wait_all(self, ids: np.ndarray, at: np.ndarray) -> None:
        """Put read pages ``ids`` in the time queue at once, eligible at ``at``."""
        if ids.size == 0 or not math.isfinite(self.min_refetch_interval):
            return
        self.stamp[ids] += 1
        self.where[ids] = WAITING
        self.due[ids] = at
        self.waiting.extend(zip(at.tolist(), ids.tolist(), self.stamp[ids].tolist(), strict=True))
        heapq.heapify(self.waiting)
        self.waiting_count += int(ids.size)

    # ------------------------------------------------------------------ kinds and keys
    def _kind(self, uid: int) -> int:
        if self.explicit is not None:
            return EXPLICIT
        return (REFRESH if self.opic.reads[uid] else UNREAD) + int(self.opic.focus[uid])

    def _kinds(self, ids: np.ndarray) -> np.ndarray:
        if self.explicit is not None:
            return np.full(ids.size, EXPLICIT, dtype=np.int64)
        return np.where(self.opic.reads[ids] > 0, REFRESH, UNREAD) + self.opic.focus[ids]

    def _offsets(self) -> tuple[float, float, float, float, float]:
        """What to add to a heap's key to get a page's cash now, by kind (the sums of the
        levels of its classes, as ``LazyOpicState.class_total`` adds them)."""
        lr, ld, lf = self.opic.levels
        return (lr + ld, lr + ld + lf, lr, lr + lf, 0.0)

    def _intervals(self, ids: np.ndarray) -> np.ndarray:
        """Seconds from a page's last fetch until it may be fetched again: the minimum,
        stretched by the share of its refetches that found it unchanged."""
        refetches = self.fetch_count[ids].astype(np.float64) - 1
        rate = np.where(refetches > 0, self.change_count[ids] / np.maximum(refetches, 1), 1.0)
        unchanged = 1.0 - np.clip(rate, 0.0, 1.0)
        return self.min_refetch_interval * (1.0 + S.REFETCH_UNCHANGED_STRETCH * unchanged)

    def _interval(self, uid: int) -> float:
        """:meth:`_intervals` of one page, on Python numbers, times (1 + its ``defer`` factor)."""
        refetches = int(self.fetch_count[uid]) - 1
        rate = min(1.0, int(self.change_count[uid]) / refetches) if refetches > 0 else 1.0
        base = self.min_refetch_interval * (1.0 + S.REFETCH_UNCHANGED_STRETCH * (1.0 - rate))
        return base * (1.0 + self.deferred.get(uid, 0.0))

    # ------------------------------------------------------------------ queue moves
    def _host_queue(self, host: int) -> HostQueue:
        hq = self.queues.get(host)
        if hq is None:
            hq = self.queues[host] = HostQueue()
        return hq

    def _push(self, uid: int, kind: int) -> None:
        """A new heap entry for a queued page (its older ones go stale)."""
        st = int(self.stamp[uid]) + 1
        self.stamp[uid] = st
        if kind == EXPLICIT:
            assert self.explicit is not None
            key = self.explicit[uid]
        else:
            key = float(self.opic.cash[uid]) - float(self.opic.level[uid])
        hq = self._host_queue(int(self.host_of[uid]))
        heap = hq.heaps[kind]
        heapq.heappush(heap, (-key, uid, st))
        if len(heap) > 2 * hq.live[kind] + REBUILD_SLACK:
            stamp = self.stamp
            heap[:] = [e for e in heap if stamp[e[1]] == e[2]]
            heapq.heapify(heap)

    def _leave(self, uid: int, to: int) -> None:
        """Take a page out of whatever queue holds it (its entries go stale); now ``to``."""
        was = self.where[uid]
        self.stamp[uid] += 1
        self.where[uid] = to
        if was == QUEUED:
            kind = self._kind(uid)
            host = int(self.host_of[uid])
            hq = self.queues[host]
            hq.live[kind] -= 1
            self.queued[kind] -= 1
            left = self.host_pending[host] - 1
            if left:
                self.host_pending[host] = left
            else:
                del self.host_pending[host]
            # the page taken is usually its heap's top: drop it now, so that Greedy's scan of
            # the tops (_richest) rarely meets a stale one
            heap, stamp = hq.heaps[kind], self.stamp
            while heap and stamp[heap[0][1]] != heap[0][2]:
                heapq.heappop(heap)
        elif was == WAITING:
            self.waiting_count -= 1

    def _enqueue(self, uid: int) -> None:
        """Queue a page on its host (or re-key it if queued already)."""
        kind = self._kind(uid)
        if self.where[uid] != QUEUED:
            self._leave(uid, QUEUED)
            host = int(self.host_of[uid])
            self._host_queue(host).live[kind] += 1
            self.queued[kind] += 1
            self.host_pending[host] = self.host_pending.get(host, 0) + 1
        self._push(uid, kind)

    def _wait(self, uid: int, at: float) -> None:
        self._leave(uid, WAITING)
        self.due[uid] = at
        self.waiting_count += 1
        heapq.heappush(self.waiting, (at, uid, int(self.stamp[uid])))
        if len(self.waiting) > 2 * self.waiting_count + REBUILD_SLACK:
            stamp, where = self.stamp, self.where
            self.waiting[:] = [e for e in self.waiting
                               if stamp[e[1]] == e[2] and where[e[1]] == WAITING]
            heapq.heapify(self.waiting)

    def _admit_due(self) -> None:
        """Read pages whose refetch interval has passed become refresh candidates."""
        waiting = self.waiting
        if not waiting:
            return
        now = self.clock()
        while waiting and waiting[0][0] <= now:
            _, uid, st = heapq.heappop(waiting)
            if self.stamp[uid] == st and self.where[uid] == WAITING:
                self._enqueue(uid)

    # ------------------------------------------------------------------ membership
    @property
    def dead(self) -> np.ndarray:
        """Per URL ID: failed for good (no cash, not fetched again)."""
        return self.opic.dead

    def is_known(self, uid: int) -> bool:
        return 0 <= uid < len(self.opic.known) and bool(self.opic.known[uid])

    def add(self, uid: int, url: str, host_id: int, depth: int) -> bool:
        """Enter a URL into OPIC and its host's queue (new pages: default history, sec. 3.3).

        Returns True if it was not known before.  A known page is left as it is.
        """
        if self.is_known(uid):
            return False
        if uid >= len(self.where):
            self._grow(uid + 1)
        self.host_of[uid] = host_id
        self.depth_of[uid] = depth
        self.opic.add_page(uid, bool(self.focus(url)) if self.focus is not None else False)
        self.known_count += 1
        self.dirty.add(uid)
        if self.lookup is None:
            self._urls[uid] = url
        if self.accept_new:
            self._enqueue(uid)
        return True

    def revive(self, uid: int, url: str) -> None:
        """Queue a known URL again now (a seed given again, a retried fetch); a dead page lives
        again.  In a recrawl only the pages of its schedule are queued."""
        if self.opic.dead[uid]:
            self.opic.revive(uid)
            self.dirty.add(uid)
        if self.where[uid] == QUEUED or (self.explicit is not None and uid not in self.explicit):
            return
        if self.lookup is None:
            self._urls[uid] = url
        self._enqueue(uid)

    def take(self, uid: int) -> str:
        """Remove a URL from its queue as its request goes out; returns its URL."""
        url = self.url(uid)
        if url is None:
            raise KeyError(f"URL {uid} is not pending")
        self._leave(uid, TAKEN)
        return url

    def drop(self, uid: int) -> None:
        """Forget a pending URL for this run without reading it (its status stays)."""
        if self.where[uid] == QUEUED:
            self._leave(uid, IDLE)

    def drop_host(self, host_id: int) -> int:
        """Forget the pending URLs of one host for this run; returns how many."""
        hq = self.queues.get(host_id)
        if hq is None:
            return 0
        stamp = self.stamp
        ids = [uid for heap in hq.heaps for _, uid, st in heap if stamp[uid] == st]
        for uid in ids:
            self.drop(uid)
        for heap in hq.heaps:
            heap.clear()
        return len(ids)

    def pending_count(self) -> int:
        """Pages that may be fetched now: unread ones and refresh candidates."""
        self._admit_due()
        return sum(self.queued)

    def pending_hosts(self) -> list[int]:
        self._admit_due()
        return list(self.host_pending)

    def pending_ids(self) -> list[int]:
        """Every queued page's ID, ascending (O(known URLs): for tests and reports)."""
        self._admit_due()
        return np.flatnonzero(self.where == QUEUED).tolist()

    def url(self, uid: int) -> str | None:
        """The URL of a pending page (None when it is not pending)."""
        if not (0 <= uid < len(self.where)) or self.where[uid] != QUEUED:
            return None
        if self.lookup is not None:
            return self.lookup(uid)
        return self._urls.get(uid)

    def was_read(self, uid: int) -> bool:
        """True when the page was fetched before: picking it is a refresh."""
        return self.is_known(uid) and bool(self.opic.reads[uid] > 0)

    def cash(self, uid: int) -> float:
        """A page's OPIC cash now (base plus pending dividends)."""
        return self.opic.cash_of_page(uid)

    def set_cash(self, uid: int, amount: float) -> None:
        """Set a page's cash, the difference taken from the virtual page (experiments, tests)."""
        self.opic.set_cash(uid, amount)
        self.dirty.add(uid)
        if self.where[uid] == QUEUED and self.explicit is None:
            self._push(uid, self._kind(uid))

    # ------------------------------------------------------------------ evidence (signals)
    def grant(self, uid: int, units: float) -> float:
        """Give a live page ``units`` times a live page's mean cash (1 / live pages) from the
        virtual page (``LazyOpicState.grant``, advances up to ``SIGNAL_ADVANCE_LIMIT``), and
        re-key it if queued.  The evidence of a sitemap or feed (crawler/signals.py).  Returns
        the cash moved."""
        if not self.is_known(uid) or self.explicit is not None:
            return 0.0
        live = max(1, self.opic.members[Dividend.REFRESH])
        moved = self.opic.grant(uid, units / live, S.SIGNAL_ADVANCE_LIMIT)
        if moved > 0:
            self.dirty.add(uid)
            if self.where[uid] == QUEUED:
                self._push(uid, self._kind(uid))
        return moved

    def retire(self, uid: int) -> None:
        """A read page not to be fetched again (a rel="canonical" variant): its cash goes to
        the virtual page and it leaves every class and queue (``LazyOpicState.kill``)."""
        if not self.is_known(uid):
            return
        self._leave(uid, IDLE)
        self.opic.kill(uid)
        self.dirty.add(uid)
        self.deferred.pop(uid, None)

    def hasten(self, uid: int, share: float) -> bool:
        """A read page waiting for its refetch interval waits ``share`` less of what is left
        (share 1: a refresh candidate now), and is no longer deferred.  Returns True when its
        due time moved."""
        if share > 0:
            self.deferred.pop(uid, None)
        if not self.is_known(uid) or self.where[uid] != WAITING or share <= 0:
            return False
        now = self.clock()
        left = max(0.0, float(self.due[uid]) - now)
        self._wait(uid, now + left * (1.0 - min(1.0, share)))
        return True

    def defer(self, uid: int, factor: float) -> bool:
        """A read page its site says has not changed since its last fetch (a trusted sitemap's
        lastmod that did not move) waits ``1 + factor`` times its refetch interval, now and
        after its next fetches, until ``hasten`` (the lastmod moved), a refetch that finds it
        changed, or ``factor`` 0 ends that.  As Nutch's adaptive fetch schedule lengthens the
        interval of a page seen unchanged, on the site's word instead of a wasted fetch.
        Returns True when the page is waiting (its due time follows the factor)."""
        if (not self.is_known(uid) or self.explicit is not None
                or not math.isfinite(self.min_refetch_interval)):
            return False
        old = self.deferred.pop(uid, 0.0)
        if factor > 0:
            self.deferred[uid] = factor
        if self.where[uid] != WAITING:
            return False
        if factor != old:
            plain = self._interval(uid) / (1.0 + max(0.0, factor))
            self._wait(uid, float(self.due[uid]) + plain * (max(0.0, factor) - old))
        return True

    # ------------------------------------------------------------------ selection (sec. 3.1)
    def select(self, ready_hosts: Iterable[int]) -> int | None:
        """The next pending URL on one of ``ready_hosts`` by the strategy, or None."""
        self._admit_due()
        pending = self.host_pending
        hosts = [h for h in ready_hosts if h in pending]
        if not hosts:
            return None
        if self.explicit is not None or self.strategy is Strategy.GREEDY:
            return self._richest(hosts)
        stamp = self.stamp
        cand = np.asarray(sorted(
            uid for h in hosts for heap in self.queues[h].heaps
            for _, uid, st in heap if stamp[uid] == st
        ), dtype=np.int64)
        if self.strategy is Strategy.RANDOM:
            return int(cand[int(self.rng.integers(cand.size))])
        ahead = cand[cand >= self.cycle_position]
        uid = int(ahead[0] if ahead.size else cand[0])
        self.cycle_position = uid + 1
        return uid

    def _richest(self, hosts: list[int]) -> int | None:
        """Greedy: the page with the most cash over the tops of the hosts' heaps (ties: the
        lowest ID).  The tops are compared as they are and only the winner's is checked: a
        stale winner is dropped and the scan repeated (rare: a page leaving its heap takes
        its stale top with it, and a re-keyed page's fresh entry outranks its stale one)."""
        offsets = self._offsets()
        kinds = [k for k in range(KINDS) if self.queued[k]]  # usually two: unread and read
        stamp = self.stamp
        queues = self.queues
        while True:
            best, best_uid, best_heap = -math.inf, -1, None
            for host in hosts:
                hq = queues[host]
                live, heaps = hq.live, hq.heaps
                for kind in kinds:
                    if not live[kind]:
                        continue
                    heap = heaps[kind]
                    top = heap[0]
                    value = offsets[kind] - top[0]
                    if value > best or (value == best and top[1] < best_uid):
                        best, best_uid, best_heap = value, top[1], heap
            if best_heap is None:
                return None
            if stamp[best_uid] == best_heap[0][2]:
                return best_uid
            while stamp[best_heap[0][1]] != best_heap[0][2]:
                heapq.heappop(best_heap)

    def schedule_explicit(self, priorities: Iterable[tuple[int, float]]) -> int:
        """Refresh only, in a given order (``websift recrawl``): the pages of ``priorities``
        (known, live) replace every queue, highest priority first; unread pages get no
        dividend and new URLs are not queued.  Returns how many pages were scheduled."""
        for hq in self.queues.values():
            for heap in hq.heaps:
                heap.clear()
        self.queues.clear()
        self.host_pending.clear()
        self.queued = [0] * KINDS
        self.waiting.clear()
        self.waiting_count = 0
        queued = np.flatnonzero(self.where != IDLE)
        self.stamp[queued] += 1
        self.where[queued] = IDLE
        self.explicit = {}
        self.accept_new = False
        self.discovery_share = 0.0
        for uid, priority in priorities:
            if self.is_known(uid) and not self.opic.dead[uid]:
                self.explicit[uid] = float(priority)
                self._enqueue(uid)
        return len(self.explicit)

    # ------------------------------------------------------------------ reading (sec. 2.1)
    def read(
        self, uid: int, children: Iterable[int], *, dead: bool = False, changed: bool | None = None
    ) -> set[int]:
        """One OPIC step for a fetched (or failed) page; returns the IDs whose state changed.

        ``children`` are the page's followed, in-scope out-links (already added).  A failed
        page (``dead``) gives all its cash to the virtual page and is left out of refresh.
        ``changed``: a refetch found new content (True) or the same (False); None for a first
        fetch.  A live page becomes a refresh candidate once its refetch interval has passed.
        """
        if not self.is_known(uid):
            return set()
        known, dead_pages = self.opic.known, self.opic.dead
        kids = [] if dead else [
            c for c in dict.fromkeys(children)
            if c != uid and 0 <= c < len(known) and known[c] and not dead_pages[c]
        ]
        self._leave(uid, TAKEN)
        self.opic.read(uid, kids)
        if dead:
            self.opic.kill(uid)
        else:
            self.fetch_count[uid] += 1
            self.change_count[uid] += bool(changed)
            if changed:  # the site's word that it had not changed was wrong
                self.deferred.pop(uid, None)
        self.dirty.add(uid)
        self.dirty.update(kids)
        if self.explicit is None:
            where = self.where
            for c in kids:  # a share raised their key: a fresh entry for the queued ones
                if where[c] == QUEUED:
                    self._push(c, self._kind(c))
        if dead or self.explicit is not None or not math.isfinite(self.min_refetch_interval):
            self._leave(uid, IDLE)
        else:
            self._wait(uid, self.clock() + self._interval(uid))
        self.reads_since_virtual += 1
        return {uid, *kids}

    def virtual_due(self) -> bool:
        return self.reads_since_virtual >= self.virtual_every

    def distribute_virtual(self) -> float:
        """Hand the virtual page's cash back (sec. 3.3) as dividends, O(1); returns the amount.
        No stored row changes: only the levels, saved with the globals."""
        self.reads_since_virtual = 0
        return self.opic.pay_virtual(self.discovery_share)

    def known_ids(self) -> np.ndarray:
        return np.flatnonzero(self.opic.known)

    def next_refresh_at(self) -> float | None:
        """When the next read page becomes a refresh candidate (None: none waits)."""
        waiting = self.waiting
        while waiting and not (self.stamp[waiting[0][1]] == waiting[0][2]
                               and self.where[waiting[0][1]] == WAITING):
            heapq.heappop(waiting)
        return waiting[0][0] if waiting else None

    def stats(self) -> dict[str, float]:
        """The frontier's figures now (for progress lines, the store's live stats, /metrics)."""
        self._admit_due()
        opic = self.opic
        lr, ld, lf = opic.levels
        at = self.next_refresh_at()
        return {
            "known": float(self.known_count),
            "live": float(opic.members[Dividend.REFRESH]),
            "unread": float(opic.members[Dividend.DISCOVERY]),
            "focus": float(opic.members[Dividend.FOCUS]),
            "pending_unread": float(self.queued[UNREAD] + self.queued[UNREAD_FOCUS]),
            "pending_refresh": float(self.queued[REFRESH] + self.queued[REFRESH_FOCUS]),
            "pending_scheduled": float(self.queued[EXPLICIT]),
            "waiting_refresh": float(self.waiting_count),
            "next_refresh_at": 0.0 if at is None else at,  # unix time; 0: none waits
            "virtual_cash": opic.virtual_cash,
            "clock": opic.clock,
            "level_refresh": lr,
            "level_discovery": ld,
            "level_focus": lf,
        }

    # ------------------------------------------------------------------ one process: no-ops
    def url_id(self, url: str) -> int | None:
        return None  # the store allocates

    def prefetch_ids(self, urls: list[str]) -> None:
        return None

    def after_commit(self) -> None:
        return None

    def host_saved(self, state: HostState) -> None:
        return None

    def poll_at(self, now: float) -> float | None:
        return None

    def close(self) -> None:
        return None

    # ------------------------------------------------------------------ persistence
    def persist(self, store: CrawlStore, ids: Iterable[int] | np.ndarray = ()) -> None:
        """Write the OPIC rows of the dirty pages (and of ``ids``) and the globals, inside the
        caller's transaction (the group commit's batch)."""
        extra = ids.tolist() if isinstance(ids, np.ndarray) else ids
        idx = np.fromiter(self.dirty.union(extra), dtype=np.int64)
        idx.sort()
        opic = self.opic
        flags = ((opic.reads[idx] > 0) * OPIC_READ + opic.dead[idx] * OPIC_DEAD
                 + opic.focus[idx] * OPIC_FOCUS).astype(np.int64)
        rows = OpicRows(idx, opic.cash[idx], opic.history[idx], opic.g_last[idx],
                        opic.importance(idx), opic.level[idx], flags)
        lr, ld, lf = opic.levels
        store.save_opic_state(rows, OpicGlobals(opic.clock, opic.virtual_cash,
                                                opic.default_history, (lr, ld, lf)))
        self.dirty.clear()

    def persist_all(self, store: CrawlStore) -> None:
        """Materialise every page's dividends and write every known page's state and
        importance estimate (at the end of a run: O(known URLs), once)."""
        self.opic.materialise_all()
        self.persist(store, self.known_ids())
