"""``websift rank``: from the crawl store to a new generation of rank vectors.

Reads the link graph, the OPIC importance and the seeds from the store, computes the global
PageRank, the levels from the seeds and the giant SCC, recomputes the vector of every defined
topic (warm-started from its previous vector), and writes them all as one generation
(:mod:`ranking.ranks_writer`).

Topic vectors (Haveliwala 2002; slides 'Topic-sensitive Pagerank'): teleport uniform over T_k,
dangling pages' rank sent to the *uniform* vector over all pages whatever the topic.  With that
fixed dangling vector PageRank is linear in the teleport vector, so
``sum_k sim(T_k, q) * p_k`` is exactly the PageRank of the teleport ``sum_k sim(T_k, q) * E_k``.
The global vector uses the same convention (its E is uniform, so dangling rank goes to E).

Site-level importance (OPIC paper, section 4.3): the PageRank of the host graph
(:mod:`ranking.host_graph`) is computed in this process whichever engine ranks the pages (host
graphs are small) and recorded in the same generation.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from websift.core.datadir import DataDir
from websift.ranking import settings
from websift.ranking.errors import RankingError
from websift.ranking.graph import LinkGraph, build_graph
from websift.ranking.host_graph import host_ranks
from websift.ranking.link_export import is_export
from websift.ranking.pagerank import Dangling, PageRankResult, Pages, pagerank, uniform_teleport
from websift.ranking.ranks_format import load_array
from websift.ranking.ranks_writer import HostRanks, current_manifest, write_generation, write_lock
from websift.ranking.store_graph import load_store_arrays, topic_page_ids
from websift.ranking.structure import levels, strong_components
from websift.ranking.topic_store import TopicRecord, load_topic, topic_names
from websift.store.views import StoreReader

Progress = Callable[[str, int, float], None]  # (what, iteration, residual)
TopicVector = Callable[[np.ndarray, np.ndarray], PageRankResult]  # (pages, start) -> p_k


@dataclass
class RankReport:
    generation: int
    pages: int
    links: int
    node_count: int
    result: PageRankResult
    seconds: float
    giant_scc: int
    topics: dict[str, int] = field(default_factory=dict)  # name -> iterations
    hosts: dict[str, Any] | None = None  # the host graph's stats (None: no host ranks)


def topic_vector(
    graph: LinkGraph,
    pages: np.ndarray,
    *,
    damping: float,
    tol: float,
    start: np.ndarray | None,
    progress: Callable[[int, float], None] | None = None,
) -> PageRankResult:
    """p_k: PageRank with teleport uniform over ``pages`` and dangling rank to uniform."""
    return pagerank(
        graph,
        damping=damping,
        teleport=topic_teleport(graph.n, pages),
        tol=tol,
        dangling=Dangling.TELEPORT,
        dangling_vector=uniform_teleport(graph),
        start=start,
        progress=progress,
    )


def topic_teleport(n: int, pages: np.ndarray) -> np.ndarray:
    """E_k: 1 on each of a topic's ``pages`` (the PageRank call normalises it)."""
    if pages.size == 0:
        raise RankingError("a topic with no pages has no PageRank vector")
    teleport = np.zeros(n, dtype=np.float64)
    teleport[pages] = 1.0
    return teleport


def fit_length(vector: np.ndarray, n: int) -> np.ndarray | None:
    """A previous vector as a warm start for a graph of ``n`` nodes (new nodes get 0)."""
    if vector.size == 0 or vector.sum() <= 0:
        return None
    out = np.zeros(n, dtype=np.float64)
    k = min(n, vector.size)
    out[:k] = vector[:k]
    return out if out.sum() > 0 else None


class RankedGraph(Pages, Protocol):
    """What a generation's stats need of a graph: a :class:`~ranking.graph.LinkGraph` or the
    Dask engine's ``ClusterGraph``."""

    @property
    def num_pages(self) -> int: ...

    @property
    def num_links(self) -> int: ...

    def dangling(self) -> np.ndarray: ...


class RankEngine(Protocol):
    """Runs this same job with the link matrix elsewhere (``ranking.dask_engine.DaskEngine``)."""

    def run(self, data: DataDir, *, damping: float, tol: float, dangling: Dangling | str,
            progress: Progress | None) -> RankReport: ...


def run_rank(
    data: DataDir,
    *,
    damping: float = settings.DAMPING,
    tol: float = settings.TOLERANCE,
    dangling: Dangling | str = settings.DANGLING_POLICY,
    progress: Progress | None = None,
    engine: RankEngine | None = None,
) -> RankReport:
    """Compute and write a new ranks generation for ``data``; returns what was done.
    ``engine``: compute it elsewhere (None: here, in this process)."""
    if engine is not None:
        return engine.run(data, damping=damping, tol=tol, dangling=dangling, progress=progress)
    started = time.perf_counter()
    with StoreReader.open(data.store_path) as store, store.snapshot():
        arrays = load_store_arrays(store)
        graph = arrays.graph
        names = topic_names(data.topics_dir)
        records = {name: load_topic(data.topics_dir, name) for name in names}
        topic_pages = {name: topic_page_ids(store, rec.topic) for name, rec in records.items()}
        hosts = host_ranks([store], graph.n, damping=damping, tol=tol, dangling=dangling,
                           progress=_named(progress, "host pagerank"), page_graph=graph)

    def global_progress(k: int, r: float) -> None:
        if progress is not None:
            progress("pagerank", k, r)

    result = pagerank(graph, damping=damping, tol=tol, dangling=dangling, progress=global_progress)
    lv = levels(graph, arrays.roots)
    comps = strong_components(graph)

    def vector(pages: np.ndarray, start: np.ndarray) -> PageRankResult:
        return topic_vector(graph, pages, damping=damping, tol=tol, start=start)

    report = write_ranks(
        data, graph, result, damping=damping, tol=tol, dangling=dangling,
        opic=arrays.opic, level=lv, giant=comps.in_giant(),
        giant_size=comps.giant_size, roots=arrays.roots.size, topic_pages=topic_pages,
        records=records, topic_vector=vector, hosts=hosts)
    report.seconds = time.perf_counter() - started
    return report


def write_ranks(
    data: DataDir,
    graph: RankedGraph,
    result: PageRankResult,
    *,
    damping: float,
    tol: float,
    dangling: Dangling | str,
    opic: np.ndarray,
    level: np.ndarray,
    giant: np.ndarray,
    giant_size: int,
    roots: int,
    topic_pages: dict[str, np.ndarray],
    records: dict[str, TopicRecord],
    topic_vector: TopicVector,
    before_write: Callable[[], None] | None = None,
    hosts: HostRanks | None = None,
) -> RankReport:
    """The topic vectors and the new generation, for either engine: under the ranks write lock,
    each topic's vector by ``topic_vector``, warm-started from its vector of the current
    generation (else from the global ``result``), then the generation with ``result``, ``opic``,
    ``level`` and the ``giant`` SCC mask, and the run's params and stats.  ``before_write`` runs
    once every vector is computed, before the first file is written.  ``hosts``: the host
    graph's ranks (ranking/host_graph.py), recorded with the generation.  The report's
    ``seconds`` is the caller's to fill in."""
    with write_lock(data.ranks_dir):
        previous = current_manifest(data.ranks_dir)
        topics: dict[str, Any] = {}
        done: dict[str, int] = {}
        for name, pages in topic_pages.items():
            if pages.size == 0:
                continue  # no page matches any more: the topic keeps no vector this generation
            start = None
            if previous is not None and name in previous["topics"]:
                old = load_array(data.ranks_dir, previous["topics"][name], f"topic {name}")
                start = fit_length(old, graph.n)
            vec = topic_vector(pages, start if start is not None else result.ranks)
            topics[name] = (vec.ranks, {
                "definition_sha256": records[name].sha256,
                "pages": int(pages.size),
                "iterations": vec.iterations,
            })
            done[name] = vec.iterations
        stats = {
            "iterations": result.iterations,
            "residuals": result.residuals,
            "converged": result.converged,
            "removal_rounds": result.removal_rounds,
            "pages": graph.num_pages,
            "links": graph.num_links,
            "dangling": int(graph.dangling().sum()),
            "giant_scc": giant_size,
            "roots": roots,
        }
        params = {"damping": damping, "tol": tol, "dangling": Dangling(dangling).value,
                  "teleport": "uniform"}
        if before_write is not None:
            before_write()
        generation = write_generation(
            data.ranks_dir,
            previous,
            {
                "pagerank": result.ranks,
                "opic": opic,
                "level": level,
                "giant_scc": giant & graph.present,
            },
            topics,
            params=params,
            stats=stats,
            hosts=hosts,
        )
    return RankReport(generation=generation, pages=graph.num_pages, links=graph.num_links,
                      node_count=graph.n, result=result, seconds=0.0, giant_scc=giant_size,
                      topics=done, hosts=None if hosts is None else hosts.stats)


def _named(progress: Progress | None, what: str) -> Callable[[int, float], None] | None:
    """``progress`` for one vector's iterations (None: no progress)."""
    if progress is None:
        return None
    report = progress

    def named(k: int, r: float) -> None:
        report(what, k, r)

    return named


def check_shared_frontier(stores: Sequence[StoreReader]) -> None:
    """Refuse shards whose URL IDs were not all allocated by one shared frontier."""
    # crawler/redis_frontier.py META_FRONTIER: which frontier allocated a shard's URL IDs
    frontiers = {s.get_meta("frontier_id") for s in stores}
    if len(stores) > 1 and (None in frontiers or len(frontiers) != 1):
        raise RankingError("rank --shard needs stores crawled on one shared frontier "
                           "(their URL IDs come from different counters)")


def own_id_spaces(shards: Sequence[DataDir]) -> bool:
    """Do ``shards`` number URLs each their own way (no shard's IDs come from a shared frontier:
    a partitioned crawl's stores)?  They are then ranked by URL (ranking/rank_by_url.py), as
    is any set holding a link export (ranking/link_export.py: global keys, no shared IDs)."""
    if any(is_export(d.root) for d in shards):
        return True
    if len(shards) < 2:
        return False
    for data in shards:
        with StoreReader.open(data.store_path) as store:
            if store.get_meta("frontier_id") is not None:
                return False
    return True


def run_rank_shards(
    shards: list[DataDir],
    *,
    damping: float = settings.DAMPING,
    tol: float = settings.TOLERANCE,
    dangling: Dangling | str = settings.DANGLING_POLICY,
    progress: Progress | None = None,
) -> list[RankReport]:
    """One global generation over several crawl stores sharing a frontier's URL IDs.

    The graph is the union of every shard's links and URLs (a URL known to several shards is
    one node: the shared frontier allocated its ID); a page's OPIC importance is the largest
    any shard records (the shard that fetched it holds its history); topics are read from the
    first shard.  The same vectors are written to every shard's ranks directory, so each shard
    server serves the global ranks.  Returns one report per shard."""
    if not shards:
        raise RankingError("rank --shard needs at least one data directory")
    started = time.perf_counter()
    with ExitStack() as stack:
        stores = [stack.enter_context(StoreReader.open(d.store_path)) for d in shards]
        for store in stores:  # a crawl may be committing: read each store as of one state
            stack.enter_context(store.snapshot())
        check_shared_frontier(stores)
        n = max(s.max_url_id() for s in stores) + 1
        present = np.zeros(n, dtype=bool)
        srcs, dsts, roots = [], [], []
        opic = np.zeros(n, dtype=np.float64)
        for store in stores:
            present[store.url_ids()] = True
            src, dst = store.link_arrays(include_nofollow=False)
            srcs.append(src)
            dsts.append(dst)
            roots.append(store.ids_at_depth(0))
            np.maximum(opic, store.importance_by_id(n), out=opic)
        graph = build_graph(np.concatenate(srcs), np.concatenate(dsts), n, present)
        root_ids = np.unique(np.concatenate(roots))
        topics_dir = shards[0].topics_dir
        names = topic_names(topics_dir)
        records = {name: load_topic(topics_dir, name) for name in names}
        topic_pages = {
            name: np.unique(np.concatenate([topic_page_ids(s, rec.topic) for s in stores]))
            for name, rec in records.items()}
        hosts = host_ranks(stores, n, damping=damping, tol=tol, dangling=dangling,
                           progress=_named(progress, "host pagerank"), page_graph=graph)
    result = pagerank(graph, damping=damping, tol=tol, dangling=dangling,
                      progress=_named(progress, "pagerank"))
    lv = levels(graph, root_ids)
    comps = strong_components(graph)

    def vector(pages: np.ndarray, start: np.ndarray) -> PageRankResult:
        return topic_vector(graph, pages, damping=damping, tol=tol, start=start)

    reports = []
    for data in shards:
        report = write_ranks(
            data, graph, result, damping=damping, tol=tol, dangling=dangling,
            opic=opic, level=lv, giant=comps.in_giant(), giant_size=comps.giant_size,
            roots=root_ids.size, topic_pages=topic_pages, records=records,
            topic_vector=vector, hosts=hosts)
        report.seconds = time.perf_counter() - started
        reports.append(report)
    return reports
