"""Posting lists of an opened snapshot: a word and a segment here, give me its live postings
(decoded once, cached), where its occurrences are, and where two words stand near each other.

Both evaluations of a query read postings only through this module: the searcher's exhaustive
one (and its explain and fragments, indexer/searcher.py) and the pruned top-k one
(indexer/topk.py).  Two levels:

* :class:`PostingStore`, one per snapshot: the segments, their live masks
  (indexer/liveness.py) and the caches of decoded lists, of near pairs and of phrases' pages,
  bounded by bytes (indexer/settings.py) and shared by the threads searching the snapshot.  Its segments never
  change, so neither does anything it caches.
* :class:`QueryPostings`, one per query: the lists the query has looked up (a list evicted from
  the shared cache mid-query stays the same for the query) and the field coefficients it is
  scored under (the snapshot's own, or those of a remote shard's global statistics).

A :class:`PostingList` keeps, besides the decoded postings, what is derived from them alone
and costs a pass to make: BM25F saturations under the snapshot's statistics, per block of
``BLOCK`` postings their largest saturation and largest prior (block-max bounds, as tantivy's
and Lucene's postings carry), where each posting's positions start, and for a list most pages
hold a dense map from ordinal to posting.  They are made on first use and evicted with the
list.  Each is kept in the narrowest type its values need, as the cache is bounded by their
bytes (:func:`nbytes`: what the arrays hold): ordinals int32 (a segment's fit), the tf matrix
uint8 with the few rows past 255 apart (indexer/narrow_tfs.py), saturations float32 (as
bm25f makes them), position starts int32, weighted tfs uint16; at a million pages a common
word's list holds about 25 bytes a posting (docs/query-performance.md).  Ordinals are made
int64 before they are shifted into occurrence keys.

Occurrences are keys ``ordinal << 29 | field << 25 | position`` (sorted).

A new index generation (api/snapshot.py's reload) shares most of its segments with the one it
replaces, so it shares the caches themselves (:meth:`PostingStore.adopt`): their keys name a
segment by its reader's serial (indexer/segment.py), not by its place in a snapshot, and a
reload copies nothing.  What depends on a segment alone (decoded postings before the live
filter, occurrence keys, near pairs, the pages holding a phrase) serves every generation as it
is.  A list's live postings and saturations carry a token (the segment's live mask and the
collection's statistics, hashed): a list found with another generation's token is brought up
to date when a query uses it (:meth:`PostingStore.carry`), never decoded again.  When the
segment's live pages only lost some (a newer segment holds their new versions: the usual
change) its postings still live are kept, with their saturations; when they changed otherwise
(removal rules relaxed) the list is filtered again from its decoded postings.  Saturations
are computed again only when the statistics they were made under changed, which the
manifest's pinned average field lengths make rare (indexer/scoring_lengths.py).  Before the new generation serves, the most recent entries
(up to RELOAD_WARM_BYTES) are brought up to date, and the segments it adds (a cut, a merge)
decoded for the words of those entries (:meth:`PostingStore.prewarm`): a reload works in
the recent entries, not in the whole cache.  Entries of segments no generation holds any more
leave by the caches' LRU order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from websift.core.cache import Cache
from websift.indexer import bm25f
from websift.indexer.codec import block_bits_type
from websift.indexer.narrow_tfs import (
    WideRows,
    narrow_tfs,
    patched,
    row_sums,
    sums_type,
    wide_sum,
    widened,
)
from websift.indexer.query import Phrase
from websift.indexer.segment import SegmentReader, posting_starts, starts_type
from websift.indexer.settings import (
    BLOCK,
    DENSE_POSTINGS_SHARE,
    FIELDS,
    N_FIELDS,
    PAIRS_CACHE_BYTES,
    PHRASES_CACHE_BYTES,
    POSTINGS_CACHE_BYTES,
    RELOAD_PREWARM_TERMS,
    RELOAD_WARM_BYTES,
    RELOAD_WARM_ENTRIES,
    RELOAD_WARM_MIN_BYTES,
    BM25FSettings,
)

FIELD_SHIFT = 25
DOC_SHIFT = 29
POS_MASK = (1 << FIELD_SHIFT) - 1
# A phrase word whose keys are at most this many times the candidates' is merged with them,
# a longer one searched.
MERGE_RATIO = 8
# Per segment, how many older generations' live keys a list may carry and still be filtered
# rather than made again from its decoded postings (PostingStore.carry).
NARROWED_KEPT = 64
_UNSEEN: Any = object()  # QueryPostings.get's memo: not looked up yet (None: not there)
_NOT_LOOKED = -2  # QueryPostings._fetch: the word's row in the lexicon not looked up yet
_POSITIONS = "\x00pos:"  # a cache key's prefix: the term's occurrences, not its postings
_NO_PAIRS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
_NO_DOCS = np.zeros(0, dtype=np.int64)
_NO_TFS = np.zeros((0, N_FIELDS), dtype=np.uint8)
# PostingStore.near looks up the few occurrences of one word among the many of another by
# binary search once the many are this many times the few (else one pass over both).
NEAR_FEW_RATIO = 8



def phrase_starts(lists: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """The keys (sorted) at which a phrase starts, given each of its words' occurrence keys
    (sorted) and offset in it: the shortest list's keys moved back to the phrase's start, then
    each other word looked up at its own offset from there (binary search of the few in the
    many; no pass over a common word's whole list)."""
    order = sorted(range(len(lists)), key=lambda i: len(lists[i][0]))
    keys, off = lists[order[0]]
    top = max(o for _, o in lists)
    pos = keys & POS_MASK
    starts = keys[(pos >= off) & (pos - off + top <= POS_MASK)] - off
    for i in order[1:]:
        if len(starts) == 0:
            break
        other, o = lists[i]
        if len(other) == 0:
            return other
        want = starts + o
        if len(other) <= MERGE_RATIO * len(want):
            # Lists of like length: merged (a stable sort of two sorted runs is one linear
            # merge), each common key then twice in a row.
            both = np.concatenate([want, other])
            both.sort(kind="stable")
            same = both[1:] == both[:-1]
            starts = both[1:][same] - o
        else:
            at = np.searchsorted(other, want)
            np.minimum(at, len(other) - 1, out=at)
            starts = starts[other[at] == want]
    return starts


def unique_sorted(x: np.ndarray) -> np.ndarray:
    """The distinct values of sorted ``x``, in order."""
    if len(x) < 2:
        return x
    keep = np.empty(len(x), dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


@dataclass
class PostingList:
    """One word's postings in one segment, decoded, with what is derived from them."""

    docs: np.ndarray  # live ordinals (the segment's ordinal type: int32)
    # (n, fields), as indexer/narrow_tfs.py keeps it (uint8 for most; a few rows past 255
    # clipped, their true values in ``tf_wide``): read through :meth:`tf_rows`, :meth:`tf_matrix`
    tfs: np.ndarray
    row: int
    all_tfs: np.ndarray  # tf matrix before the live filter (positions are grouped by it)
    all_docs: np.ndarray
    # tf~/(k1 + tf~) of each posting: fixed for a snapshot (lengths and settings never change
    # under it), so computed once per cached entry; idf is applied per query.
    saturated: np.ndarray | None = None
    # The same under other collection statistics (a remote shard scoring with the global
    # ones): (their key, the array), replaced together in one assignment.
    saturated_for: tuple[bytes, np.ndarray] | None = None
    # Made on first use: where each posting's positions start (int32 unless the word has
    # 2**31 occurrences in the segment: segment.posting_starts), and per block of BLOCK
    # postings the largest of ``saturated`` (its exact block bounds).
    pos_starts: np.ndarray | None = None
    pos_blocks: tuple[np.ndarray, np.ndarray] | None = None  # codec.block_bits of positions
    # Per live posting, its occurrences in the fields that count for proximity (uint16 for a
    # uint8 matrix: narrow_tfs.sums_type): a bound of how often a pair with the word can
    # stand near (indexer/topk.py).  Kept: summed again per candidate, from the tf rows, it
    # cost 10-20 times the gather.
    weighted_tf: np.ndarray | None = None
    # Candidates whose positions of the word queries have read one by one (not the whole
    # list) while it is cached: indexer/topk.py decodes them whole past a share of the list.
    positions_read: int = 0
    block_max: np.ndarray | None = None
    # For a list most pages hold (DENSE_POSTINGS_SHARE): per ordinal of the segment, the index
    # of its live posting in ``docs`` or -1 (int32), made on first use (:meth:`find`) for a
    # segment of ``dense_n`` ordinals (0: the list keeps none).
    dense: np.ndarray | None = None
    dense_n: int = 0
    # Per block, the largest prior of its pages under one prior (its key, the array).
    block_prior: tuple[Hashable, np.ndarray] | None = None
    # Per block, the largest c / (c + 1) of a pair with the word among its pages, per pair
    # (indexer/topk.py; the PAIR_BLOCKS_KEPT most recent, replaced whole, never changed).
    pair_block_max: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    # What the live postings and saturations were made under (PostingStore.tokens): the
    # segment's live mask and the collection statistics; None for occurrence keys (a
    # function of the segment alone, :meth:`QueryPostings.position_keys`: ``docs`` holds
    # the keys, nothing else is kept).
    token: bytes | None = None
    # Occurrences of the word in the segment (``all_tfs`` summed), counted once (:func:`nbytes`)
    # and passed on with the decoded postings (-1: not counted yet).
    occurrences: int = -1
    # The wide rows (indexer/narrow_tfs.py) of ``all_tfs``, and of ``tfs`` (those still
    # live, indexed in the live postings): None when the matrix holds every tf as it is.
    all_tf_wide: WideRows | None = None
    tf_wide: WideRows | None = None

    def occurrence_count(self) -> int:
        """:attr:`occurrences`, counted on first use (a pass over the tf matrix, once per
        decoded list)."""
        if self.occurrences < 0:
            self.occurrences = wide_sum(self.all_tfs, self.all_tf_wide)
        return self.occurrences

    def tf_rows(self, j: np.ndarray) -> np.ndarray:
        """The true tf rows of live postings ``j`` (in a type that holds them)."""
        rows = np.take(self.tfs, j, axis=0)  # a third of the time of self.tfs[j]
        return rows if self.tf_wide is None else patched(rows, j, self.tf_wide)

    def all_tf_rows(self, sel: np.ndarray) -> np.ndarray:
        """The true tf rows of postings ``sel`` (before the live filter)."""
        rows = np.take(self.all_tfs, sel, axis=0)
        return rows if self.all_tf_wide is None else patched(rows, sel, self.all_tf_wide)

    def tf_matrix(self) -> np.ndarray:
        """The live postings' true tf matrix (``tfs`` itself unless it has wide rows)."""
        return widened(self.tfs, self.tf_wide)

    def all_tf_matrix(self) -> np.ndarray:
        """Every posting's true tf matrix (``all_tfs`` itself unless it has wide rows)."""
        return widened(self.all_tfs, self.all_tf_wide)

    def find(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(which of ``docs`` hold the word, their index in the live postings where they do;
        elsewhere the index means nothing, but is one a gather can read: the list must have a
        posting): one gather through the dense map when the list keeps one, else a binary
        search.  The dense map's indices come back as it holds them (int32, -1 where a page
        lacks the word), not widened: callers take them where hit, or gather through every
        one and mask the misses out."""
        dense = self._dense()
        if dense is None:
            return member(docs, self.docs)
        j = np.take(dense, docs)  # faster than dense[docs] for int32 ordinals
        return j >= 0, j

    def holds(self, docs: np.ndarray) -> np.ndarray:
        """Which of ``docs`` hold the word (:meth:`find`'s first half, alone)."""
        dense = self._dense()
        if dense is None:
            return member(docs, self.docs)[0]
        return np.take(dense, docs) >= 0

    def _dense(self) -> np.ndarray | None:
        """The dense map from ordinal to live posting (-1: none), made on first use, for a
        list a quarter of the segment's pages or more hold (``dense_n``); else None."""
        dense = self.dense
        if dense is None and self.dense_n:
            # made once (two threads racing make the same map; either is kept)
            dense = np.full(self.dense_n, -1, dtype=np.int32)
            dense[self.docs] = np.arange(len(self.docs), dtype=np.int32)
            self.dense = dense
        return dense

    def block_starts(self) -> np.ndarray:
        """Index in the live postings where each block of the stored list starts; + the end.
        A block whose postings are all dead is empty."""
        nb = (len(self.all_docs) + BLOCK - 1) // BLOCK
        if len(self.docs) == len(self.all_docs):
            return np.minimum(np.arange(nb + 1, dtype=np.int64) * BLOCK, len(self.docs))
        return np.append(np.searchsorted(self.docs, self.all_docs[::BLOCK]),
                         len(self.docs)).astype(np.int64)

    def block_prior_max(self, key: Hashable, starts: np.ndarray,
                        make: Callable[[], np.ndarray]) -> np.ndarray:
        """Per block (``starts``), the largest prior of its pages under the prior named
        ``key`` (the same key, the same function): ``make()`` once per list and key."""
        kept = self.block_prior
        if kept is not None and kept[0] == key and len(kept[1]) == len(starts) - 1:
            return kept[1]
        made = make()
        self.block_prior = (key, made)
        return made


def _runs(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The indices of the ranges [lo, hi) concatenated."""
    n = hi - lo
    total = int(n.sum())
    if total == 0:
        return _NO_DOCS
    return np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(total, dtype=np.int64)


def member(docs: np.ndarray, sorted_docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(which of ``docs`` are in ``sorted_docs``, their index there).  Ordinals of one
    segment: ``docs`` are searched in the type of ``sorted_docs`` (exact, they fit it), as
    numpy would otherwise copy the whole of a decoded int32 list to int64 for each search."""
    docs = same_type(docs, sorted_docs)
    j = np.searchsorted(sorted_docs, docs)
    jc = np.minimum(j, max(len(sorted_docs) - 1, 0))
    hit = (j < len(sorted_docs)) & (sorted_docs[jc] == docs) if len(sorted_docs) else (
        np.zeros(len(docs), dtype=bool))
    return hit, jc


def live_wide(docs: np.ndarray, all_docs: np.ndarray, wide: WideRows | None
              ) -> WideRows | None:
    """The wide rows ``wide`` of a list's postings ``all_docs`` that are among its live ones
    ``docs`` (a subset, sorted), indexed in ``docs``."""
    if wide is None or docs is all_docs:
        return wide
    idx, rows = wide
    ok, at = member(all_docs[idx], docs)
    return (at[ok].astype(np.int64), rows[ok]) if ok.any() else None


def same_type(docs: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Ordinals ``docs`` in the integer type of ``like`` (ordinals of the same segment: they
    fit it), to be searched in or compared with ``like`` without a copy of it."""
    return docs if docs.dtype == like.dtype else docs.astype(like.dtype)


def block_maxima(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per block ``[starts[i], starts[i + 1])`` of ``values``, the largest; 0 for an empty
    block (every posting dead), not its neighbour's first."""
    out = np.maximum.reduceat(np.append(values, 0.0), starts[:-1])
    out[starts[1:] == starts[:-1]] = 0.0
    return out


def occurrence_keys(docs: np.ndarray, tfs: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The key of each occurrence (ordinal, field, position: ``DOC_SHIFT``, ``FIELD_SHIFT``) of
    postings ``docs`` with tf matrix ``tfs``, whose ``positions`` come grouped by (posting,
    field) as :meth:`SegmentReader.positions` gives them.  Each group holding the word gives
    its key once per position; most groups are empty (a word is in few of a page's fields)."""
    group_key = ((np.asarray(docs, dtype=np.int64)[:, None] << DOC_SHIFT)
                 | (np.arange(N_FIELDS, dtype=np.int64) << FIELD_SHIFT)).ravel()
    counts = tfs.ravel()
    held = counts > 0
    return np.repeat(group_key[held], counts[held].astype(np.int64)) | positions


def nbytes(p: PostingList | None) -> int:
    """Bytes a cached entry holds: its arrays, each once (with every page live, ``all_docs``
    is ``docs``, ``all_tfs`` is ``tfs``; an array a carried list shares with the entry it was
    carried from is counted in both), and those it makes on first use, as they will be:
    the saturated scores (float32, as bm25f makes them), the weighted tfs
    (narrow_tfs.sums_type), the positions' starts (int32 unless the word has 2**31
    occurrences), their blocks' widths and first bits (uint8 and uint32 per block of
    positions: codec.block_bits), the dense map (int32 per ordinal of the segment), the
    block maxima and priors (float64 per block).
    What a query under other statistics adds (:attr:`PostingList.saturated_for`, the pairs'
    block bounds) is not counted.  Occurrence keys (``token`` None) hold their keys alone."""
    if p is None:
        return 64
    if p.token is None:
        return int(p.docs.nbytes)
    arrays = {id(a): a.nbytes for a in (p.docs, p.tfs, p.all_tfs, p.all_docs,
                                        *(p.all_tf_wide or ()), *(p.tf_wide or ()))}
    blocks = (len(p.all_docs) + BLOCK - 1) // BLOCK
    occurrences = p.occurrence_count()
    position_blocks = (occurrences + BLOCK - 1) // BLOCK
    later = [
        (p.saturated, 4 * len(p.docs)),
        (p.pos_starts, np.dtype(starts_type(occurrences)).itemsize * len(p.all_docs)),
        (p.dense, 4 * p.dense_n),
        (p.weighted_tf, sums_type(p.tfs, p.tf_wide).itemsize * len(p.docs)),
        (p.block_max, 8 * blocks),
        (None if p.block_prior is None else p.block_prior[1], 8 * blocks),
        (None if p.pos_blocks is None else p.pos_blocks[0], position_blocks),
        (None if p.pos_blocks is None else p.pos_blocks[1],
         np.dtype(block_bits_type(occurrences)).itemsize * position_blocks),
    ]
    return int(sum(arrays.values()) + sum(size if a is None else a.nbytes for a, size in later))


@dataclass(frozen=True)
class Norms:
    """Average field lengths and each segment's per-document field coefficients under them."""

    key: bytes
    avg_lens: np.ndarray
    coefficients: list[np.ndarray]


class PostingStore:
    """The postings of a snapshot's segments, decoded on demand into caches bounded by bytes."""

    def __init__(self, segments: Sequence[SegmentReader], live: Sequence[np.ndarray],
                 coefficients: Sequence[np.ndarray], settings: BM25FSettings, *,
                 norms_key: bytes) -> None:
        """``live``: per segment, its live ordinals (indexer/liveness.py); ``coefficients``:
        per segment, each document's BM25F field coefficients under the snapshot's own
        statistics, which ``norms_key`` names (the same bytes: the same coefficients for the
        same segment)."""
        self.segments = list(segments)
        self.live = list(live)
        self.all_live = [bool(m.all()) for m in self.live]  # per segment: no ordinal masked
        self.coefficients = list(coefficients)
        # Cache keys name a segment by its reader's serial, not its place in this snapshot:
        # the caches pass on to the next generation whole (:meth:`adopt`).
        self.serials = [seg.serial for seg in self.segments]
        live_keys = [hashlib.blake2b(np.packbits(m).tobytes() + len(m).to_bytes(8, "little"),
                                     digest_size=16).digest() for m in self.live]
        # Per segment, what a list's live postings and saturations depend on besides the
        # segment: a list cached with another token is from another generation (or removal
        # rules) and is brought up to date when used (:meth:`QueryPostings.get`).
        norms = hashlib.blake2b(
            norms_key + repr((settings.k1, settings.title_share)).encode(),
            digest_size=16).digest()
        self.tokens = [k + norms for k in live_keys]
        self.live_keys = live_keys
        # Per segment, older live keys whose live pages include this snapshot's (:meth:`adopt`)
        self.narrowed_from: dict[int, tuple[bytes, ...]] = {}
        self._owns_caches = True  # False once handed on to the next generation
        self.k1 = settings.k1
        self.title_share = settings.title_share  # bm25f.term_parts
        self.window = settings.proximity_window
        # Reverse-order evidence as :meth:`near` and the pruning bound use it: none when either
        # its weight or its window is 0.
        both = settings.proximity_reverse > 0 and settings.proximity_reverse_window > 0
        self.reverse = settings.proximity_reverse if both else 0.0
        self.reverse_window = settings.proximity_reverse_window if both else 0
        # Per field number (4 bits of a key): whether the field counts (weight > 0).
        self.weighted_field = np.zeros(16, dtype=bool)
        self.weighted_field[:N_FIELDS] = [settings.weights.get(f, 0.0) > 0 for f in FIELDS]
        # (segment serial, word) -> its list (None: the segment lacks the word).
        self.decoded: Cache[tuple[int, str], PostingList | None] = Cache(
            POSTINGS_CACHE_BYTES, nbytes)
        # (segment serial, word a, word b) -> near pairs found in every page (live or not:
        # each use keeps the live ones), a function of the segment alone.
        self.pairs: Cache[tuple[int, str, str], tuple[np.ndarray, np.ndarray]] = Cache(
            PAIRS_CACHE_BYTES, lambda v: 64 + v[0].nbytes + v[1].nbytes)
        # (segment serial, a phrase's terms and offsets) -> (b"", every page holding it, live
        # or not: each use keeps the live ones), a function of the words' occurrences (a
        # phrase of common words costs a pass over their millions of keys), kept like a
        # pair's proximity evidence; or (a live key, the live pages holding it) as the pruned
        # evaluation found them (indexer/topk.py), which serve under that live mask only.
        self.phrases: Cache[tuple[int, tuple[str, ...], tuple[int, ...]],
                            tuple[bytes, np.ndarray]] = Cache(
            PHRASES_CACHE_BYTES, lambda v: 64 + v[1].nbytes)
        # Lists decoded from a segment's files (not found in the cache or taken over from a
        # previous generation): what a reload that carried its caches over saves.
        self.decodes = 0
        # Lists found made under another token and made again from their decoded postings
        # (:meth:`carry`): a reload's work, at open for the recent ones, else on first use.
        self.carried = 0

    def query(self, norms: Norms | None = None) -> QueryPostings:
        """A view for one query, scored under ``norms`` (None: the snapshot's own)."""
        return QueryPostings(self, norms)

    def caches(self) -> dict[str, Cache[Any, Any]]:
        return {"postings": self.decoded, "pairs": self.pairs, "phrases": self.phrases}

    def close(self) -> None:
        self.segments = []
        self.live = []
        self.coefficients = []
        if self._owns_caches:
            for cache in self.caches().values():
                cache.clear()

    def live_list(self, si: int, row: int, all_docs: np.ndarray, all_tfs: np.ndarray,
                  pos_starts: np.ndarray | None = None, *, occurrences: int = -1,
                  wide: WideRows | None = None) -> PostingList:
        """A word's postings in segment ``si`` (before the live filter) as this snapshot
        serves them: its live ones, and a dense map when most pages hold it.  ``wide``: the
        tf matrix's wide rows (indexer/narrow_tfs.py); ``pos_starts``, ``occurrences``: what
        a list made before counted of the same postings."""
        if self.all_live[si]:
            result = PostingList(all_docs, all_tfs, row, all_tfs, all_docs)
        else:
            live = self.live[si][all_docs]
            result = PostingList(all_docs[live], all_tfs[live], row, all_tfs, all_docs)
        result.all_tf_wide = wide
        result.tf_wide = live_wide(result.docs, all_docs, wide)
        result.pos_starts = pos_starts
        result.occurrences = occurrences
        result.token = self.tokens[si]
        result.dense_n = self._dense_n(si, result.docs)
        return result

    def _dense_n(self, si: int, docs: np.ndarray) -> int:
        """The size of the dense map a list of live postings ``docs`` of segment ``si`` keeps
        (:attr:`PostingList.dense`): the segment's ordinals when most of them hold it, else 0."""
        n = len(self.segments[si].doc_ids)
        return n if len(docs) >= DENSE_POSTINGS_SHARE * n and n < np.iinfo(np.int32).max else 0

    def adopt(self, old: PostingStore, warm_bytes: int = RELOAD_WARM_BYTES) -> int:
        """Take over ``old``'s caches themselves (module docstring): entries name segments by
        serial, so those of the segments both hold serve here, brought up to date when used;
        the long lists among the most recent entries (up to ``warm_bytes`` or
        RELOAD_WARM_ENTRIES) now, before this store serves, and the new segments' lists of
        their words decoded (:meth:`prewarm`).  Work in the recent
        entries, not in the whole cache.  Returns the entries taken over."""
        self.decoded, self.pairs, self.phrases = old.decoded, old.pairs, old.phrases
        old._owns_caches = False
        here = {serial: si for si, serial in enumerate(self.serials)}
        # Per segment both hold whose live pages are a subset of what they were (pages only
        # leave an older segment, when a newer one holds their new version, unless removal
        # rules were relaxed): the live keys its lists may still carry, filtered (:meth:`carry`).
        for old_si, serial in enumerate(old.serials):
            si = here.get(serial)
            if si is None:
                continue
            if old.live_keys[old_si] == self.live_keys[si]:
                self.narrowed_from[si] = old.narrowed_from.get(old_si, ())
            elif not (self.live[si] & ~old.live[old_si]).any():
                self.narrowed_from[si] = (old.live_keys[old_si],
                                          *old.narrowed_from.get(old_si, ()))[:NARROWED_KEPT]
        keys, items = self.decoded.recent(warm_bytes, RELOAD_WARM_ENTRIES)
        view = self.query()
        # each use moves it up: walked from the least recent, the order is kept
        for (serial, term), (value, size) in zip(reversed(keys), reversed(items), strict=True):
            si = here.get(serial)
            if (si is not None and value is not None and size >= RELOAD_WARM_MIN_BYTES
                    and not term.startswith(_POSITIONS)):
                p = view.get(term, si)  # brought up to date (and kept) if it was not
                if p is not None:
                    view.saturated(p, si)
        self.prewarm(list(dict.fromkeys(term for _, term in keys
                                        if not term.startswith(_POSITIONS))),
                     [si for si, seg in enumerate(self.segments) if seg not in old.segments])
        return len(self.decoded)

    def prewarm(self, terms: Sequence[str], new: Sequence[int],
                budget: int = RELOAD_WARM_BYTES) -> int:
        """Decode in segments ``new`` (a cut's, a merge's) ``terms`` (the words queries used
        most recently, first RELOAD_PREWARM_TERMS of them), until ``budget`` bytes of lists
        are made: the new generation's first queries then find them decoded, as they found
        them in the segments the old generation held.  Returns the lists made."""
        view = self.query()
        made = 0
        for term in terms[:RELOAD_PREWARM_TERMS] if new else ():
            for si in new:
                p = view.get(term, si)
                if p is not None:
                    view.saturated(p, si)
                    budget -= nbytes(p)
                    made += 1
            if budget <= 0:
                break
        return made

    def carry(self, old: PostingList, si: int) -> PostingList:
        """A list of segment ``si`` made under another token (another generation's, other
        removal rules) as this store serves it.  Live mask the same, or narrowed from the one
        it was made under (:attr:`narrowed_from`): its postings still live kept, with their
        saturations when the statistics are the same (else made again on use); live mask
        changed otherwise: filtered again from its decoded postings."""
        token = self.tokens[si]
        if old.token is None:
            return self.live_list(si, old.row, old.all_docs, old.all_tfs, old.pos_starts,
                                  occurrences=old.occurrences, wide=old.all_tf_wide)
        same_norms = old.token[16:] == token[16:]
        if old.token[:16] != token[:16]:
            if old.token[:16] not in self.narrowed_from.get(si, ()):
                return self.live_list(si, old.row, old.all_docs, old.all_tfs, old.pos_starts,
                                      occurrences=old.occurrences, wide=old.all_tf_wide)
            # Its live pages now are a subset of those it was made with: keep those of its
            # postings still live, and their saturations when the statistics are the same.
            keep = self.live[si][old.docs]
            if not keep.all():
                p = PostingList(old.docs[keep], old.tfs[keep], old.row, old.all_tfs,
                                old.all_docs, pos_starts=old.pos_starts,
                                pos_blocks=old.pos_blocks, token=token,
                                occurrences=old.occurrences, all_tf_wide=old.all_tf_wide)
                p.tf_wide = live_wide(p.docs, p.all_docs, old.all_tf_wide)
                p.dense_n = self._dense_n(si, p.docs)
                if old.weighted_tf is not None:
                    p.weighted_tf = old.weighted_tf[keep]
                if same_norms and old.saturated is not None:
                    p.saturated = old.saturated[keep]
                return p
        p = PostingList(old.docs, old.tfs, old.row, old.all_tfs, old.all_docs,
                        pos_starts=old.pos_starts, dense=old.dense, dense_n=old.dense_n,
                        pos_blocks=old.pos_blocks, weighted_tf=old.weighted_tf, token=token,
                        occurrences=old.occurrences, all_tf_wide=old.all_tf_wide,
                        tf_wide=old.tf_wide)
        if same_norms:
            p.saturated, p.block_max = old.saturated, old.block_max
        return p

    def near(self, ka: np.ndarray, kb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ordinals, c / (c + 1)) of the documents where occurrences of ``ka`` stand near one
        of ``kb`` in a weighted field (keys sorted): c counts each occurrence of ``a``
        followed by a ``b`` within the window once, and each one preceded by a ``b`` within
        ``reverse_window`` ``reverse`` more (BM25FSettings.proximity_reverse*), so the words
        typed in either order find the pages where they stand together (``vec macro`` and
        ``macro vec`` both find "macro vec", ``module sysconfig`` "sysconfig module")."""
        window, back = self.window, self.reverse_window
        # Keys are sorted: the next occurrence of b after each a is one searchsorted away; a gap
        # of at most the window (< 2**24) means the same document and field.
        if len(ka) > NEAR_FEW_RATIO * len(kb):
            # Few b beside many a (a rare word after the commonest): only the a within the
            # window before some b (or ``back`` after it) can count, the runs [b - window,
            # b + back] of ``ka`` but b itself, found by binary search, not a pass over every a.
            lo = np.searchsorted(ka, kb - window)
            hi = np.searchsorted(ka, kb + back + 1 if back else kb)
            lo[1:] = np.maximum(lo[1:], hi[:-1])  # runs overlap: each a once, in order
            ka = ka[_runs(lo, np.maximum(hi, lo))]
        nxt = np.searchsorted(kb, ka + 1)
        ok = nxt < len(kb)
        near = np.zeros(len(ka), dtype=bool)
        near[ok] = kb[nxt[ok]] - ka[ok] <= window
        weight: np.ndarray | None = None
        if back:
            # The last b before each a is the one before the next b after it (no second search),
            # or the one before that when a b stands at a's own key (two terms of a compound
            # at one position: neither before nor after).
            prv = nxt - 1
            ok = prv >= 0
            prv[ok] -= kb[prv[ok]] == ka[ok]
            ok = prv >= 0
            after = np.zeros(len(ka), dtype=bool)
            after[ok] = ka[ok] - kb[prv[ok]] <= back
            weight = near + self.reverse * after
            near |= after
        near &= self.weighted_field[(ka >> FIELD_SHIFT) & 0xF]  # only fields that count
        if not near.any():
            return _NO_PAIRS
        owners = ka[near] >> DOC_SHIFT  # sorted, as the keys are: run lengths
        first = np.flatnonzero(np.diff(owners, prepend=-1))
        if weight is None:
            c = np.diff(first, append=len(owners)).astype(np.float64)
        else:
            c = np.add.reduceat(weight[near], first)
        return owners[first], c / (c + 1.0)


class QueryPostings:
    """One query's access to a :class:`PostingStore` (module docstring)."""

    def __init__(self, store: PostingStore, norms: Norms | None = None) -> None:
        self.store = store
        self.norms = norms  # None: the snapshot's own statistics
        self.coefficients = store.coefficients if norms is None else norms.coefficients
        self.n_segments = len(store.segments)
        self._memo: dict[tuple[int, str], PostingList | None] = {}

    # ------------------------------------------------------------------ lists
    def get(self, term: str, si: int) -> PostingList | None:
        """The word's postings in segment ``si`` (None: the segment lacks the word)."""
        result = self._memo.get((si, term), _UNSEEN)
        if result is not _UNSEEN:
            return result
        seg = self.store.segments[si]
        return self._fetch(term, si, seg.term_row(term) if seg.lexicon_hashed else _NOT_LOOKED)

    def _fetch(self, term: str, si: int, row: int) -> PostingList | None:
        """:meth:`get` of a word not in the memo; ``row``: its row in the segment's lexicon
        (-1: not there), or _NOT_LOOKED.  A hashed lexicon is asked first: a word the segment
        lacks (most segments, for a rare word) costs one hash lookup, no cache lookup, and is
        not kept in the cache (a put per word and segment, and entries at the cache's recent
        end that a reload walks, :meth:`PostingStore.adopt`); a binary search's verdict is."""
        memo = self._memo
        if row == -1:
            memo[(si, term)] = None
            return None
        store = self.store
        key = (store.serials[si], term)
        found, kept = store.decoded.lookup(key)
        if found and (kept is None or kept.token == store.tokens[si]):
            memo[(si, term)] = kept
            return kept
        result = None
        if kept is not None:  # made under another generation's live mask or statistics
            result = store.carry(kept, si)
            store.carried += 1
        else:
            seg = store.segments[si]
            if row == _NOT_LOOKED:
                row = seg.term_row(term)
            if row >= 0:
                docs, tfs = seg.postings(row)
                tfs, wide = narrow_tfs(tfs)  # uint8 for most (indexer/narrow_tfs.py)
                result = store.live_list(si, row, docs, tfs, wide=wide)
                store.decodes += 1
        memo[(si, term)] = result
        store.decoded.put(key, result)
        return result

    def df(self, term: str) -> int:
        """Live documents holding the word, over every segment (each segment's list found as
        :meth:`get` finds it, the word encoded once for every segment's lexicon)."""
        memo = self._memo
        encoded = term.encode("utf-8", "surrogatepass")
        total = 0
        for si, seg in enumerate(self.store.segments):
            p = memo.get((si, term), _UNSEEN)
            if p is _UNSEEN:
                p = self._fetch(term, si, seg.row_of_key(encoded) if seg.lexicon_hashed
                                else _NOT_LOOKED)
            if p is not None:
                total += len(p.docs)
        return total

    def doc_ids(self, si: int, ords: np.ndarray) -> np.ndarray:
        """The URL IDs of ordinals of segment ``si`` (int64)."""
        return np.asarray(self.store.segments[si].doc_ids[ords], dtype=np.int64)

    # ------------------------------------------------------------------ scores
    def saturated(self, p: PostingList, si: int) -> np.ndarray:
        """tf~/(k1 + tf~) of each posting of ``p``, plus its share of the title weighted
        (bm25f.term_parts: the term's score over its idf), computed once per list and
        norms."""
        if self.norms is None:
            if p.saturated is None:
                p.saturated = self._parts(p.tf_matrix(), si, p.docs)
            return p.saturated
        kept = p.saturated_for
        if kept is None or kept[0] != self.norms.key:
            kept = (self.norms.key, self._parts(p.tf_matrix(), si, p.docs))
            p.saturated_for = kept
        return kept[1]

    def _parts(self, tfs: np.ndarray, si: int, docs: np.ndarray) -> np.ndarray:
        """bm25f.term_parts of postings (``tfs``) of pages ``docs`` of segment ``si``: what
        the idf multiplies, tf~/(k1 + tf~) and the share of the title."""
        store = self.store
        lens = (np.take(store.segments[si].field_lens[:, bm25f.TITLE], docs)
                if store.title_share > 0 else None)
        return bm25f.term_parts(tfs, self.coefficients[si][docs], store.k1, lens,
                                store.title_share)

    def saturated_kept(self, p: PostingList) -> np.ndarray | None:
        """The saturations :meth:`saturated_at` reads, of every posting of ``p``, when the
        list keeps them under these norms; None when it computes them for those asked."""
        return p.saturated if self.norms is None else None

    def saturated_at(self, p: PostingList, si: int, j: np.ndarray, docs: np.ndarray
                     ) -> np.ndarray:
        """tf~/(k1 + tf~) of postings ``j`` of ``p`` (those of ``docs``): the list's kept
        saturations when it has them under these norms, else computed for these alone."""
        kept = self.saturated_kept(p)
        if kept is not None:
            return kept[j]
        return self._parts(p.tf_rows(j), si, docs)

    def unit_scores(self, units: Sequence[Sequence[str]], si: int, idfs: Mapping[str, float]
                    ) -> tuple[np.ndarray, np.ndarray, set[str]]:
        """Every page of segment ``si`` at once, in arrays as long as the segment: (the sum of
        idf x saturation of the query's terms it holds, how many of ``units`` it matches (a
        unit of several terms, a word's alternatives, counts once), the terms found).  The
        searcher's exhaustive path and the pruned path's whole segments (indexer/topk.py)
        both score with it: the same sums in the same order, the same floats."""
        n = len(self.store.segments[si].doc_ids)
        score = np.zeros(n, dtype=np.float64)
        matched = np.zeros(n, dtype=np.int32)
        present: set[str] = set()
        for unit in units:
            hit = np.zeros(n, dtype=bool) if len(unit) > 1 else None
            for term in unit:
                p = self.get(term, si)
                if p is None or len(p.docs) == 0:
                    continue
                present.add(term)
                score[p.docs] += idfs[term] * self.saturated(p, si)
                if hit is None:
                    matched[p.docs] += 1
                else:
                    hit[p.docs] = True
            if hit is not None:
                matched += hit
        return score, matched, present

    def weighted_tf(self, p: PostingList, j: np.ndarray) -> np.ndarray:
        """Occurrences of postings ``j`` of ``p`` in the weighted fields (made once per
        list)."""
        if p.weighted_tf is None:
            p.weighted_tf = row_sums(p.tfs, p.tf_wide,
                                     self.store.weighted_field[:p.tfs.shape[1]])
        return np.take(p.weighted_tf, j)  # faster than indexing by int32

    def block_max(self, p: PostingList, si: int, starts: np.ndarray) -> np.ndarray:
        """Per block of live postings (``starts``), its largest tf~/(k1 + tf~): kept with the
        list under the snapshot's own statistics."""
        block_max = p.block_max if self.norms is None else None
        if block_max is None or len(block_max) != len(starts) - 1:
            block_max = block_maxima(self.saturated(p, si), starts)
            if self.norms is None:
                p.block_max = block_max
        return block_max

    # ------------------------------------------------------------------ positions
    def position_keys(self, p: PostingList, si: int, term: str) -> np.ndarray:
        """Every occurrence of the word in segment ``si`` as a key (sorted; decoded whole once
        and cached)."""
        key = (si, _POSITIONS + term)
        shared = (self.store.serials[si], _POSITIONS + term)
        memo = self._memo.get(key)
        if memo is None:
            kept = self.store.decoded.get(shared)
            if isinstance(kept, PostingList):
                memo = self._memo[key] = kept
        if memo is not None:
            return memo.docs
        all_tfs = p.all_tf_matrix()
        positions = self.store.segments[si].positions(p.row, all_tfs)
        keys = occurrence_keys(p.all_docs, all_tfs, positions)
        # Kept as a list whose "docs" are the keys and that holds nothing else (token None:
        # nbytes counts the keys alone).
        memo = PostingList(keys, _NO_TFS, p.row, _NO_TFS, _NO_DOCS)
        self._memo[key] = memo
        self.store.decoded.put(shared, memo)
        return keys

    def has_position_keys(self, term: str, si: int) -> bool:
        """Whether the word's occurrences in segment ``si`` are decoded whole already."""
        return ((si, _POSITIONS + term) in self._memo
                or self.store.decoded.get((self.store.serials[si], _POSITIONS + term))
                is not None)

    def position_keys_in(self, p: PostingList, si: int, docs: np.ndarray) -> np.ndarray:
        """The keys of the word's occurrences in ``docs`` only (sorted ordinals, each holding
        the word), decoding those postings' positions alone."""
        sel = np.searchsorted(p.all_docs, same_type(docs, p.all_docs))
        seg = self.store.segments[si]
        if p.pos_starts is None:
            p.pos_starts = posting_starts(p.all_tf_matrix(), p.occurrence_count())
        if p.pos_blocks is None:
            p.pos_blocks = seg.position_blocks(p.row)
        tfs = p.all_tf_rows(sel)
        positions = seg.positions_of(p.row, tfs, p.pos_starts[sel], blocks=p.pos_blocks)
        return occurrence_keys(docs, tfs, positions)

    def phrase_mask(self, phrase: Phrase, si: int) -> np.ndarray:
        """Live ordinals of segment ``si`` holding the phrase (terms at their offsets, one
        field), as a mask as long as the segment."""
        mask = np.zeros(len(self.store.segments[si].doc_ids), dtype=bool)
        mask[self.phrase_docs(phrase, si)] = True
        return mask

    def phrase_docs(self, phrase: Phrase, si: int) -> np.ndarray:
        """The live ordinals of segment ``si`` holding the phrase, ascending (of several
        words: kept in the snapshot's phrases cache)."""
        if not phrase.terms:
            return _NO_DOCS
        if len(phrase.terms) == 1:
            p = self.get(phrase.terms[0], si)
            return _NO_DOCS if p is None else p.docs
        kept = self.cached_phrase_docs(phrase, si)
        if kept is not None:
            return kept
        lists: list[tuple[np.ndarray, int]] = []
        for term, offset in zip(phrase.terms, phrase.offsets, strict=True):
            p = self.get(term, si)
            if p is None:
                return _NO_DOCS
            lists.append((self.position_keys(p, si, term), offset))
        every = unique_sorted(phrase_starts(lists) >> DOC_SHIFT)  # from every occurrence
        store = self.store
        store.phrases.put((store.serials[si], phrase.terms, phrase.offsets), (b"", every))
        return every if store.all_live[si] else every[store.live[si][every]]

    def cached_phrase_docs(self, phrase: Phrase, si: int) -> np.ndarray | None:
        """:meth:`phrase_docs` of a phrase of several words if the phrases cache holds it."""
        if len(phrase.terms) < 2:
            return None
        store = self.store
        kept = store.phrases.get((store.serials[si], phrase.terms, phrase.offsets))
        if kept is None:
            return None
        live_key, docs = kept
        if not live_key:  # every page holding it, live or not
            return docs if store.all_live[si] else docs[store.live[si][docs]]
        return docs if live_key == store.live_keys[si] else None

    def keep_phrase_docs(self, phrase: Phrase, si: int, docs: np.ndarray) -> None:
        """Keep ``docs``, the live ordinals of segment ``si`` holding the phrase (sorted; all
        of them, as :meth:`phrase_docs` gives), in the phrases cache."""
        if len(phrase.terms) >= 2:
            store = self.store
            store.phrases.put((store.serials[si], phrase.terms, phrase.offsets),
                              (store.live_keys[si], docs))

    def near(self, ka: np.ndarray, kb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`PostingStore.near` of two words' occurrence keys (of some documents)."""
        return self.store.near(ka, kb)

    def near_pairs_ready(self, a: str, b: str, si: int) -> bool:
        """Whether :meth:`near_pairs` costs no pass over positions not yet decoded: the pair
        is in the pairs cache, or both words' occurrences are decoded whole."""
        if (self.store.serials[si], a, b) in self.store.pairs:
            return True
        return self.has_position_keys(a, si) and self.has_position_keys(b, si)

    def near_pairs_cached(self, a: str, b: str, si: int) -> bool:
        """Whether :meth:`near_pairs` costs a cache look-up alone (the pairs cache holds it)."""
        return (self.store.serials[si], a, b) in self.store.pairs

    def near_pairs(self, a: str, b: str, si: int) -> tuple[np.ndarray, np.ndarray]:
        """(ordinals, c / (c + 1)) of the documents of segment ``si`` where ``b`` follows ``a``
        within the window in a weighted field, c times.  A function of the two words'
        postings alone, so kept in an LRU cache like a bigram's postings."""
        key = (self.store.serials[si], a, b)
        kept = self.store.pairs.get(key)
        if kept is not None:
            return kept
        out = _NO_PAIRS
        pa, pb = self.get(a, si), self.get(b, si)
        if pa is not None and pb is not None and len(pa.all_docs) and len(pb.all_docs):
            out = self.store.near(self.position_keys(pa, si, a), self.position_keys(pb, si, b))
        self.store.pairs.put(key, out)
        return out
