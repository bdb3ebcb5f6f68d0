"""`websift recrawl`: refresh by OPIC priority with conditional requests; a 304 costs no seq."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit.testweb import LAST_MODIFIED, TestWeb, _changing, _conditional, html, words
from websift.core.datadir import DataDir
from websift.crawler.recrawl import recrawl_schedule
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # crawls and recrawls over HTTP


@pytest.fixture(scope="module")
def fresh_web() -> Iterator[TestWeb]:
    web = TestWeb()
    site = web.add_site("fresh", "127.0.0.8", "User-agent: *\nDisallow:\n")
    paths = ["/etag", "/lastmod", "/news", "/static"]
    site.page("/", html("home", f"<p>{words(1)}</p>" + "".join(f"<a href='{p}'>{p}</a>" for p in paths)))
    site.page("/etag", _conditional("etag-v1", words(2)))
    site.page("/lastmod", _conditional("lastmod-v1", words(3)))
    site.page("/news", _changing)
    site.page("/static", html("static", f"<p>{words(4)}</p><a href='/'>home</a>"))
    with web:
        yield web


def _rows(data: Path) -> dict[str, sqlite3.Row]:
    conn = sqlite3.connect(DataDir.open(data).store_path)
    conn.row_factory = sqlite3.Row
    rows = {r["url"].split("/", 3)[3]: r for r in conn.execute("SELECT * FROM urls")}
    conn.close()
    return rows


@pytest.fixture(scope="module")
def crawled(fresh_web: TestWeb, run_websift: Callable[..., Any],
            tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("recrawl") / "data"
    done = run_websift("crawl", fresh_web.sites["fresh"].url("/"), "--data", str(data),
                       "--allow-private", "--delay", "0", "--quiet")
    assert done.returncode == 0, done.stderr
    return data


def test_schedule_orders_by_cash_and_change_rate(crawled: Path) -> None:
    with StoreReader.open(DataDir.open(crawled).store_path) as store:
        schedule = recrawl_schedule(store, 10)
        fetched = store.status_counts()["fetched"]
        rows = {p.id: p for p in store.pages("fetched")}
    assert len(schedule) == fetched == 5
    priorities = [item.priority for item in schedule]
    assert priorities == sorted(priorities, reverse=True)
    for item in schedule:
        page = rows[item.url_id]
        expected = page.cash * (1 + page.change_count / max(page.fetch_count, 1))
        assert item.priority == pytest.approx(expected)
    assert any(p > 0 for p in priorities)  # cash gathered since the fetch is what ranks them
    with StoreReader.open(DataDir.open(crawled).store_path) as store:
        assert len(recrawl_schedule(store, 2)) == 2
        assert recrawl_schedule(store, 0) == []


def test_dry_run_prints_the_schedule_and_fetches_nothing(
    crawled: Path, fresh_web: TestWeb, run_websift: Callable[..., Any]
) -> None:
    before = len(fresh_web.entries())
    done = run_websift("recrawl", "--dry-run", "--budget", "3", "--data", str(crawled))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    with StoreReader.open(DataDir.open(crawled).store_path) as store:
        schedule = recrawl_schedule(store, 3)
    assert lines[0].split()[0] == "priority" and len(lines) == 4
    assert [line.split()[-1] for line in lines[1:]] == [item.url for item in schedule]
    assert len(fresh_web.entries()) == before


def test_recrawl_sends_validators_and_304_keeps_seq(
    crawled: Path, fresh_web: TestWeb, run_websift: Callable[..., Any]
) -> None:
    before_rows = _rows(crawled)
    start = len(fresh_web.entries())
    done = run_websift("recrawl", "--budget", "10", "--data", str(crawled), "--allow-private",
                       "--delay", "0", "--quiet")
    assert done.returncode == 0, done.stderr
    log = {e.path: e for e in fresh_web.entries()[start:]}
    assert "/robots.txt" not in log  # fresh in the store: not asked again
    assert set(log) == {"/", "/etag", "/lastmod", "/news", "/static"}
    assert log["/etag"].headers.get("if-none-match") == '"etag-v1"' and log["/etag"].status == 304
    assert log["/lastmod"].headers.get("if-modified-since") == LAST_MODIFIED
    assert log["/lastmod"].status == 304
    after = _rows(crawled)
    for path in ("etag", "lastmod"):
        assert after[path]["seq"] == before_rows[path]["seq"]  # nothing to re-index
        assert after[path]["fetch_count"] == 2
        assert after[path]["fetched_at"] > before_rows[path]["fetched_at"]
    assert after["news"]["seq"] > before_rows["news"]["seq"]  # new content, new seq
    assert after["news"]["change_count"] == 1
    assert after["static"]["seq"] == before_rows["static"]["seq"]  # same bytes: no new seq
    assert after["static"]["fetch_count"] == 2 and after["static"]["change_count"] == 0


def test_budget_limits_the_refetches(
    crawled: Path, fresh_web: TestWeb, run_websift: Callable[..., Any]
) -> None:
    with StoreReader.open(DataDir.open(crawled).store_path) as store:
        top = [item.url for item in recrawl_schedule(store, 2)]
    start = len(fresh_web.entries())
    done = run_websift("recrawl", "--budget", "2", "--data", str(crawled), "--allow-private",
                       "--delay", "0", "--quiet")
    assert done.returncode == 0, done.stderr
    fetched = [fresh_web.sites["fresh"].url(e.path) for e in fresh_web.entries()[start:]]
    assert sorted(fetched) == sorted(top)
