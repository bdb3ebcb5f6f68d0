"""``websift rank --shard`` over stores that number URLs each their own way: the shards of a
partitioned crawl (crawler/mailbox.py), where every crawler's store gives its own IDs.

Question: how do such shards get one global generation?  Answer: the URL string is the key
across shards.  Each store's URLs are given one global ID each (:mod:`ranking.url_join`: the
first store's in its ID order, then every URL the next one adds, matched by fingerprint in
columns), the links, seeds, OPIC importance, hosts and topic pages of every store are read
through that map, and the global PageRank, levels, giant SCC, topic vectors (Haveliwala 2002,
as :mod:`ranking.rank_job`) and host rank (OPIC paper, section 4.3) are computed once over the
union: here (:func:`run_rank_by_url`) or with the link matrix on a Dask cluster
(:mod:`ranking.dask_by_url`).  Each shard then gets the same vectors written in its own URL
IDs, so its ``websift serve`` reads them as it reads any generation.  A shard may be given as
its link export (:mod:`ranking.link_export`) instead of its store: the export answers the same
questions with the same arrays, and carries 128-bit URL keys the same on every machine, with
which the stores beside it are then fingerprinted too.

Invariant: each shard's vectors, looked up by URL, equal those of ``websift rank`` over one
store holding the union of the shards' URLs and links (to 1e-9 in L1 for PageRank), whichever
engine ranks them.  Topic vectors start from the global vector (no warm start: a previous
generation is in local IDs).  Memory: the join's fingerprints (about 64 bytes per URL row at
its peak), then what ``websift rank`` holds for the same graph.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from websift.core.datadir import DataDir
from websift.ranking import settings
from websift.ranking.graph import build_graph
from websift.ranking.host_graph import (
    HostGraph,
    HostLinks,
    distinct,
    host_links_of,
    host_pagerank,
    weighted_graph,
)
from websift.ranking.link_export import ExportReader, LinkSource, cross_host_keys, open_sources
from websift.ranking.pagerank import Dangling, PageRankResult, pagerank
from websift.ranking.rank_job import Progress, RankedGraph, RankReport, _named, topic_vector
from websift.ranking.ranks_writer import HostRanks, current_manifest, write_generation, write_lock
from websift.ranking.store_graph import topic_page_ids
from websift.ranking.structure import levels, strong_components
from websift.ranking.topic_store import TopicRecord, load_topic, topic_names
from websift.ranking.url_join import StoreKeys, UrlJoin, join_keys, read_store_keys


def join_sources(stores: Sequence[LinkSource]) -> UrlJoin:
    """The URL join over stores and link exports: an export brings its fingerprints; with any
    export among them, stores are fingerprinted the way exports are (the same in every
    process), else with the faster per-process hash."""
    stable = any(isinstance(s, ExportReader) for s in stores)

    def keys() -> Iterator[StoreKeys]:
        for s in stores:
            yield s.keys() if isinstance(s, ExportReader) else read_store_keys(s, stable=stable)

    return join_keys(keys())


def url_maps(stores: Sequence[LinkSource]) -> tuple[list[np.ndarray], int]:
    """Per store, its URL ID -> the global ID (-1: no such URL); and the number of global IDs."""
    join = join_sources(stores)
    return join.maps, join.n


@dataclass
class ByUrlInputs:
    """Everything but the links, over global IDs: what both engines read from the shards."""

    maps: list[np.ndarray]
    n: int
    present: np.ndarray
    opic: np.ndarray
    roots: np.ndarray
    records: dict[str, TopicRecord]
    topic_pages: dict[str, np.ndarray]
    origins: list[str]  # host node -> origin (hosts matched by origin across shards)
    host_of: np.ndarray  # int32 per global ID: its host node (-1: none)
    collisions_64: int = 0


def read_by_url(stores: Sequence[LinkSource], shards: Sequence[DataDir]) -> ByUrlInputs:
    """The join, then pages, OPIC importance (a page's is the largest any shard records: its
    fetcher's history), seeds, topic pages (topics of the first shard) and hosts."""
    join = join_sources(stores)
    maps, n = join.maps, join.n
    present = np.zeros(n, dtype=bool)
    opic = np.zeros(n, dtype=np.float64)
    roots = []
    for store, m in zip(stores, maps, strict=True):
        present[m[m >= 0]] = True  # the map holds exactly the store's URLs
        roots.append(m[store.ids_at_depth(0)])
        np.maximum(opic, _scatter(store.importance_by_id(m.size), m, n), out=opic)
    names = topic_names(shards[0].topics_dir)
    records = {name: load_topic(shards[0].topics_dir, name) for name in names}
    topic_pages = {name: np.unique(np.concatenate(
        [m[topic_page_ids(s, rec.topic)] for s, m in zip(stores, maps, strict=True)]))
        for name, rec in records.items()}
    origins, host_of = _host_nodes(stores, maps, n)
    return ByUrlInputs(maps=maps, n=n, present=present, opic=opic,
                       roots=np.unique(np.concatenate(roots)), records=records,
                       topic_pages=topic_pages, origins=origins, host_of=host_of,
                       collisions_64=join.collisions_64)


def _host_nodes(stores: Sequence[LinkSource], maps: list[np.ndarray],
                n: int) -> tuple[list[str], np.ndarray]:
    """Host nodes matched by origin (as host_graph.read_host_graph) and each global ID's."""
    node: dict[str, int] = {}
    host_of = np.full(n, -1, dtype=np.int32)
    for store, m in zip(stores, maps, strict=True):
        origins = store.host_origins()
        lookup = np.full(max(origins, default=0) + 1, -1, dtype=np.int32)
        for hid, origin in origins.items():
            lookup[hid] = node.setdefault(origin, len(node))
        local = store.host_ids_by_id(m.size)
        known = (local > 0) & (local < lookup.size) & (m >= 0)
        host_of[m[known]] = lookup[local[known]]
    return list(node), host_of


def host_graph_of(inputs: ByUrlInputs, edges: HostLinks) -> HostGraph:
    """The host graph over ``inputs``' host nodes with ``edges`` (source, target, pages)."""
    hosts = len(inputs.origins)
    present = np.zeros(hosts, dtype=bool)
    present[inputs.host_of[inputs.host_of >= 0]] = True
    return HostGraph(origins=inputs.origins, host_of=inputs.host_of,
                     graph=weighted_graph(edges[0], edges[1], edges[2], hosts, present))


@dataclass
class CrossHostPages:
    """The host graph's edges gathered from link arrays one store at a time, without the page
    graph (the Dask engine's): the distinct (source page, target host) pairs of links between
    hosts, as :func:`ranking.host_graph.host_links_of` counts them on a page graph."""

    host_of: np.ndarray
    parts: list[np.ndarray] = field(default_factory=list)

    @property
    def hosts(self) -> int:
        return max(int(self.host_of.max(initial=-1)) + 1, 1)

    def add(self, src: np.ndarray, dst: np.ndarray) -> None:
        """One store's links (global IDs); nofollow links already left out."""
        self.parts.append(cross_host_keys(self.host_of, self.hosts, src, dst))

    def edges(self) -> HostLinks:
        hosts = self.hosts
        pairs, _ = distinct(np.concatenate(self.parts) if self.parts
                            else np.zeros(0, dtype=np.int64))
        page_src, target = pairs // hosts, pairs % hosts
        keys, pages = distinct(self.host_of[page_src].astype(np.int64) * hosts + target)
        return keys // hosts, keys % hosts, pages


@dataclass
class GlobalRanks:
    """Every vector of one generation over global IDs, from either engine."""

    graph: RankedGraph
    result: PageRankResult
    level: np.ndarray
    giant: np.ndarray  # the giant SCC's mask (present pages only)
    giant_size: int
    vectors: dict[str, tuple[np.ndarray, PageRankResult]]  # topic -> (its pages, p_k)
    hosts: HostGraph
    host_result: PageRankResult | None


def run_rank_by_url(
    shards: list[DataDir],
    *,
    damping: float = settings.DAMPING,
    tol: float = settings.TOLERANCE,
    dangling: Dangling | str = settings.DANGLING_POLICY,
    progress: Progress | None = None,
) -> list[RankReport]:
    """One global generation over ``shards`` matched by URL, written to each in its own IDs;
    one report per shard (see the module docstring)."""
    started = time.perf_counter()
    with ExitStack() as stack:
        stores = open_sources(stack, shards)
        inputs = read_by_url(stores, shards)
        srcs, dsts = [], []
        for store, m in zip(stores, inputs.maps, strict=True):
            src, dst = store.link_arrays(include_nofollow=False)
            # 4 bytes a node as build_graph keeps them (it refuses n >= 2^31 before any use)
            srcs.append(m[src].astype(np.int32))
            dsts.append(m[dst].astype(np.int32))
            del src, dst
    graph = build_graph(np.concatenate(srcs), np.concatenate(dsts), inputs.n, inputs.present)
    del srcs, dsts
    host_graph = host_graph_of(inputs, host_links_of(graph, inputs.host_of))
    result = pagerank(graph, damping=damping, tol=tol, dangling=dangling,
                      progress=_named(progress, "pagerank"))
    host_result = host_pagerank(host_graph, damping=damping, tol=tol, dangling=dangling,
                                progress=_named(progress, "host pagerank"))
    comps = strong_components(graph)
    vectors = {name: (pages, topic_vector(graph, pages, damping=damping, tol=tol,
                                          start=result.ranks))
               for name, pages in inputs.topic_pages.items() if pages.size}
    ranks = GlobalRanks(graph=graph, result=result, level=levels(graph, inputs.roots),
                        giant=comps.in_giant() & graph.present, giant_size=comps.giant_size,
                        vectors=vectors, hosts=host_graph, host_result=host_result)
    return write_by_url(shards, inputs, ranks, damping=damping, tol=tol, dangling=dangling,
                        started=started)


def write_by_url(
    shards: Sequence[DataDir],
    inputs: ByUrlInputs,
    ranks: GlobalRanks,
    *,
    damping: float,
    tol: float,
    dangling: Dangling | str,
    started: float,
) -> list[RankReport]:
    """The generation of ``ranks`` written to each shard in its own URL IDs, with the union's
    figures a shard server needs to score its part as the whole graph (fusion.site_static)."""
    graph, result, opic = ranks.graph, ranks.result, inputs.opic
    stats: dict[str, Any] = {
        "iterations": result.iterations, "residuals": result.residuals,
        "converged": result.converged, "removal_rounds": result.removal_rounds,
        "pages": graph.num_pages, "links": graph.num_links,
        "dangling": int(graph.dangling().sum()), "giant_scc": ranks.giant_size,
        "roots": int(inputs.roots.size),
        # the join (ranking/url_join.py): rows read, distinct URLs, 64-bit collisions kept apart
        "url_join": {"rows": int(sum(int(np.count_nonzero(m >= 0)) for m in inputs.maps)),
                     "urls": inputs.n, "collisions_64": inputs.collisions_64}}
    pr = result.ranks
    host_of = ranks.hosts.host_of
    on_host = (host_of >= 0) & (pr > 0)
    stats["union"] = {
        "host_mass": np.bincount(host_of[on_host], weights=pr[on_host],
                                 minlength=ranks.hosts.hosts).tolist(),
        "static_held": int(on_host.sum()), "pagerank_held": int(np.count_nonzero(pr)),
        # (pages holding any, sum) of the vectors a server scales to mean one
        "opic": [int(np.count_nonzero(opic)), float(opic.sum())],
        "topics": {name: [int(np.count_nonzero(vec.ranks)), float(vec.ranks.sum())]
                   for name, (_, vec) in ranks.vectors.items()}}
    params = {"damping": damping, "tol": tol, "dangling": Dangling(dangling).value,
              "teleport": "uniform"}
    host_result = ranks.host_result
    host_stats = None if host_result is None else {
        "hosts": ranks.hosts.graph.num_pages, "links": ranks.hosts.graph.num_links,
        "iterations": host_result.iterations, "converged": host_result.converged}
    reports = []
    for data, m in zip(shards, inputs.maps, strict=True):
        hosts = None if host_result is None or host_stats is None else HostRanks(
            host=_local(host_of, m, -1), rank=host_result.ranks, stats=host_stats)
        topics: dict[str, tuple[np.ndarray, dict[str, Any]] | dict[str, Any]] = {
            name: (_local(vec.ranks, m, 0.0), {
                "definition_sha256": inputs.records[name].sha256, "pages": int(pages.size),
                "iterations": vec.iterations}) for name, (pages, vec) in ranks.vectors.items()}
        with write_lock(data.ranks_dir):
            generation = write_generation(
                data.ranks_dir, current_manifest(data.ranks_dir),
                {"pagerank": _local(pr, m, 0.0), "opic": _local(opic, m, 0.0),
                 "level": _local(ranks.level, m, -1),
                 "giant_scc": _local(ranks.giant, m, False)},
                topics, params=params, stats=stats, hosts=hosts)
        reports.append(RankReport(
            generation=generation, pages=graph.num_pages, links=graph.num_links,
            node_count=graph.n, result=result, seconds=time.perf_counter() - started,
            giant_scc=ranks.giant_size,
            topics={k: v.iterations for k, (_, v) in ranks.vectors.items()}, hosts=host_stats))
    return reports


def _local(vector: np.ndarray, m: np.ndarray, fill: float | int | bool) -> np.ndarray:
    """``vector`` (over global IDs) in a store's own IDs ``m`` (``fill`` where it has no URL)."""
    out = np.full(m.size, fill, dtype=vector.dtype)
    known = m >= 0
    out[known] = vector[m[known]]
    return out


def _scatter(local: np.ndarray, m: np.ndarray, n: int) -> np.ndarray:
    """A store's per-URL-ID vector over global IDs (0 where it has no URL)."""
    out = np.zeros(n, dtype=local.dtype)
    known = m >= 0
    out[m[known]] = local[known]
    return out
