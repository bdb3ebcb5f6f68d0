"""K requests in flight per host, and a slow server stretching the delay (adaptive politeness)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.testweb import TestWeb, html, max_in_flight, min_start_gap, words
from websift.core.datadir import DataDir
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # crawls over HTTP

LATENCY = 0.2
K = 2
PAGES = 16
JITTER = 0.03  # server-side timestamp allowance (see test_crawl.py)


@pytest.fixture(scope="module")
def slow_web() -> Iterator[TestWeb]:
    web = TestWeb()
    site = web.add_site("slow", "127.0.0.6", "User-agent: *\nDisallow:\n", latency=LATENCY)
    links = "".join(f"<a href='/p/{i}'>p{i}</a> " for i in range(PAGES))
    site.page("/", html("home", f"<p>{words(1)}</p>{links}"))
    for i in range(PAGES):
        site.page(f"/p/{i}", html(f"p{i}", f"<p>{words(100 + i)}</p>"))
    with web:
        yield web


def test_k_in_flight_and_delay_stretched_by_response_time(
    slow_web: TestWeb, run_websift: Callable[..., Any], tmp_path: Path
) -> None:
    done = run_websift(
        "crawl", slow_web.sites["slow"].url("/"), "--data", str(tmp_path / "d"),
        "--allow-private", "--delay", "0", "--concurrency-per-host", str(K), "--quiet",
        "--no-signals",  # the log counts page requests: no /sitemap.xml
    )
    assert done.returncode == 0, done.stderr
    log = slow_web.entries("slow")
    assert len(log) == PAGES + 2  # robots.txt, home, pages
    assert max_in_flight(log) == K  # K reached, never exceeded
    # --delay 0, but each answer takes LATENCY: starts are spaced by LATENCY / K
    assert min_start_gap(log) >= LATENCY / K - JITTER


def test_page_budgets_per_run_and_per_host(
    slow_web: TestWeb, run_websift: Callable[..., Any], tmp_path: Path
) -> None:
    site = slow_web.sites["slow"]
    data = tmp_path / "d"
    base = ["crawl", site.url("/"), "--data", str(data), "--allow-private", "--delay", "0",
            "--concurrency-per-host", str(K), "--quiet", "--no-signals"]  # exact request counts
    slow_web.clear()
    first = run_websift(*base, "--max-pages", "4")
    assert first.returncode == 0 and "note:" not in first.stderr  # the run's own budget
    assert len([e for e in slow_web.entries("slow") if e.path != "/robots.txt"]) == 4
    slow_web.clear()  # the next run resumes: the budgets count pages of that run
    done = run_websift(*base, "--max-pages-per-host", "5")
    assert done.returncode == 0, done.stderr
    assert [e.path for e in slow_web.entries("slow")].count("/robots.txt") == 0
    assert len(slow_web.entries("slow")) == 5
    with StoreReader.open(DataDir.open(data).store_path) as store:
        assert store.status_counts() == {"fetched": 9, "discovered": PAGES + 1 - 9}
        last = store.last_crawl()
    assert last is not None and last[3] is not None
    assert json.loads(last[3])["counts"]["skipped/host_page_limit"] == PAGES + 1 - 9
    # said even by a quiet run: the site was not crawled whole
    assert (f"websift crawl: note: {PAGES + 1 - 9} URLs of hosts that reached the per-host "
            "page limit (5 pages a run) are left for a later run: raise --max-pages-per-host"
            ) in done.stderr
