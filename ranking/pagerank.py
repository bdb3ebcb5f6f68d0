"""PageRank by power iteration: pure functions over a :class:`~ranking.graph.LinkGraph`.

The model (seeds: pagerank-citation-ranking-excerpt.txt sections 2.4-2.7 and 3.1; slides
'Making conditions right'; Web Graph Analyzer Definition 4 and Algorithm 1):

    x_{k+1} = c P^T x_k + c (sum of x_k over dangling pages) w + (1 - c) E

with damping ``c``, P the row-normalised link matrix, E the teleport vector (any distribution:
the personalisation of section 6 / topic-sensitive PageRank) and w where dangling pages send
their rank.  Two dangling policies:

- ``teleport``: the Google matrix.  w = E by default, which is the 1998 paper's section 2.6 loop
  (``R <- A R; d <- |R_i| - |R_{i+1}|; R += d E``).  Give ``dangling_vector`` to fix w
  independently of E: then the solution is *linear* in E, so a mix of topic vectors equals the
  PageRank of the mixed teleport vector (exact personalisation).
- ``paper1998``: section 2.7 / 3.1.  Remove dangling pages iteratively (removing some makes
  others dangling), compute PageRank on what remains, add them back and iterate on the whole
  graph as many times as rounds were needed to remove them, with the section 2.6 loop.

Stopping: the L1 distance between successive iterates (the residual, recorded per iteration)
falls to ``tol``.  Since the iteration is a c-contraction in L1, the distance to the fixpoint
is then at most ``tol * c / (1 - c)``.

Speed: one scipy CSR mat-vec per iteration over P^T with the damping folded into its values
(32-bit indices, float64 or float32 values: 12 or 8 bytes per link), plus O(n) vector work, cut
into row blocks that ``settings.THREADS`` threads share (scipy's mat-vec and numpy release the
GIL); power extrapolation every few steps removes the slowest error components (hosts closed on
themselves), about a third fewer steps on a web-like graph.  Not used, measured on 10M links:
float32 (no faster: the mat-vec is bound by the latency of its random reads of x, not by bytes),
a pattern-only matrix (scipy's mat-vec casts int8 values to float64 on every call, 80 MB each),
the out-link CSR used as the CSC of c P^T (no transpose to build, 0.1 s less, but its mat-vec
scatters into full-length products and got slower, not faster, on two threads).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from websift.ranking import settings
from websift.ranking.errors import GraphError
from websift.ranking.graph import LinkGraph, gather_successors, in_csr, subgraph


class Dangling(StrEnum):
    TELEPORT = "teleport"
    PAPER1998 = "paper1998"


@dataclass
class PageRankResult:
    ranks: np.ndarray  # float64, sums to 1
    residuals: list[float] = field(default_factory=list)  # L1 distance per iteration
    converged: bool = False
    removal_rounds: int = 0  # paper1998: rounds of dangling-page removal (= add-back iterations)

    @property
    def iterations(self) -> int:
        return len(self.residuals)


Progress = Callable[[int, float], None]


class Pages(Protocol):
    """What the teleport vector and the argument checks need of a graph: a
    :class:`~ranking.graph.LinkGraph` or the Dask engine's ``ClusterGraph``."""

    @property
    def n(self) -> int: ...

    @property
    def present(self) -> np.ndarray: ...


def uniform_teleport(graph: Pages) -> np.ndarray:
    """E uniform over the present pages (node 0 of a store graph gets nothing)."""
    e = graph.present.astype(np.float64)
    total = e.sum()
    if total == 0:
        raise GraphError("the graph has no pages")
    return e / total


def transition_matrix(graph: LinkGraph, damping: float, dtype: type = np.float64) -> sp.csr_matrix:
    """c P^T as CSR: row j holds c / out(i) for each link i -> j (on a weighted graph
    c * weight(i -> j) / (sum of i's link weights))."""
    if graph.weights is not None:
        return _weighted_transition(graph, damping, dtype)
    out_deg = graph.out_degree()
    weight = np.zeros(graph.n, dtype=np.float64)
    np.divide(damping, out_deg, out=weight, where=out_deg > 0)
    return in_csr(graph, weight.astype(dtype))


def _weighted_transition(graph: LinkGraph, damping: float, dtype: type) -> sp.csr_matrix:
    """c P^T of a weighted graph (small ones: the host graph), by scipy's transpose."""
    weights = np.asarray(graph.weights, dtype=np.float64)
    if weights.shape != graph.indices.shape or not np.all(np.isfinite(weights)) or (
            weights <= 0).any():
        raise GraphError("link weights must be positive, finite, one per link")
    total = graph.out_weight()
    rows = np.repeat(np.arange(graph.n, dtype=np.int64), graph.out_degree())
    values = (damping * weights / total[rows]).astype(dtype)
    out = sp.csr_matrix((values, graph.indices, graph.indptr), shape=(graph.n, graph.n))
    return out.transpose().tocsr()


def check_distribution(vec: np.ndarray, n: int, what: str) -> np.ndarray:
    """``vec`` as a probability distribution over ``n`` nodes (normalised to sum 1)."""
    v = np.asarray(vec, dtype=np.float64)
    if v.shape != (n,):
        raise GraphError(f"{what} has shape {v.shape}, expected ({n},)")
    if not np.all(np.isfinite(v)) or (v < 0).any():
        raise GraphError(f"{what} must be finite and non-negative")
    total = v.sum()
    if total <= 0:
        raise GraphError(f"{what} is all zeros")
    return v / total


def checked_inputs(
    graph: Pages,
    *,
    damping: float,
    tol: float,
    dangling: Dangling | str,
    teleport: np.ndarray | None,
    dangling_vector: np.ndarray | None,
    start: np.ndarray | None,
) -> tuple[Dangling, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Both engines' ``pagerank`` checks: ``(policy, E, w, start)``, the vectors as
    distributions, E uniform over the present pages by default."""
    if not 0.0 < damping <= 1.0:
        raise GraphError(f"damping must be in (0, 1], got {damping}")
    if tol <= 0:
        raise GraphError(f"tolerance must be positive, got {tol}")
    policy = Dangling(dangling)
    n = graph.n
    e = uniform_teleport(graph) if teleport is None else check_distribution(teleport, n, "teleport")
    w = None if dangling_vector is None else check_distribution(dangling_vector, n, "dangling vector")
    x0 = None if start is None else check_distribution(start, n, "start vector")
    return policy, e, w, x0


# The pieces of a power-iteration step that do not depend on where M x is computed: the
# embedded loop below runs them per row block in threads, ranking.cluster_pagerank on whole
# vectors around the Dask blocks' mat-vec; both take the same steps and agree to rounding.


def step_inputs(
    teleport: np.ndarray, dangling_vector: np.ndarray | None, start: np.ndarray | None,
    dtype: np.dtype | type,
) -> tuple[np.ndarray | float, np.ndarray | None, np.ndarray]:
    """``(v, w, x)``: E as each step adds it, w, and the first iterate (a copy, sum 1)."""
    # A uniform E is added as a scalar: one pass less over memory per iteration.
    uniform = bool(teleport.size) and bool(np.all(teleport == teleport[0]))
    v: np.ndarray | float = float(teleport[0]) if uniform else teleport.astype(dtype, copy=False)
    w = None if dangling_vector is None else dangling_vector.astype(dtype, copy=False)
    x = (teleport if start is None else start).astype(dtype, copy=True)
    x /= x.sum()
    return v, w, x


def lost_mass(total: float, damping: float, *, to_dangling_vector: bool) -> float:
    """From ``total`` = sum(M x) with |x| = 1: without a dangling vector w, the mass M x lost,
    c * (dangling rank) + 1 - c, all of which goes to E; with w, the dangling rank itself, as
    sum(M x) = c (1 - it) (with c = 0 nothing reaches w whatever it is)."""
    return 1.0 - total / (damping if to_dangling_vector and damping else 1.0)


def complete_step(
    y: np.ndarray, x: np.ndarray, out: np.ndarray, *, lost: float, damping: float,
    v: np.ndarray | float, w: np.ndarray | None,
) -> float:
    """``out = y + the lost mass`` (y = M x, ``lost`` from :func:`lost_mass`; to E, or c lost
    to w and 1 - c to E); returns the residual |out - x| in L1.  ``y`` is overwritten.  Works
    on whole vectors or on one row block of each (v and w sliced alike)."""
    if w is None:
        # Adding the lost mass brings |x'| back to 1 whatever rounding did to |x|, so no
        # separate renormalisation pass is needed.
        np.add(y, lost * v, out=out)
    else:
        np.add(y, damping * lost * w, out=out)
        out += (1.0 - damping) * v
    np.subtract(out, x, out=y)
    np.abs(y, out=y)
    return float(y.sum(dtype=np.float64))


class IterationSchedule:
    """When a power iteration stops, and when it extrapolates; the residuals and the progress.

    The loop runs up to ``steps`` steps and calls :meth:`after_step` after each, with the new
    iterate; :meth:`result` then gives the ranks.  Stopping: a step that moves the iterate by
    at most ``tol`` in L1; ``fixed_iterations`` runs exactly that many steps instead (the
    paper1998 add-back), which counts as converged.

    Power extrapolation (Haveliwala, Kamvar, Klein, Manning, Golub 2003, section 3): the slowest
    error components have eigenvalues of modulus c (pages whose links never leave a set: a
    host closed on itself) or just below.  Every ``settings.EXTRAPOLATION_EVERY`` steps from step
    ``settings.EXTRAPOLATION_START``, with d = ``extrapolation``, the iterate x_k is replaced by
    (x_k - L x_{k-d}) / (1 - L) where L = min(c^d, r_k / r_{k-d}) estimates lambda^d from the
    residuals; this removes the components with lambda^d = L, keeps |x| = 1, and multiplies any
    other component by |lambda^d - L| / (1 - L) <= 2 c^d / (1 - c^d) (1.2 for d = 6), while the
    EVERY plain steps of a cycle shrink it by c^EVERY (0.14 for 12): every component still
    shrinks over each cycle.
    The stopping test is unaffected: it is applied to a plain step's output, whose distance to
    the fixpoint is at most residual * c / (1 - c) however its input was obtained.  0 turns it
    off; ``fixed_iterations`` runs never extrapolate.
    """

    def __init__(
        self,
        x: np.ndarray,
        damping: float,
        *,
        tol: float,
        max_iter: int,
        fixed_iterations: int | None,
        extrapolation: int,
        progress: Progress | None,
    ) -> None:
        self.steps = max_iter if fixed_iterations is None else fixed_iterations  # at most
        self.residuals: list[float] = []
        self.converged = False
        self._damping = damping
        self._tol = tol
        self._fixed = fixed_iterations is not None
        self._progress = progress
        self._order = 0 if self._fixed else extrapolation
        self._snapshot = np.empty_like(x) if self._order else None  # x_{k-d}
        self._snapshot_at = -1  # its step, -1: none kept
        self._snapshot_residual = 0.0

    def after_step(self, residual: float, x: np.ndarray) -> bool:
        """Record a step that moved the iterate by ``residual`` to ``x``; True: stop here.
        ``x`` may be extrapolated in place."""
        self.residuals.append(residual)
        step = len(self.residuals)
        if self._progress is not None:
            self._progress(step, residual)
        if not self._fixed and residual <= self._tol:
            self.converged = True
            return True
        snapshot = self._snapshot
        if snapshot is None:
            return False
        if self._snapshot_at >= 0 and step - self._snapshot_at == self._order:
            ratio = min(self._damping**self._order, residual / self._snapshot_residual)
            snapshot *= ratio
            x -= snapshot
            x /= 1.0 - ratio
            self._snapshot_at = -1
        elif (step >= settings.EXTRAPOLATION_START
              and (step - settings.EXTRAPOLATION_START) % settings.EXTRAPOLATION_EVERY == 0
              and self._snapshot_at < 0 and residual > 0):
            np.copyto(snapshot, x)
            self._snapshot_at, self._snapshot_residual = step, residual
        return False

    def result(self, x: np.ndarray) -> PageRankResult:
        """The ranks from the last iterate ``x`` (float64, sum 1) with the steps' record."""
        ranks = x.astype(np.float64, copy=False)
        return PageRankResult(ranks=ranks / ranks.sum(), residuals=self.residuals,
                              converged=self.converged or self._fixed)


def power_iteration(
    matrix: sp.csr_matrix,
    damping: float,
    teleport: np.ndarray,
    *,
    dangling_vector: np.ndarray | None = None,
    start: np.ndarray | None = None,
    tol: float = settings.TOLERANCE,
    max_iter: int = settings.MAX_ITERATIONS,
    fixed_iterations: int | None = None,
    extrapolation: int = settings.EXTRAPOLATION_ORDER,
    threads: int = settings.THREADS,
    progress: Progress | None = None,
) -> PageRankResult:
    """Iterate ``x <- M x + (lost mass) redistributed`` with M = c P^T already built.

    Mass lost in M x is c * (dangling rank) + (1 - c); it goes to E (section 2.6), or, with
    ``dangling_vector`` w, c * dangling to w and (1 - c) to E.  ``fixed_iterations`` runs exactly
    that many steps (the paper1998 add-back) instead of iterating to ``tol``; stopping and power
    extrapolation (order ``extrapolation``, 0: off) are :class:`IterationSchedule`'s.

    The rows of M are cut into ``threads`` blocks of about equal link counts; each step runs the
    blocks' mat-vecs (scipy's releases the GIL) and their vector work in parallel, in two phases:
    (1) y_b = M_b x and its sum, (2) once the lost mass is known, x'_b = y_b + lost mass share and
    the block's L1 residual.  Every row is summed in the same order whatever the block count.
    """
    dtype = matrix.dtype
    v, w, x = step_inputs(teleport, dangling_vector, start, dtype)
    nxt = np.empty_like(x)
    threads = max(1, threads)
    blocks = row_blocks(matrix, threads * settings.BLOCKS_PER_THREAD)
    helpers = min(threads, len(blocks)) - 1
    empty = np.empty(0, dtype=dtype)
    partial: list[np.ndarray] = [empty] * len(blocks)
    lost = 0.0  # this step's, from phase 1's sums: phase 2 reads it

    def multiply(b: int) -> float:
        partial[b] = blocks[b][2] @ x
        return float(partial[b].sum(dtype=np.float64))

    def redistribute(b: int) -> float:
        lo, hi, _ = blocks[b]
        residual = complete_step(partial[b], x[lo:hi], nxt[lo:hi], lost=lost, damping=damping,
                                 v=v if isinstance(v, float) else v[lo:hi],
                                 w=None if w is None else w[lo:hi])
        partial[b] = empty  # freed before the next mat-vec allocates its successor
        return residual

    schedule = IterationSchedule(x, damping, tol=tol, max_iter=max_iter,
                                 fixed_iterations=fixed_iterations, extrapolation=extrapolation,
                                 progress=progress)
    with ThreadPoolExecutor(max_workers=max(1, helpers)) as pool:

        def each(phase: Callable[[int], float]) -> float:
            # The calling thread and the helpers take blocks from one counter, so a thread the
            # OS has descheduled holds up at most one block; sums are added in block order.
            out = [0.0] * len(blocks)
            counter = itertools.count()  # next() on it is atomic under the GIL

            def drain() -> None:
                while (b := next(counter)) < len(blocks):
                    out[b] = phase(b)

            others = [pool.submit(drain) for _ in range(helpers)]
            drain()
            for f in others:
                f.result()
            return sum(out)

        for _ in range(schedule.steps):
            lost = lost_mass(each(multiply), damping, to_dangling_vector=w is not None)
            residual = each(redistribute)
            x, nxt = nxt, x
            if schedule.after_step(residual, x):
                break
    return schedule.result(x)


def row_blocks(matrix: sp.csr_matrix, parts: int) -> list[tuple[int, int, sp.csr_matrix]]:
    """``(lo, hi, rows lo..hi-1 of matrix)``: at most ``parts`` views of about equal link counts,
    none with fewer than ``settings.LINKS_PER_THREAD`` links (threads cost more than they save
    on small graphs)."""
    n_rows, n_cols = matrix.shape
    indptr = matrix.indptr
    parts = max(1, min(parts, matrix.nnz // settings.LINKS_PER_THREAD))
    targets = (np.arange(parts, dtype=np.int64) * matrix.nnz // parts).astype(indptr.dtype)
    cuts = np.searchsorted(indptr, targets, side="right") - 1
    bounds = sorted({0, *(int(c) for c in cuts[1:]), n_rows})
    blocks = []
    for lo, hi in itertools.pairwise(bounds):
        a, b = int(indptr[lo]), int(indptr[hi])
        # The constructor would copy a slice smaller than half its base (scipy's prune), so
        # the block is made empty and handed its views: no link's data is copied.
        view = sp.csr_matrix((hi - lo, n_cols), dtype=matrix.dtype)
        view.data = matrix.data[a:b]
        view.indices = matrix.indices[a:b]
        view.indptr = indptr[lo : hi + 1] - indptr[lo]
        blocks.append((lo, hi, view))
    return blocks


def pagerank(
    graph: LinkGraph,
    *,
    damping: float = settings.DAMPING,
    teleport: np.ndarray | None = None,
    tol: float = settings.TOLERANCE,
    max_iter: int = settings.MAX_ITERATIONS,
    dangling: Dangling | str = Dangling.TELEPORT,
    dangling_vector: np.ndarray | None = None,
    start: np.ndarray | None = None,
    dtype: type = np.float64,
    progress: Progress | None = None,
) -> PageRankResult:
    """PageRank of ``graph`` (see the module docstring for the model and the policies).

    ``teleport`` E and ``dangling_vector`` w are normalised to sum 1; E defaults to uniform
    over present pages.  ``start`` warm-starts the iteration (e.g. a topic vector from the
    global one).  ``dtype`` float32 halves the matrix values' memory at float32 precision.
    """
    policy, e, w, x0 = checked_inputs(graph, damping=damping, tol=tol, dangling=dangling,
                                      teleport=teleport, dangling_vector=dangling_vector,
                                      start=start)
    if policy is Dangling.PAPER1998:
        return _pagerank_paper1998(graph, damping, e, tol=tol, max_iter=max_iter, start=x0,
                                   dtype=dtype, progress=progress)
    matrix = transition_matrix(graph, damping, dtype)
    return power_iteration(matrix, damping, e, dangling_vector=w, start=x0, tol=tol,
                           max_iter=max_iter, progress=progress)


def remove_dangling(graph: LinkGraph) -> tuple[np.ndarray, int]:
    """Section 3.1: remove dangling pages until none is left.

    Returns ``(alive, rounds)``: the mask of pages that survive and how many removal rounds it
    took (removing a page may leave a page whose links all pointed to removed pages dangling).
    O(n + m): each round only visits the in-links of the pages it removes.
    """
    remaining = graph.out_degree().copy()
    alive = np.ones(graph.n, dtype=bool)
    transposed = in_csr(graph)
    t_indptr, t_indices = transposed.indptr, transposed.indices
    frontier = np.flatnonzero(remaining == 0)
    rounds = 0
    while frontier.size:
        rounds += 1
        alive[frontier] = False
        parents = gather_successors(t_indptr, t_indices, frontier)
        np.subtract.at(remaining, parents, 1)
        touched = np.unique(parents)
        frontier = touched[(remaining[touched] == 0) & alive[touched]]
    return alive, rounds


def _pagerank_paper1998(
    graph: LinkGraph,
    damping: float,
    teleport: np.ndarray,
    *,
    tol: float,
    max_iter: int,
    start: np.ndarray | None,
    dtype: type,
    progress: Progress | None,
) -> PageRankResult:
    alive, rounds = remove_dangling(graph)
    x0 = teleport  # every page was removed (the graph is a DAG): start from E
    core_result = None
    if alive.any():
        core, ids = subgraph(graph, alive)
        core_e = teleport[ids]
        if core_e.sum() <= 0:  # E puts nothing on the core: uniform over it instead
            core_e = np.ones(len(ids))
        core_e = core_e / core_e.sum()
        core_start = None
        if start is not None and start[ids].sum() > 0:
            core_start = start[ids] / start[ids].sum()
        core_matrix = transition_matrix(core, damping, dtype)
        core_result = power_iteration(
            core_matrix, damping, core_e, start=core_start, tol=tol, max_iter=max_iter,
            progress=progress,
        )
        del core_matrix
        x0 = np.zeros(graph.n, dtype=np.float64)
        x0[ids] = core_result.ranks
    matrix = transition_matrix(graph, damping, dtype)

    def add_back(numbered: Progress | None) -> PageRankResult:
        return power_iteration(matrix, damping, teleport, start=x0, tol=tol, max_iter=max_iter,
                               fixed_iterations=rounds, progress=numbered)

    return with_add_back(core_result, rounds, add_back, progress)


def with_add_back(
    core: PageRankResult | None,
    rounds: int,
    add_back: Callable[[Progress | None], PageRankResult],
    progress: Progress | None,
) -> PageRankResult:
    """paper1998's result (both engines): the ``core`` PageRank's steps (None: every page was
    removed), then ``add_back``'s ``rounds`` plain steps on the whole graph, whose ranks it is;
    ``add_back`` is handed ``progress`` numbering its steps after the core's."""
    residuals = [] if core is None else core.residuals
    offset = len(residuals)

    def numbered(k: int, r: float) -> None:
        if progress is not None:
            progress(offset + k, r)

    back = add_back(numbered)
    return PageRankResult(
        ranks=back.ranks,
        residuals=residuals + back.residuals,
        converged=True if core is None else core.converged,
        removal_rounds=rounds,
    )


def restricted_pagerank(
    graph: LinkGraph,
    level: np.ndarray,
    max_level: int,
    *,
    damping: float = settings.DAMPING,
    tol: float = settings.TOLERANCE,
) -> PageRankResult:
    """Web Graph Analyzer section 3.3: PageRank of G^l, the pages at level <= ``max_level``.

    ``level`` comes from :func:`ranking.levels.levels` (-1: unreachable).  Pages outside G^l get 0;
    the teleport is uniform over G^l.
    """
    keep = (level >= 0) & (level <= max_level) & graph.present
    if not keep.any():
        raise GraphError(f"no page within {max_level} levels of the roots")
    sub, ids = subgraph(graph, keep)
    result = pagerank(sub, damping=damping, tol=tol)
    full = np.zeros(graph.n, dtype=np.float64)
    full[ids] = result.ranks
    result.ranks = full
    return result
