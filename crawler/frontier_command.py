"""`websift frontier status`: what a shared frontier (Redis) holds now; `websift frontier
init`: a new frontier whose URL IDs start above the shards of a lost one.

Crawlers alive with their heartbeat age and fetch rate, hosts leased, pages pending / taken /
waiting for a refresh, and the OPIC cash total: pages + virtual page + transfers in flight,
which is 1 (up to rounding) at every moment on one Redis (``crawler/redis_frontier.py``; the
figures are read by ``crawler/redis_admin.py``).
"""

from __future__ import annotations

import argparse
import json
import sys

from websift.core.arguments import number
from websift.core.errors import WebsiftError
from websift.core.extras import require


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "frontier", help="a shared crawl frontier (Redis): its status, or a new one",
        description="Look at the frontier several `websift crawl --frontier URL` processes "
        "share: the crawlers and their heartbeats, the hosts they lease, the URLs pending, "
        "and the OPIC cash total.")
    verbs = p.add_subparsers(dest="verb", required=True)
    s = verbs.add_parser(
        "status", help="crawlers, hosts leased, pending URLs, cash total",
        description="Print the crawlers alive (heartbeat age, pages, pages/s), hosts leased, "
        "URLs pending / taken / waiting for a refresh, and the cash total: pages + virtual page "
        "+ transfers in flight, which stays 1.  The password comes from "
        "$WEBSIFT_REDIS_PASSWORD (or $REDISCLI_AUTH).")
    s.add_argument("--frontier", required=True, metavar="URL",
                   help="redis://HOST:PORT/DB, rediss://... or redis+cluster://HOST:PORT,...")
    s.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    s.set_defaults(func=status_command)
    i = verbs.add_parser(
        "init", help="make a new frontier on an empty database, its URL IDs above N",
        description="Make the frontier on an empty Redis database before any crawler starts, "
        "its URL IDs above N: after a frontier lost its data, N is the highest 'URL IDs up "
        "to' its crawlers reported, so the new crawl's shards never reuse an ID the old "
        "shards hold.  (A crawler that finds an empty database makes the frontier itself, "
        "its IDs from 1.)")
    i.add_argument("--frontier", required=True, metavar="URL",
                   help="redis://HOST:PORT/DB, rediss://... or redis+cluster://HOST:PORT,...")
    i.add_argument("--ids-above", type=number(int, low=0), required=True, metavar="N",
                   help="the new frontier's first URL ID is N + 1")
    i.set_defaults(func=init_command)
    c = verbs.add_parser(
        "check", help="a partitioned crawl's cash total over its stores and Redis",
        description="Sum a partitioned crawl's cash (`websift crawl --partitioned URL`): every "
        "store's pages and virtual page and its transfers not yet sent, plus the batches in "
        "the Redis Streams no store applied yet.  The total is 1; exit 1 when it is not (to "
        "1e-9).  Give every crawler's data directory.")
    c.add_argument("--partitioned", required=True, metavar="URL", help="redis://HOST:PORT/DB")
    c.add_argument("shards", nargs="+", metavar="DATA_DIR", help="every crawler's --data")
    c.set_defaults(func=check_command)


def status_command(args: argparse.Namespace) -> int:
    require("cluster", "the shared frontier's status", ("redis",))
    from websift.crawler.redis_admin import connect, frontier_status

    status = frontier_status(connect(args.frontier))
    if args.json:
        print(json.dumps(status, sort_keys=True))
        return 0
    cash = status["cash"]
    print(f"frontier {args.frontier}: format {status['format']} v{status['version']}  "
          f"id {status['id'][:8]}  URL IDs above {status['ids_above']}")
    print(f"  URLs {status['urls']}  hosts {status['hosts']} ({status['hosts_leased']} leased)  "
          f"pending {status['pending']}  taken {status['taken']}  "
          f"waiting refresh {status['waiting_refresh']}")
    print(f"  cash total {cash['total']:.12f} = pages {cash['pages']:.12f} + virtual "
          f"{cash['virtual']:.12f} + in flight {cash['in_flight']:.12f} "
          f"({cash['transfers']} transfers)")
    scope = status["scope"]
    if scope is not None:
        print("  scope " + "  ".join(f"{k} {v}" for k, v in sorted(scope.items())
                                     if v not in ([], None, False)))
    print(f"  crawlers alive {status['crawlers_alive']} of {len(status['crawlers'])}")
    for c in status["crawlers"]:
        state = "alive" if c["alive"] else ("stopped" if c.get("stopped") else "silent")
        print(f"    {c['id']}  {state:7}  heartbeat {c['heartbeat_age']:.1f}s ago  "
              f"pid {c.get('pid')} on {c.get('machine')}  pages {c.get('pages')}  "
              f"{c.get('pages_per_second')} pages/s  hosts {c.get('hosts')}")
    return 0


CASH_TOLERANCE = 1e-9


def check_command(args: argparse.Namespace) -> int:
    require("cluster", "a partitioned crawl's check", ("redis",))
    from websift.core.datadir import DataDir
    from websift.crawler.mailbox import check_cash

    stores = [DataDir.open(d).store_path for d in args.shards]
    cash = check_cash(args.partitioned, stores)
    print(f"cash total {cash.total:.12f} = stores {cash.stores:.12f} + outboxes "
          f"{cash.outboxes:.12f} + in flight {cash.in_flight:.12f} "
          f"({cash.batches_in_flight} batches)")
    if abs(cash.total - 1.0) > CASH_TOLERANCE:
        print(f"websift frontier check: error: the cash total is {cash.total!r}, not 1 (a "
              "store missing from the list, or a lost transfer)", file=sys.stderr)
        return 1
    return 0


class FrontierExists(WebsiftError):
    """``frontier init`` on a database that already holds a frontier."""


def init_command(args: argparse.Namespace) -> int:
    require("cluster", "a shared frontier", ("redis",))
    from websift.crawler.redis_admin import GLV, connect

    client = connect(args.frontier, ids_above=args.ids_above)
    # a frontier that has given no URL ID yet (a crawler that was refused made it) takes N too
    moved = client.eval(RAISE_FLOOR, 1, GLV, args.ids_above)
    if not moved:
        raise FrontierExists(f"{args.frontier} holds a frontier that has given URL IDs "
                             f"already (up to {client.hget(GLV, 'nextid')}); FLUSHDB it "
                             "first if it is a lost one")
    print(f"frontier {args.frontier}: id {str(client.hget(GLV, 'id'))[:8]}, "
          f"URL IDs above {args.ids_above}")
    return 0


# KEYS[1] = "{g}:lv"; ARGV[1] = N: IDs above N, if none was given yet.  Returns 1 or 0.
RAISE_FLOOR = """
local v = redis.call('HMGET', KEYS[1], 'nextid', 'ids_above')
if (tonumber(v[1]) or 0) ~= (tonumber(v[2]) or 0) then return 0 end
redis.call('HSET', KEYS[1], 'nextid', ARGV[1], 'ids_above', ARGV[1])
return 1
"""
