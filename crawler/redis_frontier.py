"""A frontier several crawler processes share: pending URLs and OPIC state in Redis.

Question: N crawler processes (on one or several machines) crawl one web; which URL does each
fetch next, so that every page is fetched once, no host is hit harder than by one crawler, and
OPIC's cash flow stays exact?

Answer (OPIC paper, section 4.1, "distributed crawl": each part of the cash vector lives with
its pages and links to other parts are buffered *money transfers*; section 4.3: several crawler
instances on one store).  Everything of one host lives in one Redis Cluster slot, under the hash
tag ``{h:<origin>}``; the globals under ``{g}``.  Each Lua script (``crawler/redis_lua/``,
loaded once with SCRIPT LOAD and run by EVALSHA) touches the keys of one slot only:

- ``{h:O}:p:<id>`` a page (URL, depth, base cash, seen dividend level, read/dead/focus flags,
  state queued/waiting/taken/idle, fetch and change counts, history); ``{h:O}:q:0..3`` its
  pending queues (sorted sets by key = base - seen: unread, unread focus, refresh, refresh
  focus); ``{h:O}:w`` read pages waiting for their refetch interval; ``{h:O}:t`` taken pages
  (owner crawler, run, time taken); ``{h:O}:lv`` the host's dividend levels, class sizes and the
  sum of its base cash, and ``fid``, the frontier's ID; ``{h:O}:ids`` URL -> global ID;
  ``{h:O}:lease``; ``{h:O}:host`` its politeness and robots.txt state; ``{h:O}:out`` transfers leaving it, ``{h:O}:ap`` transfers
  applied to it;
- ``{g}:lv`` format and version, the frontier's ID, the URL ID counter (and where it started,
  ``ids_above``), the first crawler's scope (one scope per frontier), the virtual page's cash;
  ``{g}:out``/``{g}:ap`` its transfers (dividends); ``{g}:wt`` class sizes per host (the
  dividend's weights), ``{g}:load`` pending/taken/waiting per host, ``{g}:hosts``,
  ``{g}:crawlers`` (heartbeats).

A frontier that lost its data (a Redis restarted empty, flushed, or holding another frontier)
is never written to: every script gets the frontier's ID as its first argument and refuses a
slot that lacks it (``prelude.lua``; the identity check rides on the scripts a crawler calls
anyway: no round trip per page), a reconnection to one Redis checks it
(``redis_admin.IdentityGuard``), and ``newid.lua`` refuses a counter at or below the highest
ID the crawler has met (a Redis restored from an older snapshot).  The crawler stops with its
batch committed (``data_lost``; exit 1).

A read (``read.lua``) debits the page, credits its children on the same host and writes one
transfer per child elsewhere and one to the virtual page in the host's outbox, in one script:
cash of pages + virtual page + transfers in flight is 1 at every moment
(``frontier_status``, crawler/redis_admin.py).
A transfer is applied by a script in the target's slot that remembers its ID for an hour (so a
redelivery, after a crash or by a second process, is a no-op), then forgotten by the source;
``{g}:outboxes`` indexes the outboxes that may hold transfers, swept by every crawler now and
then for those a crashed crawler left.  Dividends are lazy
levels per host and class, exactly as ``ranking.opic.LazyOpicState`` keeps them per crawl.

Commit order (nothing lost, nothing stored twice): a page is *taken* when its request goes out;
the crawler's SQLite batch holding the page commits first; then the buffered reads run (the
acknowledgement).  A crawler killed before its commit: the pages stay taken by its dead run and
go back to pending when the host's next lease holder finds them (its lease expired).  Killed
between commit and acknowledgement: the same crawler run again (same ``--data``) finds them
taken by its earlier run and acknowledges those its shard stored; only if it never comes back
are they fetched again by another crawler (the one window left, milliseconds wide).

Politeness across processes: a host is fetched by its lease holder only (``SET NX PX``, renewed
by a thread every third of ``--frontier-lease``; ``take.lua`` refuses a page to a caller that
no longer holds it, so a holder held up past its lease takes nothing more there, and a renewal
that fails is reported only for the lease it was sent for, not for the host leased again
since), so K in flight and the delay hold as in one process; the host's Crawl-delay, response-time average, back-off and robots.txt (text and age)
live in ``{h:O}:host`` and move with the lease; a new holder waits a full delay from the last
holder's release (from its own lease when the last holder died).  Each crawler holds at most its
fair share of the hosts with work (hosts / crawlers alive); hosts over it drain and go back.

Where it differs from one process: a reader does not know whether a child on another host is
dead, so it sends it a share, which that host passes on to the virtual page; a payout is split
over hosts by the class sizes they last reported (``{g}:wt``), exact when those are current;
history (``hi``) is kept per page but no importance estimate is written to the shards.
"""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import redis

from websift.core.cache import Cache
from websift.crawler import settings as S
from websift.crawler.errors import FrontierError, FrontierLost
from websift.crawler.redis_address import Client, error_reason
from websift.crawler.redis_admin import (
    GLV,
    LOST,
    G,
    IdentityGuard,
    batch,
    connect,
    host_tag,
    parse_address,
)
from websift.crawler.runs import scope_to_json
from websift.crawler.scope import ScopeConfig
from websift.ranking.opic import OpicParams
from websift.store.crawl_store import CrawlStore, HostState
from websift.store.schema import origin_of

SCRIPTS = ("add", "revive", "peek", "take", "read", "apply", "dividend", "credit_virtual", "pay",
           "requeue", "lease", "newid", "load")
MAY_BE_NEW = ("add", "apply")  # scripts that may meet a host with no keys yet (prelude.lua)
TAKE_NO_LEASE = -1  # take.lua: the caller does not hold the host's lease
META_FRONTIER = "frontier_id"  # the shard's meta: which frontier its URL IDs come from
META_CRAWLER = "frontier_crawler"  # the shard's crawler ID (stable across its runs)


class FrontierScript:
    """One Lua script of the frontier: called as redis-py's registered scripts are, it passes
    the frontier's ID first (every script checks its slot still holds that frontier)."""

    def __init__(self, script: Any, fid: str) -> None:
        self.script = script
        self.fid = fid

    def __call__(self, keys: list[str], args: list[Any], client: Client) -> Any:
        return self.script(keys=keys, args=[self.fid, *args], client=client)


def load_scripts(client: Client, fid: str) -> dict[str, FrontierScript]:
    """The Lua scripts, each with the shared prelude, registered (EVALSHA, loaded on first use)
    and bound to the frontier with the ID ``fid``."""
    folder = resources.files("websift.crawler") / "redis_lua"
    prelude = (folder / "prelude.lua").read_text()
    return {name: FrontierScript(client.register_script(
                f"local MAY_BE_NEW = {str(name in MAY_BE_NEW).lower()}\n" + prelude
                + (folder / f"{name}.lua").read_text()), fid)
            for name in SCRIPTS}


def scope_text(scope: ScopeConfig) -> str:
    """A scope's canonical form (JSON, keys and lists sorted): two crawls have one scope when
    these are equal."""
    value = {k: sorted(v) if isinstance(v, list) else v for k, v in scope_to_json(scope).items()}
    return json.dumps(value, sort_keys=True)


def scope_difference(mine: str, theirs: str) -> str:
    """What differs between two canonical scopes, for one line."""
    a, b = json.loads(mine), json.loads(theirs)
    parts = [f"{k} {a.get(k)!r} here, {b.get(k)!r} there"
             for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return "; ".join(parts)


# ---------------------------------------------------------------- transfers
def deliver(client: Client, scripts: dict[str, FrontierScript], source: str,
            now: float | None = None) -> int:
    """Deliver the money transfers waiting in ``source``'s outbox (``source`` a host tag or
    ``{g}``), and those they pass on (to the virtual page); returns how many.  Any process may
    deliver any outbox: a target applies a transfer once (it keeps the IDs it applied for
    ``FRONTIER_APPLIED_KEEP`` seconds), then the source forgets it."""
    now = time.time() if now is None else now
    keep = S.FRONTIER_APPLIED_KEEP
    done = 0
    sources = [source]
    while sources:
        src = sources.pop()
        out = client.hgetall(src + ":out")
        if not out:
            continue
        for tid, value in out.items():
            target, uid, amount = value.split("\t")
            if target == "D":  # a dividend: uid is the host tag, amount "to all, unread, focus"
                passed = scripts["dividend"](keys=[uid + ":lv"],
                                             args=[tid, now, keep, *amount.split(" ")],
                                             client=client)
                target = uid
            elif target == "":
                passed = scripts["credit_virtual"](keys=[GLV], args=[tid, amount, now, keep],
                                                   client=client)
            else:
                passed = scripts["apply"](keys=[target + ":lv"],
                                          args=[tid, uid, amount, now, keep], client=client)
            if int(passed) == 2 and target not in sources:
                sources.append(target)  # passed on to the virtual page from the target
        client.hdel(src + ":out", *out)
        done += len(out)
    return done


# ---------------------------------------------------------------- the frontier
@dataclass
class HostLease:
    origin: str
    host_id: int
    renewed: float
    pending: int = 0
    taken_here: int = 0  # pages this run took and has not acknowledged
    best: str = ""  # richest pending page at the last peek ('' none)
    best_cash: float = 0.0
    peeked: float = float("-inf")


@dataclass
class _Read:
    origin: str
    uid: int
    children: list[tuple[str, int]]
    dead: bool
    changed: bool | None
    at: float


def _safe(default: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A public method that turns a lost Redis into ``self.lost`` and ``default``."""
    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def inner(self: RedisFrontier, *args: Any, **kwargs: Any) -> Any:
            if self.lost is not None:
                return default() if callable(default) else default
            try:
                return fn(self, *args, **kwargs)
            except redis.RedisError as exc:
                self.lose(exc)
                return default() if callable(default) else default
        inner.__doc__ = fn.__doc__
        return inner
    return wrap


class RedisFrontier:
    """The :class:`crawler.frontier.Frontier` protocol over a shared Redis frontier."""

    shared = True

    def __init__(
        self,
        client: Client,
        store: CrawlStore,
        params: OpicParams | None = None,
        *,
        address: str = "",
        focus: Callable[[str], bool] | None = None,
        clock: Callable[[], float] = time.time,
        min_refetch_interval: float = S.MIN_REFETCH_INTERVAL,
        virtual_every: int = S.VIRTUAL_EVERY,
        lease_ttl: float = S.FRONTIER_LEASE_TTL,
        max_hosts: int = S.FRONTIER_MAX_HOSTS,
        scope: ScopeConfig | None = None,
        guard: IdentityGuard | None = None,
    ) -> None:
        self.client = client
        self.store = store
        self.address = address
        self.params = params or OpicParams()
        self.focus = focus
        self.clock = clock
        self.min_refetch_interval = min_refetch_interval
        self.virtual_every = max(1, virtual_every)
        self.lease_ttl = lease_ttl
        self.max_hosts = max_hosts
        self.lost: str | None = None
        self.data_lost = False  # the frontier's data is gone (not just unreachable)
        self.discovery_share: float | None = None
        self.crawler_id, self.frontier_id = self._identity(scope)
        if guard is not None:
            guard.expected = self.frontier_id  # checked again on every reconnection
        self.scripts = load_scripts(client, self.frontier_id)
        self.high = self.store.max_url_id()  # the highest URL ID this crawler has met
        self.run = uuid.uuid4().hex[:12]
        self.owner = f"{self.crawler_id}|{self.run}|"
        self.host_of: dict[int, int] = {}
        self.depth_of: dict[int, int] = {}
        self.leases: dict[str, HostLease] = {}
        self.by_host_id: dict[int, str] = {}
        self.shunned: set[str] = set()  # hosts this run dropped (robots unavailable, limits)
        self.draining: set[str] = set()  # hosts over this crawler's share, given back when idle
        self.ids: Cache[str, int] = Cache(S.URL_CACHE_SIZE)
        self.origin_of: dict[int, str] = {}  # every URL this run met: its origin
        self.known: set[int] = set()
        self.read_flag: dict[int, bool] = {}
        self.urls: dict[int, str] = {}  # taken pages: their URL
        self.adds: list[tuple[str, int, str, int, int]] = []
        self.reads: list[_Read] = []
        self.reads_since_virtual = 0
        self.pay_due = False
        self.hosts_seen: set[str] = set()
        self.load: dict[str, tuple[int, int, int]] = {}
        self.load_at = float("-inf")
        self.maintained = float("-inf")
        self.swept = clock()
        self.counters: dict[str, int] = {"acked": 0, "stale_acks": 0, "duplicate_acks": 0,
                                         "requeued": 0, "reconciled": 0, "leases_lost": 0,
                                         "transfers": 0}
        self.started = clock()
        # per host the class sizes and load its last script reported, for {g}:wt and {g}:load
        self._dirty_counts: dict[str, tuple[str, str]] = {}
        # the session's: a host was leased (drop cached slot/robots; politeness starts from
        # the given last start); a host's requests in flight
        self.on_lease: Callable[[int, float], None] | None = None
        self.busy: Callable[[int], bool] = lambda host_id: False
        # Leases are renewed (and the heartbeat written) by a thread of their own, so a busy
        # reactor (a long parse, a slow commit) never lets a held host's lease expire.
        self.lost_leases: list[HostLease] = []
        self.renew_error: redis.RedisError | None = None
        self._stop = threading.Event()
        self.heartbeat()
        self._renewer = threading.Thread(target=self._renew_loop, name="frontier-leases",
                                         daemon=True)
        self._renewer.start()

    def _renew_loop(self) -> None:
        value, ttl_ms = self._lease_value(), int(self.lease_ttl * 1000)
        while not self._stop.wait(self.lease_ttl / 3):
            try:
                for origin, lease in list(self.leases.items()):
                    ok = self.scripts["lease"](keys=[host_tag(origin) + ":lv"],
                                               args=[value, ttl_ms], client=self.client)
                    # lost only if it is still that lease: the reactor may have given the
                    # host back and leased it again while the script ran (a new lease)
                    if not ok and self.leases.get(origin) is lease:
                        self.lost_leases.append(lease)
                self.heartbeat()
            except redis.RedisError as exc:  # the reactor's next call stops the crawl
                self.renew_error = exc
                return

    # ------------------------------------------------------------------ identity
    def _identity(self, scope: ScopeConfig | None) -> tuple[str, str]:
        """This shard's crawler ID, and checks: the shard's IDs come from this frontier, and
        this crawl's scope is the one the frontier was started with (the first crawler
        records it; a link is judged by the scope of whoever finds it, so one frontier has
        one scope)."""
        fid = str(self.client.hget(GLV, "id"))
        mine = self.store.get_meta(META_FRONTIER)
        if mine is None and self.store.max_url_id() > 0:
            raise FrontierError("this data directory holds a crawl of its own URL IDs; give "
                                "each crawler of a shared frontier a fresh --data")
        if mine is not None and mine != fid:
            raise FrontierError(
                f"this data directory was crawled with frontier {mine[:8]}, which "
                f"{self.address or 'this Redis'} does not hold (it holds {fid[:8]}); its "
                f"URL IDs go up to {self.store.max_url_id()}: keep it as it is and go on with "
                "a fresh --data (see docs/several-machines.md, 'A lost frontier')")
        if scope is not None:
            text = scope_text(scope)
            self.client.hsetnx(GLV, "scope", text)
            theirs = str(self.client.hget(GLV, "scope"))
            if theirs != text:
                raise FrontierError(
                    f"this crawl's scope differs from the one the frontier {self.address} was "
                    f"started with ({scope_difference(text, theirs)}); one frontier has one "
                    "scope: give the same scope options, or use another frontier")
        cid = self.store.get_meta(META_CRAWLER) or uuid.uuid4().hex[:12]
        with self.store.transaction():
            self.store.set_meta(META_FRONTIER, fid)
            self.store.set_meta(META_CRAWLER, cid)
        return cid, fid

    def lose(self, exc: BaseException) -> None:
        if self.lost is not None:
            return
        reason = error_reason(exc)
        where = self.address or "Redis"
        if LOST in reason:
            self.data_lost = True
            self.lost = f"the frontier {where} lost its data: {reason.split(LOST, 1)[1].strip()}"
        else:
            self.lost = f"frontier {where} lost: {reason}"

    # ------------------------------------------------------------------ URL IDs
    def url_id(self, url: str) -> int:
        """The global ID of a URL (allocated once by the frontier, whoever asks first)."""
        hit = self.ids.get(url)
        if hit is not None:
            return hit
        origin = origin_of(url)
        tag = host_tag(origin)
        try:
            if origin not in self.hosts_seen:
                self.client.sadd(G + ":hosts", origin)
                self.hosts_seen.add(origin)
            got = self.client.hget(tag + ":ids", url)
            if got is None:
                new = int(self.scripts["newid"](keys=[GLV], args=[self.high],
                                                client=self.client))
                if self.client.hsetnx(tag + ":ids", url, new):
                    got = new
                else:
                    got = self.client.hget(tag + ":ids", url)
        except redis.RedisError as exc:
            self.lose(exc)
            raise FrontierLost(self.lost or "frontier lost") from None
        uid = int(got)
        self.high = max(self.high, uid)
        self.ids.put(url, uid)
        self.origin_of[uid] = origin
        return uid

    def prefetch_ids(self, urls: list[str]) -> None:
        """Look the IDs of ``urls`` up together (one pipeline; the new ones are allocated by
        :meth:`url_id` as they come).  A lost Redis is left for :meth:`url_id` to report."""
        wanted = list(dict.fromkeys(u for u in urls if self.ids.get(u) is None))
        if not wanted or self.lost is not None:
            return
        def queue(pipe: Any) -> None:
            for url in wanted:
                pipe.hget(host_tag(origin_of(url)) + ":ids", url)

        try:
            got = batch(self.client, queue)
        except redis.RedisError:
            return
        for url, uid in zip(wanted, got, strict=True):
            if uid is not None:
                self.ids.put(url, int(uid))
                self.origin_of[int(uid)] = origin_of(url)

    # ------------------------------------------------------------------ membership
    def is_known(self, uid: int) -> bool:
        return uid in self.known

    def add(self, uid: int, url: str, host_id: int, depth: int) -> bool:
        """Enter a URL into OPIC (sent with the next flush; adding a known page does nothing)."""
        if uid in self.known:
            return False
        self.known.add(uid)
        origin = origin_of(url)
        self.origin_of[uid] = origin
        focus = int(bool(self.focus(url))) if self.focus is not None else 0
        self.adds.append((origin, uid, url, depth, focus))
        return True

    @_safe(None)
    def revive(self, uid: int, url: str) -> None:
        """Queue a known URL again now (a seed given again, a retried fetch)."""
        self._flush_adds()
        origin = origin_of(url)
        self.known.add(uid)
        res = self.scripts["revive"](keys=[host_tag(origin) + ":lv"], args=[uid, self.owner],
                                     client=self.client)
        self._counts(origin, res[1:])
        lease = self.leases.get(origin)
        if lease is not None:
            lease.peeked = float("-inf")
            if uid in self.urls:
                lease.taken_here = max(0, lease.taken_here - 1)
                self.urls.pop(uid, None)

    def was_read(self, uid: int) -> bool:
        return self.read_flag.get(uid, False)

    def url(self, uid: int) -> str | None:
        return self.urls.get(uid)

    # ------------------------------------------------------------------ hosts and leases
    def _counts(self, origin: str, counts: list[Any]) -> None:
        """A script's counts (m0 m1 m2 pending taken waiting) for the globals' indexes."""
        m0, m1, m2, pending, taken, waiting = (int(x) for x in counts)
        self.load[origin] = (pending, taken, waiting)
        self._dirty_counts[origin] = (f"{m0} {m1} {m2}", f"{pending} {taken} {waiting}")
        lease = self.leases.get(origin)
        if lease is not None:
            lease.pending = pending

    def _publish_counts(self) -> None:
        if not self._dirty_counts:
            return
        weights = {host_tag(o): w for o, (w, _) in self._dirty_counts.items()}
        loads = {o: ld for o, (_, ld) in self._dirty_counts.items()}
        self.client.hset(G + ":wt", mapping=weights)
        self.client.hset(G + ":load", mapping=loads)
        self._dirty_counts = {}

    def _maintain(self, force: bool = False) -> None:
        """Renew the leases, give back idle hosts, lease more, refresh the global load."""
        now = self.clock()
        if not force and now - self.maintained < S.FRONTIER_MAINTAIN_EVERY:
            return
        self.maintained = now
        self._flush_adds()
        self._publish_counts()
        self._refresh_load(now)
        share = self._fair_share(now)
        # over the share (crawlers joined): the excess hosts take nothing more, and go back
        # once their requests are done (a host kept busy would never be idle otherwise)
        excess = len(self.leases) - share
        self.draining = set(sorted(self.leases, key=lambda o: self.leases[o].taken_here)
                            [:max(0, excess)]) if excess > 0 else set()
        if self.renew_error is not None:
            raise self.renew_error
        while self.lost_leases:
            self._lost(self.lost_leases.pop())
        for origin, lease in list(self.leases.items()):
            if now - lease.renewed >= self.lease_ttl / 3:
                lease.renewed = now
                self._requeue(origin)  # taken pages of a holder gone since
            idle = (lease.taken_here == 0 and not self.busy(lease.host_id)
                    and not self._has_buffered(origin))
            if idle and (lease.pending == 0 or origin in self.draining
                         or origin in self.shunned):
                self._release(origin)  # done here, or more than this crawler's share
        self._lease_more(share)
        if now - self.swept >= S.FRONTIER_SWEEP_EVERY:  # what a crashed crawler left in flight
            self.swept = now
            for source in self.client.smembers(G + ":outboxes"):
                self._deliver(source)

    def _lost(self, lease: HostLease) -> None:
        """A lease another crawler may hold now: this run takes nothing more of its host."""
        if self.leases.get(lease.origin) is lease:
            del self.leases[lease.origin]
            self.counters["leases_lost"] += 1
            self.by_host_id.pop(lease.host_id, None)

    def _has_buffered(self, origin: str) -> bool:
        return any(r.origin == origin for r in self.reads)

    def _lease_value(self) -> str:
        return f"{self.crawler_id}|{self.run}"

    def _refresh_load(self, now: float) -> None:
        flat = self.scripts["load"](keys=[GLV], args=[], client=self.client)
        load: dict[str, tuple[int, int, int]] = {}
        for origin, value in zip(flat[::2], flat[1::2], strict=True):
            p, t, w = (int(x) for x in value.split())
            load[str(origin)] = (p, t, w)
        self.load = load
        self.load_at = now

    def _fair_share(self, now: float) -> int:
        """Hosts this crawler may hold: the hosts with work divided by the crawlers alive (so
        N crawlers spread over the hosts, and one that joins late gets its part), at most
        ``max_hosts``."""
        alive = 0
        for raw in self.client.hvals(G + ":crawlers"):
            rec = json.loads(raw)
            alive += not rec.get("stopped") and now - float(rec["heartbeat"]) < self.lease_ttl
        busy = sum(1 for p, t, _ in self.load.values() if p or t)
        return min(self.max_hosts, max(1, -(-busy // max(1, alive))))

    def _lease_more(self, share: int) -> None:
        """Lease hosts with pending pages nobody holds, up to this crawler's share."""
        room = share - len(self.leases)
        # a host with taken pages only and no lease: its holder died (requeued once leased)
        candidates = [o for o, (p, t, _) in self.load.items()
                      if (p > 0 or t > 0) and o not in self.leases and o not in self.shunned]
        if room <= 0 or not candidates:
            return
        random.shuffle(candidates)
        for origin in candidates:
            if len(self.leases) >= share:
                break
            tag = host_tag(origin)
            if self.client.set(tag + ":lease", self._lease_value(), nx=True,
                               px=int(self.lease_ttl * 1000)):
                self._leased(origin, self.clock())

    def _leased(self, origin: str, now: float) -> None:
        """A host is ours: deliver what its last holder left, take back its orphans, and hand
        its shared politeness and robots.txt state to this run's store row and session."""
        tag = host_tag(origin)
        with self.store.transaction():
            host_id = self.store.host_id(origin)
        lease = HostLease(origin, host_id, now)
        self.leases[origin] = lease
        self.by_host_id[host_id] = origin
        self.counters["transfers"] += deliver(self.client, self.scripts, tag)
        self._requeue(origin)
        shared = self.client.hgetall(tag + ":host")
        last_start = now  # the last holder may have died mid-request: a full delay from now
        if shared.get("state"):
            state = HostState(**{**json.loads(shared["state"]), "id": host_id, "origin": origin})
            if state.robots_body is not None:
                state.robots_body = bytes.fromhex(str(state.robots_body))
            with self.store.transaction():
                self.store.save_host(state)
            if shared.get("released") == "1":
                last_start = float(shared.get("last", "-inf"))
        self.client.hset(tag + ":host", "released", "0")
        if self.on_lease is not None:
            self.on_lease(host_id, last_start)

    def _requeue(self, origin: str) -> None:
        n, mine_before = self.scripts["requeue"](
            keys=[host_tag(origin) + ":lv"],
            args=[self.owner, self.crawler_id + "|"], client=self.client)
        self.counters["requeued"] += int(n)
        for raw in mine_before:
            self._reconcile(origin, int(raw))

    def _reconcile(self, origin: str, uid: int) -> None:
        """A page an earlier run of this crawler took: acknowledged if this shard stored it
        (that run committed, then died before its acknowledgement), else pending again."""
        page = self.store.page(uid)
        tag = host_tag(origin)
        if page is not None and page.status != "discovered" and page.fetched_at is not None:
            kids = self.store.followed_children(uid, lambda c: True)
            urls = self.store.urls_of(kids)
            children = [(host_tag(origin_of(u)), c) for c, u in urls.items()]
            self._run_read(_Read(origin, uid, [(t, c) for t, c in children],
                                 page.status in ("error", "disallowed"), None, self.clock()),
                           owner=f"{self.crawler_id}|")
            self.counters["reconciled"] += 1
        else:
            res = self.scripts["revive"](keys=[tag + ":lv"],
                                         args=[uid, f"{self.crawler_id}|"], client=self.client)
            self._counts(origin, res[1:])
            self.counters["requeued"] += 1

    def _release(self, origin: str) -> None:
        lease = self.leases.pop(origin)
        self.by_host_id.pop(lease.host_id, None)
        tag = host_tag(origin)
        self.client.hset(tag + ":host", mapping={"released": "1", "last": repr(self.clock())})
        self.scripts["lease"](keys=[tag + ":lv"], args=[self._lease_value(), 0],
                              client=self.client)

    def host_saved(self, state: HostState) -> None:
        """The session saved what it learned of a host: share it (the next holder's start)."""
        if self.lost is not None:
            return
        data = {k: v for k, v in vars(state).items() if k not in ("id", "origin")}
        if isinstance(data.get("robots_body"), bytes):
            data["robots_body"] = data["robots_body"].hex()
        try:
            self.client.hset(host_tag(state.origin) + ":host", "state", json.dumps(data))
        except redis.RedisError as exc:
            self.lose(exc)

    def drop(self, uid: int) -> None:
        """This run leaves a page it took (out of its scope): it stays taken until the host's
        next lease holder, whose scope may differ, puts it back."""
        origin = self.origin_of.get(uid)
        lease = None if origin is None else self.leases.get(origin)
        if uid in self.urls and lease is not None:
            lease.taken_here = max(0, lease.taken_here - 1)
        self.urls.pop(uid, None)

    def drop_host(self, host_id: int) -> int:
        """This run leaves a host alone (robots.txt unavailable, its page limit, its scope):
        its lease is given back once its requests in flight are done."""
        origin = self.by_host_id.get(host_id)
        if origin is None or origin in self.shunned:
            return 0
        self.shunned.add(origin)
        return self.leases[origin].pending

    # ------------------------------------------------------------------ selection
    @_safe(list)
    def pending_hosts(self) -> list[int]:
        """The leased hosts with pending pages (peeked at most every FRONTIER_PEEK_EVERY)."""
        self._maintain()
        now = self.clock()
        stale = [o for o, h in self.leases.items() if now - h.peeked >= S.FRONTIER_PEEK_EVERY]
        self._peek(stale, now)
        return [h.host_id for o, h in self.leases.items()
                if h.pending > 0 and o not in self.shunned and o not in self.draining]

    def _peek(self, origins: list[str], now: float) -> None:
        for origin in origins:
            res = self.scripts["peek"](keys=[host_tag(origin) + ":lv"], args=[now],
                                       client=self.client)
            lease = self.leases[origin]
            lease.best, lease.best_cash, lease.peeked = str(res[0]), float(res[1]), now
            self._counts(origin, res[2:])

    @_safe(None)
    def select(self, ready_hosts: Iterable[int]) -> int | None:
        """Greedy over the ready leased hosts: the richest pending page, taken (so it is ours)."""
        origins = [self.by_host_id[h] for h in ready_hosts if h in self.by_host_id]
        now = self.clock()
        while origins:
            self._peek([o for o in origins if self.leases[o].peeked == float("-inf")], now)
            live = [o for o in origins if self.leases[o].best]
            if not live:
                return None
            origin = max(live, key=lambda o: self.leases[o].best_cash)
            lease = self.leases[origin]
            uid = int(lease.best)
            lease.peeked = float("-inf")  # its top is ours now: peek again next time
            got = self.scripts["take"](keys=[host_tag(origin) + ":lv"],
                                       args=[uid, f"{self.owner}{now!r}", self._lease_value()],
                                       client=self.client)
            if got == TAKE_NO_LEASE:  # lapsed (this process was held up): the host is not ours
                self._lost(lease)
                origins.remove(origin)
                continue
            if not got:
                continue
            url, depth, read = str(got[0]), int(got[1]), got[2] == "1"
            with self.store.transaction():  # a URL another crawler discovered: our row for it
                self.store.add_url(url, depth, uid)
            self.urls[uid] = url
            self.read_flag[uid] = read
            self.host_of[uid] = lease.host_id
            self.depth_of[uid] = depth
            self.origin_of[uid] = origin
            self.high = max(self.high, uid)
            self.known.add(uid)
            lease.taken_here += 1
            return uid
        return None

    def take(self, uid: int) -> str:
        url = self.urls.get(uid)
        if url is None:
            raise KeyError(f"URL {uid} is not taken")
        return url

    # ------------------------------------------------------------------ reading
    def read(self, uid: int, children: Iterable[int], *, dead: bool = False,
             changed: bool | None = None) -> set[int]:
        """Buffer an OPIC read; it runs once the batch holding the page committed."""
        origin = self.origin_of.get(uid)
        if origin is None:
            return set()
        kids = [c for c in dict.fromkeys(children) if c != uid and c in self.origin_of]
        self.reads.append(_Read(origin, uid, [(host_tag(self.origin_of[c]), c) for c in kids],
                                dead, changed, self.clock()))
        self.reads_since_virtual += 1
        return {uid, *kids}

    def virtual_due(self) -> bool:
        return self.reads_since_virtual >= self.virtual_every

    def distribute_virtual(self) -> float:
        """Pay the virtual page out after the next flush (its amount is known only then)."""
        self.reads_since_virtual = 0
        self.pay_due = True
        return 0.0

    def _flush_adds(self) -> None:
        adds, self.adds = self.adds, []
        for origin, uid, url, depth, focus in adds:
            if origin not in self.hosts_seen:
                self.client.sadd(G + ":hosts", origin)
                self.hosts_seen.add(origin)
            res = self.scripts["add"](keys=[host_tag(origin) + ":lv"],
                                      args=[uid, url, depth, focus], client=self.client)
            self._counts(origin, res[1:])

    def _run_read(self, r: _Read, owner: str | None = None) -> int:
        args: list[Any] = [r.uid, owner or self.owner, int(r.dead),
                           -1 if r.changed is None else int(r.changed), repr(r.at),
                           repr(self.min_refetch_interval), S.REFETCH_UNCHANGED_STRETCH]
        for tag, c in r.children:
            args += [tag, c]
        res = self.scripts["read"](keys=[host_tag(r.origin) + ":lv"], args=args,
                                   client=self.client)
        self._counts(r.origin, res[1:])
        status = int(res[0])
        if status == 1:
            self.counters["acked"] += 1
        elif status == -1:
            self.counters["stale_acks"] += 1
        elif status == -3:
            self.counters["duplicate_acks"] += 1
        return status

    @_safe(None)
    def after_commit(self) -> None:
        """The batch committed: acknowledge its reads, deliver their transfers, pay dividends."""
        self._flush_adds()
        touched: set[str] = set()
        if self.reads:  # outboxes about to fill: indexed first, so a crash leaves them found
            self.client.sadd(G + ":outboxes", *{host_tag(r.origin) for r in self.reads})
        while self.reads:
            r = self.reads[0]
            self._run_read(r)
            self.reads.pop(0)  # only once Redis has it: a lost Redis leaves it for the rerun
            touched.add(r.origin)
            lease = self.leases.get(r.origin)
            if lease is not None and r.uid in self.urls:
                lease.taken_here = max(0, lease.taken_here - 1)
            self.urls.pop(r.uid, None)
            self.read_flag.pop(r.uid, None)
            self.host_of.pop(r.uid, None)
            self.depth_of.pop(r.uid, None)
        for origin in touched:
            self._deliver(host_tag(origin))
        if self.pay_due:
            self._pay()
        self._publish_counts()

    def _deliver(self, source: str) -> None:
        """Deliver one outbox; drop it from the index once empty."""
        self.counters["transfers"] += deliver(self.client, self.scripts, source)
        if not self.client.hlen(source + ":out"):
            self.client.srem(G + ":outboxes", source)

    def _pay(self) -> None:
        """Pay the virtual page out and deliver the dividends, under ``{g}:paylock``."""
        self._publish_counts()  # the weights the payout splits by
        if not self.client.set(G + ":paylock", self.owner, nx=True,
                               px=int(self.lease_ttl * 1000)):
            return  # another crawler is paying now
        try:
            self.counters["transfers"] += deliver(self.client, self.scripts, G)
            share = self.params.discovery_share if self.discovery_share is None \
                else self.discovery_share
            self.scripts["pay"](keys=[GLV], args=[self.params.focus_share, share],
                                client=self.client)
            self.counters["transfers"] += deliver(self.client, self.scripts, G)
            self.pay_due = False
        finally:
            if self.client.get(G + ":paylock") == self.owner:
                self.client.delete(G + ":paylock")

    @_safe(None)
    def persist(self, store: CrawlStore, ids: Iterable[int] = ()) -> None:
        """Adds go to Redis at once (harmless before the commit); reads wait for the commit."""
        self._flush_adds()
        if self.pay_due and not self.reads:
            self._pay()
        self._publish_counts()

    def persist_all(self, store: CrawlStore) -> None:
        self.persist(store)

    # ------------------------------------------------------------------ the run's end
    @_safe(0)
    def pending_count(self) -> int:
        """Work left for the crawl, over every crawler: pending and taken pages (a page taken
        elsewhere may still bring new links)."""
        self._maintain()
        return sum(p + t for p, t, _ in self.load.values())

    def poll_at(self, now: float) -> float | None:
        """When to look again while other crawlers hold the work (None: nothing left)."""
        if self.lost is not None:
            return None
        return now + S.FRONTIER_MAINTAIN_EVERY

    def schedule_explicit(self, priorities: Iterable[tuple[int, float]]) -> int:
        raise FrontierError("websift recrawl runs on the embedded frontier only")

    @_safe(None)
    def heartbeat(self) -> None:
        now = self.clock()
        elapsed = max(1e-9, now - self.started)
        record = {"run": self.run, "pid": os.getpid(), "machine": socket.gethostname(),
                  "started": self.started, "heartbeat": now, "pages": self.counters["acked"],
                  "pages_per_second": round(self.counters["acked"] / elapsed, 3),
                  "hosts": len(self.leases), "lease_ttl": self.lease_ttl, "stopped": False}
        self.client.hset(G + ":crawlers", self.crawler_id, json.dumps(record))

    def stats(self) -> dict[str, float]:
        pending = sum(p for p, _, _ in self.load.values())
        taken = sum(t for _, t, _ in self.load.values())
        waiting = sum(w for _, _, w in self.load.values())
        return {"shared": 1.0, "hosts_leased": float(len(self.leases)),
                "pending_unread": float(pending), "pending_refresh": 0.0,
                "taken": float(taken), "waiting_refresh": float(waiting),
                **{f"frontier_{k}": float(v) for k, v in self.counters.items()}}

    def close(self) -> None:
        """Acknowledge what is left, give the leases back, mark this crawler stopped."""
        self._stop.set()
        self._renewer.join()
        if self.lost is None:
            self.after_commit()
        if self.lost is not None:
            return
        try:
            for origin in list(self.leases):
                self._release(origin)
            self.heartbeat()
            raw = self.client.hget(G + ":crawlers", self.crawler_id)
            if raw:
                self.client.hset(G + ":crawlers", self.crawler_id,
                                 json.dumps({**json.loads(raw), "stopped": True}))
        except redis.RedisError as exc:
            self.lose(exc)


def open_frontier(address: str, store: CrawlStore, params: OpicParams, **kwargs: Any
                  ) -> RedisFrontier:
    guard = IdentityGuard()
    client = connect(address, guard=guard)
    try:
        return RedisFrontier(client, store, params, address=str(parse_address(address)),
                             guard=guard, **kwargs)
    except redis.RedisError as exc:
        raise FrontierError(f"cannot use the frontier at {address}: {error_reason(exc)}"
                            ) from None
