"""Parse a stored HTML page once, with lexbor (selectolax), into the fields the index needs.

Fields (Brin & Page 1998, section 4.2.5, "parsing" and "indexing documents into barrels"):
title, headings (h1-h6), body (the main content when the page marks it with <main>,
role="main" or <article>, else the whole <body>), URL words (the path's words), and the
whitespace-normalised text kept for query-biased snippets.  Anchor text is not here: it belongs
to the page a link points to and comes from the crawl store's link table (indexer/anchors.py).

Structure, from the same parse (``structure=True``; it costs about as much again as the parse
on a small page and twice as much on a long manual page: scripts/benchmarks/compare_parsers.py):
``blocks``, the body split at block-level elements, each with its template key
(indexer/template_keys.py; template detection, indexer/templates.py, counts them), and
``fragments``, the defining places a URL ``#id`` reaches (indexer/fragment_extract.py; they
feed the defs field and the hit's ``#id``, indexer/fragments.py).

lexbor against lxml (``scripts/benchmarks/compare_parsers.py``): the same title, headings, body and lang on
every page of the Python manual, in about half the time on large pages.  lexbor parses as a
browser does (WHATWG HTML), decoding by the declared charset, a BOM, a ``<meta charset>``, else
UTF-8 (windows-1252 when the bytes are not UTF-8), always with replacement characters.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import unquote, urlsplit

import lxml.etree
import numpy as np
from selectolax.lexbor import LexborHTMLParser, LexborNode

from websift.core.cache import ClearingMemo
from websift.core.html import INVISIBLE_TAGS, drop_invisible, squash, text_of, visible_text
from websift.indexer.display_text import GLUE, shown_text
from websift.indexer.fragment_extract import Fragment, extract_fragments
from websift.indexer.html_nodes import HEADING_TAGS, css, css_first, node_text
from websift.indexer.settings import (
    DEFAULT_INDEX_SETTINGS,
    MAX_HTML_BYTES,
    MAX_LEXBOR_DEPTH,
    MAX_LEXBOR_TAGS,
    MAX_TITLE_CHARS,
    MAX_URL_QUERY_CHARS,
    META_SNIFF_BYTES,
    SNIPPET_TEXT_CHARS,
    IndexSettings,
)
from websift.indexer.template_keys import LINK, MARK, Block, page_blocks, squashed_hash

_HEADINGS = ", ".join(HEADING_TAGS)
# Elements that start and end a block of text (what a browser lays out as a box of its own).
BLOCK_TAGS = (
    "address", "article", "aside", "blockquote", "caption", "dd", "details", "dialog", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li",
    "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot",
    "th", "thead", "tr", "ul", *HEADING_TAGS)
_BLOCKS = ", ".join(BLOCK_TAGS)
_BLOCKS_AND_LINKS = f"{_BLOCKS}, a[href], br"  # a <br> shows a line break: a space
_MAIN = "main, [role='main'], article"
_INVISIBLE_OR_MAIN = ", ".join((*INVISIBLE_TAGS, _MAIN))


def _tag_ids(tags: tuple[str, ...]) -> dict[str, int]:
    """lexbor's tag IDs of ``tags`` (the library's fixed numbering of the HTML tags)."""
    tree = LexborHTMLParser("")
    ids = {t: tree.create_node(t).tag_id for t in tags}
    parsed = LexborHTMLParser("<p><a href=x>").css_first("a")  # as a created one's?
    if parsed is None or parsed.tag_id != ids["a"]:
        raise RuntimeError("lexbor's tag IDs of created and parsed elements differ")
    return ids


_IDS = _tag_ids((*BLOCK_TAGS, "br", "a"))
_MARKED_IDS = frozenset(_IDS[t] for t in (*BLOCK_TAGS, "br"))
_A_ID = _IDS["a"]


def _blocks_and_links(scope: LexborNode) -> list[LexborNode]:
    """``css(scope, _BLOCKS_AND_LINKS)``, the same nodes in the same (document) order, the
    scope itself included: one walk comparing lexbor's tag IDs, which costs about half of the
    selector engine's, which tries each of the list's 41 selectors on every element."""
    marked = _MARKED_IDS
    a_id = _A_ID
    return [el for el in scope.traverse()
            if (tid := el.tag_id) in marked or (tid == a_id and "href" in el.attrs)]


def _str_method(name: str) -> Callable[[LexborNode, str], object]:
    """``LexborNode.<name>`` specialised for a ``str`` argument: the method is a Cython fused
    function (str, bytes or node), whose dispatch on each call costs about as much again as
    the insertion (0.5 against 0.3 us)."""
    method = getattr(LexborNode, name)
    try:
        return cast(Callable[[LexborNode, str], object], method[str])
    except (TypeError, KeyError):  # not a fused function (another selectolax build)
        return cast(Callable[[LexborNode, str], object], method)


_INSERT_BEFORE = _str_method("insert_before")
_INSERT_AFTER = _str_method("insert_after")

_URL_EXT = re.compile(r"\.(?:s?html?|php|aspx?|jsp)$", re.IGNORECASE)
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


@dataclass
class ParsedPage:
    title: str
    headings: str
    body: str
    url_words: str
    text: str  # for snippets: main text, whitespace-normalised, capped
    lang: str | None = None
    blocks: list[Block] = field(default_factory=list)
    fragments: list[Fragment] = field(default_factory=list)
    # With ``structure``: the scope's text with block and link marks and GLUE between text
    # nodes, and the index of the first block of each block element (for join_shown).
    marked: str = ""
    starts: list[int] = field(default_factory=list)


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


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_html(body: bytes, content_type: str | None) -> str:
    """The page's text: the Content-Type charset, a BOM, a ``<meta charset>`` in the first
    META_SNIFF_BYTES, else UTF-8 or, when the bytes are not UTF-8, windows-1252 (WHATWG's
    default); undecodable bytes become U+FFFD."""
    m = _CHARSET.search(content_type) if content_type else None
    enc = _codec(m.group(1)) if m else None
    if enc is None:
        for bom, name in _BOMS:
            if body.startswith(bom):
                return body[len(bom):].decode(name, "replace")
        m2 = _META_CHARSET.search(body, 0, META_SNIFF_BYTES)
        enc = _codec(m2.group(1).decode("ascii", "replace")) if m2 else None
        if enc is not None and enc.startswith(("utf-16", "utf-32")):
            enc = "utf-8"  # a <meta> read as ASCII cannot be right about UTF-16 (WHATWG)
    if enc is None:
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            enc = "cp1252"
    return body.decode(enc, "replace")


def _main(candidates: list[LexborNode]) -> LexborNode | None:
    """The first <main>, else the first role="main", else the first <article> (one selector
    query for the three) that is not inside an invisible element."""
    for tag, role in (("main", None), (None, "main"), ("article", None)):
        for el in candidates:
            if (el.tag == tag if tag else el.attributes.get("role") == role) \
                    and not _inside_invisible(el):
                return el
    return None


def _inside_invisible(node: LexborNode) -> bool:
    up = node.parent
    while up is not None:
        if up.tag in INVISIBLE_TAGS:
            return True
        up = up.parent
    return False


# A tag: "/" for an end tag, its name, and the slashes that end a self-closed one.  Greedy,
# so a tag costs one scan to its ">" (a lazy ``[^>]*?(/?)>`` tries the end at every character).
_TAG = re.compile(rb"<(/?)([a-zA-Z][a-zA-Z0-9]*)(?:[^>]*[^>/])?(/*)>")
_VOID = frozenset(b"area base br col embed hr img input link meta param source track wbr".split())


def _step(tag: tuple[bytes, bytes, bytes]) -> int:
    """A tag's ``_TAG`` groups -> its step in depth: -1 an end tag, +1 an element that stays
    open, 0 a void or self-closed one."""
    close, name, self_closed = tag
    return -1 if close else 0 if self_closed or name.lower() in _VOID else 1


_STEPS = ClearingMemo(_step, 1 << 14)  # a page has few distinct tags
# The same tags, by their "/" and name alone (one group: a bytes, not a tuple of three, a tag,
# in half the time): the span of each match is ``_TAG``'s, to the first ">" after the name.
_TAG_NAME = re.compile(rb"<(/?[a-zA-Z][a-zA-Z0-9]*)[^>]*>")


def _name_step(tag: bytes) -> int:
    """``_step`` of a ``_TAG_NAME`` group, a self-closed element counted as open."""
    return -1 if tag.startswith(b"/") else 0 if tag.lower() in _VOID else 1


_NAME_STEPS = ClearingMemo(_name_step, 1 << 14)


def _deepest(steps: np.ndarray) -> int:
    """The deepest point of the depths after each step, floored at 0 (d = max(d + step, 0)):
    the running sum of the steps less the lowest it has been (or 0)."""
    sums = np.cumsum(steps)
    floor = np.minimum(np.minimum.accumulate(sums), 0)
    return int((sums - floor).max(initial=0))


def nesting_bound(body: bytes) -> int:
    """An upper bound of how deep the elements of ``body`` nest: its open tags minus its
    closing tags at the deepest point (void and self-closed elements left out), an end tag
    with none open leaving it at 0.  Elements that HTML closes by itself (``<p>``, ``<li>``
    without their end tag) only raise it.  With numpy, not a loop over the tags
    (:func:`_deepest`)."""
    tags = _TAG.findall(body, 0, MAX_HTML_BYTES)
    if not tags:
        return 0
    return _deepest(np.fromiter(map(_STEPS.__getitem__, tags), dtype=np.int64,
                                count=len(tags)))


def quick_nesting_bound(body: bytes) -> int:
    """:func:`nesting_bound` with a self-closed element (``<div/>``, which HTML leaves open
    anyway) counted as open: never below it, the same without such elements, and found in
    about half the time (``_TAG_NAME``)."""
    tags = _TAG_NAME.findall(body, 0, MAX_HTML_BYTES)
    if not tags:
        return 0
    return _deepest(np.fromiter(map(_NAME_STEPS.__getitem__, tags), dtype=np.int64,
                                count=len(tags)))


def _shallow(body: bytes, shallow_lexbor: bool) -> bool:
    """Whether a page of more than MAX_LEXBOR_TAGS tags still goes to lexbor: lexbor's time is
    quadratic in the nesting, not in the tags, so a big page that nests at most
    MAX_LEXBOR_DEPTH deep (a manual's page of 300 definitions) keeps its fragments and blocks
    (``shallow_lexbor`` off: every big page goes to lxml, as before).  The quick bound first:
    only a page it finds deeper is scanned again for the exact one."""
    return shallow_lexbor and (quick_nesting_bound(body) <= MAX_LEXBOR_DEPTH
                               or nesting_bound(body) <= MAX_LEXBOR_DEPTH)


def parse_lxml(body: bytes, url: str, content_type: str | None = None,
               content_language: str | None = None) -> ParsedPage:
    """The same fields with lxml.etree (websift's parser before lexbor): for pages with more
    than MAX_LEXBOR_TAGS tags that may nest deeper than MAX_LEXBOR_DEPTH (:func:`_shallow`), as
    lexbor builds deeply nested trees in quadratic time (80,000 nested ``<div>`` take 8 s)
    while libxml2 caps the depth.  Its structure is one block (the body) and no fragments."""
    words = url_words(url)
    empty = ParsedPage(title="", headings="", body="", url_words=words, text="",
                       lang=content_language)
    m = _CHARSET.search(content_type or "")
    try:
        parser = lxml.etree.HTMLParser(encoding=m.group(1) if m else None,
                                       remove_comments=True, remove_pis=True)
    except LookupError:  # an unknown charset name: let lxml guess
        parser = lxml.etree.HTMLParser(remove_comments=True, remove_pis=True)
    try:
        root = lxml.etree.fromstring(body[:MAX_HTML_BYTES], parser=parser)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError, LookupError,
            UnicodeError):
        return empty
    if root is None:
        return empty
    title_el = root.find(".//title")
    title = squash(text_of(title_el)) if title_el is not None else ""
    lang = root.get("lang") or content_language
    drop_invisible(root)
    main = None
    for path in (".//main", ".//*[@role='main']", ".//article", ".//body"):
        main = root.find(path)
        if main is not None:
            break
    scope = main if main is not None else root
    headings = squash(" ".join(text_of(h) for h in scope.iter(*HEADING_TAGS)))
    if not title:
        first = next(iter(scope.iter("h1")), None)
        title = squash(text_of(first)) if first is not None else ""
    text = visible_text(scope)
    return ParsedPage(title=title[:MAX_TITLE_CHARS].rstrip(), headings=headings, body=text,
                      url_words=words, text=text[:SNIPPET_TEXT_CHARS], lang=lang,
                      blocks=[Block(text, squashed_hash(text))] if text else [])


def _declared_lang(tree: LexborHTMLParser, root: LexborNode | None) -> str | None:
    """The language a page declares: ``<html lang>`` (or ``xml:lang``), else a
    ``<meta http-equiv="Content-Language">`` (its first tag)."""
    if root is not None:
        lang = root.attributes.get("lang") or root.attributes.get("xml:lang")
        if lang:
            return lang
    for meta in tree.tags("meta"):
        if (meta.attributes.get("http-equiv") or "").lower() == "content-language":
            content = meta.attributes.get("content")
            if content:
                return content
    return None


def parse_html(body: bytes, url: str, content_type: str | None = None, *,
               structure: bool = False, shown: bool = True,
               settings: IndexSettings = DEFAULT_INDEX_SETTINGS,
               content_language: str | None = None) -> ParsedPage:
    """Fields of one HTML page (and its blocks and fragments when ``structure``). Never raises
    on bad HTML: an unparsable page has empty fields.  ``settings``: the run's (shallow_lexbor,
    anchor_defs, id_words).  ``shown`` off (with ``structure``): ``text`` is left empty when
    ``marked`` holds the scope's text, for the caller to make it (``join_shown``: the indexer
    leaves a host's template blocks out of it, so the whole text would be thrown away).
    ``content_language``: the response's HTTP ``Content-Language`` (its first language), the
    page's language when the page itself declares none."""
    words = url_words(url)
    empty = ParsedPage(title="", headings="", body="", url_words=words, text="",
                       lang=content_language)
    if not body or not body.strip():
        return empty
    if body.count(b"<", 0, MAX_HTML_BYTES) > MAX_LEXBOR_TAGS and not _shallow(body, settings.shallow_lexbor):
        page = parse_lxml(body, url, content_type, content_language)
        if not structure:
            page.blocks = []
        return page
    html = decode_html(body[:MAX_HTML_BYTES], content_type)
    if MARK in html or LINK in html:  # whitespace either way; the marks are ours
        html = html.replace(MARK, " ").replace(LINK, " ")
    # Lone surrogates cannot come out of a decode; NUL becomes U+FFFD in lexbor's tokenizer.
    tree = LexborHTMLParser(html)
    titles = tree.tags("title")  # by tag name: no selector to compile
    title = node_text(titles[0]) if titles else ""
    root = tree.root
    lang = _declared_lang(tree, root) or content_language  # the page's own declaration first
    # The elements the crawler leaves out (core/html.py), found with one selector query and
    # destroyed last to first, so a descendant goes before its ancestor.
    # The main-content candidates are found in the same walk, and the one taken is one that
    # no invisible element holds (a destroyed element must not be touched again).
    found = css(tree, _INVISIBLE_OR_MAIN)
    tags = [el.tag for el in found]
    main = _main([el for el, tag in zip(found, tags, strict=True) if tag not in INVISIBLE_TAGS])
    for el in reversed([el for el, tag in zip(found, tags, strict=True) if tag in INVISIBLE_TAGS]):
        el.decompose()
    scope = main or tree.body or root
    if scope is None:
        return empty
    # With structure, the block elements and links are found in the same walk as the
    # headings (a heading is a block element): one selector query, not three.
    marked = _blocks_and_links(scope) if structure else []
    tags = [el.tag for el in marked]
    heads = ([el for el, tag in zip(marked, tags, strict=True) if tag in HEADING_TAGS]
             if structure else css(scope, _HEADINGS))
    if scope.tag in HEADING_TAGS:  # lxml's iter() counted the scope itself
        heads.insert(0, scope)
    headings = squash(" ".join(h.text(separator=" ") for h in heads))
    if not title:
        first = scope if scope.tag == "h1" else css_first(scope, "h1")
        title = node_text(first) if first is not None else ""
    fragments = extract_fragments(
        tree, scope, heads, f"{title} {words}", anchors=settings.anchor_defs,
        id_words=settings.id_words, texts=settings.defs == "text",
        dts=[el for el, tag in zip(marked, tags, strict=True) if tag == "dt"],
        rows=[el for el, tag in zip(marked, tags, strict=True) if tag == "tr"],
    ) if structure else []
    blocks: list[Block] = []
    starts: list[int] = []
    if structure:
        before, after = _INSERT_BEFORE, _INSERT_AFTER
        for el, tag in zip(marked, tags, strict=True):
            if tag == "br":
                before(el, " ")
                continue
            mark = LINK if tag == "a" else MARK  # "a" is no block tag: a[href] matched
            before(el, mark)
            after(el, mark)
        marked_text = scope.text(separator=GLUE)
        blocks = page_blocks(marked_text, starts)
        body_text = " ".join(b.text for b in blocks)
        text = shown_text(marked_text) if shown or not marked_text else ""
    else:
        body_text = node_text(scope)
        text, marked_text = body_text, ""
    return ParsedPage(
        title=title[:MAX_TITLE_CHARS].rstrip(),
        headings=headings,
        body=body_text,
        url_words=words,
        text=text[:SNIPPET_TEXT_CHARS],
        lang=lang,
        blocks=blocks,
        fragments=fragments,
        marked=marked_text,
        starts=starts,
    )
