"""Parse a stored HTML page once, with lexbor (selectolax), into the fields the index needs.

Fields (Brin & Page 1998, section 4.2.5, "parsing" and "indexing documents into barrels"):
title, headings (h1-h6), body (the main content when the page marks it with <main>,
role="main" or <article>, else the whole <body>), URL words (the path's words), and the
whitespace-normalised text kept for query-biased snippets.  Anchor text is not here: it belongs
to the page a link points to and comes from the crawl store's link table (indexer/anchors.py).

Structure, from the same parse (``structure=True``; the indexer's fragments feed the defs field
and the hit's ``#id``, indexer/fragments.py; the blocks' template keys feed template detection,
indexer/templates.py; it costs about as much again as the parse on a small page and twice as
much on a long manual page: scripts/compare_parsers.py):

* ``blocks``: the body split at block-level elements (p, li, td, headings, div, nav ...), in
  document order, each with :func:`block_hash` of its text: ``" ".join`` of the blocks' texts is
  exactly ``body``.  A block that recurs on many pages of a host is template (navigation, "Prev
  Up Home Next"); its template ``key`` is its hash, or, for a block with links and words between
  them ("Next: <a>X</a>, Up: <a>Y</a>", whose link texts change from page to page), the hash of
  the words outside its links.  A navigation-shaped block (NAV_MIN_LINKS links or more, at most
  NAV_MAX_LABEL_WORDS words between two) is split into its items, a link with its label, so a
  page whose navigation lacks an item ("Next: X, Up: Z" where most have "Next: X, Previous: Y,
  Up: Z") shares the other items' keys: the shape recurs, not the whole text.
* ``fragments``: the defining places a URL ``#id`` reaches: ``<dt>`` terms with their ``<dd>``,
  headings with an anchor (their own id, a child ``<a id|name>``, a permalink ``<a href="#x">``,
  or the section they open), table rows keyed by a first cell with an id, other elements with
  an id by their own text, and empty named anchors (``<span id="index-decrement-operator">``,
  ``<a name="GUC-WORK-MEM">``: where back-of-book indexes, glossaries and permalinks point) by
  the words of their id (:func:`id_key`: Texinfo's ``_002c`` escapes decoded, split at
  separators and case changes; numbers, serials, hashes and a prefix the page's ids share are
  no words; an id of none is no fragment) with the text that follows them; each bounded, and
  bounded in number per page.  A term's, heading's or row's key gains the words of its id that
  its text lacks (``<dt id="index-axes-contextmenu">contextmenu</dt>``: ``axes contextmenu``).
  Texinfo puts a term's anchors (``<span id=index-x></span>``) at the end of the previous
  ``<dd>``: they count as the anchor of the ``<dt>`` that follows.

lexbor against lxml (``scripts/compare_parsers.py``): the same title, headings, body and lang on
every page of the Python manual, in about half the time on large pages.  lexbor parses as a
browser does (WHATWG HTML), decoding by the declared charset, a BOM, a ``<meta charset>``, else
UTF-8 (windows-1252 when the bytes are not UTF-8), always with replacement characters.
"""

from __future__ import annotations

import codecs
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import NamedTuple, Protocol, cast
from urllib.parse import unquote, urlsplit

import lxml.etree
from selectolax.lexbor import LexborCSSSelector, LexborHTMLParser, LexborNode

from websift.core.html import INVISIBLE_TAGS, drop_invisible, squash, text_of, visible_text
from websift.indexer.settings import (
    DEFAULT_INDEX_SETTINGS,
    GENERIC_ID_PREFIX_MIN_IDS,
    MAX_FRAGMENT_KEY_CHARS,
    MAX_FRAGMENT_TEXT_CHARS,
    MAX_FRAGMENTS,
    MAX_HTML_BYTES,
    MAX_LEXBOR_DEPTH,
    MAX_LEXBOR_TAGS,
    MAX_TITLE_CHARS,
    MAX_URL_QUERY_CHARS,
    META_SNIFF_BYTES,
    NAV_MAX_LABEL_WORDS,
    NAV_MIN_LINKS,
    SNIPPET_TEXT_CHARS,
    IndexSettings,
)

_HEADING_TAGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_HEADINGS = ", ".join(_HEADING_TAGS)
# Elements that start and end a block of text (what a browser lays out as a box of its own).
BLOCK_TAGS = (
    "address", "article", "aside", "blockquote", "caption", "dd", "details", "dialog", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li",
    "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "td", "tfoot",
    "th", "thead", "tr", "ul", *_HEADING_TAGS)
_BLOCKS = ", ".join(BLOCK_TAGS)
_BLOCKS_AND_LINKS = f"{_BLOCKS}, a[href]"
_MAIN = "main, [role='main'], article"
_INVISIBLE_OR_MAIN = ", ".join((*INVISIBLE_TAGS, _MAIN))
_KEYED = frozenset(("dt", "tr", *_HEADING_TAGS))  # elements fragments are found by
_MARK = "\x1e"  # a block boundary (an ASCII record separator: whitespace to str.split)
_LINK = "\x1c"  # either end of a link's text (a file separator: whitespace to str.split too)
_SKELETON = "\x00links:"  # prefix of a template key made of the text outside links
_URL_EXT = re.compile(r"\.(?:s?html?|php|aspx?|jsp)$", re.IGNORECASE)
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?([\w.:-]+)", re.IGNORECASE)
# The words of an id: segments between separators ("-", ":", "/", whitespace); Texinfo's escapes
# ("_002c" is ",", "_002d" a hyphen of the name) decoded in each segment; numbers ("3",
# "1.5.3.7") and hex hashes ("3f9a0c2e") are no words; a serial ("id5", "fn12") is generated.
_ID_SEPARATORS = re.compile(r"[-\s:/]+")
_TEXINFO_ESCAPE = re.compile(r"_00([0-9a-f]{2})")
_ID_NUMBER = re.compile(r"\d[\d.]*")
_ID_HASH = re.compile(r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}", re.IGNORECASE)
_ID_SERIAL = re.compile(r"([a-z]+)\d+", re.IGNORECASE)
_MAX_SERIAL_STEM = 2  # "id5", "fn12", "n3": a serial whatever else the page holds
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_WORD_CHARS = re.compile(r"[^\W_]+")
_WORD_TOKEN = re.compile(r"[^\s\x1c\x1e]*[^\W_][^\s\x1c\x1e]*")  # a token with a letter or digit
_ALNUM = re.compile(r"[^\W_]")  # a letter or digit: str.isalnum() of one character
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"),
         (codecs.BOM_UTF16_BE, "utf-16"))


class _Selector(Protocol):
    def find(self, query: str, node: LexborNode) -> list[LexborNode]: ...
    def find_first(self, query: str, node: LexborNode) -> list[LexborNode]: ...


_LOCAL = threading.local()


def _selector() -> _Selector:
    """This thread's CSS selector engine.  ``node.css()`` creates one per parsed page on its
    first query (a CSS parser and a selectors engine: ~100 us, as much as parsing a small page);
    one engine serves any tree, so a thread keeps one for all its pages."""
    sel = getattr(_LOCAL, "selector", None)
    if sel is None:
        sel = _LOCAL.selector = cast(_Selector, LexborCSSSelector())  # type: ignore[no-untyped-call]
    return cast(_Selector, sel)


def _css(node: LexborNode | LexborHTMLParser, query: str) -> list[LexborNode]:
    """``node.css(query)`` with this thread's engine (:func:`_selector`)."""
    if isinstance(node, LexborHTMLParser):
        if node.root is None:
            return []
        node = node.root
    return _selector().find(query, node)


def _css_first(node: LexborNode, query: str) -> LexborNode | None:
    """``node.css_first(query)`` with this thread's engine (:func:`_selector`)."""
    found = _selector().find_first(query, node)
    return found[0] if found else None


class Block(NamedTuple):
    text: str  # whitespace-normalised, never empty
    hash: int  # block_hash(text): unsigned 64-bit
    # The template key: ``hash``, or for a block with links and text between them the hash of
    # the text outside its links ("Next: <a>X</a>, Up: <a>Y</a>" has one key on every page).
    key: int = 0


class Fragment(NamedTuple):
    id: str  # the element id (or <a name>) a URL #id reaches
    key: str  # the term, heading or first cell (bounded)
    text: str  # the defining text: dt with its dd, heading with its section's start, the row


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


def block_hash(text: str) -> int:
    """Stable 64-bit hash of a text as a template key: case-folded, whitespace-normalised
    (BLAKE2b, so the same on every machine and run, unlike ``hash``)."""
    return _squashed_hash(" ".join(text.split()))


def _squashed_hash(text: str) -> int:
    """:func:`block_hash` of a text :func:`squash` left as it is."""
    key = text.casefold().encode("utf-8", "surrogatepass")
    return int.from_bytes(blake2b(key, digest_size=8).digest(), "little")


def _template_key(part: str, whole: int) -> int:
    """A block's template key (see :class:`Block`): the words outside its links (punctuation
    left out) when it has both links and such words, else its whole text's hash."""
    if _LINK not in part:
        return whole
    pieces = part.split(_LINK)
    if not any(p.strip() for p in pieces[1::2]):
        return whole  # no link text: the words outside are all of it
    outside = _WORD_TOKEN.findall(" ".join(pieces[0::2]))
    if not outside:
        return whole
    return _squashed_hash(_SKELETON + " ".join(outside))  # block_hash of a squashed text


def _link_items(part: str) -> list[str]:
    """A navigation-shaped block (NAV_MIN_LINKS links or more, at most NAV_MAX_LABEL_WORDS
    words between two links) split into its items, each link with the label before it ("Next:
    <a>X</a>", ", Up: <a>Z</a>", "[<a>Contents</a>]"), so that each item has a template key of
    its own: a page that leaves an item out ("Next: X, Up: Z" where most have "Next: X,
    Previous: Y, Up: Z") shares the other items' keys.  Any other block is one item."""
    if _LINK not in part:
        return [part]
    pieces = part.split(_LINK)
    links = len(pieces) // 2
    if links < NAV_MIN_LINKS or len(pieces) % 2 == 0 or any(
            len(_WORD_TOKEN.findall(p)) > NAV_MAX_LABEL_WORDS for p in pieces[0::2]):
        return [part]
    items = [pieces[2 * i] + _LINK + pieces[2 * i + 1] + _LINK for i in range(links)]
    items[-1] += pieces[-1]
    return items


def _words(text: str) -> list[str]:
    """``_WORD_TOKEN.findall(text)``, 2-3 times faster: the whitespace-separated tokens (the
    marks are whitespace to both) holding a letter or digit, most of them all letters and
    digits (checked in C)."""
    tokens = text.split()
    if all(map(str.isalnum, tokens)):
        return tokens
    return [t for t in tokens if t.isalnum() or _ALNUM.search(t)]


def _blocks(raw: str) -> list[Block]:
    """The blocks of a scope's text with its block and link marks: each block's text split
    at the marks, navigation-shaped ones into items (:func:`_link_items`), with their hashes
    and template keys (:func:`_template_key`).  The same as those functions part by part, but
    a block's label words are found once for both, and a block without links (most) costs a
    split, a join and a hash."""
    out: list[Block] = []
    new = tuple.__new__  # a NamedTuple's own __new__ is Python code: 7x the cost of a tuple's
    for block in raw.split(_MARK):
        if not block or block.isspace():  # between two marks (the marks are whitespace too)
            continue
        if _LINK not in block:
            text = " ".join(block.split())
            h = _squashed_hash(text)
            out.append(new(Block, (text, h, h)))
            continue
        pieces = block.split(_LINK)
        labels = [_words(p) for p in pieces[0::2]]
        if len(pieces) // 2 >= NAV_MIN_LINKS and len(pieces) % 2 == 1 and all(
                len(words) <= NAV_MAX_LABEL_WORDS for words in labels):
            for part in _link_items(block):
                text = squash(part)
                if text:
                    out.append(Block(text, h := _squashed_hash(text), _template_key(part, h)))
            continue
        text = squash(block)
        if not text:
            continue
        h = key = _squashed_hash(text)
        outside = [w for words in labels for w in words]
        if outside and any(p.strip() for p in pieces[1::2]):
            key = _squashed_hash(_SKELETON + " ".join(outside))
        out.append(Block(text, h, key))
    return out


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


def _text(node: LexborNode) -> str:
    return squash(node.text(separator=" "))


_TAG = re.compile(rb"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>")
_VOID = frozenset(b"area base br col embed hr img input link meta param source track wbr".split())


def nesting_bound(body: bytes) -> int:
    """An upper bound of how deep the elements of ``body`` nest: its open tags minus its
    closing tags at the deepest point (void and self-closed elements left out).  Elements that
    HTML closes by itself (``<p>``, ``<li>`` without their end tag) only raise it."""
    depth = peak = 0
    for close, name, self_closed in _TAG.findall(body, 0, MAX_HTML_BYTES):
        if close:
            depth = max(depth - 1, 0)
        elif not self_closed and name.lower() not in _VOID:
            depth += 1
            peak = max(peak, depth)
    return peak


def _shallow(body: bytes, shallow_lexbor: bool) -> bool:
    """Whether a page of more than MAX_LEXBOR_TAGS tags still goes to lexbor: lexbor's time is
    quadratic in the nesting, not in the tags, so a big page that nests at most
    MAX_LEXBOR_DEPTH deep (a manual's page of 300 definitions) keeps its fragments and blocks
    (``shallow_lexbor`` off: every big page goes to lxml, as before)."""
    return shallow_lexbor and nesting_bound(body) <= MAX_LEXBOR_DEPTH


def parse_lxml(body: bytes, url: str, content_type: str | None = None) -> ParsedPage:
    """The same fields with lxml.etree (websift's parser before lexbor): for pages with more
    than MAX_LEXBOR_TAGS tags that may nest deeper than MAX_LEXBOR_DEPTH (:func:`_shallow`), as
    lexbor builds deeply nested trees in quadratic time (80,000 nested ``<div>`` take 8 s)
    while libxml2 caps the depth.  Its structure is one block (the body) and no fragments."""
    words = url_words(url)
    empty = ParsedPage(title="", headings="", body="", url_words=words, text="")
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
    lang = root.get("lang") or None
    drop_invisible(root)
    main = None
    for path in (".//main", ".//*[@role='main']", ".//article", ".//body"):
        main = root.find(path)
        if main is not None:
            break
    scope = main if main is not None else root
    headings = squash(" ".join(text_of(h) for h in scope.iter(*_HEADING_TAGS)))
    if not title:
        first = next(iter(scope.iter("h1")), None)
        title = squash(text_of(first)) if first is not None else ""
    text = visible_text(scope)
    return ParsedPage(title=title[:MAX_TITLE_CHARS], headings=headings, body=text,
                      url_words=words, text=text[:SNIPPET_TEXT_CHARS], lang=lang,
                      blocks=[Block(text, h, h)] if text and (h := _squashed_hash(text)) else [])


def parse_html(body: bytes, url: str, content_type: str | None = None, *,
               structure: bool = False,
               settings: IndexSettings = DEFAULT_INDEX_SETTINGS) -> ParsedPage:
    """Fields of one HTML page (and its blocks and fragments when ``structure``). Never raises
    on bad HTML: an unparsable page has empty fields.  ``settings``: the run's (shallow_lexbor,
    anchor_defs, id_words)."""
    words = url_words(url)
    empty = ParsedPage(title="", headings="", body="", url_words=words, text="")
    if not body or not body.strip():
        return empty
    if body.count(b"<", 0, MAX_HTML_BYTES) > MAX_LEXBOR_TAGS and not _shallow(body, settings.shallow_lexbor):
        page = parse_lxml(body, url, content_type)
        if not structure:
            page.blocks = []
        return page
    html = decode_html(body[:MAX_HTML_BYTES], content_type)
    if _MARK in html or _LINK in html:  # whitespace either way; the marks are ours
        html = html.replace(_MARK, " ").replace(_LINK, " ")
    # Lone surrogates cannot come out of a decode; NUL becomes U+FFFD in lexbor's tokenizer.
    tree = LexborHTMLParser(html)
    titles = tree.tags("title")  # by tag name: no selector to compile
    title = _text(titles[0]) if titles else ""
    root = tree.root
    lang = (root.attributes.get("lang") if root is not None else None) or None
    # The elements the crawler leaves out (core/html.py), found with one selector query and
    # destroyed last to first, so a descendant goes before its ancestor.
    # The main-content candidates are found in the same walk, and the one taken is one that
    # no invisible element holds (a destroyed element must not be touched again).
    found = _css(tree, _INVISIBLE_OR_MAIN)
    tags = [el.tag for el in found]
    main = _main([el for el, tag in zip(found, tags, strict=True) if tag not in INVISIBLE_TAGS])
    for el in reversed([el for el, tag in zip(found, tags, strict=True) if tag in INVISIBLE_TAGS]):
        el.decompose()
    scope = main or tree.body or root
    if scope is None:
        return empty
    # With structure, the block elements and links are found in the same walk as the
    # headings (a heading is a block element): one selector query, not three.
    marked = _css(scope, _BLOCKS_AND_LINKS) if structure else []
    tags = [el.tag for el in marked]
    heads = ([el for el, tag in zip(marked, tags, strict=True) if tag in _HEADING_TAGS]
             if structure else _css(scope, _HEADINGS))
    if scope.tag in _HEADING_TAGS:  # lxml's iter() counted the scope itself
        heads.insert(0, scope)
    headings = squash(" ".join(h.text(separator=" ") for h in heads))
    if not title:
        first = scope if scope.tag == "h1" else _css_first(scope, "h1")
        title = _text(first) if first is not None else ""
    fragments = _fragments(tree, scope, heads, f"{title} {words}", anchors=settings.anchor_defs,
                           id_words=settings.id_words) if structure else []
    blocks: list[Block] = []
    if structure:
        for el, tag in zip(marked, tags, strict=True):
            mark = _LINK if tag == "a" else _MARK  # "a" is no block tag: a[href] matched
            el.insert_before(mark)
            el.insert_after(mark)
        blocks = _blocks(scope.text(separator=" "))
        body_text = " ".join(b.text for b in blocks)
    else:
        body_text = _text(scope)
    return ParsedPage(
        title=title[:MAX_TITLE_CHARS],
        headings=headings,
        body=body_text,
        url_words=words,
        text=body_text[:SNIPPET_TEXT_CHARS],
        lang=lang,
        blocks=blocks,
        fragments=fragments,
    )


# ---------------------------------------------------------------------- fragments

def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


def _anchor_id(node: LexborNode, ids: set[str]) -> str | None:
    """The id a URL #fragment reaches at ``node``: its own, a descendant's (``<a id|name>``),
    or the target of a permalink inside it (``<a href="#x">`` with x an id of the page)."""
    own = node.id
    if own and own in ids:
        return own
    inner = _css_first(node, "[id], a[name]")
    if inner is not None:
        got = inner.id or inner.attributes.get("name")
        if got and got in ids:
            return got
    for a in _css(node, "a[href^='#']"):
        target = (a.attributes.get("href") or "")[1:]
        if target in ids:
            return target
    return None


def _enclosing_id(node: LexborNode, stop: LexborNode, ids: set[str]) -> str | None:
    """The id of the nearest element around ``node`` (up to ``stop``) that ``node`` opens:
    ``<section id=x><h2>`` (Sphinx), ``<div class="sect1" id=x><div class="titlepage">``."""
    child, parent = node, node.parent
    while parent is not None and parent.mem_id != stop.mem_id:
        first = parent.child
        while first is not None and not first.is_element_node:
            first = first.next
        if first is None or first.mem_id != child.mem_id:
            return None
        if parent.id and parent.id in ids:
            return parent.id
        child, parent = parent, parent.parent
    return None


def _preceding_anchor(node: LexborNode, ids: set[str]) -> str | None:
    """The id of an empty anchor right before ``node`` (Texinfo: ``<a name=x></a><h3>``,
    ``<span id=x></span><h3>``)."""
    prev = node.prev
    while prev is not None and prev.is_text_node and not (prev.text_content or "").strip():
        prev = prev.prev
    if prev is None or not prev.is_element_node:
        return None
    if _text(prev):  # Texinfo's definition lists: the anchors end the previous <dd>
        return _trailing_anchor(prev, ids)
    got = prev.id or prev.attributes.get("name") or _trailing_anchor(prev, ids)
    return got if got and got in ids else None


def _trailing_anchor(node: LexborNode, ids: set[str]) -> str | None:
    """The id of the last empty element with an id at the end of ``node`` (after its text)."""
    last = node.last_child
    while last is not None:
        if last.is_text_node and not (last.text_content or "").strip():
            last = last.prev
            continue
        if not last.is_element_node or _text(last):
            return None
        got = last.id or last.attributes.get("name")
        if got and got in ids:
            return got
        last = last.prev
    return None


def _text_upto(node: LexborNode, limit: int) -> str:
    """The text of ``node`` as :func:`_text` gives it, but only its first text nodes, up to
    about ``limit`` characters: the text after an anchor can be a whole long section."""
    out: list[str] = []
    size = 0
    for n in node.traverse(include_text=True):
        if n.is_text_node:
            t = n.text_content
            if t and not t.isspace():
                out.append(t)
                size += len(t)
                if size >= limit:
                    break
    return squash(" ".join(out))


def _following_text(node: LexborNode, stop: LexborNode, limit: int,
                    until: tuple[str, ...]) -> str:
    """Up to ``limit`` characters of the text after ``node`` in its section: its following
    siblings (climbing out of wrappers it ends) until an element of ``until``."""
    out: list[str] = []
    size = 0
    cur: LexborNode | None = node
    while cur is not None and size < limit:
        sib = cur.next
        while sib is not None and size < limit:
            if sib.tag in until:
                return " ".join(out)
            t = (_text_upto(sib, limit - size) if sib.is_element_node
                 else _text(sib) if sib.is_text_node else "")
            if t:
                out.append(t)
                size += len(t) + 1
            sib = sib.next
        parent = cur.parent
        if parent is None or parent.mem_id == stop.mem_id:
            break
        cur = parent
    return " ".join(out)


def _unescape(segment: str) -> str:
    """A segment of an id with Texinfo's escapes of punctuation decoded (``_002c`` -> ``,``);
    an escape of a letter or digit is no Texinfo escape and stays."""
    def one(m: re.Match[str]) -> str:
        ch = chr(int(m.group(1), 16))
        return m.group(0) if ch.isalnum() or not ch.isprintable() else ch
    return _TEXINFO_ESCAPE.sub(one, segment) if "_00" in segment else segment


def id_segments(fid: str) -> list[str]:
    """The segments of an id between separators, Texinfo's escapes decoded:
    ``index-operators_002c-decrement`` -> ``["index", "operators,", "decrement"]``."""
    return [seg for seg in (_unescape(p) for p in _ID_SEPARATORS.split(fid)) if seg]


def generic_prefixes(ids: Iterable[str], context: str,
                     least: int = GENERIC_ID_PREFIX_MIN_IDS) -> frozenset[str]:
    """Leading segments (case-folded) that lead at least ``least`` of a page's ids of several
    segments and are no word of ``context`` (its title and URL words): a namespace of the
    generator (Texinfo's ``index-``, Sphinx's ``term-``), not a word of the anchored place."""
    counts: dict[str, int] = {}
    for fid in ids:
        segs = _ID_SEPARATORS.split(fid, maxsplit=1)
        if len(segs) == 2 and segs[0] and segs[1]:
            lead = segs[0].casefold()
            counts[lead] = counts.get(lead, 0) + 1
    own = {w.casefold() for w in _WORD_CHARS.findall(context)}
    return frozenset(p for p, c in counts.items() if c >= least and p not in own)


def serial_stems(ids: Iterable[str]) -> frozenset[str]:
    """Letter stems that a page numbers (``id1``, ``id2``: ``id``): its generated ids."""
    seen: dict[str, str] = {}
    out: set[str] = set()
    for fid in ids:
        m = _ID_SERIAL.fullmatch(fid)
        if m:
            stem = m.group(1).casefold()
            if seen.setdefault(stem, fid) != fid:
                out.add(stem)
    return frozenset(out)


def id_key(fid: str, generic: frozenset[str] = frozenset(),
           serials: frozenset[str] = frozenset()) -> str:
    """The words an id carries, as a fragment's key; "" for an id that carries none.

    ``index-decrement-operator`` -> ``decrement operator`` (with ``index`` generic on the
    page), ``GUC-WORK-MEM`` -> ``GUC WORK MEM``, ``getElementById`` -> ``getElementById get
    Element By Id``.  No words: numbers and hashes (``id-1.5.3.7``), a serial (``id5``), and a
    prefix with a counter (``index-3``, ``pep-8``: one word left once the numbers go).
    """
    segs = id_segments(fid)
    if len(segs) == 1 and (m := _ID_SERIAL.fullmatch(segs[0])) and (
            len(m.group(1)) <= _MAX_SERIAL_STEM or m.group(1).casefold() in serials):
        return ""
    if len(segs) > 1 and segs[0].casefold() in generic:
        segs = segs[1:]
    words = [s for s in segs if not (_ID_NUMBER.fullmatch(s) or _ID_HASH.fullmatch(s))]
    if not words or (len(words) < len(segs) and len(words) == 1):
        return ""
    out: list[str] = []
    for w in words:
        out.append(w)
        parts = _CAMEL.split(w)
        if len(parts) > 1:
            out.extend(parts)
    return " ".join(out)


def _fragments(tree: LexborHTMLParser, scope: LexborNode,
               heads: list[LexborNode], context: str = "", *, anchors: bool = True,
               id_words: bool = True) -> list[Fragment]:
    """The page's definitions and sections reachable by URL #id (see the module doc);
    ``context`` (its title and URL words) tells a generic id prefix from a word; ``anchors``:
    empty named anchors are fragments; ``id_words``: a key gains its id's words."""
    ids: set[str] = set()
    for n in _css(tree, "[id], a[name]"):  # one walk for both
        if n.id:
            ids.add(n.id)
        if n.tag == "a" and (name := n.attributes.get("name")):
            ids.add(name)
    if not ids:
        return []
    out: list[Fragment] = []
    used: set[str] = set()
    generic = generic_prefixes(ids, context) if anchors or id_words else frozenset()
    serials = serial_stems(ids) if anchors or id_words else frozenset()

    def add(fid: str | None, key: str, text: str, *, named: bool = False) -> None:
        """A fragment; a term's, heading's or row's key (not ``named``) gains its id's words."""
        if fid and fid not in used and key and len(out) < MAX_FRAGMENTS:
            used.add(fid)
            if id_words and not named:  # the id's words the key lacks ("axes" of a
                folded = key.casefold()  # property "contextmenu" at #index-axes-contextmenu)
                extra = [w for w in id_key(fid, generic, serials).split()
                         if w.casefold() not in folded]
                if extra:
                    key, text = " ".join((*extra, key)), " ".join((*extra, text))
            out.append(Fragment(fid, _bounded(key, MAX_FRAGMENT_KEY_CHARS),
                                _bounded(text, MAX_FRAGMENT_TEXT_CHARS)))

    dts, rows = _css(scope, "dt"), _css(scope, "tr")
    # Elements holding a term, a row or a heading: their parts are fragments of their own.
    containers: set[int] = set()
    for node in (*dts, *rows, *heads):
        up = node.parent
        while up is not None and up.mem_id not in containers:
            containers.add(up.mem_id)
            up = up.parent
    for dt in dts:
        fid = _anchor_id(dt, ids) or _enclosing_id(dt, scope, ids) or _preceding_anchor(dt, ids)
        if fid is None:
            continue
        key = _text(dt)
        dl = dt.parent or dt  # the definition: this term's <dd>s in its list, up to the next <dt>
        add(fid, key, squash(key + " " + _following_text(dt, dl, MAX_FRAGMENT_TEXT_CHARS, ("dt",))))
    for h in heads:
        fid = _anchor_id(h, ids) or _enclosing_id(h, scope, ids) or _preceding_anchor(h, ids)
        if fid is None:
            continue
        key = _text(h)
        add(fid, key, squash(key + " " + _following_text(h, scope, MAX_FRAGMENT_TEXT_CHARS,
                                                          _HEADING_TAGS)))
    for tr in rows:
        cell = _css_first(tr, "td, th")
        if cell is None:
            continue
        fid = _anchor_id(cell, ids) or (tr.id if tr.id in ids else None)
        if fid is not None:
            add(fid, _text(cell), _text(tr))
    for el in _css(scope, "[id], a[name]"):
        if len(out) >= MAX_FRAGMENTS:
            break
        fid = el.id or el.attributes.get("name")
        if not fid or fid in used or el.tag in _KEYED or el.mem_id in containers:
            continue
        text = _text(el)
        if not text:  # an empty named anchor: the words of its id, then what follows it
            if anchors and (key := id_key(fid, generic, serials)):
                add(fid, key, squash(key + " " + _following_text(
                    el, scope, MAX_FRAGMENT_TEXT_CHARS, (*_HEADING_TAGS, "dt", "hr"))),
                    named=True)
            continue
        link = el if el.tag == "a" else _css_first(el, "a[href]")
        if link is not None and not (link.attributes.get("href") or "#").startswith("#") \
                and _text(link) == text:
            continue  # a link to another page (a table of contents): it defines nothing here
        add(fid, text, text, named=True)  # its id names an element, not a term
    return out
