"""``websift rank`` while a crawl commits into the same store: every run reads one consistent
snapshot of the store (pages, links, OPIC importance, seeds, hosts), so each exits 0 and writes
a generation whose vectors match in length and sum to 1.

The crawl is a real ``websift crawl`` process on a loopback site that never runs out of pages
(each page links to ten new ones), killed at the end.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from testkit.testweb import Answer, TestWeb, html, words
from testkit.waiting import wait_for
from testkit.websift_process import REPO, websift_command
from websift.core.datadir import DataDir
from websift.core.errors import StoreError
from websift.ranking.ranks import Ranks
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # a crawl and several rank runs in child processes

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
WAIT = 60.0
FANOUT = 10  # new pages each page links to
RUNS = 4  # rank runs while the crawl writes (embedded; each Dask run starts a cluster: 2)


def _page(path: str, headers: dict[str, str], n: int) -> Answer:
    k = int(path.rsplit("/", 1)[1])
    links = " ".join(f"<a href='/w/{FANOUT * k + i}'>w{FANOUT * k + i}</a>"
                     for i in range(1, FANOUT + 1))
    return Answer(body=html(f"page {k}", f"<p>{words(k, 30)}</p>{links} <a href='/'>home</a>"))


@pytest.fixture(scope="module")
def endless_web() -> Iterator[TestWeb]:
    web = TestWeb()
    site = web.add_site("endless", "127.0.0.71", "User-agent: *\nDisallow:\n")
    site.page("/", html("home", "<a href='/w/0'>start</a>"))
    site.prefix("/w/", _page)
    with web:
        yield web


def _url_count(data: Path) -> int:
    try:
        with StoreReader.open(data / "crawl.sqlite3") as store:
            return store.url_count()
    except StoreError:  # not created yet, or its schema not yet written
        return 0


def _check_generation(data: Path, last: int | None) -> int:
    ranks = Ranks.open(DataDir.open(data))
    assert last is None or ranks.generation > last
    n = ranks.node_count
    assert len(ranks.opic) == len(ranks.level) == len(ranks.giant_scc) == n
    assert np.all(np.isfinite(ranks.pagerank)) and abs(ranks.pagerank.sum() - 1.0) < 1e-6
    if ranks.hostrank is not None:
        assert ranks.host is not None and len(ranks.host) == n
        assert abs(ranks.hostrank.sum() - 1.0) < 1e-6
    return ranks.generation


@pytest.mark.parametrize("engine", [[], ["--engine", "dask", "--workers", "1"]],
                         ids=["embedded", "dask"])
def test_rank_runs_while_a_crawl_commits(endless_web: TestWeb, tmp_path: Path,
                                         engine: list[str]) -> None:
    site = endless_web.sites["endless"]
    data = tmp_path / "data"
    crawl = subprocess.Popen(
        websift_command("crawl", site.url("/"), "--data", str(data), "--allow-private",
                        "--delay", "0", "--continuous", "--quiet"),
        env=ENV, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: _url_count(data) > 50, "the crawl's first pages", WAIT)
        last: int | None = None
        for _ in range(RUNS if not engine else 2):
            before = _url_count(data)
            done = subprocess.run(websift_command("rank", "--data", str(data), *engine),
                                  env=ENV, cwd=REPO, capture_output=True, text=True,
                                  timeout=WAIT * 3, check=False)
            assert done.returncode == 0, done.stderr[-2000:]
            last = _check_generation(data, last)
            assert crawl.poll() is None, "the crawl ended: the test no longer ranks during it"
            assert _url_count(data) > before, "the store did not grow during the rank run"
    finally:
        crawl.kill()
        crawl.wait(timeout=30)
