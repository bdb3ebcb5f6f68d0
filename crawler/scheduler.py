"""Scrapy's scheduler, replaced by websift's frontier (the ``SCHEDULER`` setting).

Scrapy's engine calls :meth:`FrontierScheduler.next_request` whenever the downloader has room;
the answer comes from the session (politeness, robots.txt, OPIC).  When no host may be contacted
yet, the scheduler arranges to wake the engine at the moment one may, so the delay between
request starts is kept to the millisecond instead of to the engine's 5-second heartbeat.

A request's place in its host's in-flight count is freed when it leaves the downloader (the
``request_left_downloader`` signal), or in the spider's callback if that comes first.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import CallLaterResult, call_later

from crawler.session import CrawlSession

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from scrapy.spiders import Spider

WAKE_SLACK = 0.0005  # seconds added to a wake-up so the host is surely ready when it fires


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
        return None

    def close(self, reason: str) -> None:
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None

    def has_pending_requests(self) -> bool:
        return self.session.has_pending()

    def enqueue_request(self, request: Request) -> bool:
        # Only Scrapy's own follow-ups arrive here (a robots.txt redirect); frontier URLs never do.
        # Its host's in-flight place was freed with the first request; it takes none.
        request.meta["websift_released"] = True
        self.session.extra.append(request)
        return True

    def next_request(self) -> Request | None:
        request = self.session.next_request(time.time())
        if request is None and self.session.wake_at is not None:
            self._arm(self.session.wake_at)
        return request  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ waking the engine
    def _arm(self, at: float) -> None:
        if self._wake is not None and self._wake_at is not None and self._wake_at <= at:
            return
        if self._wake is not None:
            self._wake.cancel()
        self._wake_at = at
        self._wake = call_later(max(0.0, at - time.time()) + WAKE_SLACK, self._fire)

    def _fire(self) -> None:
        self._wake = None
        self._wake_at = None
        engine: Any = self.crawler.engine
        slot = getattr(engine, "_slot", None)  # Scrapy has no public "poll the scheduler" call
        if slot is not None:
            slot.nextcall.schedule()

    def _left_downloader(self, request: Request, spider: Spider | None = None) -> None:
        self.session.release(request.meta, request.meta.get("download_latency"))
