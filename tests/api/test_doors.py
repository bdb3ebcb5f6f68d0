"""What a client can cost the server and what it may see, over real sockets to uvicorn on loopback.

Request bodies over the cap are refused with a 413 before they are read whole; a client
trickling its request head is disconnected at the read deadline; ``/shard/*`` exists only on a
shard server and answers only the shard secret; ``/stats`` keeps pids, seeds, scope and settings
for the admin token.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import httpx
import pytest

from tests.api.conftest import ADMIN_TOKEN
from tests.api.live import live_server
from websift.api.app import create_app
from websift.api.cli import main as websift_main
from websift.api.fanout import ShardTokenMissing
from websift.api.settings import Settings
from websift.core.datadir import DataDir
from websift.store.crawl_store import CrawlStore

BODY_CAP = 64 * 1024
READ_TIMEOUT = 1.5  # seconds: the servers' request_read_timeout_s here
BOUND = 15.0  # generous: the server must have closed by then on a loaded machine
SHARD_TOKEN = "shard-secret-of-the-door-tests"
FLOOD = 300 * 1024 * 1024  # what the hostile client offers to send


@contextmanager
def connected(base: str) -> Iterator[socket.socket]:
    parts = urlsplit(base)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=BOUND)
    try:
        yield sock
    finally:
        sock.close()


def status_of(sock: socket.socket) -> int:
    """The status code of the answer on ``sock`` (reads its first line)."""
    data = b""
    while b"\r\n" not in data:
        piece = sock.recv(4096)
        if not piece:
            break
        data += piece
    return int(data.split(b" ", 2)[1])


def flood(sock: socket.socket, chunked: bool) -> int:
    """Send up to ``FLOOD`` bytes of body on ``sock`` until the server hangs up; bytes sent."""
    piece = b"x" * 65536
    if chunked:
        piece = b"%x\r\n" % len(piece) + piece + b"\r\n"
    sent = 0
    try:
        while sent < FLOOD:
            sent += sock.send(piece)
    except OSError:  # EPIPE / ECONNRESET: the server closed the connection
        pass
    return sent


@pytest.fixture(scope="module")
def shard_server(site_data: DataDir) -> Iterator[str]:
    with live_server(site_data, shard_server=True, shard_token=SHARD_TOKEN,
                     max_body_bytes=BODY_CAP, request_read_timeout_s=READ_TIMEOUT) as base:
        yield base


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_large_body_is_refused_with_413_without_being_read(shard_server: str,
                                                             chunked: bool) -> None:
    framing = b"transfer-encoding: chunked" if chunked else b"content-length: %d" % FLOOD
    with connected(shard_server) as sock:
        sock.sendall(b"POST /shard/stats HTTP/1.1\r\nhost: x\r\ncontent-type: application/json"
                     b"\r\nauthorization: Bearer " + SHARD_TOKEN.encode() + b"\r\n" + framing
                     + b"\r\n\r\n")
        started = time.monotonic()
        sent = flood(sock, chunked)
        assert status_of(sock) == 413
    # the server stopped reading at the cap: what it took is the cap plus the sockets' buffers
    assert sent < FLOOD // 10, sent
    assert time.monotonic() - started < BOUND


def test_a_small_body_still_works(shard_server: str) -> None:
    answer = httpx.post(shard_server + "/shard/stats", json={"q": "garden"},
                        headers={"authorization": f"Bearer {SHARD_TOKEN}"})
    assert answer.status_code == 200 and answer.json()["stats"]["n_docs"] > 0
    too_big = httpx.post(shard_server + "/shard/stats", content=b"{" * (BODY_CAP + 1),
                         headers={"authorization": f"Bearer {SHARD_TOKEN}"})
    assert too_big.status_code == 413
    assert too_big.json()["error"]["code"] == "body_too_large"


def test_a_client_trickling_its_head_is_cut_off_at_the_deadline(shard_server: str) -> None:
    head = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: " + b"s" * 1000
    with connected(shard_server) as sock:
        sock.settimeout(0.1)  # the pace of the trickle: one byte each time nothing comes back
        started = time.monotonic()
        closed_after = None
        for i in range(len(head)):
            try:
                sock.send(head[i:i + 1])
                if sock.recv(1) == b"":
                    closed_after = time.monotonic() - started
                    break
            except TimeoutError:
                continue  # still open: the next byte
            except OSError:
                closed_after = time.monotonic() - started
                break
    assert closed_after is not None, "the server kept the connection for the whole head"
    assert READ_TIMEOUT * 0.9 <= closed_after < READ_TIMEOUT + BOUND


def test_a_flood_of_request_headers_is_refused(shard_server: str) -> None:
    line = b"x-pad: " + b"p" * 1000 + b"\r\n"
    with connected(shard_server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
        sent = 0
        try:
            while sent < FLOOD:
                sent += sock.send(line * 16)
        except OSError:
            pass  # the server closed the connection
        assert status_of(sock) == 400
    assert sent < FLOOD // 10, sent
    assert httpx.get(shard_server + "/healthz").status_code == 200  # the server goes on


def test_shard_routes_need_the_shard_token(shard_server: str) -> None:
    ask = {"q": "garden"}
    none = httpx.post(shard_server + "/shard/stats", json=ask)
    assert none.status_code == 401 and none.json()["error"]["code"] == "unauthorized"
    wrong = httpx.post(shard_server + "/shard/snippets", json={"q": "garden", "doc_ids": [1]},
                       headers={"authorization": "Bearer not-the-secret"})
    assert wrong.status_code == 403 and wrong.json()["error"]["code"] == "forbidden"
    right = httpx.post(shard_server + "/shard/search", json={**ask, "k": 3},
                       headers={"authorization": f"Bearer {SHARD_TOKEN}"})
    assert right.status_code == 200 and len(right.json()["hits"]) == 3


def test_a_plain_server_has_no_shard_routes(site_data: DataDir) -> None:
    with live_server(site_data, shard_token=SHARD_TOKEN) as base:
        for path in ("/shard/stats", "/shard/search", "/shard/snippets"):
            answer = httpx.post(base + path, json={"q": "garden"},
                                headers={"authorization": f"Bearer {SHARD_TOKEN}"})
            assert answer.status_code == 404, path
        assert httpx.get(base + "/search", params={"q": "garden"}).status_code == 200


def test_a_shard_server_without_a_token_starts_on_loopback_only(
    site_data: DataDir, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ShardTokenMissing, match="WEBSIFT_SHARD_TOKEN"):
        create_app(Settings(data=site_data.root, shard_server=True, host="0.0.0.0"))
    code = websift_main(["serve", "--data", str(site_data.root), "--shard-server", "--host",
                         "0.0.0.0", "--port", "9"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "WEBSIFT_SHARD_TOKEN" in err
    with live_server(site_data, shard_server=True) as base:  # 127.0.0.1: open to this machine
        assert httpx.post(base + "/shard/stats", json={"q": "garden"}).status_code == 200


def test_stats_keeps_pids_seeds_and_settings_for_the_admin(fresh_data: DataDir) -> None:
    private = {"scope": {"seeds": ["http://intranet.example/"], "allow_private": True},
               "settings": {"delay": 1.0}, "seeds_failed": 0,
               "live": {"pid": 4242, "state": "running", "updated": time.time(),
                        "started": time.time()}}
    with CrawlStore.open(fresh_data.store_path) as store:
        store.start_crawl("crawl", json.dumps(private))
    with live_server(fresh_data, admin_token=ADMIN_TOKEN) as base:
        public = httpx.get(base + "/stats").json()
        admin = httpx.get(base + "/stats",
                          headers={"authorization": f"Bearer {ADMIN_TOKEN}"}).json()
        wrong = httpx.get(base + "/stats", headers={"authorization": "Bearer nope"}).json()
    text = json.dumps(public)
    assert public["redacted"] is True and public["pid"] is None
    assert public["live_crawl"]["pid"] is None
    assert "intranet.example" not in text and "4242" not in text and "settings" not in text
    assert public["fetched_pages"] == admin["fetched_pages"] > 0  # the counts stay public
    assert wrong["redacted"] is True
    assert admin["redacted"] is False and isinstance(admin["pid"], int)
    assert admin["live_crawl"]["pid"] == 4242
    assert admin["last_crawl"]["summary"]["scope"]["seeds"] == ["http://intranet.example/"]
