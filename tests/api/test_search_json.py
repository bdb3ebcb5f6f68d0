"""GET /search's body is built as plain values and serialised by orjson (api/routes/search.py):
it must be the JSON the ``SearchResponse`` model gives for the same answer."""

from __future__ import annotations

import json

import numpy as np
import orjson
import pytest

from websift.api.models import SearchResponse
from websift.api.retrieval import Outcome, RankedHit, SearchRequest, ShardCount
from websift.api.routes.search import SearchJSON, response_body, to_response
from websift.indexer.searcher import Hit


def _hit(i: int, **kw: object) -> Hit:
    fields: dict[str, object] = {
        "doc_id": i, "url": f"http://a.test/p{i}?x=1#old", "title": f"Tïtle {i} \u2603",
        "snippet": "…roses and <b>thorns</b> \"quoted\"…", "highlights": [(1, 6), (11, 17)],
        "score": 3.25 + i, "text_score": 2.5, "prior_score": 0.75}
    fields.update(kw)
    return Hit(**fields)  # type: ignore[arg-type]


OUTCOMES = [
    Outcome(query="roses", total=2, took_ms=1.234, topic=None, topic_weights=None,
            static_score="pagerank", explain={"fusion": "f", "w": 2.0, "s": "pagerank"},
            hits=[RankedHit(_hit(1), pagerank=1.5, opic=0.25, topic=None, prior=0.75),
                  RankedHit(_hit(2, fragment="def roses/\u03b1", lang="fr", fetched=False,
                                 highlights=[]),
                            pagerank=None, opic=None, topic=None, prior=0.0)]),
    Outcome(query="x y", total=7, took_ms=0.0, topic="auto", total_exact=False, partial=True,
            topic_weights={"garden": 0.75, "code": 0.25}, static_score="topic:auto",
            explain={"fusion": "f", "k": 1e-7, "a": float("nan")}, cached=True,
            shards=ShardCount(1, 2), lang="de", did_you_mean="x z",
            hits=[RankedHit(_hit(3, explain={"terms": {"x": {"idf": 1.5, "tf": {"body": 2}}},
                                             "coord": float(np.float64(0.5)), "n_docs": 10}),
                            pagerank=float("inf"), opic=1e300, topic=0.125, prior=1e-12)]),
    Outcome(query="none", total=0, took_ms=5.0, topic=None, topic_weights=None,
            static_score="none", explain={}, hits=[]),
]


@pytest.mark.parametrize("outcome", OUTCOMES)
@pytest.mark.parametrize("explain", [False, True])
def test_body_is_the_models_json(outcome: Outcome, explain: bool) -> None:
    req = SearchRequest(q=outcome.query, k=10, offset=3, explain=explain)
    model_json = json.loads(to_response(outcome, req).model_dump_json())
    sent = SearchJSON(response_body(outcome, req)).body
    assert json.loads(sent) == model_json
    # The same keys in the same order as the model's (a person reading the JSON sees no change).
    assert list(orjson.loads(sent)) == list(model_json)
    if outcome.hits:
        assert list(orjson.loads(sent)["results"][0]) == list(model_json["results"][0])


def test_body_validates_as_the_model() -> None:
    for outcome in OUTCOMES[:1]:
        req = SearchRequest(q=outcome.query, k=5, offset=0)
        body = orjson.loads(SearchJSON(response_body(outcome, req)).body)
        assert SearchResponse.model_validate(body).results[1].url_with_fragment == (
            "http://a.test/p2?x=1#def%20roses/%CE%B1")
