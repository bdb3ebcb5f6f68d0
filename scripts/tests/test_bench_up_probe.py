"""bench_up's probe: one query at a time at an even pace, oldest pages first, a page asked
again only after a newer cut or RETRY seconds, against a real HTTP server on loopback."""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from scripts.benchmarks import bench_up as bench
from scripts.benchmarks.crawl_scale import Nginx
from testkit.genweb import WebParams, ensure_web
from testkit.ports import free_port
from websift.indexer.follow import FollowStatus

HOSTS = 2


class FakeIndex:
    """What the /search server holds: the pages searchable, and the queries it was sent."""

    def __init__(self, origins: dict[int, str]) -> None:
        self.origins = origins
        self.searchable: set[bench.Key] = set()
        self.queries: list[list[str]] = []
        self.lock = threading.Lock()

    def answer(self, words: list[str]) -> list[dict[str, str]]:
        with self.lock:
            self.queries.append(words)
            return [{"url": f"{self.origins[h]}/p/{p}.html"} for h, p in sorted(self.searchable)
                    if bench.token(h, p) in words]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[bench.Probe, FakeIndex]]:
    web = ensure_web(tmp_path / "web", WebParams(HOSTS * 5, HOSTS, 1, free_port()))
    index = FakeIndex({h: web.origin(h) for h in range(HOSTS)})

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            words = query["q"][0].split(" OR ")
            assert int(query["k"][0]) == len(words)
            body = json.dumps({"results": index.answer(words)}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    run = tmp_path / "run"
    run.mkdir()
    nginx = Nginx(web, run)  # not started: the probe reads its log's path only
    nginx.access_log.touch()
    probe = bench.Probe(bench.LogTail(nginx, web), server.server_address[1],
                        bench.Edits(web, random.Random(1)))
    try:
        yield probe, index
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def fetched(probe: bench.Probe, keys: list[bench.Key], at: float) -> None:
    for key in keys:
        probe.pages[key] = bench.Target(bench.token(*key), at, at)
        probe.order.append(key)


def status(cuts: int, at: float) -> FollowStatus:
    return FollowStatus(pid=1, state="following", started=at - 100, updated=at,
                        interval_seconds=5, every_pages=1000, cuts=cuts, last_cut=at,
                        last_cut_seconds=1.0)


def test_the_probe_sends_one_query_at_a_time_at_its_pace_oldest_pages_first(
        served: tuple[bench.Probe, FakeIndex]) -> None:
    probe, index = served
    t = time.time()
    keys = [(h, p) for p in range(40) for h in range(HOSTS)]  # 80 pages, in fetch order
    fetched(probe, keys, t - 10)
    index.searchable = set(keys[:50])
    first = status(1, t)
    assert probe.round(first)
    assert index.queries == [[bench.token(*k) for k in keys[:bench.PROBE_BATCH]]]
    assert all(probe.pages[k].found is not None for k in keys[:bench.PROBE_BATCH])
    # paced: no second query before PROBE_EVERY after the answer, however many pages wait
    assert probe.next_at >= probe.sent[-1][0] + bench.PROBE_EVERY
    assert not probe.round(first, probe.next_at - 0.01)
    assert len(index.queries) == 1
    assert probe.round(first, probe.next_at)
    assert index.queries[1] == [bench.token(*k) for k in keys[30:60]]
    found = {k for k in keys if probe.pages[k].found is not None}
    assert found == set(keys[:50])  # 50-59 asked and not listed: not found
    # the rest (60-79) are asked next; those asked under this cut wait for RETRY or a new cut
    assert probe.round(first, probe.next_at)
    assert index.queries[2] == [bench.token(*k) for k in keys[60:80]]
    assert not probe.round(first, probe.next_at)  # all asked under cut 1 within RETRY
    index.searchable |= set(keys[50:60])
    assert probe.round(status(2, time.time()), probe.next_at)  # a newer cut: asked again
    assert index.queries[3] == [bench.token(*k) for k in keys[50:80]]
    assert all(probe.pages[k].found is not None for k in keys[:60])
    assert all(probe.pages[k].found is None for k in keys[60:])


def test_pages_fetched_after_the_newest_cut_began_are_not_asked(
        served: tuple[bench.Probe, FakeIndex]) -> None:
    probe, index = served
    t = time.time()
    fetched(probe, [(0, 1)], t - 10)
    fetched(probe, [(1, 1)], t - 0.5)  # after the cut's snapshot (t - 1.0)
    assert probe.round(status(1, t))
    assert index.queries == [[bench.token(0, 1)]]
