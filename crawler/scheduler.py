"""Scrapy's scheduler, replaced by websift's frontier (the ``SCHEDULER`` setting).

Scrapy's engine calls :meth:`FrontierScheduler.next_request` whenever the downloader has room;
the answer comes from the session (politeness, robots.txt, OPIC).  When no host may be contacted
yet, the scheduler arranges to wake the engine at the moment one may, so the delay between
request starts is kept to the millisecond instead of to the engine's 5-second heartbeat.

A request's place in its host's in-flight count is freed when it leaves the downloader (the
``request_left_downloader`` signal), or in the spider's callback if that comes first.

Scrapy has no public "poll the scheduler now" call, so the wake-up goes through the engine's
private ``_slot.nextcall``; :func:`check_scrapy_internals` verifies, when the scheduler opens,
that it and every other Scrapy internal websift relies on exist, and stops the crawl with one
line naming the missing one and the Scrapy version found.  Nothing degrades silently.
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

import scrapy
from scrapy import signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import CallLaterResult, call_later

from websift.crawler.errors import ScrapyIncompatible
from websift.crawler.meta import META_KEY, fetch_meta
from websift.crawler.session import CrawlSession
from websift.crawler.spider import DECOMPRESSION_CAP_ERROR

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from scrapy.spiders import Spider

WAKE_SLACK = 0.0005  # seconds added to a wake-up so the host is surely ready when it fires


def check_scrapy_internals(engine: Any) -> None:
    """Raise :class:`ScrapyIncompatible` unless the Scrapy internals websift uses are there.

    - ``ExecutionEngine._slot.nextcall.schedule``: wakes the engine the moment a host may be
      contacted (without it the delay between starts would stretch to the 5 s heartbeat);
    - ``scrapy.utils._compression._DecompressionMaxSizeExceeded``: tells a decompression bomb
      (``too_large``) from other ignored responses (``crawler/spider.py``).

    Call it once the engine has opened its slot (the scheduler's ``open``).
    """
    slot = getattr(engine, "_slot", None)
    if slot is None:
        _missing("ExecutionEngine._slot (set before the scheduler opens)")
    if not callable(getattr(getattr(slot, "nextcall", None), "schedule", None)):
        _missing("ExecutionEngine._slot.nextcall.schedule()")
    module, name = DECOMPRESSION_CAP_ERROR
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        found = None
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        _missing(f"{module}.{name}")


def _missing(internal: str) -> NoReturn:
    raise ScrapyIncompatible(
        f"Scrapy {scrapy.__version__} has no {internal}, which websift's crawler relies on; "
        "install a Scrapy version within the bound in pyproject.toml"
    )


class FrontierScheduler(BaseScheduler):
    def __init__(self, crawler: Crawler, session: CrawlSession) -> None:
        self.crawler = crawler
        self.session = session
        self._wake: CallLaterResult | None = None
        self._wake_at: float | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        spider = crawler.spider
        session = getattr(spider, "session", None)
        if not isinstance(session, CrawlSession):
            raise TypeError("FrontierScheduler needs a spider with a CrawlSession")
        scheduler = cls(crawler, session)
        crawler.signals.connect(scheduler._left_downloader, signal=signals.request_left_downloader)
        return scheduler

    def open(self, spider: Spider) -> None:
        try:
            check_scrapy_internals(self.crawler.engine)
        except ScrapyIncompatible as exc:
            # Stop before the first request: with nothing pending the engine closes the spider
            # as idle, cleanly in every Scrapy version (an exception raised here would leave
            # it half open); the runner then raises the error as the command's one line.
            self.session.start_refused = exc
            return
        # a host's address verdict came back from a DNS thread: poll the session at once
        self.session.addresses.wake = self._wake_from_thread

    def close(self, reason: str) -> None:
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None

    def has_pending_requests(self) -> bool:
        return self.session.start_refused is None and self.session.has_pending()

    def enqueue_request(self, request: Request) -> bool:
        # Only Scrapy's own follow-ups arrive here (a robots.txt redirect); frontier URLs never do.
        # Its host's in-flight place was freed with the first request; it takes none.  The meta
        # dict is a copy, the FetchMeta in it is shared with the first request: replace it.
        meta = fetch_meta(request.meta)
        if meta is not None:
            request.meta[META_KEY] = replace(meta, released=True)
        self.session.extra.append(request)
        return True

    def next_request(self) -> Request | None:
        if self.session.start_refused is not None:
            return None
        request = self.session.next_request(self.session.clock())
        if request is None and self.session.wake_at is not None:
            self._arm(self.session.wake_at)
        return request

    # ------------------------------------------------------------------ waking the engine
    def _arm(self, at: float) -> None:
        if self._wake is not None and self._wake_at is not None and self._wake_at <= at:
            return
        if self._wake is not None:
            self._wake.cancel()
        self._wake_at = at
        self._wake = call_later(max(0.0, at - self.session.clock()) + WAKE_SLACK, self._fire)

    def _fire(self) -> None:
        self._wake = None
        self._wake_at = None
        self._poke()

    def _wake_from_thread(self) -> None:
        """Called from a DNS thread (crawler/dns.py): the engine is polled on the reactor's."""
        from twisted.internet import reactor

        reactor.callFromThread(self._poke)

    def _poke(self) -> None:
        engine: Any = self.crawler.engine
        slot = engine._slot  # there since open (check_scrapy_internals)
        if slot is not None:  # None: the engine closed meanwhile, nobody to wake
            slot.nextcall.schedule()

    def _left_downloader(self, request: Request, spider: Spider | None = None) -> None:
        self.session.release(fetch_meta(request.meta), request.meta.get("download_latency"))
