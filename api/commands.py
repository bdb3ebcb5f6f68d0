"""`websift` subcommands owned by api/ (registered by api/cli.py): ``websift serve``."""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING

from core.arguments import number

if TYPE_CHECKING:
    from api.settings import Settings


def worker_environment(settings: Settings) -> dict[str, str]:
    """The ``WEBSIFT_*`` variables that rebuild ``settings``' served part in a worker process
    (uvicorn starts workers fresh: they read their settings from the environment)."""
    env = {
        "WEBSIFT_DATA": str(settings.data),
        "WEBSIFT_HOST": settings.host,
        "WEBSIFT_PORT": str(settings.port),
        "WEBSIFT_SHARDS": json.dumps(settings.shards),
        "WEBSIFT_SHARD_TIMEOUT_MS": str(settings.shard_timeout_ms),
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

    from api.app import create_app
    from api.settings import Settings
    from api.workers import serve_workers

    given = {k: v for k, v in (("host", args.host), ("port", args.port), ("ranks", args.ranks),
                               ("shard_timeout_ms", args.shard_timeout_ms),
                               ("frontier", args.frontier)) if v is not None}
    if args.shard:
        given["shards"] = list(args.shard)
    settings = Settings(data=args.data, **given)  # unset: $WEBSIFT_* / defaults
    # Refuses a missing or foreign data directory, a bad index or ranks, or bad --shard values
    # before binding (with --workers, each worker opens its own afterwards).
    app = create_app(settings)
    over = " + ".join(settings.shards) or str(args.data)
    workers = f", {args.workers} worker processes" if args.workers > 1 else ""
    print(f"websift serve: http://{settings.host}:{settings.port}/ over {over}{workers}",
          flush=True)
    if args.workers == 1:
        uvicorn.run(app, host=settings.host, port=settings.port, log_level=args.log_level,
                    access_log=args.access_log)
        return 0
    # N processes, each building the application from the environment and accepting on its
    # own socket of the one port (api/workers.py).
    del app
    os.environ.update(worker_environment(settings))
    serve_workers(args.workers, settings.host, settings.port, args.log_level, args.access_log)
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this package's subcommands to the `websift` parser."""
    p = sub.add_parser(
        "serve",
        help="serve the search API and the search page",
        description="Serve GET /search, /pages, /topics, /recrawl, /stats, /healthz, the "
        "search page at / and the API docs at /docs over the data directory. Newer index or "
        "ranks generations are picked up without a restart. Settings come from WEBSIFT_* "
        "environment variables (WEBSIFT_ADMIN_TOKEN enables POST/DELETE /topics). With "
        "--shard DIR (repeated), the indexes of several data directories are searched as one "
        "(global statistics; their URL IDs must come from one ID space). With --shard URL "
        "(repeated), this is a front server: each query goes to those 'websift serve' "
        "processes and their answers are merged; it serves /search, /, /stats and /healthz.",
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
    p.add_argument("--ranks", default=None, metavar="DIR",
                   help="the data directory whose ranks, crawl store and topics are served "
                   "with the index (default: the first --shard DIR, else --data)")
    p.add_argument("--shard-timeout-ms", type=number(int, low=1), default=None, metavar="MS",
                   help="with --shard URL: each call to a shard must answer within this, else "
                   "the query is answered without it (default: $WEBSIFT_SHARD_TIMEOUT_MS, "
                   "else 300)")
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
