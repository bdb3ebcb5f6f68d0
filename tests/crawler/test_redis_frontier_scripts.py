"""The shared frontier's Lua scripts on a real redis-server: OPIC on Redis (pages spread over
hosts, cross-host credits as money transfers, lazy dividends per host) gives every page the
cash the embedded ``ranking.opic.LazyOpicState`` gives it, and the total (pages + virtual page
+ transfers in flight) is 1 after every step."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.redis_server import RedisServer
from websift.crawler.errors import FrontierLost
from websift.crawler.redis_admin import connect, frontier_status, page_cash
from websift.crawler.redis_frontier import FrontierError, RedisFrontier
from websift.ranking.opic import LazyOpicState, OpicParams
from websift.store.crawl_store import CrawlStore

pytestmark = pytest.mark.redis  # a redis-server (tests/conftest.py: redis_server)


class World:
    """A frontier on a fresh database and the embedded OPIC state fed the same steps."""

    def __init__(self, redis_server: RedisServer, tmp: Path, hosts: int, pages: int) -> None:
        redis_server.client.flushall()
        self.client = connect(redis_server.url())
        self.store = CrawlStore.open(tmp / f"shard-{uuid.uuid4().hex}.sqlite3")
        self.params = OpicParams()
        self.frontier = RedisFrontier(self.client, self.store, self.params,
                                      min_refetch_interval=float("inf"))
        self.opic = LazyOpicState(self.params, capacity=pages + 1)
        self.origins = [f"http://h{i}.test" for i in range(hosts)]
        self.ids: list[int] = []
        self.dead: set[int] = set()
        self.origin: dict[int, str] = {}
        for n in range(pages):
            origin = self.origins[n % hosts]
            url = f"{origin}/p{n}"
            uid = self.frontier.url_id(url)
            self.frontier.add(uid, url, 0, 0)
            self.opic.add_page(uid)
            self.ids.append(uid)
            self.origin[uid] = origin
        self.frontier.persist(self.store)

    def done(self) -> None:
        self.frontier.close()  # its lease thread stops before the next example's flushall
        self.store.close()

    def read(self, uid: int, kids: list[int], dead: bool) -> None:
        if dead:
            kids = []  # as the recorder reads a failed page: all its cash to the virtual page
            self.dead.add(uid)
        # a reader does not know whether a page of another host is dead: it sends the share,
        # which the target passes to the virtual page (test_share_to_a_dead_page_elsewhere);
        # one process leaves dead children out.  Compared here without such links.
        kids = [k for k in kids if k not in self.dead or self.origin[k] == self.origin[uid]]
        self.frontier.read(uid, kids, dead=dead)
        self.frontier.after_commit()
        self.opic.read(uid, [k for k in kids if k != uid])
        if dead:
            self.opic.kill(uid)

    def pay(self) -> None:
        self.frontier.distribute_virtual()
        self.frontier.after_commit()
        self.opic.pay_virtual()

    def check(self) -> None:
        status = frontier_status(self.client)
        assert status["cash"]["total"] == pytest.approx(1.0, abs=1e-9)
        assert status["cash"]["in_flight"] == pytest.approx(0.0, abs=1e-12)  # all delivered
        for uid in self.ids:
            assert page_cash(self.client, self.origin[uid], uid) == pytest.approx(
                self.opic.cash_of_page(uid), abs=1e-9), uid
        assert float(status["cash"]["virtual"]) == pytest.approx(self.opic.virtual_cash, abs=1e-9)


steps = st.lists(
    st.tuples(st.integers(0, 19), st.lists(st.integers(0, 19), max_size=6), st.booleans(),
              st.booleans()),
    min_size=1, max_size=15,
)


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hosts=st.integers(1, 4), script=steps)
def test_cash_matches_embedded_opic(redis_server: RedisServer, tmp_path: Path, hosts: int,
                                    script: list[tuple[int, list[int], bool, bool]]) -> None:
    world = World(redis_server, tmp_path, hosts, 20)
    world.pay()
    world.check()
    done: set[int] = set()
    for page, kids, dead, pay in script:
        uid = world.ids[page]
        if uid in done:  # a page is read once here (refresh is off: min interval infinite)
            continue
        done.add(uid)
        world.read(uid, [world.ids[k] for k in kids], dead and len(done) % 3 == 0)
        if pay:
            world.pay()
        world.check()
    world.done()


def test_transfer_in_flight_is_counted_and_applied_once(redis_server: RedisServer, tmp_path: Path) -> None:
    world = World(redis_server, tmp_path, 2, 4)
    world.pay()
    a, b = world.ids[0], world.ids[1]  # a on host 0, b on host 1
    before = page_cash(world.client, world.origin[b], b)
    # the read's script alone, no delivery: b's share waits in host 0's outbox, counted
    world.frontier.read(a, [b])
    r = world.frontier.reads.pop()
    world.frontier._run_read(r)
    status = frontier_status(world.client)
    assert status["cash"]["in_flight"] > 0
    assert status["cash"]["total"] == pytest.approx(1.0, abs=1e-12)
    assert page_cash(world.client, world.origin[b], b) == before
    from websift.crawler.redis_admin import host_tag
    from websift.crawler.redis_frontier import deliver

    out = dict(world.client.hgetall(host_tag(world.origin[a]) + ":out"))
    # a redelivery after a crash between apply and forget must not pay twice
    tid = next(t for t, v in out.items() if v.startswith(host_tag(world.origin[b])))
    target = host_tag(world.origin[b])
    world.frontier.scripts["apply"](keys=[target + ":lv"],
                                    args=[tid, b, out[tid].split("\t")[2], 0, 3600],
                                    client=world.client)
    assert frontier_status(world.client)["cash"]["total"] == pytest.approx(1.0, abs=1e-12)
    deliver(world.client, world.frontier.scripts, host_tag(world.origin[a]))
    status = frontier_status(world.client)
    assert status["cash"]["in_flight"] == 0
    assert status["cash"]["total"] == pytest.approx(1.0, abs=1e-12)
    assert page_cash(world.client, world.origin[b], b) > before
    world.done()


def test_share_to_a_dead_page_elsewhere_goes_to_the_virtual_page(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    world = World(redis_server, tmp_path, 2, 4)
    world.pay()
    a, b, c = world.ids[0], world.ids[1], world.ids[2]  # hosts 0, 1, 0
    world.read(b, [], dead=True)
    virtual = float(world.client.hget("{g}:lv", "virtual") or 0)
    cash = page_cash(world.client, world.origin[a], a)
    world.frontier.read(a, [b, c])  # b is dead on host 1: its third goes on to the virtual page
    world.frontier.after_commit()
    status = frontier_status(world.client)
    assert status["cash"]["in_flight"] == 0
    assert status["cash"]["total"] == pytest.approx(1.0, abs=1e-12)
    assert status["cash"]["virtual"] == pytest.approx(virtual + 2 * cash / 3, abs=1e-12)
    world.done()


def test_foreign_and_newer_databases_are_refused(redis_server: RedisServer) -> None:
    redis_server.client.set("someone-else", "1")
    with pytest.raises(FrontierError, match="not a websift frontier"):
        connect(redis_server.url())
    redis_server.client.flushall()
    connect(redis_server.url())
    redis_server.client.hset("{g}:lv", "version", "99")
    with pytest.raises(FrontierError, match="newer"):
        connect(redis_server.url())
    redis_server.client.hset("{g}:lv", "version", "1")  # before hosts carried the frontier's ID
    with pytest.raises(FrontierError, match="older"):
        connect(redis_server.url())
    redis_server.client.flushall()


def test_scripts_refuse_a_frontier_that_lost_its_data(redis_server: RedisServer, tmp_path: Path
                                                      ) -> None:
    """No reconnection hook here (a plain client): the scripts' own check of the frontier's
    ID catches a flushed database, and the URL ID counter never goes back."""
    world = World(redis_server, tmp_path, hosts=2, pages=6)
    top = max(world.ids)
    # the counter put back (a Redis restored from an older snapshot): no ID is given twice
    redis_server.client.hset("{g}:lv", "nextid", str(top - 3))
    with pytest.raises(FrontierLost):
        world.frontier.url_id("http://h0.test/new")
    assert world.frontier.data_lost and "went back" in (world.frontier.lost or "")
    assert int(redis_server.client.hget("{g}:lv", "nextid") or 0) == top - 3  # left as it was
    world.done()

    world = World(redis_server, tmp_path, hosts=2, pages=6)
    redis_server.client.flushall()
    connect(redis_server.url())  # another frontier on the empty database, as a crawler would make
    assert world.frontier.pending_hosts() == []
    assert world.frontier.data_lost
    assert "no longer holds frontier" in (world.frontier.lost or "")
    assert redis_server.client.keys("{h:*") == []  # nothing written into the new frontier
    world.done()


def test_unreachable_and_password_in_url(redis_server: RedisServer) -> None:
    from testkit.ports import free_port

    with pytest.raises(FrontierError, match="cannot use the frontier"):
        connect(f"redis://127.0.0.1:{free_port()}/0", timeout=1.0)
    with pytest.raises(FrontierError, match="WEBSIFT_REDIS_PASSWORD"):
        connect("redis://:secret@127.0.0.1:6379/0")
    with pytest.raises(FrontierError, match="scheme"):
        connect("http://127.0.0.1:6379/0")


def test_a_holder_whose_lease_lapsed_takes_nothing(redis_server: RedisServer,
                                                   tmp_path: Path) -> None:
    """Only the host's lease holder takes a page (take.lua checks the lease): a crawler held up
    past its lease, the host leased by another since, gets nothing and lets the host go."""
    from websift.crawler.redis_admin import host_tag

    world = World(redis_server, tmp_path, 1, 3)
    frontier = world.frontier
    ready = frontier.pending_hosts()  # leases the host
    assert len(ready) == 1 and len(frontier.leases) == 1
    uid = frontier.select(ready)
    assert uid is not None  # the holder takes
    tag = host_tag(world.origins[0])
    world.client.set(tag + ":lease", "another-crawler|its-run", px=60_000)  # lapsed, re-leased
    assert frontier.select(ready) is None
    assert frontier.counters["leases_lost"] == 1 and frontier.leases == {}
    status = frontier_status(world.client)
    assert status["taken"] == 1 and status["pending"] == 2  # the two left are still pending
    world.client.delete(tag + ":lease")
    world.done()
