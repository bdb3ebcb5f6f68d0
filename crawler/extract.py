"""What a fetched HTML page says about itself: links, robots directives, text.

Question: given the bytes of an HTML response, which links does it hold (with anchor text and
nofollow), does it ask not to be indexed or followed (``<meta name="robots">``, the
``X-Robots-Tag`` header), and what is its visible text (for near-duplicate detection)?

Parsing is lxml's HTML parser, which recovers from broken markup; the encoding is the one Scrapy
detected (header, BOM, ``<meta charset>``, then a guess).  A page lxml cannot parse at all gives
no links and no text, and the reason is returned so the crawl counts it; it never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import lxml.etree
import lxml.html

from websift.core.html import drop_invisible, visible_text
from websift.crawler import settings as S
from websift.crawler.feeds import FEED_TYPES

_XML_DECL_RE = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)


@dataclass(frozen=True)
class RawLink:
    href: str  # as written in the page (resolved later against ``Extracted.base``)
    anchor: str
    nofollow: bool


@dataclass
class Extracted:
    base: str
    links: list[RawLink] = field(default_factory=list)
    noindex: bool = False
    nofollow: bool = False
    text: str = ""
    title: str = ""
    parse_error: str | None = None
    # <link rel="alternate" type="application/rss+xml|atom+xml" href> (crawler/feeds.py)
    feeds: list[str] = field(default_factory=list)
    canonical: str | None = None  # <link rel="canonical" href> (crawler/canonical.py)
    hreflang: dict[str, str] = field(default_factory=dict)  # <link rel="alternate" hreflang>


def collapse(text: str, limit: int) -> str:
    """Whitespace runs to one space, ends trimmed, cut to ``limit`` characters."""
    return " ".join(text.split())[:limit]


def robots_directives(values: list[str], agent: str) -> set[str]:
    """Directives from meta robots contents or X-Robots-Tag values that apply to ``agent``.

    ``X-Robots-Tag: otherbot: noindex`` applies only to otherbot; ``websift: nofollow`` and plain
    ``noindex, nofollow`` apply to websift.  ``none`` means both.
    """
    found: set[str] = set()
    for value in values:
        scope_agent: str | None = None
        for raw in value.split(","):
            token = raw.strip().lower()
            if ":" in token:
                head, _, rest = token.partition(":")
                head = head.strip()
                if head and " " not in head and head not in ("unavailable_after", "max-snippet",
                                                              "max-image-preview", "max-video-preview"):
                    scope_agent = head
                    token = rest.strip()
            if scope_agent is not None and scope_agent not in (agent.lower(), "*"):
                continue
            if token == "none":
                found.update(("noindex", "nofollow"))
            elif token in ("noindex", "nofollow"):
                found.add(token)
    return found


def _parse(body: bytes, encoding: str | None) -> lxml.html.HtmlElement:
    try:
        parser = lxml.html.HTMLParser(encoding=encoding) if encoding else None
        return lxml.html.document_fromstring(body, parser=parser)
    except (LookupError, ValueError, lxml.etree.ParserError):
        # unknown codec name or a body libxml2 refuses as bytes: decode leniently, parse text
        text = body.decode(encoding or "utf-8", errors="replace") if _codec_ok(encoding) else (
            body.decode("utf-8", errors="replace")
        )
        return lxml.html.document_fromstring(_XML_DECL_RE.sub("", text))


def _codec_ok(encoding: str | None) -> bool:
    if not encoding:
        return False
    try:
        "".encode(encoding)
    except LookupError:
        return False
    return True


def feed_links(doc: lxml.html.HtmlElement) -> list[str]:
    """The hrefs of a page's feed links (``<link rel="alternate">`` of an RSS or Atom type),
    in order, without repeats."""
    found: list[str] = []
    for el in doc.iter("link"):
        rels = (el.get("rel") or "").lower().split()
        ctype = (el.get("type") or "").strip().lower()
        href = (el.get("href") or "").strip()
        if "alternate" in rels and ctype in FEED_TYPES and href and href not in found:
            found.append(href)
    return found


def hreflang_links(doc: lxml.html.HtmlElement, limit: int = S.HREFLANG_MAX) -> dict[str, str]:
    """The page's language alternates, ``<link rel="alternate" hreflang="x" href>``: lang
    (lower-cased) -> href, the first per language, at most ``limit``."""
    found: dict[str, str] = {}
    for el in doc.iter("link"):
        lang = (el.get("hreflang") or "").strip().lower()
        href = (el.get("href") or "").strip()
        if lang and href and "alternate" in (el.get("rel") or "").lower().split():
            found.setdefault(lang, href)
            if len(found) >= limit:
                break
    return found


def canonical_link(doc: lxml.html.HtmlElement) -> str | None:
    """The href of the page's first ``<link rel="canonical">``, or None."""
    for el in doc.iter("link"):
        href = (el.get("href") or "").strip()
        if href and "canonical" in (el.get("rel") or "").lower().split():
            return href
    return None


def extract(
    body: bytes,
    url: str,
    encoding: str | None,
    x_robots_tag: list[str],
    *,
    agent: str = S.ROBOTS_AGENT,
    anchor_limit: int = S.ANCHOR_MAX_CHARS,
) -> Extracted:
    """Links, robots directives and text of one HTML page."""
    out = Extracted(base=url)
    header_directives = robots_directives(x_robots_tag, agent)
    out.noindex = "noindex" in header_directives
    out.nofollow = "nofollow" in header_directives
    if not body.strip():
        out.parse_error = "empty_document"
        return out
    try:
        doc = _parse(body, encoding)
    except (ValueError, lxml.etree.ParserError):
        out.parse_error = "unparseable_html"
        return out
    bases = doc.xpath("//base[@href]/@href")
    if bases:
        out.base = str(bases[0]).strip() or url
    metas = [
        str(m.get("content") or "")
        for m in doc.xpath("//meta[@name]")
        if str(m.get("name")).strip().lower() in ("robots", agent.lower())
    ]
    meta_directives = robots_directives(metas, "*")
    out.noindex = out.noindex or "noindex" in meta_directives
    out.nofollow = out.nofollow or "nofollow" in meta_directives
    page_nofollow = out.nofollow
    for el in doc.iter("a", "area"):
        href = el.get("href")
        if href is None:
            continue
        rel = el.get("rel")
        nofollow = page_nofollow or (
            rel is not None and not S.NOFOLLOW_RELS.isdisjoint(rel.lower().split())
        )
        if el.tag == "area":
            anchor = el.get("alt") or ""
        else:
            anchor = el.text_content()
            if not anchor or anchor.isspace():
                anchor = " ".join(str(a) for a in el.xpath(".//img/@alt"))
        out.links.append(RawLink(href, collapse(anchor, anchor_limit), nofollow))
    out.feeds = feed_links(doc)
    out.canonical = canonical_link(doc)
    out.hreflang = hreflang_links(doc)
    titles = doc.xpath("//title")
    if titles:
        out.title = collapse(titles[0].text_content(), 1000)
    # The page's visible text (core/html.py), for the near-duplicate fingerprint.
    drop_invisible(doc)
    body_el = doc.find("body")
    out.text = visible_text(body_el if body_el is not None else doc)[:1_000_000]
    return out
