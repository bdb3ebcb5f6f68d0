"""``websift rank`` and ``websift index`` while a crawl commits into the same store.

Rank reads pages, links, OPIC importance, seeds and hosts from one consistent snapshot of the
store, so each run exits 0 and writes a generation whose vectors match in length and sum to 1:
first with a crawl's commit landing between two of rank's reads every time (the reader's
``url_ids`` commits a new page and its link through a real CrawlStore before it reads), then
beside a real ``websift crawl --continuous`` process on a loopback site that never runs out of
pages (each page links to ten new ones), killed at the end.  The index bounds its reads by the
content sequence number it read first: ``websift index`` runs beside the same crawl.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from ranking_crawl import PY, build_crawl

from testkit.testweb import Answer, TestWeb, html, words
from testkit.waiting import wait_for
from testkit.websift_process import REPO, websift_command
from websift.core.datadir import DataDir
from websift.core.errors import StoreError
from websift.indexer.manifest import read_manifest, verify_segment
from websift.ranking.rank_job import run_rank, run_rank_shards
from websift.ranking.ranks import Ranks
from websift.store.crawl_store import CrawlStore, Link
from websift.store.views import StoreReader

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
WAIT = 60.0
FANOUT = 10  # new pages each page links to
RUNS = 2  # rank runs while the crawl writes
INDEX_RUNS = 2  # index runs while the crawl writes
INDEX_ATTEMPTS = 8  # index runs at most, to have INDEX_RUNS of them overlap a commit
# Seconds between two fetches beside the index: none, so the crawl commits several times a
# second (every COMMIT_EVERY_STEPS steps), more often than an index run lasts (its start-up
# alone is about 0.3 s).  With a delay it committed about once a second (COMMIT_EVERY_SECONDS),
# and a run started just after a commit ended before the next on a fast machine (0.4 s).
INDEX_DELAY = "0"


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


# ============================================================================ a commit mid-read
@pytest.mark.parametrize("how", ["one store", "shards"])
def test_a_commit_between_two_reads_is_not_seen(tmp_path: Path, how: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    data = build_crawl(tmp_path / "data")
    with StoreReader.open(data.store_path) as store:
        nodes = store.max_url_id() + 1
    url_ids = StoreReader.url_ids
    commits = []

    def url_ids_after_a_commit(self: StoreReader) -> np.ndarray:
        with CrawlStore.open(data.store_path) as writer, writer.transaction():
            new, _ = writer.add_url(f"http://py.example/new-{len(commits)}", depth=1)
            src = writer.url_id(PY)
            assert src is not None
            writer.record_fetched(src, http_status=200, content_type="text/html", warc=None,
                                  content_hash="changed", links=[Link(new, "new", False)])
            writer.update_page(new, importance=1.0)
        commits.append(new)
        return url_ids(self)

    monkeypatch.setattr(StoreReader, "url_ids", url_ids_after_a_commit)
    if how == "shards":
        run_rank_shards([data])
    else:
        run_rank(data)
    assert commits  # the commit landed mid-read
    ranks = Ranks.open(data)
    assert ranks.node_count == nodes  # as of the state the run started from
    assert abs(ranks.pagerank.sum() - 1.0) < 1e-9
    assert len(ranks.opic) == nodes and ranks.host is not None and len(ranks.host) == nodes


# ============================================================================ beside a crawl
def _url_count(data: Path) -> int:
    try:
        with StoreReader.open(data / "crawl.sqlite3") as store:
            return store.url_count()
    except StoreError:  # not created yet, or its schema not yet written
        return 0


def _start_crawl(url: str, data: Path, delay: str = "0") -> subprocess.Popen[str]:
    return subprocess.Popen(
        websift_command("crawl", url, "--data", str(data), "--allow-private", "--delay", delay,
                        "--continuous", "--quiet"),
        env=ENV, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)


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


@pytest.mark.slow  # a crawl and several rank runs in child processes
def test_rank_runs_while_a_crawl_commits(endless_web: TestWeb, tmp_path: Path) -> None:
    """With the Dask engine (its reads are spread out the most; the embedded one is the same
    snapshot, tested above)."""
    engine = ["--engine", "dask", "--workers", "1"]
    site = endless_web.sites["endless"]
    data = tmp_path / "data"
    crawl = _start_crawl(site.url("/"), data)
    try:
        wait_for(lambda: _url_count(data) > 50, "the crawl's first pages", WAIT)
        last: int | None = None
        for _ in range(RUNS):
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


@pytest.mark.slow  # a crawl and several index runs in child processes
def test_index_runs_while_a_crawl_commits(endless_web: TestWeb, tmp_path: Path) -> None:
    """``websift index`` beside the same crawl: it bounds its reads by the content sequence
    number it read first, so each run exits 0 and writes a sound, newer manifest."""
    site = endless_web.sites["endless"]
    data = tmp_path / "data"
    crawl = _start_crawl(site.url("/"), data, INDEX_DELAY)
    try:
        wait_for(lambda: _url_count(data) > 50, "the crawl's first pages", WAIT)
        last_seq, after, overlapped = 0, 0, 0
        # An index run of a few hundred pages can end between two of the crawl's commits:
        # runs go on until INDEX_RUNS of them had a commit land while they ran, each checked.
        for _ in range(INDEX_ATTEMPTS):
            wait_for(lambda after=after: _url_count(data) > after, "a commit since the last run",
                     WAIT)
            before = _url_count(data)
            done = subprocess.run(websift_command("index", "--data", str(data)),
                                  env=ENV, cwd=REPO, capture_output=True, text=True,
                                  timeout=WAIT * 3, check=False)
            assert done.returncode == 0, done.stderr[-2000:]
            manifest = read_manifest(DataDir.open(data).index_dir)
            for entry in manifest.segments:
                verify_segment(DataDir.open(data).index_dir / entry.name, entry)
            assert manifest.last_seq > last_seq
            last_seq = manifest.last_seq
            assert crawl.poll() is None, "the crawl ended: the test no longer indexes during it"
            after = _url_count(data)
            overlapped += after > before
            if overlapped == INDEX_RUNS:
                break
        assert overlapped == INDEX_RUNS, f"a commit landed during {overlapped} index runs"
    finally:
        crawl.kill()
        crawl.wait(timeout=30)
