"""Scrapy extensions: the live progress line, the live figures in the store, the summary table.

Progress (every ``PROGRESS_INTERVAL`` seconds, on stderr): pages done (first fetches of pages
never read, "discovery", apart from refetches of read ones, "refresh"), pages per second, URLs
waiting, requests in flight, errors.  On a terminal the line is redrawn in place; otherwise one
plain line is printed per interval, which is what a log file wants.  At the end the summary (every
outcome and every failure by reason) is printed as a table; the same summary is stored as JSON in
the store's ``crawls`` row by ``CrawlSession.close``.

:class:`LiveFigures` ticks the session every ``LIVE_EVERY`` seconds: a batch past its age
commits even when Scrapy asks for nothing, and the running crawl's figures in its ``crawls`` row
stay fresh (the session writes them with every batch commit, and on the tick when none commits,
e.g. while a continuous crawl waits), for ``websift serve``'s ``/stats`` and ``/metrics``.  It
runs with ``--quiet`` too.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console
from rich.table import Table
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from websift.crawler import settings as S
from websift.crawler.session import CrawlSession

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.spiders import Spider


def progress_line(p: dict[str, float]) -> str:
    return (
        f"pages {int(p['pages'])} (discovery {int(p['discovery'])}, refresh "
        f"{int(p['refresh'])})  {p['rate']:.1f}/s  queue {int(p['queue'])}  "
        f"in flight {int(p['in_flight'])}  errors {int(p['errors'])}  {p['elapsed']:.0f}s"
    )


def summary_table(summary: dict[str, Any]) -> Table:
    table = Table(title=f"websift {summary['kind']}: {summary['finish_reason']}")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("pages", str(summary["pages"]))
    table.add_row("seconds", f"{summary['seconds']:.1f}")
    table.add_row("pages/s", f"{summary['pages_per_second']:.1f}")
    table.add_row("still queued", str(summary["queue_left"]))
    for key, value in summary["counts"].items():
        table.add_row(key, str(value))
    for status, n in summary["store"].items():
        table.add_row(f"store/{status}", str(n))
    return table


def print_summary(summary: dict[str, Any], out: TextIO | None = None) -> None:
    Console(file=out or sys.stdout, width=100).print(summary_table(summary))


class Progress:
    """Prints :func:`progress_line` while the crawl runs (setting ``WEBSIFT_PROGRESS``)."""

    def __init__(self, interval: float, out: TextIO) -> None:
        self.session: CrawlSession | None = None  # the spider's, known once it opens
        self.interval = interval
        self.out = out
        self.tty = out.isatty()
        self._loop: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Progress:
        if not crawler.settings.getbool("WEBSIFT_PROGRESS", True):
            raise NotConfigured
        interval = crawler.settings.getfloat("WEBSIFT_PROGRESS_INTERVAL", S.PROGRESS_INTERVAL)
        ext = cls(interval, sys.stderr)
        crawler.signals.connect(ext.opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.closed, signal=signals.spider_closed)
        return ext

    def opened(self, spider: Spider) -> None:
        self.session = spider.session  # type: ignore[attr-defined]
        self._loop = create_looping_call(self.tick)
        self._loop.start(self.interval, now=False)

    def tick(self) -> None:
        if self.session is None:
            return
        line = progress_line(self.session.progress())
        if self.tty:
            self.out.write("\r\x1b[2K" + line)
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def closed(self, spider: Spider, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self.tty:
            self.out.write("\n")
            self.out.flush()


class LiveFigures:
    """Ticks the session every ``interval`` seconds (module doc)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.session: CrawlSession | None = None
        self._loop: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LiveFigures:
        ext = cls(crawler.settings.getfloat("WEBSIFT_LIVE_EVERY", S.LIVE_EVERY))
        crawler.signals.connect(ext.opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.closed, signal=signals.spider_closed)
        return ext

    def opened(self, spider: Spider) -> None:
        self.session = spider.session  # type: ignore[attr-defined]
        self._loop = create_looping_call(self.tick)
        self._loop.start(self.interval, now=True)

    def tick(self) -> None:
        if self.session is not None:
            self.session.tick()

    def closed(self, spider: Spider, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
