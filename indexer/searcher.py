"""The query side: a read-only snapshot of the live segments, scored with BM25F.

Layers (STYLE.md): indexer/bm25f.py holds the pure formulas; :class:`Searcher` is the configured
model (settings, collection statistics over every live segment, per-document field
coefficients precomputed at open); :meth:`Searcher.search` is the per-query scorer and top-k
collector.

Scoring is vectorised over postings: for each query term, each segment's postings are decoded
(indexer/codec.py) and their BM25F contributions scattered into a dense score array of that
segment (one float per document), so no Python loop runs per document.  The caller's ``prior``
(link importance, at most ``prior_bound``) is added to every match's text score and the exact
top k of the sum taken with ``argpartition``; on a large index indexer/topk.py finds the same
top k from the few blocks of postings that can hold it.

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

Remote shards (api/fanout.py) cannot share memory, so a query there is scored in two rounds
(Elasticsearch's "dfs_query_then_fetch"): :meth:`Searcher.collection_stats` gives a shard's N,
field length sums and the query terms' df; the sums over every shard come back as ``stats=``
of :meth:`Searcher.search`, which then scores exactly as one index over all of them would.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
from pyroaring import BitMap

from websift.core.cache import Cache
from websift.core.checked import open_consistent
from websift.core.datadir import DataDir
from websift.indexer import bm25f
from websift.indexer.analysis import Analyzer
from websift.indexer.errors import IndexCorrupt
from websift.indexer.fragments import StoredFragments, read_fragments
from websift.indexer.liveness import Shard, shard_live_masks
from websift.indexer.manifest import Manifest, read_manifest, verify_segment
from websift.indexer.manifest import current_generation as _manifest_generation
from websift.indexer.query import ParsedQuery, Phrase, parse_query
from websift.indexer.segment import SegmentReader
from websift.indexer.settings import (
    DEFAULT_K,
    DENSE_POSTINGS_SHARE,
    EXHAUSTIVE_MAX_DOCS,
    FIELDS,
    FRAGMENT_CACHE_BYTES,
    MAX_QUERY_CHARS,
    N_FIELDS,
    PAIRS_CACHE_BYTES,
    POSTINGS_CACHE_BYTES,
    SITE_MASK_CACHE_BYTES,
    STOP_PAIR_MIN_IDF,
    TEXT_CACHE_BYTES,
    BM25FSettings,
)
from websift.indexer.snippet import PageText, SnippetMaker, read_text
from websift.indexer.topk import Plan, proximity_bonus, top_text

Prior = Callable[[np.ndarray], np.ndarray]
_FIELD_SHIFT = 25
_DOC_SHIFT = 29
_DEFS = FIELDS.index("defs")  # the field a page's fragments are indexed in
_POS_MASK = (1 << _FIELD_SHIFT) - 1


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


@dataclass(frozen=True)
class CollectionStats:
    """What BM25F needs of the whole collection: live documents, the sum of each field's
    length over them (FIELDS order), and the document frequency of some terms."""

    n_docs: int
    field_lengths: tuple[int, ...]
    df: Mapping[str, int]

    @staticmethod
    def total(parts: Sequence[CollectionStats]) -> CollectionStats:
        """The statistics of the union of disjoint collections: every figure summed."""
        df: dict[str, int] = {}
        for part in parts:
            for term, n in part.df.items():
                df[term] = df.get(term, 0) + n
        lengths = [sum(col) for col in zip(*(p.field_lengths for p in parts), strict=True)]
        return CollectionStats(sum(p.n_docs for p in parts), tuple(lengths) or (0,) * N_FIELDS,
                               df)

    def avg_lens(self) -> np.ndarray:
        return np.asarray(self.field_lengths, dtype=np.float64) / max(self.n_docs, 1)


def current_generation(data: DataDir) -> int | None:
    """The generation the manifest names now (reads the manifest only), or None."""
    return _manifest_generation(data.index_dir)


_NO_PAIRS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
_ARRAY_OVERHEAD = 112  # bytes of an ndarray object besides its data (sys.getsizeof)


def _mask_bytes(masks: list[np.ndarray]) -> int:
    """Bytes a site filter's cached masks hold: the arrays, their headers, and the key (a
    query's site: values, so at most a query's length)."""
    return sum(m.nbytes + _ARRAY_OVERHEAD for m in masks) + MAX_QUERY_CHARS


def _nbytes(p: _Postings | None) -> int:
    """Bytes a cached entry holds: its arrays, each once (with every page live, ``all_docs``
    is ``docs``; arrays shared with another entry are counted again), and the saturated
    scores and the positions' starts made later (float64, int64)."""
    if p is None:
        return 64
    arrays = {id(a): a.nbytes for a in (p.docs, p.tfs, p.all_tfs, p.all_docs, p.dense)
              if a is not None}
    return int(sum(arrays.values()) + 8 * len(p.docs) + 8 * len(p.all_docs)
               + len(p.docs) // 8)  # + block maxima (bounds and priors)


@dataclass
class _Postings:
    docs: np.ndarray  # live ordinals
    tfs: np.ndarray  # (n, fields)
    row: int
    all_tfs: np.ndarray  # tf matrix before the live filter (positions are grouped by it)
    all_docs: np.ndarray
    # tf~/(k1 + tf~) of each posting: fixed for a snapshot (lengths and settings never change
    # under it), so computed once per cached entry; idf is applied per query.
    saturated: np.ndarray | None = None
    # The same under other collection statistics (a remote shard scoring with the global
    # ones): (their key, the array), replaced together in one assignment.
    saturated_for: tuple[bytes, np.ndarray] | None = None
    # For indexer/topk.py, made on first use: where each posting's positions start,
    # and per block of 128 postings the largest of ``saturated`` (its exact block bounds).
    pos_starts: np.ndarray | None = None
    block_max: np.ndarray | None = None
    # For a list most pages hold (DENSE_POSTINGS_SHARE): per ordinal of the segment, the index
    # of its live posting in ``docs`` or -1 (int32).
    dense: np.ndarray | None = None
    # Per block, the largest prior of its pages under one prior (its key, the array).
    block_prior: tuple[Hashable, np.ndarray] | None = None


@dataclass(frozen=True)
class _Norms:
    """Average field lengths and each segment's per-document field coefficients under them."""

    key: bytes
    avg_lens: np.ndarray
    coefficients: list[np.ndarray]


class Searcher:
    """A read-only snapshot of the index generation the manifest names when opened (or of one
    generation of each of several shards)."""

    def __init__(self, manifest: Manifest, segments: list[SegmentReader],
                 settings: BM25FSettings | None = None, *,
                 site_cache_bytes: int | None = None, shards: Sequence[Shard] = ()) -> None:
        """``manifest`` and ``segments``: one index; or ``shards`` (then those two are the first
        shard's, kept for callers that rebuild a searcher with other settings)."""
        self.shards = list(shards) or [Shard(None, manifest, segments)]
        self.manifest = self.shards[0].manifest
        self.generations = tuple(s.manifest.generation for s in self.shards)
        # One number that grows whenever any shard's generation does (they only grow): the
        # generation itself with one shard.
        self.generation = sum(self.generations)
        self.segments = [seg for s in self.shards for seg in s.segments]
        self.settings = settings or BM25FSettings()
        self.analyzer = Analyzer()
        self.live = shard_live_masks(self.shards)
        self._all_live = [bool(m.all()) for m in self.live]
        self.n_docs = int(sum(int(m.sum()) for m in self.live))
        sums = np.zeros(N_FIELDS, dtype=np.float64)
        for seg, live in zip(self.segments, self.live, strict=True):
            if len(seg.field_lens):
                sums += seg.field_lens[live].sum(axis=0)
        self.field_length_sums = sums  # whole numbers, exact in float64 (< 2**53)
        self.avg_lens = sums / max(self.n_docs, 1)
        s = self.settings
        # A field the settings do not name has weight 0 (settings written before it existed).
        self.weights = np.array([s.weights.get(f, 0.0) for f in FIELDS], dtype=np.float64)
        self.b = np.array([s.b.get(f, 0.0) for f in FIELDS], dtype=np.float64)
        self._weighted_field = np.zeros(16, dtype=bool)
        self._weighted_field[:N_FIELDS] = self.weights > 0
        self.coefficients = self._coefficients(self.avg_lens)
        # Coefficients under the last other statistics a caller asked for (a front server
        # sends the same global ones with every query): one set, replaced when they change.
        self._other_norms: _Norms | None = None
        # Shared by the threads searching this snapshot (its segments never change), each
        # bounded by bytes (indexer/settings.py): what queries ask cannot grow the process.
        self._texts: Cache[tuple[int, int], PageText] = Cache(
            TEXT_CACHE_BYTES, lambda t: sys.getsizeof(t[0]) + sys.getsizeof(t[1]))
        self._frags: Cache[tuple[int, int], StoredFragments] = Cache(
            FRAGMENT_CACHE_BYTES, StoredFragments.size)
        self._decoded: Cache[tuple[int, str], _Postings | None] = Cache(
            POSTINGS_CACHE_BYTES, _nbytes)
        self._pairs: Cache[tuple[int, str, str], tuple[np.ndarray, np.ndarray]] = Cache(
            PAIRS_CACHE_BYTES, lambda v: 64 + v[0].nbytes + v[1].nbytes)
        # site: filter -> per-segment masks of its documents; keyed by what users type.
        self._site_masks: Cache[tuple[str, ...], list[np.ndarray]] = Cache(
            SITE_MASK_CACHE_BYTES if site_cache_bytes is None else site_cache_bytes, _mask_bytes)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, data: DataDir, settings: BM25FSettings | None = None,
             verify: bool = True, *, site_cache_bytes: int | None = None) -> Searcher:
        """Open the generation the manifest names now; IndexMissing / IndexCorrupt."""
        shard = open_shard(data.index_dir, verify)
        return cls(shard.manifest, shard.segments, settings, site_cache_bytes=site_cache_bytes)

    @classmethod
    def open_shards(cls, index_dirs: Sequence[Path], settings: BM25FSettings | None = None,
                    verify: bool = True, *, site_cache_bytes: int | None = None,
                    reuse: Sequence[Shard] = ()) -> Searcher:
        """Open the live generation of each index directory as one searcher (module docstring).

        ``reuse``: shards of a previous searcher; one whose directory still names the same
        generation is taken as it is (its files were checked when it was opened).
        IndexMissing / IndexCorrupt (of the first shard that fails), ShardsConflict.
        """
        kept = {s.index_dir: s for s in reuse}
        shards = []
        for index_dir in index_dirs:
            old = kept.get(index_dir)
            if old is not None and read_manifest(index_dir).generation == old.manifest.generation:
                shards.append(old)
            else:
                shards.append(open_shard(index_dir, verify))
        return cls(shards[0].manifest, shards[0].segments, settings,
                   site_cache_bytes=site_cache_bytes, shards=shards)

    def doc_count(self) -> int:
        return self.n_docs

    def _coefficients(self, avg_lens: np.ndarray) -> list[np.ndarray]:
        return [bm25f.field_coefficients(seg.field_lens.astype(np.float64), avg_lens,
                                         self.weights, self.b) for seg in self.segments]

    def _norms(self, avg_lens: np.ndarray) -> _Norms | None:
        """Coefficients under other average field lengths than this searcher's own; None when
        they are its own (the usual case: then the cached saturated scores serve)."""
        if np.array_equal(avg_lens, self.avg_lens):
            return None
        key = avg_lens.tobytes()
        norms = self._other_norms
        if norms is None or norms.key != key:
            norms = _Norms(key, avg_lens, self._coefficients(avg_lens))
            self._other_norms = norms  # one assignment: a racing thread sees old or new
        return norms

    def collection_stats(self, query: str) -> CollectionStats:
        """This searcher's share of the statistics a query is scored with: live documents,
        field length sums, and the df of the query's terms (QueryError on a bad query).
        Filters (``site:``) do not change them: they are the whole collection's."""
        pq = parse_query(query, self.analyzer)
        cache: dict[tuple[int, str], _Postings | None] = {}
        terms = pq.idf_terms()
        return CollectionStats(
            n_docs=self.n_docs,
            field_lengths=tuple(int(x) for x in self.field_length_sums),
            df={t: self._df(t, cache) for t in terms})

    def segment_count(self) -> int:
        return len(self.segments)

    def caches(self) -> dict[str, Cache[Any, Any]]:
        """The searcher's caches by name (for their counters and sizes)."""
        return {"postings": self._decoded, "pairs": self._pairs, "texts": self._texts,
                "site_masks": self._site_masks, "fragments": self._frags}

    def close(self) -> None:
        self.segments = []
        self.live = []
        self.coefficients = []
        self._other_norms = None
        for cache in self.caches().values():
            cache.clear()

    # ------------------------------------------------------------------ postings
    def _postings(self, term: str, cache: dict[tuple[int, str], _Postings | None],
                  si: int) -> _Postings | None:
        key = (si, term)
        if key in cache:
            return cache[key]
        found, kept = self._decoded.lookup(key)
        if found:
            cache[key] = kept
            return kept
        seg = self.segments[si]
        row = seg.term_row(term)
        result = None
        if row >= 0:
            docs, tfs = seg.postings(row)
            if len(tfs):  # kept in the smallest type that holds them (uint8 for most words)
                tfs = tfs.astype(np.min_scalar_type(int(tfs.max())), copy=False)
            if self._all_live[si]:
                result = _Postings(docs, tfs, row, tfs, docs)
            else:
                live = self.live[si][docs]
                result = _Postings(docs[live], tfs[live], row, tfs, docs)
            n = len(seg.doc_ids)
            if len(result.docs) >= DENSE_POSTINGS_SHARE * n and n < np.iinfo(np.int32).max:
                result.dense = np.full(n, -1, dtype=np.int32)
                result.dense[result.docs] = np.arange(len(result.docs), dtype=np.int32)
        cache[key] = result
        self._decoded.put(key, result)
        return result

    def _df(self, term: str, cache: dict[tuple[int, str], _Postings | None]) -> int:
        total = 0
        for si in range(len(self.segments)):
            p = self._postings(term, cache, si)
            if p is not None:
                total += len(p.docs)
        return total

    def _phrase_mask(self, phrase: Phrase, si: int,
                     cache: dict[tuple[int, str], _Postings | None]) -> np.ndarray:
        """Live ordinals of segment ``si`` holding the phrase (terms at their offsets, one field)."""
        seg = self.segments[si]
        mask = np.zeros(len(seg.doc_ids), dtype=bool)
        if not phrase.terms:
            return mask
        keys: np.ndarray | None = None
        for term, offset in zip(phrase.terms, phrase.offsets, strict=True):
            p = self._postings(term, cache, si)
            if p is None:
                return mask
            if len(phrase.terms) == 1:
                mask[p.docs] = True
                return mask
            k = self._position_keys(p, si, cache, term)
            k = k[(k & _POS_MASK) >= offset] - offset
            keys = np.unique(k) if keys is None else np.intersect1d(keys, k, assume_unique=True)
            if len(keys) == 0:
                return mask
        if keys is not None:
            mask[np.unique(keys >> _DOC_SHIFT)] = True
        return mask & self.live[si]

    def _position_keys(self, p: _Postings, si: int,
                       cache: dict[tuple[int, str], _Postings | None], term: str) -> np.ndarray:
        """Every occurrence of a term as ordinal << 29 | field << 25 | position (sorted)."""
        key = (si, "\x00pos:" + term)
        memo = cache.get(key)
        if memo is None:
            memo = self._decoded.get(key)
            if memo is not None:
                cache[key] = memo
        if memo is not None:
            return memo.docs
        positions = self.segments[si].positions(p.row, p.all_tfs)
        # (posting, field) group of each position -> (ordinal << 4 | field) in one repeat
        group_key = (p.all_docs[:, None] << 4) | np.arange(N_FIELDS, dtype=np.int64)
        per_pos = np.repeat(group_key.ravel(), p.all_tfs.ravel().astype(np.int64))
        keys = ((per_pos >> 4) << _DOC_SHIFT) | ((per_pos & 0xF) << _FIELD_SHIFT) | positions
        memo = _Postings(keys, p.tfs, p.row, p.all_tfs, p.all_docs)
        cache[key] = memo
        self._decoded.put(key, memo)
        return keys

    def _proximity(self, pairs: list[tuple[str, str]], si: int,
                   cache: dict[tuple[int, str], _Postings | None], idfs: dict[str, float]
                   ) -> np.ndarray | None:
        """Proximity evidence: for each pair of consecutive query words, the documents where the
        second follows the first within PROXIMITY_WINDOW positions in one field get
        weight * min(idf) * c / (c + 1) for c such places (a soft phrase; Büttcher et al. 2006
        in spirit, without their distance decay)."""
        s = self.settings
        if s.proximity_weight <= 0 or not pairs:
            return None
        bonus = np.zeros(len(self.segments[si].doc_ids), dtype=np.float64)
        for a, b in pairs:
            docs, share = self._near_pairs(a, b, si, cache)
            if len(docs):
                bonus[docs] += s.proximity_weight * min(idfs[a], idfs[b]) * share
        return bonus * self.live[si]

    def _near_pairs(self, a: str, b: str, si: int,
                    cache: dict[tuple[int, str], _Postings | None]
                    ) -> tuple[np.ndarray, np.ndarray]:
        """(ordinals, c / (c + 1)) of the documents of segment ``si`` where ``b`` follows ``a``
        within the window in a weighted field, c times.  A function of the two terms'
        postings alone, so kept in an LRU cache like a bigram's postings."""
        key = (si, a, b)
        kept = self._pairs.get(key)
        if kept is not None:
            return kept
        out = _NO_PAIRS
        pa, pb = self._postings(a, cache, si), self._postings(b, cache, si)
        if pa is not None and pb is not None and len(pa.docs) and len(pb.docs):
            ka = self._position_keys(pa, si, cache, a)
            kb = self._position_keys(pb, si, cache, b)
            # Keys are sorted: the next occurrence of b after each a is one searchsorted away;
            # a gap of at most the window (< 2**24) means the same document and field.
            nxt = np.searchsorted(kb, ka + 1)
            ok = nxt < len(kb)
            near = np.zeros(len(ka), dtype=bool)
            near[ok] = kb[nxt[ok]] - ka[ok] <= self.settings.proximity_window
            near &= self._weighted_field[(ka >> _FIELD_SHIFT) & 0xF]  # only fields that count
            if near.any():
                owners = ka[near] >> _DOC_SHIFT  # sorted, as the keys are: run lengths
                first = np.flatnonzero(np.diff(owners, prepend=-1))
                docs = owners[first]
                c = np.diff(first, append=len(owners)).astype(np.float64)
                out = (docs, c / (c + 1.0))
        self._pairs.put(key, out)
        return out

    def _host_masks(self, hosts: tuple[str, ...]) -> list[np.ndarray]:
        """Per segment, which ordinals belong to one of ``hosts`` or their subdomains (cached:
        bounded by bytes, since any string a user types is a key)."""
        return self._site_masks.get_or_make(hosts, lambda: self._make_host_masks(hosts))

    def _make_host_masks(self, hosts: tuple[str, ...]) -> list[np.ndarray]:
        out = []
        for seg in self.segments:
            ids = BitMap()
            for h in seg.hosts():
                if any(h == s or h.endswith("." + s) for s in hosts):
                    ids |= seg.host_docs(h)
            out.append(np.isin(seg.doc_ids, np.asarray(ids.to_array(), dtype=np.int64)))
        return out

    # ------------------------------------------------------------------ search
    def search(self, query: str, k: int = DEFAULT_K, offset: int = 0, *, site: str | None = None,
               prior: Prior | None = None, explain: bool = False,
               snippets: bool = True, stats: CollectionStats | None = None,
               prior_bound: float | None = None, deadline: float | None = None,
               exhaustive: bool = False, fragments: bool = True,
               prior_key: Hashable | None = None) -> SearchResults:
        """Top ``k`` hits (after ``offset``) for ``query``; raises QueryError on a bad query.

        The ranking is the exact top ``offset + k`` of text score + ``prior`` (URL IDs -> a
        boost) over every matching page, ties by the lower URL ID.  ``stats``: score with these
        collection statistics instead of this searcher's own (the sums over every shard; a
        term they leave out keeps its own df here).  ``prior_bound``: the prior is at most this
        (the fusion's ``w``), which lets the pruning skip blocks exactly; a prior without a
        bound is added to every match (the exhaustive path).  ``deadline``: a
        ``time.monotonic()`` past which the search returns what it has (``partial``);
        ``exhaustive``: score every posting (the reference the pruned evaluation equals; an
        index of fewer than EXHAUSTIVE_MAX_DOCS documents is always scored so); ``fragments``:
        give each hit the id of its best fragment (``Hit.fragment``; like snippets, this reads
        stored data for the hits, which a caller measuring ranking alone can skip);
        ``prior_key``: a name for ``prior`` that no other function gets while this searcher
        lives, so the pruning keeps each block's largest prior with the cached lists (without
        it every block counts the bound)."""
        pq = parse_query(query, self.analyzer)
        if site:
            pq.sites.append(site.lower())
        units = pq.units()
        results = SearchResults(query=query, total=0)
        site_only = not units and bool(pq.sites) and not pq.groups and not pq.required
        if (not units and not site_only) or not self.segments:
            return results
        cache: dict[tuple[int, str], _Postings | None] = {}
        terms = list(dict.fromkeys(t for u in units for t in u))
        n_docs, norms = self.n_docs, None
        if stats is None:
            idfs = {t: bm25f.idf_one(n_docs, self._df(t, cache)) for t in pq.idf_terms()}
        else:
            n_docs, norms = max(int(stats.n_docs), 0), self._norms(stats.avg_lens())
            # df clamped to [0, N]: figures from elsewhere must not leave idf's domain.
            dfs = {t: int(stats.df[t]) if t in stats.df else self._df(t, cache)
                   for t in pq.idf_terms()}
            idfs = {t: bm25f.idf_one(n_docs, min(max(df, 0), n_docs)) for t, df in dfs.items()}
        pairs = [(a, b) for a, b in pairwise(pq.word_terms()) if a != b and a in idfs
                 and b in idfs] + [(a, b) for a, b in pq.stop_pairs()
                                   if min(idfs[a], idfs[b]) >= STOP_PAIR_MIN_IDF]
        site_masks = self._host_masks(tuple(pq.sites)) if pq.sites else None
        nosite_masks = self._host_masks(tuple(pq.excluded_sites)) if pq.excluded_sites else None
        small = sum(len(seg.doc_ids) for seg in self.segments) < EXHAUSTIVE_MAX_DOCS
        unbounded = prior is not None and prior_bound is None
        if site_only or exhaustive or small or unbounded:
            found = self._score_all(units, pq, idfs=idfs, pairs=pairs, cache=cache,
                                    norms=norms, site_masks=site_masks,
                                    nosite_masks=nosite_masks, site_only=site_only)
            if found is None:
                return results
            segs, ords, text = found
            results.total = len(text)
            doc_ids = self._doc_ids(segs, ords)
            prior_scores = (np.asarray(prior(doc_ids), dtype=np.float64) if prior is not None
                            else np.zeros(len(doc_ids)))
        else:
            plan = Plan(units, idfs, pairs, pq.required, pq.excluded, site_masks, nosite_masks,
                        norms)
            top = top_text(self, plan, cache, want=offset + k, prior=prior,
                           prior_bound=0.0 if prior_bound is None else prior_bound,
                           prior_key=prior_key,
                           deadline=deadline)
            segs, ords, text, prior_scores = top.segs, top.ords, top.text, top.prior
            results.total, results.total_exact = top.total, top.total_exact
            results.partial = top.partial
            results.blocks, results.blocks_read = top.blocks, top.blocks_read
            if len(text) == 0:
                return results
            doc_ids = self._doc_ids(segs, ords)
        final = text + prior_scores
        want = min(len(final), offset + k)
        if want <= 0:
            return results
        chosen = _top(final, doc_ids, want)
        chosen = chosen[np.lexsort((doc_ids[chosen], -final[chosen]))][offset:]
        maker = SnippetMaker(set(terms), _raw_words(pq), self.analyzer) if snippets else None
        frag_ids = (self._fragments(segs[chosen], ords[chosen], idfs, cache) if fragments
                    else [None] * len(chosen))
        for i, frag in zip(chosen, frag_ids, strict=True):
            si, o = int(segs[i]), int(ords[i])
            seg = self.segments[si]
            stored = seg.head(o)
            snippet, spans = (maker.make(*self._page_text(si, o)) if maker is not None
                              else ("", []))
            results.hits.append(Hit(
                doc_id=int(doc_ids[i]), url=stored.get("url", ""),
                title=stored.get("title", "") or stored.get("url", ""),
                snippet=snippet, highlights=spans, score=float(final[i]),
                text_score=float(text[i]), prior_score=float(prior_scores[i]),
                explain=self._explain(si, o, units, idfs, cache, n_docs=n_docs, norms=norms,
                                      pairs=pairs) if explain else None,
                fragment=frag))
        return results

    def _score_all(self, units: list[tuple[str, ...]], pq: ParsedQuery, *,
                   idfs: dict[str, float], pairs: list[tuple[str, str]],
                   cache: dict[tuple[int, str], _Postings | None], norms: _Norms | None,
                   site_masks: list[np.ndarray] | None, nosite_masks: list[np.ndarray] | None,
                   site_only: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Every match's (segment, ordinal, text score), every posting scored term-at-a-time
        into arrays as long as each segment: the reference indexer/topk.py equals, and the
        listing of a ``site:`` query without words."""
        s = self.settings
        cand_seg: list[np.ndarray] = []
        cand_ord: list[np.ndarray] = []
        cand_score: list[np.ndarray] = []
        for si, seg in enumerate(self.segments):
            n = len(seg.doc_ids)
            if n == 0:
                continue
            score = np.zeros(n, dtype=np.float64)
            matched = np.zeros(n, dtype=np.int32)
            for unit in units:
                hit = np.zeros(n, dtype=bool) if len(unit) > 1 else None
                for term in unit:
                    p = self._postings(term, cache, si)
                    if p is None or len(p.docs) == 0:
                        continue
                    score[p.docs] += idfs[term] * self._saturated(p, si, norms)
                    if hit is None:
                        matched[p.docs] += 1
                    else:
                        hit[p.docs] = True
                if hit is not None:
                    matched += hit
            bonus = self._proximity(pairs, si, cache, idfs)
            if bonus is not None:
                score += bonus
            # "site:host" alone lists the host's pages (text score 0, ordered by the prior).
            cand = self.live[si].copy() if site_only else matched > 0
            for phrase in pq.required:
                cand &= self._phrase_mask(phrase, si, cache)
            for phrase in pq.excluded:
                cand &= ~self._phrase_mask(phrase, si, cache)
            if site_masks is not None:
                cand &= site_masks[si]
            if nosite_masks is not None:
                cand &= ~nosite_masks[si]
            ords = np.flatnonzero(cand)
            if len(ords) == 0:
                continue
            coord = (matched[ords] / max(len(units), 1)) ** s.coord_power
            cand_seg.append(np.full(len(ords), si, dtype=np.int32))
            cand_ord.append(ords)
            cand_score.append(score[ords] * coord)
        if not cand_ord:
            return None
        return np.concatenate(cand_seg), np.concatenate(cand_ord), np.concatenate(cand_score)

    def _fragments(self, segs: np.ndarray, ords: np.ndarray, idfs: dict[str, float],
                   cache: dict[tuple[int, str], _Postings | None]) -> list[str | None]:
        """For each hit (``segs[i]``, ``ords[i]``), the id of its fragment whose key best
        matches the query (indexer/fragments.py), or None.  Only a page whose defs field holds
        a query term has one to offer: that is read from the postings the query already
        decoded (one search per term and segment for all the hits), and most hits stop there."""
        wanted: list[dict[str, float]] = [{} for _ in range(len(ords))]
        for si in np.unique(segs).tolist():
            at = np.flatnonzero(segs == si)
            mine = ords[at]
            for term, idf in idfs.items():
                p = self._postings(term, cache, si)
                if p is None or len(p.docs) == 0:
                    continue
                j = np.minimum(np.searchsorted(p.docs, mine), len(p.docs) - 1)
                held = (p.docs[j] == mine) & (p.tfs[j, _DEFS] > 0)
                for h in np.flatnonzero(held).tolist():
                    wanted[int(at[h])][term] = idf
        out: list[str | None] = []
        for i, terms in enumerate(wanted):
            out.append(self._fragment(int(segs[i]), int(ords[i]), terms) if terms else None)
        return out

    def _fragment(self, si: int, ordinal: int, wanted: dict[str, float]) -> str | None:
        """The best fragment of one hit for the query terms its defs field holds."""
        key = (si, ordinal)
        frags = self._frags.get(key)
        if frags is None:
            seg = self.segments[si]
            frags = StoredFragments(read_fragments(seg.frags_blob(ordinal), self.analyzer.terms,
                                                   name=f"{seg.name}/{ordinal}"))
            self._frags.put(key, frags)
        return frags.best(wanted)

    def _saturated(self, p: _Postings, si: int, norms: _Norms | None) -> np.ndarray:
        """tf~/(k1 + tf~) of each posting of ``p``, computed once per postings and norms."""
        k1 = self.settings.k1
        if norms is None:
            if p.saturated is None:
                p.saturated = bm25f.saturate(
                    bm25f.pseudo_tf(p.tfs, self.coefficients[si][p.docs]), k1)
            return p.saturated
        kept = p.saturated_for
        if kept is None or kept[0] != norms.key:
            kept = (norms.key, bm25f.saturate(
                bm25f.pseudo_tf(p.tfs, norms.coefficients[si][p.docs]), k1))
            p.saturated_for = kept
        return kept[1]

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
        pq = parse_query(query, self.analyzer)
        terms = {t for u in pq.units() for t in u}
        maker = SnippetMaker(terms, _raw_words(pq), self.analyzer)
        return [None if at is None else maker.make(*self._page_text(*at))
                for at in self.locate(doc_ids)]

    def _page_text(self, si: int, ordinal: int) -> PageText:
        """The scanned part of a page's stored text, and it lower-cased (cached)."""
        key = (si, ordinal)
        hit = self._texts.get(key)
        if hit is None:
            seg = self.segments[si]
            hit = read_text(seg.text_blob(ordinal), name=f"{seg.name}/{ordinal}")
            self._texts.put(key, hit)
        return hit

    def _doc_ids(self, segs: np.ndarray, ords: np.ndarray) -> np.ndarray:
        if len(self.segments) == 1:
            return np.asarray(self.segments[0].doc_ids[ords], dtype=np.int64)
        out = np.empty(len(ords), dtype=np.int64)
        for si in np.unique(segs):
            sel = segs == si
            out[sel] = self.segments[int(si)].doc_ids[ords[sel]]
        return out

    def _explain(self, si: int, ordinal: int, units: list[tuple[str, ...]],
                 idfs: dict[str, float], cache: dict[tuple[int, str], _Postings | None], *,
                 n_docs: int, norms: _Norms | None,
                 pairs: list[tuple[str, str]]) -> dict[str, Any]:
        """Per term: idf, tf per field, weighted normalised tf per field, score; the proximity
        bonus; coord.  ``text_score`` = coord * (bm25f + proximity), the hit's text score."""
        s = self.settings
        coeff = (self.coefficients if norms is None else norms.coefficients)[si][ordinal]
        avg_lens = self.avg_lens if norms is None else norms.avg_lens
        terms_out: dict[str, Any] = {}
        matched_units = 0
        for unit in units:
            unit_hit = False
            for term in unit:
                p = self._postings(term, cache, si)
                if p is None:
                    continue
                j = int(np.searchsorted(p.docs, ordinal))
                if j >= len(p.docs) or p.docs[j] != ordinal:
                    continue
                unit_hit = True
                tf = p.tfs[j].astype(np.float64)
                parts = tf * coeff
                tt = float(parts.sum())
                terms_out[term] = {
                    "idf": idfs[term],
                    "tf": {f: int(tf[i]) for i, f in enumerate(FIELDS) if tf[i]},
                    "weighted_tf": {f: float(parts[i]) for i, f in enumerate(FIELDS) if tf[i]},
                    "score": idfs[term] * tt / (s.k1 + tt),
                }
            matched_units += unit_hit
        coord = (matched_units / len(units)) ** s.coord_power if units else 0.0
        total = sum(t["score"] for t in terms_out.values())
        bonus = float(proximity_bonus(self, pairs, idfs, cache, si=si,
                                      docs=np.array([ordinal], dtype=np.int64))[0])
        return {"terms": terms_out, "matched_units": matched_units, "units": len(units),
                "coord": coord, "bm25f": total, "proximity": bonus,
                "text_score": (total + bonus) * coord,
                "k1": s.k1, "n_docs": n_docs,
                "avg_field_lengths": dict(zip(FIELDS, map(float, avg_lens), strict=True))}


def _top(scores: np.ndarray, doc_ids: np.ndarray, m: int) -> np.ndarray:
    """Indices of the ``m`` best scores, ties at the cut broken by the lower URL ID (so the
    pruned and the exhaustive evaluation keep the same documents)."""
    if m >= len(scores):
        return np.arange(len(scores))
    part = np.argpartition(-scores, m - 1)[:m]
    cut = scores[part].min()
    if np.count_nonzero(scores == cut) == np.count_nonzero(scores[part] == cut):
        return part  # no tie at the cut left outside
    above = np.flatnonzero(scores > cut)
    ties = np.flatnonzero(scores == cut)
    ties = ties[np.argsort(doc_ids[ties], kind="stable")][: m - len(above)]
    return np.concatenate([above, ties])


def _raw_words(pq: ParsedQuery) -> list[str]:
    """The words a person typed (of the query's groups and required phrases), for snippets."""
    return [w for g in pq.groups for p in g for w in p.text.split()] + [
        w for p in pq.required for w in p.text.split()]


def open_shard(index_dir: Path, verify: bool = True) -> Shard:
    """The segments the manifest of ``index_dir`` names now, their files checked against it
    (``verify``); IndexMissing / IndexCorrupt."""
    def open_named(manifest: Manifest) -> Shard:
        segments = []
        for entry in manifest.segments:
            directory = index_dir / entry.name
            if verify:
                verify_segment(directory, entry)
            segments.append(SegmentReader(directory))
        return Shard(index_dir, manifest, segments)

    # An indexing run may have replaced the manifest and swept old segments between our
    # reads: try the new manifest once before calling it corrupt.
    return open_consistent(lambda: read_manifest(index_dir), open_named,
                           generation=lambda m: m.generation, retry_on=IndexCorrupt, attempts=2)


