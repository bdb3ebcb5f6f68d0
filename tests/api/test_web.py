"""The search page as HTML (no browser): results, highlighting, escaping, pagination, caps."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.site import XSS, XSS_TITLE


def page(client: TestClient, status: int = 200, **params: object) -> str:
    r = client.get("/", params=params)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("text/html")
    return r.text


def results(html: str) -> list[str]:
    return re.findall(r'<li class="result">', html)


def test_empty_page_has_a_query_box_and_topic_selector(client: TestClient) -> None:
    html = page(client)
    assert '<input type="search" name="q"' in html and '<select name="topic">' in html
    assert not results(html)


def test_results_page_has_ten_results_marks_and_pagination(client: TestClient) -> None:
    html = page(client, q="note")
    assert len(results(html)) == 10
    assert "<mark>note</mark>" in html or "<mark>Note</mark>" in html
    assert 'rel="next" href="/?q=note&amp;offset=10"' in html
    assert html.count("<summary>why this rank</summary>") == 10
    second = page(client, q="note", offset=10)
    assert 'rel="prev"' in second and len(results(second)) == 10
    assert '<span class="current" aria-current="page">2</span>' in second


def test_crawled_text_is_escaped(client: TestClient) -> None:
    r = client.get("/", params={"q": "amps quotes"})
    policy = r.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "unsafe" not in policy  # only static/suggest.js
    html = page(client, q="amps quotes")
    assert XSS.split("/")[-1] in html
    assert "<script>" not in html and "onerror=" not in html.replace("onerror=&#34;", "")
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert XSS_TITLE not in html


def test_offset_beyond_the_cap_is_clamped_with_a_notice(client: TestClient) -> None:
    html = page(client, q="note", offset=5000)
    assert "Results go only as far as 1000" in html


def test_bad_input_is_shown_in_the_page(client: TestClient) -> None:
    assert "the most is 512" in page(client, 422, q="x" * 600)
    assert "whole number" in page(client, 422, q="note", offset="abc")
    assert "quotation mark" in page(client, 400, q='"open')
    assert "unknown topic" in page(client, 404, q="note", topic="nope")


@pytest.mark.slow
@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.text(max_size=40), topic=st.one_of(st.none(), st.text(max_size=10)),
       offset=st.one_of(st.none(), st.text(max_size=6), st.integers(-5, 5000).map(str)),
       url=st.text(max_size=60))
def test_html_pages_never_fail_on_odd_input(
    client: TestClient, q: str, topic: str | None, offset: str | None, url: str
) -> None:
    params = {"q": q, "topic": topic, "offset": offset}
    r = client.get("/", params={k: v for k, v in params.items() if v is not None})
    assert r.status_code < 500, r.text
    assert r.headers["content-type"].startswith("text/html")
    r = client.get("/page", params={"url": url})
    assert r.status_code < 500, r.text
    assert r.headers["content-type"].startswith("text/html")


def test_a_misspelling_that_finds_nothing_shows_its_correction_s_pages(
        client: TestClient) -> None:
    typed = page(client, q="tulps", as_typed=1)
    assert not results(typed)  # as typed: nothing, and the suggestion
    assert '<p class="did-you-mean">Did you mean <a href="/?q=tulips">tulips</a>?</p>' in typed
    shown = page(client, q="tulps")
    assert len(results(shown)) == len(results(page(client, q="tulips"))) == 2
    assert ('<p class="did-you-mean corrected">Showing results for <b>tulips</b>. Search instead '
            'for <a href="/?q=tulps&amp;as_typed=1">tulps</a>.</p>') in shown
    assert 'value="tulips"' in shown and "Did you mean" not in shown
    # a later page of results, or a query no spelling helps, is left as it is
    assert not results(page(client, q="tulps", offset=10))
    nothing = page(client, q="qqzzxxyy")
    assert not results(nothing) and "Showing results for" not in nothing


def test_a_misspelt_word_in_no_page_beside_found_words_shows_the_correction_s_pages(
        client: TestClient) -> None:
    # "tulps garden" finds the garden notes by "garden" alone: "tulps" is in no page, so the
    # pages that hold it as typed cannot be there; the correction's pages are shown.
    typed = page(client, q="tulps garden", as_typed=1)
    assert results(typed) and "Did you mean" in typed
    shown = page(client, q="tulps garden")
    assert ('<p class="did-you-mean corrected">Showing results for <b>tulips garden</b>. Search '
            'instead for <a href="/?q=tulps+garden&amp;as_typed=1">tulps garden</a>.</p>') in shown
    first = re.search(r'<li class="result">.*?</li>', shown, re.S)
    assert first is not None and "tulips" in first.group(0)  # a tulips note ranks first
    # the JSON answers the query as typed, with the suggestion
    body = client.get("/search", params={"q": "tulps garden"}).json()
    assert body["did_you_mean"] == "tulips garden" and body["total"] == len(
        client.get("/search", params={"q": "garden", "k": 100}).json()["results"])
