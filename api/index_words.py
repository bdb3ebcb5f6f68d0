"""The words of the served index, for "did you mean" and the search box's completions.

Each is built lazily from the snapshot's segments on the first request that needs it and kept
until the index generation changes (one build at a time; requests meanwhile wait for it): the
speller for "did you mean", the completer for ``/suggest`` (a query's suggestion never pays
for the completer).  The speller's parts of each segment (indexer/spelling.py
``SegmentWords``) are kept while the segment serves, and so is their merge (``Lexicon``): a
new generation that appends segments (a follower's cut) reads and merges only those; one that
merged segments merges the kept parts again.  Memory only: they are derived from the
segments, which are the on-disk truth.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from websift.api.snapshot import Snapshot
from websift.indexer.analysis import Analyzer, is_operator, is_whole
from websift.indexer.completion import Completer
from websift.indexer.languages import analysis_language
from websift.indexer.settings import IndexSettings
from websift.indexer.spelling import (
    MAX_SPELLED_WORDS,
    Correction,
    Lexicon,
    SegmentWords,
    Speller,
    spelled_words,
    titles,
)

FEW_RESULTS = 3  # a query finding at most this many pages is offered a spelling correction


@dataclass(frozen=True)
class Words:
    speller: Speller
    completer: Completer


def build_completer(snap: Snapshot, speller: Speller) -> Completer:
    """The completer of the snapshot's index, whose speller is ``speller``: titles, and the
    plain words with their document frequencies."""
    names = titles(snap.searcher.value.segments)
    shown: dict[str, int] = {}
    for term, word in speller.surfaces.items():
        shown[word] = max(shown.get(word, 0), speller.df.get(term, 0))
    for term, n in speller.df.items():  # compound names read as typed: os.path, asyncio.gather
        if is_whole(term) and not is_operator(term) and any(c.isalpha() for c in term):
            shown[term] = n
    return Completer.from_index(names, shown)


class IndexWords:
    """The speller and the completer of the current index generation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, ...] | None = None
        self._speller: Speller | None = None
        self._completer: Completer | None = None
        # The speller's part of each segment it was last built from, by reader serial
        # (indexer/segment.py), and the settings of the analyzer that read their titles.
        self._parts: dict[int, SegmentWords] = {}
        self._lexicon: Lexicon | None = None  # those parts merged
        self._settings: IndexSettings | None = None
        self.segment_parts_read = 0  # segments whose part was read (the others were kept)
        self.whole_merges = 0  # lexicons merged from every part (not extended)
        # The analyzers suggestions read queries with, by index settings and language.
        self._analyzers: dict[tuple[IndexSettings, str], Analyzer] = {}

    def _fresh(self, snap: Snapshot) -> None:
        """Forget the words of another generation (under the lock)."""
        if self._key != snap.index_generations:
            self._key = snap.index_generations
            self._speller = self._completer = None

    def _speller_of(self, snap: Snapshot) -> Speller:
        """(under the lock)"""
        self._fresh(snap)
        if self._speller is None:
            searcher = snap.searcher.value
            if self._settings != searcher.index_settings:
                self._parts, self._settings = {}, searcher.index_settings
                self._lexicon = None
            parts: dict[int, SegmentWords] = {}
            for seg in searcher.segments:
                part = self._parts.get(seg.serial)
                if part is None:
                    part = SegmentWords.of(seg, searcher.analyzer)
                    self.segment_parts_read += 1
                parts[seg.serial] = part
            self._parts = parts  # the segments no longer served are let go
            merged = list(parts.values())
            self._lexicon = (Lexicon.of(merged) if self._lexicon is None
                             else self._lexicon.extended(merged))
            self.whole_merges += self._lexicon.whole
            self._speller = self._lexicon.speller
        return self._speller

    def speller(self, snap: Snapshot) -> Speller:
        with self._lock:
            return self._speller_of(snap)

    def completer(self, snap: Snapshot) -> Completer:
        with self._lock:
            speller = self._speller_of(snap)
            if self._completer is None:
                self._completer = build_completer(snap, speller)
            return self._completer

    def of(self, snap: Snapshot) -> Words:
        return Words(self.speller(snap), self.completer(snap))

    def did_you_mean(self, snap: Snapshot, query: str, lang: str | None) -> Correction | None:
        if spelled_words(query) > MAX_SPELLED_WORDS:
            return None  # not corrected (indexer/spelling.py): the speller is not built for it
        searcher = snap.searcher.value
        key = (searcher.index_settings, analysis_language(lang))
        analyzer = self._analyzers.get(key)
        if analyzer is None:  # made once: its stop terms are stemmed at construction
            analyzer = self._analyzers[key] = Analyzer.of(*key)
        return self.speller(snap).correct(query, analyzer)
