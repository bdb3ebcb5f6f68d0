"""``websift rank --shard`` over stores that number URLs each their own way: the shards of a
partitioned crawl (crawler/mailbox.py), where every crawler's store gives its own IDs.

Question: how do such shards get one global generation?  Answer: the URL string is the key
across shards.  Each store's URLs are given one global ID each (the first store's in its ID
order, then every URL the next one adds), the links, seeds, OPIC importance, hosts and topic
pages of every store are read through that map, and the global PageRank, levels, giant SCC,
topic vectors (Haveliwala 2002, as :mod:`ranking.rank_job`) and host rank (OPIC paper, section
4.3) are computed once over the union.  Each shard then gets the same vectors written in its own
URL IDs, so its ``websift serve`` reads them as it reads any generation.

Invariant: each shard's vectors, looked up by URL, equal those of ``websift rank`` over one
store holding the union of the shards' URLs and links (to 1e-9 in L1 for PageRank).  Topic
vectors start from the global vector (no warm start: a previous generation is in local IDs).
Memory: one Python dict entry per distinct URL while the map is built, on top of what
``websift rank`` holds for the same graph.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any

import numpy as np

from websift.core.datadir import DataDir
from websift.ranking import settings
from websift.ranking.graph import LinkGraph, build_graph
from websift.ranking.host_graph import HostGraph, host_links_of, host_pagerank, weighted_graph
from websift.ranking.pagerank import Dangling, PageRankResult, pagerank
from websift.ranking.rank_job import Progress, RankReport, _named, topic_vector
from websift.ranking.ranks_writer import HostRanks, current_manifest, write_generation, write_lock
from websift.ranking.store_graph import topic_page_ids
from websift.ranking.structure import levels, strong_components
from websift.ranking.topic_store import TopicRecord, load_topic, topic_names
from websift.store.views import StoreReader


def url_maps(stores: list[StoreReader]) -> tuple[list[np.ndarray], int]:
    """Per store, its URL ID -> the global ID (-1: no such URL); and the number of global IDs."""
    ids: dict[str, int] = {}
    maps = []
    for store in stores:
        m = np.full(store.max_url_id() + 1, -1, dtype=np.int64)
        for uid, url in store.urls():
            m[uid] = ids.setdefault(url, len(ids))
        maps.append(m)
    return maps, len(ids)


def _hosts(stores: list[StoreReader], maps: list[np.ndarray], n: int,
           graph: LinkGraph) -> HostGraph:
    """The host graph over global IDs (hosts matched by origin; as host_graph.read_host_graph)."""
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
    present = np.zeros(len(node), dtype=bool)
    present[host_of[host_of >= 0]] = True
    src, dst, weight = host_links_of(graph, host_of)
    return HostGraph(origins=list(node), host_of=host_of,
                     graph=weighted_graph(src, dst, weight, len(node), present))


def _local(vector: np.ndarray, m: np.ndarray, fill: float | int | bool) -> np.ndarray:
    """``vector`` (over global IDs) in a store's own IDs ``m`` (``fill`` where it has no URL)."""
    out = np.full(m.size, fill, dtype=vector.dtype)
    known = m >= 0
    out[known] = vector[m[known]]
    return out


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
        stores = [stack.enter_context(StoreReader.open(d.store_path)) for d in shards]
        for store in stores:  # a crawl may be committing: read each store as of one state
            stack.enter_context(store.snapshot())
        maps, n = url_maps(stores)
        present = np.zeros(n, dtype=bool)
        opic = np.zeros(n, dtype=np.float64)
        srcs, dsts, roots = [], [], []
        for store, m in zip(stores, maps, strict=True):
            present[m[store.url_ids()]] = True
            src, dst = store.link_arrays(include_nofollow=False)
            srcs.append(m[src])
            dsts.append(m[dst])
            roots.append(m[store.ids_at_depth(0)])
            # a page's importance is the largest any shard records (its fetcher's history)
            np.maximum(opic, _scatter(store.importance_by_id(m.size), m, n), out=opic)
        graph = build_graph(np.concatenate(srcs), np.concatenate(dsts), n, present)
        root_ids = np.unique(np.concatenate(roots))
        names = topic_names(shards[0].topics_dir)
        records: dict[str, TopicRecord] = {
            name: load_topic(shards[0].topics_dir, name) for name in names}
        topic_pages = {name: np.unique(np.concatenate(
            [m[topic_page_ids(s, rec.topic)] for s, m in zip(stores, maps, strict=True)]))
            for name, rec in records.items()}
        host_graph = _hosts(stores, maps, n, graph)
    result = pagerank(graph, damping=damping, tol=tol, dangling=dangling,
                      progress=_named(progress, "pagerank"))
    host_result = host_pagerank(host_graph, damping=damping, tol=tol, dangling=dangling,
                                progress=_named(progress, "host pagerank"))
    lv = levels(graph, root_ids)
    comps = strong_components(graph)
    giant = comps.in_giant() & graph.present
    vectors: dict[str, tuple[np.ndarray, PageRankResult]] = {
        name: (pages, topic_vector(graph, pages, damping=damping, tol=tol, start=result.ranks))
        for name, pages in topic_pages.items() if pages.size}
    stats = {"iterations": result.iterations, "residuals": result.residuals,
             "converged": result.converged, "removal_rounds": result.removal_rounds,
             "pages": graph.num_pages, "links": graph.num_links,
             "dangling": int(graph.dangling().sum()), "giant_scc": comps.giant_size,
             "roots": int(root_ids.size)}
    # what a shard server needs to score its part as the whole graph (fusion.site_static)
    pr = result.ranks
    on_host = (host_graph.host_of >= 0) & (pr > 0)
    stats["union"] = {
        "host_mass": np.bincount(host_graph.host_of[on_host], weights=pr[on_host],
                                 minlength=host_graph.hosts).tolist(),
        "static_held": int(on_host.sum()), "pagerank_held": int(np.count_nonzero(pr)),
        # (pages holding any, sum) of the vectors a server scales to mean one
        "opic": [int(np.count_nonzero(opic)), float(opic.sum())],
        "topics": {name: [int(np.count_nonzero(vec.ranks)), float(vec.ranks.sum())]
                   for name, (_, vec) in vectors.items()}}
    params = {"damping": damping, "tol": tol, "dangling": Dangling(dangling).value,
              "teleport": "uniform"}
    host_stats = None if host_result is None else {
        "hosts": host_graph.graph.num_pages, "links": host_graph.graph.num_links,
        "iterations": host_result.iterations, "converged": host_result.converged}
    reports = []
    for data, m in zip(shards, maps, strict=True):
        hosts = None if host_result is None or host_stats is None else HostRanks(
            host=_local(host_graph.host_of, m, -1), rank=host_result.ranks, stats=host_stats)
        topics: dict[str, tuple[np.ndarray, dict[str, Any]] | dict[str, Any]] = {
            name: (_local(vec.ranks, m, 0.0), {
            "definition_sha256": records[name].sha256, "pages": int(pages.size),
            "iterations": vec.iterations}) for name, (pages, vec) in vectors.items()}
        with write_lock(data.ranks_dir):
            generation = write_generation(
                data.ranks_dir, current_manifest(data.ranks_dir),
                {"pagerank": _local(result.ranks, m, 0.0), "opic": _local(opic, m, 0.0),
                 "level": _local(lv, m, -1), "giant_scc": _local(giant, m, False)},
                topics, params=params, stats=stats, hosts=hosts)
        reports.append(RankReport(
            generation=generation, pages=graph.num_pages, links=graph.num_links,
            node_count=graph.n, result=result, seconds=time.perf_counter() - started,
            giant_scc=comps.giant_size, topics={k: v.iterations for k, (_, v) in vectors.items()},
            hosts=host_stats))
    return reports


def _scatter(local: np.ndarray, m: np.ndarray, n: int) -> np.ndarray:
    """A store's per-URL-ID vector over global IDs (0 where it has no URL)."""
    out = np.zeros(n, dtype=local.dtype)
    known = m >= 0
    out[m[known]] = local[known]
    return out
