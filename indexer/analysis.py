"""The one analyzer, used at index time and at query time (Whoosh's StemmingAnalyzer chain, made
for technical text).

Chain: NFKC and case folding (indexer/folding.py) -> a tokenizer regex (below) -> drop tokens
shorter than 2 or longer than 64 characters -> stemming in the page's language (Porter,
``whoosh.lang.porter.stem``, for English and pages of unknown language; Snowball for the
languages it covers; none for others: indexer/languages.py) -> diacritics folded
(``réseau`` and ``reseau`` are one term).  A run of CJK characters becomes its bigrams
(indexer/folding.py).  One :class:`Analyzer` analyses one language (``Analyzer(lang="fr")``);
English's analysis is the same as before languages were told apart, but for folding.

Our choices on top of Whoosh's chain:

* Dotted and underscored names (``unittest.mock``, ``PyConfig.filesystem_errors``) are indexed
  twice: as the compound itself (lower case, unstemmed), at the position of its first part, and
  as their parts (stemmed), at consecutive positions.  A query for the exact name then matches
  the rare compound term (high IDF), and a query for one part still finds the page.
* Technical tokens, words that carry symbols (``~d``, ``--set``, ``%s``, ``#include``, ``c++``,
  ``.bashrc``, ``x<=y``, ``**kwargs``, ``std::vector``, ``-site``) and short runs of symbols alone
  (``<=``, ``**``, ``->``), are indexed the same way: the whole token lower-cased and unstemmed
  ("a technical term", at the position of its first part) and its words (each as above, so
  ``--opt=os.path`` also gives ``os.path``).  The symbols a token may carry are
  ``~ % # + - < > = ! & | * ^ $ @ / \\`` anywhere, ``:`` and ``.`` between words, and one ``.``
  in front (``.bashrc``; a sentence's full stop or ``...`` is not part of a token).
* Operators (analyzer version 3): ASCII punctuation as code is written with it, outside a
  technical token, is a term of its own: a run of up to MAX_SYMBOLS_ONLY symbols (``+``,
  ``.^``, ``&&``, ``<=``, ``.'``, ``...``), brackets, comma and semicolon one character each; a
  longer run is a rule, not a term.  An operator takes no position (it sits at the next word's),
  so words keep the positions they had without operators (phrases and proximity as before), and
  it adds nothing to a field's length.  Every hit is indexed in the fields where code is
  defined (title, headings, defs: OPERATOR_FIELDS), only each operator's first hit per field
  elsewhere (the body's formulas and prose punctuation would outweigh the defining page;
  indexer/hits.py).  A query searches the operators written apart or quoted
  (``+``, ``@ function handle``, ``"x + y"``), not a word's punctuation (``handle,``:
  indexer/query.py).  No list of a language's operators: the same rule for any site.
* Stop words (Whoosh's list) are kept in the index as terms, like any word; the query decides
  when they count (indexer/query.py: when the query is mostly stop words, and in quoted
  phrases).  They add nothing to a field's length (indexer/hits.py ``counted``), so BM25F's
  length normalisation is as before.  ``Analyzer(keep_stops=False)`` leaves them out of the
  lexicon but still gives them a position, as before (so a phrase query keeps its gaps).

The three policies have switches (``technical``, ``keep_stops``, ``operators``: the analyzer_*
fields of indexer/settings.py's IndexSettings, for the ablation); every segment records them
(its meta's ``index_settings``, and :func:`analyzer_version`), and a searcher analyses queries
with its segments' (refusing segments analysed differently from each other: a query would
silently find nothing in some).

Speed: analysis of a raw token is memoised per :class:`Analyzer` (token -> terms and offsets),
so the Porter stemmer runs once per distinct word form.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import accumulate

from websift.indexer.folding import (
    MARK_CHARS,
    WORD,
    bigrams,
    fold_term,
    fold_text,
    has_cjk,
    script_runs,
)
from websift.indexer.languages import ENGLISH, stemmer_for, stoplist_for
from websift.indexer.settings import (
    ANALYZER_VERSION,
    DEFAULT_INDEX_SETTINGS,
    MAX_SYMBOLS_ONLY,
    MAX_TOKEN_CHARS,
    MIN_TOKEN_CHARS,
    STEM_CACHE_SIZE,
    IndexSettings,
)

# Whoosh's tokenizer (analyzer version 1), a word's combining marks in it (version 5: WORD)
PLAIN_TOKEN_RE = re.compile(rf"{WORD}+(?:\.?{WORD}+)*")
_SYM = r"~%#+\-<>=!&|*^$@/\\"  # symbols a technical token may carry
_SYM_CHARS = "~%#+-<>=!&|*^$@/\\"
# Symbols alone: an operator ("<=", "**", "->", "<<="), not a rule or a shout ("!!!", "---").
_TRIPLES = "|".join(re.escape(c * 3) for c in _SYM_CHARS)
_TECH_WORD = rf"[{_SYM}]{{0,{MAX_SYMBOLS_ONLY}}}(?:(?<!\.)\.)?{WORD}+(?:[{_SYM}.:]+{WORD}+)*[{_SYM}]*"
TECH_TOKEN_RE = re.compile(
    rf"{_TECH_WORD}|(?<![\w{MARK_CHARS}.{_SYM}])(?!{_TRIPLES})[{_SYM}]{{2,{MAX_SYMBOLS_ONLY}}}"
    rf"(?![\w{MARK_CHARS}.{_SYM}])")
# Operators (analyzer version 3): ASCII punctuation as code is written with it.  Brackets,
# comma and semicolon are one character each ("f(x)", "{1, 2}"); the other symbols make runs
# ("+", ".^", "&&", "<=", "!=", ".'", "..."), quotes included (a transpose, a docstring's
# triple quote).  A run longer than MAX_SYMBOLS_ONLY is a rule ("-----"): nothing.  Symbols a
# technical token carries stay in that token.
_DELIMS = "()[]{},;"
_OP_CHARS = "!\"#$%&'*+-./:<=>?@\\^`|~"
_OP_ALTS = rf"|[{re.escape(_OP_CHARS)}]+|[{re.escape(_DELIMS)}]"
_SYMBOLS_FULL = re.compile(rf"[{re.escape(_OP_CHARS + _DELIMS)}]+\Z")
_PART_SPLIT = re.compile(r"[._]+")
# PLAIN_TOKEN_RE's language, written so a failed match cannot backtrack exponentially (a dot
# only between two word characters).
_PLAIN_FULL = re.compile(rf"(?:{WORD}|(?<={WORD})\.(?={WORD}))+\Z")
# A character that makes a term a compound or technical one: not a letter, digit or mark.
_NOT_WORD = re.compile(rf"[^\w{MARK_CHARS}]|_")


def analyzer_version(settings: IndexSettings = DEFAULT_INDEX_SETTINGS) -> str:
    """What an index records of the analysis it was built with
    ("3+technical+stops+ops@title+headings+defs/first": operators in those fields, their first
    hit per field elsewhere; "+ops": in every field)."""
    operator_fields = settings.operator_field_names
    ops = "" if not settings.analyzer_operators else "+ops" if operator_fields is None else (
        "+ops@" + "+".join(operator_fields) + (
            "/first" if settings.operator_elsewhere == "first" else ""))
    return str(ANALYZER_VERSION) + ("+technical" if settings.analyzer_technical else "") + (
        "+stops" if settings.analyzer_stops else "") + ops


def token_re(technical: bool, operators: bool) -> re.Pattern[str]:
    """The tokenizer: Whoosh's, or with technical tokens; with operators after either."""
    if not operators:
        return TECH_TOKEN_RE if technical else PLAIN_TOKEN_RE
    if technical:  # the technical alternatives, but symbols alone are operator runs
        return re.compile(_TECH_WORD + _OP_ALTS)
    return re.compile(PLAIN_TOKEN_RE.pattern + _OP_ALTS)


def is_operator(term: str) -> bool:
    """A term of symbols alone (``+``, ``.^``, ``{``)."""
    return _SYMBOLS_FULL.match(term) is not None


# What one raw token becomes: its terms, each term's offset from the token's first position, and
# how many positions the token takes.
_Analysed = tuple[tuple[str, ...], tuple[int, ...], int]
_NOTHING: _Analysed = ((), (), 1)


def is_whole(term: str) -> bool:
    """A compound or technical term (``os.path``, ``--set``), not a stemmed word (a word's
    combining marks are its letters: ``हिन्दी``)."""
    return not term.isalnum() and _NOT_WORD.search(term) is not None


class Analyzer:
    """Whoosh's StemmingAnalyzer chain plus compound names and technical terms; memoised per
    instance."""

    def __init__(self, stoplist: Iterable[str] | None = None,
                 cache_size: int = STEM_CACHE_SIZE, *, technical: bool = True,
                 keep_stops: bool = True, operators: bool = True, lang: str = ENGLISH) -> None:
        """``lang``: an analysis language (indexer/languages.py ``analysis_language``)."""
        self.lang = lang
        self.stem = stemmer_for(lang)
        self.stoplist = stoplist_for(lang) if stoplist is None else frozenset(stoplist)
        self.cache_size = cache_size
        self.technical = technical
        self.keep_stops = keep_stops
        self.operators = operators
        self.token_re = token_re(technical, operators)
        # The terms stop words become (the query scores them only in some queries).
        self.stop_terms = frozenset(
            fold_term(self.stem(w)) for w in self.stoplist
            if MIN_TOKEN_CHARS <= len(w) <= MAX_TOKEN_CHARS)
        self._cache: dict[str, _Analysed] = {}
        self._stems: dict[str, str] = {}

    @classmethod
    def of(cls, settings: IndexSettings, lang: str = ENGLISH) -> Analyzer:
        """The analyzer of ``settings`` (its analyzer_* switches) for analysis language
        ``lang``."""
        return cls(technical=settings.analyzer_technical, keep_stops=settings.analyzer_stops,
                   operators=settings.analyzer_operators, lang=lang)

    def for_lang(self, lang: str) -> Analyzer:
        """This analyzer's switches for another analysis language."""
        return Analyzer(cache_size=self.cache_size, technical=self.technical,
                        keep_stops=self.keep_stops, operators=self.operators, lang=lang)

    def _term(self, word: str) -> str | None:
        if len(word) < MIN_TOKEN_CHARS or len(word) > MAX_TOKEN_CHARS or (
                not self.keep_stops and word in self.stoplist):
            return None
        # The parts of compound names repeat far more than the compounds: stem each word once.
        term = self._stems.get(word)
        if term is None:
            term = fold_term(self.stem(word))
            if not term:  # diacritics alone (harakat, points) or a tatweel: no term
                return None
            if len(self._stems) < self.cache_size:
                self._stems[word] = term
        return term

    # The term of a plain word (letters and digits, no dot or underscore): its one term in
    # :meth:`token`'s analysis, None when it has none (too short or long, a stop word left out).
    word_term = _term

    def _plain(self, token: str) -> _Analysed:
        """A token of Whoosh's tokenizer: a word, or a dotted/underscored compound."""
        stems = self._stems  # a word found there passed _term's checks: its term
        if "." not in token and "_" not in token:
            term = stems.get(token)
            if term is None:
                term = self._term(token)
            return _NOTHING if term is None else ((term,), (0,), 1)
        parts = [p for p in _PART_SPLIT.split(token) if p]
        terms: list[str] = []
        offsets: list[int] = []
        # "__init__", "_private": underscores around one word make a technical term too.
        whole = len(parts) > 1 or (self.technical and parts != [token])
        if MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS and whole:
            terms.append(fold_term(token))
            offsets.append(0)
        for i, part in enumerate(parts):
            term = stems.get(part)
            if term is None:
                term = self._term(part)
            if term is not None:
                terms.append(term)
                offsets.append(i)
        return tuple(terms), tuple(offsets), max(1, len(parts))

    def analyse_token(self, token: str) -> _Analysed:
        """Terms, offsets and width of one lower-cased raw token (not memoised)."""
        if token.isascii() and token.isalnum():  # a plain word (most): no symbols, no CJK
            return self._plain(token)
        if self.operators and _SYMBOLS_FULL.match(token):
            # No width: the next word keeps its position (phrases and proximity as before).
            return ((token,), (0,), 0) if len(token) <= MAX_SYMBOLS_ONLY else ((), (), 0)
        if not token.isascii() and has_cjk(token):
            return self._cjk(token)
        if not self.technical or _PLAIN_FULL.match(token):
            return self._plain(token)
        # A technical token: the whole, then the words inside it, each as a plain token.
        terms: list[str] = []
        offsets: list[int] = []
        if MIN_TOKEN_CHARS <= len(token) <= MAX_TOKEN_CHARS:
            terms.append(fold_term(token))
            offsets.append(0)
        width = 0
        for seg in PLAIN_TOKEN_RE.findall(token):
            seg_terms, seg_offsets, seg_width = self._plain(seg)
            terms.extend(seg_terms)
            offsets.extend(width + o for o in seg_offsets)
            width += seg_width
        return tuple(terms), tuple(offsets), max(1, width)

    def _cjk(self, token: str) -> _Analysed:
        """A token holding CJK: its CJK runs as bigrams, one position each, the other parts
        analysed as tokens of their own, laid end to end."""
        terms: list[str] = []
        offsets: list[int] = []
        width = 0
        for part, cjk in script_runs(token):
            if cjk:
                grams = bigrams(part)
                terms.extend(grams)
                offsets.extend(range(width, width + len(grams)))
                width += len(grams)
                continue
            for sub in self.token_re.findall(part):
                t, o, w = self.analyse_token(sub)
                terms.extend(t)
                offsets.extend(width + x for x in o)
                width += w
        return tuple(terms), tuple(offsets), max(1, width)

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
        raws = self.token_re.findall(fold_text(text))
        if limit is not None and len(raws) > limit:
            raws = raws[:limit]
        get, slow = self._cache.get, self.token
        entries = [get(r) or slow(r) for r in raws]
        if all(e[2] == 1 and len(e[0]) <= 1 for e in entries):  # position = raw token index
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
        for raw in self.token_re.findall(fold_text(text)):
            out.extend(analyse(raw)[0])
        return out


def analyze(text: str) -> list[str]:
    """The terms of ``text``: the one analyzer at index and query time (a fresh memo per call;
    long-lived callers keep an :class:`Analyzer`)."""
    return Analyzer().terms(text)
