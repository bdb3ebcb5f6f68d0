"""A crawl of the Python manual by three crawler processes on one Redis frontier, indexed per
shard and searched as one index (``Searcher.open_shards``), answers the 400 development queries
as well as a one-process crawl of the same site (issue 13)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

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

# slow: three crawls of the Python manual; redis: each test starts a redis-server
# (testkit/redis_server.py)
pytestmark = [pytest.mark.slow, pytest.mark.redis]

CRAWL = ("--delay", "0", "--concurrency-per-host", "4", "--allow-private", "--max-depth", "50",
         "--quiet")
CRAWLERS = 3
# Anchor text is split across the shards (each stores the links of the pages it fetched) and a
# URL ID held by several shards is served from the copy with the most words, so a page may lose
# the anchors another shard saw: allow that much.
MRR_TOLERANCE = 0.02


def crawl(seed: str, data: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(websift_command("crawl", seed, "--data", str(data), *CRAWL, *extra),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def finished(proc: subprocess.Popen[str]) -> None:
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err


@pytest.mark.skipif(not (DOCS / "index.html").is_file() or not QUERIES.is_file(),
                    reason="needs python3.11-doc (make test installs it) and ../shared/eval")
def test_three_crawlers_answer_like_one(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis")
    try:
        with serve_docs(DOCS, robots=ROBOTS) as base:
            seed = base + "index.html"
            one = tmp_path / "one"
            shards = [tmp_path / f"shard{i}" for i in range(CRAWLERS)]
            procs = [crawl(seed, one)] + [crawl(seed, d, "--frontier", redis.url())
                                          for d in shards]
            for p in procs:
                finished(p)
    finally:
        redis.stop()
    per_shard = [fetched_pages(d) for d in shards]
    # Every page once across the shards.  The manual is one host, and a host is fetched by one
    # crawler at a time (its lease: politeness across processes), so one shard may hold it all.
    assert sum(per_shard) == fetched_pages(one) > 400
    for d in (one, *shards):
        build_index(DataDir.open(d))
    queries = load_queries()
    single = evaluate(ours(Searcher.open(DataDir.open(one)), "one"), queries)
    sharded = evaluate(ours(Searcher.open_shards([DataDir.open(d).index_dir for d in shards]),
                            "shards"), queries)
    print(f"MRR@10 one process {single['MRR@10']:.3f}, {CRAWLERS} crawlers' shards "
          f"{sharded['MRR@10']:.3f} (pages per shard: {per_shard})")
    assert sharded["MRR@10"] == pytest.approx(single["MRR@10"], abs=MRR_TOLERANCE)
