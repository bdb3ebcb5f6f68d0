"""A hit's ``fragment`` (the id of the element of its page it is about) reaches the reader:
``/search`` JSON, the shard wire format, the search page's "jump to" link.

Nothing produces fragments yet (the definitions index will); these tests carry a real
:class:`indexer.searcher.Hit` holding one through the real response model, wire models and
template, not a fake searcher.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import jinja2
import pytest
from hypothesis import given
from hypothesis import strategies as st

import websift.api
from websift.api.fanout import _ranked
from websift.api.retrieval import Outcome, RankedHit, SearchRequest, with_fragment
from websift.api.routes.search import to_response
from websift.api.routes.web import _results, page_href, safe_href
from websift.api.shard_protocol import ShardHit
from websift.indexer.searcher import Hit

URL = "http://127.0.0.1:8941/docs/config.html"
FRAGMENT = 'guc-work_mem "<b>"'


def _outcome(*fragments: str | None) -> Outcome:
    hits = [
        RankedHit(
            hit=Hit(doc_id=i, url=f"{URL}?n={i}", title=f"Settings {i}", snippet="work_mem sets",
                    highlights=[(0, 8)], score=2.0 - i / 10, text_score=1.5, prior_score=0.5,
                    fragment=fragment),
            pagerank=1.0, opic=1.0, topic=None, prior=0.5)
        for i, fragment in enumerate(fragments)
    ]
    return Outcome(query="work_mem", total=len(hits), took_ms=1.0, topic=None,
                   topic_weights=None, static_score="pagerank", hits=hits, explain={})


def test_search_json_carries_the_fragment_and_the_link() -> None:
    req = SearchRequest(q="work_mem", k=10, offset=0)
    body = to_response(_outcome(FRAGMENT, None), req).model_dump(mode="json")
    with_id, without = body["results"]
    assert with_id["fragment"] == FRAGMENT
    link = with_id["url_with_fragment"]
    assert link == f"{URL}?n=0#guc-work_mem%20%22%3Cb%3E%22"
    assert unquote(urlsplit(link).fragment) == FRAGMENT
    assert without["fragment"] is None and without["url_with_fragment"] is None


def test_a_fragment_replaces_the_one_the_url_had() -> None:
    assert with_fragment(f"{URL}#top", "sec-2") == f"{URL}#sec-2"
    assert with_fragment(f"{URL}#top", None) is None


@pytest.mark.slow
@given(st.text(min_size=1, max_size=40))
def test_the_link_always_decodes_to_the_fragment_and_keeps_the_url(fragment: str) -> None:
    link = with_fragment(URL, fragment)
    assert link is not None
    base, _, encoded = link.partition("#")
    assert base == URL and "#" not in encoded and " " not in encoded
    assert unquote(encoded, errors="strict") == fragment


def test_the_shard_wire_format_carries_the_fragment() -> None:
    r = _outcome(FRAGMENT).hits[0]
    sent = ShardHit(doc_id=r.hit.doc_id, url=r.hit.url, title=r.hit.title, score=r.hit.score,
                    text=r.hit.text_score, prior=r.prior, pagerank=r.pagerank, opic=r.opic,
                    topic=r.topic, fragment=r.hit.fragment)
    received = ShardHit.model_validate_json(sent.model_dump_json())
    assert _ranked(received, None).hit.fragment == FRAGMENT
    old_shard = {k: v for k, v in sent.model_dump().items() if k != "fragment"}
    assert _ranked(ShardHit.model_validate(old_shard), None).hit.fragment is None


def _render(outcome: Outcome) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(websift.api.__file__).parent / "templates"),
        autoescape=True, undefined=jinja2.StrictUndefined)
    context: dict[str, Any] = {
        "q": "work_mem", "topic": None, "error": None, "notices": [], "outcome": outcome,
        "max_query_chars": 100, "topic_names": [], "page_href": page_href,
        "safe_href": safe_href, "results": _results(outcome, False), "first": 1,
        "last": len(outcome.hits), "page_links": [], "prev_href": None, "next_href": None,
        "url_for": lambda name, path: f"/{name}/{path}", "did_you_mean_href": None,
        "typed_href": None,
    }
    return env.get_template("search.html").render(context)


def test_the_search_page_shows_an_escaped_jump_link_only_when_there_is_a_fragment() -> None:
    html = _render(_outcome(FRAGMENT, None))
    assert html.count('class="jump"') == 1
    assert f'<a class="jump" href="{URL}?n=0#guc-work_mem%20%22%3Cb%3E%22">' in html
    assert "jump to #guc-work_mem &#34;&lt;b&gt;&#34;" in html
    assert "<b>" not in html


def test_a_jump_link_to_a_non_http_url_is_inert() -> None:
    outcome = _outcome("x")
    bad = Hit(doc_id=9, url="javascript:alert(1)", title="t", snippet="", highlights=[],
              score=1.0, text_score=1.0, prior_score=0.0, fragment="x")
    outcome.hits[0] = RankedHit(hit=bad, pagerank=None, opic=None, topic=None, prior=0.0)
    assert '<a class="jump" href="#">' in _render(outcome)
