"""A partitioned crawl (``websift crawl --partitioned``): its cost in Redis and in CPU.

    .venv/bin/python -m scripts.benchmarks.bench_partitioned  # 3,000-page web, 30 hosts
    .venv/bin/python -m scripts.benchmarks.bench_partitioned --pages 20000 --hosts 60

On the generated web of ``scripts/benchmarks/crawl_scale.py`` (``testkit/genweb.py``, served by
nginx from loopback addresses, one per host), crawled to its end, in one run on the same input:

1. the embedded frontier: one ``websift crawl`` process (the peer);
2. for P in ``--processes`` (default 1, 2): a fresh ``redis-server`` and P
   ``websift crawl --partitioned redis://...`` processes, each with its own ``--data``.

For each: pages fetched (from the stores; the partitioned runs must fetch each page once), wall
seconds, CPU seconds per fetched page summed over the crawler processes (``wait4``) and Redis
(``INFO cpu``); Redis operations per fetched page (``total_commands_processed``, which counts
the calls inside scripts too, and the top commands of ``INFO commandstats``); Redis memory per
known URL (the peak of ``used_memory`` over the empty server's, sampled every 0.2 s, divided by
the distinct URLs the stores know); the cash check (stores + transfers in flight, which is 1);
and projections to 100 million and 1 billion known URLs.  No bar is judged: the figures are
printed, with a last ``key=value`` line for scripts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from scripts.benchmarks.bench_redis_frontier import BenchError, RedisProcess
from scripts.benchmarks.crawl_scale import CONCURRENCY, Nginx, ScaleError, find_nginx
from testkit.genweb import MAX_HOSTS, PORT, Web, WebParams, ensure_web
from websift.core.arguments import number
from websift.core.datadir import DataDir
from websift.crawler.frontier import Frontier
from websift.crawler.mailbox import check_cash
from websift.store.views import StoreReader

REPO = Path(__file__).resolve().parents[2]
PAGES = 3_000
HOSTS = 30
PROCESSES = (1, 2)
PARTITIONS = 64
SEED = 1
SAMPLE = 0.2  # seconds between two looks at Redis' memory
TAIL_CHARS = 3000
PROJECTIONS = (100_000_000, 1_000_000_000)


@dataclass
class Result:
    label: str
    processes: int
    pages: int
    seconds: float
    crawler_cpu: float
    redis_cpu: float = 0.0
    commands: int = 0
    peak_memory: int = 0
    end_memory: int = 0
    known: int = 0
    duplicates: int = 0
    cash: float = float("nan")
    top: list[tuple[str, int]] = field(default_factory=list)

    def cpu_per_page(self) -> float:
        return (self.crawler_cpu + self.redis_cpu) / self.pages if self.pages else 0.0


def crawl_cmd(web: Web, data: Path, pages: int, redis_url: str | None,
              delay: float = 0.0, *, mirror: bool = False) -> list[str]:
    cmd = [sys.executable, "-m", "websift.api.cli", "crawl", *web.seeds(), "--data", str(data),
           "--allow-private", "--delay", repr(delay), "--concurrency-per-host", str(CONCURRENCY),
           "--max-pages", str(pages), "--max-pages-per-host", str(pages), "--quiet"]
    if redis_url:
        cmd += ["--partitioned", redis_url, "--partitions", str(PARTITIONS)]
        cmd += ["--partition-mirror"] if mirror else []
    return cmd


def run_crawlers(cmds: list[list[str]]) -> tuple[float, float]:
    """Start the crawlers together: (wall seconds until the last exits, their CPU seconds)."""
    started = time.perf_counter()
    procs = [subprocess.Popen(c, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) for c in cmds]
    errs = {p.pid: p.stderr for p in procs}
    cpu = 0.0
    failed: list[str] = []
    left = {p.pid for p in procs}
    while left:
        pid, status, usage = os.wait4(-1, 0)
        if pid not in left:
            continue
        left.discard(pid)
        cpu += usage.ru_utime + usage.ru_stime
        if os.waitstatus_to_exitcode(status) != 0:
            stream = errs[pid]
            failed.append(stream.read()[-TAIL_CHARS:] if stream is not None else "")
    for p in procs:
        p.returncode = 0  # reaped above
        if p.stderr is not None:
            p.stderr.close()
    if failed:
        raise BenchError("a crawler failed:\n" + "\n".join(failed))
    return time.perf_counter() - started, cpu


def store_figures(shards: list[Path]) -> tuple[int, int, int]:
    """(pages fetched, distinct URLs known, URLs fetched by more than one store)."""
    fetched: dict[str, int] = {}
    known: set[str] = set()
    for shard in shards:
        with StoreReader.open(DataDir.open(shard).store_path) as store:
            for page in store.pages():
                known.add(page.url)
                if page.status == "fetched":
                    fetched[page.url] = fetched.get(page.url, 0) + 1
    return sum(fetched.values()), len(known), sum(1 for n in fetched.values() if n > 1)


def redis_cpu(server: RedisProcess) -> float:
    info = server.client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def run_partitioned(web: Web, run_dir: Path, processes: int, pages: int,
                    delay: float = 0.0, *, mirror: bool = False) -> Result:
    kind = "mirrored" if mirror else "partitioned"
    server = RedisProcess(run_dir / f"redis-{kind}-{processes}")
    try:
        client = server.client
        client.config_resetstat()
        base_memory = int(client.info("memory")["used_memory"])
        cpu0, ops0 = redis_cpu(server), int(client.info("stats")["total_commands_processed"])
        peak = [0]
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(SAMPLE):
                peak[0] = max(peak[0], int(client.info("memory")["used_memory"]) - base_memory)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        shards = [run_dir / f"{kind}-{processes}-{i}" for i in range(processes)]
        try:
            seconds, cpu = run_crawlers([crawl_cmd(web, d, pages, server.url, delay, mirror=mirror)
                                         for d in shards])
        finally:
            stop.set()
            sampler.join()
        commands = int(client.info("stats")["total_commands_processed"]) - ops0
        stats = client.info("commandstats")
        # the measurement's own INFO calls are not the crawl's
        commands -= int(stats.pop("cmdstat_info", {}).get("calls", 0))
        stats.pop("cmdstat_config", None)
        top = sorted(((k.removeprefix("cmdstat_"), int(v["calls"])) for k, v in stats.items()),
                     key=lambda kv: -kv[1])[:6]
        end = int(client.info("memory")["used_memory"]) - base_memory
        got, known, dups = store_figures(shards)
        cash = check_cash(server.url, [DataDir.open(d).store_path for d in shards]).total
        return Result(f"{kind} x{processes}", processes, got, seconds, cpu,
                      redis_cpu(server) - cpu0, commands, max(peak[0], end), end, known, dups,
                      cash, top)
    finally:
        server.stop()


def frontier_bytes_per_url() -> int:
    """Bytes of the embedded frontier's numpy state per URL ID (its arrays' item sizes)."""
    f = Frontier()
    arrays = [f.host_of, f.depth_of, f.stamp, f.where, f.fetch_count, f.change_count, f.due]
    opic = f.opic
    arrays += [opic.cash, opic.history, opic.g_last, opic.reads, opic.known, opic.level,
               opic.dead, opic.focus]
    return sum(a.itemsize for a in arrays)


def report(results: list[Result], delay: float = 0.0, hosts: int = 0) -> None:
    base = results[0]
    print()
    print(f"{'run':<16}{'pages':>7}{'s':>7}{'pages/s':>9}{'cores':>7}{'CPU s/page':>12}"
          f"{'x embedded':>11}{'ops/page':>10}{'peak B/URL':>11}{'end B/URL':>10}{'twice':>7}"
          f"{'cash':>16}")
    for r in results:
        rate = r.pages / r.seconds if r.seconds else 0.0
        cores = (r.crawler_cpu + r.redis_cpu) / r.seconds if r.seconds else 0.0
        ratio = r.cpu_per_page() / base.cpu_per_page() if base.cpu_per_page() else 0.0
        ops = r.commands / r.pages if r.pages else 0.0
        peak = r.peak_memory / r.known if r.known else 0.0
        end = r.end_memory / r.known if r.known else 0.0
        print(f"{r.label:<16}{r.pages:>7}{r.seconds:>7.1f}{rate:>9.1f}{cores:>7.2f}"
              f"{r.cpu_per_page():>12.5f}{ratio:>11.2f}{ops:>10.2f}{peak:>11.1f}{end:>10.1f}"
              f"{r.duplicates:>7}{r.cash:>16.12f}")
    parts = [r for r in results if r.label.startswith("partitioned")]
    one = next((r for r in parts if r.processes == 1), None)
    if one is not None and one.seconds:
        ceiling = f", the politeness ceiling {hosts / delay:.0f} pages/s" if delay else ""
        print(f"scaling (--delay {delay:g}s{ceiling}): pages/s over {one.label}'s times the "
              "processes (1.00 is linear): " + ", ".join(
                  f"x{r.processes} {(r.pages / r.seconds) / (r.processes * one.pages / one.seconds):.2f}"
                  for r in parts if r.seconds))
    for r in results:
        if r.label == "embedded":
            continue
        # most commands are per second of a crawler (mailbox reads, flushes, renewals), not
        # per page: this rate, over the pages per second of a crawler, is the ops per page
        per_second = r.commands / (r.seconds * r.processes) if r.seconds else 0.0
        print(f"{r.label}: {per_second:.1f} Redis commands per crawler-second; top "
              f"{', '.join(f'{k} {v}' for k, v in r.top)}")
    per_url = frontier_bytes_per_url()
    print(f"each crawler: {per_url} bytes of numpy frontier state per URL it knows (plus "
          "heap entries for queued pages and SQLite on disk)")
    for n in PROJECTIONS:
        # Redis holds fixed keys (leases, members, counters, the partitions' streams and
        # groups) and the batches in flight, whose size follows the fetch rate, not the URLs
        # known: the peak here is what a crawl of any size holds at this rate
        line = [f"{n:,} known URLs:"]
        line += [f"{r.label} Redis {r.peak_memory / 2**20:.2f} MiB = {r.peak_memory / n:.4f} B/URL"
                 for r in parts]
        line.append(f"crawler numpy state {per_url * n / 2**30:.1f} GiB in all, "
                    "split over the crawlers")
        print(" ".join(line))
    for r in results:
        if r.label.startswith("mirrored") and r.known:
            # the mirror holds each queued URL's text and each read URL's fingerprint: it
            # grows with the URLs known, so its end figure per URL is what a larger crawl holds
            print(f"{r.label}: Redis grows with the URLs known (the mirror): "
                  f"{r.end_memory / r.known:.0f} B per known URL at the end "
                  f"({r.end_memory / 2**20:.2f} MiB for {r.known:,} URLs, fixed keys included)")
    figures = " ".join(
        f"{r.label.replace(' ', '')}_cpu_per_page={r.cpu_per_page():.5f}" for r in results)
    print(figures)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=number(int, low=1), default=PAGES,
                        help=f"pages of the generated web (default {PAGES})")
    parser.add_argument("--hosts", type=number(int, low=1, high=MAX_HOSTS), default=HOSTS,
                        help=f"hosts of the generated web (default {HOSTS})")
    parser.add_argument("--processes", default=",".join(map(str, PROCESSES)),
                        help="partitioned crawler counts, comma separated (default 1,2)")
    parser.add_argument("--delay", type=number(float, low=0.0), default=0.0,
                        help="seconds between request starts per host (default 0: CPU-bound; "
                        "e.g. 1 for a politeness-bound crawl)")
    parser.add_argument("--mirror", action="store_true",
                        help="also run each partitioned count with --partition-mirror")
    parser.add_argument("--seed", type=int, default=SEED, help=f"the generator's seed ({SEED})")
    parser.add_argument("--port", type=number(int, low=1, high=65535), default=PORT,
                        help=f"the web's port on every host address (default {PORT})")
    parser.add_argument("--root", type=Path, help="where the web is (re)generated (default: a "
                        "directory per parameter set under the temp dir, kept for reuse)")
    args = parser.parse_args()
    counts = [int(x) for x in args.processes.split(",") if x.strip()]
    params = WebParams(args.pages, args.hosts, args.seed, args.port)
    root = args.root or Path(tempfile.gettempdir()) / (
        f"websift-genweb-{args.pages}-{args.hosts}-{args.seed}-{args.port}")
    find_nginx()
    web = ensure_web(root, params, log=True)
    run_dir = Path(tempfile.mkdtemp(prefix="websift-bench-partitioned-"))
    budget = 10 * args.pages  # the whole web: the crawl ends when nothing is left
    results: list[Result] = []
    try:
        with Nginx(web, run_dir):
            print("embedded: 1 process", flush=True)
            data = run_dir / "embedded"
            seconds, cpu = run_crawlers([crawl_cmd(web, data, budget, None, args.delay)])
            got, known, _ = store_figures([data])
            results.append(Result("embedded", 1, got, seconds, cpu, known=known))
            for p in counts:
                print(f"partitioned: {p} processes", flush=True)
                results.append(run_partitioned(web, run_dir, p, budget, args.delay))
            for p in counts if args.mirror else []:
                print(f"partitioned with --partition-mirror: {p} processes", flush=True)
                results.append(run_partitioned(web, run_dir, p, budget, args.delay, mirror=True))
    except (BenchError, ScaleError) as exc:
        print(f"bench_partitioned: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    report(results, args.delay, args.hosts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
