"""`websift` subcommands owned by api/ (registered by api/cli.py): ``websift serve`` and
``websift search``, which ranks with the code of ``GET /search`` (``api.retrieval.rank_query``)."""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING

from websift.core.arguments import number
from websift.indexer.settings import DEFAULT_K

EXIT_NOT_STARTED = 2  # uvicorn could not start the application (its log says why)

if TYPE_CHECKING:
    from websift.api.retrieval import Outcome
    from websift.api.settings import Settings


def worker_environment(settings: Settings) -> dict[str, str]:
    """The ``WEBSIFT_*`` variables that rebuild ``settings``' served part in a worker process
    (uvicorn starts workers fresh: they read their settings from the environment)."""
    env = {
        "WEBSIFT_DATA": str(settings.data),
        "WEBSIFT_HOST": settings.host,
        "WEBSIFT_PORT": str(settings.port),
        "WEBSIFT_SHARDS": json.dumps(settings.shards),
        "WEBSIFT_SHARD_TIMEOUT_MS": str(settings.shard_timeout_ms),
        "WEBSIFT_SHARD_SERVER": "1" if settings.shard_server else "0",
    }
    if settings.ranks is not None:
        env["WEBSIFT_RANKS"] = str(settings.ranks)
    if settings.frontier is not None:
        env["WEBSIFT_FRONTIER"] = settings.frontier
    return env


def serve_command(args: argparse.Namespace) -> int:
    """Serve the search API and page over ``args.data`` (or ``--shard``s) with uvicorn until
    interrupted."""
    import uvicorn

    from websift.api.app import create_app, freeze_imported
    from websift.api.request_limits import uvicorn_config
    from websift.api.settings import Settings
    from websift.api.workers import bound, serve_workers

    given = {k: v for k, v in (("host", args.host), ("port", args.port), ("ranks", args.ranks),
                               ("shard_timeout_ms", args.shard_timeout_ms),
                               ("frontier", args.frontier)) if v is not None}
    if args.shard:
        given["shards"] = list(args.shard)
    if args.shard_server:
        given["shard_server"] = True
    settings = Settings(data=args.data, **given)  # unset: $WEBSIFT_* / defaults
    freeze_imported()
    # Refuses a missing or foreign data directory, a bad index or ranks, or bad --shard values
    # before binding (with --workers, each worker opens its own afterwards).
    app = create_app(settings, serving=True)
    # A port in use (or a host not ours) is one line and exit 2, before the line saying where
    # it serves; one server listens on this very socket, so nothing can take the port between.
    sock = bound(settings.host, settings.port)
    over = " + ".join(settings.shards) or str(args.data)
    workers = f", {args.workers} worker processes" if args.workers > 1 else ""
    print(f"websift serve: http://{settings.host}:{settings.port}/ over {over}{workers}",
          flush=True)
    if args.workers == 1:
        config = uvicorn_config(app, settings, log_level=args.log_level,
                                access_log=args.access_log)
        server = uvicorn.Server(config)
        with sock:
            server.run(sockets=[sock])
        return 0 if server.started else EXIT_NOT_STARTED
    # N processes, each building the application from the environment and accepting on its
    # own socket of the one port (api/workers.py), which binds it again with SO_REUSEPORT.
    sock.close()
    del app
    os.environ.update(worker_environment(settings))
    serve_workers(args.workers, settings.host, settings.port, args.log_level, args.access_log)
    return 0


def search_command(args: argparse.Namespace) -> int:
    """Answer one query over ``args.data`` as ``GET /search`` would (same ranking, defaults and
    error messages, the same settings from ``WEBSIFT_*``); print it for a person or as the
    ``/search`` JSON."""
    from websift.api.index_words import IndexWords
    from websift.api.retrieval import (
        SearchRequest,
        check_request,
        rank_query,
        wants_suggestion,
        with_suggestion,
    )
    from websift.api.settings import Settings
    from websift.api.snapshot import SnapshotHolder
    from websift.core.datadir import DataDir

    settings = Settings(data=args.data)
    k = settings.default_k if args.k is None else args.k
    offset = args.offset if args.page is None else (args.page - 1) * k
    req = SearchRequest(q=args.query, k=k, offset=offset, topic=args.topic or None,
                        site=args.site or None, explain=args.explain)
    check_request(req, settings)
    holder = SnapshotHolder(DataDir.open(args.data), settings.reload_check_ms)
    try:
        with holder.lease() as snap:
            outcome = rank_query(snap, req, settings)
            if wants_suggestion(outcome, req):  # as /search offers it
                outcome = with_suggestion(IndexWords(), snap, outcome)
    finally:
        holder.close()
    if args.json:
        from websift.api.routes.search import to_response  # FastAPI and the response models

        print(json.dumps(to_response(outcome, req).model_dump(mode="json"), indent=1))
    else:
        _print_results(outcome, offset)
    return 0


def _print_results(outcome: Outcome, offset: int) -> None:
    from websift.api.retrieval import with_fragment

    shown = f"results {offset + 1}-{offset + len(outcome.hits)}" if outcome.hits else "no results"
    mix = ""
    if outcome.topic_weights:
        mix = "; topic mix " + ", ".join(f"{n} {w:.2f}" for n, w in outcome.topic_weights.items())
    print(f"{outcome.total} matching documents; {shown} (importance: {outcome.static_score}{mix})")
    if outcome.did_you_mean is not None:
        print(f"did you mean: {outcome.did_you_mean}")
    for rank, r in enumerate(outcome.hits, offset + 1):
        h = r.hit
        print(f"{rank:2d}. {h.title}\n    {h.url}  (score {h.score:.3f} = text "
              f"{h.text_score:.3f} + importance {r.prior:.3f})")
        jump = with_fragment(h.url, h.fragment)
        if jump is not None:
            print(f"    jump to: {jump}")
        if h.snippet:
            print(f"    {_mark(h.snippet, h.highlights)}")
        if h.explain:
            print("    " + json.dumps(h.explain["terms"]))


def _mark(snippet: str, spans: list[tuple[int, int]]) -> str:
    """The snippet with each query-word match in [brackets]."""
    out, last = [], 0
    for s, e in spans:
        out.append(snippet[last:s])
        out.append(f"[{snippet[s:e]}]")
        last = e
    out.append(snippet[last:])
    return "".join(out)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this package's subcommands to the `websift` parser."""
    s = sub.add_parser(
        "search", help="search the index from the command line, ranked as GET /search ranks",
        description='Query language: words, "phrases", -word, site:host, OR.  Ranks as GET '
        "/search does (the same fusion of text score and importance, topics, settings from "
        "WEBSIFT_* and errors); --json prints the object /search returns.")
    s.add_argument("query", help='the query, e.g. \'"context manager" -async site:example.org\'')
    s.add_argument("-k", type=number(int, low=1), default=None, metavar="K",
                   help=f"number of hits to show (default: $WEBSIFT_DEFAULT_K, else {DEFAULT_K})")
    at = s.add_mutually_exclusive_group()
    at.add_argument("--offset", type=number(int, low=0), default=0, metavar="N",
                    help="hits to skip, as /search's offset")
    at.add_argument("--page", type=number(int, low=1), default=None, metavar="P",
                    help="show page P of K hits (offset (P-1)*K; default: the first)")
    s.add_argument("--topic", default=None, metavar="NAME|auto",
                   help="rank by this topic's PageRank, or 'auto': every topic mixed by its "
                   "likeness to the query, as /search's topic (default: global PageRank)")
    s.add_argument("--site", default=None, metavar="HOST",
                   help="only pages of this host, as /search's site (default: every host)")
    s.add_argument("--json", action="store_true", help="print the /search JSON object")
    s.add_argument("--explain", action="store_true", help="per-field, per-term score parts")
    s.set_defaults(func=search_command)

    p = sub.add_parser(
        "serve",
        help="serve the search API and the search page",
        description="Serve GET /search, /pages, /topics, /recrawl, /stats, /healthz, the "
        "search page at / and the API docs at /docs over the data directory. Newer index or "
        "ranks generations are picked up without a restart. Settings come from WEBSIFT_* "
        "environment variables (WEBSIFT_ADMIN_TOKEN enables POST/DELETE /topics and "
        "/admin/removals). With "
        "--shard DIR (repeated), the indexes of several data directories are searched as one "
        "(global statistics; their URL IDs must come from one ID space). With --shard URL "
        "(repeated), this is a front server: each query goes to those 'websift serve "
        "--shard-server' processes (with $WEBSIFT_SHARD_TOKEN) and their answers are merged; "
        "it serves /search, /, /stats and /healthz.",
    )
    # Defaults come from api/settings.py (and $WEBSIFT_HOST / $WEBSIFT_PORT) when serving, so
    # building the parser does not import pydantic for every other command.
    p.add_argument("--host", default=None,
                   help="address to bind (default: $WEBSIFT_HOST, else 127.0.0.1)")
    p.add_argument("--port", type=int, default=None,
                   help="port (default: $WEBSIFT_PORT, else 8000)")
    p.add_argument("--shard", action="append", default=None, metavar="DIR|URL",
                   help="a data directory whose index is searched with the others, or the "
                   "http://HOST:PORT of a 'websift serve' to fan queries out to; repeat for "
                   "each shard (default: --data alone)")
    p.add_argument("--shard-server", action="store_true",
                   help="also answer a front server's /shard/* calls, only with the shard "
                   "secret $WEBSIFT_SHARD_TOKEN as a bearer token (required unless --host is "
                   "loopback); without this flag a server has no /shard/* routes")
    p.add_argument("--ranks", default=None, metavar="DIR",
                   help="the data directory whose ranks, crawl store and topics are served "
                   "with the index (default: the first --shard DIR, else --data)")
    p.add_argument("--shard-timeout-ms", type=number(int, low=1), default=None, metavar="MS",
                   help="with --shard URL: each call to a shard must answer within this, else "
                   "the query is answered without it (default: $WEBSIFT_SHARD_TIMEOUT_MS, "
                   "else 300 ms)")
    p.add_argument("--frontier", default=None, metavar="URL",
                   help="a shared crawl frontier (redis://HOST:PORT/DB, rediss://, "
                   "redis+cluster://...) whose figures /stats shows (default: "
                   "$WEBSIFT_FRONTIER, else none)")
    p.add_argument("--workers", type=number(int, low=1), default=1, metavar="N",
                   help="server processes accepting on the one port (they share the "
                   "memory-mapped index)")
    p.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"],
        help="uvicorn's log level",
    )
    p.add_argument(
        "--access-log", action="store_true", help="log every request (off by default)"
    )
    p.set_defaults(func=serve_command)
