"""`websift frontier status`: what a shared frontier (Redis) holds now.

Crawlers alive with their heartbeat age and fetch rate, hosts leased, pages pending / taken /
waiting for a refresh, and the OPIC cash total: pages + virtual page + transfers in flight,
which is 1 (up to rounding) at every moment on one Redis (``crawler/redis_frontier.py``; the
figures are read by ``crawler/redis_admin.py``).
"""

from __future__ import annotations

import argparse
import json

from websift.core.extras import require


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "frontier", help="a shared crawl frontier (Redis): its status",
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


def status_command(args: argparse.Namespace) -> int:
    require("cluster", "the shared frontier's status", ("redis",))
    from websift.crawler.redis_admin import connect, frontier_status

    status = frontier_status(connect(args.frontier))
    if args.json:
        print(json.dumps(status, sort_keys=True))
        return 0
    cash = status["cash"]
    print(f"frontier {args.frontier}: format {status['format']} v{status['version']}")
    print(f"  URLs {status['urls']}  hosts {status['hosts']} ({status['hosts_leased']} leased)  "
          f"pending {status['pending']}  taken {status['taken']}  "
          f"waiting refresh {status['waiting_refresh']}")
    print(f"  cash total {cash['total']:.12f} = pages {cash['pages']:.12f} + virtual "
          f"{cash['virtual']:.12f} + in flight {cash['in_flight']:.12f} "
          f"({cash['transfers']} transfers)")
    print(f"  crawlers alive {status['crawlers_alive']} of {len(status['crawlers'])}")
    for c in status["crawlers"]:
        state = "alive" if c["alive"] else ("stopped" if c.get("stopped") else "silent")
        print(f"    {c['id']}  {state:7}  heartbeat {c['heartbeat_age']:.1f}s ago  "
              f"pid {c.get('pid')} on {c.get('machine')}  pages {c.get('pages')}  "
              f"{c.get('pages_per_second')} pages/s  hosts {c.get('hosts')}")
    return 0
