"""One GET where a crawl would go: the host's addresses judged first, the connection pinned.

Question: how do the tools that fetch a single file outside the Scrapy crawl (``websift robots``,
crawler/robots_command.py; the IndexNow key file, crawler/indexnow.py) reach a site without
going where the crawl may not?

Every address the URL's host resolves to is judged by the crawler's
:class:`~crawler.addresses.AddressRules` (``checked_address``); the connection then goes to the
address judged, not to a second lookup (``get_at_address``), with the URL's host in the Host
header and, over TLS, the certificate checked against it.  The whole request, connecting
included, has one deadline, so a server trickling bytes cannot hold it longer.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
from urllib.parse import urlsplit

from websift.core.errors import WebsiftError
from websift.crawler import settings
from websift.crawler.addresses import AddressRules, Refusal
from websift.crawler.scope import system_resolve


class AddressRefused(WebsiftError):
    """A host of the fetch resolves to an address the address rules refuse."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.detail)
        self.refusal = refusal


def checked_address(url: str, rules: AddressRules) -> str:
    """The address to connect to for ``url``'s host: every address the host resolves to must
    pass ``rules`` (as the crawler's scope check asks), else :class:`AddressRefused`."""
    parts = urlsplit(url)
    host = parts.hostname
    if parts.scheme not in ("http", "https") or not host:
        raise ValueError(f"not an http(s) URL: {url}")
    try:
        literal: str | None = str(ipaddress.ip_address(host))
    except ValueError:
        literal = None
    addresses = [literal] if literal is not None else system_resolve(host, parts.port)
    if not addresses:
        raise OSError(f"{host} has no address")
    for text in addresses:
        refusal = rules.judge(ipaddress.ip_address(text), None if literal else host)
        if refusal is not None:
            raise AddressRefused(refusal)
    return addresses[0]


class _PinnedHTTP(http.client.HTTPConnection):
    """A connection to one given address, with the URL's host in the Host header."""

    def __init__(self, host: str, port: int | None, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """:class:`_PinnedHTTP` over TLS; the certificate is checked against the URL's host."""

    def __init__(self, host: str, port: int | None, address: str, timeout: float,
                 context: ssl.SSLContext) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self.address = address
        self.tls = context

    def connect(self) -> None:
        raw = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self.tls.wrap_socket(raw, server_hostname=self.host)


def get_at_address(url: str, address: str, timeout: float,
                   max_bytes: int) -> tuple[int, str | None, bytes]:
    """(status, Location, body) of one GET of ``url`` connected to ``address``, redirects not
    followed, at most ``max_bytes`` of the body read, all of it within ``timeout`` seconds: past
    it the socket is shut down under the reading call and the request ends in ``TimeoutError``."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = _PinnedHTTPS(host, parts.port, address, timeout,
                                  ssl.create_default_context())
    else:
        connection = _PinnedHTTP(host, parts.port, address, timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        if connection.sock is not None:
            with contextlib.suppress(OSError):  # already closed: nothing to cut
                connection.sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(timeout, cut)
    timer.daemon = True
    timer.start()
    try:
        connection.request("GET", target, headers={"User-Agent": settings.USER_AGENT})
        response = connection.getresponse()
        body = response.read(max_bytes)
    except (OSError, http.client.HTTPException):
        if expired.is_set():
            raise TimeoutError("timed out") from None
        raise
    finally:
        timer.cancel()
        connection.close()
    if expired.is_set():  # the body was cut short by the deadline
        raise TimeoutError("timed out")
    return response.status, response.getheader("Location"), body


def describe_fetch_error(exc: BaseException) -> str:
    """One line saying why a fetch got no answer ("timed out", "connection refused", ...)."""
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__
