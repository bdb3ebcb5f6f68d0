"""Cash through the partitioned frontier's mailbox (crawler/mailbox.py), step by step on a real
redis-server: a batch applied to this crawler's pages moves cash and never makes or loses any
(OPIC paper, Lemma 2.2), and the lazy OPIC classes' sizes stay what the pages say."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from testkit.redis_server import RedisServer
from testkit.waiting import wait_for
from websift.crawler.frontier import Frontier
from websift.crawler.mailbox import (
    SENT,
    PartitionedFrontier,
    check_cash,
    open_partitioned,
    stream_key,
)
from websift.crawler.partitions import partition_of
from websift.store.crawl_store import CrawlStore

pytestmark = [pytest.mark.redis]

PARTITIONS = 4


def _queued(frontier: PartitionedFrontier) -> int:
    """Pages queued in this crawler's own frontier (no look at the mailbox)."""
    return Frontier.pending_count(frontier)


def _fetch(frontier: PartitionedFrontier, store: CrawlStore, url: str, depth: int) -> None:
    """A URL known, fetched and read by ``frontier``, each step committed (the read goes to
    the partition's mirror in Redis with the commit)."""
    with store.transaction():
        uid, _ = store.add_url(url, depth)
        frontier.add(uid, url, store.host_id_of_url(uid), depth)
    frontier._commit_now()
    assert frontier.take(uid) == url
    with store.transaction():
        frontier.read(uid, [])
    frontier._commit_now()


def _classes(frontier: PartitionedFrontier) -> list[int]:
    opic = frontier.opic
    counted = list(opic.members)
    opic.recount()
    return counted


def test_a_page_fetched_elsewhere_gives_its_unread_dividends_to_the_virtual_page(
        redis_server: RedisServer, tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store:
        frontier = open_partitioned(redis_server.url(), store, PARTITIONS, ttl=30.0)
        try:
            assert len(frontier.leases.owned) == PARTITIONS  # the only crawler: it owns all
            urls = [f"http://127.0.0.{40 + n}/p{n}" for n in range(6)]
            with store.transaction():
                for url in urls:
                    uid, _ = store.add_url(url, 0)
                    frontier.add(uid, url, store.host_id_of_url(uid), 0)
            opic = frontier.opic
            assert opic.pay_virtual() == pytest.approx(1.0)  # unread pages hold dividends
            before = opic.total_cash()
            # another crawler fetched urls[0] and hands over 0.25 of cash with it
            with store.transaction():
                frontier._apply_entry([urls[0], 0.25, 0, True])
            assert opic.total_cash() == pytest.approx(before + 0.25, abs=1e-12)
            counted = _classes(frontier)
            assert counted == opic.members, "class sizes drifted from the pages"
            # and what the classes are paid next is paid to pages that exist
            opic.virtual_cash += 0.5
            opic.pay_virtual()
            ids = np.flatnonzero(opic.known)
            assert float(opic.cash_of(ids).sum() + opic.virtual_cash) == pytest.approx(
                before + 0.75, abs=1e-12)
        finally:
            frontier.close()


def test_a_crawler_taken_for_dead_hands_its_pages_and_cash_to_the_new_owner(
        redis_server: RedisServer, tmp_path: Path) -> None:
    # a registration in the coordinator's first second counts as made before it started, and
    # its crawler is waited for (crawler/partitions.py): a is taken for dead at once after it
    wait_for(lambda: int(redis_server.client.info("server")["uptime_in_seconds"]) >= 1,
             "the coordinator up for a second")
    with CrawlStore.open(tmp_path / "a.sqlite3") as a_store, \
            CrawlStore.open(tmp_path / "b.sqlite3") as b_store:
        a = open_partitioned(redis_server.url(), a_store, PARTITIONS, ttl=30.0)
        urls = [f"http://127.0.0.{40 + n}/p{n}" for n in range(6)]
        with a_store.transaction():
            for url in urls:
                uid, _ = a_store.add_url(url, 0)
                a.add(uid, url, a_store.host_id_of_url(uid), 0)
        a.opic.pay_virtual()
        a._commit_now()
        assert _queued(a) == len(urls)
        # a misses its renewals: its registration runs out and b takes every partition
        redis_server.client.zadd("{wsp}:members", {a.leases.me: 0})
        b = open_partitioned(redis_server.url(), b_store, PARTITIONS, ttl=30.0)
        try:
            assert b.leases.owned == set(range(PARTITIONS))
            a.leases.heartbeat()  # a learns it holds nothing
            a._rebalance()
            assert a.leases.owned == set()
            assert _queued(a) == 0, "a crawls no page of partitions it lost"
            b._read_mailbox()
            assert _queued(b) == len(urls), "b queues a's pages"
            check = check_cash(redis_server.url(), [tmp_path / "a.sqlite3", tmp_path / "b.sqlite3"])
            assert check.total == pytest.approx(1.0, abs=1e-12), check
        finally:
            b.close()
            a.close()


def test_an_outbox_sent_again_after_a_lost_reply_is_applied_once_batch_by_batch(
        redis_server: RedisServer, tmp_path: Path) -> None:
    """A crawler's MULTI reached Redis but its reply did not (the coordinator restarted): the
    batch stays in its outbox, and the next run sends it again with a later batch.  Each
    batch is applied once: none twice (the cash would grow), none skipped with the one sent
    before (the cash would shrink)."""
    path = tmp_path / "a.sqlite3"
    with CrawlStore.open(path) as store:
        a = open_partitioned(redis_server.url(), store, PARTITIONS, ttl=30.0)
        assert a.leases.owned == set(range(PARTITIONS))  # alone: its own mailbox
        urls = [f"http://127.0.0.50/p{n}" for n in range(2)]  # one partition: one entry

        def transfer(url: str) -> None:  # a share of the virtual page's cash, as a read sends
            a.opic.virtual_cash -= 0.25
            a._queue_out(partition_of(url, PARTITIONS), url, 0.25, 1, False)
            a._commit_now()

        transfer(urls[0])
        first = store.outbox()
        a._send()
        assert store.outbox() == [] and a.counters.batches_sent == 1
        with store.transaction():  # as if the reply was lost: the batch still in the outbox
            for row in first:
                store.save_outbox(*row)
        transfer(urls[1])
        assert [b for b, *_ in store.outbox()] == [first[0][0], f"{a.leases.me}:{a.run}:2"]
        a.client.close()  # the crawler stops (exit 2): no hand-over, no leave
        again = open_partitioned(redis_server.url(), store, PARTITIONS, ttl=30.0)
        try:
            assert again.leases.me == a.leases.me  # the store's crawler ID
            assert store.outbox() == []
            again._read_mailbox()
            assert again.counters.batches_applied == 2, "each batch applied once"
            check = check_cash(redis_server.url(), [path])
            assert check.total == pytest.approx(1.0, abs=1e-12), check
            assert check.batches_in_flight == 0
        finally:
            again.close()


def test_a_transfer_waiting_for_a_dead_owner_does_not_queue_a_page_it_read(
        redis_server: RedisServer, tmp_path: Path) -> None:
    """With the mirror, a crawler taking a dead crawler's partition knows the pages it read
    before it applies the transfers that waited in the partition's stream: a link to such a
    page queues nothing (else the page is fetched again and stored in both stores)."""
    with CrawlStore.open(tmp_path / "a.sqlite3") as a_store, \
            CrawlStore.open(tmp_path / "b.sqlite3") as b_store:
        a = open_partitioned(redis_server.url(), a_store, PARTITIONS, ttl=30.0, mirror=True)
        url = "http://127.0.0.40/read-by-a"
        _fetch(a, a_store, url, 0)  # its read reaches the partition's mirror in Redis
        partition = partition_of(url, PARTITIONS)
        # a link to the page sent to its owner by a third crawler, not read before a dies
        redis_server.client.xadd(stream_key(partition), {
            "b": "third:1", "c": "0.0", "d": json.dumps([[url, 0.0, 1, False]])})
        redis_server.client.incrby(SENT, 1)
        redis_server.client.zadd("{wsp}:members", {a.leases.me: 0})  # a is gone
        b = open_partitioned(redis_server.url(), b_store, PARTITIONS, ttl=30.0, mirror=True)
        try:
            assert partition in b.leases.owned
            assert _queued(b) == 0, "b queued a page a had read"
        finally:
            b.close()
            a.client.close()


def test_a_store_started_again_drops_from_its_queue_what_another_read_meanwhile(
        redis_server: RedisServer, tmp_path: Path) -> None:
    """With the mirror: a crawler killed with a page queued, another crawler holding its
    partitions meanwhile reads the page, and the first is started again on its store after
    the other left: the page leaves its queue (not fetched twice) and the cash stays 1."""
    url = "http://127.0.0.41/queued-in-b"
    with CrawlStore.open(tmp_path / "b.sqlite3") as b_store:
        b = open_partitioned(redis_server.url(), b_store, PARTITIONS, ttl=30.0, mirror=True)
        with b_store.transaction():
            uid, _ = b_store.add_url(url, 0)
            b.add(uid, url, b_store.host_id_of_url(uid), 0)
        b._commit_now()
        assert _queued(b) == 1
        b.client.close()  # killed: no hand-over, no leave
    redis_server.client.zadd("{wsp}:members", {b.leases.me: 0})
    with CrawlStore.open(tmp_path / "a.sqlite3") as a_store:
        a = open_partitioned(redis_server.url(), a_store, PARTITIONS, ttl=30.0, mirror=True)
        assert a.leases.owned == set(range(PARTITIONS))
        _fetch(a, a_store, url, 1)  # a link names the page; a fetches and reads it
        a.client.close()  # killed too
    redis_server.client.zadd("{wsp}:members", {a.leases.me: 0})
    with CrawlStore.open(tmp_path / "b.sqlite3") as b_store:
        b = open_partitioned(redis_server.url(), b_store, PARTITIONS, ttl=30.0, mirror=True)
        try:
            assert b.leases.owned == set(range(PARTITIONS))
            assert _queued(b) == 0, "b kept a page in its queue that a had read"
            assert b.counters.read_elsewhere == 1
        finally:
            b.close()
    check = check_cash(redis_server.url(), [tmp_path / "a.sqlite3", tmp_path / "b.sqlite3"])
    assert check.total == pytest.approx(1.0, abs=1e-12), check
