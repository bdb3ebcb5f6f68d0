"""The partitioned frontier's Redis commands when it has nothing to fetch (crawler/mailbox.py):
the session asks ``pending_count`` in a loop, and each call must not be a look at Redis; the
mailbox and the end of the crawl are checked at the mailbox's cadence, and the idle flag is
written when it changes, not at every check."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.redis_server import RedisServer
from testkit.waiting import wait_for
from websift.crawler.mailbox import IDLE_FLAGS, open_partitioned
from websift.crawler.partitions import MEMBERS
from websift.store.crawl_store import CrawlStore

pytestmark = [pytest.mark.redis]

PARTITIONS = 4
CALLS = 300


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    srv = RedisServer(tmp_path_factory.mktemp("redis"))
    yield srv
    srv.stop()


def _calls(server: RedisServer, command: str) -> int:
    stats = server.client.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def test_an_idle_crawler_looks_at_redis_at_the_mailbox_cadence(
        server: RedisServer, tmp_path: Path) -> None:
    server.client.flushall()
    with CrawlStore.open(tmp_path / "s.sqlite3") as store:
        frontier = open_partitioned(server.url(), store, PARTITIONS, ttl=60.0)
        try:
            # another live crawler, still busy: the crawl is not over
            server.client.zadd(MEMBERS, {"zz-other": time.time() + 600})
            server.client.hset(IDLE_FLAGS, "zz-other", 0)
            server.client.config_resetstat()
            for _ in range(CALLS):
                assert frontier.pending_count() == 1  # others may still send work
            looks = _calls(server, "xreadgroup")
            assert 1 <= looks < CALLS // 10, f"{looks} mailbox reads for {CALLS} calls"
            assert _calls(server, "hgetall") <= looks, "an end check without a look"
            assert _calls(server, "hset") <= 1, "the idle flag was written again"
            assert server.client.hget(IDLE_FLAGS, frontier.leases.me) == "1"
            # the other crawler is done too: this one sees the end at its next look
            server.client.hset(IDLE_FLAGS, "zz-other", 1)
            server.client.zrem(MEMBERS, "zz-other")
            wait_for(lambda: frontier.pending_count() == 0, "the end of the crawl")
        finally:
            frontier.close()
