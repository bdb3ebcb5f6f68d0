"""Spelling: "did you mean" from the index's own lexicon.

As Stract and YaCy build theirs, the dictionary is the crawl's words weighted by how many
documents hold them (each segment's lexicon document frequencies, summed): a query word the
index does not hold, or holds in a page or two where a close word is held by many, is replaced
by the most frequent word within a small edit distance (optimal string alignment: a swap of two
letters is one edit, ``asyncoi`` -> ``asyncio``).  Candidates are scored with rapidfuzz.

The lexicon holds analysed terms (folded, stemmed per language); a suggestion is shown in the
surface form the titles of the index use most for that term (``sorting`` for ``sort``), else
as the term.  Words holding CJK, digits or symbols are never corrected (CJK terms are bigrams:
an edit of one is another word, not a typo).

A :class:`Speller` is built from a list of open segments and kept per index snapshot (the
server builds it lazily on the first query that needs it); it is memory only, never on disk.
Each segment's part (:class:`SegmentWords`: its lexicon's document frequencies, the words its
titles give each term) is read once and kept while the segment serves, so a new generation
costs its new segments' parts, merged into the previous generation's (:class:`Lexicon`) when
it appended them: the same speller as one built from nothing.  Every term within the edit
distance is a candidate, so the answer does not depend on the order of the lexicon.  A query
of more than ``MAX_SPELLED_WORDS`` words is not corrected: each word costs a search of the
lexicon, and a long query (a program's ``w1 OR w2 ...``) would hold the server's interpreter
for a second.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import OSA
from rapidfuzz.process import extract

from websift.indexer.analysis import Analyzer
from websift.indexer.folding import MARK_CHARS, fold_text, has_cjk
from websift.indexer.languages import analysis_language
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_format import DF

MIN_WORD_CHARS = 3  # shorter words are never corrected
MIN_DF = 2  # a term in fewer documents is no suggestion (a typo in one page)
RARE_DF = 2  # a query word held by at most this many documents may still be corrected...
RARE_RATIO = 20  # ...to a word held by this many times more
LONG_WORD_CHARS = 6  # words this long may be two edits away, shorter ones one
MAX_SPELLED_WORDS = 6  # a query with more words that could be corrected gets no suggestion
NEAREST_MEMO = 16_384  # a speller's answers kept (words asked again: a probe re-asking them)


_LETTERS = re.compile(rf"(?:(?![\d_])[\w{MARK_CHARS}])+\Z")  # letters and combining marks


@dataclass(frozen=True)
class Correction:
    """The query as typed with its misspelt words replaced, and the words replaced."""

    query: str
    words: tuple[tuple[str, str], ...]  # (typed, suggested)
    # Every word replaced is in no page: the results as typed cannot hold it (the search page
    # then shows the correction's results, api/routes/web.py).
    unfound: bool = False


@dataclass(frozen=True)
class Near:
    """What an index holds of a folded query word for a correction: the document frequency of
    its term, and every term near enough to replace it (``(term, edits, df)``, by term), none
    when the word is held too widely to be corrected.  The same word's ``Near`` of several
    disjoint indexes add up (:meth:`plus`) to that of one index over them all, but for a term
    held by fewer than MIN_DF documents in each (no index offers it)."""

    df: int
    terms: tuple[tuple[str, int, int], ...] = ()

    def plus(self, other: Near) -> Near:
        edits: dict[str, int] = {}
        dfs: Counter[str] = Counter()
        for term, e, d in (*self.terms, *other.terms):
            edits[term] = min(edits.get(term, e), e)  # the same strings: the same edits
            dfs[term] += d
        return Near(self.df + other.df, tuple((t, edits[t], dfs[t]) for t in sorted(edits)))

    def best(self) -> str | None:
        """The term to suggest: the fewest edits, then the most documents, then the first
        in order; only a term held by RARE_RATIO times the word's documents (and at least
        MIN_DF), and only for a word held by at most RARE_DF documents."""
        if self.df > RARE_DF:
            return None
        floor = max(MIN_DF, self.df * RARE_RATIO)
        found = [(e, -d, t) for t, e, d in self.terms if d >= floor]
        return min(found)[2] if found else None


def _correctable(word: str) -> bool:
    """A word of letters (with the combining marks of its script: ``हिन्दी``), not CJK."""
    return len(word) >= MIN_WORD_CHARS and (word.isalpha() or (
        not word.isascii() and _LETTERS.match(word) is not None)) and not has_cjk(word)


class Speller:
    """Document frequencies of the index's plain-word terms and their title surface forms."""

    def __init__(self, df: dict[str, int], surfaces: dict[str, str],
                 by_len: dict[int, list[str]] | None = None,
                 seen: Mapping[str, Counter[str]] | None = None) -> None:
        """``surfaces``: each term's most common title word; ``seen``: each term's title words
        counted (:meth:`title_surface` takes the query language's among them)."""
        self.df = df
        self.surfaces = surfaces
        self._seen = seen or {}
        # Candidates by length: a word is compared with terms at most two letters longer or
        # shorter only.  ``by_len``: these pools already made (:meth:`Lexicon.extended`).
        if by_len is None:
            by_len = defaultdict(list)
            for term, n in df.items():
                if n >= MIN_DF and _correctable(term):
                    by_len[len(term)].append(term)
        self._by_len = dict(by_len)
        # (the analyzer's switches and language, word) -> :meth:`nearest`'s answer: a speller
        # never changes, and a word asked again (a program re-asking its unfound words every
        # second) costs a search of the pools each time otherwise.  Filled up to NEAREST_MEMO.
        self._nearest: dict[tuple[tuple[object, ...], str], str | None] = {}

    @property
    def size(self) -> int:
        return sum(len(v) for v in self._by_len.values())

    def nearest(self, word: str, analyzer: Analyzer,
                surface_of: Callable[[str], str | None] | None = None) -> str | None:
        """The suggested surface word for a folded query ``word``, or None (it is right, or
        nothing is near enough).  ``surface_of``: how a term no title holds is written in
        the pages (Searcher.surface_of), else it is shown as the term."""
        if not _correctable(word):
            return None
        key = ((analyzer.lang, analyzer.technical, analyzer.keep_stops, analyzer.operators,
                analyzer.stoplist), word)
        memo = self._nearest
        if key in memo:
            return memo[key]
        near = self.near(word, analyzer)
        term = None if near is None else near.best()
        found = term if term is None else self.surface(term, surface_of, analyzer)
        if len(memo) < NEAREST_MEMO:
            memo[key] = found
        return found

    def surface(self, term: str, surface_of: Callable[[str], str | None] | None = None,
                analyzer: Analyzer | None = None) -> str:
        """How ``term`` is shown: as the titles write it most (:meth:`title_surface`), else as
        ``surface_of`` finds it in a page, else as the term."""
        return self.title_surface(term, analyzer) or (
            surface_of(term) if surface_of is not None else None) or term

    def title_surface(self, term: str, analyzer: Analyzer | None = None) -> str | None:
        """The title word most often giving ``term``; with the query's ``analyzer``, the most
        common one that its language analyses to the term, when one does (one lexicon holds
        every language's terms: Spanish ``interactivo`` and English ``interactive`` are both
        ``interact``, and a Spanish query is corrected to the Spanish word)."""
        counts = self._seen.get(term)
        if analyzer is not None and counts is not None and len(counts) > 1:
            for word, _ in counts.most_common():
                if analyzer.terms(word) == [term]:
                    return word
        return self.surfaces.get(term)

    def near(self, word: str, analyzer: Analyzer) -> Near | None:
        """What this index holds for correcting the folded query ``word`` (:class:`Near`;
        None: a word never corrected, not one term)."""
        if not _correctable(word):
            return None
        terms = analyzer.terms(word)
        if len(terms) != 1:
            return None
        own = self.df.get(terms[0], 0)
        if own > RARE_DF:
            return Near(own)
        max_edits = 2 if len(word) >= LONG_WORD_CHARS else 1
        edits: dict[str, int] = {}
        for probe in {word, terms[0]}:  # the word as typed and its stem, against the stems
            for n in range(len(probe) - max_edits, len(probe) + max_edits + 1):
                pool = self._by_len.get(n)
                if not pool:
                    continue
                # every term near enough (no limit): the answer is the same whatever the
                # order of the pool
                for term, e, _ in extract(probe, pool, scorer=OSA.distance,
                                          score_cutoff=max_edits, limit=None):
                    if term != terms[0]:
                        edits[term] = min(edits.get(term, int(e)), int(e))
        return Near(own, tuple((t, edits[t], self.df[t]) for t in sorted(edits)))

    def correct(self, query: str, analyzer: Analyzer,
                surface_of: Callable[[str], str | None] | None = None) -> Correction | None:
        """The query with each misspelt word replaced (its other words, operators and quotes
        kept as typed), or None when every word is fine or it has too many words
        (:func:`spelled_words`).  ``surface_of``: as :meth:`nearest`'s."""
        fix = correct_query(query, lambda w: self.nearest(w, analyzer, surface_of))
        if fix is None:
            return None
        unfound = all(self.df.get(analyzer.terms(fold_text(typed))[0], 0) == 0
                      for typed, _ in fix.words)
        return Correction(fix.query, fix.words, unfound)


def looked_up_words(query: str) -> list[str]:
    """The folded words of ``query`` a correction looks up (:func:`correct_query`), in order."""
    out: list[str] = []
    for token in query.split(" "):
        core = _parts(token)[0]
        if _looked_up(core):
            out.append(fold_text(core))
    return out


def correct_query(query: str, nearest: Callable[[str], str | None]) -> Correction | None:
    """``query`` with each looked-up word (not an exclusion or a filter) that ``nearest``
    (folded word -> its suggestion, or None) replaces replaced, its quotes and brackets and the
    other words kept as typed; None when none is, or the query has more than
    MAX_SPELLED_WORDS words to look up (:func:`spelled_words`)."""
    if spelled_words(query) > MAX_SPELLED_WORDS:
        return None
    out: list[str] = []
    words: list[tuple[str, str]] = []
    for token in query.split(" "):
        core, lead, tail = _parts(token)
        folded = fold_text(core)
        fix = None if not _looked_up(core) else nearest(folded)
        if fix is None or fix == folded:
            out.append(token)
            continue
        words.append((core, fix))
        out.append(lead + fix + tail)
    if not words:
        return None
    return Correction(" ".join(out), tuple(words))


def _parts(token: str) -> tuple[str, str, str]:
    """A query token's word, and the quotes and brackets before and after it."""
    core = token.strip('"()')
    lead = token[: len(token) - len(token.lstrip('"('))]
    return core, lead, token[len(lead) + len(core):]


def _looked_up(core: str) -> bool:
    """Whether :meth:`Speller.correct` looks a query word up (not an exclusion or a filter)."""
    return not core.startswith("-") and ":" not in core


def spelled_words(query: str) -> int:
    """How many words of ``query`` a correction would look up in the lexicon."""
    return sum(1 for token in query.split(" ")
               if _looked_up(core := _parts(token)[0]) and _correctable(fold_text(core)))


@dataclass(frozen=True)
class SegmentWords:
    """One segment's part of a :class:`Speller`: the document frequency of each term of its
    lexicon, and for each plain term the folded title words that gave it, counted (both in
    the order the segment holds them)."""

    df: dict[str, int]
    surfaces: dict[str, Counter[str]]

    @classmethod
    def of(cls, seg: SegmentReader, analyzer: Analyzer) -> SegmentWords:
        counts = np.asarray(seg.lexicon[:, DF], dtype=np.int64).tolist()
        df: dict[str, int] = {}
        for term, n in zip(seg.terms(), counts, strict=True):
            df[term] = df.get(term, 0) + n
        return cls(df, surface_counts(titled([seg]), analyzer))


@dataclass(frozen=True)
class Lexicon:
    """The segments' parts merged, with their :class:`Speller`: what a generation's speller
    is made of, extended by the segments a cut appends without merging again."""

    parts: tuple[SegmentWords, ...]
    df: dict[str, int]
    seen: dict[str, Counter[str]]  # each plain term's title words, counted in the index's order
    speller: Speller
    whole: bool = True  # merged from every part (False: extended by appended ones)

    @classmethod
    def of(cls, parts: Sequence[SegmentWords]) -> Lexicon:
        df: dict[str, int] = dict(parts[0].df) if parts else {}
        for part in parts[1:]:
            for term, n in part.df.items():
                df[term] = df.get(term, 0) + n
        seen: dict[str, Counter[str]] = defaultdict(Counter)
        for part in parts:
            for term, words in part.surfaces.items():
                seen[term].update(words)
        seen = dict(seen)
        return cls(tuple(parts), df, seen, Speller(df, _most_common(seen), seen=seen))

    def extended(self, parts: Sequence[SegmentWords]) -> Lexicon:
        """The lexicon of ``parts``: when they are this one's followed by new ones (a cut
        appended segments), only the new ones are merged in (the same dictionary, surface
        forms and candidates as :meth:`of` makes), else all are merged again."""
        n = len(self.parts)
        if len(parts) < n or any(a is not b for a, b in zip(parts, self.parts, strict=False)):
            return Lexicon.of(parts)
        df, seen = dict(self.df), dict(self.seen)  # copies: the old speller may still serve
        surfaces = dict(self.speller.surfaces)
        pools = self.speller._by_len
        grown: dict[int, list[str]] = {}
        for part in parts[n:]:
            for term, k in part.df.items():
                before = df.get(term, 0)
                df[term] = before + k
                if before < MIN_DF <= before + k and _correctable(term):
                    size = len(term)
                    if size not in grown:
                        grown[size] = list(pools.get(size, ()))
                    grown[size].append(term)
            for term, words in part.surfaces.items():
                merged = seen[term] = Counter(seen.get(term, ()))
                merged.update(words)
                surfaces[term] = merged.most_common(1)[0][0]
        speller = Speller(df, surfaces, {**pools, **grown}, seen=seen)
        return Lexicon(tuple(parts), df, seen, speller, whole=False)


def titles(segments: Sequence[SegmentReader]) -> list[str]:
    """The title of every document of the segments."""
    return [title for title, _ in titled(segments)]


def _most_common(seen: dict[str, Counter[str]]) -> dict[str, str]:
    """Each term -> its most counted word (the first seen of a tie)."""
    return {term: c.most_common(1)[0][0] for term, c in seen.items()}


def titled(segments: Sequence[SegmentReader]) -> list[tuple[str, str]]:
    """The title and language (``""``: unknown) of every document of the segments."""
    return [(head["title"], head["lang"]) for seg in segments
            for head in map(seg.head, range(len(seg.doc_ids)))]


def surface_counts(titles: Iterable[tuple[str, str]], analyzer: Analyzer
                   ) -> dict[str, Counter[str]]:
    """Each plain term of the titles -> the folded words that gave it, counted.  A title's
    words are analysed as its page's were (``analyzer``'s switches, the page language's
    stemmer), so a Russian page's term ``установк`` is shown as its title's ``установка``."""
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    analyzers: dict[str, Analyzer] = {analyzer.lang: analyzer}
    # (analysis language, word) -> its one term (None: not one plain term)
    term_of: dict[tuple[str, str], str | None] = {}
    for title, lang in titles:
        alang = analysis_language(lang or None)
        for raw in fold_text(title).split():
            word = raw.strip(".,:;!?()[]{}'\"")
            key = (alang, word)
            if key in term_of:  # titles repeat their words: each analysed once
                term = term_of[key]
            else:
                if alang not in analyzers:
                    analyzers[alang] = analyzer.for_lang(alang)
                terms = analyzers[alang].terms(word) if _correctable(word) else []
                term = term_of[key] = terms[0] if len(terms) == 1 else None
            if term is not None:
                seen[term][word] += 1
    return dict(seen)
