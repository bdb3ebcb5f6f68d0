"""`websift` subcommands owned by api/ (registered by api/cli.py): ``websift serve``."""

from __future__ import annotations

import argparse


def serve_command(args: argparse.Namespace) -> int:
    """Serve the search API and page over ``args.data`` with uvicorn until interrupted."""
    import uvicorn

    from api.app import create_app
    from api.settings import Settings

    given = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = Settings(data=args.data, **given)  # unset: $WEBSIFT_HOST / $WEBSIFT_PORT / defaults
    app = create_app(settings)  # refuses a missing or foreign data directory before binding
    print(f"websift serve: http://{settings.host}:{settings.port}/ over {args.data}", flush=True)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=args.log_level,
        access_log=args.access_log,
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this package's subcommands to the `websift` parser."""
    p = sub.add_parser(
        "serve",
        help="serve the search API and the search page",
        description="Serve GET /search, /pages, /topics, /recrawl, /stats, /healthz and the "
        "search page at / over the data directory. Newer index or ranks generations are "
        "picked up without a restart. Settings come from WEBSIFT_* environment variables "
        "(WEBSIFT_ADMIN_TOKEN enables POST/DELETE /topics).",
    )
    # Defaults come from api/settings.py (and $WEBSIFT_HOST / $WEBSIFT_PORT) when serving, so
    # building the parser does not import pydantic for every other command.
    p.add_argument("--host", default=None, help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="port (default 8000)")
    p.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"],
        help="uvicorn's log level (default %(default)s)",
    )
    p.add_argument(
        "--access-log", action="store_true", help="log every request (off by default)"
    )
    p.set_defaults(func=serve_command)
