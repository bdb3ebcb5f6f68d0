"""``GET /search``: ranked results as JSON.

The application's search engine (``app.state.engine``, ``api.retrieval.SearchEngine``) answers:
this process's index (``LocalSearch``) or, on a front server, its shard servers (``FanOut``).
"""


from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import JSONResponse

from websift.api.models import (
    SearchResponse,
    SearchResult,
    ShardsAnswered,
    Signals,
    error_responses,
)
from websift.api.retrieval import (
    LANG_MAX_CHARS,
    SITE_MAX_CHARS,
    TOPIC_MAX_CHARS,
    Outcome,
    SearchEngine,
    SearchRequest,
    with_fragment,
)
from websift.api.settings import Settings


async def get_engine(request: Request) -> SearchEngine:
    engine: SearchEngine = request.app.state.engine
    return engine


def to_response(outcome: Outcome, req: SearchRequest) -> SearchResponse:
    return SearchResponse(
        query=outcome.query,
        total=outcome.total,
        total_relation="eq" if outcome.total_exact else "gte",
        partial=outcome.partial,
        took_ms=outcome.took_ms,
        offset=req.offset,
        k=req.k,
        topic=outcome.topic,
        topic_weights=outcome.topic_weights,
        static_score=outcome.static_score,
        cached=outcome.cached,
        lang=outcome.lang,
        did_you_mean=outcome.did_you_mean,
        index_outdated=outcome.index_outdated,
        shards=ShardsAnswered(answered=outcome.shards.answered, total=outcome.shards.total),
        results=[
            SearchResult(
                url=r.hit.url,
                title=r.hit.title,
                snippet=r.hit.snippet,
                highlights=[(int(a), int(b)) for a, b in r.hit.highlights],
                score=float(r.hit.score),
                signals=Signals(
                    text=float(r.hit.text_score),
                    pagerank=r.pagerank,
                    topic=r.topic,
                    opic=r.opic,
                    prior=r.prior,
                ),
                explain=(
                    {"fusion": outcome.explain, "text": r.hit.explain} if req.explain else None
                ),
                fragment=r.hit.fragment,
                url_with_fragment=with_fragment(r.hit.url, r.hit.fragment),
                lang=r.hit.lang or None,
                fetched=r.hit.fetched,
            )
            for r in outcome.hits
        ],
    )


def response_body(outcome: Outcome, req: SearchRequest) -> dict[str, Any]:
    """The JSON body of :func:`to_response`, built as plain values (no models to construct and
    validate): what ``GET /search`` sends, serialised by orjson.  tests/api/test_search_json.py
    holds it equal to the ``SearchResponse`` model's JSON."""
    explain = outcome.explain if req.explain else None
    return {
        "query": outcome.query,
        "total": outcome.total,
        "total_relation": "eq" if outcome.total_exact else "gte",
        "partial": outcome.partial,
        "took_ms": float(outcome.took_ms),
        "offset": req.offset,
        "k": req.k,
        "topic": outcome.topic,
        "topic_weights": outcome.topic_weights,
        "static_score": outcome.static_score,
        "cached": outcome.cached,
        "lang": outcome.lang,
        "did_you_mean": outcome.did_you_mean,
        "index_outdated": outcome.index_outdated,
        "shards": {"answered": outcome.shards.answered, "total": outcome.shards.total},
        "results": [
            {
                "url": r.hit.url,
                "title": r.hit.title,
                "snippet": r.hit.snippet,
                "highlights": [(int(a), int(b)) for a, b in r.hit.highlights],
                "score": float(r.hit.score),
                "signals": {
                    "text": float(r.hit.text_score),
                    "pagerank": _opt_float(r.pagerank),
                    "topic": _opt_float(r.topic),
                    "opic": _opt_float(r.opic),
                    "prior": float(r.prior),
                },
                "explain": {"fusion": explain, "text": r.hit.explain} if req.explain else None,
                "fragment": r.hit.fragment,
                "url_with_fragment": with_fragment(r.hit.url, r.hit.fragment),
                "lang": r.hit.lang or None,
                "fetched": r.hit.fetched,
            }
            for r in outcome.hits
        ],
    }


def _opt_float(value: float | None) -> float | None:
    return None if value is None else float(value)


class SearchJSON(JSONResponse):
    """``GET /search``'s body: :func:`response_body` through orjson (numpy numbers as numbers,
    NaN and infinities as null, like the model's JSON).  A JSONResponse, so the OpenAPI
    description keeps ``SearchResponse`` as the body's schema."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY)


def build_router(settings: Settings) -> APIRouter:
    router = APIRouter(tags=["search"])

    @router.get(
        "/search",
        response_model=SearchResponse,  # the OpenAPI contract; the body is response_body's
        response_class=SearchJSON,
        responses=error_responses(404),
        summary="Search: BM25F text similarity fused with PageRank or a topic's PageRank",
    )
    async def search(
        *,
        q: Annotated[
            str,
            Query(
                min_length=1,
                max_length=settings.max_query_chars,
                description='the query: words, "phrases", -word, site:host, OR',
            ),
        ],
        engine: Annotated[SearchEngine, Depends(get_engine)],
        k: Annotated[int, Query(ge=1, le=settings.max_k, description="results to return")] = (
            settings.default_k
        ),
        offset: Annotated[
            int, Query(ge=0, le=settings.max_offset, description="results to skip")
        ] = 0,
        topic: Annotated[
            str | None,
            Query(max_length=TOPIC_MAX_CHARS,
                  description="a topic name, or 'auto' to mix topics by the query"),
        ] = None,
        site: Annotated[
            str | None, Query(max_length=SITE_MAX_CHARS, description="only pages of this host")
        ] = None,
        explain: Annotated[bool, Query(description="add how each score was made")] = False,
        snippets: Annotated[
            bool, Query(description="false: results without snippets (faster; empty strings)")
        ] = True,
        lang: Annotated[
            str | None, Query(max_length=LANG_MAX_CHARS, description="the query's language "
                              "(ISO 639-1, e.g. fr): its words are analysed so")
        ] = None,
        accept_language: Annotated[str | None, Header(include_in_schema=False)] = None,
    ) -> Response:
        req = SearchRequest(
            q=q, k=k, offset=offset, topic=topic or None, site=site or None, explain=explain,
            snippets=snippets, lang=lang or None,
            lang_hint=(accept_language or "")[:LANG_MAX_CHARS] or None,
        )
        return SearchJSON(response_body(await engine.search(req), req))

    return router
