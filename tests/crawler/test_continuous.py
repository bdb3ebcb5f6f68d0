"""Running a crawl for weeks: ``websift crawl --continuous``, stopped by signals or bounded by
``--duration``; the scope a run was started with, applied by ``recrawl`` and by a crawl resumed
without seeds; and the running crawl's live figures, read by a real ``websift serve``.

The session's stop logic is driven synchronously first (a fake clock and request factory, as in
test_session_unit.py); then real ``websift`` processes crawl loopback sites, and the sites' logs
and the store say what happened.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from testkit.testweb import Answer, TestWeb, html, words
from testkit.waiting import wait_for
from tests.crawler.fake_session import T0, FakeClock, FakeFactory, Sessions
from websift.core.arguments import seconds
from websift.core.datadir import DataDir
from websift.crawler.errors import ScopeError
from websift.crawler.meta import FetchKind
from websift.crawler.pipeline import Fetched
from websift.crawler.runs import read_live, scope_from_json, scope_to_json, stored_scope
from websift.crawler.scope import ScopeConfig
from websift.crawler.session import CrawlConfig, CrawlSession
from websift.crawler.settings import GC_YOUNG_OBJECTS
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # continuous crawls in child processes

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
WAIT = 60.0  # seconds any awaited condition may take
PAGES = 8
SLOW = 1.5  # seconds the slow page takes to answer


# ============================================================================ the session, unit
A = "http://127.0.0.2:8001"


@pytest.fixture
def session(sessions: Sessions) -> Callable[..., tuple[CrawlSession, FakeClock]]:
    def make(**config: Any) -> tuple[CrawlSession, FakeClock]:
        clock = FakeClock()
        cfg = CrawlConfig(seeds=[A + "/"], scope=ScopeConfig(allow_private=True), delay=1.0,
                          **config)
        return sessions.start(cfg, clock, FakeFactory())[0], clock

    return make


def _fetch_all(s: CrawlSession, clock: FakeClock) -> None:
    """robots.txt, then the seed page (no links): the frontier has nothing left to discover."""
    robots = s.next_request(clock())
    assert robots is not None and robots.meta.kind is FetchKind.ROBOTS
    s.release(robots.meta, 0.01)
    s.on_robots(robots.meta, 200, b"User-agent: *\nDisallow:\n")
    clock.now += 1.0
    page = s.next_request(clock())
    assert page is not None and page.url == A + "/"
    s.release(page.meta, 0.01)
    s.on_response(page.meta, Fetched(
        uid=page.meta.page_id, url=page.url, status=200,
        headers=[("Content-Type", "text/html")], body=b"<html><body>x</body></html>",
        depth=0, fetched_at=clock()))
    clock.now += 1.0


def test_a_continuous_session_waits_instead_of_ending(session: Any) -> None:
    s, clock = session(continuous=True)
    _fetch_all(s, clock)
    assert s.next_request(clock()) is None
    assert s.has_pending()  # nothing due is a wait, not the end
    assert s.wake_at is not None and clock() < s.wake_at <= clock() + 1.0
    s.request_stop("signal_SIGTERM")
    assert not s.has_pending() and s.next_request(clock()) is None
    summary = s.close("finished")  # Scrapy's word for the idle close that follows
    assert summary["finish_reason"] == "signal_SIGTERM"
    assert summary["counts"]["fetch/discovery"] == 1 and "fetch/refresh" not in summary["counts"]
    assert summary["live"]["state"] == "signal_SIGTERM"


def test_without_continuous_the_same_session_ends(session: Any) -> None:
    s, clock = session()
    _fetch_all(s, clock)
    assert s.next_request(clock()) is None
    assert not s.has_pending()


def test_duration_ends_the_run_and_wakes_for_it(session: Any) -> None:
    s, clock = session(continuous=True, duration=30.0)
    first = s.next_request(clock())  # robots.txt
    assert first is not None and s.has_pending()
    assert s.next_request(clock()) is None  # the host is busy with robots.txt
    assert s.wake_at is not None and s.wake_at <= T0 + 30.0
    clock.now = T0 + 30.0
    assert not s.has_pending() and s.next_request(clock()) is None
    assert s.stop_reason == "duration"
    assert s.close("finished")["finish_reason"] == "duration"


def test_live_figures_are_committed_with_the_run(session: Any) -> None:
    s, clock = session(continuous=True)
    _fetch_all(s, clock)
    s.batch.commit()  # the batch commit writes the figures
    with StoreReader.open(s.store.path) as reader:
        run = read_live(reader, clock())
        scope = stored_scope(reader)
    assert run is not None and run.kind == "crawl" and run.finished is None and run.running
    assert run.figures["pid"] == os.getpid() and run.figures["pages"] == 1
    assert run.figures["discovery_fetches"] == 1 and run.figures["refresh_fetches"] == 0
    assert run.figures["continuous"] is True and isinstance(run.figures["frontier"], dict)
    assert scope == ScopeConfig(allow_private=True)
    clock.now += 1000.0  # a run that stops writing (killed) is no longer running
    with StoreReader.open(s.store.path) as reader:
        stale = read_live(reader, clock())
    assert stale is not None and not stale.running


def test_a_scope_round_trips_and_unknown_settings_are_refused() -> None:
    scope = ScopeConfig(allow_domains=("a.example",), filters=("x",), fences=("y", "z"),
                        max_depth=3, allow_private=True, allow_ip=("10.0.0.0/8",))
    assert scope_from_json(json.loads(json.dumps(scope_to_json(scope)))) == scope
    with pytest.raises(ScopeError, match="does not know \\(deny_asn\\)"):
        scope_from_json({**scope_to_json(scope), "deny_asn": [1]})


@pytest.mark.parametrize(("text", "value"), [("90", 90.0), ("1.5", 1.5), ("30m", 1800.0),
                                             ("2h", 7200.0), ("1d", 86400.0), ("1w", 604800.0),
                                             (" 10S ", 10.0)])
def test_durations(text: str, value: float) -> None:
    assert seconds()(text) == value


@pytest.mark.parametrize("text", ["", "h", "2x", "-1", "nan", "inf", "0"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        seconds(strict=True)(text)


# ============================================================================ real processes
@dataclass
class Flags:
    home_links_off_site: bool = False
    slow_started: threading.Event = field(default_factory=threading.Event)
    slow_seconds: float = SLOW


@pytest.fixture(scope="module")
def flags() -> Flags:
    return Flags()


@pytest.fixture(scope="module")
def web(flags: Flags) -> Iterator[TestWeb]:
    w = TestWeb()
    allow = "User-agent: *\nDisallow:\n"
    cont = w.add_site("cont", "127.0.0.71", allow)
    cont.page("/", html("home", "".join(f"<a href='/p/{i}'>p{i}</a> " for i in range(PAGES))))
    for i in range(PAGES):
        cont.page(f"/p/{i}", html(f"p{i}", f"<p>{words(800 + i)}</p><a href='/'>home</a>"))

    slow = w.add_site("slow", "127.0.0.72", allow)
    slow.page("/", html("slow home", "<a href='/slow'>slow</a> <a href='/fast'>fast</a>"))
    slow.page("/fast", html("fast", f"<p>{words(900)}</p>"))

    def slow_page(path: str, headers: dict[str, str], n: int) -> Answer:
        flags.slow_started.set()
        w.pause(flags.slow_seconds)
        return Answer(body=html("slow", f"<p>{words(901)}</p>"))

    slow.page("/slow", slow_page)

    off = w.add_site("off", "127.0.0.73", allow)
    off.page("/", html("off", "<p>elsewhere</p>"))
    scoped = w.add_site("scoped", "127.0.0.74", allow)

    def scoped_home(path: str, headers: dict[str, str], n: int) -> Answer:
        extra = f"<a href='{off.url('/')}'>elsewhere</a>" if flags.home_links_off_site else ""
        return Answer(body=html("scoped", f"<p>{words(902 + n)}</p><a href='/a'>a</a>{extra}"))

    scoped.page("/", scoped_home)
    scoped.page("/a", html("a", f"<p>{words(903)}</p><a href='/'>home</a>"))
    with w:
        yield w


def websift(*args: str) -> list[str]:
    return [sys.executable, "-m", "websift.api.cli", *args]


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(websift(*args), env=ENV, cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False)


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(websift(*args), env=ENV, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def crawl_args(site_url: str, data: Path, *extra: str) -> list[str]:
    return ["crawl", site_url, "--data", str(data), "--allow-private", "--delay", "0", *extra]


def last_run(data: Path) -> tuple[float | None, dict[str, Any]]:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        row = store.last_crawl()
    assert row is not None and row[3] is not None
    return row[2], json.loads(row[3])


def total_cash(data: Path) -> float:
    """Stored cash (each page's base plus its pending dividends) plus the virtual page's: the
    constant of Lemma 2.2; the file must be sound first."""
    with StoreReader.open(DataDir.open(data).store_path) as store:
        assert store.check_integrity() is None
        return store.opic_cash_total()


def statuses(data: Path) -> dict[str, int]:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        return store.status_counts()


def stop(child: subprocess.Popen[str]) -> None:
    if child.poll() is None:
        child.kill()
        child.wait(timeout=30)


def test_sigterm_stops_a_continuous_crawl_with_its_batch_committed(
    web: TestWeb, tmp_path: Path
) -> None:
    site = web.sites["cont"]
    data = tmp_path / "data"
    err_path = tmp_path / "stderr"
    with open(err_path, "w") as err_file:
        child = subprocess.Popen(websift(*crawl_args(site.url("/"), data, "--continuous")),
                                 env=ENV, cwd=REPO, stdout=subprocess.PIPE, stderr=err_file,
                                 text=True)
    try:
        # every page served: the crawl now has nothing due, and waits instead of ending
        assert web.wait_for(lambda log: sum(1 for e in log if e.host == site.hostport
                                            and e.path.startswith("/p/")) >= PAGES, WAIT)
        # a progress line with all of them (one a second, while it waits)
        _wait(lambda: f"(discovery {PAGES + 1}, refresh 0)" in err_path.read_text(),
              "a progress line")
        assert child.poll() is None
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=WAIT)
    finally:
        stop(child)
    err = err_path.read_text()
    assert child.returncode == 0, err
    finished, summary = last_run(data)
    assert finished is not None and summary["finish_reason"] == "signal_SIGTERM"
    assert statuses(data).get("fetched") == PAGES + 1  # every answered page committed
    assert total_cash(data) == pytest.approx(1.0, abs=1e-9)
    assert summary["counts"]["fetch/discovery"] == PAGES + 1
    assert summary["scope"]["allow_domains"] == [site.address]
    assert "signal_SIGTERM" in out  # the summary table


def test_requests_in_flight_finish_after_sigterm_and_nothing_new_starts(
    web: TestWeb, flags: Flags, tmp_path: Path
) -> None:
    site = web.sites["slow"]
    data = tmp_path / "data"
    flags.slow_started.clear()
    child = start(*crawl_args(site.url("/"), data, "--continuous", "--quiet",
                              "--concurrency-per-host", "1"))
    try:
        assert flags.slow_started.wait(WAIT)  # /slow is being answered
        signalled = time.time()
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=WAIT)
    finally:
        stop(child)
    assert child.returncode == 0, err
    log = web.entries("slow")
    slow = [e for e in log if e.path == "/slow"]
    assert len(slow) == 1 and slow[0].status == 200 and slow[0].end > signalled
    assert [e.path for e in log if e.start > signalled] == []  # nothing new after the signal
    with StoreReader.open(DataDir.open(data).store_path) as store:
        page = store.page_by_url(site.url("/slow"))
    assert page is not None and page.status == "fetched"  # the in-flight answer was kept
    assert total_cash(data) == pytest.approx(1.0, abs=1e-9)


def test_a_second_signal_stops_at_once(web: TestWeb, flags: Flags, tmp_path: Path) -> None:
    site = web.sites["slow"]
    data = tmp_path / "data"
    flags.slow_started.clear()
    flags.slow_seconds = 4 * WAIT  # far longer than the test may take
    child = start(*crawl_args(site.url("/"), data, "--continuous", "--quiet"))
    try:
        assert flags.slow_started.wait(WAIT)
        child.send_signal(signal.SIGTERM)

        def state() -> str | None:
            with StoreReader.open(DataDir.open(data).store_path) as store:
                live = read_live(store, time.time())
            return None if live is None else live.figures.get("state")

        # the first signal was taken (a second one sent at once could merge with it)
        _wait(lambda: state() == "stopping", "the crawl to be stopping")
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=WAIT)  # well before the slow answer would come
    finally:
        flags.slow_seconds = SLOW
        stop(child)
    assert child.returncode == 130, err
    finished, summary = last_run(data)
    assert finished is not None and summary["finish_reason"] == "forced_stop"
    assert total_cash(data) == pytest.approx(1.0, abs=1e-9)
    with StoreReader.open(DataDir.open(data).store_path) as store:
        page = store.page_by_url(site.url("/slow"))
    assert page is not None and page.status == "discovered"  # abandoned: the next run takes it


def test_duration_bounds_a_continuous_run(web: TestWeb, tmp_path: Path) -> None:
    site = web.sites["cont"]
    data = tmp_path / "data"
    began = time.monotonic()
    done = run(*crawl_args(site.url("/"), data, "--continuous", "--duration", "3s", "--quiet"))
    took = time.monotonic() - began
    assert done.returncode == 0, done.stderr
    finished, summary = last_run(data)
    assert finished is not None and summary["finish_reason"] == "duration"
    assert 3.0 <= summary["seconds"] < 3.0 + 5.0 and took < 30
    assert summary["settings"]["duration"] == 3.0 and summary["settings"]["max_pages"] is None


def test_recrawl_and_a_resumed_crawl_apply_the_stored_scope(
    web: TestWeb, flags: Flags, tmp_path: Path
) -> None:
    site, off = web.sites["scoped"], web.sites["off"]
    data = tmp_path / "data"
    flags.home_links_off_site = False
    done = run(*crawl_args(site.url("/"), data, "--quiet"))
    assert done.returncode == 0, done.stderr
    assert statuses(data) == {"fetched": 2}
    # the home page now links off-site; a recrawl finds the link while refreshing
    flags.home_links_off_site = True
    try:
        served = len(web.entries("scoped"))
        done = run("recrawl", "--data", str(data), "--allow-private", "--delay", "0", "--quiet")
        assert done.returncode == 0, done.stderr
        assert "/" in [e.path for e in web.entries("scoped")[served:]]  # home was refetched
        with StoreReader.open(DataDir.open(data).store_path) as store:
            found = store.page_by_url(off.url("/"))
        assert found is not None and found.status == "out_of_scope"  # judged by the crawl's scope
        # a crawl resumed without seeds keeps that scope too
        done = run("crawl", "--data", str(data), "--allow-private", "--delay", "0", "--quiet")
        assert done.returncode == 0, done.stderr
        assert web.entries("off") == []  # not even its robots.txt
        _, summary = last_run(data)
        assert summary["scope"]["allow_domains"] == [site.address]
    finally:
        flags.home_links_off_site = False


def test_a_crawl_without_seeds_needs_an_earlier_one(tmp_path: Path) -> None:
    done = run("crawl", "--data", str(tmp_path / "new"))
    assert done.returncode == 2
    assert "no SEED_URL given and no earlier crawl" in done.stderr
    done = run("crawl", "--data", str(tmp_path / "new"), "--allow-domain", "example.org")
    assert done.returncode == 2 and "--allow-domain set a new scope" in done.stderr


def test_stats_and_metrics_show_the_running_crawl(web: TestWeb, tmp_path: Path) -> None:
    """A real ``websift serve`` over the data directory a real continuous crawl writes."""
    site = web.sites["cont"]
    data = tmp_path / "data"
    assert run(*crawl_args(site.url("/"), data, "--quiet", "--max-pages", "3")).returncode == 0
    assert run("index", "--data", str(data), "--quiet").returncode == 0
    port = _free_port()
    server = start("serve", "--data", str(data), "--port", str(port))
    crawler = None
    try:
        base = f"http://127.0.0.1:{port}"
        _wait(lambda: _get(base + "/healthz") is not None, "websift serve")
        stats = json.loads(_get(base + "/stats") or "{}")
        assert stats["live_crawl"]["running"] is False  # the first crawl finished
        # resumed without seeds: the stored scope, the rest of the site, then waiting
        crawler = start("crawl", "--data", str(data), "--allow-private", "--delay", "0",
                        "--continuous", "--quiet")

        def live() -> dict[str, Any]:
            return json.loads(_get(base + "/stats") or "{}").get("live_crawl") or {}

        # (the crawl's pid is shown to the admin token only: running and pages say it is this one)
        _wait(lambda: live().get("running") is True and live().get("pages", 0) >= PAGES - 2,
              "the running crawl's figures")
        now = live()
        assert now["running"] is True and now["continuous"] is True and now["finished"] is None
        assert now["discovery_fetches"] >= PAGES - 2 and now["kind"] == "crawl"
        assert now["frontier"] and now["virtual_cash"] is not None
        # the crawling process's collector: generation 0 collected less often than CPython's
        # default, every collection timed
        assert now["gc"]["threshold"][0] == GC_YOUNG_OBJECTS != gc.get_threshold()[0]
        assert set(now["gc"]["pauses"]) == {"0", "1", "2"}
        samples = [s for f in text_string_to_metric_families(_get(base + "/metrics") or "")
                   for s in f.samples]
        metrics = {s.name: s.value for s in samples if not s.labels}
        assert metrics["websift_crawl_running"] == 1
        assert metrics["websift_crawl_pages_total"] >= PAGES - 2
        assert {s.labels["generation"] for s in samples
                if s.name == "websift_crawl_gc_pause_seconds_total"} == {"0", "1", "2"}
        crawler.send_signal(signal.SIGTERM)
        assert crawler.wait(timeout=WAIT) == 0
        ended = live()
        assert ended["running"] is False and ended["state"] == "signal_SIGTERM"
        assert ended["finished"] is not None
    finally:
        if crawler is not None:
            stop(crawler)
        server.send_signal(signal.SIGINT)
        try:
            server.communicate(timeout=30)
        finally:
            stop(server)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:  # a loopback test server
            return str(r.read().decode())
    except OSError:
        return None


def _wait(condition: Callable[[], bool], what: str) -> None:
    wait_for(condition, what, WAIT)
