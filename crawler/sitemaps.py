"""Sitemaps (sitemaps.org protocol 0.9): which URLs a site lists, and when it says each changed.

Question: given the bytes of a sitemap answer, which page URLs (with their ``lastmod``) or child
sitemaps does it name, and is it one websift may use?

Three forms are read: an XML ``<urlset>``, an XML ``<sitemapindex>`` (child sitemaps), and a text
sitemap (one URL a line).  A gzip body (``.gz`` file or ``Content-Type: application/gzip``) is
inflated first.  The protocol's limits hold: at most ``SITEMAP_MAX_URLS`` entries and
``SITEMAP_MAX_BYTES`` bytes uncompressed per file; a file over either is refused whole.  XML is
read with lxml's ``iterparse`` (each entry is dropped once read, so memory stays bounded), with
entity expansion, DTD loading and network access off.

Scope (the protocol's "Sitemap file location"): a sitemap lists URLs on its own scheme, host and
port, under the directory of its own location, unless the host's robots.txt names it (then the
whole host is allowed).  A URL outside is dropped and counted, not followed.

Every refusal is a :class:`SitemapError` with a short reason key (counted by the crawl as
``sitemaps/bad/<reason>``); nothing here raises anything else for bad input.
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

import lxml.etree

from websift.core.errors import WebsiftError
from websift.crawler import settings as S

URLSET, INDEX, TEXT = "urlset", "index", "text"
GZIP_MAGIC = b"\x1f\x8b"


class SitemapError(WebsiftError):
    """A sitemap websift refuses; ``reason`` is its counter key."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"sitemap refused ({reason}){': ' + detail if detail else ''}")
        self.reason = reason


@dataclass(frozen=True)
class Entry:
    loc: str
    lastmod: float | None = None  # unix seconds, None when absent or unreadable


@dataclass
class Sitemap:
    kind: str  # URLSET, INDEX or TEXT
    entries: list[Entry] = field(default_factory=list)
    bad_lastmod: int = 0  # entries whose lastmod was not a W3C datetime


def inflate(body: bytes, limit: int = S.SITEMAP_MAX_BYTES) -> bytes:
    """A gzip body inflated, refused past ``limit`` bytes (``too_large``) or when corrupt."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(body)) as gz:
            out = gz.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise SitemapError("bad_gzip", str(exc)) from exc
    if len(out) > limit:
        raise SitemapError("too_large", f"over {limit} bytes uncompressed")
    return out


def parse_lastmod(text: str) -> float | None:
    """A W3C datetime (``2024-05-01``, ``2024-05-01T10:00:00+00:00``, ``...Z``) in unix
    seconds; None when it is not one.  A date without a zone is taken as UTC."""
    value = text.strip()
    if not value:
        return None
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def parse(
    body: bytes, *, gzipped: bool = False, max_urls: int = S.SITEMAP_MAX_URLS,
    max_bytes: int = S.SITEMAP_MAX_BYTES,
) -> Sitemap:
    """The entries of one sitemap file, or a :class:`SitemapError` naming why not."""
    if gzipped or body[:2] == GZIP_MAGIC:
        body = inflate(body, max_bytes)
    elif len(body) > max_bytes:
        raise SitemapError("too_large", f"over {max_bytes} bytes")
    head = body.lstrip()[:1]
    if not head:
        raise SitemapError("empty")
    if head == b"<":
        return _parse_xml(body, max_urls)
    return _parse_text(body, max_urls)


def _local(tag: object) -> str:
    """An element's tag without its namespace (a comment's or PI's: empty)."""
    name = tag if isinstance(tag, str) else ""
    return name.rpartition("}")[2]


def xml_events(body: bytes) -> Iterator[tuple[str, Any]]:
    """Start and end events over a document from a site (a sitemap or a feed), read with no
    entity expansion, DTD or network, in bounded memory."""
    return lxml.etree.iterparse(
        io.BytesIO(body), events=("start", "end"), resolve_entities=False, no_network=True,
        load_dtd=False, huge_tree=False, remove_comments=True, remove_pis=True,
    )


class XmlReader(Protocol):
    """What :func:`read_xml` hands each element to, by its tag without the namespace."""

    def start(self, name: str) -> None: ...

    def end(self, name: str, el: lxml.etree._Element) -> None: ...


def read_xml(body: bytes, reader: XmlReader, done: Callable[[], bool] = lambda: False) -> None:
    """Every start and end event of ``body`` (:func:`xml_events`) to ``reader``, until
    ``done()`` holds after one; lxml's ``XMLSyntaxError`` is the caller's to turn into its
    refusal."""
    for event, el in xml_events(body):
        if event == "start":
            reader.start(_local(el.tag))
        else:
            reader.end(_local(el.tag), el)
        if done():
            break


class _Reader:
    """The state of one XML sitemap read (the entry being read, the entries so far)."""

    def __init__(self, max_urls: int) -> None:
        self.max_urls = max_urls
        self.out: Sitemap | None = None
        self.loc: str | None = None
        self.lastmod: float | None = None

    def start(self, name: str) -> None:
        if self.out is None:
            if name not in ("urlset", "sitemapindex"):
                raise SitemapError("not_a_sitemap", f"root element <{name}>")
            self.out = Sitemap(URLSET if name == "urlset" else INDEX)
        elif name in ("url", "sitemap"):
            self.loc, self.lastmod = None, None

    def end(self, name: str, el: lxml.etree._Element) -> None:
        out = self.out
        if out is None:
            return
        if name == "loc":
            self.loc = (el.text or "").strip() or None
        elif name == "lastmod":
            self.lastmod = parse_lastmod(el.text or "")
            if self.lastmod is None:
                out.bad_lastmod += 1
        elif name in ("url", "sitemap"):
            if self.loc is not None:
                if len(out.entries) >= self.max_urls:
                    raise SitemapError("too_many_urls", f"over {self.max_urls} entries")
                out.entries.append(Entry(self.loc, self.lastmod))
            el.clear(keep_tail=False)  # bounded memory: an entry is dropped once read
            parent = el.getparent()
            if parent is not None:
                while el.getprevious() is not None:
                    del parent[0]


def _parse_xml(body: bytes, max_urls: int) -> Sitemap:
    reader = _Reader(max_urls)
    try:
        read_xml(body, reader)
    except lxml.etree.XMLSyntaxError as exc:
        raise SitemapError("bad_xml", str(exc).splitlines()[0] if str(exc) else "") from exc
    if reader.out is None:
        raise SitemapError("not_a_sitemap")
    return reader.out


def _parse_text(body: bytes, max_urls: int) -> Sitemap:
    out = Sitemap(TEXT)
    text = body.decode("utf-8", errors="replace")
    for line in text.splitlines():
        url = line.strip()
        if not url:
            continue
        if not url.lower().startswith(("http://", "https://")):
            raise SitemapError("not_a_sitemap", "a text sitemap holds only URLs")
        if len(out.entries) >= max_urls:
            raise SitemapError("too_many_urls", f"over {max_urls} entries")
        out.entries.append(Entry(url))
    return out


def in_scope(sitemap_url: str, url: str, *, from_robots: bool) -> bool:
    """May ``sitemap_url`` list ``url``?  Same scheme, host and port always; under the
    sitemap's own directory unless robots.txt named the sitemap."""
    try:
        s, u = urlsplit(sitemap_url), urlsplit(url)
        same = (s.scheme.lower(), s.hostname, s.port) == (u.scheme.lower(), u.hostname, u.port)
    except ValueError:
        return False
    if not same:
        return False
    if from_robots:
        return True
    directory = s.path.rpartition("/")[0] + "/"
    return (u.path or "/").startswith(directory)


def is_gzip_answer(url: str, content_type: str | None) -> bool:
    """Does the answer hold a gzip file (not a Content-Encoding, which Scrapy undoes)?"""
    ctype = (content_type or "").lower()
    return urlsplit(url).path.endswith(".gz") or "gzip" in ctype
