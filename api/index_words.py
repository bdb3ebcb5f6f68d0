"""The words of the served index, for "did you mean" and the search box's completions.

Built lazily from the snapshot's segments on the first request that needs them and kept until
the index generation changes (one build at a time; requests meanwhile wait for it).  Memory
only: they are derived from the segments, which are the on-disk truth.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from websift.api.snapshot import Snapshot
from websift.indexer.analysis import Analyzer, is_operator, is_whole
from websift.indexer.completion import Completer
from websift.indexer.languages import analysis_language
from websift.indexer.spelling import (
    Correction,
    Speller,
    document_frequencies,
    title_surfaces,
    titles,
)

FEW_RESULTS = 3  # a query finding at most this many pages is offered a spelling correction


@dataclass(frozen=True)
class Words:
    speller: Speller
    completer: Completer


def build_words(snap: Snapshot) -> Words:
    searcher = snap.searcher.value
    segments = searcher.segments
    df = document_frequencies(segments)
    names = titles(segments)
    surfaces = title_surfaces(names, searcher.analyzer)
    shown: dict[str, int] = {}
    for term, word in surfaces.items():
        shown[word] = max(shown.get(word, 0), df.get(term, 0))
    for term, n in df.items():  # compound names read as typed: os.path, asyncio.gather
        if is_whole(term) and not is_operator(term) and any(c.isalpha() for c in term):
            shown[term] = n
    return Words(Speller(df, surfaces), Completer.from_index(names, shown))


class IndexWords:
    """The :class:`Words` of the current index generation."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, ...] | None = None
        self._words: Words | None = None

    def of(self, snap: Snapshot) -> Words:
        with self._lock:
            if self._words is None or self._key != snap.index_generations:
                self._words = build_words(snap)
                self._key = snap.index_generations
            return self._words

    def did_you_mean(self, snap: Snapshot, query: str, lang: str | None) -> Correction | None:
        searcher = snap.searcher.value
        analyzer = Analyzer.of(searcher.index_settings, analysis_language(lang))
        return self.of(snap).speller.correct(query, analyzer)
