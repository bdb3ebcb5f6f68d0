"""Relevance of a crawl split over several crawler processes on one Redis frontier, beside one
crawl of the same site.

    .venv/bin/python -m scripts.evaluation.eval_shards  # 3 crawlers, the Python manual
    .venv/bin/python -m scripts.evaluation.eval_shards --crawlers 2 --tolerance 0.02

The script serves the Python 3.11 manual (``python3.11-doc``) on a loopback port, crawls it
with one ``websift crawl`` and, at the same time, with ``--crawlers`` processes sharing a fresh
``redis-server`` (``--frontier``), indexes each data directory, and runs the development queries
(shared/eval/pydocs_queries.tsv) against the one index and against the shards searched as one
(``Searcher.open_shards``: global statistics).  It prints the pages per shard and MRR@10 of
both, and exits 1 when a page was fetched twice or missed, or when the shards' MRR@10 is more
than ``--tolerance`` from the one crawl's.

Anchor text is split across the shards (each stores the links of the pages it fetched) and a URL
ID held by several shards is served from the copy with the most words, so a page may lose the
anchors another shard saw: the tolerance allows that much.  The behaviours this measures at the
manual's size are tested on small sites: tests/crawler/test_redis_frontier_crawl.py (every page
fetched once by three crawlers), tests/api/test_shards.py (shards answer as the whole index).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from testkit.devset import (
    DOCS,
    QUERIES,
    ROBOTS,
    evaluate,
    fetched_pages,
    load_queries,
    ours,
    serve_docs,
)
from testkit.redis_server import RedisServer
from testkit.websift_process import REPO, websift_command
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.searcher import Searcher

CRAWL = ("--delay", "0", "--concurrency-per-host", "4", "--allow-private", "--max-depth", "50",
         "--quiet")
CRAWL_WITHIN = 600.0  # seconds one crawl of the manual may take
MRR_TOLERANCE = 0.02


def _crawl(seed: str, data: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(websift_command("crawl", seed, "--data", str(data), *CRAWL, *extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def crawl_all(work: Path, crawlers: int) -> tuple[Path, list[Path]]:
    """One crawl of the manual and ``crawlers`` crawls on one Redis frontier, run together."""
    redis = RedisServer(work / "redis")
    try:
        with serve_docs(DOCS, robots=ROBOTS) as base:
            seed = base + "index.html"
            one = work / "one"
            shards = [work / f"shard{i}" for i in range(crawlers)]
            procs = [_crawl(seed, one)] + [_crawl(seed, d, "--frontier", redis.url())
                                           for d in shards]
            for proc in procs:
                _, err = proc.communicate(timeout=CRAWL_WITHIN)
                if proc.returncode != 0:
                    raise SystemExit(f"eval_shards: a crawl exited {proc.returncode}: {err}")
    finally:
        redis.stop()
    return one, shards


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--crawlers", type=int, default=3, help="crawler processes on the frontier")
    ap.add_argument("--tolerance", type=float, default=MRR_TOLERANCE,
                    help="largest MRR@10 difference that passes (default: %(default)s)")
    args = ap.parse_args(argv)
    if not (DOCS / "index.html").is_file() or not QUERIES.is_file():
        print("eval_shards: needs python3.11-doc (scripts/ensure_system_packages.sh) and "
              "shared/eval/pydocs_queries.tsv", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="eval-shards-") as tmp:
        one, shards = crawl_all(Path(tmp), args.crawlers)
        per_shard = [fetched_pages(d) for d in shards]
        for d in (one, *shards):
            build_index(DataDir.open(d))
        queries = load_queries()
        single = evaluate(ours(Searcher.open(DataDir.open(one)), "one"), queries)["MRR@10"]
        sharded = evaluate(ours(Searcher.open_shards(
            [DataDir.open(d).index_dir for d in shards]), "shards"), queries)["MRR@10"]
        alone = fetched_pages(one)
    print(f"pages: one crawl {alone}, {args.crawlers} crawlers {sum(per_shard)} {per_shard}")
    print(f"MRR@10: one crawl {single:.3f}, the shards as one index {sharded:.3f} "
          f"(difference {sharded - single:+.3f}, tolerance {args.tolerance})")
    # Every page once across the shards.  The manual is one host, and a host is fetched by one
    # crawler at a time (its lease: politeness across processes), so one shard may hold it all.
    ok = sum(per_shard) == alone > 400 and abs(sharded - single) <= args.tolerance
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
