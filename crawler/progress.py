"""Scrapy extensions: the live progress line, the live figures in the store, the summary table.

Progress (every ``PROGRESS_INTERVAL`` seconds, on stderr): pages done (of ``--max-pages`` when
bounded; first fetches of pages never read, "discovery", apart from refetches of read ones,
"refresh"), pages per second, about how long is left when the run is bounded (by ``--max-pages``
at the current rate, or ``--duration``), URLs waiting, requests in flight, errors.  On a terminal the line is redrawn in place; otherwise one
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


def progress_line(
    p: dict[str, float], max_pages: int | None = None, time_left: float | None = None
) -> str:
    """One progress line; a bounded run (``--max-pages``, ``--duration``) says how far it is
    and about how long is left."""
    pages = int(p["pages"])
    done = f"pages {pages}" if max_pages is None else f"pages {pages} of {max_pages}"
    left = eta(pages, p["rate"], max_pages, time_left)
    return (
        f"{done} (discovery {int(p['discovery'])}, refresh {int(p['refresh'])})  "
        f"{p['rate']:.1f}/s{'' if left is None else f'  about {clock(left)} left'}  "
        f"queue {int(p['queue'])}  in flight {int(p['in_flight'])}  "
        f"errors {int(p['errors'])}  {p['elapsed']:.0f}s"
    )


def eta(pages: int, rate: float, max_pages: int | None, time_left: float | None) -> float | None:
    """Seconds until the run's bound is reached at the current rate (the nearer of the page
    budget and the time limit), or None when unbounded or no page has been done yet."""
    bounds = [] if time_left is None else [max(0.0, time_left)]
    if max_pages is not None and rate > 0:
        bounds.append(max(0, max_pages - pages) / rate)
    return min(bounds) if bounds else None


def clock(seconds: float) -> str:
    """A span of time for a person: ``45s``, ``2m05s``, ``1h07m``."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


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
    lastmod = summary.get("live", {}).get("signals", {}).get("lastmod_hosts", {})
    for origin, t in lastmod.items():  # crawl --signals: how far each host's lastmod is right
        table.add_row(f"lastmod {origin}: changed / refetches (trust)",
                      f"{t['changed']} / {t['refetches']} ({t['trust']:.2f})")
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
        session = self.session
        time_left = None if session.deadline is None else session.deadline - session.clock()
        line = progress_line(session.progress(), session.config.max_pages, time_left)
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
