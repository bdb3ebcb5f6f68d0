"""Running a crawl in-process with Scrapy, configured for websift.

Scrapy does the fetching (connections, timeouts, size cap, decompression); websift replaces the
parts that decide *what* and *when*: the scheduler (OPIC frontier and politeness), robots.txt
(Scrapy's RobotsTxtMiddleware and ROBOTSTXT_OBEY are off; ``crawler/robots.py`` decides),
redirects and retries (the session follows and counts them), and progress reporting.
"""

from __future__ import annotations

from typing import Any

from scrapy import signals
from scrapy.crawler import CrawlerProcess
from twisted.python.failure import Failure

from core.datadir import DataDir
from crawler import settings as S
from crawler.scope import Scope
from crawler.session import CrawlConfig, CrawlSession, checked_seeds
from crawler.spider import WebsiftSpider

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
        "BOT_NAME": S.ROBOTS_AGENT,
        "USER_AGENT": S.USER_AGENT,
        "ROBOTSTXT_OBEY": False,
        "SCHEDULER": "crawler.scheduler.FrontierScheduler",
        "TWISTED_DNS_RESOLVER": "crawler.resolver.GuardedResolver",
        "WEBSIFT_ALLOW_PRIVATE": config.scope.allow_private,
        "CONCURRENT_REQUESTS": S.CONCURRENT_REQUESTS,
        "CONCURRENT_REQUESTS_PER_DOMAIN": config.concurrency,  # a second guard on the session's
        "CONCURRENT_REQUESTS_PER_IP": 0,
        "DOWNLOAD_DELAY": 0,  # the session spaces request starts itself
        "DOWNLOAD_DELAY_JITTER": 0,
        "DOWNLOAD_MAXSIZE": S.DOWNLOAD_MAXSIZE,
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
        "EXTENSIONS": {**dict.fromkeys(_OFF_EXTENSIONS), "crawler.progress.Progress": 500},
        "WEBSIFT_PROGRESS": progress,
        "WEBSIFT_PROGRESS_INTERVAL": S.PROGRESS_INTERVAL,
    }


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
        result.update(session.close(reason))

    crawler.signals.connect(spider_error, signal=signals.spider_error)
    crawler.signals.connect(closed, signal=signals.spider_closed)
    process.crawl(crawler, session=session)
    process.start()
    if not result:  # the spider never opened (e.g. a Scrapy start-up error)
        result.update(session.close("not_started"))
    return result


def run_crawl(data: DataDir, config: CrawlConfig, progress: bool = True) -> dict[str, Any]:
    """``websift crawl``: seeds into the frontier, then fetch until done."""
    checked_seeds(Scope(config.scope), config.seeds)  # refuse bad seeds before touching the store
    session = CrawlSession(data, config)
    session.add_seeds()
    return run_session(session, progress)
