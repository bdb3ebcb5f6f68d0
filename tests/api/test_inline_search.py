"""Searches run on the event loop while a process's searches are all short (api/retrieval.py,
``InlinePolicy``), in worker threads otherwise, with the same answers either way."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from websift.api import retrieval
from websift.api.retrieval import (
    INLINE_MIN_SEEN,
    INLINE_SLOW_SHARE,
    INLINE_WINDOW,
    InlinePolicy,
)
from websift.core.datadir import DataDir

QUERIES = ["python", "install package", "search engine", "ranking", "index", "crawler",
           "links", "pages", "the", "documentation"]


def test_policy_needs_enough_short_searches_and_follows_the_recent_ones() -> None:
    policy = InlinePolicy(2.0)
    for _ in range(INLINE_MIN_SEEN - 1):
        policy.record(0.0005)
        assert not policy.inline()  # too few seen yet
    policy.record(0.0005)
    assert policy.inline()
    slow_allowed = int(INLINE_SLOW_SHARE * INLINE_WINDOW)
    for _ in range(INLINE_WINDOW):
        policy.record(0.0005)
    for _ in range(slow_allowed):
        policy.record(0.010)
    assert policy.inline()  # a few slow ones among many short
    policy.record(0.010)
    assert not policy.inline()  # one more: back to threads
    for _ in range(INLINE_WINDOW - slow_allowed - 1):
        policy.record(0.0005)
    assert not policy.inline()  # the slow ones are all still in the window
    policy.record(0.0005)
    assert policy.inline()  # the first of them has left it


def test_policy_off_at_zero() -> None:
    policy = InlinePolicy(0.0)
    for _ in range(INLINE_WINDOW):
        policy.record(0.0)
    assert not policy.inline()


def _answers(client: TestClient, rounds: int) -> list[Any]:
    out = []
    for _ in range(rounds):
        for q in QUERIES:
            r = client.get("/search", params={"q": q, "k": 10})
            assert r.status_code == 200, r.text
            body = r.json()
            body.pop("took_ms")
            out.append(body)
    return out


@pytest.mark.parametrize("limit_ms", [1000.0, 0.0])
def test_searches_run_where_the_policy_says_with_the_same_answers(
        site_data: DataDir, make_client: Callable[..., TestClient],
        monkeypatch: pytest.MonkeyPatch, limit_ms: float) -> None:
    threads: set[str] = set()
    real = retrieval.search_and_cache

    def traced(*args: Any, **kwargs: Any) -> Any:
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(retrieval, "search_and_cache", traced)
    client = make_client(site_data, result_cache_size=0, inline_search_ms=limit_ms)
    reference = make_client(site_data, result_cache_size=0, inline_search_ms=0.0)
    rounds = -(-(INLINE_MIN_SEEN + 10) // len(QUERIES))
    got = _answers(client, rounds)
    threads_seen = set(threads)
    assert got == _answers(reference, rounds)
    searches = client.get("/stats").json()["searches"]
    assert searches["inline"] + searches["in_thread"] == rounds * len(QUERIES)
    if limit_ms:
        # the first INLINE_MIN_SEEN in threads, every later one (all short) on the loop
        assert searches["in_thread"] == INLINE_MIN_SEEN
        assert searches["inline"] == rounds * len(QUERIES) - INLINE_MIN_SEEN
        assert len(threads_seen) >= 2  # the event loop's thread and the workers'
    else:
        assert searches["inline"] == 0

