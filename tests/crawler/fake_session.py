"""A crawl session driven without Scrapy, for the session's unit tests: a clock that moves only
when the test says so, a request factory that records what the session asks for, and
:class:`Sessions` (the ``sessions`` fixture, tests/crawler/conftest.py), which starts sessions
on fresh data directories and closes them when the test ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websift.core.datadir import DataDir
from websift.crawler.meta import FetchKind, FetchMeta
from websift.crawler.session import CrawlConfig, CrawlSession

T0 = 1_700_000_000.0  # the fake clock's start (wall-clock seconds)
DELAY = 1.0  # the sessions' delay between request starts per host
ALLOW_ALL = b"User-agent: *\nDisallow:\n"
HTML = [("Content-Type", "text/html; charset=utf-8")]


class FakeClock:
    """Wall-clock seconds that move only when the test says so."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Sent:
    """A request the session asked the spider to make."""

    url: str
    meta: FetchMeta
    headers: dict[str, str] = field(default_factory=dict)
    slot: str | None = None
    at: float = 0.0  # when, on the factory's clock (0 without one)


class FakeFactory:
    """Stands in for the spider's request factory: records every request the session makes
    (with ``clock``, when it made it)."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self.clock = clock
        self.sent: list[Sent] = []

    def _now(self) -> float:
        return 0.0 if self.clock is None else self.clock()

    def page_request(self, url: str, meta: FetchMeta, headers: dict[str, str], slot: str) -> Sent:
        self.sent.append(Sent(url, meta, dict(headers), slot, self._now()))
        return self.sent[-1]

    def robots_request(self, url: str, meta: FetchMeta) -> Sent:
        self.sent.append(Sent(url, meta, at=self._now()))
        return self.sent[-1]

    def urls(self) -> list[str]:
        return [s.url for s in self.sent]

    def page_urls(self) -> list[str]:
        return [s.url for s in self.sent if s.meta.kind is FetchKind.PAGE]


@dataclass
class Run:
    """A session, its clock, its request factory and its data directory; a test file adds the
    spider's side (answers) as it needs them."""

    session: CrawlSession
    clock: FakeClock
    factory: FakeFactory
    data: DataDir

    def next(self) -> Sent | None:
        """The session's next request now, if any."""
        request = self.session.next_request(self.clock())
        assert request is None or isinstance(request, Sent)
        return request


class Sessions:
    """The sessions of one test, each on a data directory of its own under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: list[CrawlSession] = []

    def start(self, config: CrawlConfig, clock: Callable[[], float], factory: FakeFactory,
              **kwargs: Any) -> tuple[CrawlSession, DataDir]:
        """A session on a new data directory (and the directory), its seeds added, requests
        going to ``factory`` (``kwargs``: more of CrawlSession's, such as ``resolve``)."""
        data = DataDir.create(self.root / f"data{len(self.made)}")
        session = CrawlSession(data, config, clock=clock, **kwargs)
        session.factory = factory
        session.add_seeds()
        self.made.append(session)
        return session, data

    def close(self) -> None:
        for session in self.made:
            session.close("test_end")
