"""The operator page, ``GET /admin``, on a real server over loopback: refused without the admin
token, with it each part of ``websift up``, the charts and the removed list; the history grows
as the sampler runs (driven by the test, not by the clock); the login form's cookie; the ring's
bound and its history file; and in headless Chromium the page renders its SVG charts with no
console error."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from tests.api.conftest import ADMIN_TOKEN, settings_for
from tests.api.live import WAIT, free_port, wait_for
from tests.api.site import make_data_dir
from websift.api.admin_series import HISTORY_FILE, Sampler, charts, human, sparkline
from websift.api.app import create_app
from websift.api.prometheus import RequestMetrics
from websift.api.up_status import PartStatus, UpStatus, status_path, write_status
from websift.core.datadir import DataDir

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PARTS = ("crawl", "index", "rank", "serve")


def _up_status(data: DataDir) -> None:
    now = time.time()
    write_status(status_path(data.root), UpStatus(
        pid=os.getpid(), started=now - 600, updated=now, state="running", parts=[
            PartStatus("crawl", "service", "running", pid=101, restarts=2, last_success=now - 3),
            PartStatus("index", "service", "running", pid=102, restarts=0, lag=12.5),
            PartStatus("rank", "job", "idle", restarts=1, last_success=now - 100),
            PartStatus("serve", "service", "backoff", restarts=4),
        ]))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FastAPI, DataDir]]:
    """The app over a private copy of the test site, with up's status file, on loopback; the
    sampler's own period is an hour, so only the test's calls add samples after the first."""
    data = make_data_dir(tmp_path_factory.mktemp("admin") / "data")
    _up_status(data)
    app = create_app(settings_for(data, admin_token=ADMIN_TOKEN, admin_sample_seconds=3600.0))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "the server to start")
    sampler: Sampler = app.state.admin_sampler
    wait_for(lambda: len(sampler.samples()) >= 1, "the sampler's first sample")
    try:
        yield f"http://127.0.0.1:{port}", app, data
    finally:
        server.should_exit = True
        thread.join(WAIT)


def _samples_shown(html: str) -> int:
    found = re.search(r"(\d+) samples, one every", html)
    assert found, html[:2000]
    return int(found.group(1))


def test_admin_refused_without_the_token(served: tuple[str, FastAPI, DataDir]) -> None:
    base, _app, _data = served
    assert httpx.get(base + "/admin").status_code == 401
    assert httpx.get(base + "/admin", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(base + "/admin", cookies={"websift_admin": "forged"}).status_code == 401
    answer = httpx.get(base + "/admin")
    assert 'name="token"' in answer.text and "crawl" not in answer.text


def test_admin_disabled_without_a_token_set(site_data: DataDir, make_client: Any) -> None:
    client = make_client(site_data, admin_token=None, admin_history=False)
    answer = client.get("/admin", headers=AUTH)
    assert answer.status_code == 403
    assert "disabled" in answer.text


def test_admin_page_shows_parts_charts_and_removed(served: tuple[str, FastAPI, DataDir]) -> None:
    base, app, _data = served
    page = httpx.get(base + "/admin", headers=AUTH)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    for name in PARTS:
        assert f'id="part-{name}"' in page.text
    serve_row = re.search(r'id="part-serve">(.*?)</tr>', page.text)
    assert serve_row and "backoff" in serve_row.group(1) and "<td>4</td>" in serve_row.group(1)
    assert 'id="removed"' in page.text
    assert "fetch-to-searchable lag" in page.text and "12.5 s" in page.text
    assert "search latency (mean)" in page.text
    assert page.text.count('<svg class="spark"') >= 9
    # numbers rounded, never a long float
    assert not re.search(r"\d\.\d{5,}", re.sub(r"<svg.*?</svg>", "", page.text, flags=re.S))

    sampler: Sampler = app.state.admin_sampler
    before = _samples_shown(page.text)
    queries_before = next(c for c in charts(sampler.samples()) if c.title == "queries").points
    t = sampler.samples()[-1].t
    metrics = app.state.search_metrics
    for i in range(1, 4):
        done = sum(metrics.statuses().values())
        assert httpx.get(base + "/search", params={"q": "note"}).status_code == 200
        # the timer records once the answer is sent: wait for it, then sample
        wait_for(lambda n=done: sum(metrics.statuses().values()) > n, "the search counted")
        sampler.sample(now=t + 10.0 * i)
    after = httpx.get(base + "/admin", headers=AUTH)
    assert _samples_shown(after.text) == before + 3
    queries = next(c for c in charts(sampler.samples()) if c.title == "queries")
    assert len(queries.points) == len(queries_before) + 3
    assert all(v > 0 for _t, v in queries.points[-2:])  # a search between those samples
    latency = next(c for c in charts(sampler.samples()) if c.title == "search latency (mean)")
    assert len(latency.points) >= 2 and all(v > 0 for _t, v in latency.points)
    assert after.text.count("<polyline") > page.text.count("<polyline")


def test_removed_list_shown(served: tuple[str, FastAPI, DataDir]) -> None:
    removals = pytest.importorskip("websift.api.removals", reason="removals not in this tree")
    base, _app, data = served
    removals.add_removal(data, "host", "spam.example", "ops", "test removal")
    page = httpx.get(base + "/admin", headers=AUTH)
    removed = page.text[page.text.index('id="removed"'):]
    assert "spam.example" in removed and "test removal" in removed and "active" in removed


def test_login_form_sets_a_strict_httponly_cookie(served: tuple[str, FastAPI, DataDir]) -> None:
    base, _app, _data = served
    wrong = httpx.post(base + "/admin/login", data={"token": "nope"})
    assert wrong.status_code == 403 and "set-cookie" not in wrong.headers
    answer = httpx.post(base + "/admin/login", data={"token": ADMIN_TOKEN})
    assert answer.status_code == 303 and answer.headers["location"] == "/admin"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/admin" in cookie
    assert ADMIN_TOKEN not in cookie
    value = answer.cookies["websift_admin"]
    page = httpx.get(base + "/admin", cookies={"websift_admin": value})
    assert page.status_code == 200 and 'id="part-crawl"' in page.text


def test_ring_is_bounded_and_history_survives_a_restart(tmp_path: Path) -> None:
    data = DataDir.create(tmp_path / "data")
    history = data.root / HISTORY_FILE
    metrics = RequestMetrics()
    first = Sampler(data, metrics, keep=3, history=history)
    for i in range(5):
        metrics.record(0.002, 200)
        first.sample(now=1000.0 + 10 * i)
    assert [s.t for s in first.samples()] == [1020.0, 1030.0, 1040.0]
    first.persist()
    second = Sampler(data, metrics, keep=3, history=history)
    assert [s.figures["queries"] for s in second.samples()] == [3.0, 4.0, 5.0]
    assert second.failures == {}
    history.write_text(history.read_text().replace("1030", "1031"))  # damaged: checksum fails
    third = Sampler(data, metrics, keep=3, history=history)
    assert third.samples() == [] and sum(third.failures.values()) == 1


def test_rates_skip_a_counter_reset_and_numbers_are_rounded() -> None:
    from websift.api.admin_series import Sample

    samples = [Sample(0.0, {"queries": 10.0}), Sample(10.0, {"queries": 30.0}),
               Sample(20.0, {"queries": 2.0}), Sample(30.0, {"queries": 12.0})]
    queries = next(c for c in charts(samples) if c.title == "queries")
    assert queries.points == [(10.0, 2.0), (30.0, 1.0)]
    assert human(12345.678, "/s") == "12.3k/s"
    assert human(0.1234567, "ms") == "0.123 ms"
    assert human(None) == "-"
    svg = sparkline([(0.0, 1.0), (5.0, 3.0), (10.0, 2.0)])
    assert svg.startswith("<svg") and "<polyline" in svg and svg.endswith("</svg>")
    long = sparkline([(float(i), float(i % 7)) for i in range(5000)], width=240)
    assert long.count(",") == 240  # one point per pixel column at most


@pytest.mark.slow
@pytest.mark.chromium
@pytest.mark.skipif(not os.path.exists(CHROMIUM),
                    reason=f"{CHROMIUM} missing (scripts/ensure_system_packages.sh)")
def test_admin_page_in_chromium(served: tuple[str, FastAPI, DataDir]) -> None:
    from playwright.sync_api import sync_playwright

    base, _app, _data = served
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(15_000)
            # console errors, script errors, and answers >= 400 but the login page's 401 and
            # the favicon the browser asks for on its own
            page.on("console", lambda m: problems.append(m.text) if m.type == "error"
                    and not m.text.startswith("Failed to load resource") else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("response", lambda r: problems.append(f"{r.status} {r.url}")
                    if r.status >= 400 and not (r.status == 401 and r.url.endswith("/admin"))
                    and not r.url.endswith("/favicon.ico") else None)
            page.goto(base + "/admin")  # 401: the login form
            page.fill("input[name=token]", ADMIN_TOKEN)
            page.click("button[type=submit]")
            page.wait_for_selector("#part-crawl")
            assert page.locator("tr.part").count() == len(PARTS)
            assert page.locator("figure.chart svg.spark").count() >= 9
            assert page.locator("svg.spark polyline").count() >= 1
            box = page.locator("svg.spark").first.bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 20
            assert page.locator("#removed").is_visible()
        finally:
            browser.close()
    assert problems == []
