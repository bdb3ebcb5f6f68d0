"""Several crawler processes on one shared frontier (a real redis-server) and the local test web:
from the servers' logs every page is fetched once, politeness holds across processes, and the
crawl survives a crawler killed with SIGKILL and a Redis that goes away."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from testkit.ports import free_port
from testkit.redis_server import RedisClusterServers, RedisServer
from testkit.testweb import LogEntry, TestWeb, html, max_in_flight, words
from testkit.waiting import START, wait_for
from testkit.websift_process import REPO, websift_command
from websift.api.app import create_app
from websift.api.settings import Settings
from websift.core.datadir import DataDir
from websift.crawler.redis_admin import G, connect, frontier_status, host_tag
from websift.indexer.build import build_index
from websift.store.views import StoreReader

# slow: crawler processes on Redis; redis: a redis-server (tests/conftest.py: redis_server)
pytestmark = [pytest.mark.slow, pytest.mark.redis]

SITES = ("127.0.0.11", "127.0.0.12", "127.0.0.13", "127.0.0.14")
PAGES = 10  # per site, besides its home page
DELAY = 0.15
K = 2
LATENCY = 0.05
JITTER = 0.002  # server-side timestamp allowance (as tests/crawler/test_crawl.py)
LEASE = "3"  # seconds: a killed crawler's hosts go to the others soon; a loaded machine must not
# overrun a live holder's renewals (every third of it)
LOOK_EVERY = 0.05  # seconds between two looks at the cash while the crawlers run


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    """Four sites; every page links to the next page of its site and to a page of the next."""
    w = TestWeb()
    for n, address in enumerate(SITES):
        w.add_site(f"s{n}", address, "User-agent: *\nDisallow:\n", latency=LATENCY)
    with w:  # started first: a page names another site by its address and port
        fill(w)
        yield w


def fill(w: TestWeb) -> None:
    for n in range(len(SITES)):
        site, other = w.sites[f"s{n}"], w.sites[f"s{(n + 1) % len(SITES)}"]
        first = "".join(f"<a href='/p/{i}'>p{i}</a> " for i in range(3))
        site.page("/", html(f"s{n}", f"<p>{words(n)}</p>{first}"))
        for i in range(PAGES):
            links = (f"<a href='/p/{(i + 1) % PAGES}'>next</a> "
                     f"<a href='{other.url(f'/p/{i}')}'>over</a>")
            site.page(f"/p/{i}", html(f"s{n} p{i}", f"<p>{words(1000 * n + i)}</p>{links}"))


def crawler(web: TestWeb, data: Path, frontier: str, *extra: str) -> subprocess.Popen[str]:
    seeds = [web.sites[f"s{n}"].url("/") for n in range(len(SITES))]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        websift_command("crawl", *seeds, "--data", str(data), "--allow-private", "--delay",
                        str(DELAY), "--concurrency-per-host", str(K), "--frontier", frontier,
                        "--frontier-lease", LEASE, "--quiet", *extra),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )


def exited(procs: list[subprocess.Popen[str]], within: float) -> None:
    """Wait until the first running process exits, at most ``within`` seconds."""
    running = [p for p in procs if p.poll() is None]
    if running:
        with contextlib.suppress(subprocess.TimeoutExpired):
            running[0].wait(within)


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err


def stored(shards: list[Path]) -> Counter[str]:
    """How many shards stored each fetched URL."""
    seen: Counter[str] = Counter()
    for shard in shards:
        with StoreReader.open(DataDir.open(shard).store_path) as store:
            fetched = [p.url for p in store.pages() if p.status == "fetched"]
        seen.update(fetched)
    return seen


def all_urls(web: TestWeb) -> set[str]:
    return {web.sites[f"s{n}"].url(p) for n in range(len(SITES))
            for p in ["/", *(f"/p/{i}" for i in range(PAGES))]}


def twice(web: TestWeb, paths: Counter[tuple[str, str]]) -> list[tuple[str, str, float]]:
    """The requests of the paths asked for more than once, with their start times."""
    return [(e.host, e.path, round(e.start, 3)) for e in web.entries()
            if paths[(e.host, e.path)] > 1]


def check_politeness(web: TestWeb, shards: Sequence[Path]) -> None:
    """What the shared frontier promises: at most K requests in flight per host over all the
    crawlers, and a host passes from one crawler to another only a full delay after the last
    request of the one before (each request's crawler: the shard that stored its page; one
    whose page no shard holds, robots.txt or a killed crawler's, is not judged).  One crawler's
    own spacing of two requests in flight is its session's politeness: the delay runs between
    the moments it hands them to Scrapy, and a busy reactor can send the first late, so the
    server may see them closer (tests/crawler/test_crawl.py checks one crawler)."""
    owner = fetched_by(shards)
    for n in range(len(SITES)):
        log = sorted(web.entries(f"s{n}"), key=lambda e: e.start)
        assert max_in_flight(log) <= K, f"s{n}"
        for a, b in itertools.pairwise(log):
            was, now = owner.get(f"http://{a.host}{a.path}"), owner.get(f"http://{b.host}{b.path}")
            if was is not None and now is not None and was != now:
                assert b.start - a.start >= DELAY - JITTER, (f"s{n}", closest(log, shards),
                                                             leases(shards))


def fetched_by(shards: Sequence[Path]) -> dict[str, str]:
    """The shard that stored each fetched URL (the last one, if several did)."""
    owner: dict[str, str] = {}
    for shard in shards:
        with StoreReader.open(DataDir.open(shard).store_path) as store:
            owner.update((p.url, shard.name) for p in store.pages() if p.status == "fetched")
    return owner


def closest(log: list[LogEntry], shards: Sequence[Path]) -> list[tuple[str, float, float, str]]:
    """The two requests of ``log`` whose starts are closest, each with the shards that stored
    its page (which crawler sent it): what a politeness failure shows."""
    by_start = sorted(log, key=lambda e: e.start)
    pair = min(itertools.pairwise(by_start), key=lambda p: p[1].start - p[0].start)
    holders: dict[str, list[str]] = {}
    for shard in shards:
        with StoreReader.open(DataDir.open(shard).store_path) as store:
            for page in store.pages():
                if page.status == "fetched":
                    holders.setdefault(page.url, []).append(shard.name)
    return [(e.path, round(e.start % 1000, 4), round(e.end % 1000, 4),
             ",".join(holders.get(f"http://{e.host}{e.path}", []))) for e in pair]


def leases(shards: Sequence[Path]) -> str:
    """Each shard's frontier counters of its run: leases lost / pages requeued / stale acks."""
    out = []
    for shard in shards:
        with StoreReader.open(DataDir.open(shard).store_path) as store:
            live = json.loads(next(iter(store.crawl_records()))[2]).get("live", {})
        got = live.get("frontier", {})
        out.append("/".join(str(int(got.get(f"frontier_{k}", -1)))
                            for k in ("leases_lost", "requeued", "stale_acks")))
    return "lost/requeued/stale: " + " ".join(out)


def quiet_total(url: str) -> dict[str, Any]:
    status = frontier_status(connect(url))
    assert status["pending"] == 0 and status["taken"] == 0
    cash = status["cash"]
    assert cash["in_flight"] == pytest.approx(0.0, abs=1e-12)  # quiet: every transfer applied
    assert cash["pages"] + cash["virtual"] == pytest.approx(1.0, abs=1e-9)
    return status


def test_three_crawlers_fetch_every_page_once(
    web: TestWeb, redis_server: RedisServer, tmp_path: Path
) -> None:
    web.clear()
    shards = [tmp_path / f"c{i}" for i in range(3)]
    procs = [crawler(web, d, redis_server.url()) for d in shards]
    # a checker looking while three crawlers read pages and move cash: always 1 (one MULTI);
    # between two looks it waits on the crawlers' exit, so it does not take a core from them
    client = connect(redis_server.url())
    looks = 0
    while any(p.poll() is None for p in procs):
        cash = frontier_status(client)["cash"]
        assert cash["total"] == pytest.approx(1.0, abs=1e-9), cash
        looks += 1
        exited(procs, LOOK_EVERY)
    assert looks > 0
    for p in procs:
        code, err = finish(p)
        assert code == 0, err
    paths = Counter((e.host, e.path) for e in web.entries())
    assert max(paths.values()) == 1, twice(web, paths)  # robots.txt too
    assert len(paths) == len(all_urls(web)) + len(SITES)
    check_politeness(web, shards)
    per_url = stored(shards)
    assert set(per_url) == all_urls(web) and max(per_url.values()) == 1, leases(shards)
    status = quiet_total(redis_server.url())
    assert sum(1 for c in status["crawlers"] if c["pages"] > 0) >= 2  # the work was shared
    out = subprocess.run(websift_command("frontier", "status", "--frontier", redis_server.url(),
                                         "--json"), capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["urls"] == status["urls"]
    # the same figures under /stats of `websift serve --frontier URL` over one shard
    build_index(DataDir.open(shards[0]))
    app = create_app(Settings(data=shards[0], frontier=redis_server.url(), reload_check_ms=0))
    with TestClient(app) as http:
        figures = http.get("/stats").json()["frontier"]
    assert figures["urls"] == status["urls"] and figures["pending"] == 0
    assert figures["cash"]["total"] == pytest.approx(1.0, abs=1e-9)


def test_killed_crawler_loses_nothing(web: TestWeb, redis_server: RedisServer, tmp_path: Path) -> None:
    web.clear()
    shards = [tmp_path / f"c{i}" for i in range(3)]
    procs = [crawler(web, d, redis_server.url()) for d in shards]
    # kill one crawler once it has fetched some pages (its own requests in the log: by shard)
    wait_for(lambda: len(web.entries()) >= 16, "the crawl to be under way", START)
    victim = procs[0]
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    for p in procs[1:]:
        code, err = finish(p)
        assert code == 0, err
    per_url = stored(shards)
    assert set(per_url) == all_urls(web)  # the others took over the victim's hosts
    assert max(per_url.values()) == 1, [u for u, n in per_url.items() if n > 1]
    check_politeness(web, shards)
    quiet_total(redis_server.url())


def test_bad_frontier_one_line_exit_2(
    web: TestWeb, redis_server: RedisServer, tmp_path: Path, run_websift: Callable[..., Any]
) -> None:
    web.clear()
    redis_server.client.select(3)
    redis_server.client.set("not-ours", "1")
    cases = [(f"redis://127.0.0.1:{free_port()}/0", "cannot use the frontier"),
             ("redis://:pw@127.0.0.1:6379/0", "WEBSIFT_REDIS_PASSWORD"),
             ("mysql://127.0.0.1/0", "scheme"),
             (redis_server.url(3), "not a websift frontier")]

    def refused(n: int) -> Any:
        return run_websift("crawl", web.sites["s0"].url("/"), "--data", str(tmp_path / f"d{n}"),
                           "--allow-private", "--quiet", "--frontier", cases[n][0])

    # four independent refusals, each its own data directory: run side by side
    with ThreadPoolExecutor(len(cases)) as pool:
        runs = list(pool.map(refused, range(len(cases))))
    for (_, why), done in zip(cases, runs, strict=True):
        assert done.returncode == 2, done.stderr
        assert why in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    redis_server.client.flushdb()
    redis_server.client.select(0)
    assert web.entries() == []  # refused before any fetch


def test_redis_lost_mid_crawl_stops_and_rerun_resumes(web: TestWeb, tmp_path: Path) -> None:
    srv = RedisServer(tmp_path / "redis", durable=True)
    try:
        web.clear()
        data = tmp_path / "c"
        proc = crawler(web, data, srv.url())
        wait_for(lambda: len(web.entries()) >= 10, "the crawl to be under way", START)
        srv.kill()
        code, err = finish(proc)
        assert code == 2, err
        assert err.strip().splitlines() == [err.strip().splitlines()[-1]], err  # one line
        assert "lost" in err and "run the same command again" in err, err
        srv.start()
        code, err = finish(crawler(web, data, srv.url()))
        assert code == 0, err
        per_url = stored([data])
        assert set(per_url) == all_urls(web) and max(per_url.values()) == 1
        quiet_total(srv.url())
    finally:
        srv.stop()


def test_three_crawlers_on_a_redis_cluster(web: TestWeb, tmp_path: Path) -> None:
    """The same crawl on a three-master Redis Cluster: a host's keys share one slot (hash tag
    ``{h:<origin>}``), so every script runs on one node; the globals live on another."""
    cluster = RedisClusterServers(tmp_path / "cluster")
    try:
        web.clear()
        shards = [tmp_path / f"c{i}" for i in range(3)]
        procs = [crawler(web, d, cluster.url()) for d in shards]
        for p in procs:
            code, err = finish(p)
            assert code == 0, err
        paths = Counter((e.host, e.path) for e in web.entries())
        assert max(paths.values()) == 1, [k for k, v in paths.items() if v > 1]
        check_politeness(web, shards)
        per_url = stored(shards)
        assert set(per_url) == all_urls(web) and max(per_url.values()) == 1
        quiet_total(cluster.url())
        # each host's keys live on the master owning its tag's slot, and the globals on the
        # one owning {g}: the keys are spread as their tags are (the hosts' ports, and so their
        # slots, change from run to run; all five tags on one master is a 1-in-81 draw)
        owners = {tag: owner_of(cluster, tag) for tag in tags(cluster.url())}
        assert len(owners) == 1 + len(SITES), owners
        for tag, owner in owners.items():
            slot = cluster.nodes[0].cluster("keyslot", tag + ":lv")
            holding = [i for i, node in enumerate(cluster.nodes)
                       if int(node.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)) > 0]
            assert holding == [owner], (tag, holding, owner)
        assert {i for i, node in enumerate(cluster.nodes) if node.dbsize() > 0} \
            == set(owners.values())
    finally:
        cluster.stop()


def tags(url: str) -> list[str]:
    """The globals' hash tag and every host's the frontier knows."""
    return [G, *(host_tag(origin) for origin in connect(url).smembers(G + ":hosts"))]


def owner_of(cluster: RedisClusterServers, tag: str) -> int:
    """The index in ``cluster.nodes`` of the master serving the slot of ``tag``."""
    slot = int(cluster.nodes[0].cluster("keyslot", tag + ":lv"))
    for i, port in enumerate(cluster.ports):
        for lo, hi in slot_ranges(cluster.nodes[i], port):
            if lo <= slot <= hi:
                return i
    raise AssertionError(f"no master serves slot {slot} of {tag}")


def slot_ranges(node: Any, port: int) -> list[tuple[int, int]]:
    """The slot ranges the master listening on ``port`` serves, as it reports them."""
    ranges = []
    for line in node.execute_command("CLUSTER", "NODES").splitlines():
        fields = line.split()
        if "myself" in fields[2]:
            assert fields[1].split("@")[0].endswith(f":{port}"), line
            for part in fields[8:]:
                lo, _, hi = part.partition("-")
                ranges.append((int(lo), int(hi or lo)))
    return ranges


def shard_ids(data: Path) -> set[int]:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        assert store.check_integrity() is None
        return {int(uid) for uid in store.url_ids()}


def test_redis_restarted_empty_stops_exit_1_and_ids_are_never_reused(
    web: TestWeb, tmp_path: Path, run_websift: Callable[..., Any]
) -> None:
    """A Redis with no persistence restarted mid-crawl: the crawler notices at its next call
    (the reconnection checks the frontier's ID), commits its batch and exits 1 with one line;
    nothing is written to the empty Redis, and a new frontier made above the shard's IDs
    never gives one of them again."""
    srv = RedisServer(tmp_path / "redis")
    try:
        web.clear()
        data = tmp_path / "c"
        proc = crawler(web, data, srv.url())
        wait_for(lambda: len(web.entries()) >= 10, "the crawl to be under way", START)
        srv.restart()
        restarted = time.monotonic()
        code, err = finish(proc)
        took = time.monotonic() - restarted
        lines = err.strip().splitlines()
        assert code == 1, err
        assert len(lines) == 1 and "lost its data" in lines[0], err
        assert "UNIQUE" not in err and "Traceback" not in err, err
        assert took < 30, took  # no stall: stopped at its next call to Redis
        assert srv.client.dbsize() == 0  # the crawler wrote nothing into the empty Redis
        up_to = int(re.search(r"URL IDs up to (\d+)", lines[0]).group(1))  # type: ignore[union-attr]
        old = shard_ids(data)
        assert old and max(old) == up_to
        with StoreReader.open(DataDir.open(data).store_path) as store:
            summary = json.loads(next(iter(store.crawl_records()))[2])
        assert summary["finish_reason"] == "frontier_lost", summary
        # the same --data on the new, empty Redis: refused (its IDs are the lost frontier's)
        code, err = finish(crawler(web, data, srv.url()))
        assert code == 2 and "does not hold" in err, err
        assert len(err.strip().splitlines()) == 1, err
        # a new frontier above the old shard's IDs, a fresh --data: no ID given twice
        done = run_websift("frontier", "init", "--frontier", srv.url(), "--ids-above", str(up_to))
        assert done.returncode == 0, done.stderr
        web.clear()
        fresh = tmp_path / "c2"
        code, err = finish(crawler(web, fresh, srv.url()))
        assert code == 0, err
        new = shard_ids(fresh)
        assert set(stored([fresh])) == all_urls(web)
        assert min(new) > up_to
    finally:
        srv.stop()


def test_two_scopes_on_one_frontier_refused(web: TestWeb, redis_server: RedisServer,
                                            tmp_path: Path) -> None:
    """The frontier keeps the scope of its first crawler; a crawler with another is refused
    before any fetch, with one line naming the difference (exit 2)."""
    web.clear()
    fenced = crawler(web, tmp_path / "fenced", redis_server.url(), "--fence", "/p/[5-9]$")
    wait_for(lambda: len(web.entries()) >= 1, "the fenced crawl to be under way", START)
    before = len(web.entries())
    code, err = finish(crawler(web, tmp_path / "full", redis_server.url()))
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "scope differs" in err, err
    assert "fences [] here, ['/p/[5-9]$'] there" in err, err
    assert not (tmp_path / "full" / "crawl.sqlite3").exists() or \
        not stored([tmp_path / "full"])  # fetched nothing
    code, err = finish(fenced)
    assert code == 0, err
    assert len(web.entries()) > before
    assert not any(e.path.startswith("/p/") and e.path[-1] in "56789" for e in web.entries())
