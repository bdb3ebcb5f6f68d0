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


def test_sharded_rank_equals_one_store(web: TestWeb, tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis")
    try:
        shards = [tmp_path / f"shard{i}" for i in range(3)]
        crawl_shards(web, server.url(), shards)
    finally:
        server.stop()
    fetched = [fetched_pages(d) for d in shards]
    assert sum(1 for f in fetched if f) >= 2, fetched  # the crawl really was spread
    merge(shards, tmp_path / "ref")
    done = run("rank", "--shard", *map(str, shards), "--quiet")
    assert done.returncode == 0, done.stderr
    ref = run("rank", "--data", str(tmp_path / "ref"), "--quiet")
    assert ref.returncode == 0, ref.stderr
    want = Ranks.open(DataDir.open(tmp_path / "ref"))
    assert want.pagerank.size > 3 * PAGES
    for d in shards:
        got = Ranks.open(DataDir.open(d))
        assert got.pagerank.size == want.pagerank.size
        assert np.abs(got.pagerank - want.pagerank).sum() < 1e-9
        assert np.abs(host_of_page(got) - host_of_page(want)).sum() < 1e-9
        assert np.abs(got.opic - want.opic).sum() < 1e-9
        assert np.array_equal(got.level, want.level)


def test_stores_of_different_frontiers_refused(tmp_path: Path) -> None:
    """Two stores whose URL IDs were not allocated by one frontier: one line, nothing written."""
    for name in ("a", "b"):
        data = DataDir.create(tmp_path / name)
        CrawlStore.open(data.store_path).close()
    done = run("rank", "--shard", str(tmp_path / "a"), str(tmp_path / "b"), "--quiet")
    assert done.returncode != 0
    assert "one shared frontier" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not any((tmp_path / name / "ranks").glob("*.json"))
