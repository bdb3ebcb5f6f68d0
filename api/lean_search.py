"""``GET /search`` without the framework's per-request work, for the requests that need none.

A search request's own work is a few milliseconds; routing it through Starlette and FastAPI
(the exception middleware, the router's matching, a ``Request``, the dependency and parameter
resolution, a pydantic validation per parameter) costs a noticeable share on top.
:class:`LeanSearch` is an ASGI middleware that answers ``GET /search`` itself when every
parameter it reads is one it can check as FastAPI would, in the plainest form (``k=10``,
``explain=true``): the same :class:`~api.retrieval.SearchRequest`, the same engine, the same
body (``api.routes.search.response_body`` through :class:`~api.routes.search.SearchJSON`) and
the same error answers for websift's exceptions.  Anything else (a parameter missing, out of
bounds, too long, spelt another way, a request with a body) goes on to the FastAPI route, so
every 422 and its message come from the one place they always did.
``tests/api/test_lean_search.py`` holds the two paths' answers equal, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qsl

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from websift.api.retrieval import (
    LANG_MAX_CHARS,
    SITE_MAX_CHARS,
    TOPIC_MAX_CHARS,
    SearchEngine,
    SearchRequest,
)
from websift.api.routes.search import SearchJSON, response_body
from websift.api.settings import Settings
from websift.core.errors import WebsiftError

# The spellings of a boolean taken here (pydantic takes these and more; the rest go on to it).
_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}
_MAX_DIGITS = 9  # longer numbers go on to the route (its bounds are far below)
_HAS_BODY = (b"content-length", b"transfer-encoding")
_TEXT_CAPS = (("topic", TOPIC_MAX_CHARS), ("site", SITE_MAX_CHARS), ("lang", LANG_MAX_CHARS))


class LeanSearch:
    """ASGI middleware: ``GET path`` with plain, valid parameters searched and answered here;
    every other request passes to ``app`` (module doc).

    ``engine``: the application's search engine, read per request (tests swap it);
    ``on_error``: the answer to one of websift's exceptions, as the application's handler
    gives it.
    """

    def __init__(self, app: ASGIApp, settings: Settings, engine: Callable[[], SearchEngine],
                 on_error: Callable[[WebsiftError], Response], path: str = "/search") -> None:
        self.app = app
        self.engine = engine
        self.on_error = on_error
        self.path = path
        self.default_k = settings.default_k
        self.max_k = settings.max_k
        self.max_offset = settings.max_offset
        self.max_query_chars = settings.max_query_chars

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        req = None
        if scope["type"] == "http" and scope["path"] == self.path and scope["method"] == "GET":
            req = self.request_of(scope)
        if req is None:
            await self.app(scope, receive, send)
            return
        response: Response
        try:
            outcome = await self.engine().search(req)
        except WebsiftError as exc:
            response = self.on_error(exc)
        else:
            response = SearchJSON(response_body(outcome, req))
        await response(scope, receive, send)

    def request_of(self, scope: Scope) -> SearchRequest | None:
        """The search ``scope`` asks for, or None when the FastAPI route must judge it."""
        accept_language = None
        for name, value in scope["headers"]:
            if name in _HAS_BODY:
                return None  # a body: the route and BodyLimit deal with it as they always did
            if name == b"accept-language" and accept_language is None:
                accept_language = value.decode("latin-1")  # the first, as Starlette's Headers
        # Starlette's QueryParams: latin-1, blanks kept, the last of repeated names wins.
        params = dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
        q = params.get("q")
        if q is None or not 1 <= len(q) <= self.max_query_chars:
            return None
        for name, max_chars in _TEXT_CAPS:
            value = params.get(name)
            if value is not None and len(value) > max_chars:
                return None
        k = _number(params.get("k"), self.default_k, 1, self.max_k)
        offset = _number(params.get("offset"), 0, 0, self.max_offset)
        explain = _boolean(params.get("explain"), False)
        snippets = _boolean(params.get("snippets"), True)
        if k is None or offset is None or explain is None or snippets is None:
            return None
        return SearchRequest(
            q=q, k=k, offset=offset, topic=params.get("topic") or None,
            site=params.get("site") or None, explain=explain, snippets=snippets,
            lang=params.get("lang") or None,
            lang_hint=(accept_language or "")[:LANG_MAX_CHARS] or None,
        )


def _number(value: str | None, default: int, low: int, high: int) -> int | None:
    """An integer parameter in [low, high] written as plain digits, or None (the route says)."""
    if value is None:
        return default
    if not (0 < len(value) <= _MAX_DIGITS and value.isascii() and value.isdigit()):
        return None
    number = int(value)
    return number if low <= number <= high else None


def _boolean(value: str | None, default: bool) -> bool | None:
    return default if value is None else _BOOLEANS.get(value)
