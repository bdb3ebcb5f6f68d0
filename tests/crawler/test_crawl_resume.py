"""Crash safety for real: `websift crawl` killed with SIGKILL mid-crawl, then started again.

The crawl runs in a child process against a local site; the test waits on the site's request
log until N pages were served, kills the crawler with SIGKILL, checks that the store opens
cleanly with its OPIC cash intact, restarts the crawl and checks that it finishes the site
without fetching again any page whose step had committed, and stores every page exactly once.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.testweb import TestWeb, html, words
from websift.core.datadir import DataDir
from websift.store.schema import FETCHED
from websift.store.views import StoreReader
from websift.store.warc import WarcLocation, read_response

pytestmark = pytest.mark.slow  # a crawl killed and resumed

REPO = Path(__file__).resolve().parents[2]
PAGES = 60
KILL_AFTER = 45  # page requests served before the kill: more than one group commit (32 steps)


@pytest.fixture(scope="module")
def many_web() -> Iterator[TestWeb]:
    web = TestWeb()
    site = web.add_site("many", "127.0.0.7", "User-agent: *\nDisallow: /never\n")
    site.page("/", html("home", "".join(f"<a href='/p/{i}'>p{i}</a> " for i in range(0, PAGES, 6))))
    for i in range(PAGES):
        kids = {(i + 1) % PAGES, (i * 7 + 3) % PAGES}
        links = "".join(f"<a href='/p/{k}'>p{k}</a> " for k in sorted(kids))
        site.page(f"/p/{i}", html(f"p{i}", f"<p>{words(300 + i)}</p>{links}<a href='/'>home</a>"))
    with web:
        yield web


def _store_state(data: Path) -> tuple[set[str], float]:
    path = DataDir.open(data).store_path
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        fetched = {u for (u,) in conn.execute("SELECT url FROM urls WHERE status='fetched'")}
    finally:
        conn.close()
    with StoreReader.open(path) as reader:  # each page's base plus pending dividends, + virtual
        return fetched, reader.opic_cash_total()


def test_kill_9_then_resume(many_web: TestWeb, tmp_path: Path) -> None:
    site = many_web.sites["many"]
    data = tmp_path / "data"
    args = [sys.executable, "-m", "websift.api.cli", "crawl", site.url("/"), "--data", str(data), "--allow-private",
            "--delay", "0.02", "--quiet", "--no-signals"]  # compares the pages fetched
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def pages_served(log: list) -> int:  # type: ignore[type-arg]
        return sum(1 for e in log if e.host == site.hostport and e.path.startswith("/p/"))

    child = subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        assert many_web.wait_for(lambda log: pages_served(log) >= KILL_AFTER, timeout=60)
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    served_before = len(many_web.entries("many"))

    committed, total_cash = _store_state(data)
    assert 0 < len(committed) < PAGES + 1  # some batches committed, the crawl was cut short
    assert total_cash == pytest.approx(1.0, abs=1e-9)  # Lemma 2.2 holds in what committed

    done = subprocess.run(args, env=env, cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    after = {site.url(e.path) for e in many_web.entries("many")[served_before:]}
    assert after & committed == set()  # a committed page is never fetched again
    assert site.url("/robots.txt") not in after  # robots.txt was committed with its age

    fetched, total_cash = _store_state(data)
    assert len(fetched) == PAGES + 1
    assert after | committed == fetched  # the restart fetched exactly what had not committed
    assert total_cash == pytest.approx(1.0, abs=1e-9)
    with StoreReader.open(DataDir.open(data).store_path) as store:
        rows = [(p.url, p.fetch_count, p.seq, p.warc_file, p.warc_offset, p.warc_length)
                for p in store.pages(FETCHED)]
        assert store.status_counts() == {"fetched": PAGES + 1}
    assert all(count == 1 for _, count, *_ in rows)  # stored once each
    assert len({seq for _, _, seq, *_ in rows}) == len(rows)
    assert len({(f, o) for *_, f, o, _ in rows}) == len(rows)
    warc_dir = DataDir.open(data).warc_dir
    for url, _, _, wfile, woff, wlen in rows:
        assert read_response(warc_dir, WarcLocation(wfile, woff, wlen)).url == url
