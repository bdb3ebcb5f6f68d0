"""PageRank on a :class:`~ranking.cluster_graph.ClusterGraph`: the embedded model, step for step.

Same model, parameters and results as :mod:`ranking.pagerank` (read its docstring): damping c,
teleport E, dangling policies ``teleport`` (with an optional fixed dangling vector w, which
keeps topic vectors linear in E) and ``paper1998`` (remove dangling pages round by round,
converge on the rest, add them back for as many steps as there were rounds), stop when a plain
step moves the iterate by at most ``tol`` in L1, power extrapolation on the same schedule.
Only the mat-vec M x runs on the cluster; the O(n) vector work of each step (the lost mass,
its redistribution, the residual) runs here on whole vectors with the functions
:func:`ranking.pagerank.power_iteration` runs per block, and the stopping rule and power
extrapolation are the same :class:`~ranking.pagerank.IterationSchedule`, so both engines take
the same steps and agree to rounding.

paper1998's core is not renumbered as :func:`ranking.graph.subgraph` does: its matrix is the
same blocks loaded with the weights c / (out-degree within the core), 0 for removed pages, and
the rows of removed pages are zeroed after each mat-vec, so the iterate stays 0 off the core.
"""

from __future__ import annotations

import numpy as np

from websift.ranking import settings
from websift.ranking.cluster_graph import ClusterGraph
from websift.ranking.pagerank import (
    Dangling,
    IterationSchedule,
    PageRankResult,
    Progress,
    checked_inputs,
    complete_step,
    lost_mass,
    step_inputs,
    with_add_back,
)


def _weights(out_degree: np.ndarray, damping: float, alive: np.ndarray | None = None
             ) -> np.ndarray:
    weight = np.zeros(len(out_degree), dtype=np.float64)
    keep = out_degree > 0 if alive is None else (out_degree > 0) & alive
    np.divide(damping, out_degree, out=weight, where=keep)
    return weight


def use_transition(graph: ClusterGraph, damping: float) -> None:
    """Load the blocks as c P^T (a no-op when they already are)."""
    graph.use_weights(f"full c={damping!r}",
                      lambda: _weights(graph.out_degree(), damping))


def power_iteration(
    graph: ClusterGraph,
    damping: float,
    teleport: np.ndarray,
    *,
    dangling_vector: np.ndarray | None = None,
    start: np.ndarray | None = None,
    tol: float = settings.TOLERANCE,
    max_iter: int = settings.MAX_ITERATIONS,
    fixed_iterations: int | None = None,
    extrapolation: int = settings.EXTRAPOLATION_ORDER,
    rows: np.ndarray | None = None,
    progress: Progress | None = None,
) -> PageRankResult:
    """:func:`ranking.pagerank.power_iteration` with the blocks loaded on ``graph`` as M.

    ``rows`` (bool per page) keeps only those rows of M x: paper1998's core.
    """
    v, w, x = step_inputs(teleport, dangling_vector, start, np.float64)
    nxt = np.empty_like(x)
    schedule = IterationSchedule(x, damping, tol=tol, max_iter=max_iter,
                                 fixed_iterations=fixed_iterations, extrapolation=extrapolation,
                                 progress=progress)
    for _ in range(schedule.steps):
        y = graph.multiply(x)
        if rows is not None:
            y[~rows] = 0.0
        lost = lost_mass(float(y.sum(dtype=np.float64)), damping,
                         to_dangling_vector=w is not None)
        residual = complete_step(y, x, nxt, lost=lost, damping=damping, v=v, w=w)
        del y  # freed before the next mat-vec allocates its successor
        x, nxt = nxt, x
        if schedule.after_step(residual, x):
            break
    return schedule.result(x)


def pagerank(
    graph: ClusterGraph,
    *,
    damping: float = settings.DAMPING,
    teleport: np.ndarray | None = None,
    tol: float = settings.TOLERANCE,
    max_iter: int = settings.MAX_ITERATIONS,
    dangling: Dangling | str = Dangling.TELEPORT,
    dangling_vector: np.ndarray | None = None,
    start: np.ndarray | None = None,
    progress: Progress | None = None,
) -> PageRankResult:
    """:func:`ranking.pagerank.pagerank` on the cluster (same checks, same defaults)."""
    policy, e, w, x0 = checked_inputs(graph, damping=damping, tol=tol, dangling=dangling,
                                      teleport=teleport, dangling_vector=dangling_vector,
                                      start=start)
    if policy is Dangling.PAPER1998:
        return _pagerank_paper1998(graph, damping, e, tol=tol, max_iter=max_iter, start=x0,
                                   progress=progress)
    use_transition(graph, damping)
    return power_iteration(graph, damping, e, dangling_vector=w, start=x0, tol=tol,
                           max_iter=max_iter, progress=progress)


def remove_dangling(graph: ClusterGraph) -> tuple[np.ndarray, int, np.ndarray]:
    """Section 3.1 as :func:`ranking.pagerank.remove_dangling`: ``(alive, rounds, degree)``,
    ``degree`` being each surviving page's out-degree among the survivors.  Each round asks the
    blocks how many links every page has into the pages just removed."""
    remaining = graph.out_degree().astype(np.int64)
    alive = np.ones(graph.n, dtype=bool)
    frontier = remaining == 0
    rounds = 0
    while frontier.any():
        rounds += 1
        alive[frontier] = False
        lost = graph.predecessor_counts(frontier)
        remaining -= lost
        frontier = (lost > 0) & (remaining == 0) & alive
    return alive, rounds, remaining


def _pagerank_paper1998(
    graph: ClusterGraph,
    damping: float,
    teleport: np.ndarray,
    *,
    tol: float,
    max_iter: int,
    start: np.ndarray | None,
    progress: Progress | None,
) -> PageRankResult:
    use_transition(graph, damping)  # the removal rounds read the blocks' links
    alive, rounds, core_degree = remove_dangling(graph)
    x0 = teleport  # every page was removed (the graph is a DAG): start from E
    core_result = None
    if alive.any():
        core_e = np.where(alive, teleport, 0.0)
        if core_e.sum() <= 0:  # E puts nothing on the core: uniform over it instead
            core_e = alive.astype(np.float64)
        core_e = core_e / core_e.sum()
        core_start = None
        if start is not None and start[alive].sum() > 0:
            core_start = np.where(alive, start, 0.0)
            core_start /= core_start.sum()
        graph.use_weights(f"core c={damping!r}",
                          lambda: _weights(core_degree, damping, alive))
        core_result = power_iteration(graph, damping, core_e, start=core_start, tol=tol,
                                      max_iter=max_iter, rows=alive, progress=progress)
        x0 = core_result.ranks
    use_transition(graph, damping)

    def add_back(numbered: Progress | None) -> PageRankResult:
        return power_iteration(graph, damping, teleport, start=x0, tol=tol, max_iter=max_iter,
                               fixed_iterations=rounds, progress=numbered)

    return with_add_back(core_result, rounds, add_back, progress)
