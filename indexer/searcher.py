"""The query side: a read-only snapshot of the live segments, scored with BM25F.

Layers (STYLE.md): indexer/bm25f.py holds the pure formulas; :class:`Searcher` is the configured
model (settings, collection statistics over every live segment, per-document field
coefficients precomputed at open); :meth:`Searcher.search` is the per-query scorer and top-k
collector.

Scoring is vectorised over postings: for each query term, each segment's postings are decoded
(indexer/codec.py; read and cached through indexer/postings.py) and their BM25F contributions
scattered into a dense score array of that segment (one float per document), so no Python loop
runs per document.  The caller's ``prior`` (link importance, at most ``prior_bound``) is added
to every match's text score and the exact top k of the sum taken with ``argpartition``; on a
large index indexer/topk.py finds the same top k from the few blocks of postings that can hold
it.

Versions: a newer segment masks older versions of the same URL (its docs and drops bitmaps);
indexer/liveness.py computes that once at open.  Collection statistics (N, df, average field
lengths) count live documents only.

Shards: :meth:`Searcher.open_shards` opens several index directories (one per crawler's data
directory) as one searcher: their segments side by side, so N, df and the average field
lengths are sums over every shard and a score means the same whatever shard holds the page.
Shards must share one URL ID space (a page's ID names the same URL everywhere): a URL ID held
by two shards as different URLs is refused at open (``ShardsConflict``); held as the same
URL (a page one crawler fetched and another only saw linked), the copy with the most indexed
words serves (indexer/liveness.py).

Reloads: a new index generation mostly names the segments of the one it replaces (a cut adds
one, a merge replaces a few).  :meth:`Searcher.open` with ``previous=`` takes the previous
searcher's opened segments for those (segments are immutable: their files were checked when
first opened and are neither checked nor mapped again) and :meth:`Searcher.adopt` its caches
themselves, keyed by segment reader serial (indexer/postings.py ``PostingStore.adopt``;
stored texts and fragments; ``site:`` masks by segment), so the new generation's first
queries do not decode again what the old one had, and a reload copies no cache entry.

Remote shards (api/fanout.py) cannot share memory, so a query there is scored in two rounds
(Elasticsearch's "dfs_query_then_fetch"): :meth:`Searcher.collection_stats` gives a shard's N,
field length sums and the query terms' df; the sums over every shard come back in
``IndexQuery.stats`` of :meth:`Searcher.search`, which then scores exactly as one index over all
of them would.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pyroaring import BitMap

from websift.core.cache import Cache
from websift.core.checked import RereadJson, open_consistent
from websift.core.datadir import DataDir
from websift.core.distinct import distinct, distinct_small
from websift.core.id_set import IdSet, sorted_members
from websift.indexer import bm25f, scoring_lengths
from websift.indexer.analysis import Analyzer
from websift.indexer.errors import IndexCorrupt
from websift.indexer.fetched import unfetched_ids, with_fetched
from websift.indexer.folding import fold_text
from websift.indexer.fragments import StoredFragments, read_fragments
from websift.indexer.languages import ENGLISH, analysis_language, query_language
from websift.indexer.liveness import Shard, shard_live_masks
from websift.indexer.manifest import Manifest, read_manifest, verify_segment
from websift.indexer.manifest import current_generation as _manifest_generation
from websift.indexer.postings import Norms, PostingStore, QueryPostings, member
from websift.indexer.query import ParsedQuery, parse_query, split_lang
from websift.indexer.query_cache import AnalysedQuery, OwnStats
from websift.indexer.removal_masks import removal_masks
from websift.indexer.segment import SegmentReader, query_settings
from websift.indexer.settings import (
    DEFAULT_K,
    EXHAUSTIVE_FEW_POSTINGS,
    EXHAUSTIVE_MAX_DOCS,
    EXHAUSTIVE_MAX_POSTINGS,
    FIELDS,
    FRAGMENT_CACHE_BYTES,
    LANG_MIN_SHARE,
    MAX_QUERY_CHARS,
    N_FIELDS,
    PRIOR_CACHE_BYTES,
    QUERY_CACHE_ENTRIES,
    QUERY_LANG_ALTERNATES,
    SITE_MASK_CACHE_BYTES,
    SPARSE_SHARE,
    STOP_PAIR_MIN_IDF,
    SURFACE_PAGES,
    TEXT_CACHE_BYTES,
    BM25FSettings,
)
from websift.indexer.snippet import PageText, SnippetMaker, read_text
from websift.indexer.topk import Plan, proximity_bonus, top_text
from websift.store.removals import RemovalRules

Prior = Callable[[np.ndarray], np.ndarray]
_DEFS = FIELDS.index("defs")  # the field a page's fragments are indexed in
# At most this many matches are sorted whole for the top k (:func:`_best`), more partitioned
SMALL_TOP = 128


@dataclass
class Hit:
    doc_id: int
    url: str
    title: str
    snippet: str
    highlights: list[tuple[int, int]]
    score: float
    text_score: float
    prior_score: float
    explain: dict[str, Any] | None = None
    fragment: str | None = None  # the id of the page's best-matching definition (url#id)
    lang: str = ""  # the page's language (indexer/languages.py), "" when unknown
    fetched: bool = True  # False: a page known only from links to it (indexer/fetched.py)


@dataclass
class SearchResults:
    query: str
    total: int
    hits: list[Hit] = field(default_factory=list)
    # False: ``total`` is a lower bound (pruning left documents uncounted), as Lucene's
    # TotalHits.Relation.GREATER_THAN_OR_EQUAL_TO.
    total_exact: bool = True
    # True: the deadline stopped the search; the hits are the best of what it had scored.
    partial: bool = False
    blocks: int = 0  # 128-posting blocks in the query's lists (pruned evaluation)
    blocks_read: int = 0  # of those, the blocks whose documents were scored
    lang: str | None = None  # the language the query was analysed in (None: English's analysis)
    # The smallest document frequency of the query's scored words, in the statistics it was
    # scored with (None: no word scored): a word in no page, or in very few, is what a
    # spelling suggestion may mend (api/retrieval.py).
    rarest_df: int | None = None


@dataclass(frozen=True)
class IndexQuery:
    """One search of the index (:meth:`Searcher.search`): what to find, which hits, how to
    score and present them.  Not the HTTP request (api/retrieval.py's ``SearchRequest``), which
    the API turns into one of these."""

    text: str  # the query as typed (indexer/query.py's syntax)
    k: int = DEFAULT_K  # hits wanted ...
    offset: int = 0  # ... after this many
    site: str | None = None  # only this host and its subdomains (as ``site:`` in the text)
    # URL IDs -> a boost added to their text score (link importance; ranking/fusion.py).
    prior: Prior | None = None
    # The prior is at most this (the fusion's ``w``), which lets the pruning skip blocks
    # exactly; a prior without a bound is added to every match (the exhaustive path).
    prior_bound: float | None = None
    # A name for ``prior`` that no other function gets while the searcher lives, so the pruning
    # keeps each block's largest prior with the cached lists (without it every block counts
    # the bound).
    prior_key: Hashable | None = None
    # Score with these collection statistics instead of the searcher's own (the sums over
    # every shard; a term they leave out keeps its own df here).
    stats: CollectionStats | None = None
    # A time.monotonic() past which the search returns what it has (``partial``).
    deadline: float | None = None
    explain: bool = False  # each hit says how its score was made (Hit.explain)
    snippets: bool = True  # each hit gets a snippet with highlights
    # Each hit gets the id of its best fragment (Hit.fragment); like snippets, this reads
    # stored data for the hits, which a caller measuring ranking alone can skip.
    fragments: bool = True
    # Score every posting: the reference the pruned evaluation equals (an index of fewer than
    # EXHAUSTIVE_MAX_DOCS documents is always scored so).
    exhaustive: bool = False
    # The query's language: ``lang`` as asked (a ``lang`` parameter; a ``lang:`` operator in
    # the text wins), ``lang_hint`` a preference (Accept-Language) used when the query's own
    # words do not tell (indexer/languages.py query_language).
    lang: str | None = None
    lang_hint: str | None = None


@dataclass(frozen=True)
class CollectionStats:
    """What BM25F needs of the whole collection: live documents, the sum of each field's
    length over them (FIELDS order), and the document frequency of some terms; and the pages
    per language (``Searcher.index_langs``: what a query's language is told by, and whether
    the language prior applies), None when not known."""

    n_docs: int
    field_lengths: tuple[int, ...]
    df: Mapping[str, int]
    langs: Mapping[str, int] | None = None

    @staticmethod
    def total(parts: Sequence[CollectionStats]) -> CollectionStats:
        """The statistics of the union of disjoint collections: every figure summed."""
        df: dict[str, int] = {}
        for part in parts:
            for term, n in part.df.items():
                df[term] = df.get(term, 0) + n
        langs: dict[str, int] | None = None
        if parts and all(p.langs is not None for p in parts):
            langs = {}
            for part in parts:
                for lang, n in (part.langs or {}).items():
                    langs[lang] = langs.get(lang, 0) + n
        lengths = [sum(col) for col in zip(*(p.field_lengths for p in parts), strict=True)]
        return CollectionStats(sum(p.n_docs for p in parts), tuple(lengths) or (0,) * N_FIELDS,
                               df, langs)

    def avg_lens(self) -> np.ndarray:
        return np.asarray(self.field_lengths, dtype=np.float64) / max(self.n_docs, 1)


def query_langs_of(index_langs: Mapping[str, int]) -> dict[str, int]:
    """The languages queries are told apart by, of a collection with ``index_langs`` pages per
    language: those of at least LANG_MIN_SHARE of the pages (a page or two identified as
    another language does not make the index multilingual).  Pages of unknown language are
    analysed as English (languages.analysis_language), so they count as English here: a query
    is then also searched in English's forms."""
    least = max(1.0, LANG_MIN_SHARE * sum(index_langs.values()))
    analysed: dict[str, int] = {}
    for lang, n in index_langs.items():
        analysed[lang or ENGLISH] = analysed.get(lang or ENGLISH, 0) + n
    return {k: n for k, n in analysed.items() if n >= least}


def current_generation(data: DataDir) -> int | None:
    """The generation the manifest names now (reads the manifest only), or None."""
    return _manifest_generation(data.index_dir)


_ARRAY_OVERHEAD = 112  # bytes of an ndarray object besides its data (sys.getsizeof)


def _provisional_table(segments: Sequence[SegmentReader], live: Sequence[np.ndarray]
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(URL IDs ascending, their provisional priors) of the live documents that have one."""
    ids = [seg.doc_ids[m & (seg.prior > 0)] for seg, m in zip(segments, live, strict=True)]
    values = [seg.prior[m & (seg.prior > 0)] for seg, m in zip(segments, live, strict=True)]
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    all_ids = np.concatenate(ids).astype(np.int64)
    order = np.argsort(all_ids, kind="stable")
    return all_ids[order], np.concatenate(values).astype(np.float64)[order]


def _mask_bytes(masks: list[np.ndarray]) -> int:
    """Bytes a site filter's cached masks hold: the arrays, their headers, and the key (a
    query's site: values, so at most a query's length)."""
    return sum(m.nbytes + _ARRAY_OVERHEAD for m in masks) + MAX_QUERY_CHARS


class Searcher:
    """A read-only snapshot of the index generation the manifest names when opened (or of one
    generation of each of several shards)."""

    def __init__(self, manifest: Manifest, segments: list[SegmentReader],
                 settings: BM25FSettings | None = None, *,
                 site_cache_bytes: int | None = None, shards: Sequence[Shard] = (),
                 removals: RemovalRules | None = None, previous: Searcher | None = None
                 ) -> None:
        """``manifest`` and ``segments``: one index; or ``shards`` (then those two are the first
        shard's, kept for callers that rebuild a searcher with other settings).  ``removals``:
        the operator's rules in force; the documents they cover are not live
        (indexer/removal_masks.py).  ``previous``: a searcher this one replaces, whose
        per-document field coefficients of the segments both hold serve here when the
        statistics and settings are the same (a reload under pinned averages)."""
        self.shards = list(shards) or [Shard(None, manifest, segments)]
        self.manifest = self.shards[0].manifest
        self.generations = tuple(s.manifest.generation for s in self.shards)
        # One number that grows whenever any shard's generation does (they only grow): the
        # generation itself with one shard.
        self.generation = sum(self.generations)
        self.segments = [seg for s in self.shards for seg in s.segments]
        self.settings = settings or BM25FSettings()
        # Queries are analysed as the segments were, whatever the environment says now.
        self.index_settings = query_settings(self.segments)
        self.analyzer = Analyzer.of(self.index_settings)
        self._analyzers: dict[str, Analyzer] = {self.analyzer.lang: self.analyzer}
        self._lang_ids: dict[str, IdSet] = {}
        self.unfetched = unfetched_ids(self.segments)  # pages known only from links
        self._unfetched = IdSet(self.unfetched)
        self.index_langs: dict[str, int] = {}
        for seg in self.segments:
            for lang, n in seg.langs().items():
                self.index_langs[lang] = self.index_langs.get(lang, 0) + n
        self.query_langs = query_langs_of(self.index_langs)
        self.live = shard_live_masks(self.shards)
        self.removals = removals or RemovalRules()
        self.removed_docs = 0  # live documents the removals take out
        if self.removals:
            gone = removal_masks(self.segments, self.removals)
            self.removed_docs = int(sum(int((m & g).sum()) for m, g in zip(self.live, gone,
                                                                          strict=True)))
            self.live = [m & ~g for m, g in zip(self.live, gone, strict=True)]
        self._site_cache_bytes = site_cache_bytes
        sums, self.n_docs = scoring_lengths.live_length_sums(self.segments, self.live)
        self.field_length_sums = sums  # whole numbers, exact in float64 (< 2**53)
        self.exact_avg_lens = sums / max(self.n_docs, 1)
        # Scored with the averages the manifest pins while they are near the exact ones: the
        # same for the generations that follow, so cached saturations stay valid across
        # swaps (indexer/scoring_lengths.py).  Several shards: the exact sums over all.
        self.avg_lens = (scoring_lengths.scoring_averages(self.exact_avg_lens,
                                                          self.manifest.stats)
                         if len(self.shards) == 1 else self.exact_avg_lens)
        self._provisional = _provisional_table(self.segments, self.live)
        s = self.settings
        # A field the settings do not name has weight 0 (settings written before it existed).
        self.weights = np.array([s.weights.get(f, 0.0) for f in FIELDS], dtype=np.float64)
        self.b = np.array([s.b.get(f, 0.0) for f in FIELDS], dtype=np.float64)
        self._norms_key = self.avg_lens.tobytes() + self.weights.tobytes() + self.b.tobytes()
        self.coefficients = self._coefficients(
            self.avg_lens, previous if previous is not None
            and previous._norms_key == self._norms_key else None)
        # Coefficients under the last other statistics a caller asked for (a front server
        # sends the same global ones with every query): one set, replaced when they change.
        self._other_norms: Norms | None = None
        # Shared by the threads searching this snapshot (its segments never change), each
        # bounded by bytes (indexer/settings.py): what queries ask cannot grow the process.
        # Pages' texts and fragments are keyed by (segment reader's serial, ordinal): a
        # function of the segment alone, so the next generation takes the caches themselves
        # (:meth:`adopt`); ``_page_caches_owned`` False once it did (close leaves them).
        self._texts: Cache[tuple[int, int], PageText] = Cache(
            TEXT_CACHE_BYTES, lambda t: sys.getsizeof(t[0]) + sys.getsizeof(t[1]) + (
                0 if t[2] is None else sys.getsizeof(t[2]) + 28 * len(t[2])))
        self._frags: Cache[tuple[int, int], StoredFragments] = Cache(
            FRAGMENT_CACHE_BYTES, StoredFragments.size)
        self._page_caches_owned = True
        # (prior key, segment) -> the prior of each of the segment's pages (_segment_prior)
        self._priors: Cache[tuple[Hashable, int], np.ndarray] = Cache(
            PRIOR_CACHE_BYTES, lambda a: int(a.nbytes))
        self.postings = PostingStore(
            self.segments, self.live, self.coefficients, self.settings,
            norms_key=self._norms_key)
        # site: filter -> per-segment masks of its documents; keyed by what users type.
        # (query text, lang, hint, collection languages) -> the query analysed and parsed,
        # with its idfs under this snapshot's statistics (indexer/query_cache.py)
        self._queries: Cache[Hashable, AnalysedQuery] = Cache(QUERY_CACHE_ENTRIES)
        self._site_masks: Cache[tuple[str, ...], list[np.ndarray]] = Cache(
            SITE_MASK_CACHE_BYTES if site_cache_bytes is None else site_cache_bytes, _mask_bytes)
        # Wall seconds of each phase of opening this searcher (:meth:`open`): what a reload
        # cost (api/reload_times.py).
        self.open_phases: dict[str, float] = {}

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, data: DataDir, settings: BM25FSettings | None = None,
             verify: bool = True, *, site_cache_bytes: int | None = None,
             removals: RemovalRules | None = None, previous: Searcher | None = None,
             manifests: RereadJson | None = None, outdated_ok: bool = False) -> Searcher:
        """Open the generation the manifest names now; IndexMissing / IndexCorrupt.
        ``previous``: the searcher it replaces, whose segments and caches it takes over where
        they are the same (module docstring: Reloads).  ``manifests``: a poller's reader of
        the manifest (core/checked.py: not parsed again when the poll just read it).
        ``outdated_ok``: segments another analyzer version built are opened, not refused
        (:attr:`outdated` says so; SegmentReader)."""
        started = time.perf_counter()
        reuse = None if previous is None else next(
            (s for s in previous.shards if s.index_dir == data.index_dir), None)
        shard = open_shard(data.index_dir, verify, reuse=reuse, manifests=manifests,
                           outdated_ok=outdated_ok)
        opened_segments = time.perf_counter()
        opened = cls(shard.manifest, shard.segments, settings,
                     site_cache_bytes=site_cache_bytes, shards=[shard], removals=removals,
                     previous=previous)
        built = time.perf_counter()
        if previous is not None:
            opened.adopt(previous)
        opened.open_phases = {"segments": opened_segments - started,
                              "state": built - opened_segments,
                              "caches": time.perf_counter() - built}
        return opened

    def with_removals(self, removals: RemovalRules) -> Searcher:
        """This searcher's segments (nothing opened again) under other removal rules."""
        started = time.perf_counter()
        made = Searcher(self.manifest, self.segments, self.settings,
                        site_cache_bytes=self._site_cache_bytes, shards=self.shards,
                        removals=removals, previous=self)
        built = time.perf_counter()
        made.adopt(self)
        made.open_phases = {"state": built - started, "caches": time.perf_counter() - built}
        return made

    def adopt(self, previous: Searcher) -> int:
        """Take over ``previous``'s caches for the segments both searchers hold (the same
        opened readers), decode in the segments it lacks the words its queries used last
        (``PostingStore.prewarm``), and share its caches of pages' texts and fragments;
        returns the decoded lists taken over.  Called before this searcher serves: nothing
        else uses it yet."""
        where = {id(seg): i for i, seg in enumerate(previous.segments)}
        old_of = [where.get(id(seg), -1) for seg in self.segments]
        taken = self.postings.adopt(previous.postings)
        self._texts = previous._texts
        if self.index_settings == previous.index_settings:  # fragments' words analysed alike
            self._frags = previous._frags
        previous._page_caches_owned = False
        for hosts, masks, _ in previous._site_masks.entries():
            if len(masks) == len(previous.segments):
                self._site_masks.put(hosts, [
                    masks[old_of[si]] if old_of[si] >= 0 else self._host_mask(seg, hosts)
                    for si, seg in enumerate(self.segments)])
        return taken

    @classmethod
    def open_shards(cls, index_dirs: Sequence[Path], settings: BM25FSettings | None = None,
                    verify: bool = True, *, site_cache_bytes: int | None = None,
                    reuse: Sequence[Shard] = (), removals: RemovalRules | None = None,
                    manifests: RereadJson | None = None, outdated_ok: bool = False
                    ) -> Searcher:
        """Open the live generation of each index directory as one searcher (module docstring).

        ``reuse``: shards of a previous searcher; one whose directory still names the same
        generation is taken as it is (its files were checked when it was opened).
        ``manifests``, ``outdated_ok``: as :meth:`open`'s.
        IndexMissing / IndexCorrupt (of the first shard that fails), ShardsConflict.
        """
        started = time.perf_counter()
        kept = {s.index_dir: s for s in reuse}
        shards = []
        for index_dir in index_dirs:
            old = kept.get(index_dir)
            if (old is not None and read_manifest(index_dir, manifests).generation
                    == old.manifest.generation):
                shards.append(old)
            else:
                shards.append(open_shard(index_dir, verify, reuse=old, manifests=manifests,
                                         outdated_ok=outdated_ok))
        opened_segments = time.perf_counter()
        opened = cls(shards[0].manifest, shards[0].segments, settings,
                     site_cache_bytes=site_cache_bytes, shards=shards, removals=removals)
        opened.open_phases = {"segments": opened_segments - started,
                              "state": time.perf_counter() - opened_segments}
        return opened

    def doc_count(self) -> int:
        return self.n_docs

    @property
    def outdated(self) -> str | None:
        """Why its queries may miss words (a segment another analyzer version built, opened
        with ``outdated_ok`` while the index is rebuilt), or None."""
        return next((seg.outdated for seg in self.segments if seg.outdated), None)

    def _coefficients(self, avg_lens: np.ndarray, reuse: Searcher | None = None
                      ) -> list[np.ndarray]:
        """Per segment, each document's field coefficients under ``avg_lens``: ``reuse``'s
        for the segments it holds (made under the same averages and settings), else made."""
        kept = {} if reuse is None else {
            id(seg): c for seg, c in zip(reuse.segments, reuse.coefficients, strict=True)}
        return [kept[id(seg)] if id(seg) in kept else bm25f.field_coefficients(
                    seg.field_lens.astype(np.float64), avg_lens, self.weights, self.b)
                for seg in self.segments]

    def _norms(self, avg_lens: np.ndarray) -> Norms | None:
        """Coefficients under other average field lengths than this searcher's own; None when
        they are its own or its exact ones (the usual case: then the cached saturated scores
        serve; a front server over this one shard scores as this searcher does)."""
        if np.array_equal(avg_lens, self.avg_lens) or np.array_equal(avg_lens,
                                                                      self.exact_avg_lens):
            return None
        key = avg_lens.tobytes()
        norms = self._other_norms
        if norms is None or norms.key != key:
            norms = Norms(key, avg_lens, self._coefficients(avg_lens))
            self._other_norms = norms  # one assignment: a racing thread sees old or new
        return norms

    def collection_stats(self, query: str, langs: Mapping[str, int] | None = None, *,
                         lang: str | None = None, hint: str | None = None
                         ) -> CollectionStats:
        """This searcher's share of the statistics a query is scored with: live documents,
        field length sums, pages per language, and the df of the query's terms, the query
        analysed as in a collection of ``langs`` pages per language (None: this index's),
        in language ``lang`` as asked, ``hint`` the reader's (:meth:`query_analysis`);
        QueryError on a bad query.  Filters (``site:``) do not change them: they are the
        whole collection's."""
        qlangs = None if langs is None else query_langs_of(langs)
        text, _, analyzer, others = self.query_analysis(query, lang, hint, langs=qlangs)
        pq = parse_query(text, analyzer, stop_pairs=self.index_settings.stop_pairs,
                         others=others)
        postings = self.postings.query()
        terms = pq.idf_terms()
        return CollectionStats(
            n_docs=self.n_docs,
            field_lengths=tuple(int(x) for x in self.field_length_sums),
            df={t: postings.df(t) for t in terms}, langs=dict(self.index_langs))

    def segment_count(self) -> int:
        return len(self.segments)

    def provisional_prior(self, doc_ids: np.ndarray) -> np.ndarray:
        """Each URL ID's provisional static score (its OPIC importance when indexed, scaled to
        mean one: indexer/segment_writer.py ``prior.npy``), 0 for those without one: what
        ranks a page newer than the last rank run (docs/ranking.md)."""
        ids, values = self._provisional
        doc_ids = np.asarray(doc_ids, dtype=np.int64)
        out = np.zeros(len(doc_ids), dtype=np.float64)
        if len(ids) == 0 or len(doc_ids) == 0:
            return out
        at = np.minimum(np.searchsorted(ids, doc_ids), len(ids) - 1)
        hit = ids[at] == doc_ids
        out[hit] = values[at[hit]]
        return out

    def caches(self) -> dict[str, Cache[Any, Any]]:
        """The searcher's caches by name (for their counters and sizes)."""
        return {**self.postings.caches(), "texts": self._texts, "queries": self._queries,
                "site_masks": self._site_masks, "fragments": self._frags,
                "priors": self._priors}

    def close(self) -> None:
        self.segments = []
        self.live = []
        self.coefficients = []
        self._other_norms = None
        self._site_masks.clear()
        self._priors.clear()
        self._queries.clear()
        if self._page_caches_owned:
            self._texts.clear()
            self._frags.clear()
        self.postings.close()  # its caches too, unless handed on

    # ------------------------------------------------------------------ scoring
    def _proximity(self, pairs: list[tuple[str, str]], si: int, postings: QueryPostings,
                   idfs: dict[str, float]) -> np.ndarray | None:
        """Proximity evidence: for each pair of consecutive query words, the documents where the
        second follows the first within PROXIMITY_WINDOW positions in one field get
        weight * min(idf) * c / (c + 1) for c such places (a soft phrase; Büttcher et al. 2006
        in spirit, without their distance decay)."""
        s = self.settings
        if s.proximity_weight <= 0 or not pairs:
            return None
        bonus = np.zeros(len(self.segments[si].doc_ids), dtype=np.float64)
        for a, b in pairs:
            docs, share = postings.near_pairs(a, b, si)
            if len(docs):
                bonus[docs] += s.proximity_weight * min(idfs[a], idfs[b]) * share
        return bonus * self.live[si]

    def _host_masks(self, hosts: tuple[str, ...]) -> list[np.ndarray]:
        """Per segment, which ordinals belong to one of ``hosts`` or their subdomains (cached:
        bounded by bytes, since any string a user types is a key)."""
        return self._site_masks.get_or_make(hosts, lambda: self._make_host_masks(hosts))

    def _make_host_masks(self, hosts: tuple[str, ...]) -> list[np.ndarray]:
        return [self._host_mask(seg, hosts) for seg in self.segments]

    @staticmethod
    def _host_mask(seg: SegmentReader, hosts: tuple[str, ...]) -> np.ndarray:
        """Which ordinals of ``seg`` belong to one of ``hosts`` or their subdomains."""
        ids = BitMap()
        for h in {h for s in hosts for h in seg.hosts_under(s)}:
            ids |= seg.host_docs(h)
        return sorted_members(seg.doc_ids, ids.to_array())

    # ------------------------------------------------------------------ search
    def search(self, request: IndexQuery) -> SearchResults:
        """Top ``request.k`` hits (after ``request.offset``) for ``request.text``; raises
        QueryError on a bad query.

        The ranking is the exact top ``offset + k`` of text score + ``prior`` over every
        matching page, ties by the smaller URL (:class:`IndexQuery` says what each field
        changes)."""
        prior, prior_bound, stats = request.prior, request.prior_bound, request.stats
        prior_key = request.prior_key
        offset, k = request.offset, request.k
        # the collection's languages: a front's sums over every shard, else this index's
        qlangs = (self.query_langs if stats is None or stats.langs is None
                  else query_langs_of(stats.langs))
        aq = self._analysed(request.text, request.lang, request.lang_hint, qlangs,
                            own_langs=stats is None or stats.langs is None)
        qlang, analyzer, pq, units = aq.lang, aq.analyzer, aq.parsed, aq.units
        sites = [*pq.sites, request.site.lower()] if request.site else pq.sites
        results = SearchResults(query=request.text, total=0, lang=qlang)
        if qlang is not None and self.settings.lang_prior > 0 and len(qlangs) > 1:
            prior, prior_bound, prior_key = self._lang_prior(qlang, prior, prior_bound, prior_key)
        # every fetched page, even where this index holds no other kind: a shard's scores
        # must mean what the others' and one index's do (api/fanout.py merges them)
        if self.settings.fetched_prior > 0:
            prior, prior_bound, prior_key = with_fetched(
                self._unfetched, self.settings.fetched_prior, prior, prior_bound, prior_key)
        site_only = not units and bool(sites) and not pq.groups and not pq.required
        if (not units and not site_only) or not self.segments:
            return results
        terms = aq.terms
        n_docs, norms = self.n_docs, None
        if stats is not None:
            n_docs, norms = max(int(stats.n_docs), 0), self._norms(stats.avg_lens())
        postings = self.postings.query(norms)
        if stats is None:
            own = aq.own
            if own is None:  # this snapshot's N and df never change: kept with the query
                own = aq.own = self._own_stats(aq, postings)
            idfs, pairs = own.idfs, own.pairs
            results.rarest_df = own.rarest_df
        else:
            # df clamped to [0, N]: figures from elsewhere must not leave idf's domain.
            dfs = {t: int(stats.df[t]) if t in stats.df else postings.df(t)
                   for t in aq.idf_terms}
            idfs = {t: bm25f.idf_one(n_docs, min(max(df, 0), n_docs)) for t, df in dfs.items()}
            pairs = _pairs(aq, idfs)
            results.rarest_df = min((max(df, 0) for df in dfs.values()), default=None)
        site_masks = self._host_masks(tuple(sites)) if sites else None
        nosite_masks = self._host_masks(tuple(pq.excluded_sites)) if pq.excluded_sites else None
        small = sum(len(seg.doc_ids) for seg in self.segments) < EXHAUSTIVE_MAX_DOCS
        unbounded = prior is not None and prior_bound is None
        if site_only or request.exhaustive or small or unbounded or self._few(
                terms, postings, pairs, pq, timed=request.deadline is not None):
            found = self._score_all(units, pq, postings, idfs=idfs, pairs=pairs,
                                    site_masks=site_masks,
                                    nosite_masks=nosite_masks, site_only=site_only)
            if found is None:
                return results
            segs, ords, text, parts = found
            results.total = len(text)
            prior_scores = self._prior_of(prior, prior_key, segs, ords, parts)
        else:
            plan = Plan(units, idfs, pairs, pq.required, pq.excluded, site_masks, nosite_masks)
            named = prior if prior is not None and prior_key is not None else None
            top = top_text(postings, plan, self.settings, want=offset + k, prior=prior,
                           prior_bound=0.0 if prior_bound is None else prior_bound,
                           prior_key=prior_key, deadline=request.deadline,
                           prior_table=None if named is None else (
                               lambda si: self._segment_prior(named, prior_key, si)))
            segs, ords, text, prior_scores = top.segs, top.ords, top.text, top.prior
            results.total, results.total_exact = top.total, top.total_exact
            results.partial = top.partial
            results.blocks, results.blocks_read = top.blocks, top.blocks_read
            if len(text) == 0:
                return results
        final = text + prior_scores
        want = min(len(final), offset + k)
        if want <= 0:
            return results
        heads: dict[int, dict[str, str]] = {}  # stored heads read for this query

        def head_of(i: int) -> dict[str, str]:
            found = heads.get(i)
            if found is None:
                found = heads[i] = self.segments[int(segs[i])].head(int(ords[i]))
            return found

        def url_of(i: int) -> str:
            return head_of(i)["url"]

        chosen = _best(final, want, url_of)[offset:]
        maker = (SnippetMaker(set(terms), _raw_words(pq), analyzer) if request.snippets
                 else None)
        hit_segs, hit_ords = segs[chosen], ords[chosen]
        frag_ids = (self._fragments(hit_segs, hit_ords, idfs, postings)
                    if request.fragments else [None] * len(chosen))
        # each hit's numbers as Python values, one conversion per array
        seg_list, ord_list = hit_segs.tolist(), hit_ords.tolist()
        hit_ids = [int(self.segments[si].doc_ids[o]) for si, o in zip(seg_list, ord_list,
                                                                        strict=True)]
        known_only = (self._unfetched.contains(np.asarray(hit_ids, dtype=np.int64)).tolist()
                      if len(self.unfetched) else [False] * len(chosen))
        columns = (chosen.tolist(), seg_list, ord_list, hit_ids, final[chosen].tolist(),
                   text[chosen].tolist(),
                   np.asarray(prior_scores)[chosen].tolist(), frag_ids, known_only)
        for i, si, o, doc_id, score, text_score, prior_score, frag, linked in zip(
                *columns, strict=True):
            stored = heads.get(i) or self.segments[si].head(o)  # read once: ties read some
            snippet, spans = (maker.make(*self._page_text(si, o)) if maker is not None
                              else ("", []))
            results.hits.append(Hit(
                doc_id=doc_id, url=stored.get("url", ""),
                title=stored.get("title", "") or stored.get("url", ""),
                snippet=snippet, highlights=spans, score=score,
                text_score=text_score, prior_score=prior_score,
                explain=self._explain(si, o, units, idfs, postings, n_docs=n_docs,
                                      pairs=pairs) if request.explain else None,
                fragment=frag, lang=stored.get("lang", ""),
                fetched=not linked))
        return results

    def _prior_of(self, prior: Prior | None, key: Hashable | None, segs: np.ndarray,
                  ords: np.ndarray, parts: Sequence[tuple[int, int]] | None = None
                  ) -> np.ndarray:
        """``prior(doc_ids)`` of the matches (segment ``segs[i]``, ordinal ``ords[i]``), zeros
        without a prior.  A prior with a key is read from its table of each segment's pages
        (:meth:`_segment_prior`): the same floats (each page's prior is element-wise), one
        gather instead of the prior's lookups and sigmoid over every match.  ``parts``: the
        matches come as runs of one segment each, (segment, length) in order."""
        if prior is None:
            return np.zeros(len(ords))
        if key is None:
            return np.asarray(prior(self._doc_ids(segs, ords)), dtype=np.float64)
        if len(self.segments) == 1:
            return self._segment_prior(prior, key, 0)[ords]
        if parts is not None:
            runs = np.split(ords, np.cumsum([n for _, n in parts])[:-1])
            return np.concatenate([self._segment_prior(prior, key, si)[run]
                                   for (si, _), run in zip(parts, runs, strict=True)])
        out = np.empty(len(ords), dtype=np.float64)
        for si in distinct_small(segs).tolist():
            sel = segs == si
            out[sel] = self._segment_prior(prior, key, si)[ords[sel]]
        return out

    def _segment_prior(self, prior: Prior, key: Hashable, si: int) -> np.ndarray:
        """The prior of every page of segment ``si`` (by ordinal), kept under ``key`` (the
        prior's name: IndexQuery.prior_key, with the searcher's language and fetched priors)."""
        table = self._priors.get((key, si))
        if table is None:
            ids = np.asarray(self.segments[si].doc_ids, dtype=np.int64)
            table = np.asarray(prior(ids), dtype=np.float64)
            self._priors.put((key, si), table)
        return table

    def _lang_prior(self, lang: str, prior: Prior | None, bound: float | None,
                    key: Hashable | None) -> tuple[Prior, float | None, Hashable | None]:
        """``prior`` plus BM25FSettings.lang_prior for the pages in ``lang``; its bound and
        its key (a name of its own per language, when ``prior`` has one or is none)."""
        ids = self._lang_docs(lang)
        bonus = self.settings.lang_prior

        def with_lang(doc_ids: np.ndarray) -> np.ndarray:
            extra = np.where(ids.contains(doc_ids), bonus, 0.0)
            return extra if prior is None else np.asarray(prior(doc_ids)) + extra

        if prior is None:
            return with_lang, bonus, ("lang", lang)
        return (with_lang, None if bound is None else bound + bonus,
                None if key is None else (key, "lang", lang))

    def _lang_docs(self, lang: str) -> IdSet:
        """The URL IDs of the pages stored with language ``lang`` (read once per searcher and
        language from the segments' stored heads)."""
        found = self._lang_ids.get(lang)
        if found is None:
            # English's pages include those of unknown language (analysed as English).
            match = {lang, "", None} if lang == ENGLISH else {lang}
            ids = [np.asarray(seg.doc_ids[seg.lang_ordinals(match)], dtype=np.int64)
                   for seg in self.segments if match & set(seg.langs())]
            found = self._lang_ids[lang] = IdSet(
                np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64))
        return found

    def _analyzer(self, alang: str) -> Analyzer:
        analyzer = self._analyzers.get(alang)
        if analyzer is None:
            analyzer = self._analyzers[alang] = self.analyzer.for_lang(alang)
        return analyzer

    def query_analysis(self, q: str, lang: str | None = None, hint: str | None = None, *,
                       langs: Mapping[str, int] | None = None
                       ) -> tuple[str, str | None, Analyzer, list[Analyzer]]:
        """(the query without its ``lang:`` operator, its language, the analyzer for it, the
        analyzers of the index's other languages when the query's is not sure: its words are
        searched in their forms too, indexer/query.py ``alternates``).  ``langs``: the
        collection's query languages (:func:`query_langs_of`; None: this index's)."""
        qlangs = self.query_langs if langs is None else langs
        text, op_lang = split_lang(q)
        qlang, sure = query_language(text, explicit=op_lang or lang, hint=hint,
                                     index_langs=qlangs)
        alang = analysis_language(qlang)
        others: list[Analyzer] = []
        if not sure:
            ranked = sorted(qlangs.items(), key=lambda kv: -kv[1])
            for other in dict.fromkeys(analysis_language(k or None) for k, _ in ranked):
                if other != alang and len(others) < QUERY_LANG_ALTERNATES:
                    others.append(self._analyzer(other))
        return text, qlang, self._analyzer(alang), others

    def _analysed(self, text: str, lang: str | None, hint: str | None,
                  qlangs: Mapping[str, int], *, own_langs: bool) -> AnalysedQuery:
        """``text`` parsed and analysed (:meth:`query_analysis`, indexer/query.py), kept per
        query text, ``lang``, ``hint`` and collection languages (``own_langs``: this index's)
        while this searcher serves (indexer/query_cache.py); QueryError on a bad query."""
        key = (text, lang, hint, None if own_langs else tuple(sorted(qlangs.items())))
        found = self._queries.get(key)
        if found is not None:
            return found
        qtext, qlang, analyzer, others = self.query_analysis(text, lang, hint, langs=qlangs)
        pq = parse_query(qtext, analyzer, stop_pairs=self.index_settings.stop_pairs,
                         others=others)
        pq.text = text
        made = AnalysedQuery.of(qlang, analyzer, pq)
        self._queries.put(key, made)
        return made

    def _own_stats(self, aq: AnalysedQuery, postings: QueryPostings) -> OwnStats:
        """A query's idfs and proximity pairs under this searcher's own statistics, and the
        document frequency of its rarest word."""
        dfs = {t: postings.df(t) for t in aq.idf_terms}
        idfs = {t: bm25f.idf_one(self.n_docs, df) for t, df in dfs.items()}
        return OwnStats(idfs, _pairs(aq, idfs), min(dfs.values(), default=None))

    def _few(self, terms: list[str], postings: QueryPostings, pairs: list[tuple[str, str]],
             pq: ParsedQuery, *, timed: bool) -> bool:
        """Whether scoring every posting costs less than the pruning's rounds: the query's
        lists hold at most EXHAUSTIVE_FEW_POSTINGS in all (its set-up outweighs them); or at
        most EXHAUSTIVE_MAX_POSTINGS and the query places words (proximity pairs, phrases),
        whose checks the pruning makes candidate by candidate while a query of common words
        leaves most candidates open, once the occurrences they need are decoded whole, or
        before that without a deadline (``timed``; the exhaustive path does not watch one:
        the pruned path serves the first such query and decodes them)."""
        total = 0
        for term in terms:
            for si in range(len(self.segments)):
                p = postings.get(term, si)
                total += 0 if p is None else len(p.docs)
            if total > EXHAUSTIVE_MAX_POSTINGS:
                return False
        if total <= EXHAUSTIVE_FEW_POSTINGS:
            return True
        placed = {t for ab in pairs for t in ab} if self.settings.proximity_weight > 0 else set()
        placed |= {t for ph in [*pq.required, *pq.excluded] if len(ph.terms) > 1
                   for t in ph.terms}
        if not placed:
            return False  # one word, or words apart: block-max pruning skips most blocks
        return not timed or all(postings.has_position_keys(t, si) for t in placed
                                for si in range(len(self.segments))
                                if postings.get(t, si) is not None)

    def _score_all(self, units: list[tuple[str, ...]], pq: ParsedQuery,
                   postings: QueryPostings, *, idfs: dict[str, float],
                   pairs: list[tuple[str, str]], site_masks: list[np.ndarray] | None,
                   nosite_masks: list[np.ndarray] | None, site_only: bool
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int]]] | None:
        """Every match's (segment, ordinal, text score) and the runs of one segment they come
        in ((segment, matches) in order), every posting scored term-at-a-time
        into arrays as long as each segment (or, where the query's lists are short beside the
        segment, over the matches alone: the same sums): the reference indexer/topk.py equals,
        and the listing of a ``site:`` query without words."""
        cand_seg: list[np.ndarray] = []
        cand_ord: list[np.ndarray] = []
        cand_score: list[np.ndarray] = []
        runs: list[tuple[int, int]] = []
        for si, seg in enumerate(self.segments):
            if len(seg.doc_ids) == 0:
                continue
            score = self._score_sparse if (
                not site_only and self._sparse_fits(si, units, postings, bool(pq.required))
            ) else self._score_dense
            found = score(si, units, pq, postings, idfs=idfs, pairs=pairs,
                          site_masks=site_masks, nosite_masks=nosite_masks, site_only=site_only)
            if found is not None:
                runs.append((si, len(found[0])))
                cand_seg.append(np.full(len(found[0]), si, dtype=np.int32))
                cand_ord.append(found[0])
                cand_score.append(found[1])
        if not cand_ord:
            return None
        if len(cand_ord) == 1:
            return cand_seg[0], cand_ord[0], cand_score[0], runs
        return (np.concatenate(cand_seg), np.concatenate(cand_ord), np.concatenate(cand_score),
                runs)

    def _score_dense(self, si: int, units: list[tuple[str, ...]], pq: ParsedQuery,
                     postings: QueryPostings, *, idfs: dict[str, float],
                     pairs: list[tuple[str, str]], site_masks: list[np.ndarray] | None,
                     nosite_masks: list[np.ndarray] | None, site_only: bool
                     ) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`_score_all` of one segment in arrays as long as it: (ordinals ascending,
        text scores), or None without a match."""
        s = self.settings
        score, matched, _ = postings.unit_scores(units, si, idfs)
        bonus = self._proximity(pairs, si, postings, idfs)
        if bonus is not None:
            score += bonus
        # "site:host" alone lists the host's pages (text score 0, ordered by the prior).
        cand = self.live[si].copy() if site_only else matched > 0
        for phrase in pq.required:
            cand &= postings.phrase_mask(phrase, si)
        for phrase in pq.excluded:
            cand &= ~postings.phrase_mask(phrase, si)
        if site_masks is not None:
            cand &= site_masks[si]
        if nosite_masks is not None:
            cand &= ~nosite_masks[si]
        ords = np.flatnonzero(cand)
        if len(ords) == 0:
            return None
        if len(units) == 1:  # every match holds the one unit: coord 1.0 ** power is 1.0
            return ords, score[ords]
        coord = (matched[ords] / max(len(units), 1)) ** s.coord_power
        return ords, score[ords] * coord

    def _score_sparse(self, si: int, units: list[tuple[str, ...]], pq: ParsedQuery,
                      postings: QueryPostings, *, idfs: dict[str, float],
                      pairs: list[tuple[str, str]], site_masks: list[np.ndarray] | None,
                      nosite_masks: list[np.ndarray] | None, site_only: bool = False
                      ) -> tuple[np.ndarray, np.ndarray] | None:
        """:meth:`_score_all` of one segment whose query lists are short beside it, or whose
        matches must hold a phrase: the same sums over the matches alone (the distinct
        ordinals of the lists, or the pages holding the phrases), not over arrays as long as
        the segment.  Each match's terms, then its pairs, are added in the same order as
        there (``bincount`` adds its weights in input order), so every score is the same
        float.  (ordinals ascending, text scores), or None without a match."""
        s = self.settings
        sums = (self._sums_within(si, self._phrase_holders(si, pq, postings), units, postings,
                                  idfs) if pq.required
                else self._sums_over_lists(si, units, postings, idfs))
        if sums is None:
            return None
        ords, score, matched = sums
        if s.proximity_weight > 0 and pairs:
            bonus = np.zeros(len(ords), dtype=np.float64)
            for a, b in pairs:
                docs, share = postings.near_pairs(a, b, si)
                if len(docs):
                    hit, j = member(docs, ords)
                    bonus[j[hit]] += s.proximity_weight * min(idfs[a], idfs[b]) * share[hit]
            score += bonus
        if pq.required or pq.excluded or site_masks is not None or nosite_masks is not None:
            keep = self._filter_sparse(si, ords, pq, postings, site_masks=site_masks,
                                       nosite_masks=nosite_masks)
            if not keep.all():
                ords, score, matched = ords[keep], score[keep], matched[keep]
        if len(ords) == 0:
            return None
        if len(units) == 1:  # every match holds the one unit: coord 1.0 ** power is 1.0
            return ords, score
        coord = (matched / len(units)) ** s.coord_power
        return ords, score * coord

    @staticmethod
    def _sums_over_lists(si: int, units: list[tuple[str, ...]], postings: QueryPostings,
                         idfs: dict[str, float]
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(the ordinals in any of the query's lists, their BM25F sums, units matched)."""
        doc_parts: list[np.ndarray] = []
        score_parts: list[np.ndarray] = []
        unit_parts: list[np.ndarray] = []
        for unit in units:
            held: list[np.ndarray] = []
            for term in unit:
                p = postings.get(term, si)
                if p is None or len(p.docs) == 0:
                    continue
                doc_parts.append(p.docs)
                score_parts.append(idfs[term] * postings.saturated(p, si))
                held.append(p.docs)
            if held:
                unit_parts.append(held[0] if len(held) == 1 else distinct(np.concatenate(held)))
        if not doc_parts:
            return None
        if len(doc_parts) == 1:  # 0 + each posting's score
            return (doc_parts[0], np.asarray(score_parts[0] + 0.0, dtype=np.float64),
                    np.ones(len(doc_parts[0]), dtype=np.int64))
        docs = np.concatenate(doc_parts)
        ords = distinct(docs)  # np.unique(docs, return_inverse=True), in two calls
        inv = np.searchsorted(ords, docs)
        score = np.bincount(inv, weights=np.concatenate(score_parts),
                            minlength=len(ords)).astype(np.float64, copy=False)
        if len(unit_parts) == len(doc_parts):  # a list per unit: a unit per posting
            matched = np.bincount(inv, minlength=len(ords))
        else:
            matched = np.bincount(np.searchsorted(ords, np.concatenate(unit_parts)),
                                  minlength=len(ords))
        return ords, score, matched.astype(np.int64, copy=False)

    @staticmethod
    def _sums_within(si: int, ords: np.ndarray, units: list[tuple[str, ...]],
                     postings: QueryPostings, idfs: dict[str, float]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(those of ``ords`` in any of the query's lists, their BM25F sums, units matched),
        each list probed for ``ords`` (sorted live ordinals of segment ``si``)."""
        score = np.zeros(len(ords), dtype=np.float64)
        matched = np.zeros(len(ords), dtype=np.int64)
        for unit in units:
            any_hit = np.zeros(len(ords), dtype=bool) if len(unit) > 1 else None
            for term in unit:
                p = postings.get(term, si)
                if p is None or len(p.docs) == 0:
                    continue
                hit, j = p.find(ords)
                score[hit] += idfs[term] * postings.saturated(p, si)[j[hit]]
                if any_hit is None:
                    matched += hit
                else:
                    any_hit |= hit
            if any_hit is not None:
                matched += any_hit
        keep = matched > 0
        if not keep.any():
            return None
        return ords[keep], score[keep], matched[keep]

    @staticmethod
    def _phrase_holders(si: int, pq: ParsedQuery, postings: QueryPostings) -> np.ndarray:
        """The live ordinals of segment ``si`` holding every phrase the query requires."""
        held = postings.phrase_docs(pq.required[0], si)
        for phrase in pq.required[1:]:
            held = held[member(held, postings.phrase_docs(phrase, si))[0]]
        return held

    def _sparse_fits(self, si: int, units: list[tuple[str, ...]], postings: QueryPostings,
                     pq_required: bool) -> bool:
        """Whether the query requires a phrase, or has one list in segment ``si``, or its
        lists there hold at most SPARSE_SHARE of its documents (then :meth:`_score_sparse`
        sums its scores)."""
        if pq_required:
            return True  # the pages holding the phrases: at most the segment's
        sizes = [len(p.docs) for u in units for t in u
                 if (p := postings.get(t, si)) is not None and len(p.docs)]
        # one list (one word): its scores are the sums, whatever its length
        return len(sizes) <= 1 or sum(sizes) <= SPARSE_SHARE * len(self.segments[si].doc_ids)

    @staticmethod
    def _filter_sparse(si: int, ords: np.ndarray, pq: ParsedQuery, postings: QueryPostings, *,
                       site_masks: list[np.ndarray] | None,
                       nosite_masks: list[np.ndarray] | None) -> np.ndarray:
        """Which of the matches ``ords`` (of segment ``si``) pass the query's phrases and
        ``site:`` filters (as :meth:`_score_all`'s masks)."""
        keep = np.ones(len(ords), dtype=bool)
        for phrase in pq.required:
            keep &= member(ords, postings.phrase_docs(phrase, si))[0]
        for phrase in pq.excluded:
            keep &= ~member(ords, postings.phrase_docs(phrase, si))[0]
        if site_masks is not None:
            keep &= site_masks[si][ords]
        if nosite_masks is not None:
            keep &= ~nosite_masks[si][ords]
        return keep

    def _fragments(self, segs: np.ndarray, ords: np.ndarray, idfs: dict[str, float],
                   postings: QueryPostings) -> list[str | None]:
        """For each hit (``segs[i]``, ``ords[i]``), the id of its fragment whose key best
        matches the query (indexer/fragments.py), or None.  Only a page whose defs field holds
        a query term has one to offer: that is read from the postings the query already
        decoded (one search per term and segment for all the hits), and most hits stop there."""
        wanted: list[dict[str, float]] = [{} for _ in range(len(ords))]
        for si in distinct_small(segs).tolist():
            at = np.flatnonzero(segs == si)
            mine = ords[at]
            for term, idf in idfs.items():
                p = postings.get(term, si)
                if p is None or len(p.docs) == 0:
                    continue
                hit, j = member(mine, p.docs)
                held = hit & (p.tf_rows(j)[:, _DEFS] > 0)
                for h in np.flatnonzero(held).tolist():
                    wanted[int(at[h])][term] = idf
        out: list[str | None] = []
        for i, terms in enumerate(wanted):
            out.append(self._fragment(int(segs[i]), int(ords[i]), terms) if terms else None)
        return out

    def _fragment(self, si: int, ordinal: int, wanted: dict[str, float]) -> str | None:
        """The best fragment of one hit for the query terms its defs field holds."""
        seg = self.segments[si]
        key = (seg.serial, ordinal)
        frags = self._frags.get(key)
        if frags is None:
            frags = StoredFragments(read_fragments(seg.frags_blob(ordinal), self.analyzer.terms,
                                                   name=f"{seg.name}/{ordinal}"))
            self._frags.put(key, frags)
        return frags.best(wanted)

    def locate(self, doc_ids: Sequence[int]) -> list[tuple[int, int] | None]:
        """(segment, ordinal) of the live version of each URL ID, or None if not indexed."""
        out: list[tuple[int, int] | None] = [None] * len(doc_ids)
        wanted = np.asarray(doc_ids, dtype=np.int64)
        for si, seg in enumerate(self.segments):
            if len(seg.doc_ids) == 0 or len(wanted) == 0:
                continue
            pos = np.minimum(np.searchsorted(seg.doc_ids, wanted), len(seg.doc_ids) - 1)
            found = (seg.doc_ids[pos] == wanted) & self.live[si][pos]
            for j in np.flatnonzero(found).tolist():
                out[j] = (si, int(pos[j]))
        return out

    def snippets(self, query: str, doc_ids: Sequence[int]
                 ) -> list[tuple[str, list[tuple[int, int]]] | None]:
        """The snippet (and its highlight spans) of each page for ``query``, as :meth:`search`
        makes them; None for a URL ID not indexed here (QueryError on a bad query)."""
        text, _, analyzer, others = self.query_analysis(query)
        pq = parse_query(text, analyzer, others=others)
        terms = {t for u in pq.units() for t in u}
        maker = SnippetMaker(terms, _raw_words(pq), analyzer)
        return [None if at is None else maker.make(*self._page_text(*at))
                for at in self.locate(doc_ids)]

    def surface_of(self, term: str, pages: int = SURFACE_PAGES) -> str | None:
        """How a plain ``term`` is written in the text of a page holding it (folded, its
        accents kept: ``установк`` -> ``установка``), from the first ``pages`` pages (newest
        segment first) whose text shows it; None when none does.  For a correction whose term
        no title holds (indexer/spelling.py)."""
        postings = self.postings.query(None)
        looked = 0
        for si in reversed(range(len(self.segments))):
            p = postings.get(term, si)
            if p is None:
                continue
            for ordinal in p.docs[:pages - looked].tolist():
                looked += 1
                text, view, offsets = self._page_text(si, ordinal)
                lang = self.segments[si].head(ordinal)["lang"]
                analyzer = self._analyzer(analysis_language(lang or None))
                # the snippets' search for the term, then a word that is the term alone (not
                # a compound holding it)
                for a, b, _ in SnippetMaker({term}, [], analyzer).matches(view, text, offsets):
                    word = fold_text(text[a:b])
                    if analyzer.terms(word) == [term]:
                        return word
            if looked >= pages:
                break
        return None

    def _page_text(self, si: int, ordinal: int) -> PageText:
        """The scanned part of a page's stored text, with its match view and the view's
        offsets (snippet.read_text; cached)."""
        seg = self.segments[si]
        key = (seg.serial, ordinal)
        hit = self._texts.get(key)
        if hit is None:
            hit = read_text(seg.text_blob(ordinal), name=f"{seg.name}/{ordinal}")
            self._texts.put(key, hit)
        return hit

    def _doc_ids(self, segs: np.ndarray, ords: np.ndarray) -> np.ndarray:
        if len(self.segments) == 1:
            return np.asarray(self.segments[0].doc_ids[ords], dtype=np.int64)
        out = np.empty(len(ords), dtype=np.int64)
        for si in np.flatnonzero(np.bincount(segs, minlength=len(self.segments))).tolist():
            sel = segs == si
            out[sel] = self.segments[si].doc_ids[ords[sel]]
        return out

    def _explain(self, si: int, ordinal: int, units: list[tuple[str, ...]],
                 idfs: dict[str, float], postings: QueryPostings, *, n_docs: int,
                 pairs: list[tuple[str, str]]) -> dict[str, Any]:
        """Per term: idf, tf per field, weighted normalised tf per field, score; the proximity
        bonus; coord.  ``text_score`` = coord * (bm25f + proximity), the hit's text score."""
        s = self.settings
        coeff = postings.coefficients[si][ordinal]
        avg_lens = self.avg_lens if postings.norms is None else postings.norms.avg_lens
        terms_out: dict[str, Any] = {}
        matched_units = 0
        for unit in units:
            unit_hit = False
            for term in unit:
                p = postings.get(term, si)
                if p is None:
                    continue
                j = int(np.searchsorted(p.docs, ordinal))
                if j >= len(p.docs) or p.docs[j] != ordinal:
                    continue
                unit_hit = True
                tf = p.tf_rows(np.array([j]))[0].astype(np.float64)
                parts = tf * coeff
                tt = float(parts.sum())
                share = float(bm25f.title_share(
                    tf[bm25f.TITLE:bm25f.TITLE + 1],
                    self.segments[si].field_lens[ordinal:ordinal + 1, bm25f.TITLE])[0])
                terms_out[term] = {
                    "idf": idfs[term],
                    "tf": {f: int(tf[i]) for i, f in enumerate(FIELDS) if tf[i]},
                    "weighted_tf": {f: float(parts[i]) for i, f in enumerate(FIELDS) if tf[i]},
                    "title_share": share,
                    "score": idfs[term] * (tt / (s.k1 + tt) + s.title_share * share),
                }
            matched_units += unit_hit
        coord = (matched_units / len(units)) ** s.coord_power if units else 0.0
        total = sum(t["score"] for t in terms_out.values())
        bonus = float(proximity_bonus(postings, s, pairs, idfs, si=si,
                                      docs=np.array([ordinal], dtype=np.int64))[0])
        return {"terms": terms_out, "matched_units": matched_units, "units": len(units),
                "coord": coord, "bm25f": total, "proximity": bonus,
                "text_score": (total + bonus) * coord,
                "k1": s.k1, "n_docs": n_docs,
                "avg_field_lengths": dict(zip(FIELDS, map(float, avg_lens), strict=True))}


def _best(scores: np.ndarray, m: int, url_of: Callable[[int], str]) -> np.ndarray:
    """Indices of the ``m`` best scores by descending score, ties by the smaller URL: what
    :func:`_top` then :func:`_ranked` give, in fewer steps.  Of many matches, those at least
    the ``m``-th largest score (found by partitioning the values, not their indices) are
    put in order: ``m`` of them, more when scores tie at the cut."""
    n = len(scores)
    if n <= SMALL_TOP:
        return _best_of_few(scores, m, url_of)
    cand = np.flatnonzero(scores >= np.partition(scores, n - m)[n - m])
    return cand[_best_of_few(scores[cand], m, lambda j: url_of(int(cand[j])))]


def _best_of_few(scores: np.ndarray, m: int, url_of: Callable[[int], str]) -> np.ndarray:
    """:func:`_best` of a few scores (as rare words have): sorted whole, one numpy call, and
    the best put in order in Python; the URLs read only for scores that tie."""
    n = len(scores)
    if n <= m:  # every match
        order, values = list(range(n)), scores.tolist()
    else:
        order = np.argsort(-scores, kind="stable")[: m + 1].tolist()
        values = scores[order].tolist()
        if values[m] == values[m - 1]:
            return _ranked(scores, _top(scores, m, url_of), url_of)  # the URLs say who is in
        order, values = order[:m], values[:m]
    best = list(zip(values, order, strict=True))
    if len(set(values)) == len(values):
        best.sort(key=lambda p: -p[0])
    else:
        tied = {v for v, c in Counter(values).items() if c > 1}
        best.sort(key=lambda p: (-p[0], url_of(p[1]) if p[0] in tied else ""))
    return np.asarray([i for _, i in best], dtype=np.int64)


def _top(scores: np.ndarray, m: int, url_of: Callable[[int], str]) -> np.ndarray:
    """Indices of the ``m`` best scores, ties at the cut broken by the smaller URL (so the
    pruned and the exhaustive evaluation keep the same documents, and so do one index and
    shards numbering their URLs apart)."""
    if m >= len(scores):
        return np.arange(len(scores))
    part = np.argpartition(-scores, m - 1)[:m]
    cut = scores[part].min()
    if np.count_nonzero(scores == cut) == np.count_nonzero(scores[part] == cut):
        return part  # no tie at the cut left outside
    above = np.flatnonzero(scores > cut)
    ties = sorted(np.flatnonzero(scores == cut).tolist(), key=url_of)[: m - len(above)]
    return np.concatenate([above, np.asarray(ties, dtype=np.int64)])


def _ranked(scores: np.ndarray, chosen: np.ndarray, url_of: Callable[[int], str]
            ) -> np.ndarray:
    """``chosen`` by descending score, ties by the smaller URL: one order whatever the URL IDs
    (shards of a partitioned crawl number their URLs apart, api/fanout.py merges their hits by
    score and URL).  The URLs are read only when two scores tie."""
    picked = chosen.tolist()
    values = scores[chosen].tolist()
    if len(set(values)) == len(values):
        order = [i for _, i in sorted(zip(values, picked, strict=True), key=lambda p: -p[0])]
    else:
        order = sorted(picked, key=lambda i: (-scores[i], url_of(i)))
    return np.asarray(order, dtype=np.int64)


def _pairs(aq: AnalysedQuery, idfs: dict[str, float]) -> list[tuple[str, str]]:
    """The query's proximity pairs: consecutive plain words that both have an idf, and its
    stop pairs whose words are rare enough (STOP_PAIR_MIN_IDF)."""
    return [(a, b) for a, b in aq.word_pairs if a in idfs and b in idfs] + [
        (a, b) for a, b in aq.stop_pairs if min(idfs[a], idfs[b]) >= STOP_PAIR_MIN_IDF]


def _raw_words(pq: ParsedQuery) -> list[str]:
    """The words a person typed (of the query's groups and required phrases), for snippets."""
    return [w for g in pq.groups for p in g for w in p.text.split()] + [
        w for p in pq.required for w in p.text.split()]


def open_shard(index_dir: Path, verify: bool = True, *, reuse: Shard | None = None,
               manifests: RereadJson | None = None, outdated_ok: bool = False) -> Shard:
    """The segments the manifest of ``index_dir`` names now, their files checked against it
    (``verify``); IndexMissing / IndexCorrupt.  ``reuse``: a shard opened from ``index_dir``
    before; a segment it holds that the manifest names with the same files (sizes and CRC32s)
    is taken as it was opened (segments never change).  ``manifests``: a poller's reader of
    the manifest (core/checked.py)."""
    kept = {} if reuse is None or reuse.index_dir != index_dir else {
        entry.name: (entry, seg)
        for entry, seg in zip(reuse.manifest.segments, reuse.segments, strict=True)}

    def open_named(manifest: Manifest) -> Shard:
        segments = []
        for entry in manifest.segments:
            old = kept.get(entry.name)
            if old is not None and old[0].files == entry.files:
                segments.append(old[1])
                continue
            directory = index_dir / entry.name
            if verify:
                verify_segment(directory, entry)
            segments.append(SegmentReader(directory, outdated_ok=outdated_ok))
        return Shard(index_dir, manifest, segments)

    # An indexing run may have replaced the manifest and swept old segments between our
    # reads: try the new manifest once before calling it corrupt.
    return open_consistent(lambda: read_manifest(index_dir, manifests), open_named,
                           generation=lambda m: m.generation, retry_on=IndexCorrupt, attempts=2)


