"""The frontier: which known URL to fetch next, chosen by Adaptive OPIC.

Question: among the URLs waiting to be fetched on hosts that politeness allows now, which one
next?  Answer (OPIC paper, section 3.1): the one with the most cash (Greedy); Random and Cycle
are there for comparison.

The frontier owns the crawl's :class:`ranking.opic.OpicState` and drives it:
- a URL enters OPIC (``add``) when an in-scope, followed link (or a seed) names it; from then on
  it is *known* (its ``urls.g_last`` is not NULL) and, while its status is ``discovered``, it is
  *pending*.  Out-of-scope URLs and targets of nofollow links only are stored but never enter
  OPIC, so "discovered and known to OPIC" is exactly the frontier a restarted crawl reloads;
- fetching a page is an OPIC *read* (section 2.1): its cash goes in equal shares to its followed
  in-scope children and the virtual page.  A page that fails, is disallowed or has no links is a
  dangling page: its whole cash goes to the virtual page;
- every ``virtual_every`` reads the virtual page gives its cash back (section 3.3 "Focused
  crawling and pages discovery"): part to unread pages (discovery), the rest to all live pages
  (refresh, which is what ``websift recrawl`` spends).

Persistence: each step's changed rows (``urls.cash``, ``history``, ``g_last``, ``importance``)
and the globals (meta ``opic_clock``, ``opic_virtual_cash``, ``opic_default_history``) are
written by :meth:`persist` inside the same transaction as the page, so the stored cash always sums
to the constant of Lemma 2.2 and a killed crawl reloads exactly the last committed state.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from crawler import settings as S
from ranking.opic import OpicParams, OpicState, Strategy
from store.crawl_store import DISCOVERED, CrawlStore

META_CLOCK = "opic_clock"
META_VIRTUAL = "opic_virtual_cash"
META_DEFAULT_HISTORY = "opic_default_history"
_DEAD_STATUSES = ("error", "disallowed", "out_of_scope")
DEFAULT_STRATEGY = Strategy(S.DEFAULT_STRATEGY)


class Frontier:
    """Pending URLs, their hosts, and the OPIC state that orders them."""

    def __init__(
        self,
        opic: OpicState | None = None,
        strategy: Strategy = DEFAULT_STRATEGY,
        *,
        virtual_every: int = S.VIRTUAL_EVERY,
        seed: int = S.RANDOM_SEED,
    ) -> None:
        self.opic = opic or OpicState(OpicParams())
        self.strategy = strategy
        self.virtual_every = max(1, virtual_every)
        self.rng = np.random.default_rng(seed)
        self.cycle_position = 0
        size = len(self.opic.cash)
        self.pending = np.zeros(size, dtype=bool)
        self.dead = np.zeros(size, dtype=bool)  # known but never worth cash again (failed)
        self.host_of = np.zeros(size, dtype=np.int64)
        self.depth_of = np.zeros(size, dtype=np.int32)
        self.urls: dict[int, str] = {}
        self.pending_per_host: dict[int, int] = {}
        self.reads_since_virtual = 0
        # Recrawl: an explicit priority per ID replaces the strategy (highest first), and URLs
        # discovered meanwhile enter OPIC without becoming pending (the next crawl takes them).
        self.priority: np.ndarray | None = None
        self.accept_new = True

    # ------------------------------------------------------------------ growth
    def _grow(self, size: int) -> None:
        self.opic._grow(size)
        new = len(self.opic.cash)
        if new <= len(self.pending):
            return
        for name in ("pending", "dead", "host_of", "depth_of"):
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
    ) -> Frontier:
        """The frontier and OPIC state as the store last committed them."""
        size = store.max_url_id() + 1
        opic = OpicState(params or OpicParams(), capacity=max(1024, size))
        frontier = cls(opic, strategy, virtual_every=virtual_every, seed=seed)
        opic.clock = float(store.get_meta(META_CLOCK, "0") or 0)
        opic.virtual_cash = float(store.get_meta(META_VIRTUAL, str(opic.virtual_cash)) or 0)
        opic.default_history = float(store.get_meta(META_DEFAULT_HISTORY, "0") or 0)
        rows = store.conn.execute(
            "SELECT id, url, host_id, depth, status, cash, history, g_last FROM urls "
            "WHERE g_last IS NOT NULL"
        )
        for uid, url, host_id, depth, status, cash, history, g_last in rows:
            opic.known[uid] = True
            opic.cash[uid] = cash
            opic.history[uid] = history
            opic.g_last[uid] = g_last
            frontier.host_of[uid] = host_id
            frontier.depth_of[uid] = depth
            if status == DISCOVERED:
                frontier._set_pending(uid, url, True)
            else:
                opic.reads[uid] = 1
                frontier.dead[uid] = status in _DEAD_STATUSES
        return frontier

    # ------------------------------------------------------------------ membership
    def _set_pending(self, uid: int, url: str, value: bool) -> None:
        if bool(self.pending[uid]) == value:
            return
        self.pending[uid] = value
        host = int(self.host_of[uid])
        if value:
            self.urls[uid] = url
            self.pending_per_host[host] = self.pending_per_host.get(host, 0) + 1
        else:
            self.urls.pop(uid, None)
            left = self.pending_per_host.get(host, 0) - 1
            if left > 0:
                self.pending_per_host[host] = left
            else:
                self.pending_per_host.pop(host, None)

    def is_known(self, uid: int) -> bool:
        return uid < len(self.opic.known) and bool(self.opic.known[uid])

    def add(self, uid: int, url: str, host_id: int, depth: int) -> bool:
        """Enter a URL into OPIC and the pending set (new pages: default history, sec. 3.3).

        Returns True if it was not known before.  A known page is left as it is.
        """
        if self.is_known(uid):
            return False
        self._grow(uid + 1)
        self.host_of[uid] = host_id
        self.depth_of[uid] = depth
        self.opic.add_pages([uid])
        if self.accept_new:
            self._set_pending(uid, url, True)
        return True

    def revive(self, uid: int, url: str) -> None:
        """Make a known, unread URL pending again (a seed given again, a retried fetch)."""
        self.dead[uid] = False
        self._set_pending(uid, url, True)

    def take(self, uid: int) -> str:
        """Remove a URL from the pending set as its request goes out; returns its URL."""
        url = self.urls[uid]
        self._set_pending(uid, url, False)
        return url

    def drop(self, uid: int) -> None:
        """Forget a pending URL for this run without reading it (its status stays discovered)."""
        if self.pending[uid]:
            self._set_pending(uid, self.urls[uid], False)

    def pending_count(self) -> int:
        return len(self.urls)

    def pending_hosts(self) -> list[int]:
        return list(self.pending_per_host)

    def url(self, uid: int) -> str | None:
        return self.urls.get(uid)

    # ------------------------------------------------------------------ selection (sec. 3.1)
    def select(self, ready_hosts: Iterable[int]) -> int | None:
        """The next pending URL on one of ``ready_hosts`` by the strategy, or None."""
        hosts = np.fromiter(ready_hosts, dtype=np.int64)
        if hosts.size == 0 or not self.urls:
            return None
        if hosts.size == 1:
            mask = self.pending & (self.host_of == hosts[0])
        else:
            mask = self.pending & np.isin(self.host_of, hosts)
        candidates = np.flatnonzero(mask)
        if candidates.size == 0:
            return None
        if self.priority is not None:
            prio = self.priority[candidates] if len(self.priority) > candidates.max() else None
            if prio is not None:
                return int(candidates[int(np.argmax(prio))])
        uid = self.opic.select(candidates, self.strategy, self.rng, self.cycle_position)
        if self.strategy is Strategy.CYCLE:
            self.cycle_position = uid + 1
        return uid

    # ------------------------------------------------------------------ reading (sec. 2.1)
    def read(self, uid: int, children: Iterable[int], *, dead: bool = False) -> set[int]:
        """One OPIC step for a fetched (or failed) page; returns the IDs whose state changed.

        ``children`` are the page's followed, in-scope out-links (already added).  A failed
        page (``dead``) gives all its cash to the virtual page and is left out of refresh.
        """
        if not self.is_known(uid):
            return set()
        kids = [c for c in children if self.is_known(c) and not self.dead[c]]
        self.opic.read(uid, kids)
        self.dead[uid] = dead
        self.reads_since_virtual += 1
        return {uid, *kids}

    def virtual_due(self) -> bool:
        return self.reads_since_virtual >= self.virtual_every

    def distribute_virtual(self) -> np.ndarray:
        """Hand the virtual page's cash back (sec. 3.3); returns the IDs whose cash changed."""
        self.reads_since_virtual = 0
        live = self.opic.known & ~self.dead
        unread = np.flatnonzero(live & (self.opic.reads == 0))
        everyone = np.flatnonzero(live)
        self.opic.distribute_virtual(unread, everyone)
        return everyone

    def known_ids(self) -> np.ndarray:
        return np.flatnonzero(self.opic.known)

    # ------------------------------------------------------------------ persistence
    def persist(self, store: CrawlStore, ids: Iterable[int] | np.ndarray) -> None:
        """Write the OPIC state of ``ids`` and the globals (inside the caller's transaction)."""
        idx = np.fromiter(ids, dtype=np.int64) if not isinstance(ids, np.ndarray) else ids
        if idx.size:
            importance = self.opic.importance(idx)
            store.conn.executemany(
                "UPDATE urls SET cash=?, history=?, g_last=?, importance=? WHERE id=?",
                zip(
                    self.opic.cash[idx].tolist(),
                    self.opic.history[idx].tolist(),
                    self.opic.g_last[idx].tolist(),
                    importance.tolist(),
                    idx.tolist(),
                    strict=True,
                ),
            )
        store.set_meta(META_CLOCK, repr(self.opic.clock))
        store.set_meta(META_VIRTUAL, repr(self.opic.virtual_cash))
        store.set_meta(META_DEFAULT_HISTORY, repr(self.opic.default_history))

    def persist_all(self, store: CrawlStore) -> None:
        """Refresh every known page's stored state and importance estimate."""
        self.persist(store, self.known_ids())
