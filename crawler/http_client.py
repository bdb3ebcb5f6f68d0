"""Scrapy's HTTP/1.1 download handler with a cap on a response's head (status line and headers).

``DOWNLOAD_MAXSIZE`` caps a response's body only: Twisted's response parser keeps every header
line it is sent (each under its line-length cap of 16 KiB), so a server sending hundreds of
megabytes of headers had them all held in memory.  :class:`HeadCappedDownloadHandler` is
Scrapy's ``HTTP11DownloadHandler`` whose connections parse responses with
:class:`_HeadCappedParser`: past ``MAX_RESPONSE_HEAD_BYTES`` bytes or ``MAX_RESPONSE_HEADERS``
header lines (``crawler/settings.py``), or one line longer than the byte cap, the connection is
dropped and the download fails with :class:`ResponseHeadTooLarge`, which the spider counts as
``too_large`` (not retried, as a body over ``DOWNLOAD_MAXSIZE``).

Scrapy itself swaps the class of the parser its protocol creates (``_LenientHTTP11ClientProtocol``
in ``scrapy/core/downloader/handlers/http11.py``); this does the same with a subclass of it.  A
Scrapy without those classes is :class:`~crawler.errors.ScrapyIncompatible` (one line) when the
crawl starts (``crawler/runner.py`` imports this module).
"""

from __future__ import annotations

from typing import Any, cast

import scrapy
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import DownloadFailedError
from scrapy.http import Response
from twisted.web._newclient import STATUS, ResponseFailed

from websift.crawler import settings as S
from websift.crawler.errors import ScrapyIncompatible

try:
    from scrapy.core.downloader.handlers.http11 import (
        HTTP11DownloadHandler,
        _LenientHTTP11ClientFactory,
        _LenientHTTP11ClientProtocol,
        _LenientHTTPClientParser,
    )
except ImportError as exc:  # pragma: no cover - only with an unsupported Scrapy
    raise ScrapyIncompatible(
        f"Scrapy {scrapy.__version__} lacks {exc.name or exc}, which websift's download handler "
        "(crawler/http_client.py) subclasses; install a Scrapy version within the bound in "
        "pyproject.toml") from None


class ResponseHeadTooLarge(Exception):
    """A response's status line and headers passed the crawler's cap (counted ``too_large``)."""


class _HeadCappedParser(_LenientHTTPClientParser):
    """The response parser counting the head's bytes and lines as they arrive."""

    max_head_bytes: int = S.MAX_RESPONSE_HEAD_BYTES
    max_headers: int = S.MAX_RESPONSE_HEADERS
    head_bytes = 0
    head_lines = 0

    def lineReceived(self, line: bytes) -> None:
        self.head_bytes += len(line) + 2
        if self.state != STATUS:
            self.head_lines += 1
        if self.head_bytes > self.max_head_bytes:
            raise ResponseHeadTooLarge(f"response head over {self.max_head_bytes} bytes")
        if self.head_lines > self.max_headers + 1:  # the blank line that ends the head
            raise ResponseHeadTooLarge(f"response head over {self.max_headers} header lines")
        super().lineReceived(line)

    def lineLengthExceeded(self, line: bytes) -> None:
        raise ResponseHeadTooLarge(f"a response header line over {self.MAX_LENGTH} bytes")


class _HeadCappedProtocol(_LenientHTTP11ClientProtocol):
    max_head_bytes: int = S.MAX_RESPONSE_HEAD_BYTES
    max_headers: int = S.MAX_RESPONSE_HEADERS

    def request(self, request: Any) -> Any:
        d = super().request(request)
        parser = self._parser
        assert parser is not None  # HTTP11ClientProtocol.request() made it (Scrapy's note)
        parser.__class__ = _HeadCappedParser
        capped = cast(_HeadCappedParser, parser)
        capped.max_head_bytes = self.max_head_bytes
        capped.max_headers = self.max_headers
        # one line may be as long as the whole head may be, no longer
        capped.MAX_LENGTH = self.max_head_bytes
        return d


class _HeadCappedFactory(_LenientHTTP11ClientFactory):
    protocol_class: type[_HeadCappedProtocol] = _HeadCappedProtocol

    def buildProtocol(self, addr: Any) -> Any:
        return self.protocol_class(self._quiescentCallback)


class HeadCappedDownloadHandler(HTTP11DownloadHandler):
    """``HTTP11DownloadHandler`` with a cap on each response's head (module doc).  The caps come
    from the settings ``WEBSIFT_MAX_RESPONSE_HEAD_BYTES`` and ``WEBSIFT_MAX_RESPONSE_HEADERS``."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        settings = crawler.settings

        class Protocol(_HeadCappedProtocol):
            max_head_bytes = settings.getint("WEBSIFT_MAX_RESPONSE_HEAD_BYTES",
                                             S.MAX_RESPONSE_HEAD_BYTES)
            max_headers = settings.getint("WEBSIFT_MAX_RESPONSE_HEADERS", S.MAX_RESPONSE_HEADERS)

        class Factory(_HeadCappedFactory):
            protocol_class = Protocol

        self._pool._factory = Factory

    async def download_request(self, request: Request) -> Response:
        try:
            return await super().download_request(request)
        except DownloadFailedError as exc:
            over = _head_too_large(exc)
            if over is not None:
                raise over from exc
            raise


def _head_too_large(exc: BaseException) -> ResponseHeadTooLarge | None:
    """The :class:`ResponseHeadTooLarge` behind a failed download, if that is why it failed."""
    cause = exc.__cause__
    if isinstance(cause, ResponseFailed):
        for reason in cause.reasons:
            if isinstance(reason.value, ResponseHeadTooLarge):
                return reason.value
    return None
