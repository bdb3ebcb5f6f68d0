"""``websift exchange``: one turn of a cluster machine's share of link analysis (export its
shard, rank over every shard if it holds the lease, import the global generation and the
others' anchor texts): ranking/exchange.py.  ``websift up --exchange`` runs it every
``--rank-every``; it can be run by hand (or by cron) beside a plain ``websift crawl
--partitioned`` too."""

from __future__ import annotations

import argparse
import os
import re
import sys
import uuid
from pathlib import Path

from websift.core.datadir import DataDir
from websift.ranking.commands import rank_options

EXIT_USAGE = 2
_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def default_shard_name(data: Path) -> str:
    """This machine's name and the data directory's: unique across the machines of a cluster
    that use the same path on each."""
    return _NAME.sub("-", f"{os.uname().nodename}-{data.resolve().name}").strip("-") or "shard"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "exchange",
        help="one turn of a cluster machine: export its shard, rank over every shard if it "
        "holds the lease, import the global ranks and the other shards' anchor texts",
        description="For a partitioned crawl spread over machines that share the directory "
        "--exchange: write this data directory's export (the link export of its crawl store "
        "as of one commit, and its anchor texts for the other shards) there, rank over every "
        "shard's export when some export is newer than the last global generation and this "
        "machine gets the ranking lease in the crawl's Redis (one ranker at a time; a dead "
        "one's lease expires), then copy this shard's copy of the last global generation into DATA/ranks "
        "(the server swaps it in live) and the other shards' anchor exports into "
        "DATA/foreign-anchors (websift index --follow --anchors-dir reads them).",
    )
    add_exchange_options(p)
    p.add_argument("--partitioned", default=None, metavar="URL",
                   help="the partitioned crawl's Redis (redis://HOST:PORT/DB): the ranking "
                   "lease lives there")
    rank_options(p)
    p.add_argument("--quiet", action="store_true", help="no line unless something failed")
    p.set_defaults(func=exchange_command)


def add_exchange_options(p: argparse.ArgumentParser) -> None:
    """``--exchange`` and ``--shard-name``: ``exchange`` has them, and ``up`` passes them on."""
    p.add_argument("--exchange", type=Path, default=None, metavar="DIR",
                   help="the directory every machine of the cluster shares (NFS): shard "
                   "exports, the global ranks and the anchor texts move through it")
    p.add_argument("--shard-name", default=None, metavar="NAME",
                   help="this shard's name in the exchange directory (default: the machine's "
                   "name and the data directory's)")


def exchange_command(args: argparse.Namespace) -> int:
    from websift.core.extras import require

    if args.exchange is None or args.partitioned is None:
        print("exchange: --exchange DIR and --partitioned URL are both needed", file=sys.stderr)
        return EXIT_USAGE
    require("cluster", "--partitioned", ("redis",))
    from websift.crawler.partitions import connect
    from websift.indexer.settings import IndexSettings
    from websift.ranking.exchange import (
        Exchange,
        RankLease,
        export_shard,
        import_anchors,
        import_ranks,
        rank_round,
        stale,
    )

    data = DataDir.open(args.data)
    name = args.shard_name or default_shard_name(data.root)
    exchange = Exchange(args.exchange)
    if not exchange.root.is_dir():
        print(f"exchange: --exchange {exchange.root} is not a directory (make it on the "
              "shared file system first)", file=sys.stderr)
        return EXIT_USAGE
    client = connect(args.partitioned)  # unreachable: one line, exit 2 (api/cli.py)

    def say(line: str) -> None:
        if not args.quiet:
            print(f"exchange: {line}", flush=True)

    if not data.store_path.exists():
        say("no crawl store yet: nothing to export")
        return 0
    settings = IndexSettings.from_env()
    if export_shard(data, exchange, name, navigation=settings.anchor_templates,
                    settings=settings):
        say(f"shard {name} exported")
    todo = stale(exchange)
    if todo is not None:
        lease = RankLease(client, f"{os.uname().nodename}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        with lease.held() as mine:
            todo = stale(exchange) if mine else None  # another may have ranked meanwhile
            if todo is not None:
                number = rank_round(exchange, todo, damping=args.damping, tol=args.tol,
                                    dangling=args.dangling)
                say(f"round {number}: global ranks over {len(todo)} shards "
                    f"({', '.join(sorted(todo))})")
        if lease.lost:
            print(f"exchange: warning: the ranking lease expired during the run (renewed "
                  f"later than {lease.ttl:.0f}s): another machine may have ranked beside this "
                  "one", file=sys.stderr)
    got = import_ranks(exchange, name, data)
    if got is not None:
        say(f"round {got} imported into {data.ranks_dir}")
    changed = import_anchors(exchange, name, data, exchange.exports())
    if changed:
        say(f"{changed} other shards' anchor exports copied")
    return 0
