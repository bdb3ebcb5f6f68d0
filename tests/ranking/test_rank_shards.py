"""``websift rank --shard A B C``: three crawlers share one frontier (a real redis-server) and
each writes its own store; the global generation written to every shard equals ``websift rank``
over one store holding the union of the same pages and links.

The reference store is built by merging the shards into a copy of the first one with the same
URL IDs (the frontier allocated them), a page's record taken from the shard that fetched it, so
both runs rank exactly the same graph whatever pages the sharded crawl happened to fetch."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from testkit.redis_server import RedisServer
from testkit.testweb import TestWeb, html, words
from testkit.websift_process import REPO, websift_command
from websift.core.datadir import DataDir
from websift.ranking.ranks import Ranks
from websift.store.crawl_store import CrawlStore

pytestmark = [pytest.mark.slow, pytest.mark.redis]

SITES = ("127.0.0.31", "127.0.0.32", "127.0.0.33")
PAGES = 6


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    w = TestWeb()
    for n, address in enumerate(SITES):
        w.add_site(f"s{n}", address, "User-agent: *\nDisallow:\n")
    with w:
        for n in range(len(SITES)):
            site, other = w.sites[f"s{n}"], w.sites[f"s{(n + 1) % len(SITES)}"]
            site.page("/", html(f"s{n}", "".join(f"<a href='/p/{i}'>p</a> " for i in range(2))))
            for i in range(PAGES):
                links = (f"<a href='/p/{(i + 1) % PAGES}'>n</a> <a href='/p/{(i * 3) % PAGES}'>m</a>"
                         f" <a href='{other.url(f'/p/{i}')}'>o</a>")
                site.page(f"/p/{i}", html(f"s{n} p{i}", f"<p>{words(100 * n + i)}</p>{links}"))
        yield w


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(websift_command(*args), capture_output=True, text=True, env=env, check=False,
                          cwd=REPO, timeout=120)


def crawl_shards(web: TestWeb, frontier: str, shards: list[Path]) -> None:
    seeds = [web.sites[f"s{n}"].url("/") for n in range(len(SITES))]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen(
        websift_command("crawl", *seeds, "--data", str(d), "--allow-private", "--delay", "0.02",
                        "--frontier", frontier, "--quiet"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
        for d in shards]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err


def merge(shards: list[Path], out: Path) -> None:
    """One store with every shard's URLs and links (a fetched record beats a discovered one)."""
    shutil.copytree(shards[0], out)
    store = DataDir.open(out).store_path
    conn = sqlite3.connect(store)
    for d in shards[1:]:
        conn.execute("ATTACH ? AS other", (str(DataDir.open(d).store_path),))
        conn.execute("INSERT OR IGNORE INTO urls SELECT * FROM other.urls")
        conn.execute("INSERT OR REPLACE INTO urls SELECT * FROM other.urls WHERE status='fetched'")
        conn.execute("INSERT OR IGNORE INTO links SELECT * FROM other.links")
        conn.commit()
        conn.execute("DETACH other")
    conn.close()


def fetched_pages(data: Path) -> int:
    conn = sqlite3.connect(DataDir.open(data).store_path)
    try:
        return int(conn.execute("SELECT count(*) FROM urls WHERE status='fetched'").fetchone()[0])
    finally:
        conn.close()


def host_of_page(r: Ranks) -> np.ndarray:
    assert r.host is not None and r.hostrank is not None
    return np.where(r.host >= 0, r.hostrank[np.maximum(r.host, 0)], 0.0)


@pytest.fixture(scope="module")
def crawled(web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Ranks]:
    """Three shards of one shared-frontier crawl, and the ranks of one store merging them."""
    root = tmp_path_factory.mktemp("crawl")
    server = RedisServer(root / "redis")
    try:
        shards = [root / f"shard{i}" for i in range(3)]
        crawl_shards(web, server.url(), shards)
    finally:
        server.stop()
    fetched = [fetched_pages(d) for d in shards]
    assert sum(1 for f in fetched if f) >= 2, fetched  # the crawl really was spread
    topic = run("topics", "add", "first", "--pattern", "/p/1$", "--data", str(shards[0]))
    assert topic.returncode == 0, topic.stderr  # read from the first shard by rank --shard
    merge(shards, root / "ref")
    ref = run("rank", "--data", str(root / "ref"), "--quiet")
    assert ref.returncode == 0, ref.stderr
    want = Ranks.open(DataDir.open(root / "ref"))
    assert want.pagerank.size > 3 * PAGES
    return shards, want


def copies(shards: list[Path], out: Path) -> list[Path]:
    """The shards copied (each test ranks its own copies: a generation is written into each)."""
    made = []
    for d in shards:
        shutil.copytree(d, out / d.name)
        made.append(out / d.name)
    return made


def assert_global(shards: list[Path], want: Ranks) -> None:
    for d in shards:
        got = Ranks.open(DataDir.open(d))
        assert got.pagerank.size == want.pagerank.size
        assert np.abs(got.pagerank - want.pagerank).sum() < 1e-9
        assert np.abs(host_of_page(got) - host_of_page(want)).sum() < 1e-9
        assert np.abs(got.opic - want.opic).sum() < 1e-9
        assert np.array_equal(got.level, want.level)
        assert np.array_equal(got.giant_scc, want.giant_scc)
        assert got.topic_names() == ["first"]
        assert np.abs(got.topic("first") - want.topic("first")).sum() < 1e-9


def test_sharded_rank_equals_one_store(crawled: tuple[list[Path], Ranks], tmp_path: Path) -> None:
    shards, want = crawled
    shards = copies(shards, tmp_path)
    done = run("rank", "--shard", *map(str, shards), "--quiet")
    assert done.returncode == 0, done.stderr
    assert_global(shards, want)


def test_dask_sharded_rank_equals_one_store(crawled: tuple[list[Path], Ranks],
                                            tmp_path: Path) -> None:
    """The same global generation from a Dask LocalCluster (two worker processes on loopback)
    reading every shard's links as blocks over global IDs."""
    shards, want = crawled
    shards = copies(shards, tmp_path)
    done = run("rank", "--shard", *map(str, shards), "--engine", "dask", "--workers", "2",
               "--quiet")
    assert done.returncode == 0, done.stderr
    assert "dask: 2 workers" in done.stderr
    assert_global(shards, want)
    assert not any((shards[0] / "tmp").glob("dask-rank-*"))  # the scratch blocks are gone


def test_stores_of_different_frontiers_refused(tmp_path: Path) -> None:
    """Two stores whose URL IDs were not allocated by one frontier: one line, nothing written."""
    for name in ("a", "b"):  # (stores with no frontier's IDs are ranked by URL: test_rank_by_url)
        data = DataDir.create(tmp_path / name)
        with CrawlStore.open(data.store_path) as store:
            store.set_meta("frontier_id", f"frontier-{name}")
    done = run("rank", "--shard", str(tmp_path / "a"), str(tmp_path / "b"), "--quiet")
    assert done.returncode != 0
    assert "one shared frontier" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not any((tmp_path / name / "ranks").glob("*.json"))
