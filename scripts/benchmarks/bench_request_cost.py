"""Where one ``GET /search`` request's CPU goes: the search, its snippets and fragments, the
response's JSON, and the HTTP stack around them, on a ``bench_search_scale`` corpus.

    .venv/bin/python -m scripts.benchmarks.bench_search_scale --docs 8000 --no-api   # build it
    .venv/bin/python -m scripts.benchmarks.bench_request_cost --docs 8000
    .venv/bin/python -m scripts.benchmarks.bench_request_cost --docs 8000 --against CHECKOUT
    .venv/bin/python -m scripts.benchmarks.bench_request_cost --docs 8000 --workers 1 2
    .venv/bin/python -m scripts.benchmarks.bench_request_cost --docs 1000000 --queries 1000 \
        --workers 2 --http-only --against CHECKOUT    # the load alone, servers in turn

In process (one warm-up pass, then each query once per stage, the server's settings, PageRank
fused as ``/search`` does): the search without snippets or fragments, the whole search
(``api.retrieval.rank_query``: snippets, fragments, fusion, signals), and the response body two
ways: the ``SearchResponse`` model's JSON and ``api/routes/search.py``'s plain values through
orjson (what ``/search`` sends); then the application itself, the search taken out (each
query's answer found before, sent through the ASGI app without a socket), by ``/search``'s lean
path and by the FastAPI route.  Over HTTP: ``websift serve`` of this checkout (one process, no
result cache) loaded by 8 keep-alive clients; the server's CPU time (all its threads and worker
processes, from /proc) over the requests answered is the CPU one request costs, and what is
left after the in-process stages is the HTTP stack and the framework (uvicorn's protocol and
event loop, the ASGI middleware, the worker-thread hand-over).  ``--against`` loads another
checkout's server and this one's in turn; ``--workers 1 2`` loads each worker count in turn.  CPU time, not wall time: a machine shared with other
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
from typing import Any
from urllib.parse import urlencode

from scripts.benchmarks.bench_api import ROOT, load, server_gc, websift_server
from scripts.benchmarks.bench_search_scale import (
    API_WARMUP_MAX_SECONDS,
    DEFAULT_CACHE,
    DEFAULT_SEED,
    PAGES_PER_HOST,
    CorpusParams,
    make_queries,
    read_corpus,
)
from websift.api.app import create_app
from websift.api.retrieval import Outcome, SearchRequest, rank_query
from websift.api.routes.search import SearchJSON, response_body, to_response
from websift.api.settings import Settings
from websift.api.snapshot import SnapshotHolder
from websift.core.datadir import DataDir
from websift.indexer.searcher import IndexQuery

CLIENTS = 8
WARM_SECONDS = 10.0  # load after every query was asked once per process (--warm-seconds)


def cpu_ms_each(run: Callable[[str], object], queries: list[str]) -> float:
    """Mean CPU ms of ``run`` over ``queries`` (after one warm-up pass)."""
    for q in queries:
        run(q)
    t0 = time.process_time()
    for q in queries:
        run(q)
    return (time.process_time() - t0) * 1000.0 / len(queries)


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and the processes it started (``websift
    serve --workers``), all their threads (/proc)."""
    total = 0.0
    for p in _process_tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue  # exited meanwhile
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (/proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo.extend(int(c) for c in task.read_text().split())
            except FileNotFoundError:
                continue
    return out


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
    lean, route = asgi_cpu_ms(data, {q: o for q, (o, _req) in outcomes.items()})
    return {"bare": bare, "full": full, "model": model, "plain": plain, "lean": lean,
            "route": route}


class _Answered:
    """An engine answering each query with its outcome found before: the search taken out."""

    def __init__(self, outcomes: dict[str, Outcome]) -> None:
        self.outcomes = outcomes

    async def search(self, req: SearchRequest) -> Outcome:
        return self.outcomes[req.q]


def asgi_cpu_ms(data: DataDir, outcomes: dict[str, Outcome]) -> tuple[float, float]:
    """Mean CPU ms of ``GET /search`` through the application, the search taken out, by the lean
    path and by the FastAPI route (the same request with ``content-length: 0``, which the lean
    path hands on): what the framework costs a request, no socket."""
    app = create_app(Settings(data=data.root, result_cache_size=0))
    app.state.engine = _Answered(outcomes)
    queries = list(outcomes)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_message: dict[str, Any]) -> None:
        return None

    async def each(headers: list[tuple[bytes, bytes]]) -> float:
        t0 = 0.0
        for i, q in enumerate(queries * 3):  # the first pass warms up
            if i == len(queries):
                t0 = time.process_time()
            await app({"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                       "method": "GET", "scheme": "http", "path": "/search",
                       "raw_path": b"/search", "root_path": "",
                       "query_string": urlencode({"q": q, "k": 10}).encode(),
                       "headers": [(b"host", b"bench"), *headers], "server": ("bench", 80),
                       "client": ("127.0.0.1", 1), "state": {}}, receive, send)
        return (time.process_time() - t0) * 1000.0 / (2 * len(queries))

    try:
        return asyncio.run(each([])), asyncio.run(each([(b"content-length", b"0")]))
    finally:
        app.state.holder.close()


def over_http(data: DataDir, queries: list[str], seconds: float, checkout: Path = ROOT,
              workers: int = 1, *, warm: float = WARM_SECONDS) -> tuple[float, float, float]:
    """(CPU ms per request, requests/s, p99 ms) of ``websift serve --workers workers`` (of
    ``checkout``) under CLIENTS clients, after every query once per process and ``warm``
    seconds more of the load (time for the caches to fill as a long-running server's have)."""
    with websift_server(data, cache_size=0, workers=workers, checkout=checkout) as (base, pid):
        # Warm as the in-process stages are: every query once per server process (then
        # ``warm`` seconds more), so the timed load meets the lists each process keeps, not a
        # cold start.
        asyncio.run(load(base, queries, CLIENTS, API_WARMUP_MAX_SECONDS, passes=workers))
        asyncio.run(load(base, queries, CLIENTS, warm))
        c0 = process_cpu_seconds(pid)
        r = asyncio.run(load(base, queries, CLIENTS, seconds))
        c1 = process_cpu_seconds(pid)
        print(f"  {checkout.name}, {workers} process{'es' if workers > 1 else ''}: "
              f"{gc_line(server_gc(base))}", flush=True)
    n = max(1, len(r.latencies_ms))
    return (c1 - c0) * 1000.0 / n, r.throughput, r.pct(99)


def gc_line(figures: dict[str, Any] | None) -> str:
    """The full collections (generation 2) of the server process that answered ``/stats``,
    since it started (warm-up included; with several processes, one of them)."""
    pauses = (figures or {}).get("pauses")
    if not pauses:
        return "full collections not reported (a checkout without gc pauses in /stats)"
    full = pauses["2"]
    return (f"{full['count']} full collections since start, {full['seconds'] * 1e3:.0f} ms "
            f"in all, the longest {full['longest_ms']:.1f} ms")


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
    ap.add_argument("--rounds", type=int, default=2,
                    help="turns each with --against or several --workers")
    ap.add_argument("--workers", type=int, nargs="+", default=[1], metavar="N",
                    help="websift serve --workers: with several counts, each is loaded in "
                    "turn, ROUNDS times (with --against: the first count, both servers)")
    ap.add_argument("--http-only", action="store_true",
                    help="only the load over HTTP (in turn, with --against or several "
                    "--workers): no in-process stages, which search without the deadline "
                    "and take long on a large corpus")
    ap.add_argument("--warm-seconds", type=float, default=WARM_SECONDS,
                    help="load before the timed one, after every query was asked once per "
                    f"process ({WARM_SECONDS:g}): a server that has run longer")
    args = ap.parse_args(argv)
    params = CorpusParams(args.docs, max(1, args.docs // PAGES_PER_HOST), args.seed)
    corpus = read_corpus(args.cache / params.key(), params)
    if corpus is None or not (corpus.root / "data" / "index").is_dir():
        ap.exit(2, f"no indexed corpus of {args.docs} pages under {args.cache}: run "
                f"bench_search_scale --docs {args.docs} --no-api --cache {args.cache} first\n")
    data = DataDir.open(corpus.root / "data")
    queries = [q.text for q in make_queries(corpus, args.queries, args.seed)]
    if args.http_only:
        compare_in_turn(data, queries, args)
        return 0
    ip = in_process(data, queries)
    http_ms, rps, p99 = over_http(data, queries, args.seconds, workers=args.workers[0],
                                  warm=args.warm_seconds)
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
    served = f"{args.workers[0]} processes, " if args.workers[0] > 1 else ""
    print(f"| whole request over HTTP ({served}{CLIENTS} clients, {rps:.0f} req/s, p99 "
          f"{p99:.0f} ms) "
          f"| {http_ms:.2f} | 100% |")
    print(f"\nthe application without the search or a socket (ASGI, in process): "
          f"{ip['lean']:.3f} ms by /search's lean path, {ip['route']:.3f} ms by the FastAPI route")
    print(f"\nresponse JSON through the SearchResponse model instead: {ip['model']:.2f} ms "
          f"({ip['model'] / max(ip['plain'], 1e-9):.1f}x the plain path)")
    if args.against is not None or len(args.workers) > 1:
        compare_in_turn(data, queries, args)
    return 0


def compare_in_turn(data: DataDir, queries: list[str], args: argparse.Namespace) -> None:
    """The servers loaded in turn (:func:`in_turn`) and their ratios: with ``--against``,
    that checkout's and this one's (the first ``--workers`` count); else this checkout's at
    each ``--workers`` count, each against the first."""
    if args.against is not None:
        figures = in_turn(data, queries, args.seconds, args.rounds,
                          {str(args.against): (args.against, args.workers[0]),
                           str(ROOT): (ROOT, args.workers[0])}, warm=args.warm_seconds)
        ratios(figures, str(ROOT), str(args.against))
        return
    figures = in_turn(data, queries, args.seconds, args.rounds,
                      {f"{n} worker process{'es' if n > 1 else ''}": (ROOT, n)
                       for n in args.workers}, warm=args.warm_seconds)
    first = next(iter(figures))
    for other in list(figures)[1:]:
        ratios(figures, other, first)


Figures = dict[str, list[tuple[float, float, float]]]


def in_turn(data: DataDir, queries: list[str], seconds: float, rounds: int,
            servers: dict[str, tuple[Path, int]], *, warm: float = WARM_SECONDS) -> Figures:
    """Each server (a name: its checkout and worker count) loaded in turn, ``rounds`` times:
    (CPU ms per request, req/s, p99 ms) of each turn, printed as a table."""
    figures: Figures = {name: [] for name in servers}
    for _ in range(rounds):
        for name, (checkout, workers) in servers.items():
            figures[name].append(over_http(data, queries, seconds, checkout, workers, warm=warm))
    print(f"\nIn turn, {rounds} rounds of {seconds:.0f} s each ({CLIENTS} clients):")
    print("| server | CPU ms per request | req/s | p99 ms |")
    print("|---|---|---|---|")
    for name, runs in figures.items():
        cells = [" / ".join(f"{r[i]:.{2 if i == 0 else 0}f}" for r in runs) for i in range(3)]
        print(f"| {name} | {cells[0]} | {cells[1]} | {cells[2]} |")
    return figures


def ratios(figures: Figures, this: str, other: str) -> None:
    """``this``'s medians over ``other``'s: CPU per request, req/s, p99."""
    med = {name: [statistics.median(r[i] for r in runs) for i in range(3)]
           for name, runs in figures.items()}
    print(f"\n{this} / {other}: CPU per request {med[this][0] / med[other][0]:.2f}x, "
          f"req/s {med[this][1] / med[other][1]:.2f}x, p99 {med[this][2] / med[other][2]:.2f}x "
          "(medians)")


if __name__ == "__main__":
    raise SystemExit(main())
