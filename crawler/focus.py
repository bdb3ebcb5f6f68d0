"""Focused crawling (OPIC paper, section 3.3): which URLs are the focus of a crawl.

Question: does this URL belong to the subset of the web the crawl should favour?  The paper:
"We can also use a similar method to focus the crawl on a subset of interesting pages ... pages
that are suspected to contain news wires (e.g. because the URL contains "news") receive some
'extra' cash.  This cash is taken from the (unique) virtual page".  The frontier gives the focus
pages ``focus_share`` of every payout of the virtual page (``ranking.opic.Dividend.FOCUS``).

A canonical URL is a focus page when any ``--focus`` regex is found in it (``re.search``), or
when it belongs to the ``--focus-topic`` topic set as ``websift topics add`` defined it: one of
its URLs, on one of its hosts, or found by one of its patterns -- the rule by which
``ranking.store_graph.topic_page_ids`` resolves a topic's pages T_k, so the crawl favours the
pages topic PageRank teleports to.  A topic's term model (words of its pages' text) is not used:
a URL not fetched yet has no text, and words of a URL are a weak signal the patterns already
express.  Membership is decided once, when the URL enters OPIC, and kept in the store.
"""

from __future__ import annotations

import re
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from websift.core.errors import WebsiftError
from websift.crawler.urls import UrlError, canonicalize
from websift.ranking.errors import RankingError
from websift.ranking.topic_store import load_topic


class FocusError(WebsiftError):
    """A focus that cannot be used: a bad regex, an unknown or unreadable topic."""


@dataclass(frozen=True)
class Focus:
    """URL regexes, exact URLs and hosts (``host[:port]``, lower case) of a crawl's focus."""

    patterns: tuple[re.Pattern[str], ...] = ()
    urls: frozenset[str] = frozenset()
    hosts: frozenset[str] = frozenset()

    def __call__(self, url: str) -> bool:
        if url in self.urls or any(p.search(url) for p in self.patterns):
            return True
        return bool(self.hosts) and urlsplit(url).netloc.lower() in self.hosts


def _hostname(host: str) -> str:
    """``example.com``, ``https://example.com:8080/`` -> ``host[:port]``, lower case (as
    ranking.store_graph reads a topic's hosts)."""
    text = host.strip().lower()
    if "://" in text:
        text = urlsplit(text).netloc
    return text.rstrip("/")


def _compile(pattern: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise FocusError(f"bad focus pattern {pattern!r}{where}: {exc}") from None


def build_focus(patterns: list[str], topic: str | None, topics_dir: Path) -> Focus | None:
    """The focus of ``--focus`` regexes and a ``--focus-topic`` name (None: no focus)."""
    if not patterns and topic is None:
        return None
    compiled = [_compile(p, "") for p in patterns]
    urls: set[str] = set()
    hosts: set[str] = set()
    if topic is not None:
        try:
            definition = load_topic(topics_dir, topic).topic
        except RankingError as exc:
            raise FocusError(f"focus topic {topic!r}: {exc}") from None
        compiled += [_compile(p, f" in topic {topic!r}") for p in definition.patterns]
        hosts.update(_hostname(h) for h in definition.hosts)
        for url in definition.urls:
            urls.add(url)  # as given, and canonical: the form the crawler meets URLs in (a
            with suppress(UrlError):  # URL that has none matches only when spelled so)
                urls.add(canonicalize(url))
    return Focus(tuple(compiled), frozenset(urls), frozenset(hosts))
