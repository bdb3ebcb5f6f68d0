"""``websift up``: the whole engine under one supervisor; ``websift status``: what it is doing.

``up`` runs the continuous crawl, an indexer that follows it, link analysis on a schedule and
the search server, each its own ``websift`` process (``api/up_parts.py`` builds them,
``api/supervisor.py`` runs them).  Its options are the parts' own, passed on unchanged: the
crawl's (``crawler/commands.crawl_options``), the index's memory and processes, PageRank's
parameters (``ranking/commands.rank_options``) and the server's address and workers.
``status`` prints ``DATA/up-status.json`` (``api/up_status.py``), one line per part.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from websift.api.exchange_command import add_exchange_options, default_shard_name
from websift.api.supervisor import STOP_TIMEOUT, Supervisor
from websift.api.up_parts import DEFAULT_RANK_EVERY, STOP_ORDER, build_parts
from websift.api.up_status import read_status, status_lines, status_path
from websift.core.arguments import number, seconds
from websift.core.datadir import DataDir
from websift.crawler.commands import crawl_options, seed_with_scheme
from websift.indexer.settings import (
    DEFAULT_INDEX_PROCS,
    DEFAULT_RAM_MB,
    FOLLOW_EVERY_PAGES,
    FOLLOW_INTERVAL_SECONDS,
)
from websift.ranking.commands import rank_options

EXIT_NOT_RUNNING = 1
EXIT_USAGE = 2


def _options_of(p: argparse.ArgumentParser,
                add: Callable[[argparse.ArgumentParser], None]) -> list[argparse.Action]:
    """The options ``add`` puts on ``p``."""
    before = len(p._actions)
    add(p)
    return p._actions[before:]


def _index_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ram-mb", type=number(int, low=1), default=DEFAULT_RAM_MB, metavar="M",
                   help="the indexer's memory for hit buffers and inversion, in MB")
    p.add_argument("--procs", type=number(int, low=1), default=DEFAULT_INDEX_PROCS, metavar="N",
                   help="the indexer's worker processes (1 = no workers)")
    p.add_argument("--index-interval", type=seconds(),
                   default=FOLLOW_INTERVAL_SECONDS, metavar="DURATION",
                   help="the indexer cuts a segment when pages changed and this long has passed "
                   "since its last cut (websift index --follow --interval)")
    p.add_argument("--index-every", type=number(int, low=1), default=FOLLOW_EVERY_PAGES,
                   metavar="PAGES", help="... or as soon as this many changed pages wait "
                   "(websift index --follow --every)")


def _serve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="address the search server binds")
    p.add_argument("--port", type=number(int, low=1, high=65535), default=8000,
                   help="the search server's port")
    p.add_argument("--workers", type=number(int, low=1), default=1, metavar="N",
                   help="server processes accepting on the one port")
    p.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error"], help="uvicorn's log level")
    p.add_argument("--access-log", action="store_true", help="log every request")
    p.add_argument("--shard-server", action="store_true",
                   help="the server also answers a front server's /shard/* calls (with "
                   "$WEBSIFT_SHARD_TOKEN): websift serve --shard URL... over every machine's up")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``websift up`` and ``websift status``."""
    p = sub.add_parser(
        "up",
        help="run the engine: continuous crawl, indexer, ranking and server, supervised",
        description="Run the whole engine until stopped, each part its own process: the "
        "continuous crawl (websift crawl --continuous), an indexer that follows it (websift "
        "index --follow: new pages searchable within seconds), link analysis every "
        "--rank-every (websift rank) and the search server (websift serve). A part that dies "
        "is restarted with a back-off that doubles up to 60 s; one that exits 2 (a usage or "
        "setup error) stops up with its line. The first SIGINT/SIGTERM stops the parts in "
        "order (crawl, index, rank, server) and exits 0; a second kills them. The state is "
        "in DATA/up-status.json: see websift status. The options are the parts' own. On each "
        "machine of a cluster, --partitioned URL --exchange DIR makes the crawl a partitioned "
        "one and link analysis global: every --rank-every, websift exchange exports this "
        "shard into DIR, the machine holding the ranking lease ranks over every shard, and "
        "each machine imports the global generation and the others' anchor texts.",
    )
    p.add_argument("seeds", nargs="*", metavar="SEED_URL",
                   help="where the crawl starts (none: resume the data directory's crawl)")
    p.add_argument("--rank-every", type=seconds(strict=True), default=DEFAULT_RANK_EVERY,
                   metavar="T", help="time between two starts of link analysis (websift rank); "
                   "its first run follows the first index")
    p.add_argument("--stop-timeout", type=seconds(strict=True), default=STOP_TIMEOUT,
                   metavar="T", help="time each part has to stop after SIGTERM before it is "
                   "killed")
    p.add_argument("--quiet", action="store_true",
                   help="no lines of up's own (the parts' output is still shown)")
    add_exchange_options(p)  # a cluster: with --partitioned, link analysis is global
    # part -> the options up passes on to it
    forwarded = {name: _options_of(p, add) for name, add in (
        ("crawl", crawl_options), ("index", _index_options), ("rank", rank_options),
        ("serve", _serve_options))}
    p.set_defaults(func=up_command, forwarded=forwarded)

    s = sub.add_parser(
        "status", help="what websift up is doing: one line per part",
        description="Print the state websift up last wrote in DATA/up-status.json: each "
        "part's state, pid, restarts, last start, last exit, last success and lag. Exit 0 "
        "while up runs, 1 when it does not.")
    s.add_argument("--json", action="store_true", help="print the status file's object")
    s.set_defaults(func=status_command)


def up_command(args: argparse.Namespace) -> int:
    if args.exchange is not None and args.partitioned is None:
        print("websift up: --exchange is for a partitioned crawl: give --partitioned URL too",
              file=sys.stderr)
        return EXIT_USAGE
    if args.exchange is not None and not args.exchange.is_dir():
        print(f"websift up: --exchange {args.exchange} is not a directory (make it on the "
              "shared file system first)", file=sys.stderr)
        return EXIT_USAGE
    args.seeds = [seed_with_scheme(s) for s in args.seeds]
    data = DataDir.create(args.data)
    if args.exchange is not None and args.shard_name is None:
        args.shard_name = default_shard_name(data.root)
    parts = build_parts(args, data, args.forwarded)
    supervisor = Supervisor(parts, status_path(data.root), STOP_ORDER,
                            stop_timeout=args.stop_timeout, quiet=args.quiet)
    return supervisor.run()


def status_command(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    path = status_path(DataDir.open(args.data).root)
    status = read_status(path)
    if status is None:
        print(f"websift status: 'websift up' has not run in {args.data} (no {path.name})",
              file=sys.stderr)
        return EXIT_NOT_RUNNING
    now = time.time()
    if args.json:
        print(json.dumps({**asdict(status), "running": status.running(now)}, indent=1))
    else:
        print("\n".join(status_lines(status, now)))
    return 0 if status.running(now) else EXIT_NOT_RUNNING
