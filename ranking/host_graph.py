"""Site-level importance: PageRank over the host graph.

OPIC paper (Abiteboul, Preda, Cobena 2003, section 4.3): links inside one web site are "less
useful" than links between sites, so they propose "a notion of site-based importance that
consider links between web-sites instead of links between web-pages".  Here a site is a host
(the crawl store's ``hosts.origin``, ``scheme://host[:port]``) and its importance is the
PageRank of the host graph:

- one node per host that holds at least one URL of the store;
- one edge per ordered pair of different hosts with a followed link between them (a link
  counted once per pair of hosts), weighted by the number of distinct pages of the source host
  that link to the target host: a walker on host A leaves for host B with probability
  ``pages(A -> B) / sum over C of pages(A -> C)``;
- links within a host are dropped (they are what section 4.3 sets apart), and so are
  nofollow links, as in the page graph;
- the teleport jumps to a page chosen uniformly, as the page PageRank's does, so to host h
  with probability ``pages(h) / pages`` (a host of one never-read URL that a crawl touched
  once gets as little as that URL, not as much as the crawled site: with a uniform teleport
  over hosts the hundreds of hosts a manual merely links to held most of the rank);
- a host with no link to another host is dangling and handled by the same policy as the page
  PageRank's (``ranking.pagerank.Dangling``), with the same solver and iteration schedule
  (:func:`ranking.pagerank.pagerank` on a weighted :class:`~ranking.graph.LinkGraph`).

Host graphs are small (one node per site), so both rank engines compute this in the rank
process, the Dask engine included.  The edges come from the page graph already in memory when
there is one (the embedded engine: a sort of the cross-host links, about 1 s per 10M links),
else from the store's host view (``StoreReader.host_links``: SQLite groups the links, no link
array in memory, about 5 s per million links); both give the same edges (tests).  Hosts of
several stores (shards) are matched by origin.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from websift.ranking.graph import LinkGraph
from websift.ranking.pagerank import Dangling, PageRankResult, pagerank
from websift.ranking.ranks_writer import HostRanks
from websift.store.views import StoreReader


@dataclass(frozen=True)
class HostGraph:
    """The host graph of a crawl, its nodes numbered densely ``0..hosts-1``."""

    origins: list[str]  # node -> origin
    host_of: np.ndarray  # int32 per URL ID: the page's host node (-1: not a URL of the store)
    graph: LinkGraph  # weighted (linking pages per host pair), no self-links

    @property
    def hosts(self) -> int:
        return len(self.origins)


def weighted_graph(
    src: np.ndarray, dst: np.ndarray, weight: np.ndarray, n: int, present: np.ndarray
) -> LinkGraph:
    """A weighted graph over nodes ``0..n-1`` from parallel arrays: self-links dropped, the
    weights of repeated (source, target) pairs added up (pairs that several shards report)."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    w = np.asarray(weight, dtype=np.float64)
    keep = src != dst
    key = src[keep] * max(n, 1) + dst[keep]
    pairs, where = np.unique(key, return_inverse=True)
    sums = np.bincount(where, weights=w[keep], minlength=pairs.size)
    rows = pairs // max(n, 1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return LinkGraph(indptr=indptr, indices=(pairs % max(n, 1)).astype(np.int32),
                     present=np.asarray(present, dtype=bool), weights=sums)


HostLinks = tuple[np.ndarray, np.ndarray, np.ndarray]  # source hosts, target hosts, pages


def host_links_of(page_graph: LinkGraph, host_of: np.ndarray) -> HostLinks:
    """``(source hosts, target hosts, linking pages)`` from a page graph whose node i is on
    host ``host_of[i]`` (-1: none): what ``StoreReader.host_links`` gives, in numpy."""
    src = np.repeat(np.arange(page_graph.n, dtype=np.int64), page_graph.out_degree())
    dst_host = host_of[page_graph.indices].astype(np.int64)
    src_host = host_of[src].astype(np.int64)
    keep = (src_host >= 0) & (dst_host >= 0) & (src_host != dst_host)
    hosts = int(host_of.max(initial=-1)) + 1
    # one key per (source page, target host): a page counts once per host it links to
    pairs, _ = distinct(src[keep] * max(hosts, 1) + dst_host[keep])
    page_src, target = pairs // max(hosts, 1), pairs % max(hosts, 1)
    edges, pages = distinct(host_of[page_src].astype(np.int64) * max(hosts, 1) + target)
    return edges // max(hosts, 1), edges % max(hosts, 1), pages


def distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``keys`` ascending and how often each occurs: a sort in place
    (np.unique was several times slower on 3M int64 keys here, numpy 2.4)."""
    keys.sort()
    if keys.size == 0:
        return keys, np.zeros(0, dtype=np.int64)
    first = np.empty(keys.size, dtype=bool)
    first[0] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return keys[starts], np.diff(np.append(starts, keys.size))


def read_host_graph(
    stores: Sequence[StoreReader], n: int, page_graph: LinkGraph | None = None
) -> HostGraph:
    """The host graph of one or more stores over URL IDs ``0..n-1`` (shards: hosts matched by
    origin, linking pages added up).  ``page_graph``: the stores' page graph, if in memory (its
    links are then grouped here rather than by SQLite)."""
    node: dict[str, int] = {}
    host_of = np.full(n, -1, dtype=np.int32)
    src: list[int] = []
    dst: list[int] = []
    weight: list[int] = []
    for store in stores:
        origins = store.host_origins()
        local = {hid: node.setdefault(origin, len(node)) for hid, origin in origins.items()}
        ids = store.host_ids_by_id(n)
        lookup = np.full(max(origins, default=0) + 1, -1, dtype=np.int32)
        for hid, k in local.items():
            lookup[hid] = k
        known = (ids > 0) & (ids < lookup.size)
        host_of[known] = lookup[ids[known]]
        if page_graph is None:
            for a, b, pages in store.host_links():
                src.append(local[a])
                dst.append(local[b])
                weight.append(pages)
    hosts = len(node)
    present = np.zeros(hosts, dtype=bool)
    present[host_of[host_of >= 0]] = True
    edges: HostLinks
    if page_graph is not None:
        edges = host_links_of(page_graph, host_of)
    else:
        edges = (np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
                 np.asarray(weight, dtype=np.int64))
    graph = weighted_graph(edges[0], edges[1], edges[2], hosts, present)
    return HostGraph(origins=list(node), host_of=host_of, graph=graph)


def host_pagerank(
    hosts: HostGraph,
    *,
    damping: float,
    tol: float,
    dangling: Dangling | str,
    progress: Callable[[int, float], None] | None = None,
) -> PageRankResult | None:
    """PageRank over the host graph (teleport proportional to the hosts' pages), or None when
    no host holds a page."""
    if not hosts.graph.present.any():
        return None
    return pagerank(hosts.graph, damping=damping, tol=tol, dangling=dangling,
                    teleport=host_teleport(hosts), progress=progress)


def host_teleport(hosts: HostGraph) -> np.ndarray:
    """E over hosts: each host's number of pages (URLs of the store); the solver normalises."""
    on_host = hosts.host_of[hosts.host_of >= 0]
    return np.bincount(on_host, minlength=hosts.hosts).astype(np.float64)


def host_ranks(
    stores: Sequence[StoreReader],
    n: int,
    *,
    damping: float,
    tol: float,
    dangling: Dangling | str,
    progress: Callable[[int, float], None] | None = None,
    page_graph: LinkGraph | None = None,
) -> HostRanks | None:
    """The host graph of ``stores`` and its PageRank, as a ranks generation records them
    (None when no host holds a page).  ``page_graph``: as :func:`read_host_graph`'s."""
    hosts = read_host_graph(stores, n, page_graph)
    result = host_pagerank(hosts, damping=damping, tol=tol, dangling=dangling, progress=progress)
    if result is None:
        return None
    stats = {"hosts": hosts.graph.num_pages, "links": hosts.graph.num_links,
             "iterations": result.iterations, "converged": result.converged}
    return HostRanks(host=hosts.host_of, rank=result.ranks, stats=stats)
