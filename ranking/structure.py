"""Local and global structure of the link graph (Web Graph Analyzer sections 2 and 3.2-3.3).

- Levels (Definition 2, Algorithm 4): breadth-first search from one or several root pages.
  Here a root is at level 0 and a page's level is its minimal number of clicks from any root
  (Algorithm 4 numbers roots 1; add one to compare).  -1: not reachable.
- Strongly connected components (Definition 5): all of them at once with scipy's
  ``connected_components(connection='strong')`` (iterative, O(n + m)) rather than Algorithm 3's
  one-root intersection of forward and backward searches; the giant SCC is the largest.
- Degree distributions: how many pages have each in-/out-degree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from websift.ranking.errors import GraphError
from websift.ranking.graph import LinkGraph, gather_successors

UNREACHED = -1


def levels(graph: LinkGraph, roots: np.ndarray | list[int]) -> np.ndarray:
    """Level of every node from ``roots`` (int32; roots 0; unreachable -1), frontier by frontier."""
    level = np.full(graph.n, UNREACHED, dtype=np.int32)
    frontier = np.unique(np.asarray(roots, dtype=np.int64))
    if frontier.size and (frontier.min() < 0 or frontier.max() >= graph.n):
        raise GraphError(f"a root is outside the graph's nodes 0..{graph.n - 1}")
    depth = 0
    level[frontier] = 0
    while frontier.size:
        succ = gather_successors(graph.indptr, graph.indices, frontier)
        succ = np.unique(succ[level[succ] == UNREACHED])
        depth += 1
        level[succ] = depth
        frontier = succ.astype(np.int64)
    return level


@dataclass(frozen=True)
class Components:
    labels: np.ndarray  # int32 component label per node
    giant: int  # label of the largest component among present pages
    giant_size: int
    count: int  # number of components among present pages

    def in_giant(self) -> np.ndarray:
        return self.labels == self.giant


def strong_components(graph: LinkGraph) -> Components:
    """Strongly connected components of the present pages."""
    n = graph.n
    indptr = graph.indptr.astype(np.int32) if graph.num_links < 2**31 else graph.indptr
    adj = sp.csr_matrix(
        (np.ones(graph.num_links, dtype=np.int8), graph.indices, indptr), shape=(n, n)
    )
    _, labels = connected_components(adj, directed=True, connection="strong")
    labels = labels.astype(np.int32)
    sizes = np.bincount(labels[graph.present], minlength=int(labels.max(initial=0)) + 1)
    if sizes.sum() == 0:
        return Components(labels, -1, 0, 0)
    giant = int(np.argmax(sizes))
    return Components(labels, giant, int(sizes[giant]), int((sizes > 0).sum()))


def degree_distribution(degrees: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(degree, count)`` for every degree that occurs."""
    counts = np.bincount(np.asarray(degrees, dtype=np.int64))
    deg = np.flatnonzero(counts)
    return deg, counts[deg]
