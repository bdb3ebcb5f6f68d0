"""Benchmark: websift's PageRank against igraph (PRPACK) and networkx on the same graph.

    .venv/bin/python -m scripts.benchmarks.bench_pagerank               # 1M pages, 10M links
    .venv/bin/python -m scripts.benchmarks.bench_pagerank --pages 100000 --links 1000000
    .venv/bin/python -m scripts.benchmarks.bench_pagerank --store DATA  # a real crawl's link graph

The synthetic graph is web-like: hosts of power-law sizes with their pages in consecutive IDs,
most links (80%) within the host and aimed at a power law of its pages, the rest at a global
power law over all pages, 10% dangling pages; duplicates and self-links removed.

Every engine must land within L1 ``--accuracy`` (1e-9) of a reference solution.  The reference
is websift's power iteration run to a residual of ~1e-15; it is *checked*, not assumed: one more
application of the Google matrix moves it by r in L1, and since that map is a c-contraction the
reference is within r / (1 - c) of the true PageRank, which must be far below the accuracy.
websift stops at residual ``accuracy * (1 - c) / c``, which bounds its error by the accuracy;
igraph's PRPACK has its own fixed tolerance; networkx gets ``tol = that residual / n``.

Timed: websift from the CSR graph to the vector (transition matrix build included, as PRPACK's
preprocessing is in igraph's time); igraph's ``Graph.pagerank`` on a prebuilt igraph Graph;
networkx's ``pagerank`` on a prebuilt DiGraph.  networkx cannot hold a 10M-link graph in
reasonable memory (a DiGraph costs several hundred bytes per edge), so unless ``--networkx-full``
it runs, with websift, on a smaller graph from the same generator (``--networkx-pages``), and
its ratio is measured there, on the same input; its time per link is also extrapolated.

Memory: bytes per link = (the graph's CSR + the peak of what PageRank allocates, measured by
tracemalloc in an untimed run) / links.  Floor: the time to stream the bytes one iteration reads
and writes (matrix values, indices, row pointers, the two vectors) once with numpy
(``np.add.reduce``, best of 7, on one thread or on as many as websift's iteration uses).

The last line is ``vs_igraph=R vs_networkx=R floor_ratio=R bytes_per_link=B``, each ratio being
websift's time over the other's (below 1: websift is faster).
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from websift.ranking import settings
from websift.ranking.graph import LinkGraph, build_graph
from websift.ranking.pagerank import pagerank, power_iteration, transition_matrix

DAMPING = 0.85


def web_graph(pages: int, links: int, seed: int = 0, local: float = 0.8,
              dangling: float = 0.1) -> LinkGraph:
    """A web-like graph with about ``links`` distinct links (see the module docstring)."""
    rng = np.random.default_rng(seed)
    sizes = np.maximum(1, (rng.pareto(1.2, size=pages // 20 + 1) * 20).astype(np.int64))
    csum = np.cumsum(sizes)
    hosts = int(np.searchsorted(csum, pages)) + 1
    sizes = sizes[:hosts].copy()
    sizes[-1] -= int(csum[hosts - 1]) - pages
    host_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    host_of = np.repeat(np.arange(hosts), sizes)
    weight = rng.lognormal(0.0, 1.0, pages)
    weight[rng.random(pages) < dangling] = 0.0
    want = int(links * 1.15)  # duplicates and self-links are dropped below
    degree = rng.poisson(weight / weight.sum() * want)
    src = np.repeat(np.arange(pages, dtype=np.int64), degree)
    host = host_of[src]
    u = rng.random(src.size)
    is_local = rng.random(src.size) < local
    dst = np.empty(src.size, dtype=np.int64)
    dst[is_local] = host_start[host[is_local]] + (sizes[host[is_local]] * u[is_local] ** 2.5
                                                  ).astype(np.int64)
    popular = rng.permutation(pages)
    glob = ~is_local
    dst[glob] = popular[(pages * u[glob] ** 3.0).astype(np.int64)]
    graph = build_graph(src.astype(np.int32), dst.astype(np.int32), pages)
    if graph.num_links > links:  # trim to the requested count; rows stay sorted and distinct
        keep = np.zeros(graph.num_links, dtype=bool)
        keep[rng.permutation(graph.num_links)[:links]] = True
        rows = np.repeat(np.arange(pages, dtype=np.int32), graph.out_degree())[keep]
        indptr = np.zeros(pages + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=pages), out=indptr[1:])
        graph = LinkGraph(indptr=indptr, indices=graph.indices[keep], present=graph.present)
    return graph


def store_graph(path: Path) -> LinkGraph:
    from websift.core.datadir import DataDir
    from websift.ranking.store_graph import load_graph
    from websift.store.views import StoreReader

    data = DataDir.open(path)
    with StoreReader.open(data.store_path) as store:
        graph = load_graph(store)
    # Engines compare on the pages only: renumber away unused IDs (node 0).
    from websift.ranking.graph import subgraph

    sub, _ = subgraph(graph, graph.present)
    return sub


def edges(graph: LinkGraph) -> np.ndarray:
    src = np.repeat(np.arange(graph.n, dtype=np.int64), graph.out_degree())
    return np.column_stack([src, graph.indices.astype(np.int64)])


def google_step(matrix: Any, x: np.ndarray) -> np.ndarray:
    y = matrix @ x
    y += (1.0 - y.sum()) / len(x)
    return y


def reference(graph: LinkGraph) -> tuple[np.ndarray, float]:
    """High-precision PageRank and a proven bound on its L1 error."""
    result = pagerank(graph, damping=DAMPING, tol=1e-15, max_iter=2000)
    x = result.ranks
    matrix = transition_matrix(graph, DAMPING)
    moved = float(np.abs(google_step(matrix, x) - x).sum())
    return x, moved / (1.0 - DAMPING)


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def websift_run(graph: LinkGraph, tol: float) -> tuple[np.ndarray, int, float]:
    """(ranks, iterations, seconds spent iterating) from the CSR graph."""
    matrix = transition_matrix(graph, DAMPING)
    v = np.full(graph.n, 1.0 / graph.n)
    t = time.perf_counter()
    result = power_iteration(matrix, DAMPING, v, tol=tol)
    return result.ranks, result.iterations, time.perf_counter() - t


def stream_floor(nbytes: int, threads: int) -> float:
    """Best time to read ``nbytes`` once with numpy, on one thread or split over ``threads``
    (websift's iteration uses that many), whichever is faster: the bound a step could reach."""
    buf = np.ones(max(threads, nbytes // 8), dtype=np.uint64)
    parts = np.array_split(buf, threads)
    best = float("inf")
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in range(7):
            t = time.perf_counter()
            np.add.reduce(buf)
            best = min(best, time.perf_counter() - t)
            t = time.perf_counter()
            list(pool.map(np.add.reduce, parts))
            best = min(best, time.perf_counter() - t)
    return best


def peak_bytes(graph: LinkGraph, tol: float) -> int:
    gc.collect()
    tracemalloc.start()
    websift_run(graph, tol)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return graph.nbytes() + peak


def run_networkx(graph: LinkGraph, tol: float) -> tuple[float, np.ndarray]:
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(range(graph.n))
    g.add_edges_from(edges(graph).tolist())
    t = time.perf_counter()
    ranks = nx.pagerank(g, alpha=DAMPING, tol=tol / graph.n, max_iter=1000)
    elapsed = time.perf_counter() - t
    del g
    return elapsed, np.array([ranks[i] for i in range(graph.n)])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--links", type=int, default=10_000_000)
    ap.add_argument("--store", type=Path, default=None, metavar="DATA",
                    help="benchmark on the link graph of a crawl in this data directory")
    ap.add_argument("--accuracy", type=float, default=1e-9, help="required L1 distance")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per engine (median)")
    ap.add_argument("--networkx-pages", type=int, default=100_000)
    ap.add_argument("--networkx-full", action="store_true",
                    help="run networkx on the full graph (needs many GB for 10M links)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    tol = args.accuracy * (1 - DAMPING) / DAMPING

    t = time.perf_counter()
    if args.store is not None:
        graph = store_graph(args.store)
        label = f"crawl store {args.store}"
    else:
        graph = web_graph(args.pages, args.links, args.seed)
        label = "synthetic web-like graph"
    print(f"{label}: {graph.n} pages, {graph.num_links} links, "
          f"{int(graph.dangling().sum())} dangling ({time.perf_counter() - t:.1f} s to build)")

    ref, bound = reference(graph)
    print(f"reference: L1 error bound {bound:.2e} (one more step moves it by "
          f"{bound * (1 - DAMPING):.2e})")
    if bound > args.accuracy / 100:
        print("reference is not precise enough to judge the engines; stopping", file=sys.stderr)
        return 1

    runs: list[tuple[np.ndarray, int, float]] = []
    ws_time, _ = timed(lambda: runs.append(websift_run(graph, tol)), args.repeat)
    ws_ranks, iterations, _ = runs[-1]
    ws_err = float(np.abs(ws_ranks - ref).sum())
    per_iter = statistics.median(seconds / its for _, its, seconds in runs)
    matrix = transition_matrix(graph, DAMPING)
    streamed = (matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes
                + 2 * graph.n * 8)
    del matrix
    floor = stream_floor(streamed, settings.THREADS)
    peak = peak_bytes(graph, tol)
    print(f"websift: {ws_time:.3f} s, {iterations} iterations, L1 error {ws_err:.2e}; "
          f"{per_iter * 1e3:.2f} ms per iteration vs {floor * 1e3:.2f} ms to stream its "
          f"{streamed / 1e6:.0f} MB once; peak {peak / 1e6:.0f} MB "
          f"({peak / graph.num_links:.1f} bytes per link)")

    import igraph as ig

    t = time.perf_counter()
    ig_graph = ig.Graph(n=graph.n, edges=edges(graph), directed=True)
    ig_build = time.perf_counter() - t
    ig_time, ig_ranks = timed(lambda: np.array(ig_graph.pagerank(damping=DAMPING)), args.repeat)
    ig_err = float(np.abs(ig_ranks - ref).sum())
    ok = "" if ig_err <= args.accuracy else f" (MISSES the {args.accuracy:g} accuracy)"
    print(f"igraph PRPACK: {ig_time:.3f} s, L1 error {ig_err:.2e}{ok} "
          f"(igraph Graph built in {ig_build:.1f} s, not timed)")

    if args.networkx_full or graph.num_links <= 2_000_000:
        nx_graph, nx_label = graph, "same graph"
        nx_ws_time = ws_time
        nx_ref = ref
    else:
        scale = args.networkx_pages / graph.n
        nx_graph = web_graph(args.networkx_pages, int(graph.num_links * scale), args.seed + 1)
        nx_label = f"smaller graph of {nx_graph.n} pages, {nx_graph.num_links} links"
        nx_ref, nx_bound = reference(nx_graph)
        assert nx_bound < args.accuracy / 100
        nx_ws_time, _ = timed(lambda: websift_run(nx_graph, tol), args.repeat)
    nx_time, nx_ranks = run_networkx(nx_graph, tol)  # one run: it is slow
    nx_err = float(np.abs(nx_ranks - nx_ref).sum())
    per_link = nx_time / nx_graph.num_links
    print(f"networkx ({nx_label}): {nx_time:.3f} s, L1 error {nx_err:.2e}; websift there "
          f"{nx_ws_time:.3f} s; extrapolated to this graph: "
          f"{per_link * graph.num_links:.1f} s")

    vs_igraph = ws_time / ig_time
    vs_networkx = nx_ws_time / nx_time
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"process peak RSS {rss / 1e9:.2f} GB (all engines and graphs together)")
    print(f"goals: vs_igraph <= 0.5: {'yes' if vs_igraph <= 0.5 else 'no'}; "
          f"vs_networkx <= 0.05: {'yes' if vs_networkx <= 0.05 else 'no'}; "
          f"floor_ratio <= 3: {'yes' if per_iter / floor <= 3 else 'no'}; "
          f"bytes_per_link <= 24: {'yes' if peak / graph.num_links <= 24 else 'no'}")
    print(f"vs_igraph={vs_igraph:.3f} vs_networkx={vs_networkx:.4f} "
          f"floor_ratio={per_iter / floor:.2f} bytes_per_link={peak / graph.num_links:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
