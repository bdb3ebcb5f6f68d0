"""The query language: words, "phrases", -exclusions, site:host, OR.

    tkinter font                 both words; pages with more of the query's terms rank first
    "context manager"            the words next to each other, in this order (from positions)
    mock -async                  no page containing "async" (a "-" right before a letter, digit
                                 or quote excludes; "--async", "-%x" and "c++" are words)
    "-site"                      the technical word "-site" itself: quote a word that starts
                                 with one "-" to search for it
    -"event loop"                no page containing that phrase
    site:docs.python.org         only pages of that host or its subdomains (-site: excludes)
    asyncio OR trio              either word; counts as one part of the query
    lang:fr                      analyse the query as French (indexer/languages.py), whatever
                                 its words look like

Matching is an OR of the terms ranked by BM25F with a coordination factor (a page that matches
a larger share of the query's terms is preferred), as Lucene's classic similarity does: an AND
would lose the manual's index entries ("PyConfig.filesystem_errors C member"), whose words are
not all on the target page, and plain OR lets pages with one frequent word win.  Quoted phrases
are required.  Every word goes through the one analyzer (indexer/analysis.py), which keeps
technical tokens whole (``--set``, ``%s``, ``c++``, ``<=``) beside their words.

Operators are words too: symbols written apart (``+``, ``.^``, ``@ function handle``) or
inside a quoted phrase (``"x + y"``) are searched; punctuation on a word (``handle,``, ``f(x)``)
is not.  A query of symbols alone is never refused.

Stop words ("if", "not", "in", "the"...) are in the index; a query scores them when its plain
words are mostly stop words ("if", "not in": share above STOP_SCORE_SHARE) and a quoted phrase
matches them in place ("to be or not to be"); otherwise they are left out of the scoring units,
as Whoosh's analyzer drops them, and count as proximity evidence with the query words next to
them ("if statement": pages where "if" stands before "statement" gain; ``stop_pairs``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from websift.indexer.analysis import Analyzer, is_operator, is_whole
from websift.indexer.errors import QueryError
from websift.indexer.settings import (
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    MAX_SYMBOLS_ONLY,
    STOP_SCORE_SHARE,
)

# A minus sign directly before a word character or a quote excludes it; "--name" (a command-line
# option) and "-%x" are plain words, "-site" as a word is written quoted.
_LEXER = re.compile(r'\s*(-(?=["\w]))?(?:"([^"]*)("?)|(\S+))')
_HOST_RE = re.compile(r"^[a-z0-9.\-\[\]:]+$")
_WORD_CHAR = re.compile(r"\w")


@dataclass(frozen=True)
class Phrase:
    """Terms with their relative positions (a single word is a phrase of its own terms)."""

    text: str
    terms: tuple[str, ...]
    offsets: tuple[int, ...]


@dataclass
class ParsedQuery:
    text: str
    groups: list[list[Phrase]] = field(default_factory=list)  # each an OR of alternatives
    required: list[Phrase] = field(default_factory=list)  # quoted phrases
    excluded: list[Phrase] = field(default_factory=list)
    sites: list[str] = field(default_factory=list)
    excluded_sites: list[str] = field(default_factory=list)
    stops: frozenset[str] = frozenset()  # the analyzer's stop-word terms
    score_stops: bool = False  # the query is mostly stop words: they count like other words
    pair_stops: bool = True  # stop words not scored pair with their neighbours (stop_pairs)
    # A term -> the same word's terms in the other languages the query may be in (a word
    # whose language is not known is searched as each of them: one unit, any of its forms).
    alternates: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # units() and stop_pairs() of the finished query (parse_query keeps them last; a search
    # asks for each several times)
    memo: dict[str, list[Any]] = field(default_factory=dict, repr=False, compare=False)

    def _scored(self, terms: tuple[str, ...]) -> tuple[str, ...]:
        if self.score_stops:
            return terms
        return tuple(t for t in terms if t not in self.stops)

    def units(self) -> list[tuple[str, ...]]:
        """The scoring units: each term of a plain word or phrase on its own, an OR group's
        terms together.  Coordination counts matched units."""
        if "units" in self.memo:
            return list(self.memo["units"])
        out: list[tuple[str, ...]] = []
        seen: set[tuple[str, ...]] = set()
        for group in [*self.groups, *([p] for p in self.required)]:
            cands: list[tuple[str, ...]]
            alt = self.alternates
            if len(group) == 1:
                cands = [(t, *alt.get(t, ())) for t in self._scored(group[0].terms)]
            else:
                cands = [tuple(dict.fromkeys(a for p in group for t in self._scored(p.terms)
                                             for a in (t, *alt.get(t, ()))))]
            for u in cands:
                if u and u not in seen:
                    seen.add(u)
                    out.append(u)
        return out

    def freeze(self) -> None:
        """Keep units() and stop_pairs(): the query is complete, nothing changes them."""
        self.memo["units"] = self.units()
        self.memo["stop_pairs"] = self.stop_pairs()

    def word_terms(self) -> list[str]:
        """Per plain query word, in order: its last part (first part of the next word follows
        it), for proximity evidence; compounds and technical words give their parts, not the
        whole; stop words only when they are scored."""
        out: list[str] = []
        for group in self.groups:
            if len(group) != 1 or not group[0].terms:
                continue
            scored = set(self._scored(group[0].terms))
            parts = [(o, t) for t, o in zip(group[0].terms, group[0].offsets, strict=True)
                     if not is_whole(t) and t in scored]
            if parts:
                out.append(min(parts)[1])
                if len(parts) > 1:
                    out.append(max(parts)[1])
        return out

    def stop_pairs(self) -> list[tuple[str, str]]:
        """Proximity pairs of a stop word that is not scored and the plain query word next to
        it ("if statement": (if, statement); "x not in list": (not, in), (in, list)), so a page
        where they stand together gains (stop words adjacent to the other
        query words).  Pairs of two other words are :meth:`word_terms`'; an OR group or a
        phrase breaks adjacency."""
        if "stop_pairs" in self.memo:
            return list(self.memo["stop_pairs"])
        if self.score_stops or not self.pair_stops:
            return []
        ends: list[tuple[str, str] | None] = []  # per plain word: its first and last part
        for group in self.groups:
            parts = sorted((o, t) for t, o in zip(group[0].terms, group[0].offsets, strict=True)
                           if not is_whole(t)) if len(group) == 1 else []
            ends.append((parts[0][1], parts[-1][1]) if parts else None)
        out: list[tuple[str, str]] = []
        for prev, nxt in pairwise(ends):
            if prev is not None and nxt is not None:
                a, b = prev[1], nxt[0]
                if a != b and (a in self.stops or b in self.stops) and (a, b) not in out:
                    out.append((a, b))
        return out

    def idf_terms(self) -> list[str]:
        """The terms whose idf the query needs: the scored ones, then the stop pairs' others."""
        terms = self.terms()
        return terms + [t for t in dict.fromkeys(t for p in self.stop_pairs() for t in p)
                        if t not in terms]

    def terms(self) -> list[str]:
        return list(dict.fromkeys(t for u in self.units() for t in u))


def _phrase(text: str, analyzer: Analyzer, *, quoted: bool = True) -> Phrase:
    terms, positions, _ = analyzer.positions(text)
    if not quoted and _WORD_CHAR.search(text):
        # "handle," or "f(x)": symbols on a word are its punctuation; symbols written apart
        # ("+", "@ function handle") or quoted ("x + y") are operators to search for.
        kept = [(t, p) for t, p in zip(terms, positions, strict=True) if not is_operator(t)]
        terms, positions = [t for t, _ in kept], [p for _, p in kept]
    base = positions[0] if positions else 0
    return Phrase(text, tuple(terms), tuple(p - base for p in positions))


_LANG_OP = re.compile(r"(?<!\S)lang:([A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*)(?!\S)")


def split_lang(q: str) -> tuple[str, str | None]:
    """The query without its ``lang:xx`` operators, and the last one's language."""
    found = _LANG_OP.findall(q)
    if not found:
        return q, None
    return " ".join(_LANG_OP.sub(" ", q).split()), found[-1]


def _site(value: str) -> str:
    host = value.strip().lower().rstrip(".")
    if "://" in host:
        host = host.split("://", 1)[1]
    host = host.split("/", 1)[0]
    if not host or not _HOST_RE.match(host):
        raise QueryError(f"site: needs a host name, as in site:docs.python.org (got {value!r})")
    return host


def _alternates(pq: ParsedQuery, others: Sequence[Analyzer]) -> dict[str, tuple[str, ...]]:
    """Each plain or quoted word's terms under the ``others`` analyzers, where they differ
    from the query analyzer's (``Pakete``: ``paket`` in English, ``pak`` in German)."""
    out: dict[str, dict[str, None]] = {}
    plain = [(p, False) for g in pq.groups for p in g]
    for phrase, quoted in [*plain, *((p, True) for p in pq.required)]:
        for other in others:
            # The same analysis as the query analyzer's (_phrase): a word's punctuation
            # ("Temas.") is not a term here either.
            terms = _phrase(phrase.text, other, quoted=quoted).terms
            if len(terms) != len(phrase.terms):
                continue
            for mine, theirs in zip(phrase.terms, terms, strict=True):
                if theirs != mine and not is_whole(mine):
                    out.setdefault(mine, {})[theirs] = None
    return {t: tuple(a) for t, a in out.items()}


def parse_query(  # noqa: C901 - the query language's operators in one left-to-right pass
        q: str, analyzer: Analyzer | None = None, *, stop_pairs: bool = True,
        others: Sequence[Analyzer] = ()) -> ParsedQuery:
    """Parse a query; raises :class:`QueryError` with a message for a person.  ``analyzer``
    and ``stop_pairs``: the index's (IndexSettings, recorded in its segments); ``others``:
    the analyzers of other languages the query may be in (its words' forms in them are
    searched too, :attr:`ParsedQuery.alternates`)."""
    if not isinstance(q, str):
        raise QueryError("the query must be text")
    if len(q) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(q)} characters long; the limit is {MAX_QUERY_CHARS}")
    analyzer = analyzer or Analyzer()
    parsed = ParsedQuery(text=q, stops=analyzer.stop_terms, pair_stops=stop_pairs)
    pending_or = False
    positives = 0
    negated_words: list[str] = []  # "-H": an option name when the query has nothing else
    rules: list[str] = []  # runs of symbols too long to be an operator ("====", "-----")
    pos = 0
    stripped = q.strip()
    while pos < len(stripped):
        m = _LEXER.match(stripped, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        negate, quoted, closing, word = m.group(1), m.group(2), m.group(3), m.group(4)
        if quoted is not None and not closing:
            raise QueryError('a quotation mark is not closed: write "like this"')
        if word == "OR" and not negate:
            if not parsed.groups or pending_or:
                raise QueryError("OR must stand between two words or phrases")
            pending_or = True
            continue
        if word is not None and word.lower().startswith("site:"):
            host = _site(word[5:])
            (parsed.excluded_sites if negate else parsed.sites).append(host)
            continue
        text = quoted if quoted is not None else (word or "")
        if word is not None and not analyzer.token_re.search(word):
            continue  # punctuation alone: nothing to search for
        phrase = _phrase(text, analyzer, quoted=quoted is not None)
        if word is not None and not phrase.terms and is_operator(word):
            rules.append(word)  # a rule, not a word: left out, and said so if it is all
            continue
        if negate and not phrase.terms and word is not None:
            # "-c command line option": excluding "c" would exclude nothing (a one-letter
            # word is no term), so "-c" is the option's name, searched as written.
            option = _phrase("-" + word, analyzer, quoted=True)
            if option.terms:
                negate, phrase = None, option
        if negate:
            if phrase.terms:
                parsed.excluded.append(phrase)
            negated_words.append("-" + word if word is not None else '"')  # '"': a phrase
            continue
        positives += 1
        if quoted is not None and not pending_or and len(phrase.terms) > 1:
            parsed.required.append(phrase)
        elif pending_or:
            parsed.groups[-1].append(phrase)
        else:
            parsed.groups.append([phrase])
        pending_or = False
    if pending_or:
        raise QueryError("OR must stand between two words or phrases")
    if positives == 0 and not parsed.sites:
        if negated_words and '"' not in negated_words and not parsed.excluded_sites:
            # Only exclusions (`-H`, `-q -v`) mean nothing as exclusions: they are the words
            # themselves (command-line options), as if each were quoted.
            words = parse_query(" ".join(f'"{w}"' for w in negated_words), analyzer)
            words.text = q
            return words
        if rules:
            raise QueryError(f"nothing to search for: {rules[0]!r} is a run of more than "
                             f"{MAX_SYMBOLS_ONLY} symbols (a rule, not an operator); give a "
                             "word or an operator such as += or ==")
        raise QueryError("nothing to search for: give at least one word")
    parsed.score_stops = _mostly_stops(parsed)
    # Stop words not scored are never looked up: they do not count toward the limit.
    n_terms = sum(len(parsed._scored(p.terms)) for g in parsed.groups for p in g) + sum(
        len(p.terms) for p in [*parsed.required, *parsed.excluded])
    if n_terms > MAX_QUERY_TERMS:
        raise QueryError(f"the query has {n_terms} terms; the limit is {MAX_QUERY_TERMS}")
    if others:
        parsed.alternates = _alternates(parsed, others)
    parsed.freeze()
    return parsed


def _mostly_stops(pq: ParsedQuery) -> bool:
    """Whether the query's plain words and phrases are mostly stop words (then they are scored)."""
    stop = other = 0
    for phrase in [*(p for g in pq.groups for p in g), *pq.required]:
        for term, whole in ((t, is_whole(t)) for t in phrase.terms):
            if whole:
                continue
            if term in pq.stops:
                stop += 1
            else:
                other += 1
    return stop > 0 and stop / (stop + other) > STOP_SCORE_SHARE
