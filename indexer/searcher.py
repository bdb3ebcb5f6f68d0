"""The query side: a read-only snapshot of the live segments, scored with BM25F.

Layers (STYLE.md): indexer/bm25f.py holds the pure formulas; :class:`Searcher` is the configured
model (settings, collection statistics over every live segment, per-document field
coefficients precomputed at open); :meth:`Searcher.search` is the per-query scorer and top-k
collector.

Scoring is vectorised over postings: for each query term, each segment's postings are decoded
(indexer/codec.py) and their BM25F contributions scattered into a dense score array of that
segment (one float per document), so no Python loop runs per document.  The top ``depth`` text
matches are chosen with ``argpartition``; the caller's ``prior`` (link importance) is added to
those and the top k taken.

Versions: a newer segment masks older versions of the same URL (its docs and drops bitmaps);
:func:`live_masks` computes that once at open.  Collection statistics (N, df, average field
lengths) count live documents only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np
from pyroaring import BitMap

from core.datadir import DataDir
from indexer import bm25f
from indexer.analysis import Analyzer
from indexer.errors import IndexCorrupt
from indexer.lru import LruCache
from indexer.manifest import Manifest, read_manifest, verify_segment
from indexer.manifest import current_generation as _manifest_generation
from indexer.query import Phrase, parse_query
from indexer.segment import SegmentReader
from indexer.settings import DEFAULT_DEPTH, DEFAULT_K, FIELDS, N_FIELDS, BM25FSettings
from indexer.snippet import PageText, SnippetMaker, read_text

Prior = Callable[[np.ndarray], np.ndarray]
_FIELD_SHIFT = 25
_DOC_SHIFT = 29
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


@dataclass
class SearchResults:
    query: str
    total: int
    hits: list[Hit] = field(default_factory=list)


def current_generation(data: DataDir) -> int | None:
    """The generation the manifest names now (reads the manifest only), or None."""
    return _manifest_generation(data.index_dir)


def live_masks(segments: list[SegmentReader]) -> list[np.ndarray]:
    """Per segment, which ordinals are live: a newer segment's docs and drops mask older ones."""
    masked = BitMap()
    out: list[np.ndarray] = [np.zeros(0, dtype=bool)] * len(segments)
    for i in range(len(segments) - 1, -1, -1):
        seg = segments[i]
        if len(masked):
            gone = np.asarray(masked.to_array(), dtype=np.int64)
            out[i] = ~np.isin(seg.doc_ids, gone)
        else:
            out[i] = np.ones(len(seg.doc_ids), dtype=bool)
        masked |= seg.docs
        masked |= seg.drops
    return out


POSTINGS_CACHE_BYTES = 64 << 20  # decoded postings of recent terms kept per searcher
PAIRS_CACHE_BYTES = 16 << 20  # proximity evidence of recent word pairs kept per searcher
TEXT_CACHE_BYTES = 32 << 20  # recent pages' texts (and lower case) kept per searcher, snippets


_NO_PAIRS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


def _nbytes(p: _Postings | None) -> int:
    """Bytes a cached entry holds (arrays shared with another entry are counted again)."""
    if p is None:
        return 64
    return int(p.docs.nbytes + p.tfs.nbytes + p.all_tfs.nbytes + p.all_docs.nbytes
               + 4 * len(p.docs))  # + the saturated scores, float32


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


class Searcher:
    """A read-only snapshot of the index generation the manifest names when opened."""

    def __init__(self, manifest: Manifest, segments: list[SegmentReader],
                 settings: BM25FSettings | None = None) -> None:
        self.manifest = manifest
        self.generation = manifest.generation
        self.segments = segments
        self.settings = settings or BM25FSettings()
        self.analyzer = Analyzer()
        self.live = live_masks(segments)
        self._all_live = [bool(m.all()) for m in self.live]
        self.n_docs = int(sum(int(m.sum()) for m in self.live))
        sums = np.zeros(N_FIELDS, dtype=np.float64)
        for seg, live in zip(segments, self.live, strict=True):
            if len(seg.field_lens):
                sums += seg.field_lens[live].sum(axis=0)
        self.avg_lens = sums / max(self.n_docs, 1)
        s = self.settings
        self.weights = np.array([s.weights[f] for f in FIELDS], dtype=np.float64)
        self.b = np.array([s.b[f] for f in FIELDS], dtype=np.float64)
        self._weighted_field = np.zeros(16, dtype=bool)
        self._weighted_field[:N_FIELDS] = self.weights > 0
        self.coefficients = [
            bm25f.field_coefficients(seg.field_lens.astype(np.float64), self.avg_lens,
                                     self.weights, self.b) for seg in segments]
        self._host_cache: dict[tuple[str, ...], list[np.ndarray]] = {}
        # Shared by the threads searching this snapshot (its segments never change).
        self._texts: LruCache[tuple[int, int], PageText] = LruCache(
            TEXT_CACHE_BYTES, lambda t: sys.getsizeof(t[0]) + sys.getsizeof(t[1]))
        self._decoded: LruCache[tuple[int, str], _Postings | None] = LruCache(
            POSTINGS_CACHE_BYTES, _nbytes)
        self._pairs: LruCache[tuple[int, str, str], tuple[np.ndarray, np.ndarray]] = LruCache(
            PAIRS_CACHE_BYTES, lambda v: 64 + v[0].nbytes + v[1].nbytes)

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, data: DataDir, settings: BM25FSettings | None = None,
             verify: bool = True) -> Searcher:
        """Open the generation the manifest names now; IndexMissing / IndexCorrupt."""
        for attempt in range(2):
            manifest = read_manifest(data.index_dir)
            try:
                segments = []
                for entry in manifest.segments:
                    directory = data.index_dir / entry.name
                    if verify:
                        verify_segment(directory, entry)
                    segments.append(SegmentReader(directory))
                return cls(manifest, segments, settings)
            except IndexCorrupt:
                # An indexing run may have replaced the manifest and swept old segments
                # between our two reads: try the new manifest once before calling it corrupt.
                if attempt == 0 and read_manifest(data.index_dir).generation != manifest.generation:
                    continue
                raise
        raise AssertionError("unreachable")

    def doc_count(self) -> int:
        return self.n_docs

    def segment_count(self) -> int:
        return len(self.segments)

    def close(self) -> None:
        self.segments = []
        self.live = []
        self.coefficients = []
        for lru in (self._decoded, self._pairs, self._texts):
            lru.clear()

    # ------------------------------------------------------------------ postings
    def _postings(self, term: str, cache: dict[tuple[int, str], _Postings | None],
                  si: int) -> _Postings | None:
        key = (si, term)
        if key in cache:
            return cache[key]
        found, kept = self._decoded.get(key)
        if found:
            cache[key] = kept
            return kept
        seg = self.segments[si]
        row = seg.term_row(term)
        result = None
        if row >= 0:
            docs, tfs = seg.postings(row)
            if self._all_live[si]:
                result = _Postings(docs, tfs, row, tfs, docs)
            else:
                live = self.live[si][docs]
                result = _Postings(docs[live], tfs[live], row, tfs, docs)
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
            found, memo = self._decoded.get(key)
            if found and memo is not None:
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
        found, kept = self._pairs.get(key)
        if found and kept is not None:
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
        cached = self._host_cache.get(hosts)
        if cached is not None:
            return cached
        out = []
        for seg in self.segments:
            ids = BitMap()
            for h in seg.hosts():
                if any(h == s or h.endswith("." + s) for s in hosts):
                    ids |= seg.host_docs(h)
            out.append(np.isin(seg.doc_ids, np.asarray(ids.to_array(), dtype=np.int64)))
        self._host_cache[hosts] = out
        return out

    # ------------------------------------------------------------------ search
    def search(self, query: str, k: int = DEFAULT_K, offset: int = 0, *, site: str | None = None,
               prior: Prior | None = None, explain: bool = False, depth: int = DEFAULT_DEPTH,
               snippets: bool = True) -> SearchResults:
        """Top ``k`` hits (after ``offset``) for ``query``; raises QueryError on a bad query."""
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
        s = self.settings
        idfs = {t: bm25f.idf_one(self.n_docs, self._df(t, cache)) for t in terms}
        pairs = [(a, b) for a, b in pairwise(pq.word_terms()) if a != b and a in idfs
                 and b in idfs]
        site_masks = self._host_masks(tuple(pq.sites)) if pq.sites else None
        nosite_masks = self._host_masks(tuple(pq.excluded_sites)) if pq.excluded_sites else None
        cand_seg: list[np.ndarray] = []
        cand_ord: list[np.ndarray] = []
        cand_score: list[np.ndarray] = []
        for si, seg in enumerate(self.segments):
            n = len(seg.doc_ids)
            if n == 0:
                continue
            score = np.zeros(n, dtype=np.float64)
            matched = np.zeros(n, dtype=np.int32)
            coeff = self.coefficients[si]
            for unit in units:
                hit = np.zeros(n, dtype=bool) if len(unit) > 1 else None
                for term in unit:
                    p = self._postings(term, cache, si)
                    if p is None or len(p.docs) == 0:
                        continue
                    if p.saturated is None:
                        p.saturated = bm25f.saturate(bm25f.pseudo_tf(p.tfs, coeff[p.docs]),
                                                     s.k1)
                    score[p.docs] += idfs[term] * p.saturated
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
            return results
        segs = np.concatenate(cand_seg)
        ords = np.concatenate(cand_ord)
        text = np.concatenate(cand_score)
        results.total = len(text)
        if len(text) > depth:
            top = np.argpartition(-text, depth - 1)[:depth]
            segs, ords, text = segs[top], ords[top], text[top]
        doc_ids = np.array([self.segments[si].doc_ids[o] for si, o in zip(segs, ords,
                                                                           strict=True)],
                           dtype=np.int64) if len(ords) < 64 else self._doc_ids(segs, ords)
        prior_scores = (np.asarray(prior(doc_ids), dtype=np.float64) if prior is not None
                        else np.zeros(len(doc_ids)))
        final = text + prior_scores
        want = min(len(final), offset + k)
        if want <= 0:
            return results
        top = np.argpartition(-final, want - 1)[:want] if want < len(final) else np.arange(
            len(final))
        top = top[np.lexsort((doc_ids[top], -final[top]))][offset:]
        raw_words = [w for g in pq.groups for p in g for w in p.text.split()] + [
            w for p in pq.required for w in p.text.split()]
        maker = SnippetMaker(set(terms), raw_words, self.analyzer) if snippets else None
        for i in top:
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
                explain=self._explain(si, o, units, idfs, cache) if explain else None))
        return results

    def _page_text(self, si: int, ordinal: int) -> PageText:
        """The scanned part of a page's stored text, and it lower-cased (cached)."""
        key = (si, ordinal)
        _, hit = self._texts.get(key)
        if hit is None:
            seg = self.segments[si]
            hit = read_text(seg.text_blob(ordinal), name=f"{seg.name}/{ordinal}")
            self._texts.put(key, hit)
        return hit

    def _doc_ids(self, segs: np.ndarray, ords: np.ndarray) -> np.ndarray:
        out = np.empty(len(ords), dtype=np.int64)
        for si in np.unique(segs):
            sel = segs == si
            out[sel] = self.segments[int(si)].doc_ids[ords[sel]]
        return out

    def _explain(self, si: int, ordinal: int, units: list[tuple[str, ...]],
                 idfs: dict[str, float], cache: dict[tuple[int, str], _Postings | None]
                 ) -> dict[str, Any]:
        """Per term: idf, tf per field, weighted normalised tf per field, score; plus coord."""
        s = self.settings
        coeff = self.coefficients[si][ordinal]
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
        return {"terms": terms_out, "matched_units": matched_units, "units": len(units),
                "coord": coord, "bm25f": total, "text_score": total * coord,
                "k1": s.k1, "n_docs": self.n_docs,
                "avg_field_lengths": dict(zip(FIELDS, map(float, self.avg_lens), strict=True))}


