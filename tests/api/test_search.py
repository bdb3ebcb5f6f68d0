"""GET /search over a real indexed and ranked data directory: shape, ranking, caps, errors."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.api.site import CODE, DUP, GARDEN, NOINDEX, XSS
from websift.indexer.settings import BM25FSettings


def search(client: TestClient, **params: object) -> dict:
    r = client.get("/search", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def assert_error(r, status: int, code: str, words: str) -> None:  # type: ignore[no-untyped-def]
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert words in body["error"]["message"]


def test_response_shape_and_signals(client: TestClient) -> None:
    body = search(client, q="roses", k=5)
    assert body["query"] == "roses" and body["total"] >= 2 and body["took_ms"] >= 0
    first = body["results"][0]
    assert set(first) >= {"url", "title", "snippet", "score", "signals", "highlights"}
    assert set(first["signals"]) >= {"text", "pagerank", "topic"}
    assert first["signals"]["topic"] is None and first["explain"] is None
    # score = text + prior, and the prior never exceeds the weight (plus what fetched pages
    # gain over the site's pages known only from links)
    for r in body["results"]:
        s = r["signals"]
        assert r["score"] == pytest.approx(s["text"] + s["prior"], rel=1e-6)
        assert 0 <= s["prior"] <= 2.0 + BM25FSettings().fetched_prior
    # highlights point at the query word in the snippet
    a, b = first["highlights"][0]
    assert first["snippet"][a:b].lower().startswith("rose")


def test_importance_breaks_ties_between_equal_text(client: TestClient) -> None:
    # Every note page matches 'note' about equally; the garden and code hubs (linked from
    # every page of their topic) have the highest PageRank and come first.
    body = search(client, q="note", k=2)
    assert {r["url"] for r in body["results"]} == {GARDEN[0], CODE[0]}
    assert all(r["signals"]["pagerank"] > 1.0 for r in body["results"])


def test_duplicates_and_noindex_are_not_results(client: TestClient) -> None:
    urls = {r["url"] for r in search(client, q="note", k=100)["results"]}
    assert DUP not in urls and NOINDEX not in urls
    assert XSS in urls and len(urls) == search(client, q="note", k=1)["total"]


def test_offset_pages_through_without_overlap(client: TestClient) -> None:
    p1 = search(client, q="note", k=10, offset=0)["results"]
    p2 = search(client, q="note", k=10, offset=10)["results"]
    assert len(p1) == 10 and len(p2) == 10
    assert not {r["url"] for r in p1} & {r["url"] for r in p2}
    assert p1[-1]["score"] >= p2[0]["score"]


def test_site_filter_and_query_language(client: TestClient) -> None:
    assert search(client, q="note", site="127.0.0.1")["total"] > 0
    assert search(client, q="note", site="example.org")["total"] == 0
    garden_only = search(client, q="note -python", k=100)["results"]
    assert garden_only and all("/code/" not in r["url"] for r in garden_only)
    either = {r["url"] for r in search(client, q="tulips OR decorators", k=100)["results"]}
    assert any("/garden/" in u for u in either) and any("/code/" in u for u in either)


def test_explain_says_how_the_score_was_made(client: TestClient) -> None:
    first = search(client, q="compost", explain="true", k=1)["results"][0]
    assert first["explain"]["fusion"]["s"] == "pagerank"
    assert "compost" in first["explain"]["text"]["terms"]


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"q": "note", "k": 101}, "k: must be at most 100"),
        ({"q": "note", "k": 0}, "k: must be at least 1"),
        ({"q": "note", "offset": 1001}, "offset: must be at most 1000"),
        ({"q": "note", "offset": -1}, "offset: must be at least 0"),
        ({"q": "note", "k": "ten"}, "k: "),
        ({"q": "x" * 513}, "q: must be at most 512 characters"),
        ({"q": ""}, "q: must not be empty"),
        ({}, "q: is required"),
    ],
)
def test_bad_parameters_are_refused_with_a_clear_422(
    client: TestClient, params: dict, words: str
) -> None:
    assert_error(client.get("/search", params=params), 422, "invalid_parameter", words)


def test_queries_the_parser_refuses_are_400(client: TestClient) -> None:
    assert_error(client.get("/search", params={"q": '"open'}), 400, "bad_query", "quotation")
    assert_error(client.get("/search", params={"q": "   "}), 422, "invalid_parameter", "empty")
    r = client.get("/search", params={"q": "OR"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "bad_query"


@pytest.mark.parametrize("q", ["\u0000note", "n\u0301ote", "🌹 roses", "\ufeff", "ǅ" * 512,
                               "%", "' OR 1=1 --", "site:", "-", '""'])
def test_odd_unicode_never_fails(client: TestClient, q: str) -> None:
    r = client.get("/search", params={"q": q})
    assert r.status_code in (200, 400, 422), r.text
    if r.status_code != 200:
        assert r.json()["error"]["message"]


def test_unknown_topic_is_404(client: TestClient) -> None:
    assert_error(client.get("/search", params={"q": "note", "topic": "nope"}), 404,
                 "unknown_topic", "nope")


def test_topic_auto_without_topics_uses_global_pagerank(client: TestClient) -> None:
    body = search(client, q="note", topic="auto", k=3)
    assert body["static_score"] == "pagerank" and body["topic_weights"] is None


def test_unknown_path_and_method_are_json(client: TestClient) -> None:
    assert_error(client.get("/nowhere"), 404, "not_found", "Not Found")
    assert_error(client.post("/search"), 405, "method_not_allowed", "Method Not Allowed")


def test_openapi_is_served(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/search", "/pages", "/topics", "/topics/{name}", "/recrawl", "/stats",
            "/healthz"} <= set(spec["paths"])
    k = next(p for p in spec["paths"]["/search"]["get"]["parameters"] if p["name"] == "k")
    assert k["schema"]["maximum"] == 100


def test_repeated_query_is_answered_from_the_result_cache(client: TestClient) -> None:
    first = search(client, q="tulips soil", k=3)
    again = search(client, q="tulips soil", k=3)
    other = search(client, q="tulips soil", k=4)
    assert not first["cached"] and again["cached"] and not other["cached"]
    assert again["results"] == first["results"] and again["total"] == first["total"]
