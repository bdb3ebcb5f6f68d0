"""The parser's fast paths (issue 11, indexing rate) against their plain definitions: the label
words of a block, its blocks and template keys, and the per-thread CSS engine."""

from __future__ import annotations

import re
import threading

from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from websift.core.html import squash
from websift.indexer.display_text import GLUE, join_shown, shown_text
from websift.indexer.fragment_extract import _text_upto
from websift.indexer.html_nodes import css, node_text
from websift.indexer.parse import parse_html
from websift.indexer.template_keys import (
    _WORD_TOKEN,
    LINK,
    MARK,
    Block,
    _link_items,
    _template_key,
    _words,
    page_blocks,
    squashed_hash,
    squashed_hashes,
)

# Letters, digits, underscore, punctuation, the marks, Unicode spaces, digits and numerals.
_CHARS = st.sampled_from([*"ab_-.,:é1 \t\n\u00a0\u2028()*Z\u0661\u00b2\u2167😀", LINK, MARK])


def _reference_blocks(raw: str, starts: list[int] | None = None) -> list[Block]:
    """The blocks as parse_html made them before :func:`page_blocks` (one part at a time);
    ``starts`` gets the index of each non-blank part's first block."""
    out: list[Block] = []
    for block in raw.split(MARK):
        if block.strip() and starts is not None:
            starts.append(len(out))
        for part in _link_items(block):
            text = squash(part)
            if text:
                out.append(Block(text, _template_key(part, squashed_hash(text))))
    return out


@given(st.text(_CHARS, max_size=60))
@settings(max_examples=400)
def test_words_are_the_word_tokens(text: str) -> None:
    assert _words(text) == _WORD_TOKEN.findall(text)


_PIECE = st.text(st.sampled_from(list("ab ,:1é\u00a0-")), max_size=14)


@given(st.lists(st.tuples(_PIECE, st.booleans(), st.booleans()), max_size=12))
@settings(max_examples=400)
def test_blocks_equal_the_part_by_part_definition(parts: list[tuple[str, bool, bool]]) -> None:
    # Text pieces, each maybe a link (between link marks) and maybe followed by a block mark:
    # navigation-shaped blocks, paragraphs with links, empty blocks and links alike.
    raw = "".join(f"{LINK}{p}{LINK}" if link else p + (MARK if mark else "")
                  for p, link, mark in parts)
    starts: list[int] = []
    want: list[int] = []
    assert page_blocks(raw, starts) == _reference_blocks(raw, want)
    assert starts == want


@given(st.lists(st.text(max_size=12) | st.sampled_from(["\ud800x", "Straße", "İ", ""]),
                max_size=8))
def test_hashes_at_once_are_each_texts_hash(texts: list[str]) -> None:
    assert squashed_hashes(texts) == [squashed_hash(t) for t in texts]


def test_blocks_of_a_navigation_and_a_paragraph() -> None:
    nav = f"Next: {LINK}Intro{LINK}, Up: {LINK}Top{LINK}, {LINK}Index{LINK}"
    para = f"see {LINK}the intro{LINK} for more"
    got = page_blocks(f"{MARK}{nav}{MARK} {MARK}{para}{MARK}")
    assert [b.text for b in got] == ["Next: Intro", ", Up: Top", ", Index", "see the intro for more"]
    assert got == _reference_blocks(f"{MARK}{nav}{MARK} {MARK}{para}{MARK}")
    assert got[3].key != got[3].hash  # the words outside the link make its key


def test_one_css_engine_serves_every_tree_and_thread() -> None:
    pages = [f"<body><p id=a{i}>x</p><div><p>y</p><h2>z{i}</h2></div></body>" for i in range(3)]
    found: dict[int, list[list[str]]] = {}

    def run(k: int) -> None:
        found[k] = [[n.tag or "" for n in css(LexborHTMLParser(h), "p, h2")] for h in pages]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    run(3)
    want = [[n.tag or "" for n in LexborHTMLParser(h).css("p, h2")] for h in pages]
    assert want == [["p", "p", "h2"]] * 3
    assert all(v == want for v in found.values())
    assert css(LexborHTMLParser(""), "p") == []


def test_parse_unchanged_by_the_shared_engine() -> None:
    html = (b"<html><head><title>T</title><style>s</style></head><body><nav><a href=/>Home"
            b"</a> | <a href=/a>A</a> | <a href=/b>B</a></nav><main><h1 id=top>Top</h1><p>one "
            b"<a href=x>two</a> three</p><dl><dt id=term-x>x</dt><dd>the x</dd></dl></main>"
            b"<script>gone()</script></body></html>")
    first = parse_html(html, "http://h/p.html", "text/html", structure=True)
    again = parse_html(html, "http://h/p.html", "text/html", structure=True)
    assert first == again
    assert first.headings == "Top"
    assert first.body == "Top one two three x the x"
    assert [f.id for f in first.fragments] == ["term-x", "top"]


_SHOWN_DEFINITION = re.compile(f"{LINK}[\\s{GLUE}]*[¶#§⚓🔗]?[\\s{GLUE}]*{LINK}|¶")


@given(st.text(st.sampled_from([*"a #§¶\n\u00a0", LINK, MARK, GLUE]), max_size=40))
@settings(max_examples=400)
def test_shown_text_equals_its_one_pattern_definition(marked: str) -> None:
    # Permalink links, then lone pilcrows, against the one alternation that defines them.
    want = " ".join(_SHOWN_DEFINITION.sub(" ", marked).replace(LINK, "").replace(GLUE, "").split())
    assert shown_text(marked) == want


def _reference_join_shown(marked: str, starts: list[int], blocks: list[Block],
                          dropped: set[int]) -> str:
    """join_shown as its definition reads: each block element's text shown alone, or its kept
    blocks' texts."""
    parts = [p for p in marked.split(MARK) if p and not p.isspace()]
    ends = [*starts[1:], len(blocks)]
    out: list[str] = []
    for part, first, end in zip(parts, starts, ends, strict=True):
        drop = [b.key in dropped for b in blocks[first:end]]
        if not any(drop):
            if first < end and (text := shown_text(part)):
                out.append(text)
        elif not all(drop):
            out.extend(b.text for b, d in zip(blocks[first:end], drop, strict=True) if not d)
    return " ".join(out)


# Block elements' texts: words, spaces, text node joints, links (permalinks among them) and
# lone link marks, so that a permalink pattern could match across two elements' texts.
_SHOWN_PIECE = st.sampled_from(["ab", "a", " ", "#", "¶", GLUE, f"{LINK}a{LINK}",
                                f"{LINK}#{LINK}", f"{LINK} ¶{LINK}", LINK, f" #{LINK}"])


@given(st.lists(st.lists(_SHOWN_PIECE, max_size=6), max_size=10), st.data())
@settings(max_examples=800)
def test_join_shown_equals_each_block_element_shown_alone(parts: list[list[str]],
                                                          data: st.DataObject) -> None:
    # Runs of block elements are shown at once and the text may stop after ``limit``
    # characters: the first ``limit`` characters are those of the element-by-element text.
    marked = MARK.join("".join(p) for p in parts)
    starts: list[int] = []
    blocks = page_blocks(marked, starts)
    keys = sorted({b.key for b in blocks})
    dropped = set(data.draw(st.lists(st.sampled_from(keys), max_size=3))) if keys else set()
    want = _reference_join_shown(marked, starts, blocks, dropped) if dropped else shown_text(marked)
    limit = data.draw(st.one_of(st.none(), st.integers(0, len(want) + 1)))
    got = join_shown(marked, starts, blocks, dropped, limit)
    assert got[:limit] == want[:limit]
    if limit is None:
        assert got == want


_TEXT_NODE = st.text(st.sampled_from(list("ab 1,\u00a0")), max_size=8)


@st.composite
def _nested(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(st.sampled_from(["div", "dd", "section", "p", "span", "ul", "li"]))
    kids = draw(st.lists(_TEXT_NODE if depth >= 3 else st.one_of(_TEXT_NODE, _nested(depth + 1)),
                         max_size=4))
    return f"<{tag}>{''.join(kids)}</{tag}>"


@given(_nested(), st.integers(1, 40))
@settings(max_examples=300)
def test_text_upto_takes_a_containers_first_text_nodes_as_any_elements(
        html: str, limit: int) -> None:
    # A container element (a section, a definition) is walked text node by text node at once;
    # any element, container or not, gives its whole text when it is short and else its first
    # text nodes up to the limit.
    root = LexborHTMLParser(f"<body>{html}</body>").body
    assert root is not None
    for el in root.traverse():
        assert _text_upto(el, 10**6) == node_text(el)
        first: list[str] = []
        for n in el.traverse(include_text=True, skip_empty=True):
            t = n.text_content if n.is_text_node else None
            if t and not t.isspace() and sum(map(len, first)) < limit:
                first.append(t)
        assert _text_upto(el, limit) == squash(" ".join(first))
