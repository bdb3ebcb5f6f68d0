"""Monte Carlo PageRank: the Web Graph Analyzer's Algorithm 2, vectorised over all walks.

"MC complete path stopping at dangling nodes": from every page start exactly ``m`` walks; a
walk moves along a uniformly chosen out-link with probability c and stops with probability
1 - c, or when it reaches a dangling page.  The estimate of pi_j is the number of visits to j
over the total number of visits (the second interpretation of formula (4)).  Its target is the
PageRank whose dangling pages jump uniformly, i.e. :func:`ranking.pagerank.pagerank` with the
``teleport`` policy and a uniform E.

All walks advance together: one step is a handful of numpy operations over the walks still
running, and the number of steps is that of the longest walk (about log(n m) / log(1/c)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from websift.ranking import settings
from websift.ranking.errors import GraphError
from websift.ranking.graph import LinkGraph


def monte_carlo_pagerank(
    graph: LinkGraph,
    damping: float = settings.DAMPING,
    walks_per_page: int = settings.MC_WALKS_PER_PAGE,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Algorithm 2's estimate of PageRank (float64, sums to 1 over present pages)."""
    if walks_per_page < 1:
        raise GraphError(f"walks per page must be at least 1, got {walks_per_page}")
    if not 0.0 < damping < 1.0:
        raise GraphError(f"damping must be in (0, 1), got {damping}")
    gen = rng if rng is not None else np.random.default_rng()
    n = graph.n
    out_deg = graph.out_degree()
    pages = np.flatnonzero(graph.present)
    if pages.size == 0:
        raise GraphError("the graph has no pages")
    position = np.repeat(pages, walks_per_page)
    visits = np.bincount(position, minlength=n).astype(np.float64)
    while position.size:
        deg = out_deg[position]
        going = (gen.random(position.size) < damping) & (deg > 0)
        position = position[going]
        deg = deg[going]
        choice = (gen.random(position.size) * deg).astype(np.int64)
        position = graph.indices[graph.indptr[position] + choice].astype(np.int64)
        visits += np.bincount(position, minlength=n)
    return visits / visits.sum()


@dataclass(frozen=True)
class TopError:
    """How far an estimate is from the reference on the reference's top pages."""

    top: int
    mean_relative_error: float  # mean over the top pages of |est - ref| / ref
    max_relative_error: float
    overlap: float  # fraction of the reference's top pages also in the estimate's top


def top_page_error(estimate: np.ndarray, reference: np.ndarray, top: int) -> TopError:
    """Relative error of ``estimate`` on the ``top`` pages of ``reference``."""
    k = max(1, min(top, int((reference > 0).sum())))
    ref_top = np.argsort(-reference, kind="stable")[:k]
    est_top = np.argsort(-estimate, kind="stable")[:k]
    rel = np.abs(estimate[ref_top] - reference[ref_top]) / reference[ref_top]
    overlap = len(np.intersect1d(ref_top, est_top)) / k
    return TopError(k, float(rel.mean()), float(rel.max()), float(overlap))
