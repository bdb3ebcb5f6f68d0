"""A page's fragments: the defining places a URL ``#id`` reaches, found in its parsed tree.

The field parser (indexer/parse.py ``parse_html(..., structure=True)``) calls
:func:`extract_fragments`; indexer/fragments.py stores them and picks the one a hit links to.

What a page's ``fragments`` are: ``<dt>`` terms with their ``<dd>``, headings with an anchor
(their own id, a child ``<a id|name>``, a permalink ``<a href="#x">``, or the section they
open), table rows keyed by a first cell with an id, other elements with an id by their own text,
and empty named anchors (``<span id="index-decrement-operator">``, ``<a name="GUC-WORK-MEM">``:
where back-of-book indexes, glossaries and permalinks point) by the words of their id
(:func:`id_key`: Texinfo's ``_002c`` escapes decoded, split at separators and case changes;
numbers, serials, hashes and a prefix the page's ids share are no words; an id of none is no
fragment) with the text that follows them; each bounded, and bounded in number per page.  A
term's, heading's or row's key gains the words of its id that its text lacks (``<dt
id="index-axes-contextmenu">contextmenu</dt>``: ``axes contextmenu``).  Texinfo puts a term's
anchors (``<span id=index-x></span>``) at the end of the previous ``<dd>``: they count as the
anchor of the ``<dt>`` that follows.  A fragment's defining text is made only when asked for
(``texts``: the defs field of IndexSettings.defs "text"); the stored fragments and the default
defs field read ids and keys alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from selectolax.lexbor import LexborHTMLParser, LexborNode

from websift.core.html import squash
from websift.indexer.html_nodes import HEADING_TAGS, css, css_first, node_text
from websift.indexer.settings import (
    GENERIC_ID_PREFIX_MIN_IDS,
    MAX_FRAGMENT_KEY_CHARS,
    MAX_FRAGMENT_TEXT_CHARS,
    MAX_FRAGMENTS,
)

_KEYED = frozenset(("dt", "tr", *HEADING_TAGS))  # elements fragments are found by
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


class Fragment(NamedTuple):
    id: str  # the element id (or <a name>) a URL #id reaches
    key: str  # the term, heading or first cell (bounded)
    # The defining text (dt with its dd, heading with its section's start, the row) when asked
    # for (``texts``: the defs field of IndexSettings.defs "text"), else "".
    text: str


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


def _anchor_id(node: LexborNode, ids: set[str]) -> str | None:
    """The id a URL #fragment reaches at ``node``: its own, a descendant's (``<a id|name>``),
    or the target of a permalink inside it (``<a href="#x">`` with x an id of the page)."""
    own = node.id
    if own and own in ids:
        return own
    inner = css_first(node, "[id], a[name]")
    if inner is not None:
        got = inner.id or inner.attributes.get("name")
        if got and got in ids:
            return got
    for a in css(node, "a[href^='#']"):
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
    if node_text(prev):  # Texinfo's definition lists: the anchors end the previous <dd>
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
        if not last.is_element_node or node_text(last):
            return None
        got = last.id or last.attributes.get("name")
        if got and got in ids:
            return got
        last = last.prev
    return None


# Elements whose text is often longer than a fragment's (a section, a list, a definition): their
# text nodes are walked at once, not after their whole text (on the Python and Octave manuals,
# 30% less time in :func:`_text_upto`, the same texts).
_CONTAINERS = frozenset(("article", "dd", "div", "dl", "ol", "section", "table", "tbody", "ul"))


def _text_upto(node: LexborNode, limit: int) -> str:
    """The text of ``node`` as :func:`node_text` gives it, but only its first text nodes, up to
    about ``limit`` characters: the text after an anchor can be a whole long section.  The
    whole text first (one call into lexbor, no node objects) but for a :data:`_CONTAINERS`
    element: when it is shorter than ``limit`` no text node reaches it, and squashed it is the
    same as the text nodes' one by one, which are taken else."""
    if node.tag not in _CONTAINERS:
        whole = node.text(separator=" ")
        if len(whole) < limit:  # its text nodes' lengths add up to less: the loop takes all
            return squash(whole)
    out: list[str] = []
    size = 0
    for n in node.traverse(include_text=True, skip_empty=True):
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
                 else node_text(sib) if sib.is_text_node else "")
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


def extract_fragments(  # noqa: C901 - one walk over the page's ids for every kind of defining place
        tree: LexborHTMLParser, scope: LexborNode, heads: list[LexborNode], context: str = "",
        *, anchors: bool = True, id_words: bool = True, texts: bool = True,
        dts: list[LexborNode] | None = None, rows: list[LexborNode] | None = None
        ) -> list[Fragment]:
    """The page's definitions and sections reachable by URL #id (see the module doc);
    ``context`` (its title and URL words) tells a generic id prefix from a word; ``anchors``:
    empty named anchors are fragments; ``id_words``: a key gains its id's words; ``texts``
    off: each fragment's text is "" (the same ids and keys, without walking the text after
    each term and heading: only the defs field of IndexSettings.defs "text" reads it).
    ``dts`` and ``rows``: the ``<dt>`` and ``<tr>`` elements of ``scope`` in document order
    when the caller has them already (found in its own walk), else found here."""
    ids: set[str] = set()
    for n in css(tree, "[id], a[name]"):  # one walk for both
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
                    key = " ".join((*extra, key))
                    text = " ".join((*extra, text)) if text else ""
            out.append(Fragment(fid, _bounded(key, MAX_FRAGMENT_KEY_CHARS),
                                _bounded(text, MAX_FRAGMENT_TEXT_CHARS)))

    def defining(key: str, node: LexborNode, stop: LexborNode, until: tuple[str, ...]) -> str:
        """A fragment's text: its key and the text after ``node`` (:func:`_following_text`);
        "" without ``texts``."""
        if not texts:
            return ""
        return squash(key + " " + _following_text(node, stop, MAX_FRAGMENT_TEXT_CHARS, until))

    if dts is None:
        dts = css(scope, "dt")
    if rows is None:
        rows = css(scope, "tr")
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
        key = node_text(dt)
        dl = dt.parent or dt  # the definition: this term's <dd>s in its list, up to the next <dt>
        add(fid, key, defining(key, dt, dl, ("dt",)))
    for h in heads:
        fid = _anchor_id(h, ids) or _enclosing_id(h, scope, ids) or _preceding_anchor(h, ids)
        if fid is None:
            continue
        key = node_text(h)
        add(fid, key, defining(key, h, scope, HEADING_TAGS))
    for tr in rows:
        cell = css_first(tr, "td, th")
        if cell is None:
            continue
        fid = _anchor_id(cell, ids) or (tr.id if tr.id in ids else None)
        if fid is not None:
            add(fid, node_text(cell), node_text(tr) if texts else "")
    for el in css(scope, "[id], a[name]"):
        if len(out) >= MAX_FRAGMENTS:
            break
        fid = el.id or el.attributes.get("name")
        if not fid or fid in used or el.tag in _KEYED or el.mem_id in containers:
            continue
        text = node_text(el)
        if not text:  # an empty named anchor: the words of its id, then what follows it
            if anchors and (key := id_key(fid, generic, serials)):
                add(fid, key, defining(key, el, scope, (*HEADING_TAGS, "dt", "hr")), named=True)
            continue
        link = el if el.tag == "a" else css_first(el, "a[href]")
        if link is not None and not (link.attributes.get("href") or "#").startswith("#") \
                and node_text(link) == text:
            continue  # a link to another page (a table of contents): it defines nothing here
        add(fid, text, text if texts else "", named=True)  # its id names an element, not a term
    return out
