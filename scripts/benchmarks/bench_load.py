"""Load ramp against ``websift serve``: 1 to 64 concurrent clients, and the server's memory.

    .venv/bin/python -m scripts.benchmarks.bench_load           # crawl + index + rank, then ramp
    .venv/bin/python -m scripts.benchmarks.bench_load --data D  # reuse D (built there if empty)
    .venv/bin/python -m scripts.benchmarks.bench_load --seconds 5 --clients 1 4 16 --bound-mb 100

The Python 3.11 manual (/usr/share/doc/python3.11/html, 530 pages) is served on loopback
(127.0.0.11, the test web's ``StaticSite``), crawled with ``websift crawl --delay 0
--concurrency-per-host 8 --allow-private``, indexed and ranked.  ``websift serve`` then runs in
its own process on a free port.  Each step runs N clients (threads, one keep-alive connection
each) for a fixed time, sending the 400 development queries (/work/shared/eval/
pydocs_queries.tsv) round-robin from different offsets; it prints requests per second, p50 and
p99 latency and errors (non-200 answers and failed connections).

Every query gets a unique excluded word (``-zzload123``) unless ``--cached``: it matches nothing,
so results are unchanged, but the server's result cache cannot answer, and the ramp measures
searching rather than the cache.

Memory: the server's RSS (psutil) after start-up, after one warm-up pass over the queries (the
reference: caches and lazily opened files are in place), and at the end of the ramp.  The bound
is stated up front: end <= warm + ``--bound-mb``; the script says whether it held and exits 1 if
not (or if any request failed).
"""

from __future__ import annotations

import argparse
import http.client
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from testkit.serve_process import ServeProcess
from testkit.testweb import StaticSite

REPO = Path(__file__).resolve().parents[2]

DOC_ROOT = Path("/usr/share/doc/python3.11/html")
QUERIES = Path("/work/shared/eval/pydocs_queries.tsv")
ADDRESS = "127.0.0.11"
ROBOTS = "User-agent: *\nDisallow: /genindex\nDisallow: /_sources/\n"
CLIENTS = (1, 2, 4, 8, 16, 32, 64)
STEP_SECONDS = 10.0
BOUND_MB = 100.0
READY_TIMEOUT = 60.0
REQUEST_TIMEOUT = 30.0


def websift(*args: str, timeout: float = 1800) -> None:
    cmd = [sys.executable, "-m", "websift.api.cli", *args]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    if done.returncode != 0:
        raise SystemExit(f"websift {args[0]} failed ({done.returncode}):\n{done.stderr[-2000:]}")


def build(data: Path) -> None:
    """Crawl, index and rank the Python manual into ``data``."""
    with StaticSite(DOC_ROOT, ADDRESS, ROBOTS) as site:
        t0 = time.perf_counter()
        websift("crawl", site.origin + "/", "--data", str(data), "--delay", "0",
                "--concurrency-per-host", "8", "--allow-private", "--max-pages", "2000",
                "--quiet")
        print(f"crawl {time.perf_counter() - t0:.1f}s", flush=True)
    for stage in ("index", "rank"):
        t0 = time.perf_counter()
        websift(stage, "--data", str(data), "--quiet")
        print(f"{stage} {time.perf_counter() - t0:.1f}s", flush=True)


def load_queries(path: Path) -> list[str]:
    out = []
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[2].strip():
            out.append(parts[2].strip())
    return out


@dataclass
class Step:
    clients: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)


@dataclass
class Load:
    """What the clients of one step share."""

    port: int
    queries: list[str]
    bust: bool
    step: Step
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    counter: list[int] = field(default_factory=lambda: [0])  # unique words handed out

    def query(self, i: int) -> str:
        q = self.queries[i % len(self.queries)]
        if not self.bust:
            return q
        with self.lock:
            self.counter[0] += 1
            return f"{q} -zzload{self.counter[0]}"


def _client(load: Load, offset: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", load.port, timeout=REQUEST_TIMEOUT)
    lat: list[float] = []
    errors: dict[str, int] = {}
    i = offset
    while not load.stop.is_set():
        path = "/search?" + urllib.parse.urlencode({"q": load.query(i), "k": 10})
        i += 1
        t0 = time.perf_counter()
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                errors[f"http_{resp.status}"] = errors.get(f"http_{resp.status}", 0) + 1
            else:
                lat.append(time.perf_counter() - t0)
        except (OSError, http.client.HTTPException) as exc:
            name = type(exc).__name__
            errors[name] = errors.get(name, 0) + 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", load.port, timeout=REQUEST_TIMEOUT)
    conn.close()
    with load.lock:
        load.step.latencies.extend(lat)
        for k, v in errors.items():
            load.step.error_kinds[k] = load.step.error_kinds.get(k, 0) + v
            load.step.errors += v


def run_step(load: Load) -> Step:
    clients = load.step.clients
    n = len(load.queries)
    threads = [threading.Thread(target=_client, args=(load, k * n // clients), daemon=True)
               for k in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    load.stop.wait(load.step.seconds)
    load.stop.set()
    for t in threads:
        t.join()
    load.step.seconds = time.perf_counter() - t0
    return load.step


def warm_up(port: int, queries: list[str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
    failed = 0
    for q in queries:
        conn.request("GET", "/search?" + urllib.parse.urlencode({"q": q, "k": 10}))
        resp = conn.getresponse()
        resp.read()
        failed += resp.status != 200
    conn.close()
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="data directory (built there when empty)")
    parser.add_argument("--seconds", type=float, default=STEP_SECONDS, help="seconds per step")
    parser.add_argument("--clients", type=int, nargs="+", default=list(CLIENTS))
    parser.add_argument("--bound-mb", type=float, default=BOUND_MB,
                        help="allowed RSS growth over the warm server, MB")
    parser.add_argument("--cached", action="store_true",
                        help="send the queries as they are (the result cache answers repeats)")
    args = parser.parse_args()

    tmp = None
    data = args.data
    if data is None:
        tmp = tempfile.TemporaryDirectory(prefix="websift-load-")
        data = Path(tmp.name) / "data"
    if not (data / "index" / "manifest.json").exists():
        print(f"building the Python manual's index in {data}", flush=True)
        build(data)
    queries = load_queries(QUERIES)
    print(f"{len(queries)} queries; {args.seconds:g} s per step; "
          f"{'cache-busting' if not args.cached else 'cached'} queries", flush=True)
    server = ServeProcess(data, ready_timeout=READY_TIMEOUT)
    failed = 0
    try:
        server.wait_ready()
        rss_start = server.rss()
        failed += warm_up(server.port, queries)
        rss_warm = server.rss()
        print(f"bound: server RSS at the end <= warm RSS + {args.bound_mb:g} MB", flush=True)
        print(f"{'clients':>7} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
              f"{'errors':>7}  RSS MB", flush=True)
        counter = [0]
        for n in args.clients:
            step = run_step(Load(server.port, queries, not args.cached, Step(n, args.seconds),
                                 counter=counter))
            lat = np.array(step.latencies) * 1000
            p50 = float(np.percentile(lat, 50)) if lat.size else float("nan")
            p99 = float(np.percentile(lat, 99)) if lat.size else float("nan")
            kinds = "" if not step.errors else "  " + ", ".join(
                f"{k} {v}" for k, v in sorted(step.error_kinds.items()))
            print(f"{n:>7} {lat.size + step.errors:>9} {lat.size / step.seconds:>8.1f} "
                  f"{p50:>8.1f} {p99:>8.1f} {step.errors:>7}  {server.rss() / 2**20:.0f}{kinds}",
                  flush=True)
            failed += step.errors
        rss_end = server.rss()
    finally:
        server.stop()
        if tmp is not None:
            tmp.cleanup()
    growth = (rss_end - rss_warm) / 2**20
    held = growth <= args.bound_mb
    print(f"server RSS: start {rss_start / 2**20:.0f} MB, warm {rss_warm / 2**20:.0f} MB, "
          f"end {rss_end / 2**20:.0f} MB (growth {growth:+.0f} MB over warm; bound "
          f"{args.bound_mb:g} MB: {'held' if held else 'EXCEEDED'})")
    print(f"failed requests: {failed}")
    return 0 if held and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
