"""Parse a stored HTML page once, with lxml, into the fields the index needs.

Fields (Brin & Page 1998, section 4.2.5, "parsing" and "indexing documents into barrels"):
title, headings (h1-h6), body (the main content when the page marks it with <main>,
role="main" or <article>, else the whole <body>), URL words (the path's words), and the
whitespace-normalised text kept for query-biased snippets.  Anchor text is not here: it belongs
to the page a link points to and comes from the crawl store's link table (indexer/anchors.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import lxml.etree

from core.html import drop_invisible, squash, text_of, visible_text
from indexer.settings import (
    MAX_HTML_BYTES,
    MAX_TITLE_CHARS,
    MAX_URL_QUERY_CHARS,
    SNIPPET_TEXT_CHARS,
)

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_URL_EXT = re.compile(r"\.(?:s?html?|php|aspx?|jsp)$", re.IGNORECASE)
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)


@dataclass
class ParsedPage:
    title: str
    headings: str
    body: str
    url_words: str
    text: str  # for snippets: main text, whitespace-normalised, capped
    lang: str | None = None


def url_words(url: str) -> str:
    """The words of a URL's path (no host, no extension): ``/library/os.path.html`` ->
    ``library os.path``."""
    parts = urlsplit(url)
    path = unquote(parts.path)
    path = _URL_EXT.sub("", path)
    words = [seg for seg in re.split(r"[/\-+~]+", path) if seg and seg != "index"]
    if parts.query and len(parts.query) <= MAX_URL_QUERY_CHARS:  # not a whole program or blob
        words.append(unquote(parts.query).replace("=", " ").replace("&", " "))
    return " ".join(words)


def _parser_for(content_type: str | None) -> lxml.etree.HTMLParser:
    # lxml.etree's parser, not lxml.html's: no per-element class lookup (a third of the time).
    charset = None
    if content_type:
        m = _CHARSET.search(content_type)
        if m:
            charset = m.group(1)
    try:
        return lxml.etree.HTMLParser(encoding=charset, remove_comments=True, remove_pis=True)
    except LookupError:  # an unknown charset name: let lxml guess
        return lxml.etree.HTMLParser(remove_comments=True, remove_pis=True)


def parse_html(body: bytes, url: str, content_type: str | None = None) -> ParsedPage:
    """Fields of one HTML page. Never raises on bad HTML: an unparsable page has empty fields."""
    words = url_words(url)
    empty = ParsedPage(title="", headings="", body="", url_words=words, text="")
    if not body or not body.strip():
        return empty
    body = body[:MAX_HTML_BYTES]
    try:
        root = lxml.etree.fromstring(body, parser=_parser_for(content_type))
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError, LookupError,
            UnicodeError):
        return empty
    if root is None:
        return empty
    title_el = root.find(".//title")
    title = squash(text_of(title_el)) if title_el is not None else ""
    lang = root.get("lang") or None
    drop_invisible(root)  # the same elements the crawler leaves out (core/html.py)
    main = None
    for path in (".//main", ".//*[@role='main']", ".//article", ".//body"):
        main = root.find(path)
        if main is not None:
            break
    scope = main if main is not None else root
    headings = squash(" ".join(text_of(h) for h in scope.iter(*_HEADINGS)))
    if not title:
        first = next(iter(scope.iter("h1")), None)
        title = squash(text_of(first)) if first is not None else ""
    body_text = visible_text(scope)
    return ParsedPage(
        title=title[:MAX_TITLE_CHARS],
        headings=headings,
        body=body_text,
        url_words=words,
        text=body_text[:SNIPPET_TEXT_CHARS],
        lang=lang,
    )
