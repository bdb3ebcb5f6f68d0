"""``GET /search``'s lean path (api/lean_search.py) answers exactly as the FastAPI route does.

Each request is sent twice to the one application: as it is, and with ``content-length: 0``, a
header that sends it past the lean path to the route (a GET's empty body changes nothing else).
The two answers must be the same bytes: status, headers and body, for plain requests, for odd
spellings the lean path hands on, and for errors.  The engine is the real one over the test
site, with ``took_ms`` set to 0 so that two searches of one query give one body.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.conftest import settings_for
from websift.api.app import create_app
from websift.api.lean_search import LeanSearch
from websift.api.retrieval import Outcome, SearchEngine, SearchRequest
from websift.core.datadir import DataDir

Answer = tuple[int, list[tuple[bytes, bytes]], bytes]
TO_ROUTE = (b"content-length", b"0")


class Recorded:
    """The application's engine, recording each request and zeroing ``took_ms``."""

    def __init__(self, engine: SearchEngine) -> None:
        self.engine = engine
        self.requests: list[SearchRequest] = []

    async def search(self, req: SearchRequest) -> Outcome:
        self.requests.append(req)
        return replace(await self.engine.search(req), took_ms=0.0)


@pytest.fixture(scope="module")
def app(site_data: DataDir) -> Iterator[FastAPI]:
    app = create_app(settings_for(site_data, result_cache_size=0))
    app.state.engine = Recorded(app.state.engine)
    yield app
    app.state.holder.close()


def call(app: FastAPI, query: str, headers: list[tuple[bytes, bytes]] = (),  # type: ignore[assignment]
         method: str = "GET", path: str = "/search") -> Answer:
    """One request straight into the ASGI application: (status, headers, body)."""
    messages: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
             "http_version": "1.1", "method": method, "scheme": "http", "path": path,
             "raw_path": path.encode(), "root_path": "", "query_string": query.encode("latin-1"),
             "headers": [(b"host", b"test"), *headers], "server": ("test", 80),
             "client": ("127.0.0.1", 1234), "state": {}}
    asyncio.run(app(scope, receive, send))
    start = messages[0]
    body = b"".join(m.get("body", b"") for m in messages[1:])
    return start["status"], list(start["headers"]), body


def both_ways(app: FastAPI, query: str, headers: list[tuple[bytes, bytes]] = ()  # type: ignore[assignment]
              ) -> tuple[Answer, Answer, list[SearchRequest]]:
    """The answer of the lean path (when it takes the request), the route's, and the requests
    the engine received (the lean path's first)."""
    recorded: Recorded = app.state.engine
    recorded.requests.clear()
    lean = call(app, query, headers)
    route = call(app, query, [*headers, TO_ROUTE])
    return lean, route, list(recorded.requests)


def lean_takes(app: FastAPI, query: str, headers: list[tuple[bytes, bytes]] = ()  # type: ignore[assignment]
               ) -> bool:
    lean = LeanSearch(app, app.state.settings, lambda: app.state.engine, lambda e: None)  # type: ignore[arg-type, return-value]
    return lean.request_of({"type": "http", "path": "/search", "method": "GET",
                            "query_string": query.encode("latin-1"),
                            "headers": [(b"host", b"test"), *headers]}) is not None


PLAIN = [
    {"q": "garden"},
    {"q": "garden roses", "k": "3", "offset": "1"},
    {"q": "garden", "explain": "true", "snippets": "false"},
    {"q": "garden", "explain": "1", "snippets": "0", "k": "010"},
    {"q": "garden", "topic": "auto"},
    {"q": "garden", "topic": "no-such-topic"},  # 404 unknown_topic, from the engine
    {"q": "   "},  # 422: the query is empty once its spaces are gone, from the engine
    {"q": '"rose garden" -weeds', "site": "example.org", "lang": "fr"},
    {"q": "Gärten über Rosen ☃", "topic": "", "site": "", "lang": ""},
]


@pytest.mark.parametrize("params", PLAIN, ids=urlencode)
def test_plain_requests_take_the_lean_path_and_answer_as_the_route(
        app: FastAPI, params: dict[str, str]) -> None:
    query = urlencode(params)
    assert lean_takes(app, query)
    lean, route, requests = both_ways(app, query)
    assert lean == route
    assert len(requests) == 2 and requests[0] == requests[1]


def test_accept_language_is_read_as_the_route_reads_it(app: FastAPI) -> None:
    headers = [(b"accept-language", b"de-DE,de;q=0.9," + b"x" * 100),
               (b"accept-language", b"fr")]  # the first counts, cut at 64 characters
    lean, route, requests = both_ways(app, "q=garten", headers)
    assert lean == route
    assert requests[0] == requests[1] and requests[0].lang_hint is not None
    assert requests[0].lang_hint.startswith("de-DE") and len(requests[0].lang_hint) == 64


REFUSED = [
    "", "k=10", "q=", "q=garden&k=0", "q=garden&k=101", "q=garden&k=-1", "q=garden&k=+5",
    "q=garden&k=%205", "q=garden&k=5.0", "q=garden&k=", "q=garden&offset=100000000000",
    "q=garden&explain=yes", "q=garden&explain=TRUE", "q=garden&snippets=", "q=garden&k=%EF%BC%95",
    "q=garden&topic=" + "t" * 65, "q=garden&site=" + "s" * 254, "q=garden&lang=" + "l" * 65,
    "q=" + "w" * 3000,
]


@pytest.mark.parametrize("query", REFUSED, ids=lambda q: q[:40])
def test_other_spellings_go_to_the_route(app: FastAPI, query: str) -> None:
    """What the lean path does not take, FastAPI judges: a 422 from the one place, or an
    answer (``explain=yes`` is a boolean to pydantic)."""
    assert not lean_takes(app, query)
    lean, route, _ = both_ways(app, query)
    assert lean == route


def test_a_body_or_another_method_goes_to_the_route(app: FastAPI) -> None:
    assert not lean_takes(app, "q=garden", [(b"transfer-encoding", b"chunked")])
    status, _, body = call(app, "q=garden", [(b"content-length", b"99999999")])
    assert status == 413 and b"body_too_large" in body  # BodyLimit, before any route
    status, _, body = call(app, "q=garden", method="POST")
    assert status == 405 and b"method_not_allowed" in body


def test_lean_requests_are_timed_into_the_metrics(app: FastAPI) -> None:
    before = app.state.search_metrics.latency.snapshot()[2]
    statuses = app.state.search_metrics.statuses()
    for _ in range(3):
        call(app, "q=garden")
    call(app, "q=garden&topic=no-such-topic")
    assert app.state.search_metrics.latency.snapshot()[2] == before + 4
    after = app.state.search_metrics.statuses()
    assert after[200] == statuses.get(200, 0) + 3 and after[404] == statuses.get(404, 0) + 1


NAMES = st.sampled_from(["q", "k", "offset", "explain", "snippets", "topic", "site", "lang",
                         "x"])
VALUES = st.one_of(
    st.sampled_from(["garden", "roses", "", " ", "0", "1", "3", "010", "100", "101", "-1", "+2",
                     "2.0", "1e1", "true", "false", "True", "on", "no", "auto", "fr", "\uff11"]),  # a full-width 1
    st.text(st.characters(codec="utf-8"), max_size=70),
    st.integers(-5, 10**12).map(str),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(NAMES, VALUES), max_size=6))
def test_any_query_string_answers_as_the_route(app: FastAPI, pairs: list[tuple[str, str]]
                                                 ) -> None:
    lean, route, requests = both_ways(app, urlencode(pairs))
    assert lean == route
    if len(requests) == 2:
        assert requests[0] == requests[1]
