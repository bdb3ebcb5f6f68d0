"""Both HTTP/1.1 protocols ``websift serve`` may run (httptools when installed, else h11) keep
the same limits and answer alike, over real sockets to uvicorn on loopback.

tests/api/test_doors.py runs the limits through the protocol a server picks; this runs each
protocol by name: a head trickled or a body trickled is cut at the read deadline, a flood of
header lines is a 400 with the connection closed, and kept-alive and pipelined requests answer
the same bytes (status, headers but the date, body).
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec

import pytest
import uvicorn

from testkit.waiting import WAIT, wait_for
from tests.api.conftest import settings_for
from tests.api.live import free_port
from websift.api.app import create_app
from websift.api.request_limits import uvicorn_config
from websift.core.datadir import DataDir

READ_TIMEOUT = 1.0  # seconds: the servers' request_read_timeout_s here
BOUND = 15.0  # generous: the server must have closed by then on a loaded machine
HEAD_CAP = 4096

PARSERS = ["h11", pytest.param("httptools", marks=pytest.mark.skipif(
    not find_spec("httptools"), reason="httptools not installed"))]


@contextmanager
def running(data: DataDir, parser: str) -> Iterator[int]:
    """A server over ``data`` with that HTTP/1.1 parser, in a thread; yields its port."""
    port = free_port()
    settings = settings_for(data, host="127.0.0.1", port=port, result_cache_size=0,
                            request_read_timeout_s=READ_TIMEOUT, max_header_bytes=HEAD_CAP)
    config = uvicorn_config(create_app(settings), settings, log_level="error", access_log=False,
                            parser=parser)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "the server to start")
    name = config.http_protocol_class.__name__
    assert ("HttpTools" in name) == (parser == "httptools"), name
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(WAIT)


@pytest.fixture(scope="module", params=PARSERS)
def server(request: pytest.FixtureRequest, site_data: DataDir) -> Iterator[int]:
    """The port of a server over the test site with each HTTP/1.1 parser in turn."""
    with running(site_data, request.param) as port:
        yield port


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=BOUND)


def read_answers(sock: socket.socket, n: int) -> list[bytes]:
    """``n`` whole answers (head and Content-Length body) read from ``sock``."""
    data, answers = b"", []
    while len(answers) < n:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            length = int(re.search(rb"(?i)content-length: *(\d+)", data[:end]).group(1))  # type: ignore[union-attr]
            if len(data) >= end + 4 + length:
                answers.append(data[:end + 4 + length])
                data = data[end + 4 + length:]
                continue
        piece = sock.recv(65536)
        assert piece, f"closed after {len(answers)} answers"
        data += piece
    return answers


def closed_after(sock: socket.socket, trickle: bytes) -> float | None:
    """Send ``trickle`` a byte at a time, one each 0.1 s that nothing comes back; the seconds
    until the server closed the connection, or None if it read it all."""
    sock.settimeout(0.1)
    started = time.monotonic()
    for i in range(len(trickle)):
        try:
            sock.send(trickle[i:i + 1])
            if sock.recv(1) == b"":
                return time.monotonic() - started
        except TimeoutError:
            continue
        except OSError:
            return time.monotonic() - started
    return None


def test_a_trickled_head_is_cut_at_the_deadline(server: int) -> None:
    with connect(server) as sock:
        after = closed_after(sock, b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-slow: " + b"s" * 500)
    assert after is not None and READ_TIMEOUT * 0.9 <= after < READ_TIMEOUT + BOUND


def test_a_trickled_body_is_cut_at_the_deadline_on_a_kept_alive_connection(
        server: int) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")  # a first request, answered
        assert read_answers(sock, 1)[0].startswith(b"HTTP/1.1 200")
        after = closed_after(sock, b"POST /healthz HTTP/1.1\r\nhost: x\r\ncontent-length: 500"
                             b"\r\n\r\n" + b"b" * 500)
    assert after is not None and READ_TIMEOUT * 0.9 <= after < READ_TIMEOUT + BOUND


def test_a_flood_of_header_lines_is_a_400_and_the_end_of_the_connection(
        server: int) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
        sent = 0
        try:
            while sent < 64 * HEAD_CAP:
                sent += sock.send(b"x-pad: " + b"p" * 100 + b"\r\n")
        except OSError:
            pass  # the server closed the connection
        answer = sock.recv(65536)
        assert answer.startswith(b"HTTP/1.1 400"), answer[:80]
        sock.settimeout(BOUND)
        while sock.recv(65536):
            pass  # the server closes: recv gives b"" (an OSError would fail the test)
    assert sent < 64 * HEAD_CAP


def test_a_head_under_the_cap_is_answered(server: int) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-pad: " + b"p" * (HEAD_CAP // 2)
                     + b"\r\n\r\n")
        assert read_answers(sock, 1)[0].startswith(b"HTTP/1.1 200")


REQUESTS = [b"GET /search?q=garden&k=3 HTTP/1.1\r\nhost: x\r\n\r\n",
            b"GET /search?q=garden&k=0 HTTP/1.1\r\nhost: x\r\n\r\n",
            b"GET /search?q=roses&topic=nope HTTP/1.1\r\nhost: x\r\n\r\n",
            b"GET /nowhere HTTP/1.1\r\nhost: x\r\n\r\n",
            b"POST /search HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"]


def _comparable(answer: bytes) -> bytes:
    answer = re.sub(rb"(?im)^date: [^\r]*\r\n", b"", answer)
    # the search's own time, in the body and so in its length
    answer = re.sub(rb'"took_ms":[0-9.e-]+', b'"took_ms":0', answer)
    return re.sub(rb"(?im)^content-length: *\d+\r\n", b"", answer)


def answers_of(port: int, pipelined: bool) -> list[bytes]:
    with connect(port) as sock:
        if pipelined:
            sock.sendall(b"".join(REQUESTS))
            return read_answers(sock, len(REQUESTS))
        answers = []
        for req in REQUESTS:
            sock.sendall(req)
            answers += read_answers(sock, 1)
        return answers


@pytest.mark.skipif(not find_spec("httptools"), reason="httptools not installed")
def test_kept_alive_and_pipelined_requests_answer_the_same_under_both_parsers(
        site_data: DataDir) -> None:
    seen: dict[str, list[list[bytes]]] = {}
    for parser in ("h11", "httptools"):
        with running(site_data, parser) as port:
            seen[parser] = [[_comparable(a) for a in answers_of(port, pipelined)]
                            for pipelined in (False, True)]
    for answers in seen["httptools"]:
        assert [int(a.split(b" ", 2)[1]) for a in answers] == [200, 422, 404, 404, 405]
    assert seen["httptools"] == seen["h11"]
