"""What a front server asks a shard server, and how a shard answers from its snapshot.

Every ``websift serve`` that searches an index of its own is a shard server: it answers three
``POST /shard/...`` calls (``api/routes/shard.py``), which a front server (``websift serve
--shard http://...``, ``api/fanout.py``) makes to answer one query, as Elasticsearch's
"dfs_query_then_fetch" does:

1. ``/shard/stats``: the shard's share of the collection statistics of the query (live
   documents, field length sums, pages per language, each query term's df: the query
   analysed as the whole collection's languages say, when the front knows them);
2. ``/shard/search``: its top ``k`` hits scored with the *sums* of those statistics over every
   shard (so a score means the same on every shard and the merge by score is exact), without
   snippets;
3. ``/shard/snippets``: snippets of the pages that made the final page of results only.

A query that finds few pages, or holds a word in at most a page or two, is offered a spelling
correction as one index would offer it (indexer/spelling.py): ``/shard/spell`` gives, per
query word, the df of its term in the shard and the terms near it with theirs; the front sums
them and chooses; ``/shard/surfaces`` then asks how the shards write a chosen term that no
title gave.  ``/shard/complete`` gives the search box's completions' candidates with their
weights (indexer/completion.py), which the front sums.

The models here are the wire format of both sides; the functions run on the shard's side.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from websift.api.errors import InvalidParameter
from websift.api.index_words import IndexWords
from websift.api.retrieval import (
    LANG_MAX_CHARS,
    SITE_MAX_CHARS,
    TOPIC_MAX_CHARS,
    SearchRequest,
    rank_query,
)
from websift.api.settings import Settings
from websift.api.snapshot import Snapshot
from websift.indexer.completion import KEPT
from websift.indexer.searcher import CollectionStats, query_langs_of
from websift.indexer.settings import MAX_QUERY_CHARS, N_FIELDS
from websift.indexer.spelling import MAX_SPELLED_WORDS

# Figures from the wire become float64 and int64: keep them where both are exact.
MAX_COUNT = 2**53
MAX_DOC_ID = 2**63 - 1
MAX_LANGS = 1000  # languages a collection's statistics may name
MAX_NEAR_TERMS = 10_000  # terms near one query word a shard may name (a short word, many)


class StatsAsk(BaseModel):
    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="the query")
    lang: str | None = Field(default=None, max_length=LANG_MAX_CHARS,
                             description="the query's language as asked (the lang parameter)")
    lang_hint: str | None = Field(default=None, max_length=LANG_MAX_CHARS,
                                  description="the languages the reader accepts "
                                  "(Accept-Language)")
    langs: dict[str, int] | None = Field(
        default=None, max_length=MAX_LANGS, description="pages per language of the whole "
        "collection, to analyse the query as one index of every shard would; null: the "
        "shard's own")


class Statistics(BaseModel):
    """Collection statistics: a shard's share (``/shard/stats``), or the sums over every shard
    a front server sends back to score with (``/shard/search``)."""

    n_docs: int = Field(ge=0, le=MAX_COUNT, description="live documents")
    field_lengths: list[int] = Field(
        min_length=N_FIELDS, max_length=N_FIELDS,
        description="per field (title, headings, body, url, anchor), its length summed over "
        "the live documents")
    df: dict[str, int] = Field(
        max_length=MAX_QUERY_CHARS, description="documents holding each query term")
    langs: dict[str, int] | None = Field(
        default=None, max_length=MAX_LANGS, description="pages per language (\"\": unknown); "
        "null: not said")

    def collection_stats(self) -> CollectionStats:
        counts = [*self.field_lengths, *self.df.values(), *(self.langs or {}).values()]
        bad = [x for x in counts if not 0 <= x <= MAX_COUNT]
        if bad:
            raise InvalidParameter(f"stats: counts must be between 0 and {MAX_COUNT} "
                                   f"(got {bad[0]})")
        return CollectionStats(self.n_docs, tuple(self.field_lengths), dict(self.df),
                               None if self.langs is None else dict(self.langs))

    @classmethod
    def of(cls, stats: CollectionStats) -> Statistics:
        return cls(n_docs=stats.n_docs, field_lengths=list(stats.field_lengths),
                   df=dict(stats.df), langs=None if stats.langs is None else dict(stats.langs))


class StatsAnswer(BaseModel):
    stats: Statistics
    index_generation: int


class SearchAsk(BaseModel):
    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="the query")
    lang: str | None = Field(default=None, max_length=LANG_MAX_CHARS,
                             description="the query's language as asked (the lang parameter)")
    lang_hint: str | None = Field(default=None, max_length=LANG_MAX_CHARS,
                                  description="the languages the reader accepts "
                                  "(Accept-Language)")
    k: int = Field(ge=1, le=MAX_COUNT, description="hits to return (at most max_k + max_offset)")
    topic: str | None = Field(default=None, max_length=TOPIC_MAX_CHARS)
    site: str | None = Field(default=None, max_length=SITE_MAX_CHARS)
    explain: bool = False
    stats: Statistics | None = Field(
        default=None, description="score with these statistics (the sums over every shard); "
        "null: the shard's own")


class ShardHit(BaseModel):
    doc_id: int = Field(description="the page's URL ID in the shard's crawl")
    url: str
    title: str
    score: float
    text: float
    prior: float
    pagerank: float | None
    opic: float | None
    topic: float | None
    explain: dict[str, Any] | None = None
    fragment: str | None = Field(default=None, description="the element of the page the hit "
                                 "is about (an HTML id), or null")
    fetched: bool = Field(default=True, description="false: known only from links to it")
    lang: str = Field(default="", description="the page's language, \"\" when unknown")


class SearchAnswer(BaseModel):
    total: int
    index_outdated: str | None = Field(default=None, description="why words may not be found "
                                       "(an index an older analysis built, being rebuilt)")
    lang: str | None = Field(default=None, description="the language the query was analysed "
                             "in (null: English's analysis)")
    static_score: str
    topic_weights: dict[str, float] | None
    fusion: dict[str, Any] = Field(description="how the prior was fused (explain)")
    hits: list[ShardHit]
    index_generation: int
    ranks_generation: int | None


class SnippetsAsk(BaseModel):
    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    doc_ids: list[int] = Field(max_length=1000, description="URL IDs of the pages")


class ShardSnippet(BaseModel):
    doc_id: int
    snippet: str
    highlights: list[tuple[int, int]]


class SnippetsAnswer(BaseModel):
    snippets: list[ShardSnippet] = Field(description="one per page indexed here")


def _check_langs(ask: StatsAsk) -> None:
    """InvalidParameter for a page count of ``ask.langs`` that is not exact on the wire."""
    bad = [n for n in (ask.langs or {}).values() if not 0 <= n <= MAX_COUNT]
    if bad:
        raise InvalidParameter(f"langs: counts must be between 0 and {MAX_COUNT} (got {bad[0]})")


def shard_stats(snap: Snapshot, ask: StatsAsk) -> StatsAnswer:
    _check_langs(ask)
    stats = snap.searcher.value.collection_stats(ask.q, ask.langs, lang=ask.lang,
                                                 hint=ask.lang_hint)
    return StatsAnswer(stats=Statistics.of(stats), index_generation=snap.index_generation)


def shard_search(snap: Snapshot, ask: SearchAsk, settings: Settings) -> SearchAnswer:
    cap = settings.max_k + settings.max_offset
    if ask.k > cap:
        raise InvalidParameter(f"k: must be at most {cap} (got {ask.k})")
    req = SearchRequest(q=ask.q, k=ask.k, offset=0, topic=ask.topic or None,
                        site=ask.site or None, explain=ask.explain, snippets=False,
                        lang=ask.lang, lang_hint=ask.lang_hint)
    stats = ask.stats.collection_stats() if ask.stats is not None else None
    outcome = rank_query(snap, req, settings, stats=stats)
    return SearchAnswer(
        total=outcome.total,
        index_outdated=outcome.index_outdated,
        lang=outcome.lang,
        static_score=outcome.static_score,
        topic_weights=outcome.topic_weights,
        fusion=outcome.explain,
        hits=[ShardHit(doc_id=r.hit.doc_id, url=r.hit.url, title=r.hit.title,
                       score=r.hit.score, text=r.hit.text_score, prior=r.prior,
                       pagerank=r.pagerank, opic=r.opic, topic=r.topic, explain=r.hit.explain,
                       fragment=r.hit.fragment, fetched=r.hit.fetched, lang=r.hit.lang)
              for r in outcome.hits],
        index_generation=snap.index_generation,
        ranks_generation=snap.ranks_generation,
    )


def shard_snippets(snap: Snapshot, ask: SnippetsAsk) -> SnippetsAnswer:
    ids = [i for i in ask.doc_ids if 0 <= i <= MAX_DOC_ID]
    made = snap.searcher.value.snippets(ask.q, ids)
    return SnippetsAnswer(snippets=[
        ShardSnippet(doc_id=i, snippet=m[0], highlights=m[1])
        for i, m in zip(ids, made, strict=True) if m is not None])


class SpellAsk(StatsAsk):
    """The query and its languages, as ``/shard/stats`` is asked them."""


class NearTerm(BaseModel):
    term: str
    edits: int = Field(ge=0, description="optimal string alignment distance to the word")
    df: int = Field(ge=0, le=MAX_COUNT, description="documents holding the term here")
    surface: str | None = Field(description="how this shard's titles write it most, or null")


class NearWord(BaseModel):
    word: str = Field(description="the query word, folded")
    df: int = Field(ge=0, le=MAX_COUNT, description="documents holding its term here")
    terms: list[NearTerm] = Field(max_length=MAX_NEAR_TERMS)


class SpellAnswer(BaseModel):
    words: list[NearWord] = Field(description="the query's words a correction looks up "
                                  "(none for a query not corrected)")


class SurfacesAsk(BaseModel):
    terms: list[str] = Field(max_length=MAX_SPELLED_WORDS, description="analysed terms (a "
                             "correction replaces at most this many words; each term costs "
                             "reads of the pages holding it)")


class SurfacesAnswer(BaseModel):
    surfaces: dict[str, str | None] = Field(description="how a page of this shard holding "
                                            "each term writes it, or null")


def shard_spell(snap: Snapshot, ask: SpellAsk, words: IndexWords) -> SpellAnswer:
    _check_langs(ask)
    searcher = snap.searcher.value
    qlangs = None if ask.langs is None else query_langs_of(ask.langs)
    _, lang, analyzer, _ = searcher.query_analysis(ask.q, ask.lang, ask.lang_hint, langs=qlangs)
    speller = words.speller(snap)
    return SpellAnswer(words=[
        NearWord(word=w, df=near.df, terms=[
            NearTerm(term=t, edits=e, df=d, surface=speller.title_surface(t, analyzer))
            for t, e, d in near.terms])
        for w, near in words.near(snap, ask.q, lang).items()])


def shard_surfaces(snap: Snapshot, ask: SurfacesAsk, words: IndexWords) -> SurfacesAnswer:
    return SurfacesAnswer(surfaces={t: words.surface(snap, t)
                                    for t in dict.fromkeys(ask.terms)})


class CompleteAsk(BaseModel):
    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="what is typed so far")
    n: int = Field(ge=1, le=KEPT, description="candidates of each list")


class CompleteAnswer(BaseModel):
    whole: list[tuple[str, str, float]] = Field(
        max_length=KEPT, description="(folded key, shown, weight) of the keys that start "
        "with the whole query, heaviest first")
    words: list[tuple[str, str, float]] = Field(
        max_length=KEPT, description="those of the words that start with its last word (a "
        "query of several words)")


def shard_complete(snap: Snapshot, ask: CompleteAsk, words: IndexWords) -> CompleteAnswer:
    whole, last = words.of(snap).completer.candidates(ask.q, ask.n)
    return CompleteAnswer(whole=whole, words=last)
