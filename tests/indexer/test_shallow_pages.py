"""Big pages that nest shallowly keep their structure: a page of more than MAX_LEXBOR_TAGS
tags goes to lxml (no fragments, one block) only when it may nest deeper than
MAX_LEXBOR_DEPTH, as lexbor's time grows with the nesting (indexer/parse.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer.parse import _TAG, _TAG_NAME, nesting_bound, parse_html, quick_nesting_bound
from websift.indexer.settings import MAX_LEXBOR_DEPTH, MAX_LEXBOR_TAGS, IndexSettings


def _definitions_page(n: int) -> bytes:
    """A manual's page of ``n`` definitions, each a <dt id> and its <dd>: 4 tags each."""
    items = "".join(f'<dt id="opt-{i}"><code>option{i}</code></dt><dd><p>sets value {i}</p></dd>'
                    for i in range(n))
    return f"<html><head><title>Options</title></head><body><dl>{items}</dl></body></html>".encode()


def test_a_big_shallow_page_keeps_its_fragments() -> None:
    body = _definitions_page(MAX_LEXBOR_TAGS // 6)  # 12 "<" per definition: past the cap
    assert body.count(b"<") > MAX_LEXBOR_TAGS
    page = parse_html(body, "http://h.example/options.html", structure=True)
    assert page.fragments and page.fragments[0].id == "opt-0"
    assert "option0" in page.fragments[0].key
    off = IndexSettings(shallow_lexbor=False)
    assert parse_html(body, "http://h.example/options.html", structure=True,
                      settings=off).fragments == []


def test_a_big_deep_page_still_goes_to_lxml() -> None:
    depth = MAX_LEXBOR_TAGS + 1
    body = b'<html><body><dl><dt id="x">deep</dt></dl>' + b"<div>" * depth + b"text</body></html>"
    assert nesting_bound(body) > MAX_LEXBOR_DEPTH
    page = parse_html(body, "http://h.example/deep.html", structure=True)
    assert page.fragments == [] and "deep" in page.body


def _tree(draw: st.DrawFn, depth: int) -> tuple[str, int]:
    """Well-formed HTML and how deep its elements nest."""
    tag = draw(st.sampled_from(["div", "p", "span", "dl", "section"]))
    kids = draw(st.integers(0, 3)) if depth < 6 else 0
    inner, deepest = "", 0
    for _ in range(kids):
        html, d = _tree(draw, depth + 1)
        inner += html + draw(st.sampled_from(["", "<br>", "<img src=x>", "<hr/>", "a < b"]))
        deepest = max(deepest, d)
    return f"<{tag} class='c'>{inner}</{tag}>", deepest + 1


@st.composite
def _trees(draw: st.DrawFn) -> tuple[str, int]:
    return _tree(draw, 0)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(_trees())
def test_the_nesting_bound_of_well_formed_html_is_its_depth(tree: tuple[str, int]) -> None:
    html, depth = tree
    assert nesting_bound(html.encode()) == depth
    # A closing tag left out (HTML allows it for <p>, <li>) only raises the bound.
    assert nesting_bound(html.replace("</p>", "").encode()) >= depth


_LAZY_TAG = re.compile(rb"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>")  # the tag's definition


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40) | st.text("<>/ a=b'\"pBR1\n", max_size=40).map(str.encode))
def test_the_tag_scan_finds_the_tags_of_its_definition(body: bytes) -> None:
    # The greedy scan (one pass to each ">") against the lazy pattern: the same tags, names
    # and self-closing slash (its truthiness is all nesting_bound reads).
    got = [(c, n, bool(s)) for c, n, s in _TAG.findall(body)]
    assert got == [(c, n, bool(s)) for c, n, s in _LAZY_TAG.findall(body)]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40) | st.text("<>/ a=b'\"pBR1\n", max_size=40).map(str.encode))
def test_the_name_scan_finds_the_same_tags(body: bytes) -> None:
    # One group a tag: the same tags with the same names, the self-closing slash not read.
    assert _TAG_NAME.findall(body) == [c + n for c, n, _ in _TAG.findall(body)]


_SELF_CLOSED = st.sampled_from(["", "<div/>", "<span />", "<br/>", "<p/ >"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["<div>", "</div>", "<p class=x>", "</p>", "<br>", "<IMG src=a>",
                                 "text", "</span>", "<hr/>", "a < b"]), max_size=30),
       st.lists(_SELF_CLOSED, max_size=30))
def test_the_quick_bound_is_never_below_the_bound(tags: list[str], closed: list[str]) -> None:
    # Without self-closed elements the two bounds are the same; each one only raises it.
    plain = "".join(tags).encode()
    assert quick_nesting_bound(plain) == nesting_bound(plain)
    mixed = "".join(t + c for t, c in zip(tags, closed, strict=False)).encode()
    assert quick_nesting_bound(mixed) >= nesting_bound(mixed)
    assert quick_nesting_bound(mixed) <= nesting_bound(mixed) + sum(
        c not in ("", "<br/>") for c in closed)
