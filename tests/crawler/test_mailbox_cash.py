"""Two partitioned frontiers (crawler/mailbox.py) in one process, on a real redis-server and
real stores, driven step by step over a synthetic link graph: after every step (a read and its
commit, a look at the mailbox, a rebalance), the cash of both stores plus the transfers in
flight is 1 (OPIC Lemma 2.2 over the crawl), and every page is read once across the two."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.redis_server import RedisServer
from websift.crawler.mailbox import PartitionedFrontier, check_cash
from websift.crawler.partitions import connect
from websift.store.crawl_store import CrawlStore

pytestmark = [pytest.mark.redis]

HOSTS, PAGES, PARTITIONS = 8, 6, 8


def links(url: str) -> list[str]:
    """Page k of host h links to page k+1 of its host and page k of host h+1."""
    host, page = url.removeprefix("http://h").split(".test/p")
    h, k = int(host), int(page)
    out = [f"http://h{(h + 1) % HOSTS}.test/p{k}"]
    if k + 1 < PAGES:
        out.append(f"http://h{h}.test/p{k + 1}")
    return out


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    srv = RedisServer(tmp_path / "redis")
    yield srv
    srv.stop()


def tick(f: PartitionedFrontier) -> None:
    """A look at the mailbox and the leases now (the crawl does it every 0.1 s and 1/3 TTL)."""
    f.looked_at = float("-inf")
    f.leases.renewed_at = float("-inf")
    f.pending_count()


def step(f: PartitionedFrontier, store: CrawlStore, taken: Counter[str]) -> bool:
    uid = f.select(f.pending_hosts())
    if uid is None:
        return False
    url = f.take(uid)
    taken[url] += 1
    with store.transaction():
        kids = []
        for target in links(url):
            tid, _ = store.add_url(target, 1)
            f.add(tid, target, store.host_id_of_url(tid), 1)
            kids.append(tid)
        f.read(uid, kids)
        f.persist(store)
        f.before_commit()
    f.unsent_since = float("-inf")  # send now (the crawl waits up to FLUSH_AGE)
    f.after_commit()
    return True


def test_cash_is_one_after_every_step(server: RedisServer, tmp_path: Path) -> None:
    paths = [tmp_path / f"s{i}.sqlite3" for i in range(2)]
    stores = [CrawlStore.open(p) for p in paths]
    frontiers: list[PartitionedFrontier] = []
    for store in stores:
        f = PartitionedFrontier.load(store)
        assert isinstance(f, PartitionedFrontier)
        f.attach(connect(server.url()), store, PARTITIONS, ttl=30.0)
        frontiers.append(f)
    seed = "http://h0.test/p0"
    with stores[0].transaction():
        uid, _ = stores[0].add_url(seed)
        frontiers[0].add(uid, seed, stores[0].host_id_of_url(uid), 0)
        frontiers[0].revive(uid, seed)
        frontiers[0].distribute_virtual()
        frontiers[0].persist(stores[0])

    def total() -> float:
        return check_cash(server.url(), paths).total

    taken: Counter[str] = Counter()
    looks = 0
    for _ in range(6):  # the first crawler alone for a while: then it hands half its pages over
        step(frontiers[0], stores[0], taken)
        assert total() == pytest.approx(1.0, abs=1e-9)
    for _ in range(10 * HOSTS * PAGES):
        moved = False
        for f, store in zip(frontiers, stores, strict=True):
            tick(f)
            assert total() == pytest.approx(1.0, abs=1e-9)
            moved = step(f, store, taken) or moved
            assert total() == pytest.approx(1.0, abs=1e-9)
            looks += 2
        if not moved and all(f.done for f in frontiers):
            break
    assert all(f.done for f in frontiers), "the crawl ends"
    assert set(taken) == {f"http://h{h}.test/p{k}" for h in range(HOSTS) for k in range(PAGES)}
    assert max(taken.values()) == 1
    assert all(f.leases.owned for f in frontiers), "both own partitions"
    assert sum(f.counters.batches_applied for f in frontiers) > 0
    assert frontiers[0].counters.handed_over > 0
    assert looks > 100
    for f, store in zip(frontiers, stores, strict=True):
        f.close()
        store.close()
