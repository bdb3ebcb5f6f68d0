"""The Scrapy spider: turns Scrapy's responses and failures into plain values for the session.

It yields no requests of its own (``start`` is empty): the scheduler (``crawler/scheduler.py``)
draws every request from the session's frontier, and the spider builds it with the session's
:class:`~crawler.meta.FetchMeta` under ``request.meta[META_KEY]`` next to Scrapy's own keys.
Its callbacks only convert and hand over, so the crawl's logic stays out of Scrapy's object model
and can be tested on its own.
"""

from __future__ import annotations

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

from websift.crawler.http_client import ResponseHeadTooLarge
from websift.crawler.meta import META_KEY, FetchMeta, fetch_meta
from websift.crawler.pipeline import Fetched
from websift.crawler.resolver import GuardedResolver
from websift.crawler.session import CrawlSession

# robots.txt answers the spider sees (3xx are followed by Scrapy's RedirectMiddleware, 5 hops)
_ROBOTS_STATUSES = [*range(200, 300), *range(400, 600)]

_FAILURE_REASONS: tuple[tuple[tuple[type[BaseException], ...], str], ...] = (
    ((DownloadTimeoutError, error.TimeoutError, defer.TimeoutError), "timeout"),
    ((CannotResolveHostError, error.DNSLookupError), "dns"),
    ((DownloadConnectionRefusedError, error.ConnectionRefusedError), "connection_refused"),
    ((DownloadCancelledError, defer.CancelledError, ResponseHeadTooLarge), "too_large"),
    ((ResponseDataLossError,), "data_loss"),
    ((DownloadFailedError, error.ConnectionLost, error.ConnectionDone), "connection_failed"),
    ((IgnoreRequest,), "ignored"),
)


def _failed_with(failure: Failure, *types: type[BaseException]) -> bool:
    """``failure.check`` with a type (Twisted leaves it unannotated)."""
    return failure.check(*types) is not None  # type: ignore[no-untyped-call]


def failure_reason(failure: Failure) -> str:
    """A short reason key for a failed download (counted in the summary)."""
    if _failed_with(failure, IgnoreRequest) and failure.value is not None and _over_size_cap(failure.value):
        return "too_large"  # HttpCompressionMiddleware: the body inflates past DOWNLOAD_MAXSIZE
    for types, reason in _FAILURE_REASONS:
        if _failed_with(failure, *types):
            return reason
    return "exception_" + type(failure.value).__name__


def refused_at_connect(url: str) -> str | None:
    """The reason key the connect-time address guard (crawler/resolver.py) refused this URL's
    host under (``private_address``, ``ip_denied``, ``ip_not_allowed``), or None."""
    from twisted.internet import reactor

    resolver = getattr(reactor, "resolver", None)
    if not isinstance(resolver, GuardedResolver):
        return None
    return resolver.refused_reason(urlsplit(url).hostname)


# Scrapy's private exception behind HttpCompressionMiddleware's IgnoreRequest when a body
# inflates past DOWNLOAD_MAXSIZE: matched by name, and checked to exist when the crawl opens
# (crawler/scheduler.py, check_scrapy_internals)
DECOMPRESSION_CAP_ERROR = ("scrapy.utils._compression", "_DecompressionMaxSizeExceeded")


def _over_size_cap(exc: BaseException) -> bool:
    cause = exc.__cause__
    return cause is not None and (
        type(cause).__name__ == DECOMPRESSION_CAP_ERROR[1] or "DOWNLOAD_MAXSIZE" in str(exc)
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
    def page_request(
        self, url: str, meta: FetchMeta, headers: dict[str, str], slot: str
    ) -> scrapy.Request:
        scrapy_meta = {
            META_KEY: meta,
            "download_slot": slot,
            "handle_httpstatus_all": True,
            "dont_redirect": True,
            "dont_retry": True,
        }
        return scrapy.Request(
            url, callback=self.parse, errback=self.failed, meta=scrapy_meta, headers=headers,
            dont_filter=True,
        )

    def robots_request(self, url: str, meta: FetchMeta) -> scrapy.Request:
        scrapy_meta = {
            META_KEY: meta, "handle_httpstatus_list": _ROBOTS_STATUSES, "dont_retry": True
        }
        return scrapy.Request(
            url, callback=self.parse_robots, errback=self.failed, meta=scrapy_meta,
            dont_filter=True,
        )

    def signal_request(
        self, url: str, meta: FetchMeta, headers: dict[str, str], slot: str, maxsize: int
    ) -> scrapy.Request:
        scrapy_meta = {
            META_KEY: meta,
            "download_slot": slot,
            "download_maxsize": maxsize,
            "handle_httpstatus_all": True,
            "dont_retry": True,
        }
        return scrapy.Request(
            url, callback=self.parse_signal, errback=self.failed, meta=scrapy_meta,
            headers=headers, dont_filter=True,
        )

    # ------------------------------------------------------------------ callbacks
    def parse(self, response: Response) -> list[Any]:
        meta = _own_meta(response.meta)
        self.session.release(meta, response.meta.get("download_latency"))
        looks_html = isinstance(response, HtmlResponse)
        encoding = response.encoding if isinstance(response, TextResponse) else None
        fetched = Fetched(
            uid=meta.page_id,
            url=response.url,
            status=response.status,
            headers=header_pairs(response),
            body=response.body,
            encoding=encoding,
            looks_html=looks_html,
            depth=meta.depth,
            fetched_at=self.session.clock(),
        )
        self.session.on_response(meta, fetched)
        return []

    def parse_signal(self, response: Response) -> list[Any]:
        meta = _own_meta(response.meta)
        self.session.release(meta, response.meta.get("download_latency"))
        self.session.on_signal(meta, Fetched(
            uid=0, url=response.url, status=response.status, headers=header_pairs(response),
            body=response.body, fetched_at=self.session.clock(),
        ))
        return []

    def parse_robots(self, response: Response) -> list[Any]:
        meta = _own_meta(response.meta)
        self.session.release(meta, response.meta.get("download_latency"))
        self.session.on_robots(meta, response.status, response.body)
        return []

    def failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        meta = fetch_meta(request.meta) if request is not None else None
        self.session.release(meta, None)
        reason = failure_reason(failure)
        if reason == "dns" and request is not None:
            reason = refused_at_connect(request.url) or reason
        self.session.on_failure(meta, reason)


def _own_meta(meta: dict[str, Any]) -> FetchMeta:
    """The FetchMeta of a response to a request websift made (every callback's request is)."""
    own = fetch_meta(meta)
    if own is None:
        raise KeyError(f"request.meta has no {META_KEY!r} FetchMeta")
    return own
