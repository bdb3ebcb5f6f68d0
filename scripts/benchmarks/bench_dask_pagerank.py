"""Benchmark: PageRank on a Dask LocalCluster against the embedded engine, in the same run.

    .venv/bin/python -m scripts.benchmarks.bench_dask_pagerank  # 1M pages, 10M links
    .venv/bin/python -m scripts.benchmarks.bench_dask_pagerank --pages 100000 --links 1000000

The graph is scripts/benchmarks/bench_pagerank.py's web-like one.  It is measured at 1x and at 2x
its size (``--pages``/``--links`` times 1 and 2), each time:

- embedded: ``ranking.pagerank.pagerank`` from the CSR graph (transition matrix included), in
  this process, ``settings.THREADS`` threads; its memory is the graph's CSR plus the peak of
  what PageRank allocates (tracemalloc, an untimed run), as scripts/benchmarks/bench_pagerank.py
  counts it.
- dask: a LocalCluster of ``--workers`` processes of one thread each (started once).  Untimed:
  the links spilled into bucket files and the blocks built by the workers (reported apart, as
  "prepare").  Timed: loading the blocks with their weights, then the power iteration.  Memory:
  every worker's RSS sampled with psutil every 10 ms; "peak" is the highest sample, "growth"
  the peak less the worker's RSS before its blocks were loaded.

Both vectors must agree within L1 ``--accuracy`` (1e-9).  Bytes per link: embedded = its
memory / links; dask = the workers' growths added up / links.  The memory per worker at 10x is
projected from the two sizes, linearly: peak(10x) = peak(1x) + 9 (peak(2x) - peak(1x)).

The last line is ``dask_vs_embedded=R bytes_per_link=B embedded_bytes_per_link=E
worker_peak_mb=P projected_10x_worker_mb=Q`` (R: the Dask run's seconds over the embedded
run's, at 1x).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import tempfile
import threading
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil
from distributed import Client

from scripts.benchmarks.bench_pagerank import web_graph
from websift.ranking import cluster_pagerank, settings
from websift.ranking.dask_engine import cluster_graph, local_cluster
from websift.ranking.graph import LinkGraph
from websift.ranking.pagerank import pagerank


class RssSampler:
    """The highest RSS of each process, sampled every ``every`` seconds in a thread."""

    def __init__(self, pids: dict[str, int], every: float = 0.01) -> None:
        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.peak = {name: 0 for name in pids}
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> dict[str, int]:
        return {name: p.memory_info().rss for name, p in self.procs.items()}

    def _run(self) -> None:
        while not self._stop.is_set():
            for name, rss in self.rss().items():
                self.peak[name] = max(self.peak[name], rss)
            self._stop.wait(self.every)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for name, rss in self.rss().items():
            self.peak[name] = max(self.peak[name], rss)


@dataclass
class Measured:
    links: int
    embedded_s: float
    embedded_bytes: int
    embedded_iterations: int
    prepare_s: float
    dask_s: float
    dask_iterations: int
    blocks: int
    worker_peak: dict[str, int]
    worker_growth: dict[str, int]
    l1: float


def embedded_peak(graph: LinkGraph, tol: float) -> int:
    gc.collect()
    tracemalloc.start()
    pagerank(graph, tol=tol)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return graph.nbytes() + peak


def measure(client: Client, graph: LinkGraph, tol: float, scratch: Path) -> Measured:
    gc.collect()
    t = time.perf_counter()
    want = pagerank(graph, tol=tol)
    embedded_s = time.perf_counter() - t
    embedded_bytes = embedded_peak(graph, tol)

    src = np.repeat(np.arange(graph.n, dtype=np.int32), graph.out_degree())
    directory = Path(tempfile.mkdtemp(prefix="bench-dask-", dir=scratch))
    pids = {str(w): int(p) for w, p in client.run(os.getpid).items()}
    try:
        t = time.perf_counter()
        on_cluster = cluster_graph(client, [(src, graph.indices)], n=graph.n,
                                   present=graph.present, links=graph.num_links,
                                   directory=directory)
        prepare_s = time.perf_counter() - t
        del src
        client.run(gc.collect)
        sampler = RssSampler(pids)
        before = sampler.rss()
        with sampler:
            t = time.perf_counter()
            got = cluster_pagerank.pagerank(on_cluster, tol=tol)
            dask_s = time.perf_counter() - t
        on_cluster.release()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return Measured(
        links=graph.num_links, embedded_s=embedded_s, embedded_bytes=embedded_bytes,
        embedded_iterations=want.iterations, prepare_s=prepare_s, dask_s=dask_s,
        dask_iterations=got.iterations, blocks=len(on_cluster.blocks),
        worker_peak=sampler.peak,
        worker_growth={w: sampler.peak[w] - before[w] for w in pids},
        l1=float(np.abs(want.ranks - got.ranks).sum()),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--links", type=int, default=10_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--accuracy", type=float, default=1e-9, help="required L1 agreement")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()),
                    help="where the link blocks are written")
    args = ap.parse_args()
    tol = settings.TOLERANCE
    mb = 1e6

    results: dict[int, Measured] = {}
    with local_cluster(args.workers) as cluster, Client(cluster) as client:
        for scale in (1, 2):
            t = time.perf_counter()
            graph = web_graph(args.pages * scale, args.links * scale, args.seed)
            print(f"{scale}x: {graph.n} pages, {graph.num_links} links "
                  f"({time.perf_counter() - t:.1f} s to generate)", flush=True)
            m = measure(client, graph, tol, args.scratch)
            del graph
            results[scale] = m
            ok = "" if m.l1 <= args.accuracy else f" (MISSES the {args.accuracy:g} agreement)"
            growth = sum(m.worker_growth.values())
            print(f"  embedded: {m.embedded_s:.2f} s, {m.embedded_iterations} iterations, "
                  f"{m.embedded_bytes / mb:.0f} MB ({m.embedded_bytes / m.links:.1f} bytes/link)")
            print(f"  dask ({args.workers} workers, {m.blocks} blocks): {m.dask_s:.2f} s, "
                  f"{m.dask_iterations} iterations (+{m.prepare_s:.1f} s to spill and build "
                  f"the blocks); L1 vs embedded {m.l1:.1e}{ok}")
            for w in sorted(m.worker_peak):
                print(f"    worker {w}: peak RSS {m.worker_peak[w] / mb:.0f} MB "
                      f"(+{m.worker_growth[w] / mb:.0f} MB while ranking)")
            print(f"  dask: {growth / m.links:.1f} bytes/link over all workers; "
                  f"time ratio dask/embedded {m.dask_s / m.embedded_s:.2f}", flush=True)

    one, two = results[1], results[2]
    peak1 = max(one.worker_peak.values())
    peak2 = max(two.worker_peak.values())
    projected = peak1 + 9 * (peak2 - peak1)
    growth1 = sum(one.worker_growth.values()) / args.workers
    growth2 = sum(two.worker_growth.values()) / args.workers
    print(f"memory per worker: peak {peak1 / mb:.0f} MB at 1x, {peak2 / mb:.0f} MB at 2x -> "
          f"{projected / mb:.0f} MB projected at 10x ({args.links * 10:,} links); "
          f"growth {growth1 / mb:.0f} -> {growth2 / mb:.0f} MB -> "
          f"{(growth1 + 9 * (growth2 - growth1)) / mb:.0f} MB")
    ratio = one.dask_s / one.embedded_s
    bpl = sum(one.worker_growth.values()) / one.links
    print(f"dask_vs_embedded={ratio:.2f} bytes_per_link={bpl:.1f} "
          f"embedded_bytes_per_link={one.embedded_bytes / one.links:.1f} "
          f"worker_peak_mb={peak1 / mb:.0f} projected_10x_worker_mb={projected / mb:.0f}")
    return 0 if all(m.l1 <= args.accuracy for m in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
