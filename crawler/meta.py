"""What websift carries on a Scrapy request: one typed object under one meta key.

Question: a response (or a failure, or a request leaving the downloader) comes back from Scrapy;
which URL and host was it for, and has its host's in-flight place been given back yet?

The session (``crawler/session.py``) makes a :class:`FetchMeta` for every request it hands
Scrapy; the spider (``crawler/spider.py``) stores it in ``request.meta[META_KEY]`` next to
Scrapy's own keys (``download_slot``, ``dont_redirect``, ``handle_httpstatus_all``, ...), and
every reader gets it back with :func:`fetch_meta`.  A request without one is one websift did not
make (never expected, but counted rather than trusted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

META_KEY = "websift"  # request.meta key holding the FetchMeta


class FetchKind(Enum):
    PAGE = "page"  # a URL of the frontier
    ROBOTS = "robots"  # an origin's /robots.txt, fetched before any of its pages
    SIGNAL = "signal"  # a sitemap or feed (crawler/signals.py), named by ``source``


@dataclass(slots=True)
class FetchMeta:
    """One request's identity in the crawl, and whether its politeness slot was freed.

    Mutable only in ``released``: the first of "left the downloader" (Scrapy's signal) and "the
    callback ran" frees the host's in-flight place; the other must not free it twice.
    """

    kind: FetchKind
    host_id: int
    url_id: int | None = None  # pages only
    depth: int = 0  # link hops from a seed (pages only)
    hops: int = 0  # redirect hops from the URL a link named (pages only)
    released: bool = False
    source: str = ""  # the sitemap or feed URL (signals only)

    def __post_init__(self) -> None:
        if (self.kind is FetchKind.PAGE) != (self.url_id is not None):
            raise ValueError(f"a {self.kind.value} request has url_id={self.url_id!r}")

    @classmethod
    def page(cls, url_id: int, host_id: int, depth: int, hops: int = 0) -> FetchMeta:
        return cls(FetchKind.PAGE, host_id, url_id, depth, hops)

    @classmethod
    def robots(cls, host_id: int) -> FetchMeta:
        return cls(FetchKind.ROBOTS, host_id)

    @classmethod
    def signal(cls, host_id: int, source: str) -> FetchMeta:
        return cls(FetchKind.SIGNAL, host_id, source=source)

    @property
    def is_signal(self) -> bool:
        return self.kind is FetchKind.SIGNAL

    @property
    def is_robots(self) -> bool:
        return self.kind is FetchKind.ROBOTS

    @property
    def page_id(self) -> int:
        """The URL ID of a page request."""
        if self.url_id is None:
            raise ValueError(f"a {self.kind.value} request has no URL id")
        return self.url_id


def fetch_meta(meta: Mapping[str, Any]) -> FetchMeta | None:
    """The FetchMeta of a Scrapy request's meta, or None when websift did not make it."""
    value = meta.get(META_KEY)
    return value if isinstance(value, FetchMeta) else None
