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
list.

Occurrences are keys ``ordinal << 29 | field << 25 | position`` (sorted).

A new index generation (api/snapshot.py's reload) shares most of its segments with the one it
replaces: :meth:`PostingStore.adopt` takes over the previous store's entries for them instead of
decoding them again.  What depends on a segment alone (decoded postings before the live filter,
occurrence keys, near pairs found) carries as it is.  A list's live postings carry where none
of its pages changed liveness (a cut masks the few pages it holds new versions of), and are
filtered again from the kept postings where one did; phrases' pages are filtered under the
new masks.  Saturations depend on the collection's statistics, which any new page changes,
so they are computed again.  The most recent entries (up to
RELOAD_WARM_BYTES) are brought up to date before the new generation serves, the others on
first use (:class:`Inherited`).  The segments a generation adds (a cut, a merge) have nothing to
take over: :meth:`PostingStore.prewarm` decodes there the words the old generation's queries
used most recently (up to RELOAD_WARM_BYTES), so that its first queries do not.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from websift.core.cache import Cache
from websift.indexer import bm25f
from websift.indexer.query import Phrase
from websift.indexer.segment import SegmentReader, posting_starts
from websift.indexer.settings import (
    BLOCK,
    DENSE_POSTINGS_SHARE,
    FIELDS,
    N_FIELDS,
    PAIRS_CACHE_BYTES,
    PHRASES_CACHE_BYTES,
    POSTINGS_CACHE_BYTES,
    RELOAD_WARM_BYTES,
    BM25FSettings,
)

FIELD_SHIFT = 25
DOC_SHIFT = 29
POS_MASK = (1 << FIELD_SHIFT) - 1
# A phrase word whose keys are at most this many times the candidates' is merged with them,
# a longer one searched.
MERGE_RATIO = 8
_POSITIONS = "\x00pos:"  # a cache key's prefix: the term's occurrences, not its postings
_NO_PAIRS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
_NO_DOCS = np.zeros(0, dtype=np.int64)



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
    # Made on first use: where each posting's positions start, and per block of BLOCK
    # postings the largest of ``saturated`` (its exact block bounds).
    pos_starts: np.ndarray | None = None
    pos_blocks: tuple[np.ndarray, np.ndarray] | None = None  # codec.block_bits of positions
    # Per live posting, its occurrences in the fields that count for proximity (int32): a
    # bound of how often a pair with the word can stand near (indexer/topk.py).
    weighted_tf: np.ndarray | None = None
    # Candidates whose positions of the word queries have read one by one (not the whole
    # list) while it is cached: indexer/topk.py decodes them whole past a share of the list.
    positions_read: int = 0
    block_max: np.ndarray | None = None
    # For a list most pages hold (DENSE_POSTINGS_SHARE): per ordinal of the segment, the index
    # of its live posting in ``docs`` or -1 (int32).
    dense: np.ndarray | None = None
    # Per block, the largest prior of its pages under one prior (its key, the array).
    block_prior: tuple[Hashable, np.ndarray] | None = None

    def find(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(which of ``docs`` hold the word, their index in the live postings): one gather
        through the dense map when the list keeps one, else a binary search."""
        if self.dense is None:
            return member(docs, self.docs)
        j = self.dense[docs]
        hit = j >= 0
        return hit, np.where(hit, j, 0).astype(np.int64)

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


@dataclass(frozen=True)
class Inherited:
    """A previous generation's list of a shared segment, brought up to date on first use:
    filtered again from its postings before the live filter unless ``same_docs`` (none of
    its pages changed liveness), its saturations computed again."""

    old: PostingList
    same_docs: bool


def member(docs: np.ndarray, sorted_docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(which of ``docs`` are in ``sorted_docs``, their index there)."""
    j = np.searchsorted(sorted_docs, docs)
    jc = np.minimum(j, max(len(sorted_docs) - 1, 0))
    hit = (j < len(sorted_docs)) & (sorted_docs[jc] == docs) if len(sorted_docs) else (
        np.zeros(len(docs), dtype=bool))
    return hit, jc


def block_maxima(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per block ``[starts[i], starts[i + 1])`` of ``values``, the largest; 0 for an empty
    block (every posting dead), not its neighbour's first."""
    out = np.maximum.reduceat(np.append(values, 0.0), starts[:-1])
    out[starts[1:] == starts[:-1]] = 0.0
    return out


def nbytes(p: PostingList | Inherited | None) -> int:
    """Bytes a cached entry holds: its arrays, each once (with every page live, ``all_docs``
    is ``docs``; arrays shared with another entry are counted again), and the saturated
    scores and the positions' starts made later (float64, int64)."""
    if p is None:
        return 64
    if isinstance(p, Inherited):
        p = p.old
    arrays = {id(a): a.nbytes for a in (p.docs, p.tfs, p.all_tfs, p.all_docs, p.dense)
              if a is not None}
    return int(sum(arrays.values()) + 8 * len(p.docs) + 8 * len(p.all_docs)
               + len(p.docs) // 8  # + block maxima (bounds and priors)
               + 4 * len(p.docs)  # + weighted tfs
               + 16 * (int(p.all_tfs.sum()) // BLOCK + 1))  # + position blocks' bits


@dataclass(frozen=True)
class Norms:
    """Average field lengths and each segment's per-document field coefficients under them."""

    key: bytes
    avg_lens: np.ndarray
    coefficients: list[np.ndarray]


class PostingStore:
    """The postings of a snapshot's segments, decoded on demand into caches bounded by bytes."""

    def __init__(self, segments: Sequence[SegmentReader], live: Sequence[np.ndarray],
                 coefficients: Sequence[np.ndarray], settings: BM25FSettings) -> None:
        """``live``: per segment, its live ordinals (indexer/liveness.py); ``coefficients``:
        per segment, each document's BM25F field coefficients under the snapshot's own
        statistics."""
        self.segments = list(segments)
        self.live = list(live)
        self.all_live = [bool(m.all()) for m in self.live]  # per segment: no ordinal masked
        self.coefficients = list(coefficients)
        self.k1 = settings.k1
        self.window = settings.proximity_window
        # Per field number (4 bits of a key): whether the field counts (weight > 0).
        self.weighted_field = np.zeros(16, dtype=bool)
        self.weighted_field[:N_FIELDS] = [settings.weights.get(f, 0.0) > 0 for f in FIELDS]
        self.decoded: Cache[tuple[int, str], PostingList | Inherited | None] = Cache(
            POSTINGS_CACHE_BYTES, nbytes)
        self.pairs: Cache[tuple[int, str, str], tuple[np.ndarray, np.ndarray]] = Cache(
            PAIRS_CACHE_BYTES, lambda v: 64 + v[0].nbytes + v[1].nbytes)
        # (segment, a phrase's terms and offsets) -> its live ordinals there: a function of
        # the words' occurrences alone (a phrase of common words costs a pass over their
        # millions of keys), kept like a pair's proximity evidence.
        self.phrases: Cache[tuple[int, tuple[str, ...], tuple[int, ...]], np.ndarray] = Cache(
            PHRASES_CACHE_BYTES, lambda v: 64 + v.nbytes)
        # Lists decoded from a segment's files (not found in the cache or taken over from a
        # previous generation): what a reload that carried its caches over saves.
        self.decodes = 0

    def query(self, norms: Norms | None = None) -> QueryPostings:
        """A view for one query, scored under ``norms`` (None: the snapshot's own)."""
        return QueryPostings(self, norms)

    def caches(self) -> dict[str, Cache[Any, Any]]:
        return {"postings": self.decoded, "pairs": self.pairs, "phrases": self.phrases}

    def close(self) -> None:
        self.segments = []
        self.live = []
        self.coefficients = []
        for cache in self.caches().values():
            cache.clear()

    def live_list(self, si: int, row: int, all_docs: np.ndarray, all_tfs: np.ndarray,
                  pos_starts: np.ndarray | None = None) -> PostingList:
        """A word's postings in segment ``si`` (before the live filter) as this snapshot
        serves them: its live ones, and a dense map when most pages hold it."""
        if self.all_live[si]:
            result = PostingList(all_docs, all_tfs, row, all_tfs, all_docs)
        else:
            live = self.live[si][all_docs]
            result = PostingList(all_docs[live], all_tfs[live], row, all_tfs, all_docs)
        result.pos_starts = pos_starts
        n = len(self.segments[si].doc_ids)
        if len(result.docs) >= DENSE_POSTINGS_SHARE * n and n < np.iinfo(np.int32).max:
            result.dense = np.full(n, -1, dtype=np.int32)
            result.dense[result.docs] = np.arange(len(result.docs), dtype=np.int32)
        return result

    def adopt(self, old: PostingStore, old_of: Sequence[int],
              warm_bytes: int = RELOAD_WARM_BYTES) -> int:
        """Take over ``old``'s entries for the segments both hold (module docstring);
        ``old_of[si]``: the index in ``old`` of this store's segment ``si``, -1 for a new one.
        Returns the entries taken over."""
        new_of = {o: n for n, o in enumerate(old_of) if o >= 0}
        # Per shared segment, the ordinals whose liveness changed (a few: the pages a cut
        # holds new versions of): a list holding none of them keeps its live postings.
        flipped = {n: np.flatnonzero(old.live[o] != self.live[n]) for o, n in new_of.items()}
        same_norms = {n: len(flipped[n]) == 0 and bool(np.array_equal(old.coefficients[o],
                                                                      self.coefficients[n]))
                      for o, n in new_of.items()}
        taken: list[tuple[tuple[int, str], PostingList | Inherited | None, int]] = []
        budget = warm_bytes
        view = self.query()
        # Most recent first; each entry keeps its size (filtering only shrinks a list).
        for (o, term), kept, size in reversed(old.decoded.entries()):
            n = new_of.get(o)
            if n is None:
                continue
            # an entry the old store never brought up to date: its docs are older still
            value, same_docs = ((kept.old, kept.same_docs) if isinstance(kept, Inherited)
                                else (kept, True))
            if value is None or term.startswith(_POSITIONS):
                taken.append(((n, term), value, size))  # a function of the segment alone
                continue
            same_docs = same_docs and not member(flipped[n], value.all_docs)[0].any()
            if budget <= 0:  # brought up to date on first use
                taken.append(((n, term), Inherited(value, same_docs), size))
                continue
            p = self.carry(value, n, same_docs=same_docs, same_norms=same_norms[n])
            view.saturated(p, n)
            budget -= size
            taken.append(((n, term), p, size))
        for key, entry, size in reversed(taken):  # least recent first: the LRU order kept
            self.decoded.put(key, entry, size)
        self._adopt_pairs(old, new_of, flipped)
        return len(taken)

    def prewarm(self, old: PostingStore, old_of: Sequence[int],
                budget: int = RELOAD_WARM_BYTES) -> int:
        """Decode in this store's new segments (``old_of[si]`` -1: a cut's, a merge's) the
        words ``old``'s cache used most recently, until ``budget`` bytes of lists are made:
        the new generation's first queries then find them decoded, as they found them in the
        segments the old generation held.  Returns the lists made."""
        new = [si for si, o in enumerate(old_of) if o < 0]
        if not new or budget <= 0:
            return 0
        terms = list(dict.fromkeys(term for (_, term), _, _ in reversed(old.decoded.entries())
                                   if not term.startswith(_POSITIONS)))
        view = self.query()
        made = 0
        for term in terms:
            for si in new:
                p = view.get(term, si)
                if p is not None:
                    view.saturated(p, si)
                    budget -= nbytes(p)
                    made += 1
            if budget <= 0:
                break
        return made

    def _adopt_pairs(self, old: PostingStore, new_of: dict[int, int],
                     flipped: dict[int, np.ndarray]) -> None:
        """Near pairs and phrases' pages of the shared segments (:meth:`adopt`)."""
        for (o, a, b), pairs, size in old.pairs.entries():
            # found near pairs come from the words' occurrences alone; none found may also
            # mean a word had no live page there, which removals lifted since may change
            if o in new_of and (len(pairs[0]) or len(flipped[new_of[o]]) == 0):
                self.pairs.put((new_of[o], a, b), pairs, size)
        for (o, terms, offsets), docs, size in old.phrases.entries():
            n = new_of.get(o)
            if n is None or self.live[n][flipped[n]].any():
                continue  # a page came back to life (removals lifted): found again on use
            self.phrases.put((n, terms, offsets), docs[self.live[n][docs]], size)

    def carry(self, old: PostingList, si: int, *, same_docs: bool, same_norms: bool
              ) -> PostingList:
        """A previous generation's list of segment ``si`` as this store serves it:
        ``same_docs``, its live postings did not change; ``same_norms``, nor did the
        segment's coefficients."""
        if not same_docs:
            return self.live_list(si, old.row, old.all_docs, old.all_tfs, old.pos_starts)
        p = PostingList(old.docs, old.tfs, old.row, old.all_tfs, old.all_docs,
                        pos_starts=old.pos_starts, dense=old.dense, pos_blocks=old.pos_blocks)
        if same_norms:
            p.saturated, p.block_max = old.saturated, old.block_max
        return p

    def near(self, ka: np.ndarray, kb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ordinals, c / (c + 1)) of the documents where an occurrence of ``kb`` follows one
        of ``ka`` within the proximity window in a weighted field, c times (keys sorted)."""
        # Keys are sorted: the next occurrence of b after each a is one searchsorted away;
        # a gap of at most the window (< 2**24) means the same document and field.
        nxt = np.searchsorted(kb, ka + 1)
        ok = nxt < len(kb)
        near = np.zeros(len(ka), dtype=bool)
        near[ok] = kb[nxt[ok]] - ka[ok] <= self.window
        near &= self.weighted_field[(ka >> FIELD_SHIFT) & 0xF]  # only fields that count
        if not near.any():
            return _NO_PAIRS
        owners = ka[near] >> DOC_SHIFT  # sorted, as the keys are: run lengths
        first = np.flatnonzero(np.diff(owners, prepend=-1))
        c = np.diff(first, append=len(owners)).astype(np.float64)
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
        key = (si, term)
        memo = self._memo
        if key in memo:
            return memo[key]
        store = self.store
        found, kept = store.decoded.lookup(key)
        if found and not isinstance(kept, Inherited):
            memo[key] = kept
            return kept
        result = None
        if isinstance(kept, Inherited):  # a previous generation's list
            result = store.carry(kept.old, si, same_docs=kept.same_docs, same_norms=False)
        else:
            seg = store.segments[si]
            row = seg.term_row(term)
            if row >= 0:
                docs, tfs = seg.postings(row)
                if len(tfs):  # kept in the smallest type that holds them (uint8 for most)
                    tfs = tfs.astype(np.min_scalar_type(int(tfs.max())), copy=False)
                result = store.live_list(si, row, docs, tfs)
                store.decodes += 1
        memo[key] = result
        store.decoded.put(key, result)
        return result

    def df(self, term: str) -> int:
        """Live documents holding the word, over every segment."""
        total = 0
        for si in range(self.n_segments):
            p = self.get(term, si)
            if p is not None:
                total += len(p.docs)
        return total

    def doc_ids(self, si: int, ords: np.ndarray) -> np.ndarray:
        """The URL IDs of ordinals of segment ``si`` (int64)."""
        return np.asarray(self.store.segments[si].doc_ids[ords], dtype=np.int64)

    # ------------------------------------------------------------------ scores
    def saturated(self, p: PostingList, si: int) -> np.ndarray:
        """tf~/(k1 + tf~) of each posting of ``p``, computed once per list and norms."""
        k1 = self.store.k1
        if self.norms is None:
            if p.saturated is None:
                p.saturated = bm25f.saturate(
                    bm25f.pseudo_tf(p.tfs, self.coefficients[si][p.docs]), k1)
            return p.saturated
        kept = p.saturated_for
        if kept is None or kept[0] != self.norms.key:
            kept = (self.norms.key, bm25f.saturate(
                bm25f.pseudo_tf(p.tfs, self.coefficients[si][p.docs]), k1))
            p.saturated_for = kept
        return kept[1]

    def saturated_at(self, p: PostingList, si: int, j: np.ndarray, docs: np.ndarray
                     ) -> np.ndarray:
        """tf~/(k1 + tf~) of postings ``j`` of ``p`` (those of ``docs``): the list's kept
        saturations when it has them under these norms, else computed for these alone."""
        if self.norms is None and p.saturated is not None:
            return p.saturated[j]
        return bm25f.saturate(bm25f.pseudo_tf(p.tfs[j], self.coefficients[si][docs]),
                              self.store.k1)

    def weighted_tf(self, p: PostingList, j: np.ndarray) -> np.ndarray:
        """Occurrences of postings ``j`` of ``p`` in the weighted fields (made once per
        list)."""
        if p.weighted_tf is None:
            weighted = self.store.weighted_field[:p.tfs.shape[1]]
            p.weighted_tf = np.asarray(p.tfs[:, weighted].sum(axis=1), dtype=np.int32)
        return p.weighted_tf[j]

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
        memo = self._memo.get(key)
        if memo is None:
            kept = self.store.decoded.get(key)
            if isinstance(kept, PostingList):  # occurrence keys are never Inherited
                memo = self._memo[key] = kept
        if memo is not None:
            return memo.docs
        positions = self.store.segments[si].positions(p.row, p.all_tfs)
        # (posting, field) group of each position -> (ordinal << 4 | field) in one repeat
        group_key = (p.all_docs[:, None] << 4) | np.arange(N_FIELDS, dtype=np.int64)
        per_pos = np.repeat(group_key.ravel(), p.all_tfs.ravel().astype(np.int64))
        keys = ((per_pos >> 4) << DOC_SHIFT) | ((per_pos & 0xF) << FIELD_SHIFT) | positions
        # Kept as a list whose "docs" are the keys: cached and sized as postings are.
        memo = PostingList(keys, p.tfs, p.row, p.all_tfs, p.all_docs)
        self._memo[key] = memo
        self.store.decoded.put(key, memo)
        return keys

    def has_position_keys(self, term: str, si: int) -> bool:
        """Whether the word's occurrences in segment ``si`` are decoded whole already."""
        key = (si, _POSITIONS + term)
        return key in self._memo or self.store.decoded.get(key) is not None

    def position_keys_in(self, p: PostingList, si: int, docs: np.ndarray) -> np.ndarray:
        """The keys of the word's occurrences in ``docs`` only (sorted ordinals, each holding
        the word), decoding those postings' positions alone."""
        sel = np.searchsorted(p.all_docs, docs)
        seg = self.store.segments[si]
        if p.pos_starts is None:
            p.pos_starts = posting_starts(p.all_tfs)
        if p.pos_blocks is None:
            p.pos_blocks = seg.position_blocks(p.row)
        positions = seg.positions_of(p.row, p.all_tfs, sel, starts=p.pos_starts,
                                     blocks=p.pos_blocks)
        tfs = p.all_tfs[sel]
        group = (docs[:, None] << 4) | np.arange(N_FIELDS, dtype=np.int64)
        per_pos = np.repeat(group.ravel(), tfs.ravel().astype(np.int64))
        return ((per_pos >> 4) << DOC_SHIFT) | ((per_pos & 0xF) << FIELD_SHIFT) | positions

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
        key = (si, phrase.terms, phrase.offsets)
        kept = self.store.phrases.get(key)
        if kept is not None:
            return kept
        lists: list[tuple[np.ndarray, int]] = []
        for term, offset in zip(phrase.terms, phrase.offsets, strict=True):
            p = self.get(term, si)
            if p is None:
                return _NO_DOCS
            lists.append((self.position_keys(p, si, term), offset))
        docs = unique_sorted(phrase_starts(lists) >> DOC_SHIFT)
        if not self.store.all_live[si]:
            docs = docs[self.store.live[si][docs]]
        self.store.phrases.put(key, docs)
        return docs

    def cached_phrase_docs(self, phrase: Phrase, si: int) -> np.ndarray | None:
        """:meth:`phrase_docs` of a phrase of several words if the phrases cache holds it."""
        if len(phrase.terms) < 2:
            return None
        return self.store.phrases.get((si, phrase.terms, phrase.offsets))

    def keep_phrase_docs(self, phrase: Phrase, si: int, docs: np.ndarray) -> None:
        """Keep ``docs``, the live ordinals of segment ``si`` holding the phrase (sorted; all
        of them, as :meth:`phrase_docs` gives), in the phrases cache."""
        if len(phrase.terms) >= 2:
            self.store.phrases.put((si, phrase.terms, phrase.offsets), docs)

    def near(self, ka: np.ndarray, kb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`PostingStore.near` of two words' occurrence keys (of some documents)."""
        return self.store.near(ka, kb)

    def near_pairs(self, a: str, b: str, si: int) -> tuple[np.ndarray, np.ndarray]:
        """(ordinals, c / (c + 1)) of the documents of segment ``si`` where ``b`` follows ``a``
        within the window in a weighted field, c times.  A function of the two words'
        postings alone, so kept in an LRU cache like a bigram's postings."""
        key = (si, a, b)
        kept = self.store.pairs.get(key)
        if kept is not None:
            return kept
        out = _NO_PAIRS
        pa, pb = self.get(a, si), self.get(b, si)
        if pa is not None and pb is not None and len(pa.docs) and len(pb.docs):
            out = self.store.near(self.position_keys(pa, si, a), self.position_keys(pb, si, b))
        self.store.pairs.put(key, out)
        return out
