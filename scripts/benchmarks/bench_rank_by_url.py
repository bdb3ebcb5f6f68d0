"""Benchmark: ``websift rank --shard`` over a partitioned crawl's shards (stores numbering URLs
each their own way), the Dask engine against the embedded one, in the same run.

    .venv/bin/python -m scripts.benchmarks.bench_rank_by_url                  # 4 x 10,000 pages
    .venv/bin/python -m scripts.benchmarks.bench_rank_by_url --pages 5000 --shards 2

``--shards`` stores are written as a partitioned crawl leaves them: each fetched the pages of
its own hosts (host h belongs to shard h mod shards), each page linking to ``--links`` pages
drawn among all (other shards' pages are in its store as discovered URLs only).  Then, on the
same stores, timed with the reading, the join, the ranking and the writing:

- embedded: :func:`ranking.rank_by_url.run_rank_by_url`, in this process;
- dask: :meth:`ranking.dask_engine.DaskEngine.run_by_url` on a LocalCluster of ``--workers``
  processes started beforehand (not timed).

Each shard's PageRank vector must agree within L1 ``--accuracy`` (1e-9) between the two.  The
last line is ``dask_vs_embedded=R l1=E`` (R: the Dask run's seconds over the embedded run's).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from websift.core.datadir import DataDir
from websift.ranking.dask_engine import DaskEngine, local_cluster
from websift.ranking.rank_by_url import run_rank_by_url
from websift.ranking.ranks import Ranks
from websift.store.crawl_store import CrawlStore
from websift.store.schema import Link

PAGES_PER_HOST = 100
BATCH = 5_000  # pages per transaction while building


def url_of(i: int) -> str:
    return f"http://site{i // PAGES_PER_HOST}.example/p/{i}"


def build_shards(root: Path, pages: int, shards: int, links: int, seed: int) -> list[DataDir]:
    rng = np.random.default_rng(seed)
    owner = (np.arange(pages) // PAGES_PER_HOST) % shards
    out = []
    for s in range(shards):
        data = DataDir.create(root / f"shard{s}")
        mine = rng.permutation(np.flatnonzero(owner == s))
        with CrawlStore.open(data.store_path) as store:
            for a in range(0, mine.size, BATCH):
                with store.transaction():
                    for i in mine[a : a + BATCH].tolist():
                        uid = store.add_url(url_of(i), depth=0 if i % 1000 == 0 else 1)[0]
                        found = [Link(store.add_url(url_of(int(t)), depth=2)[0], "", False)
                                 for t in rng.integers(0, pages, links)]
                        store.record_fetched(
                            uid, http_status=200, content_type="text/html", warc=None,
                            content_hash=hashlib.sha1(str(i).encode()).hexdigest(),
                            links=found)
        out.append(data)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=40_000, help="pages over all shards")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--links", type=int, default=10, help="links per page")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--accuracy", type=float, default=1e-9)
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-rank-by-url-"))
    try:
        t = time.perf_counter()
        shards = build_shards(root, args.pages, args.shards, args.links, seed=7)
        print(f"{args.shards} shards, {args.pages:,} pages, {args.pages * args.links:,} links "
              f"stored in {time.perf_counter() - t:.1f} s", flush=True)
        t = time.perf_counter()
        run_rank_by_url(shards)
        embedded_s = time.perf_counter() - t
        first = [Ranks.open(d) for d in shards]
        with local_cluster(args.workers) as cluster:
            engine = DaskEngine(scheduler=cluster.scheduler_address)
            t = time.perf_counter()
            engine.run_by_url(shards, damping=0.85, tol=1e-10, dangling="teleport")
            dask_s = time.perf_counter() - t
            print(engine.last_run.summary())
        then = [Ranks.open(d) for d in shards]
        if any(b.generation <= a.generation for a, b in zip(first, then, strict=True)):
            raise SystemExit("the Dask run wrote no new generation")
        l1 = max(float(np.abs(a.pagerank - b.pagerank).sum())
                 for a, b in zip(first, then, strict=True))
        print(f"embedded: {embedded_s:.2f} s   dask ({args.workers} workers): {dask_s:.2f} s   "
              f"PageRank L1 (worst shard): {l1:.1e}")
        if l1 > args.accuracy:
            raise SystemExit(f"the engines differ by {l1:.1e} in L1 (> {args.accuracy:g})")
        print(f"dask_vs_embedded={dask_s / embedded_s:.2f} l1={l1:.1e}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
