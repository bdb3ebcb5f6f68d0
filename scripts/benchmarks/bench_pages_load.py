"""48 clients on ``GET /pages`` of the most linked page of a large store, while ``/healthz`` is polled.

    .venv/bin/python -m scripts.benchmarks.bench_pages_load --work /tmp/pages-load
    .venv/bin/python -m scripts.benchmarks.bench_pages_load --urls 100000 --seconds 20
    .venv/bin/python -m scripts.benchmarks.bench_pages_load --server-code /tmp/older-checkout

The store (built once, kept under ``--work/urls-N``): ``--urls`` URLs on 100 hosts, each stored
as fetched (no body) through ``store.crawl_store.CrawlStore``, with ``--links-per-page`` links
each, the first of which goes to the home page: the home page has one in-link per URL (500,000
at the default size).  The index is built while the store holds the first ten pages only (an
index of anchor text; ``/pages`` needs one being served, and its size does not matter here);
the other URLs and their links are added after it.

``websift serve`` then runs on it in its own process.  Phases, each ``--seconds`` long: /healthz
alone (the peer: the same server with nothing else to do), then ``--clients`` clients (threads,
one keep-alive connection each) sending ``GET /pages?url=<home page>`` in a loop while one more
connection, in a process of its own, polls ``/healthz`` every ``--poll-ms``.  Printed: /healthz p50/p99 idle and under
load (and their ratio), /pages p50/p99 and requests per second, answers >= 500 and failed
connections, and the server's RSS (psutil) after a warm-up request, at its peak under load
(sampled every 100 ms) and at the end.

The bounds are stated up front: /healthz p99 under load < ``--healthz-p99-ms``, peak RSS <=
warm RSS + ``--bound-mb``, no 5xx; the script says whether each held and exits 1 if one did not.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import sys
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from testkit.serve_process import ServeProcess
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.store.crawl_store import CrawlStore
from websift.store.schema import Link

HOSTS = 100
BATCH = 10_000  # URLs per transaction while building
SEED_PAGES = 10  # pages in the store when the index is built
READY_TIMEOUT = 120.0
CONTENT_TYPE = "text/html; charset=utf-8"


def url_of(i: int) -> str:
    """The i-th URL (0: the home page every page links to)."""
    return "http://site0.example/" if i == 0 else f"http://site{i % HOSTS}.example/p/{i}"


def add_pages(store: CrawlStore, first: int, stop: int, *, total: int, per_page: int,
              rng: np.random.Generator) -> None:
    """URLs ``first`` .. ``stop - 1`` stored as fetched, each linking to the home page and to
    ``per_page - 1`` URLs drawn among the first ``total``."""
    for start in range(first, stop, BATCH):
        end = min(stop, start + BATCH)
        with store.transaction():
            ids = [store.add_url(url_of(i), depth=1)[0] for i in range(start, end)]
            home = store.add_url(url_of(0))[0]
            for uid in ids:
                others = rng.integers(1, total, per_page - 1)
                links = [Link(home, "home", False)]
                links += [Link(store.add_url(url_of(int(o)), depth=2)[0], f"page {o}", False)
                          for o in others]
                store.record_fetched(
                    uid, http_status=200, content_type=CONTENT_TYPE, warc=None,
                    content_hash=hashlib.sha1(str(uid).encode()).hexdigest(), links=links)
        print(f"  stored {end:,} / {total:,} URLs", flush=True)


def build(root: Path, urls: int, per_page: int) -> DataDir:
    """The store and index under ``root`` (reused when already complete)."""
    done = root / "complete"
    if done.exists():
        return DataDir.open(root)
    if root.exists():
        raise SystemExit(f"{root} holds an unfinished build: remove it first")
    data = DataDir.create(root)
    rng = np.random.default_rng(7)
    started = time.monotonic()
    with CrawlStore.open(data.store_path) as store:
        add_pages(store, 0, SEED_PAGES, total=urls, per_page=per_page, rng=rng)
    build_index(data)
    with CrawlStore.open(data.store_path) as store:
        add_pages(store, SEED_PAGES, urls, total=urls, per_page=per_page, rng=rng)
    done.write_text(f"{urls} URLs, {per_page} links each\n")
    print(f"built in {time.monotonic() - started:.0f} s", flush=True)
    return data


@dataclass
class Tally:
    """Latencies (seconds) and failures of one kind of request."""

    times: list[float] = field(default_factory=list)
    server_errors: int = 0  # answers >= 500
    failures: int = 0  # connections refused, reset or timed out
    lock: threading.Lock = field(default_factory=threading.Lock)

    def percentile_ms(self, q: float) -> float:
        return float(np.percentile(self.times, q) * 1000) if self.times else float("nan")


def hammer(port: int, path: str, until: float, tally: Tally, pause: float = 0.0) -> None:
    """GET ``path`` on one keep-alive connection until ``until`` (monotonic)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    while time.monotonic() < until:
        t0 = time.monotonic()
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            status = response.status
        except OSError:
            with tally.lock:
                tally.failures += 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            continue
        elapsed = time.monotonic() - t0
        with tally.lock:
            tally.times.append(elapsed)
            tally.server_errors += status >= 500
        if pause:
            time.sleep(pause)  # the poller's interval, not a wait for a condition
    conn.close()


def poll(port: int, seconds: float, pause: float) -> tuple[list[float], int, int]:
    """/healthz polled for ``seconds``: (latencies, 5xx, failures).  Run in a process of its
    own, so the clients' threads do not delay the poller's own reading of the answers."""
    tally = Tally()
    hammer(port, "/healthz", time.monotonic() + seconds, tally, pause)
    return tally.times, tally.server_errors, tally.failures


def polled(answer: Future[tuple[list[float], int, int]]) -> Tally:
    times, server_errors, failures = answer.result()
    return Tally(times, server_errors, failures)


def watch_rss(server: ServeProcess, stop: threading.Event, peak: list[int]) -> None:
    while not stop.wait(0.1):
        peak[0] = max(peak[0], server.rss())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "pages-load")
    parser.add_argument("--urls", type=int, default=500_000)
    parser.add_argument("--links-per-page", type=int, default=5)
    parser.add_argument("--clients", type=int, default=48)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--poll-ms", type=float, default=50.0)
    parser.add_argument("--healthz-p99-ms", type=float, default=100.0)
    parser.add_argument("--bound-mb", type=float, default=200.0,
                        help="allowed RSS growth over the warm server, MB")
    parser.add_argument("--server-code", type=Path, default=None,
                        help="run the server from this source tree (another checkout, to "
                        "compare); default: the one this script imports")
    args = parser.parse_args()

    data = build(args.work / f"urls-{args.urls}", args.urls, args.links_per_page)
    home = url_of(0)
    pages_path = "/pages?" + urllib.parse.urlencode({"url": home})
    print(f"bounds: /healthz p99 < {args.healthz_p99_ms:g} ms under load, peak RSS <= warm + "
          f"{args.bound_mb:g} MB, no 5xx", flush=True)
    server = ServeProcess(data.root, code=args.server_code, ready_timeout=READY_TIMEOUT)
    try:
        server.wait_ready()
        warm_up = Tally()
        hammer(server.port, pages_path, time.monotonic() + 1.0, warm_up)  # schedule, caches
        rss_warm = server.rss()
        pause = args.poll_ms / 1000
        with ProcessPoolExecutor(1) as poller:
            idle = polled(poller.submit(poll, server.port, args.seconds, pause))
            pages = Tally()
            stop, peak = threading.Event(), [rss_warm]
            until = time.monotonic() + args.seconds
            watcher = threading.Thread(target=watch_rss, args=(server, stop, peak))
            workers = [threading.Thread(target=hammer, args=(server.port, pages_path, until, pages))
                       for _ in range(args.clients)]
            under_load = poller.submit(poll, server.port, args.seconds, pause)
            watcher.start()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            health = polled(under_load)
            stop.set()
            watcher.join()
        rss_end = server.rss()
        body = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        body.request("GET", pages_path)
        answer = body.getresponse().read().decode()
    finally:
        server.stop()

    mb = 2**20
    print(f"store: {args.urls:,} URLs, {args.urls * args.links_per_page:,} links, "
          f"{args.urls:,} to {home}; answer {len(answer):,} bytes")
    print(f"/healthz idle:       p50 {idle.percentile_ms(50):7.1f} ms  "
          f"p99 {idle.percentile_ms(99):7.1f} ms  ({len(idle.times)} requests)")
    print(f"/healthz under load: p50 {health.percentile_ms(50):7.1f} ms  "
          f"p99 {health.percentile_ms(99):7.1f} ms  ({len(health.times)} requests; "
          f"p99 {health.percentile_ms(99) / idle.percentile_ms(99):.1f}x idle)")
    print(f"/pages x{args.clients}:        p50 {pages.percentile_ms(50):7.1f} ms  "
          f"p99 {pages.percentile_ms(99):7.1f} ms  ({len(pages.times) / args.seconds:.1f}/s)")
    errors = pages.server_errors + health.server_errors
    failures = pages.failures + health.failures
    print(f"5xx: {errors}, failed connections: {failures}")
    print(f"server RSS: warm {rss_warm / mb:.0f} MB, peak {peak[0] / mb:.0f} MB, "
          f"end {rss_end / mb:.0f} MB")
    held = {
        "/healthz p99": health.percentile_ms(99) < args.healthz_p99_ms,
        "RSS bound": peak[0] <= rss_warm + args.bound_mb * mb,
        "no 5xx or failed connection": errors == 0 and failures == 0,
    }
    for name, ok in held.items():
        print(f"{name}: {'held' if ok else 'NOT held'}")
    return 0 if all(held.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
