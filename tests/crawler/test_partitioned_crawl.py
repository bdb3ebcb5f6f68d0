"""A partitioned crawl (crawler/partitions.py, crawler/mailbox.py): crawler processes leasing
host partitions in a real redis-server, each with the embedded frontier and its own store,
exchanging links and cash as batches.  From the servers' logs and the stores: every page is
fetched once across the crawlers, the union is what one embedded crawl fetches, and the cash
of the stores plus the transfers in flight is 1."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.redis_server import RedisClusterServers, RedisServer
from testkit.testweb import TestWeb, html, words
from testkit.waiting import wait_for
from testkit.websift_process import REPO, websift_command
from websift.api.cli import main as cli_main
from websift.core.datadir import DataDir
from websift.core.errors import StoreError
from websift.crawler.mailbox import META_MEMBER, check_cash, fingerprint
from websift.crawler.partitions import MEMBERS, SEEN, partition_of
from websift.store.views import StoreReader

pytestmark = [pytest.mark.slow, pytest.mark.redis]

SITES = tuple(f"127.0.0.{n}" for n in range(21, 27))
PAGES = 8  # per site, besides its home page
PARTITIONS = 16
LATENCY = 0.05  # the crawl lasts a few lease renewals: the second crawler joins mid-crawl
LEASE = "3"  # renewed every second: a loaded machine must not make a live crawler look dead


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    """Six sites; every page links to the next page of its site and to a page of the next.
    Their ports are drawn again until the hosts fall into partitions of both crawlers' halves
    (else nothing moves between two crawlers)."""
    for _ in range(20):
        w = TestWeb()
        for n, address in enumerate(SITES):
            w.add_site(f"s{n}", address, "User-agent: *\nDisallow:\n", latency=LATENCY)
        with w:
            if len({partition_of(w.sites[f"s{n}"].url("/"), PARTITIONS) % 2
                    for n in range(len(SITES))}) == 2:
                yield from _pages(w)
                return
    raise AssertionError("no ports put the hosts in both halves of the partitions")


def _pages(w: TestWeb) -> Iterator[TestWeb]:
    """The sites' pages."""
    for n in range(len(SITES)):
        site, other = w.sites[f"s{n}"], w.sites[f"s{(n + 1) % len(SITES)}"]
        site.page("/", html(f"s{n}", f"<p>{words(n)}</p><a href='/p/0'>p0</a>"))
        for i in range(PAGES):
            links = (f"<a href='/p/{(i + 1) % PAGES}'>next</a> "
                     f"<a href='{other.url(f'/p/{(i * 3) % PAGES}')}'>over</a>")
            site.page(f"/p/{i}", html(f"s{n} p{i}", f"<p>{words(100 * n + i)}</p>{links}"))
    yield w


def crawl(web: TestWeb, data: Path, *extra: str) -> subprocess.Popen[str]:
    seed = web.sites["s0"].url("/")  # one seed: the others are reached by links across hosts
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        websift_command("crawl", seed, "--data", str(data), "--allow-private", "--any-domain", "--delay", "0.05",
                        "--quiet", *extra),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def finish(proc: subprocess.Popen[str]) -> None:
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err


def fetched(data: Path) -> list[str]:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        return [p.url for p in store.pages() if p.status == "fetched"]


def _fetching(shards: list[Path], pages: int) -> bool:
    """Whether every store has at least ``pages`` pages fetched."""
    try:
        return all(len(fetched(d)) >= pages for d in shards)
    except StoreError:  # a store not made yet
        return False


def _member(data: Path) -> str:
    """The crawler ID a store registers under (crawler/mailbox.py, member_id)."""
    with StoreReader.open(DataDir.open(data).store_path) as store:
        member = store.get_meta(META_MEMBER)
    assert member is not None
    return member


def _unmirrored(redis_server: RedisServer, data: Path) -> set[str]:
    """The pages a store fetched whose fingerprints are not in the partitions' read mirror."""
    try:
        pages = fetched(data)
    except StoreError:  # not made yet
        return set()
    read: set[str] = set()
    for key in redis_server.client.scan_iter("{wsp}:f:*"):
        read |= redis_server.client.smembers(key)
    return {u for u in pages if fingerprint(u) not in read}


def test_two_partitioned_crawlers_fetch_what_one_does_once(
    web: TestWeb, redis_server: RedisServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the hosts fall into more than one partition of two crawlers' halves (else nothing moves)
    assert len({partition_of(web.sites[f"s{n}"].url("/"), PARTITIONS) % 2
                for n in range(len(SITES))}) == 2
    web.clear()
    finish(crawl(web, tmp_path / "one"))
    alone = set(fetched(tmp_path / "one"))
    assert len(alone) == len(SITES) * PAGES + 1  # the other home pages are not linked

    redis_server.client.flushall()
    web.clear()
    shards = [tmp_path / "a", tmp_path / "b"]
    procs = [crawl(web, d, "--partitioned", redis_server.url(), "--partitions", str(PARTITIONS),
                   "--partition-lease", LEASE)
             for d in shards]
    for p in procs:
        finish(p)
    counts: Counter[str] = Counter()
    per_shard = [fetched(d) for d in shards]
    for urls in per_shard:
        counts.update(urls)
    assert max(counts.values()) == 1, [u for u, c in counts.items() if c > 1]
    assert set(counts) == alone
    assert all(per_shard), "both crawlers fetched pages"
    # from the servers' logs: no page requested twice
    paths = Counter((e.host, e.path) for e in web.entries() if e.path != "/robots.txt")
    assert max(paths.values()) == 1
    cash = check_cash(redis_server.url(), [DataDir.open(d).store_path for d in shards])
    assert cash.batches_in_flight == 0
    assert cash.total == pytest.approx(1.0, abs=1e-9), cash
    # Redis holds no URL text once the crawl is over: the streams are empty
    assert all(redis_server.client.xlen(k) == 0 for k in redis_server.client.scan_iter("{wsp}:s:*"))
    # the command-line checker: 1 with every store, not 1 with one missing
    assert cli_main(["frontier", "check", "--partitioned", redis_server.url(), *map(str, shards)]) == 0
    assert capsys.readouterr().out.startswith("cash total 1.0000000000")
    assert cli_main(["frontier", "check", "--partitioned", redis_server.url(), str(shards[0])]) == 1
    assert "not 1" in capsys.readouterr().err


def test_a_killed_crawler_s_partitions_move_to_the_other(
    web: TestWeb, redis_server: RedisServer, tmp_path: Path
) -> None:
    """kill -9 of one crawler mid-crawl (``--partition-mirror``): its leases expire, the other takes its partitions
    (the batches it had not acknowledged, and from the partitions' mirror in Redis the pages
    it had queued and those it had read) and crawls the rest to the end: every page stored
    once across the two stores, none missing, the cash of both stores 1."""
    web.clear()
    for site in web.sites.values():
        site.latency = 0.3  # a crawl of several seconds: the kill comes mid-crawl
    try:
        shards = [tmp_path / "a", tmp_path / "b"]
        args = ("--partitioned", redis_server.url(), "--partitions", str(PARTITIONS),
                "--partition-lease", LEASE, "--partition-mirror")
        victim = crawl(web, shards[0], *args)
        survivor = crawl(web, shards[1], *args)

        wait_for(lambda: _fetching(shards, 3), timeout=60, what="both crawlers fetching")
        # the kill not right after a commit shows (that is when the commit's MULTI may not
        # have run): once the victim's stored pages are all in the read mirror
        wait_for(lambda: not _unmirrored(redis_server, shards[0]), timeout=60,
                 what="the victim's pages in the mirror")
        me = _member(shards[0])
        holders = {p: redis_server.client.get(f"{{wsp}}:lease:{p}") for p in range(PARTITIONS)}
        victim_parts = {p for p, h in holders.items() if h == me}
        victim.kill()
        victim.wait()
        # a kill between a commit and its MULTI leaves the mirror one batch behind the store
        # (ARCHITECTURE.md, crawler/: not covered): those pages may be fetched again
        behind = _unmirrored(redis_server, shards[0])
        finish(survivor)
    finally:
        for site in web.sites.values():
            site.latency = LATENCY
    survivor_pages = set(fetched(shards[1]))
    victim_pages = set(fetched(shards[0]))
    everything = {web.sites["s0"].url("/")} | {
        web.sites[f"s{n}"].url(f"/p/{i}") for n in range(len(SITES)) for i in range(PAGES)}
    assert not (survivor_pages & victim_pages) - behind, "a page stored in both stores"
    assert survivor_pages | victim_pages == everything
    cash = check_cash(redis_server.url(), [DataDir.open(d).store_path for d in shards])
    assert cash.total == pytest.approx(1.0, abs=1e-9), cash
    # the survivor crawled hosts of the partitions the victim held when it died
    assert victim_parts
    assert {partition_of(u, PARTITIONS) for u in survivor_pages - victim_pages} & victim_parts


def test_a_redis_restart_stops_two_crawlers_and_the_same_commands_resume(
    web: TestWeb, tmp_path: Path
) -> None:
    """Redis (append-only, fsynced) killed mid-crawl of two crawlers: each stops with its
    batch committed (exit 2, one line).  Redis started again, the same commands resume at
    different times: the second once the first has renewed a lease after the second's
    registration expired.  The first back leaves the other's partitions to it
    (crawler/partitions.py: expected back after a coordinator restart), so with no mirror
    each page is fetched once and stored once across the stores, none missing, the cash
    still 1.  (A restart quick enough that a crawler's next call finds Redis back is ridden
    out: the client reconnects.)"""
    redis_server = RedisServer(tmp_path / "redis", durable=True)
    web.clear()
    for site in web.sites.values():
        site.latency = 0.3
    shards = [tmp_path / "a", tmp_path / "b"]
    # a loaded machine can take tens of seconds to start a crawler: a generous wait for the
    # second one (it ends when the second registers)
    args = ("--partitioned", redis_server.url(), "--partitions", str(PARTITIONS),
            "--partition-lease", LEASE, "--partition-rejoin", "600")
    try:
        procs = [crawl(web, d, *args) for d in shards]
        # both have pages the other must not fetch again
        wait_for(lambda: _fetching(shards, 3), timeout=60, what="both crawlers fetching")
        members = [_member(d) for d in shards]
        redis_server.kill()
        for proc in procs:  # each stops with its batch committed
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 2, err
            assert "partition coordinator is unreachable" in err
            assert len(err.strip().splitlines()) == 1, err
        redis_server.start()
        # the same commands at different times: the second once the first has renewed a lease
        # after the second's registration expired (without the wait it would have claimed
        # the second's partitions by then and fetched what the second had read)
        expired = float(redis_server.client.zscore(MEMBERS, members[1]) or 0)
        resumed = [crawl(web, shards[0], *args)]
        wait_for(lambda: float(redis_server.client.zscore(SEEN, members[0]) or 0)
                 > expired + float(LEASE), timeout=60, what="the first crawler back renewing")
        resumed.append(crawl(web, shards[1], *args))
        for proc in resumed:
            finish(proc)
        cash = check_cash(redis_server.url(), [DataDir.open(d).store_path for d in shards])
        assert cash.total == pytest.approx(1.0, abs=1e-9), cash
    finally:
        for site in web.sites.values():
            site.latency = LATENCY
        redis_server.stop()
    counts: Counter[str] = Counter()
    for d in shards:
        counts.update(fetched(d))
    assert max(counts.values()) == 1, [u for u, c in counts.items() if c > 1]
    assert len(counts) == len(SITES) * PAGES + 1
    paths = Counter((e.host, e.path) for e in web.entries() if e.path != "/robots.txt")
    assert max(paths.values()) == 1, [k for k, v in paths.items() if v > 1]


def test_two_crawlers_on_a_three_master_redis_cluster(web: TestWeb, tmp_path: Path) -> None:
    """The coordinator on a Redis Cluster of three masters (its keys share the {wsp} hash tag,
    so the lease script and the MULTIs run on one slot): each page fetched and stored once,
    the union what one crawl fetches, the cash 1."""
    cluster = RedisClusterServers(tmp_path / "cluster")
    web.clear()
    shards = [tmp_path / "a", tmp_path / "b"]
    try:
        procs = [crawl(web, d, "--partitioned", cluster.url(), "--partitions", str(PARTITIONS),
                       "--partition-lease", LEASE) for d in shards]
        for p in procs:
            finish(p)
        cash = check_cash(cluster.url(), [DataDir.open(d).store_path for d in shards])
    finally:
        cluster.stop()
    assert cash.total == pytest.approx(1.0, abs=1e-9), cash
    counts: Counter[str] = Counter()
    for d in shards:
        counts.update(fetched(d))
    assert max(counts.values()) == 1, [u for u, c in counts.items() if c > 1]
    assert len(counts) == len(SITES) * PAGES + 1
    paths = Counter((e.host, e.path) for e in web.entries() if e.path != "/robots.txt")
    assert max(paths.values()) == 1
