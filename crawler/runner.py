"""Running a crawl in-process with Scrapy, configured for websift.

Scrapy does the fetching (connections, timeouts, size cap, decompression); websift replaces the
parts that decide *what* and *when*: the scheduler (OPIC frontier and politeness), robots.txt
(Scrapy's RobotsTxtMiddleware and ROBOTSTXT_OBEY are off; ``crawler/robots.py`` decides),
redirects and retries (the session follows and counts them), and progress reporting.

Stopping (:class:`SignalStop`, websift's handlers instead of Scrapy's): the first SIGINT or
SIGTERM is a graceful stop: the session hands out no more requests, Scrapy's engine lets those in
progress finish, the spider closes and the session commits its batch and records the summary
(finish reason ``signal_SIGTERM``...), and the command exits 0.  A second signal is forceful: the
reactor stops at once, requests in flight are abandoned (their URLs stay pending for the next
run) and what was recorded is committed (``forced_stop``).  A third gets the default action.
"""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler, CrawlerProcess
from scrapy.utils.defer import deferred_from_coro
from twisted.python.failure import Failure

from websift.core.datadir import DataDir
from websift.core.gc_pauses import gc_pauses
from websift.crawler import settings as S
from websift.crawler.http_client import HeadCappedDownloadHandler
from websift.crawler.identity import agent_token
from websift.crawler.runs import FORCED_STOP
from websift.crawler.scope import Scope
from websift.crawler.session import CrawlConfig, CrawlSession, checked_seeds
from websift.crawler.spider import WebsiftSpider

HEAD_CAPPED_HANDLER = f"{HeadCappedDownloadHandler.__module__}.{HeadCappedDownloadHandler.__name__}"
_OFF_DOWNLOADER = (
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware",
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware",
    "scrapy.downloadermiddlewares.retry.RetryMiddleware",
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware",
    "scrapy.downloadermiddlewares.httpproxy.HttpProxyMiddleware",
    "scrapy.downloadermiddlewares.cookies.CookiesMiddleware",
    "scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware",
)
_OFF_SPIDER = (
    "scrapy.spidermiddlewares.depth.DepthMiddleware",
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware",
    "scrapy.spidermiddlewares.referer.RefererMiddleware",
)
_OFF_EXTENSIONS = (
    "scrapy.extensions.telnet.TelnetConsole",
    "scrapy.extensions.logstats.LogStats",
    "scrapy.extensions.memusage.MemoryUsage",
)


def scrapy_settings(config: CrawlConfig, progress: bool) -> dict[str, Any]:
    """Scrapy's settings for a websift crawl (every number comes from ``crawler/settings.py``)."""
    return {
        "BOT_NAME": agent_token(config.user_agent),
        "USER_AGENT": config.user_agent,
        "ROBOTSTXT_OBEY": False,
        "SCHEDULER": "websift.crawler.scheduler.FrontierScheduler",
        "TWISTED_DNS_RESOLVER": "websift.crawler.resolver.GuardedResolver",
        "WEBSIFT_ALLOW_PRIVATE": config.scope.allow_private,
        "WEBSIFT_ALLOW_IP": list(config.scope.allow_ip),  # the connect-time guard's ranges
        "WEBSIFT_DENY_IP": list(config.scope.deny_ip),
        "CONCURRENT_REQUESTS": S.CONCURRENT_REQUESTS,
        "CONCURRENT_REQUESTS_PER_DOMAIN": config.concurrency,  # a second guard on the session's
        "CONCURRENT_REQUESTS_PER_IP": 0,
        # The spider's callbacks return no items (the session records pages itself), yet Scrapy
        # starts CONCURRENT_ITEMS asyncio tasks per response to consume their output: at the
        # default 100 that was a quarter of the crawl's CPU (py-spy, 300-host web).
        "CONCURRENT_ITEMS": 1,
        "DOWNLOAD_DELAY": 0,  # the session spaces request starts itself
        "DOWNLOAD_DELAY_JITTER": 0,
        "DOWNLOAD_MAXSIZE": S.DOWNLOAD_MAXSIZE,
        # Scrapy's HTTP/1.1 handler with a cap on the response head (DOWNLOAD_MAXSIZE caps the
        # body only)
        "DOWNLOAD_HANDLERS": dict.fromkeys(("http", "https"), HEAD_CAPPED_HANDLER),
        "WEBSIFT_MAX_RESPONSE_HEAD_BYTES": S.MAX_RESPONSE_HEAD_BYTES,
        "WEBSIFT_MAX_RESPONSE_HEADERS": S.MAX_RESPONSE_HEADERS,
        "DOWNLOAD_WARNSIZE": S.DOWNLOAD_WARNSIZE,
        "DOWNLOAD_TIMEOUT": S.DOWNLOAD_TIMEOUT,
        "REDIRECT_MAX_TIMES": S.MAX_REDIRECTS,  # robots.txt only; pages are redirected by us
        "RETRY_ENABLED": False,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "STATS_DUMP": False,
        "LOG_LEVEL": "ERROR",
        "DOWNLOADER_MIDDLEWARES": dict.fromkeys(_OFF_DOWNLOADER),
        "SPIDER_MIDDLEWARES": dict.fromkeys(_OFF_SPIDER),
        "EXTENSIONS": {
            **dict.fromkeys(_OFF_EXTENSIONS),
            "websift.crawler.progress.Progress": 500,
            "websift.crawler.progress.LiveFigures": 510,
        },
        "WEBSIFT_PROGRESS": progress,
        "WEBSIFT_PROGRESS_INTERVAL": S.PROGRESS_INTERVAL,
    }


def collect_less_often() -> None:
    """This process's collector: generation 0 after ``GC_YOUNG_OBJECTS`` new objects (the older
    generations' thresholds kept), and every collection timed for the live figures."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(S.GC_YOUNG_OBJECTS, older, oldest)
    gc_pauses()


def run_session(session: CrawlSession, progress: bool = True) -> dict[str, Any]:
    """Run Scrapy until the session's frontier is exhausted (or its budget spent).

    Returns the summary (also stored in the ``crawls`` table).  One reactor per process: call
    this once per process (the command line does).
    """
    process = CrawlerProcess(scrapy_settings(session.config, progress))
    crawler = process.create_crawler(WebsiftSpider)
    result: dict[str, Any] = {}

    def spider_error(failure: Failure, response: Any, spider: Any) -> None:
        # a bug in websift's own callbacks: counted by type, never hidden
        session.stats[f"internal_error/{type(failure.value).__name__}"] += 1

    def closed(spider: Any, reason: str) -> None:
        refused = session.start_refused is not None
        result.update(session.close("scrapy_incompatible" if refused else reason))

    crawler.signals.connect(spider_error, signal=signals.spider_error)
    crawler.signals.connect(closed, signal=signals.spider_closed)
    session.on_failed = lambda: _close_now(crawler, "storage_error")
    collect_less_often()
    with SignalStop(session, process, crawler) as stop:
        process.crawl(crawler, session=session)
        process.start(install_signal_handlers=False)  # SignalStop's handlers, not Scrapy's
    if not result:  # a forced stop, or the spider never opened (e.g. a Scrapy start-up error)
        result.update(session.close(FORCED_STOP if stop.forced else "not_started"))
    if session.start_refused is not None:  # e.g. ScrapyIncompatible: the command's error line
        raise session.start_refused
    if session.failed is not None:  # a full disk: exit 1 with one line, also after a signal
        raise session.failed
    return result


def _close_now(crawler: Crawler, reason: str) -> None:
    """Close the spider as soon as the reactor gets its turn (called from inside a callback):
    requests in flight are dropped with it, and ``reason`` ends up as the run's finish reason."""
    reactor: Any = sys.modules.get("twisted.internet.reactor")
    engine = crawler.engine
    if reactor is None or engine is None or engine.spider is None:
        return

    def close() -> None:
        if crawler.engine is not None and crawler.engine.spider is not None:
            deferred_from_coro(crawler.engine.close_spider_async(reason=reason))

    reactor.callLater(0, close)


def run_crawl(data: DataDir, config: CrawlConfig, progress: bool = True) -> dict[str, Any]:
    """``websift crawl``: seeds into the frontier, then fetch until done."""
    checked_seeds(Scope(config.scope), config.seeds)  # refuse bad seeds before touching the store
    session = CrawlSession(data, config)
    with session.writing():  # the first commit may meet a full disk too: the same one line
        session.add_seeds()
    if session.failed is not None:
        session.close("storage_error")
        raise session.failed
    return run_session(session, progress)


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class SignalStop:
    """SIGINT / SIGTERM while a session runs: graceful first, forceful second (module doc).

    Handlers can be installed only in the main thread; elsewhere (a test driving a session in a
    thread) the process's own handling is left alone.  The previous handlers come back on exit.
    """

    def __init__(self, session: CrawlSession, process: CrawlerProcess, crawler: Crawler) -> None:
        self.session = session
        self.process = process
        self.crawler = crawler
        self.signals = 0
        self.forced = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> SignalStop:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        # In a signal handler: only flag writes and reactor.callFromThread, which is safe here
        # (it is how Twisted and Scrapy hand a signal to the reactor); nothing logs or blocks.
        self.signals += 1
        if self.signals == 1:
            self.session.request_stop(f"signal_{signal.Signals(signum).name}")
        else:
            self.forced = True
            for sig in STOP_SIGNALS:  # a third signal ends the process whatever it is doing
                signal.signal(sig, signal.SIG_DFL)
        # Importing the reactor here would install Twisted's default one before Scrapy installs
        # its own; before that moment the session's stop flag is enough (the engine opens with
        # nothing pending and closes).
        reactor = sys.modules.get("twisted.internet.reactor")
        if reactor is not None:
            reactor.callFromThread(self._stop_now if self.forced else self._stop_gracefully)

    def _stop_gracefully(self) -> None:
        """Scrapy's graceful stop: the engine sends nothing new, waits for the requests in
        progress, then closes the spider (and the session commits).  Before the engine runs,
        the session's stop flag does it: the engine opens with nothing pending and closes."""
        engine = self.crawler.engine
        if engine is not None and engine.running:
            self.process.stop().addErrback(self._stop_failed)

    def _stop_failed(self, failure: Failure) -> None:
        self.session.stats[f"internal_error/stop_{type(failure.value).__name__}"] += 1

    def _stop_now(self) -> None:
        # Scrapy's before-shutdown trigger stops the crawler, which the first signal already
        # did: the reactor goes down without waiting for the requests in flight.
        reactor: Any = sys.modules["twisted.internet.reactor"]  # running: it called us
        with contextlib.suppress(RuntimeError):  # already stopping
            reactor.stop()
