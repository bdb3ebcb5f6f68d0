"""Partition leases (crawler/partitions.py) on a real redis-server, the registrations' clock
driven by the test: a fresh crawl and a dead crawler's partitions are claimed at once; after a
restart of the coordinator (append-only file), the partitions of a crawler expected back are
left to it until it registers again or the wait passes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from testkit.redis_server import RedisServer
from testkit.waiting import wait_for
from websift.crawler.partitions import Leases, connect

pytestmark = [pytest.mark.redis]

PARTITIONS = 8
TTL = 1.0
REJOIN = 600.0  # a restarted coordinator's crawlers are waited for this long (unless said)


class Clock:
    """Wall time moved on by the test: registrations expire without waiting."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


@pytest.fixture(scope="module")
def durable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    srv = RedisServer(tmp_path_factory.mktemp("redis"), durable=True)
    yield srv
    srv.stop()


@pytest.fixture
def server(durable: RedisServer) -> RedisServer:
    durable.client.flushall()
    # the server's uptime is in whole seconds: a registration in its first second counts as
    # made before it started (module doc of crawler/partitions.py)
    wait_for(lambda: int(durable.client.info("server")["uptime_in_seconds"]) >= 1,
             "the coordinator up for a second")
    return durable


def _join(server: RedisServer, clock: Clock, me: str, *others: Leases) -> Leases:
    """A crawler registering and claiming its preferred partitions (the others renew first, as
    they would at their next renewal, so every one sees every live member)."""
    leases = Leases(connect(server.url()), PARTITIONS, TTL, clock, me=me, rejoin=REJOIN)
    leases.heartbeat()
    for other in others:
        other.heartbeat()
    leases.heartbeat()
    leases.claim(leases.plan()[0])
    return leases


def _halves(server: RedisServer, clock: Clock) -> tuple[Leases, Leases]:
    a = _join(server, clock, "a")
    assert a.owned == set(range(PARTITIONS)) and a.waiting == 0  # alone: every partition
    b = _join(server, clock, "b", a)
    a.heartbeat()
    _, give = a.plan()
    for p in give:  # a gives b's half back (crawler/mailbox.py hands the pages over first)
        a.release(p)
    b.claim(b.plan()[0])
    assert a.owned == set(range(0, PARTITIONS, 2)) and b.owned == set(range(1, PARTITIONS, 2))
    return a, b


def test_a_dead_crawler_s_partitions_are_claimed_as_its_registration_expires(
        server: RedisServer) -> None:
    clock = Clock()
    a, b = _halves(server, clock)
    clock.ahead += 2 * TTL  # a stops renewing: its registration expires
    b.heartbeat()
    assert b.members == ["b"]
    assert sorted(b.claim(b.plan()[0])) == sorted(a.owned)
    assert b.waiting == 0 and b.owned == set(range(PARTITIONS))
    assert all(b.taken_from[p] == "a" for p in a.owned)


def test_after_a_coordinator_restart_the_first_back_leaves_the_other_its_partitions(
        server: RedisServer) -> None:
    clock = Clock()
    a, b = _halves(server, clock)
    server.restart()
    clock.ahead += 2 * TTL  # no renewal got through: both registrations expired
    b2 = _join(server, clock, "b")  # b's command started again, a not yet
    assert b2.members == ["b"]
    assert b2.owned == b.owned, "b takes its own leases back"
    assert b2.waiting == len(a.owned), "a's partitions wait for a"
    assert all(server.client.get(f"{{wsp}}:lease:{p}") == "a" for p in a.owned)
    b2.heartbeat()
    assert b2.claim(b2.plan()[0]) == [] and b2.waiting == len(a.owned)  # still at a renewal
    a2 = _join(server, clock, "a", b2)  # a back: it keeps its partitions, nothing moves
    assert a2.owned == a.owned and not a2.taken_from
    b2.heartbeat()
    assert b2.plan() == ([], [])
    # a dies later, the coordinator staying up: its partitions are claimed at its expiry
    clock.ahead += 2 * TTL
    b2.heartbeat()
    assert sorted(b2.claim(b2.plan()[0])) == sorted(a.owned) and b2.waiting == 0


def test_a_crawler_that_stays_away_after_a_coordinator_restart_is_waited_for_only_so_long(
        server: RedisServer) -> None:
    clock = Clock()
    a, _ = _halves(server, clock)
    server.restart()
    clock.ahead += 2 * TTL
    b2 = _join(server, clock, "b")
    assert b2.waiting == len(a.owned)
    b2.rejoin = 0.0  # the coordinator is up for longer than the wait: a is taken for dead
    b2.heartbeat()
    assert sorted(b2.claim(b2.plan()[0])) == sorted(a.owned) and b2.waiting == 0
    assert all(b2.taken_from[p] == "a" for p in a.owned)


def test_a_crawler_that_left_is_not_waited_for_after_a_coordinator_restart(
        server: RedisServer) -> None:
    clock = Clock()
    a, b = _halves(server, clock)
    held = sorted(a.owned)
    a.leave()  # stopped before the end: leases and registration given back
    server.restart()
    clock.ahead += 2 * TTL
    b2 = _join(server, clock, "b")
    assert b2.owned == set(range(PARTITIONS)) and b2.waiting == 0
    assert not any(b2.taken_from.get(p) for p in held)
    assert b.owned <= b2.owned
