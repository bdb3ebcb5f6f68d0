"""Query-biased snippets (Tombros & Sanderson 1998): the window of the page's text that holds
the most distinct query terms (then the most matches), with the character spans of the matching
words.

Speed (one :class:`SnippetMaker` per query, used for each of its hits):

* the page's stored text is decompressed only as far as it is scanned (SNIPPET_SCAN_CHARS), and
  lower-cased on its UTF-8 bytes (ASCII letters: C speed), then its other characters folded
  as the analyzer folds them (``RÉSEAU`` -> ``reseau``, ``ß`` -> ``ss``:
  :func:`~websift.indexer.folding.match_view`, a ``str.translate``), so a query typed without
  accents finds the accented words; the searcher keeps recent pages so read in an LRU cache;
* candidate places are found with ``str.find`` of each literal (the query's terms, which as
  stems are prefixes of most word forms, and its raw words folded alike), in C; each candidate
  token is confirmed through the analyzer (its folded form, then the text's own, whose accents
  a stemmer may need), with the verdict memoised per query (word forms recur across hits);
* the best window comes from one two-pointer pass over the sorted matches.
"""

from __future__ import annotations

import bisect
import re
import zlib

from websift.indexer.analysis import Analyzer
from websift.indexer.errors import IndexCorrupt
from websift.indexer.folding import (
    MARK_CHARS,
    WORD,
    fold_term,
    fold_text,
    has_cjk,
    match_view,
)
from websift.indexer.settings import SNIPPET_CHARS, SNIPPET_SCAN_CHARS

SNIPPET_MAX_PER_TERM = 40  # places kept per query literal
SNIPPET_MAX_TRIES = 400  # candidate places looked at per literal

_MARK = re.compile(f"[{MARK_CHARS}]")  # a combining mark: it goes with the letter before it
_WORD_CHAR = re.compile(WORD)  # a character of a word: a place after one is no word's start
_Match = tuple[int, int, int]  # (start, end, term number)
# (text, its match view: lower-cased and folded, the view's offsets into the text or None when
# they are the same: folding.match_view)
PageText = tuple[str, str, list[int] | None]


class SnippetMaker:
    """Snippets for the hits of one query."""

    def __init__(self, terms: set[str], words: list[str], analyzer: Analyzer,
                 width: int = SNIPPET_CHARS, scan_chars: int = SNIPPET_SCAN_CHARS) -> None:
        self.width = width
        self.scan_chars = scan_chars
        self.analyzer = analyzer
        self.term_ids = {t: i for i, t in enumerate(sorted(terms))}
        # Raw words that analyse to no query term (stop words, "C") would only cost time.
        self.literals = sorted({t for t in terms if len(t) > 1} | {
            fold_term(fold_text(w)) for w in words if any(t in terms for t in analyzer.terms(w))})
        self._verdict: dict[str, int] = {}  # lower-cased token -> term number, -1 for none

    def _term_of(self, token: str) -> int:
        hit = self._verdict.get(token)
        if hit is None:
            ids = self.term_ids
            hit = next((ids[t] for t in self.analyzer.token(token)[0] if t in ids), -1)
            self._verdict[token] = hit
        return hit

    def _cjk(self, lower: str, lit: str, seen: set[int]) -> list[_Match]:
        """The places of a CJK bigram term inside the runs of ``lower`` (CJK has no word
        boundaries to confirm: the bigram is the term)."""
        out: list[_Match] = []
        tid = self.term_ids[lit]
        at = lower.find(lit)
        while at != -1 and len(out) < SNIPPET_MAX_PER_TERM:
            if at not in seen:
                seen.add(at)
                out.append((at, at + len(lit), tid))
            at = lower.find(lit, at + 1)
        return out

    def matches(self, lower: str, text: str | None = None,
                offsets: list[int] | None = None) -> list[_Match]:
        """Confirmed query-term tokens of ``lower`` (a page's text lower-cased and folded: its
        match view), sorted and without overlaps; at most SNIPPET_MAX_PER_TERM places per
        literal.  ``text``: the page's own text, whose tokens are asked too when their folded
        form is no query term; ``offsets``: the view's offsets into it (None: the same)."""
        found: list[_Match] = []
        seen: set[int] = set()
        token_at, view_term = self.analyzer.token_re.match, self._term_of
        word_char = _WORD_CHAR.match
        folded = text is not None and not text.isascii()

        def term_of(tok: str, at: int, end: int) -> int:
            hit = view_term(tok)
            if hit < 0 and folded:
                assert text is not None
                a, b = (at, end) if offsets is None else (offsets[at], offsets[end])
                own = fold_text(text[a:b])
                if own != tok:
                    hit = view_term(own)
            return hit

        for lit in self.literals:
            if lit in self.term_ids and has_cjk(lit):  # a CJK bigram: found where it stands
                found.extend(self._cjk(lower, lit, seen))
                continue
            # str.find runs in C; each place found is confirmed through the analyzer.
            at, kept, tried = lower.find(lit), 0, 0
            while at != -1 and kept < SNIPPET_MAX_PER_TERM and tried < SNIPPET_MAX_TRIES:
                tried += 1
                if (at == 0 or not word_char(lower, at - 1)) and at not in seen:
                    tok = token_at(lower, at)
                    if tok is not None:
                        tid = term_of(tok.group(0), at, tok.end())
                        if tid >= 0:
                            seen.add(at)
                            found.append((at, tok.end(), tid))
                            kept += 1
                at = lower.find(lit, at + 1)
        found.sort()
        # A match that overlaps the last one is one match with it: a part found inside a
        # compound already matched ("errors" in "fs_errors"), a CJK word's next bigram (which
        # extends it).
        out: list[_Match] = []
        last_end = -1
        for m in found:
            if m[0] >= last_end:
                out.append(m)
                last_end = m[1]
            elif m[1] > last_end:
                out[-1] = (out[-1][0], m[1], out[-1][2])
                last_end = m[1]
        if offsets is not None:  # the view's places as the text's (with the marks after them)
            out = [(offsets[a], offsets[b], t) for a, b, t in out]
        return out

    def make(self, text: str, view: str | None = None, offsets: list[int] | None = None
             ) -> tuple[str, list[tuple[int, int]]]:
        """(snippet, highlight spans inside it) for a page's stored ``text`` (``view`` and
        ``offsets``: its match view, as :func:`read_text` gives them; made here when None)."""
        scan = text[: self.scan_chars]
        if view is None:
            view, offsets = _view_of(scan)
        elif len(scan) < len(text):  # a shorter scan than the text read: the view cut alike
            end = len(scan) if offsets is None else bisect.bisect_left(offsets, len(scan))
            view, offsets = view[:end], None if offsets is None else [*offsets[:end], len(scan)]
        found = self.matches(view, scan, offsets)
        if not found:
            return _cut(scan, 0, self.width)[0], []
        best = best_window(found, len(self.term_ids), self.width)
        begin = max(0, found[best][0] - self.width // 5)
        snippet, offset = _cut(scan, begin, self.width)
        end = offset + len(snippet) - (1 if snippet.endswith("…") else 0)
        shift = offset - (1 if snippet.startswith("…") else 0)
        return snippet, [(s - shift, e - shift) for s, e, _ in found if s >= offset and e <= end]


def best_window(found: list[_Match], n_terms: int, width: int) -> int:
    """Index of the match that starts the best window: most distinct terms among the matches
    ending within ``width`` characters of its start, then most matches; the first on ties.
    One pass with two pointers (``found`` is sorted without overlaps, so its ends are sorted)."""
    counts = [0] * max(n_terms, 1)
    distinct = j = 0
    n = len(found)
    best, best_key = 0, (-1, -1)
    for i in range(n):
        limit = found[i][0] + width
        while j < n and found[j][1] <= limit:
            t = found[j][2]
            if counts[t] == 0:
                distinct += 1
            counts[t] += 1
            j += 1
        key = (distinct, j - i)
        if key > best_key:
            best, best_key = i, key
        t = found[i][2]
        counts[t] -= 1
        if counts[t] == 0:
            distinct -= 1
    return best


def read_text(blob: bytes, chars: int = SNIPPET_SCAN_CHARS, name: str = "") -> PageText:
    """The first ``chars`` characters of a zlib'd UTF-8 page text, and its match view (ASCII
    letters lower-cased on the bytes, the other characters folded: folding.match_view) with
    the view's offsets.  Decompression stops once the bytes out hold that many characters."""
    d = zlib.decompressobj()
    tail, raw = blob, b""
    try:
        while not d.eof:
            have = len(_whole(raw).decode("utf-8", "surrogatepass"))
            if have >= chars:
                raw = _whole(raw)
                break
            more = d.decompress(tail, chars - have)
            tail = d.unconsumed_tail
            if not more and not d.eof:
                raise zlib.error("the stream ends early")
            raw += more
        text = raw.decode("utf-8", "surrogatepass")[:chars]
        return (text, *_view_of(text))
    except (zlib.error, UnicodeError) as exc:
        raise IndexCorrupt(f"stored document {name} is corrupt ({exc})") from None


def _view_of(text: str) -> tuple[str, list[int] | None]:
    """``text``'s match view and offsets (folding.match_view), its ASCII letters lower-cased
    on its UTF-8 bytes (C speed; every character keeps its place)."""
    return match_view(text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass"))


def _whole(raw: bytes) -> bytes:
    """``raw`` without a last character whose bytes are not all there yet."""
    i = len(raw) - 1
    while i >= 0 and i >= len(raw) - 4 and (raw[i] & 0xC0) == 0x80:
        i -= 1
    if i >= 0 and raw[i] >= 0xC0:
        need = 2 if raw[i] < 0xE0 else 3 if raw[i] < 0xF0 else 4
        if len(raw) - i < need:
            return raw[:i]
    return raw


def _cut(text: str, begin: int, width: int) -> tuple[str, int]:
    """text[begin:begin+width] moved to word boundaries, with ellipses; returns (cut, offset)."""
    if has_cjk(text[begin : begin + width]):  # no spaces between words: cut by characters
        end = min(len(text), begin + width)
        # never between a letter and its marks (a Thai vowel sign or tone mark)
        while 0 < begin < end and _MARK.match(text, begin):
            begin += 1
        while end < len(text) and _MARK.match(text, end):
            end += 1
        return ("…" if begin > 0 else "") + text[begin:end] + (
            "…" if end < len(text) else ""), begin
    if begin > 0:
        space = text.find(" ", begin)
        if space != -1 and space - begin < 30:
            begin = space + 1
    end = min(len(text), begin + width)
    if end < len(text):
        space = text.rfind(" ", begin, end)
        if space > begin + width // 2:
            end = space
    piece = text[begin:end]
    return ("…" if begin > 0 else "") + piece + ("…" if end < len(text) else ""), begin
