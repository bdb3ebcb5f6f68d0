"""End to end in headless Chromium against ``websift serve`` run as a real process.

What a person sees: a query typed and submitted, ten results with highlighted snippets, page 2,
'why this rank' opened, a result's page-info view; and crawled text holding <script> and
attribute-breaking quotes shown as text, with no script run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from testkit.waiting import START
from tests.api.live import free_port, wait_for
from tests.api.site import GARDEN, HOME, XSS_ANCHOR, XSS_TITLE
from websift.core.datadir import DataDir

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = START
TIMEOUT_MS = 15_000

pytestmark = [pytest.mark.slow,  # a server and headless Chromium
              pytest.mark.chromium,
              pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                 reason=f"{CHROMIUM} missing (scripts/ensure_system_packages.sh)")]


@pytest.fixture(scope="module")
def server(site_data: DataDir) -> Iterator[str]:
    """``websift serve`` over the test site, on a free loopback port."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("WEBSIFT_ADMIN_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "websift.api.cli", "serve", "--data", str(site_data.root),
         "--host", "127.0.0.1", "--port", str(port)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    base = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        if proc.poll() is not None:
            out = proc.stdout.read() if proc.stdout else ""
            raise AssertionError(f"websift serve exited: {out}")
        try:
            return httpx.get(base + "/healthz", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False  # not listening yet

    try:
        wait_for(healthy, "websift serve to answer /healthz", START_TIMEOUT)
        yield base
    finally:
        proc.terminate()
        proc.wait(START_TIMEOUT)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def test_search_paginate_explain_and_page_info(server: str, browser: object) -> None:
    page = browser.new_page()  # type: ignore[attr-defined]
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server + "/")
    page.fill("input[name=q]", "note")
    page.click("button[type=submit]")
    page.wait_for_url("**/?q=note*")
    results = page.locator("li.result")
    assert results.count() == 10
    assert page.locator("li.result .snippet mark").count() >= 10
    assert page.locator("li.result .snippet mark").first.inner_text().lower() == "note"

    page.click("a[rel=next]")
    page.wait_for_url("**offset=10*")
    assert page.locator("li.result").count() == 10
    assert page.locator(".pagination .current").inner_text() == "2"

    why = page.locator("li.result details.why").first
    assert not why.locator("table").is_visible()
    why.locator("summary").click()
    assert why.locator("table").is_visible()
    assert "PageRank" in why.inner_text()

    page.goto(server + "/?q=roses")
    first = page.locator("li.result").first
    assert first.locator("a.title").get_attribute("href") == GARDEN[0]
    first.locator("a.info").click()
    page.wait_for_url("**/page?url=*")
    assert page.locator("h1.page-title").inner_text() == "Garden note 0: roses"
    assert "Links to this page (15)" in page.content()
    page.close()


def test_hostile_page_text_is_shown_as_text_and_never_runs(server: str, browser: object) -> None:
    page = browser.new_page()  # type: ignore[attr-defined]
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server + "/?q=amps+quotes")
    title = page.locator("li.result a.title").first
    assert title.inner_text() == XSS_TITLE
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator("li.result img").count() == 0
    page.goto(server + "/page?" + httpx.QueryParams({"url": HOME}).__str__())
    assert XSS_ANCHOR in page.locator("ul.out-links").inner_text()
    assert page.evaluate("typeof window.__xss") == "undefined"
    page.close()


def test_box_completes_from_suggest_and_did_you_mean_links(server: str, browser: object) -> None:
    page = browser.new_page()  # type: ignore[attr-defined]
    page.set_default_timeout(TIMEOUT_MS)
    asked: list[str] = []
    page.on("request", lambda req: asked.append(req.url) if "/suggest?" in req.url else None)
    page.goto(server + "/")
    page.locator("input[name=q]").press_sequentially("code note 3: gen")
    # Each keystroke's answer fills the list while the box still holds what it answers (a fast
    # server answers "code" before the next key): wait for the whole query's completions.
    page.wait_for_function(
        "() => document.querySelector('datalist#suggestions option')?.value"
        " === 'Code note 3: generators'")
    assert page.locator("input[name=q]").input_value() == "code note 3: gen"
    assert any("q=code+note+3%3A+gen" in u or "q=code%20note%203%3A%20gen" in u for u in asked)

    # a misspelling that finds nothing shows its correction's pages; "search instead for"
    # keeps it as typed, and the "did you mean" link there goes back to the correction
    page.goto(server + "/?q=tulps")
    assert page.locator("li.result").count() == 2
    assert page.locator("input[name=q]").input_value() == "tulips"
    page.locator("p.corrected a").click()
    page.wait_for_url("**/?q=tulps&as_typed=1")
    assert page.locator("li.result").count() == 0
    page.locator("p.did-you-mean a").click()
    page.wait_for_url("**/?q=tulips")
    assert page.locator("li.result").count() == 2
    page.close()


def test_search_works_without_script(server: str, browser: object) -> None:
    context = browser.new_context(java_script_enabled=False)  # type: ignore[attr-defined]
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server + "/")
    page.fill("input[name=q]", "roses")
    page.click("button[type=submit]")
    page.wait_for_url("**/?q=roses*")
    assert page.locator("li.result").count() >= 1
    assert page.locator("datalist#suggestions option").count() == 0
    context.close()
