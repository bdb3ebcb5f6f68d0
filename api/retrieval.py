"""One search over a snapshot: choose the importance signal, fuse it with BM25F, shape the hits.

Shared by ``GET /search`` (JSON) and the HTML search page, so both rank the same way.

The importance signal (``static``):

- no topic: global PageRank (or OPIC importance, setting ``static_score``), normalised to mean 1;
- ``topic=NAME``: that topic's PageRank (Haveliwala 2002, personalised teleport set);
- ``topic=auto``: every topic's PageRank mixed by ``sim(T_k, q)`` (Haveliwala 2002, section 3.2,
  query-time importance; ``ranking.topics.topic_similarity`` gives the weights).

and ``ranking.fusion`` turns it into the additive boost ``w * s^a / (s^a + k^a)``, which the
searcher adds to the text score of each candidate it ranks.

A :class:`SearchEngine` answers a :class:`SearchRequest` for the routes: :class:`LocalSearch`
searches this process's snapshot (one data directory, or several local shards as one index);
``api.fanout.FanOut`` asks remote ``websift serve`` processes and merges their answers.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any, Protocol
from urllib.parse import quote, urldefrag

import anyio
import numpy as np
from starlette.concurrency import run_in_threadpool

from websift.api.errors import InvalidParameter
from websift.api.index_words import FEW_RESULTS, IndexWords
from websift.api.result_cache import ResultCache
from websift.api.settings import Settings
from websift.api.snapshot import RankView, Snapshot, SnapshotHolder
from websift.indexer.query import parse_query
from websift.indexer.searcher import CollectionStats, Hit, IndexQuery
from websift.indexer.spelling import RARE_DF
from websift.ranking.errors import UnknownTopic
from websift.ranking.fusion import (
    FusionParams,
    fill_provisional,
    gather,
    make_prior,
    mix_topics,
)

AUTO = "auto"
# The caps on /search's ``topic`` and ``site`` parameters (a DNS name is at most 253 characters);
# api/routes/search.py declares them with these, ``check_request`` applies them elsewhere.
TOPIC_MAX_CHARS = 64
SITE_MAX_CHARS = 253
LANG_MAX_CHARS = 64  # the lang parameter and the Accept-Language the query reads
SHOWN_CHARS = 40  # as much of a bad value as an error message quotes
# What a URL fragment may hold unescaped (RFC 3986 section 3.5: pchar / "/" / "?").
FRAGMENT_SAFE = "!$&'()*+,;=:@/?-._~"


@dataclass(frozen=True)
class SearchRequest:
    q: str
    k: int
    offset: int
    topic: str | None = None
    site: str | None = None
    explain: bool = False
    snippets: bool = True  # False: hits without snippets (cheaper; a front server's first pass)
    lang: str | None = None  # the query's language as asked (``lang`` parameter)
    lang_hint: str | None = None  # the languages the reader accepts (Accept-Language)


@dataclass(frozen=True)
class ShardCount:
    """How many of the shards searched answered (fewer than all: the results are partial)."""

    answered: int
    total: int


@dataclass(frozen=True)
class RankedHit:
    hit: Hit
    pagerank: float | None
    opic: float | None
    topic: float | None
    prior: float


@dataclass(frozen=True)
class Outcome:
    query: str
    total: int
    took_ms: float
    topic: str | None
    topic_weights: dict[str, float] | None
    static_score: str
    hits: list[RankedHit]
    explain: dict[str, Any]
    cached: bool = False
    shards: ShardCount = ShardCount(1, 1)
    total_exact: bool = True  # False: ``total`` is a lower bound (the search was pruned)
    partial: bool = False  # the search deadline stopped it: the best of what it had scored
    lang: str | None = None  # the language the query was analysed in
    did_you_mean: str | None = None  # the query with misspelt words replaced (api/index_words.py)
    # Every word ``did_you_mean`` replaces is in no page (not in the JSON: the search page
    # shows the correction's results then, api/routes/web.py).
    corrects_unfound: bool = False
    # The index was built by another analyzer version and is being rebuilt: why words may not
    # be found until then (Searcher.outdated), or None.
    index_outdated: str | None = None
    rarest_df: int | None = None  # its rarest word's document frequency (not in the JSON)


@dataclass(frozen=True)
class StaticChoice:
    """Which importance vector ranks this query, as a lookup on candidate doc IDs."""

    name: str  # "pagerank", "opic", "topic:NAME", "topic:auto", "none"
    lookup: Callable[[np.ndarray], np.ndarray] | None
    topic_weights: dict[str, float] | None = None


def choose_static(
    view: RankView | None, topic: str | None, query_terms: list[str], static_score: str,
    provisional: Callable[[np.ndarray], np.ndarray] | None = None,
) -> StaticChoice:
    """The importance signal for one query (see the module docstring).

    ``query_terms``: the query's analysed positive terms (what ``topic=auto`` compares with
    each topic's term model).  ``provisional``: the index's provisional priors (the searcher's
    ``provisional_prior``), which the global signals (pagerank, opic) use for the pages the
    ranks do not know; a topic's vector is 0 for off-topic pages too, so topics do not.
    """
    if view is None:
        if topic not in (None, AUTO):
            raise UnknownTopic(f"unknown topic {topic!r}: no ranks yet; run 'websift rank'")
        return StaticChoice("none", None)
    if topic == AUTO:
        if not view.topics:
            return _global(view, static_score, provisional)
        # Imported here: ranking.topics brings scipy (rank_job), which `websift search`
        # would otherwise load at start for a query without topic=auto.
        from websift.ranking.topics import topic_similarity

        sims = topic_similarity(view.ranks, list(view.topics), query_terms)
        weights = {name: float(w) for name, w in sims.items() if name in view.topics}
        if sum(max(w, 0.0) for w in weights.values()) <= 0:
            # No topic resembles the query: every topic counts the same (Haveliwala's uniform prior).
            weights = {name: 1.0 / len(view.topics) for name in view.topics}
        vectors = view.topics
        return StaticChoice(
            "topic:auto", lambda ids: mix_topics(vectors, weights, ids), weights
        )
    if topic is not None:
        vector = view.topics.get(topic)
        if vector is None:
            known = ", ".join(sorted(view.topics)) or "none defined"
            raise UnknownTopic(f"unknown topic {topic!r} (topics: {known})")
        return StaticChoice(f"topic:{topic}", lambda ids: gather(vector, ids))
    return _global(view, static_score, provisional)


def _global(view: RankView, static_score: str,
            provisional: Callable[[np.ndarray], np.ndarray] | None = None) -> StaticChoice:
    if static_score == "none":
        return StaticChoice("none", None)
    vector = view.opic if static_score == "opic" else view.pagerank
    if provisional is None:
        return StaticChoice(static_score, lambda ids: gather(vector, ids))
    fill = provisional
    return StaticChoice(static_score,
                        lambda ids: fill_provisional(gather(vector, ids), ids, fill))


def prior_key(view: RankView | None, choice: StaticChoice, fusion: FusionParams
              ) -> tuple[int, str, float, float, float] | None:
    """A name for the prior of ``choice`` under ``fusion``: one view, one vector and one fusion
    give one prior function, so the searcher may keep its per-block maxima under this name
    (indexer/topk.py).  None for topic:auto, whose weights follow each query's words."""
    if view is None or choice.lookup is None or choice.topic_weights is not None:
        return None
    return (view.serial, choice.name, fusion.weight, fusion.midpoint, fusion.exponent)


def run_search(
    snap: Snapshot,
    req: SearchRequest,
    fusion: FusionParams,
    static_score: str,
    *,
    stats: CollectionStats | None = None,
    deadline_ms: float | None = None,
) -> Outcome:
    """Search the snapshot's index with importance fused in; the hits of one result page.

    ``stats``: collection statistics to score with instead of the index's own (a front server
    sends the sums over all its shards, ``api/fanout.py``).  ``deadline_ms``: the search stops
    after this long and answers with what it has (``partial``)."""
    if not req.q.strip():
        raise InvalidParameter("q: the query is empty; type some words")
    started = time.perf_counter()
    deadline = None if deadline_ms is None else time.monotonic() + deadline_ms / 1000.0
    view = snap.rank_view
    searcher = snap.searcher.value
    terms = parse_query(req.q, searcher.analyzer).terms() if req.topic == AUTO else []
    choice = choose_static(view, req.topic, terms, static_score, searcher.provisional_prior)
    prior = None if choice.lookup is None else make_prior(choice.lookup, fusion)
    key = None if prior is None else prior_key(view, choice, fusion)
    # The exact top offset + k of text + prior over every match (indexer/topk.py).
    results = searcher.search(IndexQuery(
        req.q,
        k=req.k,
        offset=req.offset,
        site=req.site,
        prior=prior,
        explain=req.explain,
        snippets=req.snippets,
        stats=stats,
        # The boost the prior adds is in [0, w): pruning may count on it (indexer/topk.py).
        prior_bound=fusion.weight,
        prior_key=key,
        deadline=deadline,
        lang=req.lang,
        lang_hint=req.lang_hint,
    ))
    hits = _ranked_hits(results.hits, view, choice)
    took_ms = (time.perf_counter() - started) * 1000.0
    explain = {
        "fusion": "score = text + w * s^a / (s^a + k^a)",
        "w": fusion.weight,
        "k": fusion.midpoint,
        "a": fusion.exponent,
        "s": choice.name,
    }
    return Outcome(
        query=results.query if isinstance(results.query, str) else req.q,
        total=int(results.total),
        took_ms=round(took_ms, 3),
        topic=req.topic,
        topic_weights=choice.topic_weights,
        static_score=choice.name,
        hits=hits,
        explain=explain,
        shards=ShardCount(len(searcher.shards), len(searcher.shards)),
        total_exact=results.total_exact,
        partial=results.partial,
        lang=results.lang,
        rarest_df=results.rarest_df,
        index_outdated=searcher.outdated,
    )


def cache_lookup(
    snap: Snapshot, req: SearchRequest, settings: Settings, cache: ResultCache[Outcome]
) -> Outcome | None:
    """The cached answer to ``req`` on this snapshot with these settings, or None.

    The key holds the generations, the removal rules and every input, so a reload, a removal
    or a topic change never serves an older answer.  Cheap: the JSON route calls it on the event loop.
    """
    started = time.perf_counter()
    hit = cache.get(_cache_key(snap, req, settings))
    if hit is None:
        return None
    return replace(hit, took_ms=round((time.perf_counter() - started) * 1000.0, 3), cached=True)


def rank_query(snap: Snapshot, req: SearchRequest, settings: Settings, *,
               stats: CollectionStats | None = None) -> Outcome:
    """Rank one query the way ``GET /search`` does: :func:`run_search` with ``settings``'
    fusion and static score.  The one path of ``/search``, the search page,
    ``/shard/search`` and ``websift search`` (no cache here; :func:`search_and_cache` adds it
    for the server)."""
    return run_search(snap, req, settings.fusion, settings.static_score, stats=stats, deadline_ms=settings.search_deadline_ms)


def with_fragment(url: str, fragment: str | None) -> str | None:
    """``url#fragment`` (the fragment percent-encoded where RFC 3986 does not allow it, any
    fragment ``url`` had replaced), or None when the hit names no element of the page."""
    if fragment is None:
        return None
    return f"{urldefrag(url).url}#{quote(fragment, safe=FRAGMENT_SAFE)}"


def check_request(req: SearchRequest, settings: Settings) -> None:
    """Refuse what ``GET /search``'s parameter checks refuse, with the same one-line messages
    (``api.errors.describe_validation_errors``): for callers that do not go through FastAPI's
    validation (``websift search``)."""
    if not req.q:
        raise InvalidParameter(f"q: must not be empty (got {_shown(req.q)})")
    if len(req.q) > settings.max_query_chars:
        raise InvalidParameter(
            f"q: must be at most {settings.max_query_chars} characters (got {_shown(req.q)})")
    for name, value, low, high in (("k", req.k, 1, settings.max_k),
                                   ("offset", req.offset, 0, settings.max_offset)):
        if value < low:
            raise InvalidParameter(f"{name}: must be at least {low} (got {_shown(value)})")
        if value > high:
            raise InvalidParameter(f"{name}: must be at most {high} (got {_shown(value)})")
    if req.topic is not None and len(req.topic) > TOPIC_MAX_CHARS:
        raise InvalidParameter(
            f"topic: must be at most {TOPIC_MAX_CHARS} characters (got {_shown(req.topic)})")
    if req.site is not None and len(req.site) > SITE_MAX_CHARS:
        raise InvalidParameter(
            f"site: must be at most {SITE_MAX_CHARS} characters (got {_shown(req.site)})")


def _shown(value: object) -> str:
    """A parameter's value as a validation message quotes it (``repr``, cut at 40 characters)."""
    text = str(value)
    return repr(text[:SHOWN_CHARS] + "..." if len(text) > SHOWN_CHARS else text)


def search_and_cache(
    snap: Snapshot, req: SearchRequest, settings: Settings, cache: ResultCache[Outcome]
) -> Outcome:
    """:func:`rank_query` (the server's settings); the answer goes into the cache unless it is
    partial (a partial answer depends on the load of the moment)."""
    outcome = rank_query(snap, req, settings)
    if not outcome.partial:
        cache.put(_cache_key(snap, req, settings), outcome)
    return outcome


def _cache_key(snap: Snapshot, req: SearchRequest, settings: Settings) -> Hashable:
    return (snap.index_generations, snap.ranks_generation, snap.removals_key, req,
            settings.fusion, settings.static_score)


def _ranked_hits(hits: list[Hit], view: RankView | None, choice: StaticChoice) -> list[RankedHit]:
    """The hits with the signals a person or program sees (one vectorised lookup each)."""
    ids = np.asarray([h.doc_id for h in hits], dtype=np.int64)
    none: list[float | None] = [None] * len(hits)
    pagerank = none if view is None else gather(view.pagerank, ids).tolist()
    opic = none if view is None else gather(view.opic, ids).tolist()
    topic = (
        choice.lookup(ids).tolist()
        if choice.lookup is not None and choice.name.startswith("topic:")
        else none
    )
    return [
        RankedHit(hit=h, pagerank=p, opic=o, topic=t, prior=float(h.prior_score))
        for h, p, o, t in zip(hits, pagerank, opic, topic, strict=True)
    ]


class SearchEngine(Protocol):
    """What answers ``GET /search`` and the search page in an application."""

    async def search(self, req: SearchRequest) -> Outcome: ...


# InlinePolicy: how many of this process's last searches it looks at, how many it needs before
# it runs any on the event loop, and how many of them may have been slower than the setting.
INLINE_WINDOW = 64
INLINE_MIN_SEEN = 16
INLINE_SLOW_SHARE = 0.05


class InlinePolicy:
    """Whether a search runs on the event loop rather than in a worker thread: yes while at
    most INLINE_SLOW_SHARE of the last INLINE_WINDOW searches (at least INLINE_MIN_SEEN of
    them) took longer than ``limit_ms``.

    A trip to a worker thread and back costs the event loop a wake-up and the interpreter lock
    a hand-over each way, about 0.5 ms of CPU a request on 2 cores (``bench_request_cost``):
    on a small index that is more than the search itself.  On the event loop a search holds
    up the other requests for its whole length, so only an index whose searches are all short
    is searched there.  Every search's time is watched (:meth:`LocalSearch._search`), wherever
    it ran, so the choice follows the index as it grows (or a new generation) and the machine;
    ``limit_ms`` 0 keeps every search in a thread."""

    def __init__(self, limit_ms: float) -> None:
        self.limit_s = limit_ms / 1000.0
        # Whether each of the window's searches was slow: appended from the event loop's thread
        # and workers', counted when asked (64 flags); each a single deque method, atomic.
        self._slow: deque[bool] = deque(maxlen=INLINE_WINDOW)

    def inline(self) -> bool:
        seen = len(self._slow)
        return (self.limit_s > 0 and seen >= INLINE_MIN_SEEN
                and self._slow.count(True) <= INLINE_SLOW_SHARE * seen)

    def record(self, seconds: float) -> None:
        """One search's time, from the event loop's thread or a worker's."""
        self._slow.append(seconds > self.limit_s)


class LocalSearch:
    """Searches this process's snapshot.

    A cached answer is served on the event loop; a search runs on the event loop too while
    this process's searches are all short (:class:`InlinePolicy`), else in a worker thread, at
    most ``search_concurrency`` at once (the rest queue here instead of piling up memory).  The
    check for newer generations (which may open a new index: blocking work) runs in the thread
    pool when due; otherwise leasing the snapshot is a few attribute reads.
    """

    def __init__(self, holder: SnapshotHolder, settings: Settings, cache: ResultCache[Outcome],
                 limiter: anyio.CapacityLimiter, words: IndexWords | None = None) -> None:
        self.holder = holder
        self.settings = settings
        self.cache = cache
        self.limiter = limiter
        self.words = IndexWords() if words is None else words
        self.policy = InlinePolicy(settings.inline_search_ms)
        self.searches = {"inline": 0, "in_thread": 0}  # where the searches ran (/stats)

    async def search(self, req: SearchRequest) -> Outcome:
        if self.holder.check_due():
            await run_in_threadpool(self.holder.refresh)
        with self.holder.lease() as snap:
            outcome = cache_lookup(snap, req, self.settings, self.cache)
            if outcome is None and self.policy.inline():
                self.searches["inline"] += 1
                outcome = self._search(snap, req)
            elif outcome is None:
                self.searches["in_thread"] += 1
                # One trip to a worker thread for the search and its spelling suggestion: each
                # trip costs the event loop a wake-up and the GIL a hand-over.
                return await anyio.to_thread.run_sync(
                    self._answer, snap, req, limiter=self.limiter)
            # The suggestion in a thread (the words may be built for it: not on the loop).
            if wants_suggestion(outcome, req):
                outcome = await anyio.to_thread.run_sync(
                    self._did_you_mean, snap, outcome, limiter=self.limiter)
        return outcome

    def _search(self, snap: Snapshot, req: SearchRequest) -> Outcome:
        """:func:`search_and_cache`, timed for :class:`InlinePolicy` by its thread's CPU time,
        what it holds the event loop for when run there (its wall time in a worker thread also
        counts the waits for the interpreter lock while the other threads run, so it would
        keep every search in the threads)."""
        started = time.thread_time()
        outcome = search_and_cache(snap, req, self.settings, self.cache)
        self.policy.record(time.thread_time() - started)
        return outcome

    def _answer(self, snap: Snapshot, req: SearchRequest) -> Outcome:
        """:meth:`_search`, then the spelling suggestion when it finds few pages."""
        outcome = self._search(snap, req)
        return self._did_you_mean(snap, outcome) if wants_suggestion(outcome, req) else outcome

    def _did_you_mean(self, snap: Snapshot, outcome: Outcome) -> Outcome:
        return with_suggestion(self.words, snap, outcome)


def with_suggestion(words: IndexWords, snap: Snapshot, outcome: Outcome) -> Outcome:
    """``outcome`` with its spelling suggestion from ``words`` (api/index_words.py), if any."""
    fix = words.did_you_mean(snap, outcome.query, outcome.lang)
    return outcome if fix is None else replace(outcome, did_you_mean=fix.query,
                                                 corrects_unfound=fix.unfound)


def wants_suggestion(outcome: Outcome, req: SearchRequest) -> bool:
    """Whether an answer gets a spelling suggestion (api/index_words.py): on the first page,
    when it found few pages or one of its words is in no page or in as few as the speller
    corrects (RARE_DF: ``theading lock`` finds the pages about locks, and one page with the
    typo, and still means ``threading``)."""
    return req.offset == 0 and (outcome.total <= FEW_RESULTS or (
        outcome.rarest_df is not None and outcome.rarest_df <= RARE_DF))
