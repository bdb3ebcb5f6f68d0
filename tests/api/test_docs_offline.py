"""``/docs`` (Swagger UI) works with no internet: every asset comes from this server.

The page is checked as HTML (no absolute URL in it; every asset it names answers 200 with the
right content type; its CSP allows this origin's scripts and its one inline script only), and in
headless Chromium against the app served by uvicorn as ``websift serve`` configures it
(tests/api/live.py), with every request to anywhere but the server refused and recorded: Swagger UI must still list the operations and run one.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.api.live import live_server
from tests.api.test_browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS
from websift.core.datadir import DataDir

# Chromium resolves no host name but the server's address: nothing can reach past loopback.
LOOPBACK_ONLY = ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
CONTENT_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png",
                 ".json": "application/json"}
_REFERENCE = re.compile(r"""(?:src|href)="([^"]+)"|url: '([^']+)'""")


@pytest.fixture
def empty_data(tmp_path: Path) -> DataDir:
    """The docs need no index: a data directory with nothing crawled yet will do."""
    return DataDir.create(tmp_path / "data")


@pytest.fixture
def docs_client(empty_data: DataDir, make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(empty_data)


def _references(page: str) -> list[str]:
    return [a or b for a, b in _REFERENCE.findall(page)]


def test_docs_page_names_only_this_server(docs_client: TestClient) -> None:
    r = docs_client.get("/docs")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert re.findall(r"https?://", r.text) == []  # not a CDN, not the validator badge
    refs = _references(r.text)
    assert len(refs) == 4  # style sheet, icon, Swagger UI's script, the OpenAPI document
    assert all(ref.startswith("/") and not ref.startswith("//") for ref in refs), refs


def test_every_asset_the_docs_page_names_answers_with_its_type(docs_client: TestClient) -> None:
    for ref in _references(docs_client.get("/docs").text):
        r = docs_client.get(ref)
        assert r.status_code == 200, ref
        expected = CONTENT_TYPES[Path(ref).suffix]
        assert r.headers["content-type"].split(";")[0] in {
            expected, "application/javascript" if expected == "text/javascript" else expected
        }, (ref, r.headers["content-type"])
        assert len(r.content) > 1000, ref
    assert docs_client.get("/openapi.json").json()["info"]["title"] == "websift"


def test_docs_csp_allows_this_origin_and_the_one_inline_script(docs_client: TestClient) -> None:
    r = docs_client.get("/docs")
    policy = dict(
        part.strip().split(" ", 1) for part in r.headers["content-security-policy"].split(";")
    )
    inline = re.findall(r"<script>(.*?)</script>", r.text, re.S)
    assert len(inline) == 1
    digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
    assert policy["script-src"] == f"'self' 'sha256-{digest}'"
    assert policy["default-src"] == "'self'"
    assert policy["object-src"] == "'none'"
    assert "unsafe" not in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff"


def test_the_cdn_pages_are_gone_and_the_docs_are_not_an_operation(
    docs_client: TestClient,
) -> None:
    r = docs_client.get("/redoc")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"
    paths = docs_client.get("/openapi.json").json()["paths"]
    assert "/search" in paths
    assert not any(p.startswith("/docs") for p in paths)


# ------------------------------------------------------------------------- in Chromium
@pytest.fixture
def served(empty_data: DataDir) -> Iterator[str]:
    with live_server(empty_data) as base:
        yield base


@pytest.mark.slow
@pytest.mark.chromium
@pytest.mark.skipif(not os.path.exists(CHROMIUM),
                    reason=f"{CHROMIUM} missing (scripts/ensure_system_packages.sh)")
def test_docs_render_and_run_an_operation_with_only_loopback(served: str) -> None:
    from playwright.sync_api import Route, sync_playwright

    refused: list[str] = []
    errors: list[str] = []

    def only_the_server(route: Route) -> None:
        if route.request.url.startswith(served + "/"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + LOOPBACK_ONLY)
        try:
            page = browser.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.route("**/*", only_the_server)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(served + "/docs")

            search = page.locator("#operations-search-search_search_get")
            search.wait_for()
            assert "/search" in search.locator(".opblock-summary-path").inner_text()
            assert page.locator(".opblock").count() >= 8  # search, pages, topics x3, ...
            assert errors == []  # no CSP violation, no script error

            # Run GET /search from the page: a fetch to this origin, which the CSP allows.
            search.locator(".opblock-summary").click()
            search.locator(".try-out__btn").click()
            search.locator("input[placeholder=q]").fill("python")
            search.locator("button.execute").click()
            status = search.locator(".live-responses-table tr.response .response-col_status").first
            status.wait_for()
            assert status.inner_text().strip() == "503"  # nothing indexed yet, and it says so
            body = search.locator(".live-responses-table tr.response .response-col_description")
            assert '"index_missing"' in body.inner_text()
        finally:
            browser.close()
    assert refused == []
    # Chromium logs the 503 itself as a console error; nothing else may be there.
    assert [e for e in errors if "status of 503" not in e] == []
