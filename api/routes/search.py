"""``GET /search``: ranked results as JSON."""


from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Query

from api.dependencies import (
    get_app_settings,
    get_result_cache,
    get_search_limiter,
    get_snapshot,
)
from api.models import SearchResponse, SearchResult, Signals, error_responses
from api.result_cache import ResultCache
from api.retrieval import Outcome, SearchRequest, cache_lookup, search_and_cache
from api.settings import Settings
from api.snapshot import Snapshot


def to_response(outcome: Outcome, req: SearchRequest) -> SearchResponse:
    return SearchResponse(
        query=outcome.query,
        total=outcome.total,
        took_ms=outcome.took_ms,
        offset=req.offset,
        k=req.k,
        topic=outcome.topic,
        topic_weights=outcome.topic_weights,
        static_score=outcome.static_score,
        cached=outcome.cached,
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
            )
            for r in outcome.hits
        ],
    )


def build_router(settings: Settings) -> APIRouter:
    router = APIRouter(tags=["search"])

    @router.get(
        "/search",
        response_model=SearchResponse,
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
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        app_settings: Annotated[Settings, Depends(get_app_settings)],
        cache: Annotated[ResultCache[Outcome], Depends(get_result_cache)],
        limiter: Annotated[anyio.CapacityLimiter, Depends(get_search_limiter)],
        k: Annotated[int, Query(ge=1, le=settings.max_k, description="results to return")] = (
            settings.default_k
        ),
        offset: Annotated[
            int, Query(ge=0, le=settings.max_offset, description="results to skip")
        ] = 0,
        topic: Annotated[
            str | None,
            Query(max_length=64, description="a topic name, or 'auto' to mix topics by the query"),
        ] = None,
        site: Annotated[
            str | None, Query(max_length=253, description="only pages of this host")
        ] = None,
        explain: Annotated[bool, Query(description="add how each score was made")] = False,
    ) -> SearchResponse:
        req = SearchRequest(
            q=q, k=k, offset=offset, topic=topic or None, site=site or None, explain=explain
        )
        # A cached answer is served on the event loop; a search runs in a worker thread, at
        # most ``search_concurrency`` at once (the rest queue here instead of piling up memory).
        outcome = cache_lookup(snap, req, app_settings, cache)
        if outcome is None:
            outcome = await anyio.to_thread.run_sync(
                search_and_cache, snap, req, app_settings, cache, limiter=limiter
            )
        return to_response(outcome, req)

    return router
