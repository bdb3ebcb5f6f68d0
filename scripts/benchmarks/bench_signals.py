"""The web's own signals, measured: a continuous crawl of a changing web with and without them.

    python -m scripts.benchmarks.bench_signals [--pages 600] [--hosts 6] [--duration 120]

A generated web (testkit/genweb.py) with sitemaps (truthful on some hosts, lying on others),
feeds and canonical variants (testkit/signalweb.py) is served by nginx (as
scripts/benchmarks/crawl_scale.py does) and changes at known times while ``websift crawl
--continuous`` runs on it for the same duration, once with signals and once ``--no-signals`` (same
delay, same refetch interval: the same budget).  From nginx's log (the server's view) and the
change times:

- time from a page's change to its next fetch, p50 and p95, for pages in a truthful sitemap,
  new feed items, and pages in neither (a change not refetched by the end counts as the time
  left until the end: a lower bound, so a crawl that misses changes is not flattered);
- refetches that found the page unchanged (no change since its previous fetch), of all
  refetches, over all hosts and by host role (truthful sitemap, lying sitemap, none);
- canonical variants indexed as pages of their own (fetched, not a duplicate) from the store.

Each run gets a fresh copy of the web (the changes rewrite its files).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from scripts.benchmarks.crawl_scale import Hit, Nginx, find_nginx
from testkit.genweb import WebParams, ensure_web
from testkit.signalweb import FEED, LYING, NEITHER, TRUTHFUL, Change, SignalWeb
from websift.core.datadir import DataDir
from websift.store.views import StoreReader

PORT = 8093  # not crawl_scale's 8080: both may run on one machine
DELAY = 0.2  # seconds between requests to one host
MIN_REFETCH = 60.0  # --min-refetch-interval, seconds
WARMUP = 20.0  # seconds of crawling before the first change
EVERY = 0.5  # seconds between two changes
SIGNAL_FLAGS = ["--signals", "--sitemap-interval", "10", "--feed-min-interval", "5",
                "--feed-max-interval", "60"]


def crawl(seeds: list[str], data: Path, duration: float, signals: bool,
          world: SignalWeb) -> tuple[list[Change], float, float]:
    """One continuous crawl; the world changes every EVERY seconds after WARMUP."""
    cmd = [sys.executable, "-m", "websift", "crawl", *seeds, "--data", str(data),
           "--allow-private", "--continuous", "--duration", f"{duration:g}", "--delay",
           f"{DELAY:g}", "--min-refetch-interval", f"{MIN_REFETCH:g}", "--quiet",
           *(SIGNAL_FLAGS if signals else ["--no-signals"])]
    changes: list[Change] = []
    stop = threading.Event()

    def change_loop() -> None:
        if stop.wait(WARMUP):
            return
        while not stop.wait(EVERY):
            event = world.step(time.time())
            if event is not None:
                changes.append(event)

    start = time.time()
    thread = threading.Thread(target=change_loop, daemon=True)
    thread.start()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    stop.set()
    thread.join()
    if proc.returncode != 0:
        raise SystemExit(f"websift crawl failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return changes, start, time.time()


def delays(changes: list[Change], hits: list[Hit], web_address: list[str], end: float,
           kind: str) -> list[float]:
    """Seconds from each change of ``kind`` to the next fetch of its page (to the end if none)."""
    fetched: dict[tuple[str, str], list[float]] = {}
    for h in hits:
        fetched.setdefault((h.address, h.uri), []).append(h.start)
    out = []
    for c in changes:
        if c.kind != kind:
            continue
        times = [t for t in fetched.get((web_address[c.host], c.path), []) if t >= c.at]
        out.append((min(times) if times else end) - c.at)
    return out


def unchanged_share(changes: list[Change], hits: list[Hit], web_address: list[str],
                    only: set[str] | None = None) -> tuple[int, int]:
    """(refetches of regular and news pages that came with no change since the last fetch, all
    their refetches), of the hosts at addresses ``only``, or of all."""
    changed: dict[tuple[str, str], list[float]] = {}
    for c in changes:
        changed.setdefault((web_address[c.host], c.path), []).append(c.at)
    last: dict[tuple[str, str], float] = {}
    refetches = unchanged = 0
    for h in hits:
        if not (h.uri.startswith(("/p/", "/news/")) and h.status in (200, 304)):
            continue
        if only is not None and h.address not in only:
            continue
        key = (h.address, h.uri)
        if key in last:
            refetches += 1
            if not any(last[key] <= t < h.start for t in changed.get(key, [])):
                unchanged += 1
        last[key] = h.start
    return unchanged, refetches


def variants_indexed(data: Path) -> tuple[int, int]:
    """(canonical variants fetched, of those indexed as pages of their own)."""
    with StoreReader.open(DataDir.open(data).store_path) as store:
        rows = [p for p in store.pages("fetched") if p.url.endswith(".v.html")]
    return len(rows), sum(1 for p in rows if p.duplicate_of is None)


def pct(values: list[float], q: float) -> str:
    return f"{np.percentile(values, q):.1f}" if values else "-"


def run(args: argparse.Namespace, signals: bool, base: Path) -> dict[str, Any]:
    root = base / ("web-signals" if signals else "web-plain")
    web = ensure_web(root, WebParams(args.pages, args.hosts, args.seed, PORT))
    world = SignalWeb(web)
    data = base / ("data-signals" if signals else "data-plain")
    with Nginx(web, base / ("nginx-signals" if signals else "nginx-plain")) as server:
        since = server.log_size()
        changes, _, end = crawl(web.seeds(), data, args.duration, signals, world)
        hits = [h for h in server.hits(since) if h.agent.startswith("websift")]
    addresses = web.addresses()
    out: dict[str, Any] = {"fetches": len(hits)}
    for kind in (TRUTHFUL, FEED, NEITHER):
        d = delays(changes, hits, addresses, end, kind)
        out[kind] = (pct(d, 50), pct(d, 95), len(d))
    out["unchanged"] = unchanged_share(changes, hits, addresses)
    for role in (TRUTHFUL, LYING, NEITHER):
        only = {a for h, a in enumerate(addresses) if world.role(h) == role}
        out[f"unchanged {role}"] = unchanged_share(changes, hits, addresses, only)
    out["pages"] = len({(h.address, h.uri) for h in hits if h.uri.startswith(("/p/", "/news/"))
                        and h.status == 200})
    out["variants"] = variants_indexed(data)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=600)
    parser.add_argument("--hosts", type=int, default=6)
    parser.add_argument("--duration", type=float, default=120.0, help="seconds per crawl")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the run directory")
    args = parser.parse_args()
    find_nginx()
    base = Path(tempfile.mkdtemp(prefix="websift-bench-signals-"))
    try:
        results = {"with signals": run(args, True, base), "without": run(args, False, base)}
    finally:
        if args.keep:
            print(f"run directory kept: {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(f"{args.pages} pages, {args.hosts} hosts, {args.duration:g} s continuous crawl each, "
          f"delay {DELAY:g} s, min refetch {MIN_REFETCH:g} s, a change every {EVERY:g} s "
          f"after {WARMUP:g} s")
    print("| crawl | fetches | pages fetched | truthful sitemap p50 / p95 s (n) | feed item "
          "p50 / p95 s (n) | neither p50 / p95 s (n) | refetches that found no change, of all: "
          "all hosts / truthful / lying / no sitemap | variants fetched / indexed |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        cells = [f"{r[k][0]} / {r[k][1]} ({r[k][2]})" for k in (TRUTHFUL, FEED, NEITHER)]
        wasted = " / ".join(f"{r[k][0]} of {r[k][1]}" for k in (
            "unchanged", f"unchanged {TRUTHFUL}", f"unchanged {LYING}", f"unchanged {NEITHER}"))
        print(f"| {name} | {r['fetches']} | {r['pages']} | {' | '.join(cells)} | {wasted} | "
              f"{r['variants'][0]} / {r['variants'][1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
