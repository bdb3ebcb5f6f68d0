"""core/html.py: one rule for "is this HTML" and one visible text, used by crawler and indexer."""

from __future__ import annotations

import lxml.etree
import pytest

from websift.core.html import INVISIBLE_TAGS, drop_invisible, is_html, media_type, visible_text
from websift.crawler.extract import extract
from websift.crawler.pipeline import Fetched
from websift.indexer.parse import parse_html


@pytest.mark.parametrize(("content_type", "expected"), [
    ("text/html", True),
    ("text/html; charset=utf-8", True),
    ("  Text/HTML ;charset=iso-8859-1", True),
    ("application/xhtml+xml", True),
    # no type: the crawler sniffed at fetch time and stored text/html when the bytes looked
    # like HTML, so a type still missing means "not a page"
    (None, False),
    ("", False),
    (";charset=utf-8", False),
    ("text/plain", False),
    ("application/pdf", False),
    ("text/htmlx", False),
    ("application/xml", False),
])
def test_is_html(content_type: str | None, expected: bool) -> None:
    assert is_html(content_type) is expected


def test_media_type_drops_parameters_and_case() -> None:
    assert media_type("Text/HTML; charset=UTF-8") == "text/html"
    assert media_type("   ") is None and media_type(None) is None


PAGE = (
    b"<html><head><title>T</title><style>.x{color:red}</style></head><body>"
    b"<script>var hidden = 1;</script>before<noscript>enable js</noscript>"
    b"<p>foo</p><p>bar</p><template><p>inert</p></template>"
    b"<svg><text>chart label</text></svg>after <b>bold</b>tail"
    b"</body></html>"
)


def test_invisible_elements_go_their_tails_stay() -> None:
    root = lxml.etree.fromstring(PAGE, parser=lxml.etree.HTMLParser())
    drop_invisible(root)
    assert not any(True for _ in root.iter(*INVISIBLE_TAGS))
    assert visible_text(root) == "before foo bar after bold tail"


def test_the_crawler_fingerprints_the_text_the_indexer_indexes() -> None:
    crawled = extract(PAGE, "http://h.example/", "utf-8", [])
    indexed = parse_html(PAGE, "http://h.example/", "text/html; charset=utf-8")
    assert crawled.text == indexed.body == "before foo bar after bold tail"
    assert crawled.title == indexed.title == "T"


def test_the_crawler_stores_a_sniffed_page_as_html_and_an_unsniffed_one_without_a_type() -> None:
    def fetched(headers: list[tuple[str, str]], looks_html: bool) -> Fetched:
        return Fetched(uid=1, url="http://h.example/", status=200, headers=headers,
                       body=b"<p>hi</p>", looks_html=looks_html)

    assert fetched([], looks_html=True).content_type == "text/html"  # Scrapy sniffed HTML
    assert fetched([], looks_html=False).content_type is None  # ... or did not: not HTML
    assert not is_html(fetched([], looks_html=False).content_type)
    assert fetched([("content-type", "Text/HTML; charset=x")], False).content_type == "text/html"
