"""Topic-sensitive PageRank (Haveliwala 2002; slides 'Topic-sensitive Pagerank').

"Assume there is a small set of K topics ... each topic k is defined by a subset of the web pages
T_k.  For each k, compute p_{i,k} = pagerank of node i with teleportation reduced to T_k.
Finally compute the ranking score of a page i given query q:
score(i, q) = sum_k sim(T_k, q) * p_{i,k}."

- :func:`add_topic` resolves T_k in the crawl store, builds the topic's term model from the
  text of its fetched pages (the indexer's parser and analyzer on the WARC bodies), stores the
  definition (:mod:`ranking.topic_store`), computes p_k only (warm-started from the global
  vector) and publishes it as a new ranks generation.  :func:`remove_topic`,
  :func:`list_topics`.  ``websift topics`` and the API's /topics call these same functions.
- :func:`topic_similarity`: sim(T_k, q) = P(T_k) * prod_i P(q_i | T_k) (Haveliwala section 3,
  query time, with a uniform prior P(T_k)), P(q_i | T_k) smoothed Jelinek-Mercer with the pooled
  model of all topics, normalised to sum 1 over the topics.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from websift.core.datadir import DataDir
from websift.core.errors import WebsiftError
from websift.ranking import settings
from websift.ranking.errors import TopicError, UnknownTopic
from websift.ranking.rank_job import fit_length, run_rank, topic_vector
from websift.ranking.ranks import Ranks
from websift.ranking.ranks_format import load_array
from websift.ranking.ranks_writer import current_manifest, write_generation, write_lock
from websift.ranking.store_graph import load_graph, topic_page_ids
from websift.ranking.topic_store import (
    TermModel,
    TopicRecord,
    TopicSet,
    delete_topic,
    load_topic,
    save_topic,
    topic_names,
)
from websift.store.schema import FETCHED
from websift.store.views import StoreReader
from websift.store.warc import WarcLocation, read_response

if TYPE_CHECKING:
    from websift.indexer.settings import IndexSettings

__all__ = [
    "TopicInfo",
    "TopicSet",
    "add_topic",
    "list_topics",
    "remove_topic",
    "topic_infos",
    "topic_similarity",
]


@dataclass
class TopicInfo:
    """A topic as ``websift topics list`` shows it."""

    topic: TopicSet
    pages: int  # |T_k| when it was resolved
    text_pages: int  # pages whose text went into the term model
    distinct_terms: int
    generation: int | None  # ranks generation holding its vector (None: none yet)
    iterations: int | None
    text_failures: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.topic.name


def _index_settings(data: DataDir) -> IndexSettings:
    """The settings the live index was built with (its newest segment's), so a topic's terms
    are the words the searcher analyses ``topic=auto`` queries into; the defaults without an
    index."""
    from websift.indexer.errors import IndexMissing
    from websift.indexer.manifest import read_manifest
    from websift.indexer.segment_format import built_with, read_meta
    from websift.indexer.settings import DEFAULT_INDEX_SETTINGS

    try:
        segments = read_manifest(data.index_dir).segments
    except IndexMissing:
        return DEFAULT_INDEX_SETTINGS
    if not segments:
        return DEFAULT_INDEX_SETTINGS
    newest = data.index_dir / segments[-1].name
    return built_with(newest.name, read_meta(newest))


def build_term_model(
    data: DataDir, store: StoreReader, ids: np.ndarray
) -> tuple[TermModel, int, dict[str, int]]:
    """Term counts over the text of the fetched pages among ``ids``.

    Returns ``(model, pages used, failures by reason)``; a page that cannot be read or parsed
    is counted under its error's class name, never silently dropped.
    """
    from websift.indexer.analysis import Analyzer
    from websift.indexer.parse import parse_html

    index_settings = _index_settings(data)
    analyzer = Analyzer.of(index_settings)
    counts: Counter[str] = Counter()
    used = 0
    failures: Counter[str] = Counter()
    for uid in ids.tolist():
        page = store.page(int(uid))
        if page is None or page.status != FETCHED:
            continue
        if page.warc_file is None or page.warc_offset is None or page.warc_length is None:
            failures["no_warc_record"] += 1
            continue
        if page.content_type and "html" not in page.content_type.lower():
            failures["not_html"] += 1
            continue
        try:
            response = read_response(
                data.warc_dir, WarcLocation(page.warc_file, page.warc_offset, page.warc_length)
            )
            parsed = parse_html(response.body, page.url, page.content_type,
                                settings=index_settings)
        except WebsiftError as exc:
            failures[type(exc).__name__] += 1
            continue
        text = " ".join((parsed.title, parsed.headings, parsed.body))
        counts.update(analyzer.terms(text))
        used += 1
    model = TermModel(dict(counts), int(sum(counts.values()))).top(settings.TOPIC_MAX_TERMS)
    return model, used, dict(failures)


def add_topic(data: DataDir, topic: TopicSet) -> TopicInfo:
    """Define (or replace) ``topic`` and compute its PageRank vector only.

    Raises TopicError when no page of the crawl store matches the definition.
    """
    with StoreReader.open(data.store_path) as store:
        ids = topic_page_ids(store, topic)
        if ids.size == 0:
            raise TopicError(
                f"topic {topic.name!r} matches no page of the crawl store "
                "(check the URLs, hosts and patterns against 'websift graph page')"
            )
        model, used, failures = build_term_model(data, store, ids)
        graph = load_graph(store)
    record = TopicRecord(topic, model, time.time(), int(ids.size), used, failures)
    with write_lock(data.ranks_dir):
        save_topic(data.topics_dir, record)
        previous = current_manifest(data.ranks_dir)
        if previous is not None and int(previous["node_count"]) == graph.n:
            # warm start: the topic's own previous vector when it is being replaced, else the
            # global one
            entry = previous["topics"].get(topic.name, previous["arrays"]["pagerank"])
            start = fit_length(load_array(data.ranks_dir, entry, "warm start"), graph.n)
            params = previous["params"]
            result = topic_vector(graph, ids, damping=float(params["damping"]),
                                  tol=float(params["tol"]), start=start)
            topics: dict[str, Any] = dict(previous["topics"])
            topics[topic.name] = (result.ranks, {
                "definition_sha256": record.sha256,
                "pages": int(ids.size),
                "iterations": result.iterations,
            })
            generation = write_generation(data.ranks_dir, previous, None, topics)
            iterations: int | None = result.iterations
        else:
            generation, iterations = -1, None
    if generation < 0:
        # No ranks yet, or the store grew since: a full 'websift rank' computes every vector
        # (this topic's included, its definition being saved).
        report = run_rank(data)
        generation, iterations = report.generation, report.topics.get(topic.name)
    return TopicInfo(topic, int(ids.size), used, len(model.counts), generation, iterations,
                     failures)


def remove_topic(data: DataDir, name: str) -> None:
    """Delete a topic's definition and its vector (a new ranks generation without it)."""
    with write_lock(data.ranks_dir):
        previous = current_manifest(data.ranks_dir)
        in_manifest = previous is not None and name in previous["topics"]
        try:
            delete_topic(data.topics_dir, name)
        except UnknownTopic:
            if not in_manifest:
                raise
        if previous is not None and in_manifest:
            topics = {k: v for k, v in previous["topics"].items() if k != name}
            write_generation(data.ranks_dir, previous, None, topics)


def list_topics(data: DataDir) -> list[TopicSet]:
    """The defined topics, by name."""
    return [load_topic(data.topics_dir, name).topic for name in topic_names(data.topics_dir)]


def topic_infos(data: DataDir) -> list[TopicInfo]:
    previous = current_manifest(data.ranks_dir)
    out = []
    for name in topic_names(data.topics_dir):
        rec = load_topic(data.topics_dir, name)
        entry = None if previous is None else previous["topics"].get(name)
        out.append(TopicInfo(
            rec.topic, rec.pages, rec.text_pages, len(rec.terms.counts),
            None if entry is None else int(previous["generation"]),  # type: ignore[index]
            None if entry is None else int(entry.get("iterations", 0)),
            rec.text_failures,
        ))
    return out


def similarity(models: dict[str, TermModel], query_terms: list[str],
               smoothing: float = settings.TOPIC_SMOOTHING) -> dict[str, float]:
    """sim(T_k, q) ∝ P(T_k) * prod_i P(q_i | T_k), normalised to sum 1 (pure function).

    P(T_k) = 1/K.  P(t | T_k) = (1 - lambda) c_k(t) / N_k + lambda P(t | B), where B pools all
    topics' counts with add-one smoothing, so a term no topic has leaves the weights unchanged.
    """
    if not models:
        return {}
    pooled: Counter[str] = Counter()
    for model in models.values():
        pooled.update(model.counts)
    pooled_total = sum(m.total for m in models.values())
    vocab = len(pooled) + 1
    logs: dict[str, float] = {}
    for name, model in models.items():
        score = -math.log(len(models))
        for term in query_terms:
            background = (pooled.get(term, 0) + 1) / (pooled_total + vocab)
            own = model.counts.get(term, 0) / model.total if model.total else 0.0
            score += math.log((1 - smoothing) * own + smoothing * background)
        logs[name] = score
    top = max(logs.values())
    weights = {k: math.exp(v - top) for k, v in logs.items()}
    total = sum(weights.values())
    return {k: w / total for k, w in sorted(weights.items())}


def topic_similarity(
    source: DataDir | Ranks,
    terms_or_names: list[str],
    query_terms: list[str] | None = None,
) -> dict[str, float]:
    """sim(T_k, q) for every topic with a vector, summing to 1.

    ``topic_similarity(ranks, query_terms)`` or ``topic_similarity(ranks, names, query_terms)``
    (the second restricts to ``names``).  Query terms are *analysed* terms (the output of
    ``indexer.analysis.analyze``), the form the term models hold.
    """
    if query_terms is None:
        names, terms = None, terms_or_names
    else:
        names, terms = terms_or_names, query_terms
    if isinstance(source, Ranks):
        available = source.topic_names()
        models = {n: source.term_model(n) for n in available if names is None or n in names}
    else:
        models = {
            n: load_topic(source.topics_dir, n).terms
            for n in topic_names(source.topics_dir)
            if names is None or n in names
        }
    return similarity(models, list(terms))
