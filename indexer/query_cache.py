"""The analysed queries a searcher keeps: a query's text parsed and analysed once per snapshot.

Question: what of a query does not depend on the pages it matches, and may be kept?  Its
language (a ``lang:`` operator, the index's languages, py3langid when the index has several),
its parse and its words' analysis (indexer/query.py), its scoring units and proximity pairs;
and, scored with the searcher's own statistics, its terms' idf.  All are functions of the
query's text, its ``lang`` and ``lang_hint``, the collection's languages, and the searcher's
snapshot (its analyzer and index settings, its N and df), which never changes while it
serves.  So each :class:`~websift.indexer.searcher.Searcher` keeps them, bounded by a count of
entries (``QUERY_CACHE_ENTRIES``), and a new generation starts with an empty cache: its df and
N differ, and the analysis is the one its segments record.

An entry is never changed once made but for :attr:`AnalysedQuery.own`, filled by the first
query scored with the searcher's own statistics (a racing thread fills the same values).  The
searcher copies what a request adds (``site``) rather than change the parsed query.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from websift.indexer.analysis import Analyzer
from websift.indexer.query import ParsedQuery


@dataclass
class OwnStats:
    """What a query's scoring takes from the searcher's own statistics: each term's idf, and
    the proximity pairs (those of two words with an idf, stop pairs of rare enough words)."""

    idfs: dict[str, float]
    pairs: list[tuple[str, str]]
    rarest_df: int | None = None  # the smallest document frequency of the idf terms


@dataclass
class AnalysedQuery:
    """A query as the searcher analysed it (module docstring)."""

    lang: str | None  # the language it was analysed in (None: English's analysis)
    analyzer: Analyzer
    parsed: ParsedQuery  # its ``text`` the query as typed; never changed once made
    units: list[tuple[str, ...]]  # parsed.units()
    terms: list[str]  # the units' distinct terms, in order
    idf_terms: list[str]  # parsed.idf_terms()
    word_pairs: list[tuple[str, str]]  # consecutive plain words' terms, the two different
    stop_pairs: list[tuple[str, str]]  # parsed.stop_pairs()
    own: OwnStats | None = None  # filled by the first query scored with the searcher's stats

    @classmethod
    def of(cls, lang: str | None, analyzer: Analyzer, parsed: ParsedQuery) -> AnalysedQuery:
        units = parsed.units()
        return cls(lang, analyzer, parsed, units,
                   terms=list(dict.fromkeys(t for u in units for t in u)),
                   idf_terms=parsed.idf_terms(),
                   word_pairs=[(a, b) for a, b in pairwise(parsed.word_terms()) if a != b],
                   stop_pairs=parsed.stop_pairs())

