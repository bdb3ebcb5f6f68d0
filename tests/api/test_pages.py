"""GET /pages and GET /page: what the engine knows of one page, as JSON and as HTML."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from html import unescape
from typing import Any

import pytest
from fastapi.testclient import TestClient

from testkit.waiting import wait_for
from tests.api.site import BASE, DISALLOWED, DUP, GARDEN, HOME, NOINDEX, XSS_ANCHOR
from websift.core.datadir import DataDir


def info(client: TestClient, url: str) -> dict:
    r = client.get("/pages", params={"url": url})
    assert r.status_code == 200, r.text
    return r.json()


def test_indexed_page_with_links_and_importance(client: TestClient) -> None:
    page = info(client, GARDEN[0])
    assert page["status"] == "fetched" and page["http_status"] == 200
    assert page["indexed"] is True and page["not_indexed_reason"] is None
    assert page["indexed_as"] == "page text and anchor text"
    assert page["title"] == "Garden note 0: roses"
    assert page["robots"]["allowed"] is True
    assert page["pagerank"] > 0 and page["pagerank_normalised"] > 1
    assert page["graph"]["level"] is not None
    site = page["graph"]["site"]  # the host graph's PageRank (ranking/host_graph.py)
    assert site["hosts"] >= 1 and 0 < site["host_rank"] <= 1
    assert site["host_rank_normalised"] == pytest.approx(site["host_rank"] * site["hosts"])
    assert site["host_pages"] >= 12 and 1 <= site["position_in_host"] <= site["host_pages"]
    assert 0 < site["rank_in_host"] < 1
    assert page["next_due"]["position"] >= 1 and page["fetched_at_iso"].endswith("+00:00")
    anchors = {(ln["url"], ln["anchor"]) for ln in page["in_links"]}
    assert (GARDEN[5], "rose garden guide") in anchors and (HOME, "garden notes") in anchors
    # 12 garden pages (itself included), garden/11's "next note", the home page, the copy
    assert page["in_link_count"] == len(page["in_links"]) == 15
    assert {ln["url"] for ln in page["out_links"]} == {GARDEN[0], GARDEN[1]}


def test_why_not_indexed(client: TestClient) -> None:
    dup = info(client, DUP)
    assert dup["indexed"] is False and dup["duplicate_of"] == GARDEN[1]
    assert dup["not_indexed_reason"] == f"duplicate of {GARDEN[1]}"
    assert "noindex" in info(client, NOINDEX)["not_indexed_reason"]
    secret = info(client, DISALLOWED)
    # never fetched, but indexed by the anchor text of the link to it (Brin & Page 1998)
    assert secret["indexed"] is True
    assert secret["indexed_as"] == "anchor text only (disallowed by robots.txt)"
    assert secret["robots"] == {"allowed": False, "robots_status": 200,
                                "detail": "Disallow: /private/ (line 2)"}


def test_url_is_matched_in_canonical_form(client: TestClient) -> None:
    assert info(client, BASE.upper().replace("HTTP", "http") + "/garden/0.html")["url"] == GARDEN[0]


def test_unknown_and_bad_urls(client: TestClient) -> None:
    r = client.get("/pages", params={"url": "http://example.org/nothing"})
    assert r.status_code == 404 and "does not know" in r.json()["error"]["message"]
    r = client.get("/pages", params={"url": "not a url"})
    assert r.status_code in (400, 404) and r.json()["error"]["message"]
    r = client.get("/pages")
    assert r.status_code == 422 and r.json()["error"]["message"] == "url: is required"


def test_page_view_is_html_and_escapes_crawled_text(client: TestClient) -> None:
    r = client.get("/page", params={"url": HOME})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    html = r.text
    assert "Links from this page (6)" in html
    assert "<script>window.__xss" not in html
    assert "&lt;script&gt;window.__xss=3&lt;/script&gt;" in html
    assert XSS_ANCHOR not in html
    assert r.text.count("/page?url=") >= 6


def test_page_view_renders_fields_not_python_dicts(client: TestClient) -> None:
    page = info(client, GARDEN[0])
    html = unescape(client.get("/page", params={"url": GARDEN[0]}).text)
    assert "{" not in html.split("<table")[1].split("</table>")[0], "a dict rendered as such"
    assert "host_rank" not in html and "meaning:" not in html
    level = page["graph"]["level"]
    assert f"<th>level</th><td>{level} click" in html
    site = page["graph"]["site"]
    assert f"host rank {site['host_rank']:.6g} ({site['host_rank_normalised']:.3f} \N{MULTIPLICATION SIGN} average" in html
    assert f"number {site['position_in_host']} of the host's {site['host_pages']}" in html
    assert f"<th>next refresh</th><td>{page['next_due']['meaning']} (priority " in html


def test_page_view_errors_are_html_with_4xx(client: TestClient) -> None:
    r = client.get("/page", params={"url": "http://example.org/x"})
    assert r.status_code == 404 and "does not know" in r.text and "<html" in r.text
    r = client.get("/page")
    assert r.status_code == 422 and "say which page" in r.text


def test_links_listed_up_to_max_page_links_and_counted_in_full(
    site_data: DataDir, make_client: Callable[..., TestClient]
) -> None:
    client = make_client(site_data, max_page_links=3)
    page = info(client, GARDEN[0])
    assert page["in_link_count"] == 15 and len(page["in_links"]) == 3
    assert page["out_link_count"] == len(page["out_links"]) == 2
    html = client.get("/page", params={"url": GARDEN[0]}).text
    assert "Links to this page (15, the first 3 shown)" in html
    assert "Links from this page (2)" in html and html.count('class="anchor"') == 3 + 2


def test_healthz_answers_while_page_requests_wait_their_turn(
    site_data: DataDir, make_client: Callable[..., TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """/pages runs at most ``page_concurrency`` at once, the rest waiting without a thread."""
    from websift.api.routes import pages as pages_route

    release = threading.Event()
    lock = threading.Lock()
    running = [0, 0]  # now, most at once
    real = pages_route.page_info

    def held(*args: Any) -> Any:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        release.wait(30)
        with lock:
            running[0] -= 1
        return real(*args)

    monkeypatch.setattr(pages_route, "page_info", held)
    client = make_client(site_data, page_concurrency=1)
    with ThreadPoolExecutor(8) as pool:
        answers = [pool.submit(info, client, GARDEN[0]) for _ in range(8)]
        wait_for(lambda: running[0] == 1, "a /pages request to be running")
        assert client.get("/healthz").status_code == 200
        assert client.get("/metrics").status_code == 200
        release.set()
        assert all(a.result(30)["in_link_count"] == 15 for a in answers)
    assert running[1] == 1
