"""``websift up --partitioned --exchange`` on two "machines" (two data directories, one exchange
directory, one real redis-server) over a loopback web of six hosts: the partitioned crawl
splits the pages, one ranker computes the global generation, both servers swap it in, and a
front server over both answers with pages of both shards.

Checked: both machines serve the same round, whose PageRank by URL equals that of ``websift
rank --shard A B`` over the final stores (1e-9 in L1); each machine holds the other's anchor
export; a query the front answers has results from both shards; SIGTERM stops both ``up``
processes with exit 0.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest

from testkit.ports import free_port
from testkit.redis_server import RedisServer
from testkit.testweb import Answer, TestWeb, html, words
from testkit.waiting import wait_for
from testkit.websift_process import REPO, websift_command
from websift.core.checked import read_json
from websift.core.datadir import DataDir
from websift.core.errors import StoreError
from websift.crawler.partitions import lease_key, partition_of
from websift.indexer.anchor_exchange import EXPORT_FORMAT as ANCHORS
from websift.ranking import ranks_format as fmt
from websift.ranking.exchange import FOREIGN_ANCHORS, Exchange, imported_round, rank_digest
from websift.store.schema import FETCHED
from websift.store.views import StoreReader

pytestmark = [pytest.mark.slow, pytest.mark.redis]

SITES = tuple(f"127.0.0.{n}" for n in range(31, 37))
PAGES = 3  # per site, besides its home page
PARTITIONS = 16
TOKEN = "shard-secret-of-the-cluster-test"
COMMON = "cassowary"  # on every page: a query whose answers span both shards
ENV = {**os.environ, "PYTHONPATH": str(REPO), "WEBSIFT_SHARD_TOKEN": TOKEN}
WAIT = 150.0  # seconds, on a loaded machine


@pytest.fixture(scope="module")
def gate() -> threading.Event:
    """Holds the seed's answer until both crawlers share the partitions (else the first to
    start may crawl the whole small web before the other joins)."""
    return threading.Event()


@pytest.fixture(scope="module")
def web(gate: threading.Event) -> Iterator[TestWeb]:
    """Six sites, each page linking on within its site and to the next site; ports drawn
    again until the hosts fall into both halves of the partitions (so both crawlers have
    partitions with work)."""
    for _ in range(40):
        w = TestWeb()
        for n, address in enumerate(SITES):
            w.add_site(f"s{n}", address, "User-agent: *\nDisallow:\n")
        with w:
            half = [partition_of(w.sites[f"s{n}"].url("/"), PARTITIONS) % 2
                    for n in range(len(SITES))]
            if len(set(half)) == 2:
                yield from _pages(w, gate)
                return
    raise AssertionError("no ports put the hosts in both halves of the partitions")


def _pages(w: TestWeb, gate: threading.Event) -> Iterator[TestWeb]:
    for n in range(len(SITES)):
        site, other = w.sites[f"s{n}"], w.sites[f"s{(n + 1) % len(SITES)}"]
        home = html(f"s{n}", f"<p>{words(n)} {COMMON}</p><a href='/p/0'>p0</a> "
                    f"<a href='{other.url('/')}'>over</a>")
        if n == 0:
            def held(path: str, headers: dict[str, str], count: int,
                     body: bytes = home) -> Answer:
                gate.wait(WAIT)
                return Answer(body=body)

            site.page("/", held)
        else:
            site.page("/", home)
        for i in range(PAGES):
            links = (f"<a href='/p/{(i + 1) % PAGES}'>next</a> "
                     f"<a href='{other.url(f'/p/{(i * 3) % PAGES}')}'>over</a>")
            site.page(f"/p/{i}", html(f"s{n} p{i}", f"<p>{words(100 * n + i)} {COMMON}</p>"
                                      f"{links}"))
    yield w


class Up:
    """``websift up --partitioned --exchange`` in a child process, its output in a file."""

    def __init__(self, data: Path, name: str, seed: str, redis_url: str,
                 exchange: Path) -> None:
        self.data, self.name = DataDir(data), name
        self.port = free_port()
        self.log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            websift_command("up", seed, "--data", str(data), "--port", str(self.port),
                            "--allow-private", "--any-domain", "--delay", "0", "--procs", "1",
                            "--partitioned", redis_url, "--partitions", str(PARTITIONS),
                            "--partition-lease", "3", "--exchange", str(exchange),
                            "--shard-name", name, "--rank-every", "2s", "--index-interval",
                            "1s", "--shard-server", "--stop-timeout", "30"),
            stdout=self.log, stderr=self.log, env=ENV, cwd=REPO)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def fetched(self) -> set[str]:
        try:
            with StoreReader.open(self.data.store_path) as store:
                return {p.url for p in store.pages(FETCHED)}
        except StoreError:
            return set()  # not made yet

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # a failed test: the parts die with it (PR_SET_PDEATHSIG)
            self.proc.wait()
        self.log.close()


def _get(port: int, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except OSError:
        return 0, None


def pagerank_by_url(data: DataDir) -> dict[str, float]:
    """The PageRank of every URL ``data``'s live ranks generation covers, by URL."""
    manifest = fmt.read_manifest(data.ranks_dir)
    pr = fmt.load_array(data.ranks_dir, manifest["arrays"]["pagerank"], "pagerank")
    with StoreReader.open(data.store_path) as store:
        return {url: float(pr[uid]) for uid, url in store.urls() if uid < pr.size}


def _l1(a: dict[str, float], b: dict[str, float]) -> float:
    keys = set(a) | set(b)
    return float(np.sum([abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in keys]))


def test_two_machines_one_global_rank_one_search(web: TestWeb, gate: threading.Event,
                                                 redis_server: RedisServer, tmp_path: Path) -> None:
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    seed = web.sites["s0"].url("/")
    url = redis_server.url()
    everything = {web.sites[f"s{n}"].url(p) for n in range(len(SITES))
                  for p in ("/", *(f"/p/{i}" for i in range(PAGES)))}
    ups = [Up(tmp_path / name, name, seed, url, exchange) for name in ("a", "b")]
    front: subprocess.Popen[bytes] | None = None
    try:
        wait_for(lambda: len({redis_server.client.get(lease_key(i)) for i in range(PARTITIONS)}
                             - {None}) == 2, "both crawlers to hold partitions", WAIT)
        gate.set()
        wait_for(lambda: ups[0].fetched() | ups[1].fetched() >= everything,
                 "the two crawlers to fetch every page", WAIT)
        a_pages, b_pages = ups[0].fetched(), ups[1].fetched()
        assert a_pages and b_pages and not a_pages & b_pages  # each page in one shard
        ex = Exchange(exchange)

        def settled() -> bool:
            """One round over the stores as they are now, served by both."""
            exports, last = ex.exports(), ex.last_round()
            if last is None or set(exports) != {"a", "b"}:
                return False
            live = {}
            for u in ups:
                with StoreReader.open(u.data.store_path) as store, store.snapshot():
                    live[u.name] = rank_digest(store)
            if live != {n: s["rank_digest"] for n, s in last["shards"].items()}:
                return False
            return all((r := imported_round(u.data)) is not None and r["round"] == last["round"]
                       for u in ups)

        wait_for(settled, "both machines to serve one round over the final exports", WAIT)
        served = [pagerank_by_url(u.data) for u in ups]

        # each machine holds the other's anchor export as the exchange has it (its follower
        # reads it: indexer/follow.AnchorsDir)
        for u, other in zip(ups, ("b", "a"), strict=True):
            copy = u.data.root / FOREIGN_ANCHORS / f"{other}.json"
            published = exchange / "shards" / other / "anchors.json"
            # the exchange may publish a newer export while the machines run: its copy follows
            wait_for(lambda c=copy, p=published: c.read_bytes() == p.read_bytes(),
                     f"{u.name}'s copy of {other}'s anchor export", WAIT)
            assert read_json(copy, ANCHORS).checksum == read_json(published, ANCHORS).checksum

        # a front server over both machines' servers
        fport = free_port()
        front = subprocess.Popen(websift_command(
            "serve", "--shard", f"http://127.0.0.1:{ups[0].port}", "--shard",
            f"http://127.0.0.1:{ups[1].port}", "--port", str(fport)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, cwd=REPO)

        def answered() -> list[str] | None:
            status, body = _get(fport, f"/search?q={COMMON}&k=50")
            if status != 200 or body["shards"]["answered"] != 2:
                return None
            return [r["url"] for r in body["results"]]

        wait_for(lambda: answered() is not None, "the front server to answer", WAIT)
        urls = set(answered() or [])
        assert urls & a_pages and urls & b_pages, urls

        for u in ups:
            u.proc.send_signal(signal.SIGTERM)
        for u in ups:
            assert u.proc.wait(timeout=WAIT) == 0, u.output()[-3000:]
        out = ups[0].output() + ups[1].output()
        assert "exchange: round" in out and "imported into" in out, out[-3000:]
    finally:
        gate.set()  # a failed test: no request thread left waiting
        for u in ups:  # shown by pytest when the test failed
            print(f"---- up {u.name}\n{u.output()[-6000:]}")
        print(f"---- exchange: {json.dumps(Exchange(exchange).exports(), indent=1)}\n"
              f"{Exchange(exchange).last_round()}")
        if front is not None:
            front.kill()
            front.wait()
        for u in ups:
            u.close()

    # the same PageRank, by URL, as websift rank --shard over the two final stores
    assert served[0].keys() & served[1].keys()
    done = subprocess.run(websift_command("rank", "--quiet", "--shard", str(tmp_path / "a"),
                                          str(tmp_path / "b")),
                          capture_output=True, text=True, env=ENV, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    for u, mine in zip(ups, served, strict=True):
        reference = pagerank_by_url(u.data)
        assert set(mine) == set(reference)
        assert _l1(mine, reference) < 1e-9
    assert _l1({k: v for k, v in served[0].items() if k in served[1]},
               {k: v for k, v in served[1].items() if k in served[0]}) < 1e-9
