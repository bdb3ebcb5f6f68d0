"""The FastAPI application: ``create_app(settings)`` builds it over one data directory.

``create_app`` opens a read-only snapshot holder (``api/snapshot.py``) on the live index and
ranks, which swaps in newer generations as they land; the lifespan closes it at shutdown.  Routes get what they need through
``Depends`` (``api/dependencies.py``).  Errors: websift's exceptions map to statuses in
``api/errors.py``; every error answer, including validation errors, unknown paths and anything
unexpected, has the body ``{"error": {"code": ..., "message": ...}}``.
"""

from __future__ import annotations

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

from api.errors import describe_validation_errors, error_body, status_of
from api.models import error_responses
from api.result_cache import ResultCache
from api.routes import pages, recrawl, search, stats, topics, web
from api.settings import Settings, get_settings
from api.snapshot import SnapshotHolder
from core.datadir import DataDir
from core.errors import WebsiftError

log = logging.getLogger("websift.api")

HERE = Path(__file__).parent

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized", 403: "forbidden"}


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    data = DataDir.open(settings.data)
    # Opened here, before a server binds: an unreadable or newer-format index or ranks refuse
    # to start (IndexCorrupt / RanksCorrupt); no index yet is served as 503s until one lands.
    holder = SnapshotHolder(data, settings.reload_check_ms)
    holder.start()

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            holder.close()

    app = FastAPI(
        title="websift",
        summary="Search a crawl: BM25F text similarity fused with PageRank, topics, recrawl",
        version="0.1.0",
        lifespan=lifespan,
        responses=error_responses(400, 422, 503),
    )
    app.state.settings = settings
    app.state.data = data
    app.state.holder = holder
    app.state.result_cache = ResultCache(settings.result_cache_size)
    app.state.search_limiter = anyio.CapacityLimiter(settings.search_concurrency)

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    templates = Jinja2Templates(env=env)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    app.include_router(search.build_router(settings))
    app.include_router(pages.build_router(settings))
    app.include_router(topics.build_router())
    app.include_router(recrawl.build_router(settings))
    app.include_router(stats.build_router())
    app.include_router(web.build_router(templates))

    @app.exception_handler(WebsiftError)
    async def websift_error(_request: Request, exc: WebsiftError) -> JSONResponse:
        status, code = status_of(exc)
        return JSONResponse(error_body(code, str(exc)), status_code=status)

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
