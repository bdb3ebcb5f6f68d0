"""``POST /shard/stats``, ``/shard/search``, ``/shard/snippets``, ``/shard/spell``,
``/shard/surfaces``, ``/shard/complete``: what a front server asks.

The calls of ``api/shard_protocol.py`` (statistics, scoring with the global statistics,
snippets of the winners, what a spelling correction needs), answered from this server's
snapshot.  Each runs in a worker thread
under the same concurrency limit as ``GET /search``.  Only a server started as a shard server
(``websift serve --shard-server``) has these routes, and they answer only a caller holding the
shard secret (``$WEBSIFT_SHARD_TOKEN``, sent by the front server as a bearer token).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel

from websift.api.dependencies import (
    get_app_settings,
    get_index_words,
    get_search_limiter,
    get_snapshot,
    require_shard_token,
)
from websift.api.index_words import IndexWords
from websift.api.models import error_responses
from websift.api.settings import Settings
from websift.api.shard_protocol import (
    CompleteAnswer,
    CompleteAsk,
    SearchAnswer,
    SearchAsk,
    SnippetsAnswer,
    SnippetsAsk,
    SpellAnswer,
    SpellAsk,
    StatsAnswer,
    StatsAsk,
    SurfacesAnswer,
    SurfacesAsk,
    shard_complete,
    shard_search,
    shard_snippets,
    shard_spell,
    shard_stats,
    shard_surfaces,
)
from websift.api.snapshot import Snapshot


async def _in_thread(limiter: anyio.CapacityLimiter, work: Callable[[], BaseModel]) -> Response:
    """``work``'s answer as JSON, made in a worker thread.  Returned as a response, so FastAPI
    does not validate the model a second time (these calls are a front server's hot path)."""
    answer = await anyio.to_thread.run_sync(work, limiter=limiter)
    return Response(answer.model_dump_json(), media_type="application/json")


def build_router() -> APIRouter:
    router = APIRouter(prefix="/shard", tags=["shard"], responses=error_responses(400, 401, 403),
                       dependencies=[Depends(require_shard_token)])

    @router.post("/stats", response_model=StatsAnswer,
                 summary="A front server's first call: this shard's collection statistics")
    async def stats(
        ask: StatsAsk,
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        limiter: Annotated[anyio.CapacityLimiter, Depends(get_search_limiter)],
    ) -> Response:
        return await _in_thread(limiter, lambda: shard_stats(snap, ask))

    @router.post("/search", response_model=SearchAnswer,
                 summary="A front server's second call: top hits scored with global statistics, "
                 "no snippets")
    async def search(
        ask: SearchAsk,
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        settings: Annotated[Settings, Depends(get_app_settings)],
        limiter: Annotated[anyio.CapacityLimiter, Depends(get_search_limiter)],
    ) -> Response:
        return await _in_thread(limiter, lambda: shard_search(snap, ask, settings))

    @router.post("/snippets", response_model=SnippetsAnswer,
                 summary="A front server's last call: snippets of the pages it shows")
    async def snippets(
        ask: SnippetsAsk,
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        limiter: Annotated[anyio.CapacityLimiter, Depends(get_search_limiter)],
    ) -> Response:
        return await _in_thread(limiter, lambda: shard_snippets(snap, ask))

    @router.post("/spell", response_model=SpellAnswer,
                 summary="For a front server's spelling correction: each query word's df here "
                 "and the terms near it")
    async def spell(
        ask: SpellAsk,
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        words: Annotated[IndexWords, Depends(get_index_words)],
        limiter: Annotated[anyio.CapacityLimiter, Depends(get_search_limiter)],
    ) -> Response:
        return await _in_thread(limiter, lambda: shard_spell(snap, ask, words))

    @router.post("/surfaces", response_model=SurfacesAnswer,
                 summary="For a front server's spelling correction: how pages write terms")
    async def surfaces(
        ask: SurfacesAsk,
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        words: Annotated[IndexWords, Depends(get_index_words)],
        limiter: Annotated[anyio.CapacityLimiter, Depends(get_search_limiter)],
    ) -> Response:
        return await _in_thread(limiter, lambda: shard_surfaces(snap, ask, words))

    @router.post("/complete", response_model=CompleteAnswer,
                 summary="For a front server's /suggest: this shard's heaviest completions")
    async def complete(
        ask: CompleteAsk,
        snap: Annotated[Snapshot, Depends(get_snapshot)],
        words: Annotated[IndexWords, Depends(get_index_words)],
        limiter: Annotated[anyio.CapacityLimiter, Depends(get_search_limiter)],
    ) -> Response:
        return await _in_thread(limiter, lambda: shard_complete(snap, ask, words))

    return router
