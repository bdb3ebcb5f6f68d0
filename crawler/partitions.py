"""Which crawler crawls which hosts: virtual partitions by host hash, leased in Redis.

Question: with N crawler processes alive, which of them fetches a given host's pages?  Answer
(OPIC paper, section 4.1, "Distributed crawling": the pages are partitioned over the crawlers,
each holding its part of the cash vector): a host belongs to one of ``P`` virtual partitions
by a stable hash of its host name and port (:func:`partition_of`), and each partition is held
by one live crawler under a lease in Redis.

The unit is the host (name and port, as the politeness slot), not the registrable domain:
politeness is per host, so a host must stay in one crawler, and nothing needs more than that;
a registrable domain would need the public-suffix list and would put every host of a large
site (each blog of a blog host) on one crawler.

Leases: a crawler registers in ``wsp:members`` (a sorted set scored by when its registration
expires, ``ttl`` seconds ahead) and renews it every ``ttl / 3`` seconds: one entry, so renewing
costs the same whatever the partitions held.  Partition ``i``'s preferred owner is the
``i mod N``-th live member in sorted order, so each crawler claims about ``P / N`` partitions
and the assignment moves only when members come or go.  ``wsp:lease:{i}`` holds the ID of the
partition's owner; its lease lasts as long as the owner's registration.  A crawler claims a
preferred partition that is free or whose holder is no longer alive (one script) and gives back
(after handing its pages over, crawler/mailbox.py) one it holds that now prefers another live
member; each renewal checks it still holds its leases.  A crawler that dies stops renewing:
its registration expires and the others claim its partitions.

A crawler's ID is its store's (kept in the store, crawler/mailbox.py), so the same command
started again on the same ``--data`` is the same member: it takes its own leases back, and the
member order, hence every preferred owner, is what it was.

Coming back after a coordinator restart: a Redis restarted from its append-only file still
holds every lease and registration, but no crawler could renew during the outage, so every
registration expires, and the first crawler started again would claim all the partitions and
fetch again the pages the others had read (their stores hold them, and without the mirror
nothing tells it).  So ``wsp:seen`` keeps each member's last renewal, and a lease whose holder
is not alive is left unclaimed, fetched by no one, while its holder is *expected back*: it
renewed before the coordinator started (``INFO``'s uptime, read by the claim script) and within
a lease of the last renewal any other member made before then (it was alive when the
coordinator stopped), and the coordinator has been up less than ``rejoin`` seconds
(``--partition-rejoin``, ``REJOIN_WAIT`` leases by default; the uptime is in whole seconds, so
a crawler that registered in the coordinator's first second and then died is waited for too).
The holder registering again keeps its leases; one that stays away has its partitions claimed,
as a dead crawler's, once the wait is over.  A fresh crawl (no holder) and a crawler dying
while the coordinator stays up (its last renewal after the coordinator started) are not
waited for: their partitions are claimed as soon as they are free or the holder's
registration has expired.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import redis
import redis.cluster

from websift.core.errors import WebsiftError
from websift.crawler import redis_address

# every key carries the hash tag {wsp}: on a Redis Cluster they share one slot, so the scripts
# and MULTIs that touch several of them (leases and members, streams and counters) run there
PREFIX = "{wsp}:"
MEMBERS = PREFIX + "members"
SEEN = PREFIX + "seen"  # member -> its last renewal (kept SEEN_KEEP seconds)
DEFAULT_PARTITIONS = 64
DEFAULT_LEASE = 6.0  # seconds a lease lives without renewal
REJOIN_WAIT = 10.0  # leases a coordinator restart's crawlers are waited for (module doc)
SEEN_KEEP = 86400.0  # seconds a member's last renewal is kept
COORDINATOR_TIMEOUT = 10.0  # seconds a socket connect or a call to the coordinator may take

# take the leases among KEYS that are free, held by this crawler (ARGV[1]) or held by a crawler
# no longer alive (its score in the members set ARGV[3] is below now, ARGV[2]) and not expected
# back (module doc: it renewed, by the seen set ARGV[4], before the coordinator started, by the
# server's clock and uptime, and within a lease, ARGV[5], of the last renewal any other member
# made before then, and the coordinator is up for less than ARGV[6] seconds); returns the
# positions of those taken, each followed by its former holder ('' if it was free), then the
# number left to a holder expected back
_CLAIM = """
local got = {}
local waited = 0
local looked = false
local started = 0
local last = nil
for i, key in ipairs(KEYS) do
  local holder = redis.call('GET', key)
  local alive = false
  if holder and holder ~= ARGV[1] then
    local score = redis.call('ZSCORE', ARGV[3], holder)
    alive = score and tonumber(score) > tonumber(ARGV[2])
    if not alive and not looked then
      looked = true
      local info = redis.call('INFO', 'server')
      local uptime = tonumber(string.match(info, 'uptime_in_seconds:(%d+)'))
      -- both in whole seconds: the end of the second it started in
      local clock = math.floor(tonumber(string.match(info, 'server_time_usec:(%d+)')) / 1e6)
      started = clock - uptime + 1
      if uptime < tonumber(ARGV[6]) then
        local before = redis.call('ZREVRANGEBYSCORE', ARGV[4], '(' .. started, '-inf',
                                  'WITHSCORES', 'LIMIT', 0, 2)
        for j = #before - 1, 1, -2 do
          if before[j] ~= ARGV[1] then last = tonumber(before[j + 1]) end
        end
      end
    end
    if not alive and last then
      local seen = redis.call('ZSCORE', ARGV[4], holder)
      if seen and tonumber(seen) < started and tonumber(seen) > last - tonumber(ARGV[5]) then
        alive = true
        waited = waited + 1
      end
    end
  end
  if not alive then
    redis.call('SET', key, ARGV[1])
    got[#got + 1] = i
    got[#got + 1] = holder or ''
  end
end
got[#got + 1] = waited
return got
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class PartitionError(WebsiftError):
    """The partition coordinator (Redis) cannot be used."""


def partition_key(url: str) -> str:
    """The host a URL's partition is chosen by: lower-case host name and port."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{host}:{port}"


def partition_of(url: str, partitions: int) -> int:
    """The virtual partition of a URL's host: a stable hash (blake2b, the same in every
    process and every run, unlike Python's ``hash``) modulo ``partitions``."""
    digest = hashlib.blake2b(partition_key(url).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions


def lease_key(partition: int) -> str:
    return f"{PREFIX}lease:{partition}"


def queue_mget(pipe: Any, keys: list[str]) -> bool:
    """MGET on a pipeline; a Redis Cluster's pipeline refuses MGET, so one GET a key there.
    Returns whether it split them (for :func:`take_mget`)."""
    if isinstance(pipe, redis.cluster.ClusterPipeline):
        for key in keys:
            pipe.get(key)
        return True
    pipe.mget(keys)
    return False


def take_mget(replies: list[Any], at: int, count: int, split: bool) -> list[Any]:
    """The ``count`` values :func:`queue_mget` queued, its first reply at ``replies[at]``."""
    return list(replies[at:at + count]) if split else list(replies[at])


def connect(url: str) -> Any:
    """A Redis client for the coordinator at ``url`` (crawler/redis_address.py: the password
    from the environment, as the shared frontier's), checked reachable: ``redis://HOST:PORT/DB``,
    or a Redis Cluster, ``redis+cluster://HOST:PORT,HOST:PORT,...`` (``rediss`` with TLS).  A
    failed call is not tried again on one Redis: the crawler counts the coordinator lost."""
    return redis_address.connect(url, what="partition coordinator", error=PartitionError,
                         timeout=COORDINATOR_TIMEOUT)


def new_member_id() -> str:
    """A new crawler ID: the machine's name and a random part."""
    return f"{os.uname().nodename}-{uuid.uuid4().hex[:12]}"


class Leases:
    """This crawler's membership and partition leases (module doc)."""

    def __init__(self, client: Any, partitions: int, ttl: float = DEFAULT_LEASE,
                 clock: Callable[[], float] = time.time, *, me: str | None = None,
                 rejoin: float | None = None) -> None:
        self.client = client
        self.partitions = partitions
        self.ttl = ttl
        self.clock = clock
        self.me = me or new_member_id()
        # seconds after a coordinator restart its crawlers are waited for (module doc)
        self.rejoin = REJOIN_WAIT * ttl if rejoin is None else rejoin
        self.waiting = 0  # preferred partitions left to a holder expected back (last claim)
        self.owned: set[int] = set()
        # given back, their hand-over not yet committed and sent: still leased, not crawled
        self.releasing: set[int] = set()
        self.renewed_at = float("-inf")
        self._claim = client.register_script(_CLAIM)
        self._release = client.register_script(_RELEASE)
        self.members: list[str] = []
        # partition -> the crawler it was taken from when that one was no longer alive
        self.taken_from: dict[int, str] = {}
        self.lost: set[int] = set()  # leases another crawler took from this one (heartbeat)

    def due(self) -> bool:
        return self.clock() - self.renewed_at >= self.ttl / 3

    def heartbeat(self) -> list[str]:
        """Renew the registration (one sorted-set entry: the partition leases live as long as
        it does) and check the leases held; returns the live members (sorted)."""
        now = self.clock()
        pipe = self.client.pipeline(transaction=False)
        pipe.zadd(MEMBERS, {self.me: now + self.ttl})
        pipe.zremrangebyscore(MEMBERS, "-inf", now)
        pipe.zrange(MEMBERS, 0, -1)
        pipe.zadd(SEEN, {self.me: now})
        pipe.zremrangebyscore(SEEN, "-inf", now - SEEN_KEEP)
        mine = sorted(self.owned | self.releasing)
        split = queue_mget(pipe, [lease_key(p) for p in mine]) if mine else False
        replies = pipe.execute()
        members = replies[2]
        if mine:
            held = {p for p, h in zip(mine, take_mget(replies, 5, len(mine), split),
                                      strict=True) if h == self.me}
            # taken by another while this crawler was not seen alive (a renewal later than
            # the lease): crawled no more, and its pages go to the new owner (take_lost)
            self.lost |= self.owned - held
            self.owned &= held
            self.releasing &= held
        self.renewed_at = now
        self.members = sorted(members)
        return self.members

    def take_lost(self) -> list[int]:
        """The partitions lost since the last call (sorted)."""
        lost, self.lost = sorted(self.lost), set()
        return lost

    def preferred(self, partition: int) -> str | None:
        if not self.members:
            return None
        return self.members[partition % len(self.members)]

    def plan(self) -> tuple[list[int], list[int]]:
        """(partitions to claim, partitions to give back) under the current members."""
        claim = [p for p in range(self.partitions)
                 if p not in self.owned and self.preferred(p) == self.me]
        give = sorted(p for p in self.owned if self.preferred(p) != self.me)
        claim = [p for p in claim if p not in self.releasing]
        return claim, give

    def claim(self, partitions: list[int]) -> list[int]:
        """Take those of ``partitions`` that are free or held by a dead crawler not expected
        back (one script run); returns those taken."""
        if not partitions:
            self.waiting = 0
            return []
        *got, waited = self._claim(keys=[lease_key(p) for p in partitions],
                                   args=[self.me, self.clock(), MEMBERS, SEEN, self.ttl,
                                         self.rejoin])
        self.waiting = int(waited)
        taken = [partitions[int(i) - 1] for i in got[::2]]
        for p, holder in zip(taken, got[1::2], strict=True):
            if holder and holder != self.me:
                self.taken_from[p] = str(holder)
        self.owned.update(taken)
        return taken

    def gone(self, member: str) -> bool:
        """Whether a crawler is no longer registered (dead, not late)."""
        score = self.client.zscore(MEMBERS, member)
        return score is None or float(score) < self.clock()

    def give_back(self, partition: int) -> None:
        """Stop crawling a partition; its lease is kept until :meth:`release`."""
        self.owned.discard(partition)
        self.releasing.add(partition)

    def release(self, partition: int) -> None:
        self.owned.discard(partition)
        self.releasing.discard(partition)
        self._release(keys=[lease_key(partition)], args=[self.me])

    def leave(self) -> None:
        """Give back every lease and the registration (a crawler that stops)."""
        for p in sorted(self.owned | self.releasing):
            self.release(p)
        pipe = self.client.pipeline(transaction=False)
        pipe.zrem(MEMBERS, self.me)
        pipe.zrem(SEEN, self.me)  # gone for good: not waited for after a coordinator restart
        pipe.execute()
