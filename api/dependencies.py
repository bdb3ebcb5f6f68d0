"""What routes receive through ``Depends``: the settings, a leased snapshot, the admin check.

The getters of app state are ``async`` so FastAPI calls them on the event loop instead of
hopping to the thread pool (a hop each otherwise).
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

import anyio
from fastapi import Request
from pydantic import SecretStr
from starlette.concurrency import run_in_threadpool

from websift.api.errors import Forbidden, Unauthorized
from websift.api.index_words import IndexWords
from websift.api.result_cache import ResultCache
from websift.api.retrieval import Outcome
from websift.api.schedule_cache import ScheduleCache
from websift.api.settings import Settings
from websift.api.snapshot import Snapshot, SnapshotHolder
from websift.core.datadir import DataDir
from websift.store.views import StoreReader

T = TypeVar("T")


async def get_app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_holder(request: Request) -> SnapshotHolder:
    holder: SnapshotHolder = request.app.state.holder
    return holder


async def get_search_limiter(request: Request) -> anyio.CapacityLimiter:
    limiter: anyio.CapacityLimiter = request.app.state.search_limiter
    return limiter


async def get_index_words(request: Request) -> IndexWords:
    words: IndexWords = request.app.state.index_words
    return words


async def get_result_cache(request: Request) -> ResultCache[Outcome]:
    cache: ResultCache[Outcome] = request.app.state.result_cache
    return cache


async def get_data(request: Request) -> DataDir:
    data: DataDir = request.app.state.data
    return data


async def get_snapshot(request: Request) -> AsyncIterator[Snapshot]:
    """The current index + ranks snapshot, held for the duration of the request.

    Newer generations are checked for and opened by the holder's reload thread (leasing wakes
    it when a check is due): leasing is a few attribute reads on the event loop.  Only before
    the first snapshot, or with ``reload_check_ms`` 0, does the check (which may open an index:
    blocking work) run here, in the thread pool.
    """
    holder: SnapshotHolder = request.app.state.holder
    if holder.check_due():
        await run_in_threadpool(holder.refresh)
    with holder.lease() as snap:
        yield snap


def get_store(request: Request) -> Iterator[StoreReader]:
    """A read-only connection to the crawl store for this request."""
    data: DataDir = request.app.state.data
    store = StoreReader.open(data.store_path)
    try:
        yield store
    finally:
        store.close()


async def get_schedule_cache(request: Request) -> ScheduleCache:
    cache: ScheduleCache = request.app.state.schedule_cache
    return cache


async def with_store(request: Request, work: Callable[[StoreReader], T]) -> T:
    """``work`` on a read-only store connection, in a worker thread under the page limiter.

    For the routes whose work grows with the store (``/pages``, ``/page``, ``/recrawl``): at
    most ``Settings.page_concurrency`` of them run at once, and the rest wait on the event loop
    holding no thread and no connection, so ``/healthz`` and ``/metrics`` are answered while
    they queue.  The connection is opened and closed in the worker thread that uses it.
    """
    data: DataDir = request.app.state.data
    limiter: anyio.CapacityLimiter = request.app.state.page_limiter

    def run() -> T:
        with StoreReader.open(data.store_path) as store:
            return work(store)

    return await anyio.to_thread.run_sync(run, limiter=limiter)


def _bearer(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    if not header or scheme.lower() != "bearer" or not given.strip():
        return None
    return given.strip()


def _holds(given: str, token: SecretStr) -> bool:
    return hmac.compare_digest(given.encode(), token.get_secret_value().encode())


def require_admin(request: Request) -> None:
    """Bearer-token check for changing endpoints: 403 if disabled or wrong, 401 if missing."""
    settings: Settings = request.app.state.settings
    token = settings.admin_token
    if token is None or not token.get_secret_value():
        raise Forbidden("admin endpoints disabled: set WEBSIFT_ADMIN_TOKEN to enable them")
    given = _bearer(request)
    if given is None:
        raise Unauthorized("missing bearer token: send 'Authorization: Bearer <token>'")
    if not _holds(given, token):
        raise Forbidden("wrong admin token")


def is_admin(request: Request) -> bool:
    """Whether the request carries the admin token (for answers with a private part)."""
    settings: Settings = request.app.state.settings
    token = settings.admin_token
    given = _bearer(request)
    return (token is not None and bool(token.get_secret_value()) and given is not None
            and _holds(given, token))


def require_shard_token(request: Request) -> None:
    """The shard secret check of ``/shard/*``: 401 without a bearer token, 403 with a wrong one.
    A shard server without a secret (started on loopback only, api/app.py) lets any caller
    that can reach it through."""
    settings: Settings = request.app.state.settings
    token = settings.shard_token
    if token is None or not token.get_secret_value():
        return
    given = _bearer(request)
    if given is None:
        raise Unauthorized("missing shard token: a front server sends 'Authorization: Bearer "
                           "$WEBSIFT_SHARD_TOKEN'")
    if not _holds(given, token):
        raise Forbidden("wrong shard token")
