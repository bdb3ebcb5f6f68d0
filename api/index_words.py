"""The words of the served index, for "did you mean" and the search box's completions.

Each is built lazily from the snapshot's segments on the first request that needs it: the
speller for "did you mean", the completer for ``/suggest`` (a query's suggestion never pays
for the completer).  The speller's parts of each segment (indexer/spelling.py
``SegmentWords``) are kept while the segment serves, and so is their merge (``Lexicon``): a
new generation that appends segments (a follower's cut) reads and merges only those; one that
merged segments merges the kept parts again.  Memory only: they are derived from the
segments, which are the on-disk truth.

A new index generation does not make a request wait for them once they exist.  With
``max_age`` (``WEBSIFT_WORDS_MAX_AGE_MS``, 120 s by default) the words of an older generation
keep answering until they are that old; then the first request that finds them older starts
one rebuild over its snapshot in a background thread and is answered with them, and the new
words replace them when it finishes.  Under ``websift up`` a cut lands every few seconds and a
merged generation's speller is a whole merge (1 s of CPU at 300,000 terms), so rebuilding for
every generation held the server's GIL and a search slot for a quarter of its busy time; a
correction or a completion now lags the index by at most about ``max_age`` plus one build.
With ``max_age`` 0 the first request of each generation builds them and waits (the words
then always match the generation served).  The first build, and a rebuild after the index's
analysis settings changed, are always made at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
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
    Near,
    SegmentWords,
    Speller,
    looked_up_words,
    spelled_words,
    titles,
)

FEW_RESULTS = 3  # a query finding at most this many pages is offered a spelling correction

log = logging.getLogger("websift.api")


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
    """The speller and the completer of the served index: of its current generation, or of
    an older one while that is younger than ``max_age`` seconds (and then while a background
    rebuild runs)."""

    def __init__(self, max_age: float = 0.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        self._key: tuple[int, ...] | None = None  # the generation the words are of
        self._built_at = 0.0  # when they were built (clock)
        self._speller: Speller | None = None
        self._completer: Completer | None = None
        self._completer_wanted = False  # /suggest asked: a rebuild makes the completer too
        self._rebuilding: threading.Thread | None = None
        # The speller's part of each segment it was last built from, by reader serial
        # (indexer/segment.py), and the settings of the analyzer that read their titles.
        self._parts: dict[int, SegmentWords] = {}
        self._lexicon: Lexicon | None = None  # those parts merged
        self._settings: IndexSettings | None = None
        self.segment_parts_read = 0  # segments whose part was read (the others were kept)
        self.whole_merges = 0  # lexicons merged from every part (not extended)
        self.builds = 0  # spellers built (each generation's, or a background rebuild's)
        self.background_builds = 0  # of them, built off the request path
        self.build_failures: Counter[str] = Counter()  # background rebuilds that raised, by error
        # The analyzers suggestions read queries with, by index settings and language.
        self._analyzers: dict[tuple[IndexSettings, str], Analyzer] = {}

    def figures(self) -> dict[str, object]:
        """For ``/stats``: the generation the words are of, their age, builds and failures."""
        with self._lock:
            built = self._speller is not None
            return {
                "generation": sum(self._key) if built and self._key else None,
                "age_seconds": round(self._clock() - self._built_at, 3) if built else None,
                "max_age_seconds": self.max_age,
                "builds": self.builds,
                "background_builds": self.background_builds,
                "rebuilding": self._rebuilding is not None,
                "failures": dict(self.build_failures),
            }

    def _lexicon_of(self, snap: Snapshot) -> Lexicon:
        """The lexicon of the snapshot's segments, from the kept parts and merge (under the
        lock, or in the one rebuild, which alone changes them meanwhile)."""
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
        lexicon = (Lexicon.of(merged) if self._lexicon is None
                   else self._lexicon.extended(merged))
        self._lexicon = lexicon
        self.whole_merges += lexicon.whole
        self.builds += 1
        return lexicon

    def _set(self, snap: Snapshot, speller: Speller, completer: Completer | None) -> None:
        """(under the lock)"""
        self._key = snap.index_generations
        self._built_at = self._clock()
        self._speller, self._completer = speller, completer

    def _speller_of(self, snap: Snapshot) -> Speller:
        """(under the lock)"""
        speller = self._speller
        if speller is not None and self._key == snap.index_generations:
            return speller
        # Built now, the request waiting: the first words, every generation's without a max
        # age, and after the analysis settings changed (unless a rebuild runs, which owns the
        # kept parts; there is none while no words exist: only a build makes them).
        if speller is None or (self._rebuilding is None and (
                self.max_age <= 0 or self._settings != snap.searcher.value.index_settings)):
            speller = self._lexicon_of(snap).speller
            self._set(snap, speller, None)
        elif self._rebuilding is None and self._clock() - self._built_at >= self.max_age:
            self._start_rebuild(snap)
        return speller

    def _start_rebuild(self, snap: Snapshot) -> None:
        """(under the lock) Rebuild the words over ``snap`` in a thread of their own; the
        snapshot's searcher is kept open until it is done."""
        snap.searcher.retain()
        thread = threading.Thread(target=self._rebuild, args=(snap,),
                                  name="websift-words", daemon=True)
        self._rebuilding = thread
        thread.start()

    def _rebuild(self, snap: Snapshot) -> None:
        try:
            lexicon = self._lexicon_of(snap)
            completer = (build_completer(snap, lexicon.speller) if self._completer_wanted
                         else None)
            with self._lock:
                self._set(snap, lexicon.speller, completer)
                self.background_builds += 1
        except Exception as exc:  # counted and logged; the words of before keep answering
            with self._lock:
                self.build_failures[type(exc).__name__] += 1
                self._parts, self._lexicon = {}, None  # the next build starts whole
            log.exception("rebuilding the index's words for generation %s failed",
                          snap.index_generation)
        finally:
            with self._lock:
                self._rebuilding = None
            snap.searcher.release()

    def speller(self, snap: Snapshot) -> Speller:
        with self._lock:
            return self._speller_of(snap)

    def completer(self, snap: Snapshot) -> Completer:
        with self._lock:
            self._completer_wanted = True
            speller = self._speller_of(snap)
            if self._completer is None:
                self._completer = build_completer(snap, speller)
            return self._completer

    def of(self, snap: Snapshot) -> Words:
        return Words(self.speller(snap), self.completer(snap))

    def did_you_mean(self, snap: Snapshot, query: str, lang: str | None) -> Correction | None:
        if spelled_words(query) > MAX_SPELLED_WORDS:
            return None  # not corrected (indexer/spelling.py): the speller is not built for it
        return self.speller(snap).correct(query, self._analyzer(snap, lang),
                                          snap.searcher.value.surface_of)

    def near(self, snap: Snapshot, query: str, lang: str | None) -> dict[str, Near]:
        """Per folded word of ``query`` that a correction looks up, what this index holds of
        it (indexer/spelling.py :class:`Near`; a front server sums the shards' answers and
        chooses as :meth:`did_you_mean` does); empty for a query that is not corrected."""
        if spelled_words(query) > MAX_SPELLED_WORDS:
            return {}
        speller, analyzer = self.speller(snap), self._analyzer(snap, lang)
        return {w: near for w in looked_up_words(query)
                if (near := speller.near(w, analyzer)) is not None}

    def surface(self, snap: Snapshot, term: str) -> str | None:
        """How this index shows ``term`` in a correction: as its titles write it most, else
        as a page holding it writes it; None: neither."""
        return (self.speller(snap).title_surface(term)
                or snap.searcher.value.surface_of(term))

    def _analyzer(self, snap: Snapshot, lang: str | None) -> Analyzer:
        key = (snap.searcher.value.index_settings, analysis_language(lang))
        analyzer = self._analyzers.get(key)
        if analyzer is None:  # made once: its stop terms are stemmed at construction
            analyzer = self._analyzers[key] = Analyzer.of(*key)
        return analyzer
