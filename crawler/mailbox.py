"""A partitioned crawl: the embedded frontier for the partitions this crawler owns, buffered
money transfers (Redis Streams) for the others.

Question: how do N crawler processes run one OPIC crawl without a round trip to a central
store per page?  Answer (OPIC paper, section 4.1, distributed crawling): each crawler holds the
cash of its own pages (its partitions, crawler/partitions.py) in its own store and runs the
embedded frontier and politeness for them; a page's share for a child another crawler owns is
a *money transfer*, summed per destination with the URL, and sent in batches.

- Outgoing: a read's shares for foreign children (and foreign seeds, with no cash) gather per
  partition; the group commit's ``before_commit`` writes each partition's batch into the store's
  ``partition_outbox`` in the same transaction as the OPIC state the cash left.  After a
  commit, once the oldest unsent batch is ``FLUSH_AGE`` old (or the crawler has nothing to
  fetch; with the mirror, after each commit), the batches waiting for one partition go as ONE
  stream entry, summed per URL (``XADD {wsp}:s:PARTITION``, with ``INCRBY {wsp}:sent`` and the
  mirror's changes in one MULTI), and the outbox rows are deleted.  A crawler killed between the two resends the outbox at its next
  start, one stream entry a batch (the owner skips a batch it applied: by batch ID).
- Incoming: the owner reads its partitions' streams (consumer group ``owner``), applies each
  batch once (URLs stored and frontiered, cash added to the pages) and records the batch ID in
  ``partition_applied`` in the same SQLite transaction, then ``XACK`` + ``XDEL``.
- Foreign URLs live in this store as dead OPIC pages with no cash (so their links are stored
  and a page's shares are computed as section 2.1 says); a read revives them for the step and
  takes their share out.
- Cash (Lemma 2.2 over the crawl): the first crawler to register (``{wsp}:genesis``) starts with
  the virtual page's 1, every other with 0; then the stored cash of every store (pages +
  virtual page + outbox) plus the transfers in the streams not yet applied is 1
  (:func:`check_cash`).
- Rebalancing: a crawler giving a partition back (a crawler joined, or this one stops before
  the crawl's end) sends its pages of that partition with their cash (the fetched ones flagged,
  so the new owner records them read and does not fetch them again), then releases the lease.
  A crawler that finds at a renewal that another took a lease of its (it renewed later than
  the lease lasts, and was taken for dead) sends that partition's pages and cash the same way;
  it picks no page under leases renewed more than ``FENCE`` of a lease ago without renewing
  first (held up on a loaded machine, it learns of the leases taken before it fetches).
- A dead crawler (killed, its machine gone; no disk is shared).  By default its pages and
  cash stay in its store: started again on the same ``--data`` it hands its pages of partitions
  now held by others over; while it stays dead, the pages it had queued are crawled only when
  another link names them, and a page it fetched may be fetched again.  Redis then holds no URL
  text but the batches in flight.  With ``--partition-mirror`` (``mirror``) nothing it queued
  is lost: every crawler mirrors the state of the partitions it owns in Redis, in the MULTI
  that follows each commit: ``{wsp}:q:P``
  (URL -> depth of each page known and not read) and ``{wsp}:f:P`` (the 64-bit fingerprints of
  the pages read).  A crawler claiming a partition takes the read fingerprints first (a page
  among them is never queued here, also when a batch waiting in the stream links to it), then
  applies the batches the former owner had read and not acknowledged (``XAUTOCLAIM``); the
  pending URLs are queued (with no cash) once the former holder stayed unregistered for
  ``ADOPT_GRACE`` leases (one only late registers again, and its fetches in
  flight come back as hand-overs flagged fetched).  A store started again hands its pages of
  partitions now held by others over.  The dead crawler's
  fetched pages and its cash stay in its store (:func:`check_cash` counts them with it).  A kill
  in the milliseconds between a commit and its MULTI leaves Redis one batch behind the store: the
  pages of that batch can be fetched again by the new owner (stored twice), nothing is lost.
- The end: a crawler with nothing pending stops only when every live member is idle, every
  batch sent was applied (``{wsp}:sent == {wsp}:applied``) and every partition is held by its
  preferred owner.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import redis

from websift.crawler.frontier import IDLE, QUEUED, TAKEN, Frontier
from websift.crawler.partitions import (
    DEFAULT_LEASE,
    MEMBERS,
    PREFIX,
    Leases,
    PartitionError,
    connect,
    lease_key,
    new_member_id,
    partition_of,
    queue_mget,
    take_mget,
)
from websift.store.crawl_store import CrawlStore
from websift.store.schema import META_VIRTUAL

GROUP = "owner"
SENT, APPLIED, IDLE_FLAGS = PREFIX + "sent", PREFIX + "applied", PREFIX + "idle"
GENESIS, CONFIG = PREFIX + "genesis", PREFIX + "config"
POLL = 0.1  # seconds between looks at the mailbox when this crawler has just run out of work
IDLE_POLL = 0.5  # ... doubling from POLL to this while it stays out of work and nothing comes
BUSY_POLL = 0.5  # ... while it has pages to fetch
FLUSH_AGE = 1.0  # seconds the oldest unsent batch waits for others (no mirror: module doc)
FLUSH_BATCHES = 256  # or until this many batches wait
ADOPT_GRACE = 3.0  # leases a crawler taken from stays gone before its mirror is adopted
FENCE = 2 / 3  # leases since the last renewal after which no page is picked before renewing
READ_COUNT = 64  # batches read per stream per look

Entry = list[Any]  # [url, cash, depth, fetched]


META_MEMBER = "partition_member"  # the store's crawler ID (crawler/partitions.py)
META_MEMBER_PLACE = "partition_member_place"  # the machine and path it was made for


def member_id(store: CrawlStore) -> str:
    """The crawler ID of a store: made once and kept in it, so the same command started again
    on the same ``--data`` is the same member (crawler/partitions.py); a copy of the store on
    another path or machine makes its own."""
    place = f"{os.uname().nodename}:{Path(store.path).resolve()}"
    me = store.get_meta(META_MEMBER)
    if me is None or store.get_meta(META_MEMBER_PLACE) != place:
        me = new_member_id()
        with store.transaction():
            store.set_meta(META_MEMBER, me)
            store.set_meta(META_MEMBER_PLACE, place)
    return me


def stream_key(partition: int) -> str:
    return f"{PREFIX}s:{partition}"


def pending_key(partition: int) -> str:
    """The partition's pending mirror: URL -> depth of each page known and not yet read."""
    return f"{PREFIX}q:{partition}"


def read_key(partition: int) -> str:
    """The partition's read mirror: the fingerprints of the pages read (or failed for good)."""
    return f"{PREFIX}f:{partition}"


def fingerprint(url: str) -> str:
    """A URL's 64-bit fingerprint (blake2b), as Redis keeps it in the read mirror."""
    return str(int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "big"))


@dataclass
class Counters:
    """Figures of this crawler's mailbox (for tests and the measure script)."""

    batches_sent: int = 0
    entries_sent: int = 0
    batches_applied: int = 0
    entries_applied: int = 0
    handed_over: int = 0
    read_elsewhere: int = 0  # pages not queued (or dequeued): a former owner read them


class PartitionedFrontier(Frontier):
    """The embedded frontier restricted to the partitions this crawler owns (module doc)."""

    store: CrawlStore
    leases: Leases
    client: Any

    def attach(self, client: Any, store: CrawlStore, partitions: int,
               ttl: float = DEFAULT_LEASE, mirror: bool = False, *,
               rejoin: float | None = None) -> None:
        self.client = client
        self.mirror = mirror  # --partition-mirror (module doc, "A dead crawler")
        self.unsent_since = time.monotonic()
        self.store = store
        self.partitions = partitions
        config = client.hsetnx(CONFIG, "partitions", partitions)
        held = int(client.hget(CONFIG, "partitions"))
        if not config and held != partitions:
            raise PartitionError(f"the crawl at this Redis has {held} partitions, not "
                                 f"{partitions} (--partitions)")
        self.leases = Leases(client, partitions, ttl, clock=time.time, me=member_id(store),
                             rejoin=rejoin)
        self.run = uuid.uuid4().hex[:8]  # this run's batch IDs differ from an earlier run's
        self.host_part: dict[int, int] = {}
        self.out: dict[int, dict[str, Entry]] = {}
        self.unsent: list[tuple[str, int, float, str]] = store.outbox()  # a killed run's
        self.acks: list[tuple[str, str]] = []
        self.told: set[int] = set()  # foreign URLs already sent this run
        # the mirror of the owned partitions (module doc, "A dead crawler"): changes gathered
        # in the open batch, those of the batches committed and not yet in Redis, and the
        # fingerprints of pages read by a former owner of a partition this crawler took
        self.m_pending: dict[int, dict[str, int]] = {}
        self.m_read: dict[int, set[str]] = {}
        self.m_ready: tuple[dict[int, dict[str, int]], dict[int, set[str]]] = ({}, {})
        self.read_elsewhere: set[str] = set()
        # partitions taken from a crawler not seen alive: partition -> (when to adopt their
        # mirror, the former holder); adopted only if the holder stayed gone (section below)
        self.adopt_at: dict[int, tuple[float, str]] = {}
        self.seq = 0
        self.counters = Counters()
        self.looked_at = self.checked_at = float("-inf")
        self.idle_poll = POLL
        self.flagged_idle = True  # as far as this crawler knows (an HSET to 0 is never skipped)
        self.idle_written = False  # its idle flag is 1 for sure: not written again
        self.done = False
        if store.get_meta(META_VIRTUAL) is None:  # a new store: the crawl's cash starts once
            if not client.set(GENESIS, self.leases.me, nx=True):
                self.opic.virtual_cash = 0.0
            with store.transaction():
                self.persist(store)
        self._busy_flag()  # not idle, whatever an earlier run of this member left
        self.leases.heartbeat()
        self._rebalance()
        self._hand_over_strays()
        if self.unsent:  # an earlier run's outbox: some may be in a stream already
            self._send(merge=False)

    # ------------------------------------------------------------------ partitions
    def _partition(self, uid: int) -> int:
        host = int(self.host_of[uid])
        p = self.host_part.get(host)
        if p is None:
            url = self.lookup(uid) if self.lookup is not None else self._urls.get(uid)
            if url is None:
                raise KeyError(f"URL {uid} has no URL text")
            p = self.host_part[host] = partition_of(url, self.partitions)
        return p

    def owns(self, uid: int) -> bool:
        return self._partition(uid) in self.leases.owned

    def _foreign(self, uid: int, host_id: int, depth: int, read: bool = False) -> None:
        """Know a URL of another partition: a dead OPIC page with no cash."""
        if uid >= len(self.where):
            self._grow(uid + 1)
        self.host_of[uid] = host_id
        self.depth_of[uid] = depth
        self.opic.add_page(uid)
        self.opic.kill(uid)
        if read:
            self.opic.reads[uid] = max(1, int(self.opic.reads[uid]))
        self.known_count += 1
        self.dirty.add(uid)

    def _queue_out(self, partition: int, url: str, cash: float, depth: int,
                   fetched: bool) -> None:
        box = self.out.setdefault(partition, {})
        entry = box.get(url)
        if entry is None:
            box[url] = [url, cash, depth, fetched]
        else:
            entry[1] += cash
            entry[2] = min(entry[2], depth)
            entry[3] = entry[3] or fetched

    # ------------------------------------------------------------------ the mirror
    def _url_of(self, uid: int) -> str | None:
        return self.lookup(uid) if self.lookup is not None else self._urls.get(uid)

    def _enqueue(self, uid: int) -> None:
        """Queue an owned page, or, when a former owner of its partition read it (the read
        mirror), know it as read elsewhere: it is not fetched again."""
        opic = self.opic
        # without the mirror there is nothing to record or check: no URL lookup per page
        if self.mirror and self.where[uid] != QUEUED and opic.reads[uid] == 0:
            url = self._url_of(uid)
            if url is not None:
                p = self._partition(uid)
                if p in self.leases.owned:
                    if self.read_elsewhere and fingerprint(url) in self.read_elsewhere:
                        opic.virtual_cash += self._give_cash(uid)
                        opic.reads[uid] = max(1, int(opic.reads[uid]))
                        self.counters.read_elsewhere += 1
                        return
                    self.m_pending.setdefault(p, {})[url] = int(self.depth_of[uid])
        super()._enqueue(uid)

    def _mirror_read(self, uid: int) -> None:
        if not self.mirror:
            return
        url = self._url_of(uid)
        if url is not None:
            p = self._partition(uid)
            if p in self.leases.owned:
                self.m_read.setdefault(p, set()).add(url)
                self.m_pending.get(p, {}).pop(url, None)

    def _flush_mirror(self, pipe: Any) -> bool:
        """Queue the committed batches' mirror changes on ``pipe``; False if there were none."""
        pending, done = self.m_ready
        if not pending and not done:
            return False
        for p, urls in pending.items():
            if urls:
                pipe.hset(pending_key(p), mapping=urls)
        for p, read in done.items():
            if read:
                pipe.hdel(pending_key(p), *read)
                pipe.sadd(read_key(p), *(fingerprint(u) for u in read))
        self.m_ready = ({}, {})
        return True

    def _learn_read(self, partition: int) -> None:
        """The pages a partition's former owners read (its read mirror): none is queued here
        from now on, and one this store had queued (a store started again after another
        crawler held its partitions) leaves the queue, its cash to the virtual page."""
        fresh = set(self.client.sscan_iter(read_key(partition), count=1000))
        fresh -= self.read_elsewhere
        if not fresh:
            return
        self.read_elsewhere |= fresh
        opic = self.opic
        queued = np.flatnonzero(self.where == QUEUED)
        queued = queued[opic.reads[queued] == 0]
        hosts = self.host_of[queued]
        # one partition lookup per host, not per page: a start claims every partition
        first = dict(zip(hosts.tolist(), queued.tolist(), strict=True))  # a URL ID per host
        here = [h for h, u in first.items() if self._partition_of_host(h, u) == partition]
        for uid in queued[np.isin(hosts, here)].tolist():
            url = self._url_of(uid)
            if url is not None and fingerprint(url) in fresh:
                self._leave(uid, IDLE)
                opic.virtual_cash += self._give_cash(uid)
                opic.reads[uid] = max(1, int(opic.reads[uid]))
                self.counters.read_elsewhere += 1
        self._commit_now()

    def _adopt(self, partition: int) -> None:
        """A partition just claimed: what its former owners knew of it (the mirror), so a
        dead owner's pages are crawled and none it read is fetched again.  Its pending pages
        come without cash: a dead owner's cash stays in its store."""
        self._learn_read(partition)
        urls = list(self.client.hscan_iter(pending_key(partition), count=1000))
        if not urls:
            return
        in_batch = self.store.in_transaction  # then the batch's commit sends the changes
        with self.store.transaction():
            for url, depth in urls:
                self._apply_entry([url, 0.0, int(depth), False])
            self.persist(self.store)
            if not in_batch:
                self.before_commit()
        if not in_batch:
            self.after_commit()

    # ------------------------------------------------------------------ the frontier's calls
    def add(self, uid: int, url: str, host_id: int, depth: int) -> bool:
        p = self.host_part[host_id] = partition_of(url, self.partitions)
        if p in self.leases.owned:
            if self.is_known(uid):
                self._own_again(uid, url)
            return super().add(uid, url, host_id, depth)
        if self.is_known(uid):
            return False
        self._foreign(uid, host_id, depth)
        return True

    def _own_again(self, uid: int, url: str) -> None:
        """A URL known as foreign whose partition this crawler now owns: queue it."""
        if self.opic.dead[uid] and self.opic.reads[uid] == 0:
            super().revive(uid, url)

    def revive(self, uid: int, url: str) -> None:
        p = self.host_part[int(self.host_of[uid])] = partition_of(url, self.partitions)
        if p in self.leases.owned:
            if self.opic.dead[uid] and self.opic.reads[uid] > 0:
                return  # a seed another crawler read (handed over flagged fetched): not again
            super().revive(uid, url)
        elif uid not in self.told:  # a seed of another partition: its owner learns of it
            self.told.add(uid)
            self._queue_out(p, url, 0.0, int(self.depth_of[uid]), False)

    def read(self, uid: int, children: Iterable[int], *, dead: bool = False,
             changed: bool | None = None) -> set[int]:
        """Section 2.1 with the shares of foreign children taken out as transfers."""
        if not self.is_known(uid):
            return set()
        opic = self.opic
        known, dead_pages = opic.known, opic.dead
        kids = list(dict.fromkeys(children))
        foreign: list[tuple[int, int]] = []
        if not dead:
            for c in kids:
                if c != uid and 0 <= c < len(known) and known[c] and dead_pages[c] \
                        and opic.reads[c] == 0:
                    p = self._partition(c)
                    if p not in self.leases.owned:
                        foreign.append((c, p))
                        opic.revive(c)  # for this step only: it takes its share
                    else:  # named while another owned its partition: this crawler's now
                        url = self.lookup(c) if self.lookup is not None else self._urls.get(c)
                        if url is not None:
                            super().revive(c, url)
        changed_ids = super().read(uid, kids, dead=dead, changed=changed)
        self._mirror_read(uid)
        for c, p in foreign:
            opic.materialise(c)
            share = float(opic.cash[c])
            opic.cash[c] = 0.0
            opic.kill(c)
            self.dirty.add(c)
            if share > 0 or c not in self.told:
                self.told.add(c)
                url = self.lookup(c) if self.lookup is not None else self._urls.get(c)
                if url is not None:
                    self._queue_out(p, url, share, int(self.depth_of[c]), False)
        if not self.owns(uid) and not opic.dead[uid]:  # handed over while in flight
            self._leave(uid, IDLE)
            url = self.lookup(uid) if self.lookup is not None else self._urls.get(uid)
            if url is not None:
                self._queue_out(self._partition(uid), url, self._give_cash(uid),
                                int(self.depth_of[uid]), True)
        return changed_ids

    def _give_cash(self, uid: int) -> float:
        """Take a page's cash (base and pending) out of this store's OPIC state."""
        opic = self.opic
        if opic.dead[uid]:
            return 0.0
        opic.materialise(uid)
        cash = float(opic.cash[uid])
        opic.cash[uid] = 0.0
        opic.kill(uid)
        self.dirty.add(uid)
        return cash

    # ------------------------------------------------------------------ commits
    def before_commit(self) -> None:
        """Inside the batch's transaction: each partition's transfers into the outbox; the
        batch's mirror changes wait for the commit."""
        pending, done = self.m_ready
        for p, urls in self.m_pending.items():
            pending.setdefault(p, {}).update(urls)
        for p, read in self.m_read.items():
            done.setdefault(p, set()).update(read)
            for url in read:
                pending.get(p, {}).pop(url, None)
        self.m_pending, self.m_read = {}, {}
        for partition, box in self.out.items():
            self.seq += 1
            batch = f"{self.leases.me}:{self.run}:{self.seq}"
            body = json.dumps(list(box.values()), separators=(",", ":"))
            cash = math.fsum(e[1] for e in box.values())
            self.store.save_outbox(batch, partition, cash, body)
            self.counters.entries_sent += len(box)
            if not self.unsent:
                self.unsent_since = time.monotonic()
            self.unsent.append((batch, partition, cash, body))
        self.out.clear()

    def after_commit(self) -> None:
        if self.lost is not None:
            return  # the outbox stays in the store for the next run
        try:
            self._after_commit()
        except redis.RedisError as exc:
            self._lose(exc)

    def _after_commit(self) -> None:
        # with the mirror, the commit's transfers and mirror changes at once: a crawler killed
        # after its commit has its links to other partitions and its partitions' state in
        # Redis; without, the transfers wait FLUSH_AGE for others to the same partitions
        if self._send_due():
            self._send()
        if self.acks:
            self._ack()
        # a partition handed over: its pages and every batch applied to them are out (sent,
        # acknowledged), so its next owner neither misses nor re-applies one
        for p in sorted(self.leases.releasing):
            self.leases.release(p)

    def _send_due(self) -> bool:
        if self.mirror:
            return bool(self.unsent or self.m_ready[0] or self.m_ready[1])
        return bool(self.unsent) and (time.monotonic() - self.unsent_since >= FLUSH_AGE
                                      or len(self.unsent) >= FLUSH_BATCHES
                                      or bool(self.leases.releasing))

    def _send(self, merge: bool = True) -> None:
        """The outbox's batches, merged per partition: one stream entry each (its ``b`` field
        lists the batch IDs it carries, applied together); with the committed mirror changes,
        in one MULTI.  ``merge=False``: one entry a batch, for an earlier run's outbox, whose
        last MULTI may have reached Redis without its reply reaching the crawler: an entry
        sent again then carries batches all applied or none, never some of both."""
        merged: dict[tuple[int, str], tuple[list[str], list[float], dict[str, Entry]]] = {}
        for batch, partition, cash, body in self.unsent:
            key = (partition, "" if merge else batch)
            ids, cashes, entries = merged.setdefault(key, ([], [], {}))
            ids.append(batch)
            cashes.append(cash)
            for entry in json.loads(body):
                old = entries.get(entry[0])
                if old is None:
                    entries[entry[0]] = entry
                else:
                    old[1] += entry[1]
                    old[2] = min(old[2], entry[2])
                    old[3] = old[3] or entry[3]
        pipe = self.client.pipeline(transaction=True)
        for (partition, _), (ids, cashes, entries) in merged.items():
            body = json.dumps(list(entries.values()), separators=(",", ":"))
            pipe.xadd(stream_key(partition), {"b": ",".join(ids), "c": repr(math.fsum(cashes)),
                                              "d": body})
        if merged:
            pipe.incrby(SENT, len(merged))
        if not self._flush_mirror(pipe) and not merged:
            return
        pipe.execute()
        self.counters.batches_sent += len(merged)
        if self.unsent:
            with self.store.transaction():
                self.store.sent([b for b, _, _, _ in self.unsent])
        self.unsent = []

    def _ack(self) -> None:
        by_stream: dict[str, list[str]] = {}
        for stream, entry_id in self.acks:
            by_stream.setdefault(stream, []).append(entry_id)
        pipe = self.client.pipeline(transaction=True)
        for stream, ids in by_stream.items():  # one XACK and one XDEL per stream
            pipe.xack(stream, GROUP, *ids)
            pipe.xdel(stream, *ids)
        pipe.incrby(APPLIED, len(self.acks))
        pipe.execute()
        self.acks = []

    def _commit_now(self) -> None:
        """Write and send what is gathered when no batch is open (else the batch's commit
        does it)."""
        if self.store.in_transaction:
            return
        with self.store.transaction():
            self.persist(self.store)
            self.before_commit()
        self.after_commit()

    # ------------------------------------------------------------------ incoming
    def _apply_entry(self, entry: Entry) -> None:
        url, cash, depth, fetched = str(entry[0]), float(entry[1]), int(entry[2]), entry[3]
        store, opic = self.store, self.opic
        uid, _ = store.add_url(url, depth)
        host_id = store.host_id_of_url(uid)
        self.host_part[host_id] = partition_of(url, self.partitions)
        if fetched:
            if not self.is_known(uid):
                self._foreign(uid, host_id, depth, read=True)
            elif opic.dead[uid]:  # known as another's: now known as read
                opic.reads[uid] = max(1, int(opic.reads[uid]))
                self.dirty.add(uid)
            else:
                self._leave(uid, IDLE)
                # its cash out first: the read count decides its classes (an unread page's
                # discovery dividends, the class it leaves), so it changes after
                cash += self._give_cash(uid)
                opic.reads[uid] = max(1, int(opic.reads[uid]))
            opic.virtual_cash += cash  # a page read elsewhere: its cash to the virtual page
            self._mirror_read(uid)
            return
        if not self.is_known(uid):
            super().add(uid, url, host_id, depth)
        elif opic.dead[uid] and opic.reads[uid] == 0:
            super().revive(uid, url)
        if opic.dead[uid]:  # failed for good here: the cash goes to the virtual page
            opic.virtual_cash += cash
            return
        opic.cash[uid] += cash
        self.dirty.add(uid)
        if self.where[uid] == QUEUED and self.explicit is None:
            self._push(uid, self._kind(uid))

    def _apply(self, messages: list[tuple[str, str, dict[str, str]]]) -> None:
        if not messages:
            return
        self._busy_flag()  # before the batches count as applied
        store = self.store
        with store.transaction():
            for stream, entry_id, fields in messages:
                batches = fields["b"].split(",")
                done = sum(1 for batch in batches if store.applied(batch))
                if done not in (0, len(batches)):  # never, as sent (_send): the cash is unknown
                    raise PartitionError(f"stream entry {stream} {entry_id} carries batches "
                                         f"applied here and batches not")
                if not done:  # its batches are recorded together
                    entries = json.loads(fields["d"])
                    for entry in entries:
                        self._apply_entry(entry)
                    for n, batch in enumerate(batches):
                        store.record_applied(batch, entry_id, float(fields["c"]) if n == 0
                                             else 0.0)
                    self.counters.batches_applied += len(batches)
                    self.counters.entries_applied += len(entries)
                self.acks.append((stream, entry_id))
            self.persist(store)
        if not store.in_transaction:  # no batch was open: committed now
            self._ack()

    def _read_mailbox(self) -> None:
        owned = sorted(self.leases.owned)
        if not owned:
            return
        reply = self.client.xreadgroup(GROUP, self.leases.me,
                                       {stream_key(p): ">" for p in owned}, count=READ_COUNT)
        messages = [(stream, entry_id, fields) for stream, entries in reply or []
                    for entry_id, fields in entries if fields]
        self._apply(messages)

    def _take_over(self, partition: int) -> None:
        """A partition just claimed: its consumer group, and the batches another (a dead or
        departed owner) read and did not acknowledge."""
        stream = stream_key(partition)
        if self.mirror:  # the pages its former owners read, before any batch is applied: a
            # link waiting in the stream to a page they read queues nothing here
            self._learn_read(partition)
        try:
            self.client.xgroup_create(stream, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        start = "0-0"
        while True:
            nxt, claimed, *_ = self.client.xautoclaim(stream, GROUP, self.leases.me, 0,
                                                      start_id=start, count=READ_COUNT)
            self._apply([(stream, i, f) for i, f in claimed if f])
            if nxt in ("0-0", b"0-0"):
                break
            start = nxt
        # everything sent before the claim (the former owner's hand-over among it) is applied
        # before a page of the partition is picked
        while True:
            reply = self.client.xreadgroup(GROUP, self.leases.me, {stream: ">"},
                                           count=READ_COUNT)
            messages = [(s, i, f) for s, entries in reply or [] for i, f in entries if f]
            if not messages:
                break
            self._apply(messages)
        holder = self.leases.taken_from.pop(partition, None)
        if not self.mirror:  # no mirror to read (--partition-mirror is on every crawler or none)
            return
        if holder is None:
            self._adopt(partition)
        else:  # late or dead: a late one's fetches in flight report back first
            self.adopt_at[partition] = (time.time() + ADOPT_GRACE * self.leases.ttl, holder)

    def _adopt_due(self) -> None:
        """The mirror of partitions taken from a crawler that stayed gone for the grace: a
        crawler only late (it registers again) reports its fetches itself and keeps none."""
        now = time.time()
        for p, (at, holder) in sorted(self.adopt_at.items()):
            if at <= now:
                del self.adopt_at[p]
                if p in self.leases.owned and self.leases.gone(holder):
                    self._adopt(p)

    # ------------------------------------------------------------------ rebalancing
    def _rebalance(self) -> None:
        claim, give = self.leases.plan()
        # a lease lost to another crawler (this one renewed too late and was taken for dead):
        # its pages and their cash go to the new owner as in a hand-over, else its queued pages
        # stay here, fetched by neither, and their cash with them
        give = sorted(set(give) | set(self.leases.take_lost()))
        if give:
            ids, parts = self._partitions_of_known()
            for p in give:
                if self.leases.due():
                    self.leases.heartbeat()
                self._hand_over(p, ids[parts == p])
        for p in self.leases.claim(claim):
            if self.leases.due():  # many take-overs outlast a lease: stay registered
                self.leases.heartbeat()
            if p in self.leases.owned:
                self._take_over(p)

    def _hand_over_strays(self) -> None:
        """A store started again whose partitions moved while it was away (killed, or Redis
        lost): its pages of partitions it does not hold go to their owners with their cash, the
        fetched ones flagged, and none of them is fetched here."""
        ids, parts = self._partitions_of_known()
        mine = ~self.opic.dead[ids] | (self.fetch_count[ids] > 0)
        for p in sorted(set(parts[mine].tolist()) - self.leases.owned):
            self._hand_over(int(p), ids[parts == p])

    def _partitions_of_known(self) -> tuple[np.ndarray, np.ndarray]:
        """Every known URL ID and its partition (one pass, a lookup per host)."""
        ids = np.flatnonzero(self.opic.known)
        hosts = self.host_of[ids]
        first = dict(zip(hosts.tolist(), ids.tolist(), strict=True))  # a URL ID per host
        part_of = {h: self._partition_of_host(h, u) for h, u in first.items()}
        parts = np.fromiter((part_of[h] for h in hosts.tolist()), dtype=np.int64,
                            count=ids.size)
        return ids, parts

    def _partition_of_host(self, host: int, uid: int) -> int:
        p = self.host_part.get(host)
        return self._partition(uid) if p is None else p

    def _hand_over(self, partition: int, ids: np.ndarray | None = None) -> None:
        """Give a partition back: its pages (``ids``: the known URLs of the partition) and
        their cash to its stream, then the lease."""
        if ids is None:
            known, parts = self._partitions_of_known()
            ids = known[parts == partition]
        self._busy_flag()
        self.leases.give_back(partition)
        opic = self.opic
        for uid in ids.tolist():
            if opic.dead[uid] and opic.reads[uid] == 0:
                continue  # a URL this crawler never owned
            url = self.lookup(uid) if self.lookup is not None else self._urls.get(uid)
            if url is None:
                continue
            fetched = bool(opic.reads[uid] > 0 or self.where[uid] == TAKEN)
            if self.where[uid] != TAKEN:
                self._leave(uid, IDLE)
                cash = self._give_cash(uid)
            else:
                cash = 0.0  # its read, once back, gives its cash away
            self._queue_out(partition, url, cash, int(self.depth_of[uid]), fetched)
            self.counters.handed_over += 1
        self._commit_now()  # when a batch is open, its commit sends them and releases
        if self.unsent and not self.store.in_transaction:
            self._send()
            self.after_commit()

    # ------------------------------------------------------------------ the crawl's end
    def _poll_every(self) -> float:
        """Seconds between two looks at the mailbox: each look is a Redis command (and, when
        out of work, the end check is eight), so a busy crawler looks every ``BUSY_POLL``, and
        one out of work backs off while it gets nothing (the end of the crawl, a wait for
        another crawler's links)."""
        every = BUSY_POLL if super().pending_count() else self.idle_poll
        return min(every, self.leases.ttl / 3)  # the renewals keep their cadence

    def _look(self) -> None:
        now = time.time()
        if self.leases.due():
            self.leases.heartbeat()
            self._rebalance()
        if now - self.looked_at < self._poll_every():
            return
        self.looked_at = now
        applied = self.counters.batches_applied
        self._read_mailbox()
        if self.counters.batches_applied != applied or super().pending_count():
            self.idle_poll = POLL
        else:
            self.idle_poll = min(IDLE_POLL, 2 * self.idle_poll)
        if self.adopt_at and not self.store.in_transaction:
            self._adopt_due()
        if self.out and not self.store.in_transaction:
            self._commit_now()
        if self.unsent and not self.store.in_transaction and super().pending_count() == 0:
            self._send()  # nothing to fetch here: no reason to wait for more

    def _idle(self) -> bool:
        return (super().pending_count() == 0 and not bool((self.where == TAKEN).any())
                and not self.out and not self.unsent and not self.acks
                and not self.leases.releasing and not self.adopt_at)

    def _busy_flag(self) -> None:
        """This crawler's idle flag to 0 (a command only when it may be 1)."""
        if self.flagged_idle:
            self.idle_written = False
            self.client.hset(IDLE_FLAGS, self.leases.me, 0)
            self.flagged_idle = False

    def _finished(self) -> bool:
        if not self._idle():
            self._busy_flag()
            return False
        if self.checked_at >= self.looked_at:
            return False  # checked since the last look at the mailbox: at its cadence
        self.checked_at = self.looked_at
        self.flagged_idle = True  # before the write: a failed reply may hide a 1 written
        pipe = self.client.pipeline(transaction=True)
        if not self.idle_written:
            pipe.hset(IDLE_FLAGS, self.leases.me, 1)
        pipe.hgetall(IDLE_FLAGS)
        pipe.zrangebyscore(MEMBERS, time.time(), "+inf")
        start = len(pipe)
        split = queue_mget(pipe, [SENT, APPLIED, *(lease_key(p) for p in range(self.partitions))])
        replies = pipe.execute()
        idle, members = replies[start - 2:start]
        sent, applied, *holders = take_mget(replies, start, 2 + self.partitions, split)
        if isinstance(idle, list):  # a Cluster's MULTI answers HGETALL as a flat list
            idle = dict(zip(idle[::2], idle[1::2], strict=True))
        self.idle_written = idle.get(self.leases.me) == "1"  # not, after a Redis restart
        members = sorted(members)
        if not members or any(idle.get(m) != "1" for m in members):
            return False
        if int(sent or 0) != int(applied or 0):
            return False
        return all(h == members[p % len(members)] for p, h in enumerate(holders))

    def select(self, ready_hosts: Iterable[int]) -> int | None:
        """The next page to fetch, only under leases renewed less than ``FENCE`` leases ago: a
        crawler held up (a loaded machine, a long commit) renews first, and learns of the
        partitions taken from it meanwhile before it fetches one of their pages."""
        leases = self.leases
        if self.lost is None and leases.clock() - leases.renewed_at >= FENCE * leases.ttl:
            try:
                leases.heartbeat()
                self._rebalance()
            except redis.RedisError as exc:
                self._lose(exc)
                return None
        return super().select(ready_hosts)

    def pending_count(self) -> int:
        if self.done or self.lost is not None:
            return super().pending_count()
        try:
            self._look()  # every POLL seconds, busy or not: the mailbox and the leases
            n = super().pending_count()
            if n:
                return n
            if self._finished():
                self.done = True
                return 0
        except redis.RedisError as exc:
            self._lose(exc)
            return super().pending_count()
        return 1  # others may still send work: the session polls (poll_at)

    def poll_at(self, now: float) -> float | None:
        if self.lost is not None:
            return None
        try:
            self._look()
        except redis.RedisError as exc:
            self._lose(exc)
            return None
        return None if self.done else max(now, self.looked_at + self._poll_every())

    def _lose(self, exc: redis.RedisError) -> None:
        """Redis went away: the session stops with its batch committed (the outbox and the
        batches applied are in the store: the same command resumes)."""
        from websift.crawler.redis_address import error_reason

        if self.lost is None:
            self.lost = f"the partition coordinator is unreachable ({error_reason(exc)})"

    def persist_all(self, store: CrawlStore) -> None:
        super().persist_all(store)
        self.before_commit()

    def close(self) -> None:
        """Leave the crawl: a crawler stopping before the end hands its partitions over."""
        try:
            if self.lost is None:
                if self.unsent:
                    self._send()
                self.after_commit()
                if not self.done and self.leases.owned:
                    ids, parts = self._partitions_of_known()
                    for p in sorted(self.leases.owned):
                        self._hand_over(p, ids[parts == p])
                self.client.hdel(IDLE_FLAGS, self.leases.me)
                self.leases.leave()
        except redis.RedisError as exc:
            self._lose(exc)  # what was not sent is in the outbox; the leases expire
        finally:
            self.client.close()

    def stats(self) -> dict[str, float]:
        out = super().stats()
        out["partitions_owned"] = float(len(self.leases.owned))
        out["partitions_waiting"] = float(self.leases.waiting)  # for a crawler expected back
        return out


def open_partitioned(url: str, store: CrawlStore, partitions: int, ttl: float,
                     mirror: bool = False, *, rejoin: float | None = None,
                     **load: Any) -> PartitionedFrontier:
    """The partitioned frontier of a crawler: the store's embedded frontier state, attached to
    the coordinator at ``url``."""
    client = connect(url)
    frontier = PartitionedFrontier.load(store, **load)
    assert isinstance(frontier, PartitionedFrontier)
    frontier.attach(client, store, partitions, ttl, mirror, rejoin=rejoin)
    return frontier


@dataclass
class CashCheck:
    """Lemma 2.2 over a partitioned crawl: the parts of the total, which is 1."""

    stores: float
    outboxes: float
    in_flight: float
    batches_in_flight: int

    @property
    def total(self) -> float:
        return self.stores + self.outboxes + self.in_flight


def check_cash(redis_url: str, stores: list[Path]) -> CashCheck:
    """Sum the cash of a partitioned crawl: every store's pages and virtual page, every
    store's outbox not yet in a stream, and the stream entries no store applied yet."""
    from websift.store.views import StoreReader

    client = connect(redis_url)
    try:
        partitions = int(client.hget(CONFIG, "partitions") or 0)
        total = 0.0
        outbox: dict[str, float] = {}
        applied: set[str] = set()
        for path in stores:
            with StoreReader.open(path) as reader:
                value = reader.opic_cash_total()
                total += 0.0 if math.isnan(value) else value
                out, done = reader.mailbox()
            outbox.update(out)
            applied |= done
        flight: dict[str, float] = {}
        carried: set[str] = set()
        for p in range(partitions):
            for entry_id, fields in client.xrange(stream_key(p)):
                batches = fields["b"].split(",") if fields else []
                carried.update(batches)
                if batches and batches[0] not in applied:
                    flight[f"{p}/{entry_id}"] = float(fields["c"])
        unsent = math.fsum(c for b, c in outbox.items() if b not in carried and b not in applied)
        return CashCheck(total, unsent, math.fsum(flight.values()), len(flight))
    finally:
        client.close()
