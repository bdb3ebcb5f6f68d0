"""Fuzzing the two parsers that read untrusted input: pages (HTML) and queries.

``indexer.parse.parse_html`` reads whatever a web server sent: it must never raise, and what it
returns must be well-formed (squashed, capped, encodable as UTF-8 so the index can store it,
no script or style text).  ``indexer.query.parse_query`` reads whatever a user typed: the only
exception that may escape is ``QueryError`` (the API turns it into a 400), and a parsed query
must be internally consistent.  Bounded by ``max_examples`` and a deadline (~20 s in all).
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from websift.indexer.errors import QueryError
from websift.indexer.parse import ParsedPage, parse_html, squash
from websift.indexer.query import ParsedQuery, parse_query
from websift.indexer.settings import (
    MAX_FRAGMENT_TEXT_CHARS,
    MAX_FRAGMENTS,
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    MAX_TITLE_CHARS,
    SNIPPET_TEXT_CHARS,
)

pytestmark = pytest.mark.slow  # hypothesis over the parsers

FUZZ = settings(max_examples=300, deadline=timedelta(seconds=2),
                suppress_health_check=[HealthCheck.too_slow])
SECRET = "zqxscriptsecretzqx"  # text only a <script> or <style> holds

# ---------------------------------------------------------------------- HTML-ish generators
TAGS = ["html", "head", "body", "title", "main", "article", "div", "p", "span", "a", "b", "h1",
        "h2", "h6", "table", "tr", "td", "ul", "li", "svg", "noscript", "template", "br", "img",
        "meta", "base", "form", "select", "option", "textarea", "pre", "xmp", "plaintext"]
ATTRS = ["href", "lang", "role", "charset", "content", "http-equiv", "name", "id", "class"]

attr_value = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["main", "utf-8", "shift_jis", "x-bogus", "text/html; charset=latin-1",
                     "javascript:alert(1)", '"><script>', "'", "&amp;", "&#0;", "&#xD800;"]),
)


@st.composite
def tag(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(TAGS) | st.text(min_size=1, max_size=8))
    attrs = draw(st.lists(st.tuples(st.sampled_from(ATTRS), attr_value), max_size=3))
    quote = draw(st.sampled_from(['"', "'", ""]))
    inner = "".join(f" {k}={quote}{v}{quote}" for k, v in attrs)
    close = draw(st.sampled_from([">", "/>", "", " >"]))
    return f"<{name}{inner}{close}"


fragment = st.one_of(
    tag(),
    st.sampled_from(TAGS).map(lambda t: f"</{t}>"),
    st.text(max_size=30),
    st.sampled_from(["<!--", "-->", "<![CDATA[", "]]>", "<!DOCTYPE html>", "<?xml version='1.0'?>",
                     "&nbsp;", "&lt;", "&#128512;", "&#1114112;", "\x00", "\ufeff", "\r\n",
                     "<script>", "</script>", "<style>", "</style>", "\u2028", "\ud7ff"]),
)
htmlish = st.lists(fragment, max_size=40).map("".join)

content_types = st.one_of(
    st.none(),
    st.sampled_from(["text/html", "text/html; charset=utf-8", "text/html; charset=iso-8859-1",
                     "text/html; charset=utf-16", "text/html; charset=x-no-such",
                     "text/html; charset=", "text/html; charset=\"utf-8", "application/xhtml+xml"]),
    st.text(max_size=40),
)
urls = st.builds(lambda path, query: f"http://example.org/{path}" + (f"?{query}" if query else ""),
                 st.text(max_size=30), st.text(max_size=20))


def _subsequence(small: str, big: str) -> bool:
    rest = iter(big)
    return all(c in rest for c in small)


def check_page(page: ParsedPage) -> None:
    assert isinstance(page, ParsedPage)
    for name in ("title", "headings", "body", "url_words", "text"):
        value = getattr(page, name)
        assert isinstance(value, str), name
        value.encode("utf-8")  # no lone surrogates: the index stores UTF-8
    for name in ("title", "headings", "body"):
        value = getattr(page, name)
        assert squash(value) == value, f"{name} is not whitespace-normalised: {value!r}"
    assert len(page.title) <= MAX_TITLE_CHARS
    assert len(page.text) <= SNIPPET_TEXT_CHARS
    # The snippet text is the body's start as shown: inline text joined, permalink marks left
    # out (indexer/display_text.py), so its characters are a subsequence of the body's.
    assert _subsequence("".join(page.text.split()), "".join(page.body.split()))
    assert page.lang is None or isinstance(page.lang, str)
    assert " ".join(b.text for b in page.blocks) == page.body  # blocks cover the body exactly
    assert len(page.fragments) <= MAX_FRAGMENTS
    for frag in page.fragments:
        assert frag.id and frag.key and len(frag.text) <= MAX_FRAGMENT_TEXT_CHARS
        frag.text.encode("utf-8")


@FUZZ
@given(body=st.binary(max_size=4000), url=urls, ctype=content_types)
def test_arbitrary_bytes(body: bytes, url: str, ctype: str | None) -> None:
    check_page(parse_html(body, url, ctype, structure=True))


@FUZZ
@given(text=st.text(max_size=2000), url=urls, ctype=content_types)
def test_arbitrary_text(text: str, url: str, ctype: str | None) -> None:
    for encoding in ("utf-8", "utf-16", "latin-1"):
        try:
            body = text.encode(encoding)
        except UnicodeEncodeError:
            continue
        check_page(parse_html(body, url, ctype, structure=True))


@FUZZ
@given(doc=htmlish, url=urls, ctype=content_types)
def test_generated_html(doc: str, url: str, ctype: str | None) -> None:
    check_page(parse_html(doc.encode("utf-8", "surrogatepass"), url, ctype, structure=True))


@FUZZ
@given(before=htmlish, after=st.text(
    alphabet=st.characters(blacklist_characters="<&", codec="utf-8"), max_size=30))
def test_script_and_style_text_never_reaches_the_fields(before: str, after: str) -> None:
    # a closed <body> ... </body> with script and style inside; whatever came before (which may
    # open a title, a comment or a textarea) is closed off by the parser at the <body> tag or not;
    # either way script text may only ever appear where the page *shows* it as text.
    doc = (f"<html><head><title>t</title><script>var {SECRET} = 1;</script></head><body>"
           f"<p>{after}</p><style>.{SECRET} {{}}</style><script>{SECRET}()</script></body></html>")
    page = parse_html(doc.encode(), "http://example.org/", "text/html; charset=utf-8",
                      structure=True)
    check_page(page)
    assert SECRET not in page.body and SECRET not in page.title and SECRET not in page.headings
    check_page(parse_html((before + doc).encode("utf-8", "surrogatepass"), "http://example.org/",
                          structure=True))


def test_a_large_deep_document_is_bounded() -> None:
    doc = "<div>" * 100_000 + "deep words" + "</div>" * 100_000
    check_page(parse_html(doc.encode(), "http://example.org/deep", "text/html", structure=True))


# ---------------------------------------------------------------------- queries
query_token = st.one_of(
    st.text(max_size=12),
    st.sampled_from(['"', "-", "OR", "or", "site:", "-site:", "site:docs.python.org", "--x",
                     '"context manager"', "-\"event loop\"", "()", "*", "\u00e9t\u00e9", "\u65e5\u672c",
                     "a.b.c", "os.path", "__init__", "x" * 80, "\x00", "\ufeff", "site:[::1]"]),
)
queryish = st.lists(query_token, max_size=40).map(" ".join)
_HOST = re.compile(r"^[a-z0-9.\-\[\]:]+$")


def check_query(q: str, parsed: ParsedQuery) -> None:
    assert isinstance(parsed, ParsedQuery) and parsed.text == q
    phrases = [p for g in parsed.groups for p in g] + parsed.required + parsed.excluded
    for group in parsed.groups:
        assert group, "an empty OR group"
    for phrase in phrases:
        assert len(phrase.terms) == len(phrase.offsets)
        assert all(isinstance(t, str) and t for t in phrase.terms)
        assert all(o >= 0 for o in phrase.offsets)
        assert list(phrase.offsets) == sorted(phrase.offsets)
    # stop words not scored are never looked up: the limit counts the others (as parse_query)
    assert sum(len(parsed._scored(p.terms)) for g in parsed.groups for p in g) + sum(
        len(p.terms) for p in [*parsed.required, *parsed.excluded]) <= MAX_QUERY_TERMS
    assert parsed.groups or parsed.required or parsed.sites
    for host in parsed.sites + parsed.excluded_sites:
        assert _HOST.match(host), host
    units = parsed.units()
    assert len(units) == len(set(units))
    assert set(parsed.terms()) == {t for u in units for t in u}


def _parse(q: str) -> None:
    try:
        parsed = parse_query(q)
    except QueryError as exc:
        message = str(exc)
        assert message and "\n" not in message  # one line for a person
        return
    check_query(q, parsed)


@FUZZ
@given(q=st.text(max_size=300))
def test_arbitrary_query_text(q: str) -> None:
    _parse(q)


@FUZZ
@given(q=queryish)
def test_generated_queries(q: str) -> None:
    _parse(q)


def test_an_over_long_query_is_a_query_error() -> None:
    try:
        parse_query("a " * MAX_QUERY_CHARS)
    except QueryError:
        return
    raise AssertionError("an over-long query was accepted")


def test_deep_nesting_costs_no_quadratic_time() -> None:
    """2 MB of unclosed <div>: lexbor would take minutes (its tree is quadratic in depth);
    pages of more than MAX_LEXBOR_TAGS tags go to lxml, which caps the depth."""
    import time

    doc = b"<div>" * 400_000
    t = time.process_time()
    page = parse_html(doc, "http://example.org/deep", "text/html", structure=True)
    check_page(page)
    assert time.process_time() - t < 30  # a bound on a hang, not a speed figure


def test_unscored_stop_words_do_not_count_toward_the_term_limit() -> None:
    _parse(': 00 00 00 00 00 00 00 00 00 00 ÞE 00/ 00/ 00& 00& 00| 00,00 : 00< 00:00:00 '
           '"context manager"')
