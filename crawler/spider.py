"""The Scrapy spider: turns Scrapy's responses and failures into plain values for the session.

It yields no requests of its own (``start`` is empty): the scheduler (``crawler/scheduler.py``)
draws every request from the session's frontier.  Its callbacks only convert and hand over, so
the crawl's logic stays out of Scrapy's object model and can be tested on its own.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.http import HtmlResponse, Response, TextResponse
from twisted.internet import defer, error
from twisted.python.failure import Failure

from crawler.pipeline import Fetched
from crawler.resolver import GuardedResolver
from crawler.session import CrawlSession

# robots.txt answers the spider sees (3xx are followed by Scrapy's RedirectMiddleware, 5 hops)
_ROBOTS_STATUSES = [*range(200, 300), *range(400, 600)]

_FAILURE_REASONS: tuple[tuple[tuple[type[BaseException], ...], str], ...] = (
    ((DownloadTimeoutError, error.TimeoutError, defer.TimeoutError), "timeout"),
    ((CannotResolveHostError, error.DNSLookupError), "dns"),
    ((DownloadConnectionRefusedError, error.ConnectionRefusedError), "connection_refused"),
    ((DownloadCancelledError, defer.CancelledError), "too_large"),
    ((ResponseDataLossError,), "data_loss"),
    ((DownloadFailedError, error.ConnectionLost, error.ConnectionDone), "connection_failed"),
    ((IgnoreRequest,), "ignored"),
)


def failure_reason(failure: Failure) -> str:
    """A short reason key for a failed download (counted in the summary)."""
    if failure.check(IgnoreRequest) and _over_size_cap(failure.value):
        return "too_large"  # HttpCompressionMiddleware: the body inflates past DOWNLOAD_MAXSIZE
    for types, reason in _FAILURE_REASONS:
        if failure.check(*types):
            return reason
    return "exception_" + type(failure.value).__name__


def refused_at_connect(url: str) -> bool:
    """Whether the connect-time SSRF guard (crawler/resolver.py) refused this URL's host."""
    from twisted.internet import reactor

    resolver = getattr(reactor, "resolver", None)
    return isinstance(resolver, GuardedResolver) and bool(
        resolver.refused(urlsplit(url).hostname)
    )


def _over_size_cap(exc: BaseException) -> bool:
    cause = exc.__cause__
    return cause is not None and (
        type(cause).__name__ == "_DecompressionMaxSizeExceeded" or "DOWNLOAD_MAXSIZE" in str(exc)
    )


def header_pairs(response: Response) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for key, values in response.headers.items():
        name = key.decode("latin-1")
        for value in values:
            pairs.append((name, value.decode("latin-1")))
    return pairs


class WebsiftSpider(scrapy.Spider):
    name = "websift"

    def __init__(self, session: CrawlSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session = session
        session.factory = self

    async def start(self) -> AsyncIterator[Any]:
        return
        yield  # an async generator with nothing in it: the frontier feeds the scheduler

    # ------------------------------------------------------------------ requests
    def page_request(self, url: str, meta: dict[str, Any], headers: dict[str, str]) -> scrapy.Request:
        meta = {**meta, "handle_httpstatus_all": True, "dont_redirect": True, "dont_retry": True}
        return scrapy.Request(
            url, callback=self.parse, errback=self.failed, meta=meta, headers=headers,
            dont_filter=True,
        )

    def robots_request(self, url: str, meta: dict[str, Any]) -> scrapy.Request:
        meta = {**meta, "handle_httpstatus_list": _ROBOTS_STATUSES, "dont_retry": True}
        return scrapy.Request(
            url, callback=self.parse_robots, errback=self.failed, meta=meta, dont_filter=True
        )

    # ------------------------------------------------------------------ callbacks
    def parse(self, response: Response) -> list[Any]:
        meta = response.meta
        self.session.release(meta, meta.get("download_latency"))
        looks_html = isinstance(response, HtmlResponse)
        encoding = response.encoding if isinstance(response, TextResponse) else None
        fetched = Fetched(
            uid=int(meta["websift_id"]),
            url=response.url,
            status=response.status,
            headers=header_pairs(response),
            body=response.body,
            encoding=encoding,
            looks_html=looks_html,
            depth=int(meta.get("websift_depth", 0)),
            fetched_at=time.time(),
        )
        self.session.on_response(meta, fetched)
        return []

    def parse_robots(self, response: Response) -> list[Any]:
        meta = response.meta
        self.session.release(meta, meta.get("download_latency"))
        self.session.on_robots(meta, response.status, response.body)
        return []

    def failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        meta: dict[str, Any] = request.meta if request is not None else {}
        self.session.release(meta, None)
        reason = failure_reason(failure)
        if reason == "dns" and request is not None and refused_at_connect(request.url):
            reason = "private_address"
        self.session.on_failure(meta, reason)
