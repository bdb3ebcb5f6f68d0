"""The FastAPI application: ``create_app(settings)`` builds it over one data directory.

``create_app`` opens a read-only snapshot holder (``api/snapshot.py``) on the live index and
ranks, which swaps in newer generations as they land; the lifespan closes it at shutdown.  Routes get what they need through
``Depends`` (``api/dependencies.py``).  Errors: websift's exceptions map to statuses in
``api/errors.py``; every error answer, including validation errors, unknown paths and anything
unexpected, has the body ``{"error": {"code": ..., "message": ...}}``.

With ``settings.shards`` naming data directories, the holder searches their indexes as one
(``--ranks`` or the first shard gives the ranks, crawl store and topics); naming URLs of other
``websift serve`` processes, the application is a front server: no holder, searches fanned out
(``api/fanout.py``), and only ``/search``, ``/``, ``/suggest``, ``/stats``, ``/healthz`` and the docs.  Only a
server started with ``settings.shard_server`` answers a front server's ``/shard/*`` calls.
:func:`app_from_env` is the factory ``websift serve --workers N`` gives uvicorn.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import jinja2
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException as StarletteHTTPException

from websift.api.admin_series import HISTORY_FILE, Sampler
from websift.api.errors import describe_validation_errors, error_body, status_of
from websift.api.fanout import FanOut, check_shard_server, split_shards
from websift.api.index_words import IndexWords
from websift.api.indexnow import IndexNow
from websift.api.lean_search import LeanSearch
from websift.api.models import error_responses
from websift.api.prometheus import RequestMetrics, SearchTimer
from websift.api.request_limits import BodyLimit
from websift.api.result_cache import ResultCache
from websift.api.retrieval import LocalSearch, Outcome
from websift.api.routes import (
    admin,
    docs,
    front,
    indexnow,
    metrics,
    pages,
    recrawl,
    removals,
    search,
    shard,
    stats,
    suggest,
    topics,
    web,
)
from websift.api.schedule_cache import ScheduleCache
from websift.api.settings import Settings, get_settings
from websift.api.snapshot import SnapshotHolder
from websift.core.datadir import DataDir
from websift.core.errors import WebsiftError
from websift.core.extras import require
from websift.core.gc_pauses import gc_pauses

log = logging.getLogger("websift.api")

HERE = Path(__file__).parent

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized", 403: "forbidden",
               413: "body_too_large"}


def create_app(settings: Settings | None = None, *, serving: bool = False) -> FastAPI:
    """The application over ``settings`` (default: from the environment).  ``serving``: this
    process is a server of its own (``websift serve``, each ``--workers`` process), whose
    reload thread may freeze what outlived a swap (api/gc_policy.py); not an application made
    inside another program, such as a test's."""
    settings = settings or get_settings()
    if settings.frontier is not None:  # a missing extra is said before any file opens
        require("cluster", "a shared frontier (--frontier)", ("redis",))
    local, remote = split_shards(settings.shards)
    check_shard_server(settings, front=bool(remote))
    fanout = FanOut(remote, settings) if remote else None
    data: DataDir | None = None
    holder: SnapshotHolder | None = None
    if fanout is None:
        shards = [DataDir.open(d) for d in local] or [DataDir.open(settings.data)]
        data = DataDir.open(settings.ranks) if settings.ranks is not None else shards[0]
        # Opened here, before a server binds: an unreadable or newer-format index or ranks
        # refuse to start (IndexCorrupt / RanksCorrupt); no index yet is served as 503s until
        # one lands.
        holder = SnapshotHolder(data, settings.reload_check_ms, shards, settle_heap=serving)
        holder.start()

    @asynccontextmanager
    async def lifespan(running: FastAPI) -> AsyncIterator[None]:
        sampler: Sampler | None = running.state.admin_sampler
        task = None if sampler is None else asyncio.create_task(
            _sample_forever(sampler, settings.admin_sample_seconds))
        try:
            yield
        finally:
            try:
                if task is not None and sampler is not None:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    await anyio.to_thread.run_sync(sampler.persist)
            finally:
                if holder is not None:
                    holder.close()
            if fanout is not None:
                await fanout.aclose()

    app = FastAPI(
        title="websift",
        summary="Search a crawl: BM25F text similarity fused with PageRank, topics, recrawl",
        version="0.1.0",
        lifespan=lifespan,
        responses=error_responses(400, 422, 503),
        # FastAPI's own pages load Swagger UI / ReDoc from a CDN; api/routes/docs.py serves
        # /docs from local assets instead.
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    # a shared crawl frontier for /stats, checked before binding (one line, exit 2, if bad)
    app.state.frontier = None
    if settings.frontier is not None:
        from websift.crawler.redis_admin import connect  # redis only when asked for

        app.state.frontier = connect(settings.frontier)
    app.state.data = data
    app.state.holder = holder
    app.state.result_cache = ResultCache[Outcome](settings.result_cache_size)
    app.state.search_limiter = anyio.CapacityLimiter(settings.search_concurrency)
    app.state.page_limiter = anyio.CapacityLimiter(settings.page_concurrency)
    app.state.schedule_cache = ScheduleCache(
        max(settings.schedule_scan, settings.max_recrawl_limit),
        settings.schedule_max_age_ms / 1000)
    app.state.index_words = IndexWords(settings.words_max_age_ms / 1000)
    app.state.engine = fanout if holder is None else LocalSearch(
        holder, settings, app.state.result_cache, app.state.search_limiter,
        app.state.index_words)
    # GET /search timed into a latency histogram, served by /metrics
    app.state.search_metrics = RequestMetrics()
    # site owners' pushes (IndexNow): per-host rate windows and verified keys of this process
    app.state.indexnow = IndexNow(settings)
    # GET /search with plain, valid parameters answered before the router (the rest go on)
    app.add_middleware(LeanSearch, settings=settings, engine=lambda: app.state.engine,
                       on_error=websift_error_response)
    app.add_middleware(SearchTimer, metrics=app.state.search_metrics)
    # the operator page's history (GET /admin): this server's figures, sampled
    app.state.admin_sampler = None if data is None else Sampler(
        data, app.state.search_metrics, keep=settings.admin_samples,
        history=data.root / HISTORY_FILE if settings.admin_history else None)
    # outermost: a body over the cap is refused before any route reads it
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    templates = Jinja2Templates(env=env)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    app.include_router(search.build_router(settings))
    app.include_router(suggest.build_router(settings))
    if holder is None:  # a front server: its shard servers hold the crawl
        app.include_router(front.build_router())
    else:
        app.include_router(pages.build_router(settings))
        app.include_router(topics.build_router())
        app.include_router(removals.build_router())
        app.include_router(indexnow.build_router(app.state.indexnow))
        app.include_router(recrawl.build_router(settings))
        app.include_router(stats.build_router())
        app.include_router(metrics.build_router())
        if settings.shard_server:  # a front server's calls, for it alone (shard token)
            app.include_router(shard.build_router())
        app.include_router(admin.build_router(templates))
    app.include_router(web.build_router(templates))
    docs.add_docs(app)

    @app.exception_handler(WebsiftError)
    async def websift_error(_request: Request, exc: WebsiftError) -> JSONResponse:
        return websift_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        message = describe_validation_errors(exc.errors())
        return JSONResponse(error_body("invalid_parameter", message), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        return JSONResponse(
            error_body(code, str(exc.detail)),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        # A bug, not bad input: log it whole and say so; the fuzz test fails on any 500.
        log.error("unexpected error", exc_info=exc)
        return JSONResponse(
            error_body("internal", f"internal error ({type(exc).__name__}); see the server log"),
            status_code=500,
        )

    return app


def websift_error_response(exc: WebsiftError) -> JSONResponse:
    """The answer to one of websift's exceptions: its status and ``{"error": ...}`` body."""
    status, code = status_of(exc)
    return JSONResponse(error_body(code, str(exc)), status_code=status)


async def _sample_forever(sampler: Sampler, every: float) -> None:
    """One sample now, then one every ``every`` seconds (in a worker thread: it reads files)."""
    while True:
        await anyio.to_thread.run_sync(sampler.sample)
        await anyio.sleep(every)


def freeze_imported() -> None:
    """Put what importing the server made (its modules, functions, classes and their tables:
    about 94,000 objects) out of the cyclic garbage collector's reach (``gc.freeze``).  They
    live as long as the process, and every full collection walked them all while holding the
    GIL: about 0.1 s, in which no search ran.  Called before the application is made, so
    nothing that a new index generation replaces (a snapshot, its caches) is frozen: those
    are still collected (and what outlives a swap is frozen by the reload thread:
    api/gc_policy.py).  Then every collection is timed from here on (``gc_pauses``).
    ``/stats`` ``gc`` shows the frozen count, the collections and their pauses."""
    gc.collect()
    gc.freeze()
    gc_pauses()


def app_from_env() -> FastAPI:
    """The application from ``$WEBSIFT_*`` alone: uvicorn's factory in each worker process of
    ``websift serve --workers N`` (api/commands.py passes the settings that way)."""
    freeze_imported()
    return create_app(Settings(), serving=True)
