"""From three partitioned crawlers to one search, against one embedded crawl of the same web.

    .venv/bin/python -m scripts.benchmarks.bench_partitioned_e2e  # 400-page web, 12 hosts
    .venv/bin/python -m scripts.benchmarks.bench_partitioned_e2e --pages 2000 --hosts 30

On the generated web of ``scripts/benchmarks/crawl_scale.py`` (``testkit/genweb.py``, nginx on
loopback addresses), crawled to its end, in one run:

1. the peer: one embedded ``websift crawl`` into one data directory, indexed, served;
2. a fresh ``redis-server`` and three ``websift crawl --partitioned`` processes, each with its
   own ``--data`` (a shard); ``websift rank --shard`` over the three (tried; its answer is
   printed); each shard exports its anchor texts (``websift anchors export``) and is indexed
   with the other two's files (``websift index --anchors-from``); one ``websift serve
   --shard-server`` per shard and a front server over them (``serve --shard http://...``).

Compared: the fetched URL sets (the intersection is what is compared when they differ), and
the top 10 URLs of ``--queries`` queries (two adjacent words drawn from the peer's indexed
page text, seeded) from the front server and from the peer's server: the same list, and the
same set, and the same scores (to ``SCORE_RTOL`` relative).  No bar is judged: the table is
printed, with a last ``key=value`` line.  ``--diff`` prints, for each query whose top 10
differs, both lists with each hit's score and its parts (text, prior, PageRank, fetched or
known only from links) and the collection statistics it was scored with, so the cause shows.
``--work DIR`` keeps the crawls there and reuses them on the next run (the rank, index and
serve steps run again from scratch): a change to ranking or indexing is measured in a minute.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from scripts.benchmarks.bench_partitioned import crawl_cmd, run_crawlers
from scripts.benchmarks.bench_redis_frontier import BenchError, RedisProcess
from scripts.benchmarks.crawl_scale import Nginx, ScaleError, find_nginx
from testkit.genweb import MAX_HOSTS, PORT, Web, WebParams, ensure_web
from testkit.ports import free_port
from websift.core.arguments import number
from websift.core.datadir import DataDir
from websift.indexer.manifest import read_manifest
from websift.indexer.segment import SegmentReader
from websift.ranking.ranks import Ranks
from websift.store.views import StoreReader

REPO = Path(__file__).resolve().parents[2]
PAGES = 400
HOSTS = 12
CRAWLERS = 3
QUERIES = 300
SEED = 1
TOKEN = "bench-partitioned-e2e"  # the shard servers' secret (WEBSIFT_SHARD_TOKEN), loopback
READY_SECONDS = 60.0
# the front waits this long for a shard: the comparison is of answers, not of speed, on a
# machine the crawlers and servers share
SHARD_TIMEOUT_MS = 60_000
TAIL_CHARS = 2000
WORD = re.compile(r"[a-z]{3,}")
SCORE_RTOL = 1e-9  # scores this close (relative) are the same score
CRAWLED = "crawled"  # the marker of a --work directory whose crawls finished


def websift(*args: str) -> str:
    """Run ``websift ARGS`` to its end; its stdout (BenchError with stderr on failure)."""
    done = subprocess.run([sys.executable, "-m", "websift.api.cli", *args], cwd=REPO,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"websift {' '.join(args[:2])} exited {done.returncode}: "
                         f"{done.stderr[-TAIL_CHARS:]}")
    return done.stdout


@contextmanager
def serving(args: list[str], log: Path) -> Iterator[str]:
    """``websift serve ARGS`` on a free loopback port until the block ends; its base URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "WEBSIFT_SHARD_TOKEN": TOKEN}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "websift.api.cli", "serve", *args, "--host", "127.0.0.1",
             "--port", str(port), "--log-level", "warning"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_SECONDS
        while True:
            if proc.poll() is not None:
                raise BenchError(f"websift serve exited: {log.read_text()[-TAIL_CHARS:]}")
            try:
                if httpx.get(base + "/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise BenchError(f"websift serve not ready: {log.read_text()[-TAIL_CHARS:]}")
            try:
                proc.wait(timeout=0.2)  # wakes at once if it dies
            except subprocess.TimeoutExpired:
                continue
        yield base
    finally:
        proc.terminate()
        proc.wait(30)


def fetched_urls(data: Path) -> set[str]:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        return {p.url for p in store.pages("fetched")}


def pagerank_by_url(data: Path) -> dict[str, float]:
    """URL -> its PageRank in the data directory's current ranks generation."""
    d = DataDir.open(data)
    ranks = Ranks.open(d)
    with StoreReader.open(d.store_path) as store:
        return {url: float(ranks.pagerank[uid]) for uid, url in store.urls()}


def draw_queries(data: Path, n: int, seed: int) -> list[str]:
    """``n`` distinct queries of two adjacent words of the indexed page text of ``data``."""
    texts: list[str] = []
    index_dir = DataDir.open(data).index_dir
    for entry in read_manifest(index_dir).segments:
        seg = SegmentReader(index_dir / entry.name)
        texts.extend(seg.text(k) for k in range(entry.doc_count))
    pool = [words for t in texts if len(words := WORD.findall(t.lower())) >= 2]
    if not pool:
        raise BenchError("the peer's index holds no text to draw queries from")
    rng = random.Random(seed)
    out: dict[str, None] = {}
    for _ in range(50 * n):
        if len(out) == n:
            break
        words = rng.choice(pool)
        i = rng.randrange(len(words) - 1)
        out[f"{words[i]} {words[i + 1]}"] = None
    return list(out)


def top10(client: httpx.Client, base: str, q: str, explain: bool = False
          ) -> list[dict[str, Any]]:
    """The results of ``q`` (k=10) as the server returns them."""
    params: dict[str, str | int] = {"q": q, "k": 10}
    if explain:
        params["explain"] = "true"
    response = client.get(base + "/search", params=params)
    if response.status_code != 200:
        raise BenchError(f"{base}/search?q={q!r}: HTTP {response.status_code}: "
                         f"{response.text[:TAIL_CHARS]}")
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def same_scores(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """The same URLs in the same order with the same scores (to SCORE_RTOL relative)."""
    return [r["url"] for r in a] == [r["url"] for r in b] and all(
        math.isclose(x["score"], y["score"], rel_tol=SCORE_RTOL, abs_tol=SCORE_RTOL)
        for x, y in zip(a, b, strict=True))


def show_diff(q: str, one: list[dict[str, Any]], front: list[dict[str, Any]]) -> None:
    """Both top 10s of a query whose answers differ, with each score's parts."""
    print(f"\n=== {q!r}")
    for name, rows in (("embedded", one), ("front", front)):
        stats = next((r["explain"]["text"] for r in rows
                      if r.get("explain") and r["explain"].get("text")), None)
        said = "" if stats is None else (
            f"  N={stats['n_docs']} avg=" + ",".join(
                f"{v:.4g}" for v in stats["avg_field_lengths"].values())
            + " idf=" + ",".join(f"{t}:{v['idf']:.6g}" for t, v in stats["terms"].items()))
        print(f"  {name}:{said}")
        for r in rows:
            sig = r["signals"]
            pr = "-" if sig["pagerank"] is None else f"{sig['pagerank']:.6g}"
            mark = " " if r.get("fetched", True) else "a"  # a: known only from links
            print(f"    {r['score']:.12f} text={sig['text']:.12f} prior={sig['prior']:.9f} "
                  f"pr={pr} {mark} {r['url']}")


@dataclass
class Crawls:
    """What the two crawls fetched, and how long each took (None: reused from --work)."""

    one: set[str]
    per_shard: list[set[str]]
    t_one: float | None
    t_part: float | None

    @property
    def union(self) -> set[str]:
        return set().union(*self.per_shard)


def crawl(web: Web, run_dir: Path, peer: Path, shards: list[Path], pages: int) -> Crawls:
    """Both crawls into ``run_dir``, or the ones a previous run left there (--work)."""
    t_one = t_part = None
    if not (run_dir / CRAWLED).exists():
        for d in [peer, *shards]:
            shutil.rmtree(d, ignore_errors=True)
        budget = 10 * pages  # the whole web: each crawl ends when nothing is left
        print("embedded crawl: 1 process", flush=True)
        t_one, _ = run_crawlers([crawl_cmd(web, peer, budget, None)])
        print(f"partitioned crawl: {CRAWLERS} processes", flush=True)
        server = RedisProcess(run_dir / "redis")
        try:
            t_part, _ = run_crawlers([crawl_cmd(web, d, budget, server.url) for d in shards])
        finally:
            server.stop()
        (run_dir / CRAWLED).write_text("both crawls ended\n")
    else:
        print(f"reusing the crawls in {run_dir}", flush=True)
        for d in [peer, *shards]:  # rank and index again from scratch
            data = DataDir.open(d)
            shutil.rmtree(data.index_dir, ignore_errors=True)
            shutil.rmtree(data.ranks_dir, ignore_errors=True)
    return Crawls(fetched_urls(peer), [fetched_urls(d) for d in shards], t_one, t_part)


def rank_all(peer: Path, shards: list[Path]) -> tuple[str, dict[str, float], dict[str, float]]:
    """``rank --shard`` over the shards (each alone if refused), ``rank`` on the peer: what
    happened, and each side's PageRank by URL."""
    rank = subprocess.run(
        [sys.executable, "-m", "websift.api.cli", "rank", "--shard", *map(str, shards)],
        cwd=REPO, capture_output=True, text=True, check=False)
    rank_line = "global ranks over the shards"
    if rank.returncode:  # each shard ranks its own store: the figures say so
        rank_line = ("refused (" + (rank.stderr.strip().splitlines() or ["?"])[-1]
                     + "); each shard ranked alone")
        for d in shards:
            websift("rank", "--quiet", "--data", str(d))
    websift("rank", "--quiet", "--data", str(peer))
    pr_shards: dict[str, float] = {}
    for d in shards:  # a URL several shards know has one value (the global vector)
        pr_shards.update(pagerank_by_url(d))
    return rank_line, pagerank_by_url(peer), pr_shards


def index_all(run_dir: Path, peer: Path, shards: list[Path]) -> None:
    """Index the peer, and each shard with the others' anchor exports."""
    print("indexing: the peer, and each shard with the others' anchor texts", flush=True)
    websift("index", "--quiet", "--data", str(peer))
    exports = [run_dir / f"shard-{i}.anchors.json" for i in range(len(shards))]
    for d, out in zip(shards, exports, strict=True):
        websift("anchors", "export", "--data", str(d), "--out", str(out))
    for i, d in enumerate(shards):
        others = [str(e) for j, e in enumerate(exports) if j != i]
        websift("index", "--quiet", "--data", str(d), "--anchors-from", *others)


@dataclass
class Agreement:
    queries: int = 0
    same_list: int = 0
    same_set: int = 0
    same_scores: int = 0


def compare(stack: ExitStack, run_dir: Path, peer: Path, shards: list[Path],
            qs: list[str], *, diff: bool) -> Agreement:
    """Serve the peer, the shards and a front over them; how many of ``qs`` agree."""
    one_base = stack.enter_context(serving(["--data", str(peer)], run_dir / "serve-one.log"))
    shard_bases = [stack.enter_context(
        serving(["--shard-server", "--data", str(d)], run_dir / f"serve-{i}.log"))
        for i, d in enumerate(shards)]
    front = stack.enter_context(serving(
        [*(x for b in shard_bases for x in ("--shard", b)),
         "--shard-timeout-ms", str(SHARD_TIMEOUT_MS)], run_dir / "front.log"))
    out = Agreement(queries=len(qs))
    with httpx.Client(timeout=30.0) as client:
        for q in qs:
            a, b = top10(client, one_base, q, diff), top10(client, front, q, diff)
            ua, ub = [r["url"] for r in a], [r["url"] for r in b]
            out.same_list += ua == ub
            out.same_set += set(ua) == set(ub)
            same = same_scores(a, b)
            out.same_scores += same
            if diff and not same:
                show_diff(q, a, b)
    return out


def run(args: argparse.Namespace) -> int:
    pages, hosts, seed, port = args.pages, args.hosts, args.seed, args.port
    params = WebParams(pages, hosts, seed, port)
    root = args.root or Path(tempfile.gettempdir()) / f"websift-genweb-{pages}-{hosts}-{seed}-{port}"
    find_nginx()
    web = ensure_web(root, params, log=True)
    run_dir = args.work or Path(tempfile.mkdtemp(prefix="websift-bench-e2e-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    peer = run_dir / "one"
    shards = [run_dir / f"shard-{i}" for i in range(CRAWLERS)]
    try:
        with Nginx(web, run_dir), ExitStack() as stack:
            crawls = crawl(web, run_dir, peer, shards, pages)
            rank_line, pr_one, pr_shards = rank_all(peer, shards)
            index_all(run_dir, peer, shards)
            qs = draw_queries(peer, args.queries, seed)
            agree = compare(stack, run_dir, peer, shards, qs, diff=args.diff)
    except (BenchError, ScaleError) as exc:
        for log in sorted(run_dir.glob("*.log")):  # the servers' last words
            print(f"--- {log.name}\n{log.read_text(errors='replace')[-TAIL_CHARS:]}",
                  file=sys.stderr)
        print(f"bench_partitioned_e2e: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.work is None:
            shutil.rmtree(run_dir, ignore_errors=True)
    report(crawls, agree, rank_line, pr_one, pr_shards)
    return 0


def report(crawls: Crawls, agree: Agreement, rank_line: str, pr_one: dict[str, float],
           pr_shards: dict[str, float]) -> None:
    union = crawls.union
    twice = sum(len(a) for a in crawls.per_shard) - len(union)
    both = crawls.one & union
    common = pr_one.keys() & pr_shards.keys()
    l1 = sum(abs(pr_one[u] - pr_shards[u]) for u in common)
    n = agree.queries

    def secs(t: float | None) -> str:
        return "reused" if t is None else f"{t:.1f}"

    print()
    print(f"{'':<34}{'embedded':>10}{f'{CRAWLERS} partitioned':>15}")
    print(f"{'pages fetched':<34}{len(crawls.one):>10}{len(union):>15}")
    print(f"{'crawl seconds':<34}{secs(crawls.t_one):>10}{secs(crawls.t_part):>15}")
    print(f"{'pages fetched by two shards':<34}{'':>10}{twice:>15}")
    # a host whose pages two shards fetched (leases moved mid-crawl): its navigation anchor
    # texts and template are measured on every shard's counts and samples (the anchor exports)
    print(f"{'hosts split between shards':<34}{'':>10}{split_hosts(crawls.per_shard):>15}")
    print(f"{'fetched by both crawls':<34}{len(both):>10}")
    print(f"{'same top 10 list (of queries)':<34}{agree.same_list:>10} / {n}")
    print(f"{'same top 10 set (of queries)':<34}{agree.same_set:>10} / {n}")
    print(f"{'same list and scores (1e-9 rel.)':<34}{agree.same_scores:>10} / {n}")
    print(f"{'URLs known':<34}{len(pr_one):>10}{len(pr_shards):>15}")
    print(f"{'PageRank L1 on the URLs both know':<34}{l1:>10.3g}   ({len(common)} URLs)")
    print(f"ranks: {rank_line}")
    print(f"pages_one={len(crawls.one)} pages_sharded={len(union)} common={len(both)} "
          f"known_one={len(pr_one)} known_sharded={len(pr_shards)} pagerank_l1={l1:.3g} "
          f"twice={twice} split_hosts={split_hosts(crawls.per_shard)} queries={n} "
          f"same_list={agree.same_list} same_set={agree.same_set} "
          f"same_scores={agree.same_scores}")


def split_hosts(per_shard: list[set[str]]) -> int:
    """Hosts more than one shard fetched pages of."""
    held = [{urlsplit(u).netloc for u in urls} for urls in per_shard]
    return sum(1 for h in set().union(*held) if sum(h in x for x in held) > 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=number(int, low=1), default=PAGES,
                        help=f"pages of the generated web (default {PAGES})")
    parser.add_argument("--hosts", type=number(int, low=1, high=MAX_HOSTS), default=HOSTS,
                        help=f"hosts of the generated web (default {HOSTS})")
    parser.add_argument("--queries", type=number(int, low=1), default=QUERIES,
                        help=f"queries compared (default {QUERIES})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"the generator's seed ({SEED})")
    parser.add_argument("--port", type=number(int, low=1, high=65535), default=PORT,
                        help=f"the web's port on every host address (default {PORT})")
    parser.add_argument("--root", type=Path, help="where the web is (re)generated (default: a "
                        "directory per parameter set under the temp dir, kept for reuse)")
    parser.add_argument("--work", type=Path, help="keep the crawls in this directory and reuse "
                        "them when it already holds them (default: a temporary directory, "
                        "removed at the end)")
    parser.add_argument("--diff", action="store_true", help="print both top 10s, with each "
                        "score's parts, of every query whose answers differ")
    args = parser.parse_args()
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
