"""``GET /stats`` and ``GET /healthz`` of a front server (``websift serve --shard http://...``).

A front server holds no index, ranks or crawl store of its own (``api/fanout.py``): its
``/stats`` describes its shards (calls, failures by reason, partial answers, the generations
each last served) and its ``/healthz`` is 200 while at least one shard's ``/healthz`` is.
``/pages``, ``/page``, ``/topics`` and ``/recrawl`` are served by the shard servers.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

import anyio
import httpx
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from websift.api.dependencies import is_admin
from websift.api.fanout import FanOut, gather_calls
from websift.api.models import error_responses


class FrontStats(BaseModel):
    role: str = Field(description="'front': answers by asking its shard servers")
    redacted: bool = Field(default=False, description="true unless the admin token was sent: "
                           "pid and the shards' URLs are left out (shards are numbered)")
    pid: int | None = Field(description="the process that answered; with the admin token only")
    queries: int = Field(description="searches fanned out")
    partial: int = Field(description="answers some shard was missing from")
    unanswered: int = Field(description="searches no shard answered")
    snippet_failures: int = Field(description="shards that did not send their snippets in time")
    timeout_ms: int = Field(description="deadline of each call to a shard")
    shards: dict[str, dict[str, Any]] = Field(
        description="per shard URL (with the admin token, else 'shard 1', 'shard 2'...): calls, failures by reason (timeout, connect, http_503...), "
        "answering (as of its last call), index and ranks generation it last served")


class FrontHealth(BaseModel):
    status: str
    shards_answering: int
    shards: int


def build_router() -> APIRouter:
    router = APIRouter(tags=["stats"])

    def fanout(request: Request) -> FanOut:
        engine: FanOut = request.app.state.engine
        return engine

    @router.get("/stats", response_model=FrontStats,
                summary="The front server's shards: calls, failures, partial answers")
    async def stats(request: Request) -> FrontStats:
        figures = fanout(request).figures()
        admin = is_admin(request)
        if not admin:
            figures["shards"] = {f"shard {i}": v
                                 for i, v in enumerate(figures["shards"].values(), 1)}
        return FrontStats(role="front", redacted=not admin, pid=os.getpid() if admin else None,
                          **figures)

    @router.get("/healthz", response_model=FrontHealth, responses=error_responses(503),
                summary="200 while at least one shard server is healthy, 503 otherwise")
    async def healthz(request: Request) -> JSONResponse:
        engine = fanout(request)

        async def probe(url: str) -> bool:
            try:
                with anyio.fail_after(engine.settings.shard_timeout_ms / 1000.0):
                    return (await engine.client.get(url + "/healthz")).status_code == 200
            except (TimeoutError, httpx.HTTPError):
                return False  # said in the answer: this shard is not counted as answering

        ok = await gather_calls([partial(probe, s.url) for s in engine.shards])
        health = FrontHealth(status="ok" if any(ok) else "unavailable",
                             shards_answering=sum(ok), shards=len(ok))
        return JSONResponse(health.model_dump(), status_code=200 if any(ok) else 503)

    return router
