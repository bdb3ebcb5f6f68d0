"""Load test of ``GET /search`` served by ``websift serve``, beside Whoosh's query time.

    .venv/bin/python -m scripts.benchmarks.bench_api           # crawl + index + rank, then measure
    .venv/bin/python -m scripts.benchmarks.bench_api --data D  # reuse (or make) a crawl in D
    .venv/bin/python -m scripts.benchmarks.bench_api --seconds 10 --clients 1 8 32
    .venv/bin/python -m scripts.benchmarks.bench_api --workers 1 2 --cache off --clients 8

The Python 3.11 manual is crawled and indexed as ``scripts/evaluation/eval_relevance.py`` does (its
functions are imported), ranked, and served by ``websift serve`` in its own process on a loopback
port.  For each client count N, N concurrent clients (asyncio tasks, one keep-alive connection
each, a minimal HTTP/1.1 client so the load generator costs little CPU) send the 400 development queries round-robin for a fixed time; the script prints
throughput, p50 and p99 latency and errors.  As the reference, the same queries run in process
on Whoosh 2.7.4 (BM25F, title+body, built on the same pages) and on websift's searcher, with and
without snippets: the ratio says what the HTTP layer costs and how websift's query compares.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import numpy as np

from scripts.evaluation.eval_relevance import crawl_and_index, load_queries
from testkit.ports import free_port
from websift.core.datadir import DataDir
from websift.ranking.rank_job import run_rank
from websift.ranking.ranks import current_generation as ranks_generation

ROOT = Path(__file__).resolve().parents[2]

START_TIMEOUT = 60.0
GOAL_P50_MS = 10.0
GOAL_P99_MS = 50.0


@dataclass
class LoadResult:
    clients: int
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.seconds

    def pct(self, q: float) -> float:
        return float(np.percentile(self.latencies_ms, q)) if self.latencies_ms else float("nan")


@contextmanager
def websift_serve(data: DataDir, cache_size: int | None, workers: int = 1) -> Iterator[str]:
    """``websift serve`` over ``data`` on a free loopback port, until the block ends.

    ``cache_size``: the result cache's size (``WEBSIFT_RESULT_CACHE_SIZE``); None: the default.
    ``workers``: ``websift serve --workers`` (processes accepting on the one port).
    """
    with websift_server(data, cache_size, workers) as (base, _pid):
        yield base


@contextmanager
def websift_server(data: DataDir, cache_size: int | None, workers: int = 1,
                   checkout: Path = ROOT) -> Iterator[tuple[str, int]]:
    """:func:`websift_serve`, yielding its base URL and the server's process ID; ``checkout``:
    the websift source tree it runs (another one: a before/after in the same run)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    if cache_size is not None:
        env["WEBSIFT_RESULT_CACHE_SIZE"] = str(cache_size)
    proc = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "websift"), "serve", "--data", str(data.root),
         "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            if proc.poll() is not None:
                raise SystemExit("websift serve exited before it was healthy")
            try:
                if httpx.get(base + "/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise SystemExit("websift serve did not become healthy")
            time.sleep(0.05)
        yield base, proc.pid
    finally:
        proc.terminate()
        proc.wait(START_TIMEOUT)


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str,
               target: str) -> int:
    """One HTTP/1.1 keep-alive GET; returns the status.  A minimal client, like wrk's, so the
    load generator sharing the machine costs little CPU (httpx costs more than the server)."""
    writer.write(f"GET {target} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def _client(base: str, queries: list[str], start: int, until: float,
                  result: LoadResult, *, requests: int | None = None) -> None:
    hostport = base.split("://", 1)[1]
    host, port = hostport.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    targets = ["/search?" + urlencode({"q": q, "k": 10}) for q in queries]
    i = start
    try:
        while time.perf_counter() < until and (requests is None or i - start < requests):
            target = targets[i % len(targets)]
            i += 1
            t0 = time.perf_counter()
            try:
                status = await _get(reader, writer, hostport, target)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                key = type(exc).__name__
                result.errors[key] = result.errors.get(key, 0) + 1
                writer.close()
                reader, writer = await asyncio.open_connection(host, int(port))
                continue
            elapsed = (time.perf_counter() - t0) * 1000.0
            if status != 200:
                key = f"HTTP {status}"
                result.errors[key] = result.errors.get(key, 0) + 1
                continue
            result.latencies_ms.append(elapsed)
    finally:
        writer.close()


async def load(base: str, queries: list[str], clients: int, seconds: float, *,
               passes: int | None = None) -> LoadResult:
    """``clients`` keep-alive connections sending ``queries`` in turn (each from its own
    place in the list) for ``seconds``; with ``passes``, each stops sooner, once the clients
    together have sent every query ``passes`` times."""
    result = LoadResult(clients, seconds)
    until = time.perf_counter() + seconds
    step = max(1, len(queries) // clients)
    each = None if passes is None else -(-passes * len(queries) // clients)
    await asyncio.gather(*(_client(base, queries, c * step, until, result, requests=each)
                           for c in range(clients)))
    return result


def server_gc(base: str) -> dict[str, Any] | None:
    """The ``/stats`` ``gc`` of the server at ``base`` (with several processes, the one that
    answered; None when none does)."""
    try:
        with urllib.request.urlopen(f"{base}/stats", timeout=30) as r:
            return dict(json.loads(r.read()).get("gc") or {})
    except OSError:
        return None


def time_queries(run: Callable[[str], object], queries: list[str]) -> np.ndarray:
    """Per-query wall time in ms (one warm-up pass first)."""
    for q in queries[:20]:
        run(q)
    out = []
    for q in queries:
        t0 = time.perf_counter()
        run(q)
        out.append((time.perf_counter() - t0) * 1000.0)
    return np.asarray(out)


def in_process_reference(data: DataDir, queries: list[str]) -> None:
    from scripts.evaluation.peers import WhooshPeer, stored_pages
    from websift.indexer.searcher import IndexQuery, Searcher

    searcher = Searcher.open(data)
    ours_full = time_queries(lambda q: searcher.search(IndexQuery(q, k=10)), queries)
    ours_bare = time_queries(lambda q: searcher.search(IndexQuery(q, k=10, snippets=False)),
                             queries)
    peer = WhooshPeer(list(stored_pages(data)))
    whoosh = time_queries(lambda q: peer.search(q, k=10), queries)
    peer.close()
    print("\nIn process, same 400 queries, top 10 (ms):")
    print("| engine | p50 | p99 | mean |")
    print("|---|---|---|---|")
    for name, t in (("websift searcher, with snippets (what /search runs)", ours_full),
                    ("websift searcher, no snippets", ours_bare),
                    ("Whoosh 2.7.4 BM25F, no snippets", whoosh)):
        print(f"| {name} | {np.median(t):.2f} | {np.percentile(t, 99):.2f} | {t.mean():.2f} |")
    print(f"\nratio websift (no snippets) / Whoosh, median: "
          f"{np.median(ours_bare) / np.median(whoosh):.2f}")
    print(f"ratio websift (with snippets) / Whoosh, median: "
          f"{np.median(ours_full) / np.median(whoosh):.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="data directory to crawl into or reuse")
    ap.add_argument("--seconds", type=float, default=10.0, help="load time per client count")
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--no-reference", action="store_true", help="skip the in-process timings")
    ap.add_argument("--workers", type=int, nargs="+", default=[1],
                    help="serve with each of these numbers of worker processes")
    ap.add_argument("--cache", choices=["off", "on", "both"], default="both",
                    help="measure with the result cache off, on (default size), or both")
    args = ap.parse_args(argv)

    tmp = None
    if args.data is None:
        tmp = tempfile.TemporaryDirectory(prefix="websift-bench-api-")
        args.data = Path(tmp.name) / "data"
    data = crawl_and_index(args.data)
    if ranks_generation(data) is None:
        run_rank(data)
    queries = [q.text for q in load_queries()]
    print(f"{len(queries)} queries, {args.seconds:g} s per client count, {os.cpu_count()} cores")
    runs = [(f"{w} worker{'s' if w > 1 else ''}, {label}", cache_size, w)
            for w in args.workers
            for key, label, cache_size in (
                ("off", "result cache off: every request searches", 0),
                ("on", "result cache on (default): repeated queries are hits", None))
            if args.cache in (key, "both")]
    for label, cache_size, workers in runs:
        with websift_serve(data, cache_size, workers) as base:
            # warm-up: page cache, first imports (every worker: one connection per client)
            asyncio.run(load(base, queries, max(workers, 1) * 2, 2.0))
            print(f"\n{label}\n")
            print("| clients | requests | req/s | p50 ms | p99 ms | errors |")
            print("|---|---|---|---|---|---|")
            for n in args.clients:
                r = asyncio.run(load(base, queries, n, args.seconds))
                errors = ", ".join(f"{k} {v}" for k, v in sorted(r.errors.items())) or "none"
                print(f"| {n} | {len(r.latencies_ms)} | {r.throughput:.0f} | {r.pct(50):.1f} | "
                      f"{r.pct(99):.1f} | {errors} |", flush=True)
                if n == 8:
                    ok = r.pct(50) < GOAL_P50_MS and r.pct(99) < GOAL_P99_MS and not r.errors
                    print(f"|   | goal at 8 clients (p50 < {GOAL_P50_MS:g} ms, p99 < "
                          f"{GOAL_P99_MS:g} ms, no errors): {'met' if ok else 'NOT met'} "
                          "| | | | |")
    if not args.no_reference:
        in_process_reference(data, queries)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
