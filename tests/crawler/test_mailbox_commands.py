"""The partitioned frontier's Redis commands when it has nothing to fetch (crawler/mailbox.py):
the session asks ``pending_count`` in a loop, and each call must not be a look at Redis; the
mailbox and the end of the crawl are checked at the mailbox's cadence, and the idle flag is
written when it changes, not at every check."""

from __future__ import annotations

import time
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


def _calls(redis_server: RedisServer, command: str) -> int:
    stats = redis_server.client.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


def test_an_idle_crawler_looks_at_redis_at_the_mailbox_cadence(
        redis_server: RedisServer, tmp_path: Path) -> None:
    with CrawlStore.open(tmp_path / "s.sqlite3") as store:
        frontier = open_partitioned(redis_server.url(), store, PARTITIONS, ttl=60.0)
        try:
            # another live crawler, still busy: the crawl is not over
            redis_server.client.zadd(MEMBERS, {"zz-other": time.time() + 600})
            redis_server.client.hset(IDLE_FLAGS, "zz-other", 0)
            redis_server.client.config_resetstat()
            for _ in range(CALLS):
                assert frontier.pending_count() == 1  # others may still send work
            looks = _calls(redis_server, "xreadgroup")
            assert 1 <= looks < CALLS // 10, f"{looks} mailbox reads for {CALLS} calls"
            assert _calls(redis_server, "hgetall") <= looks, "an end check without a look"
            assert _calls(redis_server, "hset") <= 1, "the idle flag was written again"
            assert redis_server.client.hget(IDLE_FLAGS, frontier.leases.me) == "1"
            # the other crawler is done too: this one sees the end at its next look
            redis_server.client.hset(IDLE_FLAGS, "zz-other", 1)
            redis_server.client.zrem(MEMBERS, "zz-other")
            wait_for(lambda: frontier.pending_count() == 0, "the end of the crawl")
        finally:
            frontier.close()
