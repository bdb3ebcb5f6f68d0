"""Micro-benchmark: the frontier alone (no network, no Scrapy) over a long simulated crawl.

Drives ``crawler.frontier.Frontier`` through ``--reads`` simulated page reads over ``--hosts``
hosts: each read picks the richest page among ``--ready`` hosts politeness would allow (a random
sample of the hosts with pending pages), takes it, and reads it with ``--new`` new URLs (hosts
drawn from a power law) plus ``--old-links`` links to known pages; the virtual page pays out every
32 reads.  A simulated clock advances 1/``--pages-per-second`` per read, so read pages come
back as refresh candidates after ``--refetch-interval`` simulated seconds and compete with
discovery.  With ``--store`` every step also goes through a real crawl store (URL rows added,
the dirty OPIC rows and globals written in batches of 32, as the crawler's group commit does).

Prints the rate (reads per CPU second) over the first and the last 10% of the reads
and their ratio: a frontier whose cost per page does not grow with the crawl keeps the ratio
near 1.  ``--old N`` also runs the frontier before lazy dividends (``git show HEAD:...``, if it
still has the old API) for N reads, without a store (its per-read cost is O(known URLs)).

    .venv/bin/python -m scripts.benchmarks.bench_frontier  # 200,000 reads, frontier only
    .venv/bin/python -m scripts.benchmarks.bench_frontier --store --reads 50000
    .venv/bin/python -m scripts.benchmarks.bench_frontier --reads 20000 --old 20000
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from websift.crawler.frontier import Frontier
from websift.store.crawl_store import CrawlStore

REPO = Path(__file__).resolve().parents[2]

BATCH = 32  # steps per group commit (crawler/settings.py COMMIT_EVERY_STEPS)


class SimClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def old_frontier_module() -> ModuleType | None:
    """The frontier of the last commit, if it predates lazy dividends."""
    try:
        source = subprocess.run(["git", "show", "HEAD:crawler/frontier.py"], cwd=REPO,
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"bench_frontier: no old frontier ({exc})", file=sys.stderr)
        return None
    if "LazyOpicState" in source:
        print("bench_frontier: HEAD's frontier is the new one already", file=sys.stderr)
        return None
    spec = importlib.util.spec_from_loader("old_frontier", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, "HEAD:crawler/frontier.py", "exec"), module.__dict__)
    return module


def simulate(frontier: Any, args: argparse.Namespace, reads: int, clock: SimClock, *,
             store: CrawlStore | None, label: str) -> dict[str, float]:
    rng = np.random.default_rng(args.seed)
    next_id = 1
    url_of: dict[int, str] = {}

    def new_url(host: int) -> int:
        nonlocal next_id
        url = f"http://h{host}.test/p{next_id}"
        if store is not None:
            uid, _ = store.add_url(url)
            host_id = store.host_id(f"http://h{host}.test")
        else:
            uid, host_id = next_id, host
        next_id += 1
        url_of[uid] = url
        frontier.add(uid, url, host_id, 0)
        return uid

    if store is not None:
        store.begin()
    for host in range(args.hosts):  # one seed per host
        new_url(host)
    frontier.distribute_virtual()
    known: list[int] = list(url_of)
    stamps = np.zeros(reads + 1, dtype=np.float64)
    steps = 0
    # CPU time of this process: the machine may be shared, and the frontier never waits
    start = time.process_time()
    done = 0
    persist: Callable[[], None] = (lambda: frontier.persist(store)) if store is not None else (
        lambda: None)
    was_read: Callable[[int], bool] = getattr(frontier, "was_read", lambda uid: False)
    refreshes = 0
    while done < reads:
        hosts = frontier.pending_hosts()
        if not hosts:
            clock.now += 1.0  # nothing due: time passes until read pages come back
            continue
        if len(hosts) > args.ready:
            hosts = [hosts[i] for i in rng.choice(len(hosts), args.ready, replace=False)]
        uid = frontier.select(hosts)
        if uid is None:
            clock.now += 1.0
            continue
        refreshes += was_read(uid)
        frontier.take(uid)
        draws = np.minimum(rng.pareto(1.2, args.new).astype(np.int64), args.hosts - 1)
        kids = [new_url(int(h)) for h in draws]
        known.extend(kids)
        kids += [known[int(i)] for i in rng.integers(0, len(known), args.old_links)]
        frontier.read(uid, kids)
        if frontier.virtual_due():
            frontier.distribute_virtual()
        steps += 1
        if store is not None and steps % BATCH == 0:
            persist()
            store.commit()
            store.begin()
        clock.now += 1.0 / args.pages_per_second
        done += 1
        stamps[done] = time.process_time() - start
    if store is not None:
        persist()
        store.commit()
    tenth = max(1, reads // 10)
    first = tenth / stamps[tenth]
    last = tenth / (stamps[reads] - stamps[reads - tenth])
    figures = {"reads": float(reads), "seconds": float(stamps[reads]),
               "first": first, "last": last, "ratio": last / first,
               "known": float(len(known)), "refreshes": float(refreshes)}
    print(f"{label:<28} {reads:>8} reads  {figures['seconds']:8.1f} CPU s  first 10%: "
          f"{first:9.0f}/s  last 10%: {last:9.0f}/s  last/first: {last / first:5.2f}  "
          f"URLs known: {len(known)}, refetches among the reads: {refreshes}", flush=True)
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reads", type=int, default=200_000)
    ap.add_argument("--hosts", type=int, default=300)
    ap.add_argument("--new", type=int, default=7, help="new URLs per read")
    ap.add_argument("--old-links", type=int, default=3, help="links to known URLs per read")
    ap.add_argument("--ready", type=int, default=64, help="hosts politeness allows per pick")
    ap.add_argument("--pages-per-second", type=float, default=150.0,
                    help="simulated crawl speed (drives the refetch clock)")
    ap.add_argument("--refetch-interval", type=float, default=300.0,
                    help="simulated seconds before a read page may be fetched again")
    ap.add_argument("--store", action="store_true", help="persist through a real crawl store")
    ap.add_argument("--old", type=int, default=0, metavar="N",
                    help="also run the pre-lazy frontier (HEAD) for N reads, without a store")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    clock = SimClock()
    with tempfile.TemporaryDirectory() as tmp:
        store = CrawlStore.open(Path(tmp) / "bench.sqlite3") if args.store else None
        frontier = Frontier(clock=clock, min_refetch_interval=args.refetch_interval)
        new = simulate(frontier, args, args.reads, clock, store=store,
                       label="lazy frontier" + (" + store" if store else ""))
        stats = frontier.stats()
        print(f"  at the end: pending unread {int(stats['pending_unread'])}, refresh candidates "
              f"{int(stats['pending_refresh'])}, read pages waiting for their interval "
              f"{int(stats['waiting_refresh'])}")
        if store is not None:
            store.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak RSS {peak:.0f} MiB ({peak * 2**20 / new['known']:.0f} bytes per URL known)")
    if args.old:
        module = old_frontier_module()
        if module is not None:
            old = simulate(module.Frontier(), args, args.old, SimClock(), store=None,
                           label="old frontier (HEAD)")
            n = args.old
            print(f"  at {n} reads: last 10% lazy/old = "
                  f"{(new['last'] if n == args.reads else float('nan')) / old['last']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
