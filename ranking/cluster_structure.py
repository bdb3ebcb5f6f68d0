"""Levels and the giant SCC on a :class:`~ranking.cluster_graph.ClusterGraph`.

The ranks generation holds both (:mod:`ranking.structure` computes them in one process), so
the Dask engine computes them where the links are, one frontier per call:

- Levels: breadth-first search from the roots, as :func:`ranking.structure.levels`: each step
  asks the blocks which pages the frontier links to.  Identical results.
- Giant SCC: forward-backward search (Fleischer, Hendrickson and Pinar 2000; Web Graph
  Analyzer Algorithm 3 is its one-pivot form) instead of scipy's all-components pass, which
  needs the whole graph in one place.  The pages reached from a pivot both forwards and
  backwards within a set are the pivot's SCC, and every other SCC of the set lies wholly in one
  of the three rests (reached forwards only, backwards only, neither); a rest is searched again
  only if it is larger than the largest SCC found so far, so the result is the largest SCC,
  not a guess.  Pages with no link from or no link into the set are SCCs of one page and are
  trimmed first; the pivot is the page of the set with the highest ``priority`` (the global
  PageRank), nearly always in the giant SCC of a web graph, so one search usually settles it.
  When two SCCs tie for largest, the one found first is taken (the embedded engine takes
  scipy's lowest label): only then can the engines differ.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from websift.ranking import settings
from websift.ranking.cluster_graph import ClusterGraph
from websift.ranking.errors import GraphError, RankingError
from websift.ranking.structure import UNREACHED


def levels(graph: ClusterGraph, roots: np.ndarray | list[int]) -> np.ndarray:
    """Level of every node from ``roots`` (int32; roots 0; unreachable -1)."""
    level = np.full(graph.n, UNREACHED, dtype=np.int32)
    ids = np.unique(np.asarray(roots, dtype=np.int64))
    if ids.size and (ids.min() < 0 or ids.max() >= graph.n):
        raise GraphError(f"a root is outside the graph's nodes 0..{graph.n - 1}")
    frontier = np.zeros(graph.n, dtype=bool)
    frontier[ids] = True
    level[frontier] = 0
    depth = 0
    while frontier.any():
        frontier = graph.successors(frontier) & (level == UNREACHED)
        depth += 1
        level[frontier] = depth
    return level


def _reach(seed: np.ndarray, within: np.ndarray,
           step: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    reached = seed.copy()
    frontier = seed
    while frontier.any():
        frontier = step(frontier) & within & ~reached
        reached |= frontier
    return reached


def _trim(graph: ClusterGraph, part: np.ndarray) -> np.ndarray:
    """``part`` less, round after round, its pages with no link from or no link into it."""
    size = int(part.sum())
    while size:
        part = part & graph.successors(part) & graph.predecessors(part)
        smaller = int(part.sum())
        if smaller == size:
            break
        size = smaller
    return part


def giant_component(graph: ClusterGraph, priority: np.ndarray) -> tuple[np.ndarray, int]:
    """``(mask, size)`` of the largest strongly connected component of the present pages."""
    best = np.zeros(graph.n, dtype=bool)
    best_size = 0
    pending = [graph.present.copy()]
    pivots = 0
    while pending:
        part = pending.pop()
        if int(part.sum()) <= best_size:
            continue
        part = _trim(graph, part)
        if int(part.sum()) <= best_size:
            continue
        pivots += 1
        if pivots > settings.DASK_SCC_MAX_PIVOTS:
            raise RankingError(
                f"the giant SCC was not settled in {settings.DASK_SCC_MAX_PIVOTS} "
                "forward-backward searches (no component stands out); use the embedded engine")
        seed = np.zeros(graph.n, dtype=bool)
        seed[int(np.argmax(np.where(part, priority, -np.inf)))] = True
        forward = _reach(seed, part, graph.successors)
        backward = _reach(seed, part, graph.predecessors)
        scc = forward & backward
        size = int(scc.sum())
        if size > best_size:
            best, best_size = scc, size
        for rest in (forward & ~scc, backward & ~scc, part & ~(forward | backward)):
            if int(rest.sum()) > best_size:
                pending.append(rest)
    if best_size == 0 and graph.present.any():  # no cycle at all: every SCC is one page
        best[int(np.argmax(np.where(graph.present, priority, -np.inf)))] = True
        best_size = 1
    return best, best_size
