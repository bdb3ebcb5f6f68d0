"""Feeds (RSS 2.0 and Atom 1.0): the article URLs a site announces, newest first.

Question: given the bytes of a feed answer, which item URLs does it hold?

RSS 2.0: ``<item><link>``, else a ``<guid>`` that is a permalink (``isPermaLink`` absent or
true).  Atom (RFC 4287): ``<entry><link href>`` with ``rel="alternate"`` or no ``rel``.  Read with
lxml's ``iterparse`` like sitemaps (crawler/sitemaps.py): no entity expansion, no DTD, no network,
each item dropped once read; at most ``FEED_MAX_ITEMS`` items and ``FEED_MAX_BYTES`` bytes.
A refusal is a :class:`FeedError` with a reason key (counted as ``feeds/bad/<reason>``).
"""

from __future__ import annotations

import lxml.etree

from websift.core.errors import WebsiftError
from websift.crawler import settings as S
from websift.crawler.sitemaps import read_xml

FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml"})


class FeedError(WebsiftError):
    """A feed websift refuses; ``reason`` is its counter key."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"feed refused ({reason}){': ' + detail if detail else ''}")
        self.reason = reason


class _Reader:
    """The state of one feed read (the item being read, the item URLs so far)."""

    def __init__(self) -> None:
        self.root: str | None = None
        self.link: str | None = None
        self.guid: str | None = None
        self.items: list[str] = []

    def start(self, name: str) -> None:
        if self.root is None:
            if name not in ("rss", "feed", "RDF"):
                raise FeedError("not_a_feed", f"root element <{name}>")
            self.root = name
        elif name in ("item", "entry"):
            self.link, self.guid = None, None

    def end(self, name: str, el: lxml.etree._Element) -> None:
        if name == "link" and self.link is None:
            if self.root == "feed":  # Atom: <link href rel="alternate">
                rel = (el.get("rel") or "alternate").strip().lower()
                href = (el.get("href") or "").strip()
                if rel == "alternate" and href:
                    self.link = href
            elif el.text and el.text.strip():
                self.link = el.text.strip()
        elif name == "guid" and (el.get("isPermaLink") or "true").lower() == "true":
            self.guid = (el.text or "").strip() or None
        elif name in ("item", "entry"):
            url = self.link or self.guid
            if url:
                self.items.append(url)
            el.clear(keep_tail=False)
            self.link, self.guid = None, None


def parse_feed(
    body: bytes, *, max_items: int = S.FEED_MAX_ITEMS, max_bytes: int = S.FEED_MAX_BYTES
) -> list[str]:
    """Item URLs of an RSS 2.0 or Atom feed, in document order (as written, unresolved)."""
    if len(body) > max_bytes:
        raise FeedError("too_large", f"over {max_bytes} bytes")
    if not body.strip():
        raise FeedError("empty")
    reader = _Reader()
    try:
        read_xml(body, reader, done=lambda: len(reader.items) >= max_items)
    except lxml.etree.XMLSyntaxError as exc:
        raise FeedError("bad_xml", str(exc).splitlines()[0] if str(exc) else "") from exc
    if reader.root is None:
        raise FeedError("not_a_feed")
    return reader.items
