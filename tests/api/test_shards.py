"""One search over many index shards: local shards in one process, remote shards fanned out.

A three-host site is indexed whole and split into one index per host (``shards_site.py``).
Served as local shards (``--shard DIR`` x3) and as remote shards (three real ``websift serve``
processes on loopback behind a front server), it must answer every query exactly as the whole
index does: same pages, same scores, same snippets.  A shard down or slower than the deadline
is left out: 200, ``shards.answered`` says so, ``/stats`` counts it.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from testkit.corpus import build_data_dir
from testkit.waiting import START
from tests.api.live import WAIT, free_port, wait_for
from tests.api.shards_site import (
    HOSTS,
    QUERIES,
    make_site,
    pages,
    split_by_host,
    url,
    write_shard,
)
from websift.api.app import create_app
from websift.api.cli import main as websift_main
from websift.api.fanout import BadShard
from websift.api.settings import Settings
from websift.api.workers import listener
from websift.core.datadir import DataDir
from websift.indexer.build import build_index, host_of
from websift.indexer.liveness import ShardsConflict

pytestmark = pytest.mark.slow  # shard servers in child processes

REPO = Path(__file__).resolve().parents[2]
# Generous for the exactness tests (a loaded 2-core machine must not drop a shard); the
# down/slow tests choose their own.
PATIENT_MS = 30_000
# The shard servers' secret (sent by the front) and the admin token (/stats' shard URLs, pids).
SHARD_TOKEN = "shard-secret-of-the-tests"
ADMIN_TOKEN = "admin-token-of-the-tests"
ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[DataDir, list[DataDir]]:
    root = tmp_path_factory.mktemp("shards")
    whole = make_site(root / "whole")
    return whole, split_by_host(whole, root / "shards")


@pytest.fixture
def app_client() -> Iterator[Callable[..., TestClient]]:
    with ExitStack() as stack:
        def make(**values: Any) -> TestClient:
            settings = Settings(**{"reload_check_ms": 0, "shard_token": SHARD_TOKEN,
                                   "admin_token": ADMIN_TOKEN, **values})
            return stack.enter_context(
                TestClient(create_app(settings), raise_server_exceptions=False))

        yield make


def _serve(args: list[str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "WEBSIFT_SHARD_TOKEN": SHARD_TOKEN,
           "WEBSIFT_ADMIN_TOKEN": ADMIN_TOKEN}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "websift.api.cli", "serve", *args, "--host", "127.0.0.1",
             "--port", str(port)], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


def _healthy(proc: subprocess.Popen[bytes], base: str, log: Path) -> Callable[[], bool]:
    def check() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"websift serve exited: {log.read_text()}")
        try:
            return httpx.get(base + "/healthz", timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False  # not listening yet
    return check


@pytest.fixture(scope="module")
def shard_servers(site: tuple[DataDir, list[DataDir]],
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """One real ``websift serve`` per shard, each with the whole crawl's ranks."""
    whole, shards = site
    logs = tmp_path_factory.mktemp("shard-logs")
    started = [(*_serve(["--shard-server", "--shard", str(s.root), "--ranks", str(whole.root)],
                        logs / f"{i}.log"), logs / f"{i}.log") for i, s in enumerate(shards)]
    try:
        for proc, base, log in started:
            wait_for(_healthy(proc, base, log), f"shard server {base}", START)
        yield [base for _, base, _ in started]
    finally:
        for proc, _, _ in started:
            proc.terminate()
        for proc, _, _ in started:
            proc.wait(WAIT)


def answers(client: TestClient, q: str, **params: Any) -> dict[str, Any]:
    response = client.get("/search", params={"q": q, "k": 10, **params})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def ranking(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What must be equal between two answers: every result's page, scores and snippet."""
    return [(r["url"], r["title"], r["score"], r["signals"]["text"], r["signals"]["prior"],
             r["signals"]["pagerank"], r["snippet"], r["highlights"]) for r in body["results"]]


def test_local_shards_answer_as_the_whole_index(
    site: tuple[DataDir, list[DataDir]], app_client: Callable[..., TestClient]
) -> None:
    whole, shards = site
    one = app_client(data=whole.root)
    sharded = app_client(shards=[str(s.root) for s in shards], ranks=whole.root)
    for q in QUERIES:
        expected, got = answers(one, q), answers(sharded, q)
        assert expected["results"], q  # every query finds something: the test can fail
        assert ranking(got) == ranking(expected), q
        assert got["total"] == expected["total"], q
        assert got["shards"] == {"answered": 3, "total": 3}
    stats = sharded.get("/stats").json()
    assert stats["indexed_docs"] == one.get("/stats").json()["indexed_docs"] == 3 * 14


def test_remote_shards_answer_as_the_whole_index(
    site: tuple[DataDir, list[DataDir]], shard_servers: list[str],
    app_client: Callable[..., TestClient],
) -> None:
    whole, _ = site
    one = app_client(data=whole.root)
    front = app_client(shards=shard_servers, shard_timeout_ms=PATIENT_MS)
    for q in QUERIES:
        expected, got = answers(one, q), answers(front, q)
        assert ranking(got) == ranking(expected), q
        assert got["total"] == expected["total"], q
        assert got["shards"] == {"answered": 3, "total": 3}
    # A second page merges the shards' top offset + k.
    assert ranking(answers(front, "river", offset=10)) == ranking(
        answers(one, "river", offset=10))
    bare = answers(front, "river", snippets="false")
    assert [r["url"] for r in bare["results"]] == [
        r["url"] for r in answers(one, "river")["results"]]
    assert all(r["snippet"] == "" for r in bare["results"])
    stats = front.get("/stats").json()
    assert stats["role"] == "front" and stats["partial"] == 0
    assert all(s["failures"] == {} and s["index_generation"] == 1
               for s in stats["shards"].values())
    # the shards' addresses and the pid only for the admin token
    assert sorted(stats["shards"]) == ["shard 1", "shard 2", "shard 3"] and stats["pid"] is None
    assert sorted(front.get("/stats", headers=ADMIN).json()["shards"]) == sorted(shard_servers)


@pytest.fixture
def one_and_front(site: tuple[DataDir, list[DataDir]], shard_servers: list[str],
                  app_client: Callable[..., TestClient]) -> tuple[TestClient, TestClient]:
    """A server over the whole index, and a front over the shard servers."""
    return (app_client(data=site[0].root),
            app_client(shards=shard_servers, shard_timeout_ms=PATIENT_MS))


def comparable(body: dict[str, Any]) -> dict[str, Any]:
    """An answer without what says how it was made (its time, its shards, the cache)."""
    return {k: v for k, v in body.items() if k not in ("took_ms", "shards", "cached")}


def test_a_front_answers_in_every_field_as_the_whole_index_in_the_asked_language(
        one_and_front: tuple[TestClient, TestClient]) -> None:
    one, front = one_and_front
    for q, params, headers in [
            ("river falcon", {}, {}), ("lantern", {"lang": "fr"}, {}),
            ("copper meadow", {}, {"accept-language": "de-DE,de;q=0.9"}),
            ("stone lang:es", {}, {}), ("market bridge", {"explain": "true", "offset": 3}, {}),
            ("orchard site:beta.test", {"k": 3}, {}), ('"river stone"', {"snippets": "false"}, {})]:
        expected = one.get("/search", params={"q": q, **params}, headers=headers)
        got = front.get("/search", params={"q": q, **params}, headers=headers)
        assert expected.status_code == got.status_code == 200, got.text
        assert comparable(got.json()) == comparable(expected.json()), (q, params, headers)


# Misspelt words of one host, of two (a host's own words are on the next one's pages too),
# of every host, beside right words.
MISSPELT = ["falcn", "glaicer river", "nebual", "lantren", "rivr stone", "coper meadow",
            "cedr", "walnutt canyon", "tundar", "marbel window"]


def test_remote_shards_correct_spelling_as_the_whole_index(
        one_and_front: tuple[TestClient, TestClient]) -> None:
    one, front = one_and_front
    for q in MISSPELT:
        expected, got = answers(one, q), answers(front, q)
        assert expected["did_you_mean"] is not None, q  # each is corrected: the test can fail
        assert got["did_you_mean"] == expected["did_you_mean"], q
        assert ranking(got) == ranking(expected), q
    assert answers(front, "falcon")["did_you_mean"] is None  # a right word is left alone
    # the search page shows the correction's pages: "coper" is in no page
    html = front.get("/", params={"q": "coper meadow"}).text
    assert "Showing results for <b>copper meadow</b>" in html
    shown = re.findall(r'<li class="result">.*?<a href="([^"]+)"', html, re.S)
    assert shown and shown == re.findall(
        r'<li class="result">.*?<a href="([^"]+)"',
        one.get("/", params={"q": "coper meadow"}).text, re.S)  # the pages one index shows


def test_remote_shards_complete_as_the_whole_index(
        one_and_front: tuple[TestClient, TestClient]) -> None:
    one, front = one_and_front
    # prefixes each shard has fewer candidates of than it sends: the sums are exact
    for q in ["falc", "glac", "nebu", "lant", "river fa", "Stone Gl"]:
        expected = one.get("/suggest", params={"q": q}).json()
        got = front.get("/suggest", params={"q": q}).json()
        assert expected[1], q  # something to complete: the test can fail
        assert got == expected, q
    assert front.get("/suggest", params={"q": "zzzq"}).json() == ["zzzq", []]


def test_a_shard_down_gives_partial_results_not_an_error(
    site: tuple[DataDir, list[DataDir]], shard_servers: list[str],
    app_client: Callable[..., TestClient],
) -> None:
    whole, shards = site
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there: connection refused
    front = app_client(shards=[*shard_servers[:2], down], shard_timeout_ms=PATIENT_MS)
    # What the two shards that answer hold, as one index of their own.
    two = app_client(shards=[str(s.root) for s in shards[:2]], ranks=whole.root)
    for q in ("river", "falcon OR nebula", "market bridge letter"):
        got = answers(front, q)
        assert got["shards"] == {"answered": 2, "total": 3}
        assert ranking(got) == ranking(answers(two, q)), q
        assert not any(host_of(r["url"]) == HOSTS[2] for r in got["results"])
    stats = front.get("/stats", headers=ADMIN).json()
    assert stats["partial"] == 3 and stats["unanswered"] == 0
    assert stats["shards"][down]["failures"] == {"connect": 3}
    assert stats["shards"][down]["answering"] is False
    page = front.get("/", params={"q": "river"})
    assert page.status_code == 200
    assert "Partial results: 2 of 3 index shards answered" in page.text
    assert front.get("/healthz").json() == {"status": "ok", "shards_answering": 2, "shards": 3}


class SlowServer:
    """An HTTP server on loopback that reads a request and answers only when released: a shard
    slower than any deadline."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.release = threading.Event()
        self.requests = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            self.requests += 1
            self.release.wait(WAIT)
            conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n")

    def close(self) -> None:
        self.release.set()
        self.sock.close()


def test_a_shard_slower_than_the_deadline_is_left_out_and_counted(
    site: tuple[DataDir, list[DataDir]], shard_servers: list[str],
    app_client: Callable[..., TestClient],
) -> None:
    whole, shards = site
    slow = SlowServer()
    try:
        front = app_client(shards=[slow.url, *shard_servers[1:]], shard_timeout_ms=3000)
        two = app_client(shards=[str(s.root) for s in shards[1:]], ranks=whole.root)
        got = answers(front, "stone glacier")
        # Answered while the slow shard still holds the request: the deadline cut it off.
        assert slow.requests == 1 and not slow.release.is_set()
        assert got["shards"] == {"answered": 2, "total": 3}
        assert ranking(got) == ranking(answers(two, "stone glacier"))
        stats = front.get("/stats", headers=ADMIN).json()
        assert stats["shards"][slow.url]["failures"] == {"timeout": 1}
        assert stats["partial"] == 1
    finally:
        slow.close()


def test_no_shard_answering_is_a_503_and_refusals_are_passed_on(
    shard_servers: list[str], app_client: Callable[..., TestClient]
) -> None:
    dead = app_client(shards=[f"http://127.0.0.1:{free_port()}"], shard_timeout_ms=PATIENT_MS)
    response = dead.get("/search", params={"q": "river"})
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "shards_unavailable"
    assert dead.get("/healthz").status_code == 503
    front = app_client(shards=shard_servers, shard_timeout_ms=PATIENT_MS)
    unknown = front.get("/search", params={"q": "river", "topic": "nope"})
    assert unknown.status_code == 404, unknown.text
    assert unknown.json()["error"]["code"] == "unknown_topic"
    bad = front.get("/search", params={"q": '"river'})  # refused by the front itself
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_query"
    assert front.get("/stats").json()["queries"] == 1  # the bad query never went out
    assert front.get("/pages", params={"url": url(HOSTS[0], 0)}).status_code == 404


def test_shards_of_separate_crawls_are_refused_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    roots = []
    for name in ("one", "two"):  # each crawl numbers its own URLs from 1
        data = build_data_dir(tmp_path / name, {
            f"http://{name}.test/{i}.html": f"<html><body><p>plum {name} {i}</p></body></html>"
            for i in range(3)})
        build_index(data)
        roots.append(str(data.root))
    with pytest.raises(ShardsConflict, match="separate URL ID spaces"):
        create_app(Settings(shards=roots))
    code = websift_main(["serve", "--shard", roots[0], "--shard", roots[1], "--port", "9"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "both hold URL ID 1" in err
    with pytest.raises(BadShard, match="not both"):
        create_app(Settings(shards=[roots[0], "http://127.0.0.1:9"]))


def test_a_page_held_by_two_shards_counts_once(
    site: tuple[DataDir, list[DataDir]], tmp_path: Path,
    app_client: Callable[..., TestClient],
) -> None:
    whole, shards = site
    extra = url(HOSTS[1], 3)  # a beta page also in the alpha shard: one ID space, one page
    alpha_plus = write_shard(whole, tmp_path / "alpha+",
                             lambda u: host_of(u) == HOSTS[0] or u == extra)
    both = app_client(shards=[str(alpha_plus.root), str(shards[1].root)], ranks=whole.root)
    plain = app_client(shards=[str(s.root) for s in shards[:2]], ranks=whole.root)
    assert both.get("/stats").json()["indexed_docs"] == 2 * 14
    for q in QUERIES:
        assert ranking(answers(both, q)) == ranking(answers(plain, q)), q


def test_of_two_copies_of_a_page_the_one_with_more_words_serves(
    site: tuple[DataDir, list[DataDir]], tmp_path: Path,
    app_client: Callable[..., TestClient],
) -> None:
    """As a page fetched by one crawler beats another crawler's thin record of it."""
    whole, shards = site
    page = url(HOSTS[0], 0)
    thin_site = pages()
    thin_site[page] = "<html><head><title>thin</title></head><body><p>thin</p></body></html>"
    other = build_data_dir(tmp_path / "other", thin_site)  # same URLs in the same order: same IDs
    build_index(other)
    thin = write_shard(other, tmp_path / "thin", lambda u: u == page)
    both = app_client(shards=[str(thin.root), str(shards[0].root)], ranks=whole.root)
    alone = app_client(shards=[str(shards[0].root)], ranks=whole.root)
    assert both.get("/stats").json()["indexed_docs"] == 14
    assert answers(both, "thin")["results"] == []
    for q in QUERIES:
        assert ranking(answers(both, q)) == ranking(answers(alone, q)), q


def test_a_new_generation_in_one_shard_is_served(
    site: tuple[DataDir, list[DataDir]], tmp_path: Path,
    app_client: Callable[..., TestClient],
) -> None:
    whole, shards = site
    held_back = url(HOSTS[2], 0)
    gamma = write_shard(whole, tmp_path / "gamma",
                        lambda u: host_of(u) == HOSTS[2] and u != held_back)
    client = app_client(shards=[str(shards[0].root), str(shards[1].root), str(gamma.root)],
                        ranks=whole.root)
    one = app_client(data=whole.root)
    before = client.get("/stats").json()
    assert before["indexed_docs"] == 3 * 14 - 1 and before["index_generation"] == 3
    write_shard(whole, gamma.root, lambda u: host_of(u) == HOSTS[2], generation=2)
    after = client.get("/stats").json()
    assert after["indexed_docs"] == 3 * 14 and after["index_generation"] == 4
    for q in QUERIES:
        assert ranking(answers(client, q)) == ranking(answers(one, q)), q


def test_two_workers_answer_and_stop_cleanly(
    site: tuple[DataDir, list[DataDir]], tmp_path: Path
) -> None:
    whole, _ = site
    log = tmp_path / "serve.log"
    proc, base = _serve(["--data", str(whole.root), "--workers", "2"], log)
    try:
        wait_for(_healthy(proc, base, log), "websift serve --workers 2", START)
        pids: set[int] = set()

        def both_answered() -> bool:
            # A new connection each time: the kernel hands it to whichever worker accepts.
            stats = httpx.get(base + "/stats", headers={"connection": "close", **ADMIN},
                              timeout=5.0)
            pids.add(stats.json()["pid"])
            return len(pids) == 2

        wait_for(both_answered, "two worker processes to answer /stats")
        assert proc.pid not in pids
        assert answers_over_http(base, "river") == 10
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(WAIT)
    assert code == 0, log.read_text()
    for pid in pids:  # the workers went with their supervisor
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_worker_that_dies_stops_the_server_with_one_line(
    site: tuple[DataDir, list[DataDir]], tmp_path: Path
) -> None:
    whole, _ = site
    log = tmp_path / "serve.log"
    proc, base = _serve(["--data", str(whole.root), "--workers", "2"], log)
    try:
        wait_for(_healthy(proc, base, log), "websift serve --workers 2", START)
        pid = httpx.get(base + "/stats", headers=ADMIN, timeout=WAIT).json()["pid"]
        os.kill(pid, signal.SIGKILL)
        code = proc.wait(WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT)
    assert code == 2
    assert f"error: worker process {pid} exited with status -9" in log.read_text()


def answers_over_http(base: str, q: str) -> int:
    response = httpx.get(base + "/search", params={"q": q}, timeout=WAIT)
    assert response.status_code == 200, response.text
    return len(response.json()["results"])


def test_a_worker_socket_gives_its_connections_tcp_nodelay() -> None:
    """Without TCP_NODELAY every keep-alive answer after the first waits for a delayed ACK."""
    async def accepted_nodelay() -> int:
        sock = listener("127.0.0.1", 0)
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def accepted(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            conn = w.get_extra_info("socket")
            seen.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            w.close()

        server = await asyncio.start_server(accepted, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname())
            value = await asyncio.wait_for(seen, WAIT)
            writer.close()
        return value

    assert asyncio.run(accepted_nodelay()) != 0
