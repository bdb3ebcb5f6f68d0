"""Answers about the link graph (the Web Graph Analyzer's feature list, section 4).

- :func:`graph_stats`: pages, links, dangling pages, in/out-degree distributions, strongly
  connected components and the giant one, levels from the roots, the restricted PageRank over
  the first l levels against the global one, and optionally Monte Carlo PageRank against power
  iteration on the top pages.
- :func:`page_graph_info`: one page's in-links with anchor text, out-links, level, giant-SCC
  membership, PageRank and OPIC importance; the API's ``/pages`` endpoint calls it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from websift.core.datadir import DataDir
from websift.ranking import settings
from websift.ranking.errors import GraphError, RanksMissing
from websift.ranking.graph import LinkGraph
from websift.ranking.monte_carlo import TopError, monte_carlo_pagerank, top_page_error
from websift.ranking.pagerank import pagerank, restricted_pagerank
from websift.ranking.ranks import Ranks
from websift.ranking.store_graph import load_store_arrays
from websift.ranking.structure import degree_distribution, levels, strong_components
from websift.store.views import StoreReader


@dataclass
class GraphStats:
    pages: int
    links: int
    dangling: int
    in_degree: tuple[np.ndarray, np.ndarray]  # (degree, number of pages)
    out_degree: tuple[np.ndarray, np.ndarray]
    scc_count: int
    giant_scc: int
    roots: int
    level_counts: dict[int, int]  # level -> pages; -1: unreachable from the roots
    pagerank: np.ndarray
    iterations: int
    restricted: dict[str, Any] = field(default_factory=dict)
    monte_carlo: TopError | None = None

    def summary(self) -> dict[str, Any]:
        def dist(d: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
            deg, cnt = d
            total = cnt.sum()
            if not total:
                return {"mean": 0.0, "max": 0, "zero": 0}
            cdf = np.cumsum(cnt) / total
            pct = {f"p{q}": int(deg[np.searchsorted(cdf, q / 100)]) for q in (50, 90, 99)}
            return {"mean": round(float((deg * cnt).sum() / total), 3), **pct,
                    "max": int(deg.max()), "zero": int(cnt[deg == 0].sum()),
                    "distribution": [[int(a), int(b)] for a, b in zip(deg, cnt, strict=True)]}

        out: dict[str, Any] = {
            "pages": self.pages,
            "links": self.links,
            "dangling": self.dangling,
            "in_degree": dist(self.in_degree),
            "out_degree": dist(self.out_degree),
            "scc_count": self.scc_count,
            "giant_scc": self.giant_scc,
            "giant_scc_fraction": round(self.giant_scc / self.pages, 4) if self.pages else 0.0,
            "roots": self.roots,
            "levels": {str(k): v for k, v in sorted(self.level_counts.items())},
            "pagerank_iterations": self.iterations,
        }
        if self.restricted:
            out["restricted_pagerank"] = self.restricted
        if self.monte_carlo is not None:
            mc = self.monte_carlo
            out["monte_carlo"] = {
                "top": mc.top,
                "mean_relative_error": round(mc.mean_relative_error, 4),
                "max_relative_error": round(mc.max_relative_error, 4),
                "top_overlap": round(mc.overlap, 4),
            }
        return out


def compare_restricted(
    graph: LinkGraph, level: np.ndarray, global_ranks: np.ndarray, max_level: int, top: int = 10
) -> dict[str, Any]:
    """Restricted PageRank over G^l against the global PageRank on the same pages."""
    restricted = restricted_pagerank(graph, level, max_level)
    inside = restricted.ranks > 0
    ref = np.where(inside, global_ranks, 0.0)
    ref = ref / ref.sum() if ref.sum() > 0 else ref
    k = min(top, int(inside.sum()))
    top_r = set(np.argsort(-restricted.ranks, kind="stable")[:k].tolist())
    top_g = set(np.argsort(-ref, kind="stable")[:k].tolist())
    return {
        "levels": max_level,
        "pages": int(inside.sum()),
        "iterations": restricted.iterations,
        "l1_vs_global": round(float(np.abs(restricted.ranks - ref).sum()), 6),
        f"top{k}_overlap": round(len(top_r & top_g) / k, 4) if k else 0.0,
    }


def graph_stats(
    data: DataDir,
    roots: list[str] | None = None,
    restricted_levels: int | None = settings.RESTRICTED_LEVELS,
    mc_walks: int = 0,
    rng: np.random.Generator | None = None,
) -> GraphStats:
    """Statistics of the crawl store's link graph (computed afresh from the store)."""
    with StoreReader.open(data.store_path) as store:
        arrays = load_store_arrays(store)
        root_ids = arrays.roots
        if roots:
            found = []
            for url in roots:
                uid = store.url_id(url)
                if uid is None:
                    raise GraphError(f"root {url} is not in the crawl store")
                found.append(uid)
            root_ids = np.asarray(found, dtype=np.int64)
    graph = arrays.graph
    if graph.num_pages == 0:
        raise GraphError("the crawl store has no pages; run 'websift crawl' first")
    present = graph.present
    comps = strong_components(graph)
    level = levels(graph, root_ids)
    lv, lc = np.unique(level[present], return_counts=True)
    result = pagerank(graph)
    stats = GraphStats(
        pages=graph.num_pages,
        links=graph.num_links,
        dangling=int(graph.dangling().sum()),
        in_degree=degree_distribution(graph.in_degree()[present]),
        out_degree=degree_distribution(graph.out_degree()[present]),
        scc_count=comps.count,
        giant_scc=comps.giant_size,
        roots=int(root_ids.size),
        level_counts={int(a): int(b) for a, b in zip(lv, lc, strict=True)},
        pagerank=result.ranks,
        iterations=result.iterations,
    )
    if restricted_levels is not None and root_ids.size:
        stats.restricted = compare_restricted(graph, level, result.ranks, restricted_levels)
    if mc_walks > 0:
        estimate = monte_carlo_pagerank(graph, walks_per_page=mc_walks, rng=rng)
        stats.monte_carlo = top_page_error(estimate, result.ranks, settings.MC_TOP_PAGES)
    return stats


def page_graph_info(
    data: DataDir, url_id: int, ranks: Ranks | None = None, max_links: int | None = None
) -> dict[str, Any]:
    """Everything the link graph says about one page (JSON-ready dict).

    ``ranks``: a snapshot already open (the API's); else the live generation is read, and the
    rank fields are None when there is none.  Raises GraphError for an unknown URL ID.
    """
    with StoreReader.open(data.store_path) as store:
        page = store.page(int(url_id))
        if page is None:
            raise GraphError(f"no page with URL ID {url_id} in the crawl store")
        # Links within the page itself are not edges of the graph (Web Graph Analyzer, sec. 2);
        # only the links shown are read (the most linked page has one per page of the crawl)
        limit = -1 if max_links is None else max_links
        ins = store.in_links(page.id, limit, skip_self=True)
        outs = store.out_links(page.id, limit, skip_self=True)
        # graph degrees (Definition 1): distinct pages, self-links and nofollow links left out
        in_degree, out_degree, self_links = store.link_degrees(page.id)
        urls = store.urls_of([s for s, _, _ in ins] + [d for d, _, _ in outs])
    if ranks is None:
        try:
            ranks = Ranks.open(data)
        except RanksMissing:
            ranks = None
    info: dict[str, Any] = {
        "url_id": page.id,
        "url": page.url,
        "status": page.status,
        "depth": page.depth,
        "in_degree": in_degree,
        "out_degree": out_degree,
        "self_links": self_links,
        "in_links": [
            {"url_id": s, "url": urls.get(s, ""), "anchor": a, "nofollow": nf}
            for s, a, nf in ins
        ],
        "out_links": [
            {"url_id": d, "url": urls.get(d, ""), "anchor": a, "nofollow": nf}
            for d, a, nf in outs
        ],
        "opic_store": page.importance,
        "ranks_generation": None,
        "level": None,
        "in_giant_scc": None,
        "pagerank": None,
        "opic": None,
        "site": None,
    }
    if ranks is not None and page.id < ranks.node_count:
        level = int(ranks.level[page.id])
        info.update(
            ranks_generation=ranks.generation,
            level=None if level < 0 else level,
            in_giant_scc=bool(ranks.giant_scc[page.id]),
            pagerank=float(ranks.pagerank[page.id]),
            opic=float(ranks.opic[page.id]),
            site=ranks.host_facts(page.id),
        )
    return info
