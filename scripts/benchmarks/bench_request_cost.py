"""Where one ``GET /search`` request's CPU goes: the search, its snippets and fragments, the
response's JSON, and the HTTP stack around them, on a ``bench_search_scale`` corpus.

    .venv/bin/python -m scripts.benchmarks.bench_search_scale --docs 8000 --no-api   # build it
    .venv/bin/python -m scripts.benchmarks.bench_request_cost --docs 8000

In process (one warm-up pass, then each query once per stage, the server's settings, PageRank
fused as ``/search`` does): the search without snippets or fragments, the whole search
(``api.retrieval.rank_query``: snippets, fragments, fusion, signals), and the response body two
ways: the ``SearchResponse`` model's JSON and ``api/routes/search.py``'s plain values through
orjson (what ``/search`` sends).  Over HTTP: ``websift serve`` of this checkout (one process, no
result cache) loaded by 8 keep-alive clients; the server's CPU time (all its threads, from
/proc) over the requests answered is the CPU one request costs, and what is left after the
in-process stages is the HTTP stack and the framework (uvicorn, Starlette, FastAPI's parameter
checks, the worker-thread hand-over).  CPU time, not wall time: a machine shared with other
work slows the wall clock far more than it changes the CPU a request costs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from scripts.benchmarks.bench_api import ROOT, load, websift_server
from scripts.benchmarks.bench_search_scale import (
    DEFAULT_CACHE,
    DEFAULT_SEED,
    PAGES_PER_HOST,
    CorpusParams,
    make_queries,
    read_corpus,
)
from websift.api.retrieval import SearchRequest, rank_query
from websift.api.routes.search import SearchJSON, response_body, to_response
from websift.api.settings import Settings
from websift.api.snapshot import SnapshotHolder
from websift.core.datadir import DataDir
from websift.indexer.searcher import IndexQuery

CLIENTS = 8


def cpu_ms_each(run: Callable[[str], object], queries: list[str]) -> float:
    """Mean CPU ms of ``run`` over ``queries`` (after one warm-up pass)."""
    for q in queries:
        run(q)
    t0 = time.process_time()
    for q in queries:
        run(q)
    return (time.process_time() - t0) * 1000.0 / len(queries)


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid``, all its threads (/proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_process(data: DataDir, queries: list[str]) -> dict[str, float]:
    settings = Settings()
    holder = SnapshotHolder(data, settings.reload_check_ms)
    with holder.lease() as snap:
        searcher = snap.searcher.value
        outcomes = {}

        def whole(q: str) -> object:
            req = SearchRequest(q=q, k=settings.default_k, offset=0)
            outcomes[q] = (rank_query(snap, req, settings), req)
            return outcomes[q]

        bare = cpu_ms_each(lambda q: searcher.search(
            IndexQuery(q, k=settings.default_k, snippets=False, fragments=False)), queries)
        full = cpu_ms_each(whole, queries)
        model = cpu_ms_each(lambda q: to_response(*outcomes[q]).model_dump_json(), queries)
        plain = cpu_ms_each(lambda q: SearchJSON(response_body(*outcomes[q])).body, queries)
    holder.close()
    return {"bare": bare, "full": full, "model": model, "plain": plain}


def over_http(data: DataDir, queries: list[str], seconds: float, checkout: Path = ROOT
              ) -> tuple[float, float, float]:
    """(CPU ms per request, requests/s, p99 ms) of ``websift serve`` (of ``checkout``) under
    CLIENTS clients."""
    with websift_server(data, cache_size=0, checkout=checkout) as (base, pid):
        asyncio.run(load(base, queries, CLIENTS, min(10.0, seconds)))  # warm-up
        c0 = process_cpu_seconds(pid)
        r = asyncio.run(load(base, queries, CLIENTS, seconds))
        c1 = process_cpu_seconds(pid)
    n = max(1, len(r.latencies_ms))
    return (c1 - c0) * 1000.0 / n, r.throughput, r.pct(99)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=8000, help="the bench_search_scale corpus size")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=20.0, help="the HTTP load's length")
    ap.add_argument("--against", type=Path, metavar="CHECKOUT",
                    help="another websift source tree (e.g. a worktree of main): its server and "
                    "this one's loaded in turn, ROUNDS times each, for a same-run ratio")
    ap.add_argument("--rounds", type=int, default=2, help="turns each with --against")
    args = ap.parse_args(argv)
    params = CorpusParams(args.docs, max(1, args.docs // PAGES_PER_HOST), args.seed)
    corpus = read_corpus(args.cache / params.key(), params)
    if corpus is None or not (corpus.root / "data" / "index").is_dir():
        ap.exit(2, f"no indexed corpus of {args.docs} pages under {args.cache}: run "
                f"bench_search_scale --docs {args.docs} --no-api --cache {args.cache} first\n")
    data = DataDir.open(corpus.root / "data")
    queries = [q.text for q in make_queries(corpus, args.queries, args.seed)]
    ip = in_process(data, queries)
    http_ms, rps, p99 = over_http(data, queries, args.seconds)
    rest = http_ms - ip["full"] - ip["plain"]
    print(f"{args.docs:,} pages, {len(queries)} queries, {os.cpu_count()} cores; CPU ms per "
          f"request (mean)\n")
    print("| stage | CPU ms | share of the request |")
    print("|---|---|---|")
    rows = [("search without snippets or fragments", ip["bare"]),
            ("snippets, fragments, fusion, signals", ip["full"] - ip["bare"]),
            ("response JSON (plain values + orjson, what /search sends)", ip["plain"]),
            ("HTTP stack and framework (the rest)", rest)]
    for what, ms in rows:
        print(f"| {what} | {ms:.2f} | {100 * ms / http_ms:.0f}% |")
    print(f"| whole request over HTTP ({CLIENTS} clients, {rps:.0f} req/s, p99 {p99:.0f} ms) "
          f"| {http_ms:.2f} | 100% |")
    print(f"\nresponse JSON through the SearchResponse model instead: {ip['model']:.2f} ms "
          f"({ip['model'] / max(ip['plain'], 1e-9):.1f}x the plain path)")
    if args.against is not None:
        compare(data, queries, args.seconds, args.against, args.rounds)
    return 0


def compare(data: DataDir, queries: list[str], seconds: float, against: Path,
            rounds: int) -> None:
    """This checkout's server and ``against``'s, in turn: CPU ms per request and req/s."""
    figures: dict[Path, list[tuple[float, float, float]]] = {against: [], ROOT: []}
    for _ in range(rounds):
        for checkout, runs in figures.items():
            runs.append(over_http(data, queries, seconds, checkout))
    print(f"\nIn turn, {rounds} rounds of {seconds:.0f} s each ({CLIENTS} clients):")
    print("| server | CPU ms per request | req/s | p99 ms |")
    print("|---|---|---|---|")
    for checkout, runs in figures.items():
        cells = [" / ".join(f"{r[i]:.{2 if i == 0 else 0}f}" for r in runs) for i in range(3)]
        print(f"| {checkout} | {cells[0]} | {cells[1]} | {cells[2]} |")
    cpu = {c: statistics.median(r[0] for r in runs) for c, runs in figures.items()}
    rps = {c: statistics.median(r[1] for r in runs) for c, runs in figures.items()}
    print(f"\nthis / {against}: CPU per request {cpu[ROOT] / cpu[against]:.2f}x, "
          f"req/s {rps[ROOT] / rps[against]:.2f}x (medians)")


if __name__ == "__main__":
    raise SystemExit(main())
