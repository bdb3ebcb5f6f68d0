"""Top-k text matches with bounded work per query: block-max pruning, phrases and
proximity on candidates only, a deadline.

Every word's postings are cut in blocks of ``BLOCK`` (the docs stream's bit-packing blocks);
each block's bound is its largest BM25F term score, exact: idf times the largest tf~/(k1 + tf~)
of its live postings (Robertson & Zaragoza 2009, 3.4), from the saturations the decoded list
keeps (computed once per cached list).  The segment's stored impacts (indexer/segment_writer.py
:func:`block_impacts`: per block the largest tf and the shortest length of each field) bound
the same score without the list, but pair one posting's tf with another's length; the searcher
decodes a list whole anyway, so the exact maxima cost one pass and skip far more.  The
evaluation is MaxScore (Turtle & Flood 1995) over block bounds, in the "block-max" manner of
Ding & Suel 2011 and Lucene's impacts, vectorised per round rather than per document:

1. The blocks of every (unit, word, segment) list are taken in descending bound, a round at a
   time (the first round ``PRUNE_FIRST_POSTINGS`` postings or twice ``want``, then doubling up to
   ``PRUNE_MAX_ROUND_POSTINGS``, so that a round ends soon after the deadline)
   until ``T`` is known; then, each round, the blocks that can no longer hold a document
   reaching ``T`` (their bound plus the other lists' largest left) are skipped for good, and
   of the rest only those of *essential* lists are read: the lists of smallest bound whose
   documents, holding no other list's word, cannot reach ``T`` even with the coordination
   factor of the units they hold, are not (a document of theirs that holds an essential
   list's word is met in that list's blocks).
   The documents of a round's blocks not seen before are the round's candidates: cheap filters
   first (``site:``, the words of required phrases, excluded words), then their exact BM25F sum
   and coordination, each other list probed by binary search (``searchsorted``), or by one
   gather through the dense map a list most pages hold keeps (``DENSE_POSTINGS_SHARE``, as
   Lucene's dense blocks).  A required phrase makes the query conjunctive: in each segment only
   the shortest list of a required word is read (its *driver*), the others are only probed
   (intersection smallest list first), and their bounds count while the driver has blocks
   left.
2. A candidate's upper bound is its exact BM25F part plus, per pair of consecutive query words
   it holds both of, the largest proximity bonus (``weight * min(idf)``; c / (c + 1) < 1).
   A pair whose evidence is at hand (the pairs cache, or both words' occurrences decoded
   whole) gives its exact bonus at once, and bounds each block by the largest bonus of the
   pair among the block's pages.  Candidates whose phrases or proximity remain open are
   checked in batches, highest bound first, reading positions for those documents only
   (:meth:`SegmentReader.positions_of`); the others are exact at once.
3. ``T``, the score a document needs, only rises.  The answer asked for is the exact top
   ``want`` of text + prior over every matching document (the fusion's boost is bounded, at
   most ``prior_bound`` = ``w``: ranking/fusion.py), so as candidates become exact their
   prior is looked up (the caller's ``prior``) and ``T`` is the ``want``-th best fused score
   so far minus ``w``: a page whose text score is below it cannot reach the top ``want``
   even with the largest boost.  Without a prior, ``T`` is the ``want``-th best text score.
   A document never seen is in unprocessed blocks of every list holding it, so its score is
   at most the sum of its segment's lists' largest remaining block bounds plus the pairs'
   bonuses, times the coordination of the units those lists hold: once that is below ``T``
   and no candidate's bound reaches ``T``, the answer is complete.  The result is every candidate with a text score of at least the final ``T``:
   it holds the same top ``want`` after the prior (ties broken by URL) as scoring every
   posting (the searcher's ``exhaustive`` path; the property test in
   tests/indexer/test_topk.py compares them).

Work and memory grow with the postings and candidates a query needs, never with the
collection (no array as long as a segment; a list is decoded whole, once, and kept in the
snapshot's postings cache).  The evaluation reads postings only through the query's
:class:`~websift.indexer.postings.QueryPostings` (lists, saturations, block maxima, positions,
near pairs) and never sees the searcher.  Past the deadline the search stops between
rounds or batches and returns what it has, flagged partial, once it has PARTIAL_MIN_HITS exact
hits (a partial answer is never empty while pages match).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from websift.core.distinct import distinct, distinct_small
from websift.indexer.postings import (
    DOC_SHIFT,
    POS_MASK,
    PostingList,
    QueryPostings,
    block_maxima,
    member,
    phrase_starts,
    unique_sorted,
)
from websift.indexer.query import Phrase
from websift.indexer.settings import (
    PARTIAL_MIN_HITS,
    PRUNE_BOUND_SLACK,
    PRUNE_DENSE_SHARE,
    PRUNE_EVIDENCE_KEY_SECONDS,
    PRUNE_EVIDENCE_SHARE,
    PRUNE_FIRST_POSTINGS,
    PRUNE_MAX_ROUND_POSTINGS,
    PRUNE_PHRASE_ALL,
    PRUNE_VERIFY_FIRST,
    PRUNE_VERIFY_MAX,
    PRUNE_WHOLE_LIST,
    SEEN_MASK_SHARE,
    BM25FSettings,
)

Prior = Callable[[np.ndarray], np.ndarray]  # URL IDs -> the boost added to their text score

PAIR_BLOCKS_KEPT = 16  # pairs' per-block maxima kept with a cached list (a few KB each)
_TIE = 1e-9  # relative: a bound this close below T still counts (float rounding of sums)


@dataclass
class Plan:
    """What the searcher parsed and computed for one query."""

    units: list[tuple[str, ...]]
    idfs: dict[str, float]
    pairs: list[tuple[str, str]]
    required: list[Phrase]
    excluded: list[Phrase]
    site_masks: list[np.ndarray] | None
    nosite_masks: list[np.ndarray] | None


@dataclass
class TopText:
    """The candidates with their exact text scores (every one that can matter), and how
    complete the search was."""

    segs: np.ndarray
    ords: np.ndarray
    text: np.ndarray
    prior: np.ndarray  # the prior of each (zeros without one)
    total: int
    total_exact: bool
    partial: bool
    blocks: int = 0  # blocks of postings in the query's lists
    blocks_read: int = 0  # of those, taken as candidates
    verified: int = 0  # candidates whose positions were read


@dataclass
class _List:
    unit: int
    term: str
    si: int
    p: PostingList
    starts: np.ndarray  # index in the live postings where each block starts; + the end
    bound: np.ndarray  # per block: an upper bound of idf * tf~ / (k1 + tf~)
    desc: np.ndarray = field(default_factory=lambda: np.zeros(0))  # bounds, descending
    pmax: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per block: largest prior


@dataclass
class _Pending:
    si: np.ndarray
    ords: np.ndarray
    base: np.ndarray  # the BM25F sum, exact
    coord: np.ndarray
    ub: np.ndarray  # an upper bound of the text score, less what its prior falls short of w
    phrase: np.ndarray  # bool: its match still depends on a phrase check
    prior: np.ndarray  # its prior (zeros without one)


@dataclass
class _Scored:
    """New candidates of a segment, and what their proximity pairs give them so far."""

    pending: _Pending
    exact: np.ndarray  # the bonus of the pairs whose evidence was at hand, exact
    open_pairs: list[tuple[str, str]]  # the pairs left to check (their bonus only bounded)
    hits: dict[str, np.ndarray]  # per word with a list in the segment: which candidates hold it


_NO_INT = np.zeros(0, dtype=np.int64)


def _concat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _kth(values: np.ndarray, k: int) -> float:
    """The k-th largest value, or -inf if there are fewer."""
    if k <= 0 or len(values) < k:
        return -math.inf
    return float(np.partition(values, len(values) - k)[len(values) - k])


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The indices of the ranges [lo, hi) concatenated."""
    n = hi - lo
    total = int(n.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(total, dtype=np.int64)


class _Evaluation:
    def __init__(self, postings: QueryPostings, plan: Plan, settings: BM25FSettings, *,
                 want: int, prior: Prior | None, prior_bound: float, deadline: float | None,
                 prior_key: Hashable | None = None,
                 prior_table: Callable[[int], np.ndarray] | None = None) -> None:
        self.postings = postings
        self.plan = plan
        self.settings = settings
        self.want = max(want, 1)
        self.prior = prior
        self.prior_bound = prior_bound if prior is not None else 0.0
        self.prior_key = prior_key if prior is not None else None
        self.prior_table = prior_table if prior is not None else None
        self.deadline = deadline
        st = settings
        self.pair_bonus = [st.proximity_weight * min(plan.idfs[a], plan.idfs[b])
                           for a, b in plan.pairs] if st.proximity_weight > 0 else []
        # A pair's word that is no unit (a stop word beside a query word) has no lists: the
        # bounds take it as present anywhere.
        self.free = {t for ab in plan.pairs for t in ab} - {t for u in plan.units for t in u}
        self.lists: list[_List] = []
        self.driver = np.zeros(0, dtype=np.int64)  # per list: the driver it is probed for
        self.res_si: list[np.ndarray] = []
        self.res_ord: list[np.ndarray] = []
        self.res_text: list[np.ndarray] = []
        self.res_prior: list[np.ndarray] = []
        self.fused = np.zeros(0)  # text + prior of the best ``want`` exact candidates
        self.found = 0  # exact candidates
        self.T = -math.inf
        self.sure = 0  # documents known to match
        self.unsure_dropped = False
        self.verified = 0
        # (a phrase's terms and offsets, segment) -> candidates checked for it one by one.
        self._phrase_read: dict[tuple[tuple[str, ...], tuple[int, ...], int], int] = {}
        self._every: dict[tuple[tuple[str, ...], tuple[int, ...], int], np.ndarray] = {}
        # Per segment, the live pages holding every required phrase when the phrases cache
        # holds them (run): candidates elsewhere are dropped, those there need no check.
        self._known_pages: dict[int, np.ndarray] = {}
        # Set by run: per block in the order the read lists' blocks were concatenated, its
        # index in run's order; their bounds; where each list's run starts; the lists.
        self._groups: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        # Whether a candidate's match may depend on positions (a phrase required or excluded).
        self.phrased = any(len(ph.terms) > 1 for ph in [*plan.required, *plan.excluded])

    # ------------------------------------------------------------ bounds
    def _block_bound(self, p: PostingList, si: int, idf: float, starts: np.ndarray
                     ) -> np.ndarray:
        """Per block of live postings (``starts``), idf times its largest tf~/(k1 + tf~): the
        exact largest term score, from the saturations the decoded list keeps (computed once
        per cached list under the snapshot's statistics)."""
        return idf * self.postings.block_max(p, si, starts) * (1.0 + PRUNE_BOUND_SLACK)

    def _open_lists(self) -> None:
        for ui, unit in enumerate(self.plan.units):
            for term in unit:
                for si in range(self.postings.n_segments):
                    p = self.postings.get(term, si)
                    if p is None or len(p.docs) == 0:
                        continue
                    starts = p.block_starts()
                    bound = self._block_bound(p, si, self.plan.idfs[term], starts)
                    self.lists.append(_List(ui, term, si, p, starts, bound,
                                            np.sort(bound)[::-1],
                                            self._block_prior(p, si, starts)))
        self._drive_by_required()

    def _block_prior(self, p: PostingList, si: int, starts: np.ndarray) -> np.ndarray:
        """Per block of live postings, the largest prior of its pages: with a ``prior_key``
        (the prior is the same function for every query giving that key) computed once per
        cached list and key; otherwise the prior's bound, ``w``, for every block."""
        nb = len(starts) - 1
        if self.prior is None or self.prior_key is None:
            return np.full(nb, self.prior_bound)
        return p.block_prior_max(self.prior_key, starts, lambda: np.minimum(
            block_maxima(self._priors(si, p.docs), starts), self.prior_bound))

    def _priors(self, si: int, docs: np.ndarray) -> np.ndarray:
        """The prior of each of ``docs`` (ordinals of segment ``si``); zeros without one."""
        if self.prior is None:
            return np.zeros(len(docs))
        if self.prior_table is not None:
            return np.take(self.prior_table(si), docs)
        return np.asarray(self.prior(self.postings.doc_ids(si, docs)), dtype=np.float64)

    def _drive_by_required(self) -> None:
        """A required phrase makes the query conjunctive: a page that matches holds each of its
        words, so in each segment only the shortest list of a required word (the *driver*) is
        read block by block, and every other list there is only probed for the driver's
        candidates (intersection smallest list first).  A segment lacking a required word has
        no match and no lists.  ``self.driver[li]``: the driver a probed list follows (-1
        for a list that is read)."""
        required = {t for ph in self.plan.required for t in ph.terms}
        dead = {si for si in {lst.si for lst in self.lists} for t in required
                if (p := self._postings_of(t, si)) is None or len(p.docs) == 0}
        self.lists = [lst for lst in self.lists if lst.si not in dead]
        self.driver = np.full(len(self.lists), -1, dtype=np.int64)
        for lists in (self._by_seg().values() if required else ()):
            drivers = [li for li in lists if self.lists[li].term in required]
            if not drivers:
                continue
            d = min(drivers, key=lambda li: len(self.lists[li].p.docs))
            for li in lists:
                if li != d:
                    self.driver[li] = d

    def _left(self, untaken: np.ndarray) -> tuple[np.ndarray, dict[int, float]]:
        """Per list, the largest bound of its blocks not taken (``untaken``, in run's order;
        0: none left); per segment, the sum of those lists plus the bonus of each pair whose
        two words both have blocks left there (with the slack; the coordination factor not
        applied)."""
        assert self._groups is not None  # set by run before its first round
        # Each read list's blocks are one run in the order they were concatenated: a
        # reduction per run (max is exact: the floats of np.maximum.at over them).
        back, by_list, firsts, lists = self._groups
        left = np.zeros(len(self.lists))
        left[lists] = np.maximum(np.maximum.reduceat(
            np.where(untaken[back], by_list, 0.0), firsts), 0.0)
        # A probed list's pages are all in its driver's blocks: unseen while those are left.
        for li in np.flatnonzero(self.driver >= 0).tolist():
            lst = self.lists[li]
            left[li] = lst.desc[0] if left[self.driver[li]] > 0 and len(lst.desc) else 0.0
        return left, {si: self._bound_of(left, lists, coord=False)
                      for si, lists in self._by_seg().items()}

    def _by_seg(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for li, lst in enumerate(self.lists):
            out.setdefault(lst.si, []).append(li)
        return out

    def _bound_of(self, left: np.ndarray, lists: list[int], *, coord: bool) -> float:
        """The largest text score of a document found only in ``lists``' blocks not taken: their
        largest bounds left summed, plus the bonus of each pair whose two words both have blocks
        left, times (with ``coord``) the coordination factor of the units those lists hold
        (a document holds no other unit: it would have been seen in that unit's blocks)."""
        held = [li for li in lists if left[li] > 0]
        if not held:
            return -math.inf
        terms = {self.lists[li].term for li in held} | self.free
        total = float(sum(left[li] for li in held)) + sum(
            w for (a, b), w in zip(self.plan.pairs, self.pair_bonus, strict=False)
            if a in terms and b in terms)
        if coord:
            units = len({self.lists[li].unit for li in held})
            total *= (units / max(len(self.plan.units), 1)) ** self.settings.coord_power
        return total * (1.0 + PRUNE_BOUND_SLACK)

    def _pair_gaps(self, read: list[int]) -> list[tuple[int, np.ndarray]]:
        """Per pair whose evidence is at hand in some segment (:meth:`_score`), per block of
        the ``read`` lists (concatenated in that order), what its pages' bonus of the pair
        falls short of the pair's largest, at least: ``w`` times 1 less the largest
        c / (c + 1) of the block's pages (0 for a list of neither word)."""
        out: list[tuple[int, np.ndarray]] = []
        for pi, ((a, b), w) in enumerate(zip(self.plan.pairs, self.pair_bonus, strict=False)):
            parts: list[np.ndarray] = []
            any_gap = False
            for li in read:
                lst = self.lists[li]
                nb = len(lst.starts) - 1
                if lst.term not in (a, b) or not self.postings.near_pairs_ready(a, b, lst.si):
                    parts.append(np.zeros(nb))
                    continue
                parts.append(w * (1.0 - self._pair_block_max(lst, a, b)))
                any_gap = True
            if any_gap:
                out.append((pi, np.concatenate(parts)))
        return out

    def _pair_block_max(self, lst: _List, a: str, b: str) -> np.ndarray:
        """Per block of ``lst``, the largest c / (c + 1) of the pair (a, b) among its pages (0:
        none stands near): kept with the cached list, as its block maxima are."""
        kept = lst.p.pair_block_max
        nb = len(lst.starts) - 1
        most = kept.get((a, b))
        if most is not None and len(most) == nb:
            return most
        near_docs, share = self.postings.near_pairs(a, b, lst.si)
        hit, j = member(near_docs, lst.p.docs)
        most = np.zeros(nb)
        if hit.any():
            # Ascending (both sorted): each block's pages are one run.
            blk = np.searchsorted(lst.starts, j[hit], side="right") - 1
            first = np.flatnonzero(np.diff(blk, prepend=-1))
            most[blk[first]] = np.maximum.reduceat(share[hit], first)
        # A new dict, assigned whole (the list is shared by the threads searching): the most
        # recent PAIR_BLOCKS_KEPT.
        recent = list(kept.items())[-(PAIR_BLOCKS_KEPT - 1):]
        lst.p.pair_block_max = {**dict(recent), (a, b): most}
        return most

    def _pairs_counted(self, left: np.ndarray) -> np.ndarray:
        """Per pair and segment, whether :meth:`_bound_of` counts the pair's bonus there (both
        its words have blocks left, or are free)."""
        out = np.zeros((len(self.plan.pairs), self.postings.n_segments), dtype=bool)
        for si, lists in self._by_seg().items():
            terms = {self.lists[li].term for li in lists if left[li] > 0} | self.free
            for pi, (a, b) in enumerate(self.plan.pairs):
                out[pi, si] = a in terms and b in terms
        return out

    def _rest(self, left: np.ndarray) -> float:
        """The largest text score a document in no taken block can have, over the segments."""
        return max((self._bound_of(left, lists, coord=True)
                    for lists in self._by_seg().values()), default=-math.inf)

    def _rest_of(self, untaken: np.ndarray, short: np.ndarray) -> float:
        """:meth:`_rest` in T's terms: a page in no taken block has a prior at most the largest
        of the blocks not taken, so it falls short of w by at least their smallest shortfall."""
        rest = self._rest(self._left(untaken)[0])
        if math.isfinite(rest) and untaken.any():
            rest -= float(short[untaken].min())
        return rest

    def _inessential(self, left: np.ndarray) -> np.ndarray:
        """Per list, whether its blocks need not be read (MaxScore's non-essential lists,
        Turtle & Flood 1995): per segment, the lists of smallest bound left whose documents,
        holding no other list's word, cannot reach T (coordination included).  A document of
        theirs that also holds an essential list's word is met in that list's blocks."""
        out = np.zeros(len(self.lists), dtype=bool)
        for lists in self._by_seg().values():
            if any(self.driver[li] >= 0 for li in lists):
                continue  # its driver is the one list read there: never inessential
            order = sorted((li for li in lists if left[li] > 0), key=lambda li: left[li])
            prefix: list[int] = []
            for li in order:
                if not self._below(self._bound_of(left, [*prefix, li], coord=True)):
                    break
                prefix.append(li)
            out[prefix] = True
        return out

    def _floor(self) -> float:
        """T less the float rounding of its sums (T is a fused score minus the bound)."""
        return self.T - _TIE * (abs(self.T) + self.prior_bound)

    def _below(self, ub: float | np.ndarray) -> bool | np.ndarray:
        """Which bounds cannot reach T."""
        return ub < self._floor() if math.isfinite(self.T) else (
            np.zeros(np.shape(ub), dtype=bool) if np.ndim(ub) else False)

    # ------------------------------------------------------------ candidates
    def _postings_of(self, term: str, si: int) -> PostingList | None:
        return self.postings.get(term, si)

    def _score(self, si: int, docs: np.ndarray) -> _Scored | None:  # noqa: C901 - each filter in the hot loop, no call per block
        """Doc-level filters, then exact BM25F and coord of new candidates of segment si."""
        plan = self.plan
        keep = np.ones(len(docs), dtype=bool)
        if plan.site_masks is not None:
            keep &= plan.site_masks[si][docs]
        if plan.nosite_masks is not None:
            keep &= ~plan.nosite_masks[si][docs]
        for ph in plan.required:
            for term in ph.terms:
                p = self._postings_of(term, si)
                if p is None:
                    return None
                keep &= p.holds(docs)
        known = self._known_pages.get(si)
        if known is not None:  # the pages holding the required phrases: the others never match
            keep &= member(docs, known)[0]
        for ph in plan.excluded:
            if len(ph.terms) == 1:
                p = self._postings_of(ph.terms[0], si)
                if p is not None:
                    keep &= ~p.holds(docs)
        if not keep.all():  # (no copy when no filter dropped any)
            docs = docs[keep]
        if len(docs) == 0:
            return None
        base = np.zeros(len(docs), dtype=np.float64)
        matched = np.zeros(len(docs), dtype=np.int32)
        # Per word: how often each candidate holds it in a weighted field (0: not at all).
        has: dict[str, np.ndarray] = {}
        hits: dict[str, np.ndarray] = {}  # per word with a list here: which candidates hold it
        for unit in plan.units:
            any_hit = np.zeros(len(docs), dtype=bool) if len(unit) > 1 else None
            for term in unit:
                p = self._postings_of(term, si)
                if p is None or len(p.docs) == 0:
                    continue
                # Whole-length passes, the postings of the candidates without the word read
                # and multiplied by 0 (cheaper than compressing every array by ``hit``); the
                # same floats as summing the hits alone (x + 0.0 is x; the terms are finite).
                hit, j = p.find(docs)
                hits[term] = hit
                if self.pair_bonus and term not in has:
                    tf = self.postings.weighted_tf(p, j).astype(np.int64)
                    tf *= hit
                    has[term] = tf
                sat = self.postings.saturated_kept(p)
                if sat is not None:
                    term_score = plan.idfs[term] * np.take(sat, j)
                    term_score *= hit
                    base += term_score
                else:
                    jh = j[hit]
                    base[hit] += plan.idfs[term] * self.postings.saturated_at(p, si, jh,
                                                                               docs[hit])
                if any_hit is None:
                    matched += hit
                else:
                    any_hit |= hit
            if any_hit is not None:
                matched += any_hit
        coord = (matched / max(len(plan.units), 1)) ** self.settings.coord_power
        # A pair whose evidence is at hand (in the pairs cache, or both words' occurrences
        # decoded whole: what a check would read) gives its exact bonus now, as
        # :meth:`proximity` would (the same floats, added in the same order); the others a
        # bound from the words' counts, their candidates left open.
        exact = np.zeros(len(docs), dtype=np.float64)
        bonus = np.zeros(len(docs), dtype=np.float64)
        open_pairs: list[tuple[str, str]] = []
        for (a, b), w in zip(plan.pairs, self.pair_bonus, strict=False):
            if not ((a in has or a in self.free) and (b in has or b in self.free)):
                continue
            if self.postings.near_pairs_ready(a, b, si):
                near_docs, share = self.postings.near_pairs(a, b, si)
                hit, j = member(docs, near_docs)
                exact[hit] += w * share[j[hit]]
            else:
                open_pairs.append((a, b))
                bonus += w * self._near_share_bound(has.get(a), has.get(b))
        # A candidate's own prior is known: its bound counts it, not the largest one (w), so a
        # page whose text bound plus its prior cannot reach the top is dropped before its
        # positions are read.
        prior = self._priors(si, docs)
        # (base + exact + bonus) * coord * (1 + slack) - (w - prior), in place: the same
        # operations in the same order.
        ub = base + exact
        ub += bonus
        ub *= coord
        ub *= 1.0 + PRUNE_BOUND_SLACK
        ub -= self.prior_bound - prior
        return _Scored(_Pending(np.full(len(docs), si, dtype=np.int32), docs, base, coord, ub,
                                np.zeros(len(docs), dtype=bool), prior), exact, open_pairs, hits)

    def _dense_ready(self, si: int) -> bool:
        """Whether segment ``si`` can be scored whole at once (:meth:`_score_segment`): no
        phrase to check, and every proximity pair's evidence there in the pairs cache, or
        computed now.  Computing it decodes both words' whole occurrence lists (unless they
        are already) and passes over them, which no deadline interrupts (a pass over a word
        on most pages of a 50,000-page segment beside another common one: some 50 ms):
        with a deadline only when its estimated cost (:meth:`_evidence_keys` keys at
        ``PRUNE_EVIDENCE_KEY_SECONDS`` each) is at most ``PRUNE_EVIDENCE_SHARE`` of the time
        left (until then the rounds serve); kept in the pairs cache for the next queries."""
        if self.plan.required or self.plan.excluded:
            return False
        terms = {lst.term for lst in self.lists if lst.si == si} | self.free
        need = [(a, b) for (a, b) in self.plan.pairs[:len(self.pair_bonus)]
                if a in terms and b in terms and not self.postings.near_pairs_cached(a, b, si)]
        if not need:
            return True
        if not self._affords(lambda: self._evidence_keys(need, si)):
            return False
        for a, b in need:
            self.postings.near_pairs(a, b, si)
        return True

    def _evidence_keys(self, pairs: list[tuple[str, str]], si: int) -> int:
        """The occurrence keys computing ``pairs``' evidence in segment ``si`` passes over:
        each word's occurrences per pair it is in (:meth:`PostingStore.near`), plus those of
        a word not decoded whole yet, once (decoding them)."""
        keys = 0
        decoded: set[str] = set()
        for pair in pairs:
            for term in pair:
                p = self._postings_of(term, si)
                if p is None:
                    continue
                keys += p.occurrence_count()
                if term not in decoded and not self.postings.has_position_keys(term, si):
                    decoded.add(term)
                    keys += p.occurrence_count()
        return keys

    def _affords(self, keys: Callable[[], int]) -> bool:
        """Whether a step no deadline interrupts, passing over ``keys()`` occurrence keys at
        ``PRUNE_EVIDENCE_KEY_SECONDS`` each, costs at most ``PRUNE_EVIDENCE_SHARE`` of the
        time left (always, without a deadline; ``keys`` is not asked then)."""
        if self.deadline is None:
            return True
        left = self.deadline - time.monotonic()
        return keys() * PRUNE_EVIDENCE_KEY_SECONDS <= PRUNE_EVIDENCE_SHARE * left

    def _score_segment(self, si: int, seen: _Seen) -> None:
        """Every match of segment ``si`` not in ``seen`` scored at once in arrays as long as
        the segment (:meth:`_dense_ready` holds), as the searcher's exhaustive path does: the
        same floats as :meth:`_score` gives a candidate (the same sums in the same order);
        those that can reach T join the results."""
        plan = self.plan
        n = len(self.postings.store.segments[si].doc_ids)
        total, matched, present = self.postings.unit_scores(plan.units, si, plan.idfs)
        exact = None
        for (a, b), w in zip(plan.pairs, self.pair_bonus, strict=False):
            if (a in present or a in self.free) and (b in present or b in self.free):
                near_docs, share = self.postings.near_pairs(a, b, si)
                if exact is None:
                    exact = np.zeros(n, dtype=np.float64)
                exact[near_docs] += w * share
        if exact is not None:
            total += exact  # base + the pairs' exact bonus, as _score's sum
        held = matched > 0
        if plan.site_masks is not None:
            held &= plan.site_masks[si]
        if plan.nosite_masks is not None:
            held &= ~plan.nosite_masks[si]
        seen.clear(held)
        self.sure += int(np.count_nonzero(held))  # each matches: no phrase to check
        # _score's bound with every bonus exact: text * (1 + slack) less what the prior falls
        # short of w.  Scores are sums of non-negative terms and coord is at most 1, so
        # ``total`` alone (a prior is at most w) filters first.
        if math.isfinite(self.T):
            held &= total * (1.0 + PRUNE_BOUND_SLACK) >= self._floor()
        docs = np.flatnonzero(held)
        coord = (matched[docs] / max(len(plan.units), 1)) ** self.settings.coord_power
        text = total[docs] * coord
        prior = self._priors(si, docs)
        ok = ~np.asarray(self._below(text * (1.0 + PRUNE_BOUND_SLACK)
                                     - (self.prior_bound - prior)), dtype=bool)
        self._add(np.full(int(ok.sum()), si, dtype=np.int32), docs[ok], text[ok], prior[ok])

    def _candidates(self, si: int, docs: np.ndarray) -> _Pending | None:
        """New candidates ``docs`` of segment ``si`` scored (:meth:`_score`): the exact ones
        join the results, the open ones (positions needed) are returned."""
        got = self._score(si, docs)
        if got is None:
            return None
        scored, exact = got.pending, got.exact
        # The candidates kept (indices into ``scored``), gathered once at the end.
        kept: np.ndarray | None = None
        if not self.phrased:
            # Every one matches (no phrase to check): those that cannot reach T are
            # counted and dropped before any probe for proximity.
            low = np.asarray(self._below(scored.ub), dtype=bool)
            if low.any():
                self.sure += int(np.count_nonzero(low))
                kept = np.flatnonzero(~low)
        ords = scored.ords if kept is None else scored.ords[kept]
        hits = got.hits if kept is None else {t: h[kept] for t, h in got.hits.items()
                                              if any(t in pair for pair in got.open_pairs)}
        open_, phrase = self._needs_check(si, ords, got.open_pairs, hits)
        self.sure += int(np.count_nonzero(~phrase))
        done: np.ndarray | slice = slice(None) if kept is None else kept
        still: np.ndarray | None = None
        if open_.any():
            done, still = np.flatnonzero(~open_), np.flatnonzero(open_)
            if kept is not None:
                done, still = kept[done], kept[still]
        self._add(scored.si[done], scored.ords[done],
                  (scored.base[done] + exact[done]) * scored.coord[done], scored.prior[done])
        if still is None:
            return None
        return _Pending(np.full(len(still), si, dtype=np.int32), scored.ords[still],
                        scored.base[still], scored.coord[still], scored.ub[still],
                        phrase[open_], scored.prior[still])

    def _phrase_pages(self, si: int) -> np.ndarray | None:
        """The live pages of segment ``si`` holding every required phrase of several words,
        when the phrases cache holds each (sorted); None otherwise (or without one)."""
        docs: np.ndarray | None = None
        for ph in self.plan.required:
            if len(ph.terms) < 2:
                continue
            held = self.postings.cached_phrase_docs(ph, si)
            if held is None:
                return None
            docs = held if docs is None else docs[member(docs, held)[0]]
        return docs

    def _near_share_bound(self, tf_a: np.ndarray | None, tf_b: np.ndarray | None
                          ) -> np.ndarray | float:
        """An upper bound of a pair's c / (c + 1) per candidate from the two words' counts in
        the weighted fields (None: a word with no list, present anywhere).  c counts the
        occurrences of ``a`` followed by ``b`` within the window (at most ``tf_a``, and at
        most ``window`` of them share one occurrence of ``b``) and ``reverse`` times those
        preceded by ``b`` within ``reverse_window`` (likewise); 0 without both words."""
        store = self.postings.store
        window, back = store.window, store.reverse_window
        if tf_a is None and tf_b is None:
            return 1.0
        if tf_a is None:
            assert tf_b is not None
            c = (window + store.reverse * back) * tf_b.astype(np.float64)
        elif tf_b is None:
            c = (1.0 + store.reverse) * tf_a.astype(np.float64)
        else:
            # converted once (exact: counts), not by each operation
            c = np.minimum(tf_a, window * tf_b).astype(np.float64)
            if back:
                c += store.reverse * np.minimum(tf_a, back * tf_b)
        return c / (c + 1.0)

    def _needs_check(self, si: int, docs: np.ndarray, pairs: list[tuple[str, str]],
                     hits: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``docs`` (candidates of segment ``si``) are still open (positions needed: a
        phrase, or both words of one of ``pairs``, those whose bonus is not exact yet), and of
        those which for a phrase (their match itself is open, not only their proximity
        bonus).  ``hits``: which of ``docs`` hold a word, for words :meth:`_score` probed."""
        phrase = np.zeros(len(docs), dtype=bool)
        near = np.zeros(len(docs), dtype=bool)
        if any(len(ph.terms) > 1 for ph in self.plan.required) and si not in self._known_pages:
            phrase[:] = True
        excluded = [ph.terms for ph in self.plan.excluded if len(ph.terms) > 1]
        for terms, out in [*((t, phrase) for t in excluded), *((t, near) for t in pairs)]:
            all_in = np.ones(len(docs), dtype=bool)
            for t in terms:
                if t in hits:
                    all_in &= hits[t]
                    continue
                p = self._postings_of(t, si)
                if p is None:
                    all_in[:] = False
                    break
                all_in &= p.holds(docs)
            np.logical_or(out, all_in, out=out)
        return phrase | near, phrase

    # ------------------------------------------------------------ positions
    def _keys(self, term: str, si: int, docs: np.ndarray) -> np.ndarray:
        """ordinal << 29 | field << 25 | position of the term's occurrences in ``docs``
        (sorted ordinals, each holding the term)."""
        p = self._postings_of(term, si)
        assert p is not None
        if self._whole(term, si, len(docs)):
            # A short list (or one already decoded whole): its cached keys serve, as the
            # exhaustive path's do, and later queries reuse them.
            keys = self.postings.position_keys(p, si, term)
            # Each candidate's keys are one run of the sorted keys: two binary searches per
            # candidate, not a pass over every occurrence of the word.
            wide = docs.astype(np.int64)  # ordinals int32 in a list: shifted as int64
            lo = np.searchsorted(keys, wide << DOC_SHIFT)
            hi = np.searchsorted(keys, (wide + 1) << DOC_SHIFT)
            return keys[_ranges(lo, hi)]
        p.positions_read += len(docs)
        return self.postings.position_keys_in(p, si, docs)

    def _phrase(self, ph: Phrase, si: int, docs: np.ndarray) -> np.ndarray:
        """Which of ``docs`` hold the phrase (as the searcher's whole-segment phrase mask)."""
        inside = np.ones(len(docs), dtype=bool)
        for t in ph.terms:
            p = self._postings_of(t, si)
            if p is None:
                return np.zeros(len(docs), dtype=bool)
            inside &= p.holds(docs)
        if len(ph.terms) == 1 or not inside.any():
            return inside
        held = self.postings.cached_phrase_docs(ph, si)
        if held is not None:  # an earlier query's (either evaluation's)
            return inside & member(docs, held)[0]
        sub = docs[inside]
        if all(self._whole(t, si, len(sub)) for t in ph.terms):
            # Short lists: the phrase over them whole, kept in the snapshot's phrases cache
            # (the exhaustive path's, too).
            return inside & member(docs, self.postings.phrase_docs(ph, si))[0]
        key = (ph.terms, ph.offsets, si)
        every = self._holding_all(ph, si)
        read = self._phrase_read.get(key, 0) + len(sub)
        if len(every) <= PRUNE_PHRASE_ALL * read:
            # The candidates checked add up to a share of the pages holding every word: the
            # phrase over all of those at once (their positions only, the rarest word first),
            # which is the phrase's pages in the segment, kept in the phrases cache.
            held = self._phrase_in(ph, si, every)
            self.postings.keep_phrase_docs(ph, si, held)
            return inside & member(docs, held)[0]
        self._phrase_read[key] = read
        out = np.zeros(len(docs), dtype=bool)
        out[inside] = member(sub, self._phrase_in(ph, si, sub))[0]
        return out

    def _holding_all(self, ph: Phrase, si: int) -> np.ndarray:
        """The live ordinals of segment ``si`` holding every word of ``ph`` (sorted): the
        shortest list's pages probed in the others (each phrase word has a list there)."""
        key = (ph.terms, ph.offsets, si)
        docs = self._every.get(key)
        if docs is None:
            lists = sorted((p for t in ph.terms if (p := self._postings_of(t, si)) is not None),
                           key=lambda p: len(p.docs))
            docs = lists[0].docs
            for p in lists[1:]:
                docs = docs[p.holds(docs)]
            self._every[key] = docs
        return docs

    def _whole(self, term: str, si: int, n: int) -> bool:
        """Whether to use the term's whole position list (decoded once, cached) rather than
        the positions of ``n`` candidates: a short list beside them and the candidates the
        queries have read its positions for already, one by one, while the list is cached
        (the batches of queries whose proximity stays open for many pages add up to the list:
        decoded whole then, once, and kept for the next queries), or one decoded already.
        Decoding a list whole is one step no deadline interrupts (the commonest word of a
        million pages: 35 million occurrences, seconds): with a deadline, only when its
        estimated cost (``PRUNE_EVIDENCE_KEY_SECONDS`` per occurrence) is at most
        ``PRUNE_EVIDENCE_SHARE`` of the time left, as a pair's evidence (:meth:`_dense_ready`);
        otherwise the candidates' positions serve, in batches that watch the deadline."""
        p = self._postings_of(term, si)
        if p is None:
            return False
        if self.postings.has_position_keys(term, si):
            return True
        return (len(p.all_docs) <= PRUNE_WHOLE_LIST * (n + p.positions_read)
                and self._affords(p.occurrence_count))

    def _phrase_in(self, ph: Phrase, si: int, sub: np.ndarray) -> np.ndarray:
        """Sorted ordinals of ``sub`` (each holding every word) holding the phrase: the rarest
        word's occurrences in ``sub`` give the starts, then each next word, rarest first, is
        read only in the pages whose starts are left (a common word's positions are decoded
        for the few pages its rarer neighbours stand together in, not for all of ``sub``)."""
        def df(i: int) -> int:
            p = self._postings_of(ph.terms[i], si)
            return 0 if p is None else len(p.docs)

        order = sorted(range(len(ph.terms)), key=df)
        first, top = order[0], max(ph.offsets)
        keys, off = self._keys(ph.terms[first], si, sub), ph.offsets[first]
        pos = keys & POS_MASK
        starts = keys[(pos >= off) & (pos - off + top <= POS_MASK)] - off
        for i in order[1:]:
            if len(starts) == 0:
                break
            docs = unique_sorted(starts >> DOC_SHIFT)
            starts = phrase_starts([(starts, 0),
                                    (self._keys(ph.terms[i], si, docs), ph.offsets[i])])
        return unique_sorted(starts >> DOC_SHIFT)

    def proximity(self, si: int, docs: np.ndarray) -> np.ndarray:
        """The proximity bonus of each of ``docs`` (as the searcher's whole-segment one)."""
        bonus = np.zeros(len(docs), dtype=np.float64)
        for (a, b), w in zip(self.plan.pairs, self.pair_bonus, strict=False):
            pa, pb = self._postings_of(a, si), self._postings_of(b, si)
            if pa is None or pb is None:
                continue
            both = pa.holds(docs) & pb.holds(docs)
            if not both.any():
                continue
            sub = docs[both]
            if self._whole(a, si, len(sub)) and self._whole(b, si, len(sub)):
                # Short lists: the pair over them whole, kept in the searcher's pairs cache.
                near_docs, share = self.postings.near_pairs(a, b, si)
                hit, j = member(docs, near_docs)
                bonus[hit] += w * share[j[hit]]
                continue
            # Long lists: the occurrences in these candidates only.
            near_docs, share = self.postings.near(self._keys(a, si, sub), self._keys(b, si, sub))
            bonus[np.searchsorted(docs, near_docs)] += w * share
        return bonus

    def _check(self, pend: _Pending) -> None:
        """Phrases and proximity of a batch: the passing ones join the results."""
        self.verified += len(pend.ords)
        for si in distinct_small(pend.si).tolist():
            sel = np.flatnonzero(pend.si == si)
            order = np.argsort(pend.ords[sel], kind="stable")
            sel = sel[order]
            docs = pend.ords[sel]
            ok = np.ones(len(docs), dtype=bool)
            for ph in self.plan.required:
                ok &= self._phrase(ph, si, docs)
            for ph in self.plan.excluded:
                if len(ph.terms) > 1:
                    ok &= ~self._phrase(ph, si, docs)
            bonus = self.proximity(si, docs) if self.pair_bonus else np.zeros(len(docs))
            text = (pend.base[sel] + bonus) * pend.coord[sel]
            self.sure += int((ok & pend.phrase[sel]).sum())
            self._add(np.full(int(ok.sum()), si, dtype=np.int32), docs[ok], text[ok],
                      pend.prior[sel][ok])

    def _add(self, si: np.ndarray, ords: np.ndarray, text: np.ndarray, boost: np.ndarray
             ) -> None:
        """Exact candidates (with their priors) join the results; T rises with the ``want``-th
        best fused score (only the best ``want`` are kept for it)."""
        if len(ords) == 0:
            return
        self.res_si.append(si)
        self.res_ord.append(ords)
        self.res_text.append(text)
        self.res_prior.append(boost)
        self.found += len(ords)
        fused = np.concatenate([self.fused, text + boost])
        if len(fused) > self.want:
            fused = np.partition(fused, len(fused) - self.want)[len(fused) - self.want:]
        self.fused = fused
        self.T = max(self.T, _kth(self.fused, self.want) - self.prior_bound)

    def _late(self) -> bool:
        """Past the deadline, once the answer has a page: a partial answer is the best pages
        found so far, never an empty one while matches are being read."""
        return (self.deadline is not None and self.found >= min(self.want, PARTIAL_MIN_HITS)
                and time.monotonic() > self.deadline)

    # ------------------------------------------------------------ the loop
    def run(self) -> TopText:  # noqa: C901 - block-max MaxScore's rounds, kept whole to read against the paper
        self._open_lists()
        n_lists = len(self.lists)
        if n_lists == 0:
            return TopText(np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros(0),
                           np.zeros(0), 0, True, False)
        read = [i for i in range(n_lists) if self.driver[i] < 0]  # probed lists: no blocks
        owner = np.concatenate([np.full(len(self.lists[i].bound), i, dtype=np.int64)
                                for i in read])
        block = np.concatenate([np.arange(len(self.lists[i].bound), dtype=np.int64)
                                for i in read])
        bound = np.concatenate([self.lists[i].bound for i in read])
        size = np.concatenate([np.diff(self.lists[i].starts) for i in read])
        # What a block's pages' priors fall short of the bound w, at least: a page of the block
        # reaches the fused top only if its text bound less this reaches T (= k-th fused - w).
        short = self.prior_bound - np.concatenate([self.lists[i].pmax for i in read])
        order = np.argsort(short - bound, kind="stable")  # descending bound + prior
        back = np.empty_like(order)
        back[order] = np.arange(len(order))
        firsts = np.cumsum([0] + [len(self.lists[i].bound) for i in read[:-1]])
        self._groups = (back, bound, firsts, np.array(read, dtype=np.int64))
        owner, block, bound, size = owner[order], block[order], bound[order], size[order]
        short = short[order]
        pair_gaps = [(pi, gap[order]) for pi, gap in self._pair_gaps(read)]
        csize = np.cumsum(size)
        n_blocks = len(bound)
        untaken = np.ones(n_blocks, dtype=bool)  # neither read nor skipped
        skipped = np.zeros(n_blocks, dtype=bool)  # shown unable to hold a page reaching T
        # per segment, the docs met
        seen = [_Seen(len(self.postings.store.segments[si].doc_ids))
                for si in range(self.postings.n_segments)]
        opened = _Open(self._below)  # the open candidates, in the order they are checked
        pos = 0  # phase 1 takes blocks in descending bound: [0, pos) are taken
        last_round = False  # phase 2 took every block that can matter: none is left to take
        round_postings = max(PRUNE_FIRST_POSTINGS, 2 * self.want)
        batch = PRUNE_VERIFY_FIRST
        partial = False
        # A segment whose pages holding the required phrases are at hand (the phrases cache):
        # those pages, if few beside its blocks' postings (PRUNE_PHRASE_ALL), are its
        # candidates, all at once, and its blocks are not read; if many, its blocks are read
        # in rounds and only those pages kept as candidates, with no check.
        seg_of = np.array([lst.si for lst in self.lists], dtype=np.int64)
        fresh0: list[_Pending] = []
        known = np.zeros(n_blocks, dtype=bool)  # blocks of such segments: not read
        for si in (distinct_small(seg_of[owner]).tolist() if self.phrased else ()):
            docs = self._phrase_pages(si)
            if docs is None:
                continue
            self._known_pages[si] = docs
            if PRUNE_PHRASE_ALL * len(docs) > int(size[seg_of[owner] == si].sum()):
                continue  # many: the blocks in rounds, candidates filtered by them
            known |= untaken & (seg_of[owner] == si)
            untaken &= ~known
            seen[si].new(docs)
            got = self._candidates(si, docs) if len(docs) else None
            if got is not None:
                fresh0.append(got)
        opened.add(_merge(fresh0))
        rest = self._rest_of(untaken, short)
        while True:
            # Check the open candidates ahead of every unseen document, highest bound first.
            top = opened.top()
            while top is not None and (last_round or top >= rest):
                if self._late():
                    partial = True
                    break
                self._check(opened.head(batch))
                opened.pop(batch)
                batch = min(2 * batch, PRUNE_VERIFY_MAX)
                top = opened.top()
            if partial or self._late():
                partial = True
                break
            # Done when no block is left to take, or no unseen document can reach T (then
            # every open candidate is below ``rest``, so below T: dropped above).
            if last_round or not untaken.any() or self._below(rest):
                break
            if math.isfinite(self.T):
                # Phase 2, once T is known: the blocks that could hold a document reaching T
                # (its bound plus the other lists' largest left, in its segment), of the
                # essential lists, in descending bound, a round at a time (T rises between
                # rounds: later blocks drop out).  A block that cannot is skipped for good:
                # T only rises and the bounds left only fall.
                left, per_seg = self._left(untaken)
                seg_sum = np.array([per_seg.get(int(si), 0.0) for si in seg_of])
                # seg_sum holds the slack and pair bonus: others = it minus the list's own
                # largest, which the block's bound replaces.
                could = seg_sum[owner] - left[owner] * (1.0 + PRUNE_BOUND_SLACK) + bound * (
                    1.0 + PRUNE_BOUND_SLACK)
                if pair_gaps:
                    # A pair counted there at its largest bonus, whose evidence is at hand:
                    # a page of the block has at most the block's largest bonus of it.
                    counted = self._pairs_counted(left)
                    for pi, gap in pair_gaps:
                        could -= gap * counted[pi][seg_of[owner]] * (1.0 + PRUNE_BOUND_SLACK)
                low = untaken & np.asarray(self._below(could - short), dtype=bool)
                skipped |= low
                untaken &= ~low
                # A segment whose blocks that can still matter are a good share of it: scored
                # whole at once, its blocks done (PRUNE_DENSE_SHARE).
                blk_seg = seg_of[owner]
                for si in distinct_small(blk_seg[untaken]).tolist():
                    in_seg = blk_seg == si
                    left_size = int(size[untaken & in_seg].sum())
                    whole = len(self.postings.store.segments[si].doc_ids) + int(size[in_seg].sum())
                    if left_size >= PRUNE_DENSE_SHARE * whole and self._dense_ready(si):
                        self._score_segment(si, seen[si])
                        untaken &= ~in_seg
                        skipped &= ~in_seg
                        if self._late():
                            break
                if not untaken.any():
                    last_round = True
                    rest = -math.inf
                    continue
                left = self._left(untaken)[0]
                idx = np.flatnonzero(untaken & ~self._inessential(left)[owner])
                cut = int(np.searchsorted(np.cumsum(size[idx]), round_postings, side="left")) + 1
                pick = np.zeros(n_blocks, dtype=bool)
                pick[idx[:cut]] = True
                round_postings = min(2 * round_postings, PRUNE_MAX_ROUND_POSTINGS)
                last_round = cut >= len(idx)
            else:
                # Phase 1: the next blocks in descending bound, doubling, until some
                # candidate is exact and T known.
                stop = int(np.searchsorted(csize, (csize[pos - 1] if pos else 0)
                                           + round_postings, side="left")) + 1
                stop = min(max(stop, pos + 1), n_blocks)
                pick = np.zeros(n_blocks, dtype=bool)
                pick[pos:stop] = True
                pick &= untaken
                pos = stop
                round_postings = min(2 * round_postings, PRUNE_MAX_ROUND_POSTINGS)
            untaken &= ~pick
            r_owner, r_block = owner[pick], block[pick]
            by_seg: dict[int, list[np.ndarray]] = {}
            for li in distinct_small(r_owner).tolist():
                lst = self.lists[li]
                js = np.sort(r_block[r_owner == li])  # ascending: the docs come out sorted
                idx = _ranges(lst.starts[js], lst.starts[js + 1])
                by_seg.setdefault(lst.si, []).append(lst.p.docs[idx])
            fresh: list[_Pending] = []
            for si, parts in by_seg.items():
                docs = seen[si].new(
                    parts[0] if len(parts) == 1 else distinct(np.concatenate(parts)))
                got = self._candidates(si, docs)
                if got is not None:
                    fresh.append(got)
            opened.add(_merge(fresh))
            rest = -math.inf if last_round else self._rest_of(untaken, short)
        if opened.left():
            self.unsure_dropped = True  # stopped before checking them
        self.unsure_dropped |= opened.unsure
        segs = _concat(self.res_si, np.int32)
        ords = _concat(self.res_ord, np.int64)
        text = _concat(self.res_text, np.float64)
        boost = _concat(self.res_prior, np.float64)
        if math.isfinite(self.T):
            keep = text >= self._floor()
            segs, ords, text, boost = segs[keep], ords[keep], text[keep], boost[keep]
        complete = not (untaken.any() or skipped.any() or self.unsure_dropped or partial)
        total = self.sure
        if not complete and not (self.plan.required or self.plan.excluded
                                 or self.plan.site_masks is not None
                                 or self.plan.nosite_masks is not None):
            # Without filters every document holding a query word matches.
            dfs: dict[str, int] = {}
            for term, si in {(lst.term, lst.si) for lst in self.lists}:
                p = self._postings_of(term, si)
                dfs[term] = dfs.get(term, 0) + (0 if p is None else len(p.docs))
            total = max(total, max(dfs.values(), default=0))
        return TopText(segs, ords, text, boost, total, complete, partial, blocks=n_blocks,
                       blocks_read=int(n_blocks - untaken.sum() - skipped.sum() - known.sum()), verified=self.verified)


class _Seen:
    """The pages of one segment met so far (candidates already scored): a sorted array while
    they are few beside the segment, each round's new ones found by binary search and merged
    in; a mask as long as the segment once they are ``SEEN_MASK_SHARE`` of it or more (a
    round then costs a gather and a scatter of its pages, not a search and a merge of all
    those met: common words of a million pages meet most of them)."""

    def __init__(self, n: int) -> None:
        self.n = n  # the segment's pages (ordinals below it)
        self.docs = _NO_INT  # sorted, while ``mask`` is None
        self.mask: np.ndarray | None = None

    def new(self, docs: np.ndarray) -> np.ndarray:
        """Of ``docs`` (sorted, distinct), those not met before, in order; all are met now."""
        if self.mask is not None:
            # (an index, not a boolean mask: faster on a mask as random as this one)
            docs = docs[np.flatnonzero(~np.take(self.mask, docs))]
            self.mask[docs.astype(np.intp)] = True  # int32 indices: slower
            return docs
        if len(self.docs):
            docs = docs[~member(docs, self.docs)[0]]
        if len(self.docs) + len(docs) >= SEEN_MASK_SHARE * self.n:
            self.mask = np.zeros(self.n, dtype=bool)
            self.mask[self.docs] = True
            self.mask[docs] = True
            self.docs = _NO_INT
        elif len(self.docs):
            # Two sorted runs: timsort merges them in one pass.
            self.docs = np.sort(np.concatenate([self.docs, docs]), kind="stable")
        else:
            self.docs = docs
        return docs

    def clear(self, held: np.ndarray) -> None:
        """``held`` (a mask as long as the segment) False at every page met."""
        if self.mask is not None:
            held &= ~self.mask
        else:
            held[self.docs] = False


_PENDING_FIELDS = ("si", "ords", "base", "coord", "ub", "phrase", "prior")


def _merge(parts: list[_Pending]) -> _Pending | None:
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return _Pending(*(np.concatenate([getattr(p, f) for p in parts]) for f in _PENDING_FIELDS))


def _slice(p: _Pending, start: int, stop: int) -> _Pending:
    """Candidates ``start:stop`` (views, no copy)."""
    return _Pending(*(getattr(p, f)[start:stop] for f in _PENDING_FIELDS))


def _take(p: _Pending, mask: np.ndarray) -> _Pending:
    return _Pending(*(getattr(p, f)[mask] for f in _PENDING_FIELDS))


def _insert(p: _Pending, q: _Pending, at: np.ndarray) -> _Pending:
    """``p`` with ``q``'s candidates at the indices ``at`` of the result (ascending)."""
    n = len(p.ords) + len(q.ords)
    rest = np.ones(n, dtype=bool)
    rest[at] = False
    out = []
    for f in _PENDING_FIELDS:
        a, b = getattr(p, f), getattr(q, f)
        arr = np.empty(n, dtype=np.result_type(a, b))
        arr[rest] = a
        arr[at] = b
        out.append(arr)
    return _Pending(*out)


class _Open:
    """The open candidates (a phrase or a pair's positions left to read), in the order they are
    checked: descending bound, ties in arrival order (what one stable sort of all of them by
    bound gives).  Only the head of that order is kept sorted, ``front``; the rest lie in
    ``pool``, chunks in arrival order, each with a ceiling: its candidates of bound at least
    the ceiling have moved to the front.  Every front candidate comes before every pool
    candidate, so a round costs what it adds and what the loop checks, not the pool's size
    (most of the pool is dropped later as T rises, never sorted).  ``below`` (the
    evaluation's): which bounds cannot reach T, which only rises; such candidates are
    dropped, at the front's end at once, in the pool when it is compacted."""

    def __init__(self, below: Callable[[np.ndarray], bool | np.ndarray]) -> None:
        self.below = below
        self.front: _Pending | None = None
        self.pool: list[_Pending] = []
        self.ceil: list[float] = []
        self.unsure = False  # a candidate dropped whose match depended on a phrase

    def add(self, new: _Pending | None) -> None:
        """A round's new candidates, in arrival order (after every one held)."""
        if new is None or not len(new.ords):
            return
        self._drop_front()
        f = self.front
        if f is not None and len(f.ords):
            # Those ahead of the front's last go into it: after its equal bounds (older).
            ahead = new.ub > f.ub[-1]
            if ahead.any():
                inc = _take(new, ahead)
                inc = _take(inc, np.argsort(-inc.ub, kind="stable"))
                at = np.searchsorted(-f.ub, -inc.ub, side="right") + np.arange(len(inc.ub))
                self.front = _insert(f, inc, at)
                new = _take(new, ~ahead)
        if len(new.ords):
            self.pool.append(new)
            self.ceil.append(math.inf)

    def top(self) -> float | None:
        """The largest bound of a candidate that can reach T (None without one)."""
        self._drop_front()
        if self.front is not None and len(self.front.ords):
            return float(self.front.ub[0])
        best: float | None = None
        for live, c in zip(self._live(), self.pool, strict=True):
            if live.any():
                u = float(np.max(c.ub, where=live, initial=-math.inf))
                best = u if best is None else max(best, u)
        return best

    def head(self, k: int) -> _Pending:
        """The first ``k`` candidates that can reach T (fewer if fewer), in order; the front
        is filled to twice that (the next batch is twice as large)."""
        self._drop_front()
        have = 0 if self.front is None else len(self.front.ords)
        if have < k and self.pool:
            self._promote(2 * k - have)
        if self.front is None:
            return _Pending(*(np.zeros(0) for _ in _PENDING_FIELDS))
        return _slice(self.front, 0, k)

    def pop(self, k: int) -> None:
        """Forget the first ``k`` (checked)."""
        if self.front is not None:
            self.front = _slice(self.front, k, len(self.front.ords))

    def left(self) -> bool:
        """Whether a candidate that can reach T is left (noting unchecked phrase matches
        among those that cannot)."""
        self._drop_front()
        if self.front is not None and len(self.front.ords):
            return True
        self._compact(self._live())
        return bool(self.pool)

    # ------------------------------------------------------------
    def _drop_front(self) -> None:
        f = self.front
        if f is None or not len(f.ords):
            return
        low = np.asarray(self.below(f.ub), dtype=bool)
        if not low.any():
            return
        if (low & f.phrase).any():
            self.unsure = True
        keep = int(np.count_nonzero(~low))
        # Sorted by descending bound: the low ones are the end.
        self.front = _slice(f, 0, keep) if not low[:keep].any() else _take(f, ~low)

    def _live(self) -> list[np.ndarray]:
        """Per pool chunk: its candidates not yet moved to the front that can reach T."""
        return [(c.ub < ceil) & ~np.asarray(self.below(c.ub), dtype=bool)
                for c, ceil in zip(self.pool, self.ceil, strict=True)]

    def _promote(self, m: int) -> None:
        """Move the pool's first ``m`` (in order; more on equal bounds) to the front's end."""
        live = self._live()
        n_live = sum(int(np.count_nonzero(x)) for x in live)
        if n_live == 0:
            self._compact(live)
            return
        # The m-th largest live bound (all of them if fewer): those below T stay below it.
        u = np.concatenate([c.ub[x] for c, x in zip(self.pool, live, strict=True)])
        v = float(np.partition(u, n_live - m)[n_live - m]) if n_live > m else float(u.min())
        parts = []
        for i, (c, x) in enumerate(zip(self.pool, live, strict=True)):
            up = x & (c.ub >= v)
            if up.any():
                parts.append(_take(c, up))
                np.logical_and(x, ~up, out=x)  # moved: no longer the pool's
            self.ceil[i] = min(self.ceil[i], v)
        up_all = _merge(parts)
        if up_all is not None:
            # In arrival order: the stable sort by bound is the order of checking.
            up_all = _take(up_all, np.argsort(-up_all.ub, kind="stable"))
            self.front = up_all if self.front is None else _merge([self.front, up_all])
        self._compact(live)

    def _compact(self, live: list[np.ndarray]) -> None:
        """The pool rewritten as its live candidates, once they are under half of it (noting
        unchecked phrase matches among those dropped)."""
        n_live = sum(int(np.count_nonzero(x)) for x in live)
        if 2 * n_live >= sum(len(c.ords) for c in self.pool) and n_live:
            return
        for c, ceil, x in zip(self.pool, self.ceil, live, strict=True):
            if ((c.ub < ceil) & ~x & c.phrase).any():
                self.unsure = True
        kept = _merge([_take(c, x) for c, x in zip(self.pool, live, strict=True) if x.any()])
        self.pool = [] if kept is None else [kept]
        self.ceil = [math.inf] * len(self.pool)


def top_text(postings: QueryPostings, plan: Plan, settings: BM25FSettings, *, want: int,
             prior: Prior | None, prior_bound: float, deadline: float | None,
             prior_key: Hashable | None = None,
             prior_table: Callable[[int], np.ndarray] | None = None) -> TopText:
    """Every match that can be among the top ``want`` by text score plus ``prior`` (at most
    ``prior_bound``), with exact text scores and priors (module docstring).  ``prior_key``:
    names the prior (the same key, the same function), so per-block prior maxima are kept
    with the cached lists.  ``prior_table``: segment -> ``prior`` of each of its pages by
    ordinal (the searcher's table of a named prior), read instead of calling ``prior``."""
    return _Evaluation(postings, plan, settings, want=want, prior=prior,
                       prior_bound=prior_bound, deadline=deadline, prior_key=prior_key,
                       prior_table=prior_table).run()


def proximity_bonus(postings: QueryPostings, settings: BM25FSettings,
                    pairs: list[tuple[str, str]], idfs: dict[str, float], *, si: int,
                    docs: np.ndarray) -> np.ndarray:
    """The proximity bonus of ``docs`` (sorted live ordinals of segment ``si``), for explain."""
    plan = Plan([], idfs, pairs, [], [], None, None)
    return _Evaluation(postings, plan, settings, want=1, prior=None, prior_bound=0.0,
                       deadline=None).proximity(si, docs)
