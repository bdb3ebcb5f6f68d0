"""The one analyzer, used at index time and at query time (Whoosh's StemmingAnalyzer chain).

Chain: Whoosh's tokenizer regex ``\\w+(\\.?\\w+)*`` -> lower case -> drop tokens shorter than 2 or
longer than 64 characters -> drop stop words -> Porter stemming (``whoosh.lang.porter.stem``).

Two choices of ours on top of Whoosh's chain:

* Dotted and underscored names (``unittest.mock``, ``PyConfig.filesystem_errors``) are indexed
  twice: as the compound itself (lower case, unstemmed), at the position of its first part, and
  as their parts (stemmed), at consecutive positions.  A query for the exact name then matches
  the rare compound term (high IDF), and a query for one part still finds the page.
* Stop words are left out of the lexicon but still take a position, so a phrase query keeps its
  gaps ("to be or not to be" matches only the words at the right distances).

Speed: analysis of a raw token is memoised per :class:`Analyzer` (token -> terms and offsets),
so the Porter stemmer runs once per distinct word form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import accumulate

from whoosh.analysis import STOP_WORDS
from whoosh.lang.porter import stem

from indexer.settings import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS, STEM_CACHE_SIZE

TOKEN_RE = re.compile(r"\w+(?:\.?\w+)*")
_PART_SPLIT = re.compile(r"[._]+")

# What one raw token becomes: its terms, each term's offset from the token's first position, and
# how many positions the token takes.
_Analysed = tuple[tuple[str, ...], tuple[int, ...], int]
_NOTHING: _Analysed = ((), (), 1)


class Analyzer:
    """Whoosh's StemmingAnalyzer chain plus compound names; memoised per instance."""

    def __init__(self, stoplist: Iterable[str] = STOP_WORDS, cache_size: int = STEM_CACHE_SIZE):
        self.stoplist = frozenset(stoplist)
        self.cache_size = cache_size
        self._cache: dict[str, _Analysed] = {}
        self._stems: dict[str, str] = {}

    def _term(self, word: str) -> str | None:
        if len(word) < MIN_TOKEN_CHARS or len(word) > MAX_TOKEN_CHARS or word in self.stoplist:
            return None
        # The parts of compound names repeat far more than the compounds: stem each word once.
        term = self._stems.get(word)
        if term is None:
            term = stem(word)
            if len(self._stems) < self.cache_size:
                self._stems[word] = term
        return term

    def analyse_token(self, token: str) -> _Analysed:
        """Terms, offsets and width of one lower-cased raw token (not memoised)."""
        if "." not in token and "_" not in token:
            term = self._term(token)
            return _NOTHING if term is None else ((term,), (0,), 1)
        parts = [p for p in _PART_SPLIT.split(token) if p]
        terms: list[str] = []
        offsets: list[int] = []
        if MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS and len(parts) > 1:
            terms.append(token)
            offsets.append(0)
        for i, part in enumerate(parts):
            term = self._term(part)
            if term is not None:
                terms.append(term)
                offsets.append(i)
        return tuple(terms), tuple(offsets), max(1, len(parts))

    def token(self, token: str) -> _Analysed:
        """Terms, offsets and width of one lower-cased raw token (memoised)."""
        hit = self._cache.get(token)
        if hit is None:
            hit = self.analyse_token(token)
            if len(self._cache) < self.cache_size:
                self._cache[token] = hit
        return hit

    def positions(
        self, text: str, start: int = 0, limit: int | None = None
    ) -> tuple[list[str], list[int], int]:
        """Terms of ``text`` with their positions; returns (terms, positions, next position)."""
        raws = TOKEN_RE.findall(text.lower())
        if limit is not None and len(raws) > limit:
            raws = raws[:limit]
        get, slow = self._cache.get, self.token
        entries = [get(r) or slow(r) for r in raws]
        if all(e[2] == 1 for e in entries):  # no compound: position = index of the raw token
            terms = [e[0][0] for e in entries if e[0]]
            positions = [start + i for i, e in enumerate(entries) if e[0]]
            return terms, positions, start + len(entries)
        starts = list(accumulate((e[2] for e in entries), initial=start))
        terms = [t for e in entries for t in e[0]]
        positions = [p + o for e, p in zip(entries, starts, strict=False) for o in e[1]]
        return terms, positions, starts[-1]

    def terms(self, text: str) -> list[str]:
        """The terms of ``text`` in order (query-time form, no positions)."""
        out: list[str] = []
        analyse = self.token
        for raw in TOKEN_RE.findall(text.lower()):
            out.extend(analyse(raw)[0])
        return out


def analyze(text: str) -> list[str]:
    """The terms of ``text``: the one analyzer at index and query time (a fresh memo per call;
    long-lived callers keep an :class:`Analyzer`)."""
    return Analyzer().terms(text)
