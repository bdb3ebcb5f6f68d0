"""``websift robots`` goes only where a crawl would, and no longer than a crawl's timeout.

A public-looking site (``public.example``, mapped by ``hostileweb.launch`` to a global address
served on loopback) redirects its robots.txt into private space: the command must refuse the
hop (the secret server's log stays empty) and answer "disallowed".  A URL into private space is
refused with one line; a server trickling its answer is cut off at the deadline.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from testkit.hostileweb import HostileWeb, Stream, run_launched
from websift.crawler.addresses import AddressRules
from websift.crawler.robots_command import fetch_robots_detailed

pytestmark = pytest.mark.slow  # the command in child processes


@pytest.fixture(scope="module")
def webs() -> Iterator[tuple[HostileWeb, int, int]]:
    web = HostileWeb()
    public = web.add_stream_site("public", "127.0.0.20", robots=None)
    secret = web.add_stream_site("secret", "127.0.0.21")
    with web:
        target = secret.url("/robots.txt")
        public.stream("/robots.txt", Stream(lambda wfile, stop: 0, 302, [
            ("Location", target), ("Content-Length", "0")]))
        yield web, _port(public.hostport), _port(secret.hostport)


def _port(hostport: str) -> int:
    return int(hostport.rsplit(":", 1)[1])


def test_a_redirect_into_private_space_is_not_followed(webs: tuple[HostileWeb, int, int]) -> None:
    web, public_port, _ = webs
    hosts = {"public.example": {"address": "93.184.216.34", "served_by": "127.0.0.20"}}
    run = run_launched("robots", f"http://public.example:{public_port}/page", hosts=hosts,
                       timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "disallowed"
    assert "refused" in lines[2] and "loopback address" in lines[2], lines
    assert web.entries("secret") == []  # never contacted
    assert "hostileweb: blocked" not in run.stderr


def test_a_private_url_is_refused_with_one_line(webs: tuple[HostileWeb, int, int]) -> None:
    web, _, secret_port = webs
    run = run_launched("robots", f"http://127.0.0.21:{secret_port}/page", timeout=60)
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1 and "--allow-private" in run.stderr
    assert web.entries("secret") == []


def test_a_trickling_server_is_cut_off_at_the_deadline() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(4096)
            for byte in b"HTTP/1.1 200 OK\r\nx-slow: " + b"s" * 1000:
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return  # the client hung up
                if stop.wait(0.1):
                    return

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    started = time.monotonic()
    got = fetch_robots_detailed(f"http://127.0.0.1:{server.getsockname()[1]}", timeout=1.0,
                                rules=AddressRules(allow_private=True))
    elapsed = time.monotonic() - started
    stop.set()
    server.close()
    assert got.status is None and got.error == "timed out", got
    assert 0.9 <= elapsed < 15.0
