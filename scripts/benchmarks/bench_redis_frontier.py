"""Several crawler processes on one shared frontier (Redis): how far does it scale here?

    .venv/bin/python -m scripts.benchmarks.bench_redis_frontier  # 300,000-page web, 20,000 fetched
    .venv/bin/python -m scripts.benchmarks.bench_redis_frontier --pages 20000 --hosts 60 --crawl-pages 3000

On the generated web of ``scripts/benchmarks/crawl_scale.py`` (``testkit/genweb.py``, served by
nginx from loopback addresses, one per host), in one run on the same input:

1. the embedded frontier: one ``websift crawl`` process (the peer every figure is compared to);
2. for P in ``--processes`` (default 1, 2, 4): a fresh ``redis-server`` (Debian's, no
   persistence) and P ``websift crawl --frontier redis://...`` processes, each with its own
   ``--data`` and a budget of ``--crawl-pages / P`` pages, started together.

For each: pages fetched (from the shards), wall seconds from the first start to the last exit,
pages/s and its ratio to the embedded crawl and to one Redis process; from Redis' INFO: Redis
operations per page (``total_commands_processed``, which counts the calls inside the Lua scripts
too), script runs per page (EVALSHA in ``commandstats``), memory per known URL (``used_memory`` over
the empty server's, divided by the URL IDs allocated and by the pages in OPIC), and that memory
projected to 100 million known URLs.  The machine's cores bound the speed-up (about 2x on 2
cores: every crawler parses its own pages).  No bar is judged: the figures are printed, with a
last ``key=value`` line for scripts.
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from scripts.benchmarks.crawl_scale import CONCURRENCY, Nginx, find_nginx
from testkit.genweb import MAX_HOSTS, Web, WebParams, ensure_web
from testkit.ports import free_port
from websift.core.arguments import number
from websift.core.datadir import DataDir
from websift.store.views import StoreReader

REPO = Path(__file__).resolve().parents[2]

PAGES = 300_000
HOSTS = 300
CRAWL_PAGES = 20_000
PROCESSES = (1, 2, 4)
SEED = 1
PROJECTED_URLS = 100_000_000
READY_TIMEOUT = 15.0  # seconds redis-server may take to answer
POLL = 0.05  # seconds between two looks at a starting server
TAIL_CHARS = 3000  # of a failed crawler's stderr, printed


class BenchError(Exception):
    """A step could not run (redis-server, a crawler); the message says which."""


@dataclass
class Result:
    label: str
    processes: int
    pages: int
    seconds: float
    commands: int = 0  # Redis operations (the scripts' inner calls included)
    script_calls: int = 0  # script runs (EVALSHA)
    memory: int = 0  # bytes over the empty server's
    url_ids: int = 0
    opic_pages: int = 0

    @property
    def rate(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0


class RedisProcess:
    """A redis-server child on a free loopback port, no persistence, in ``workdir``."""

    def __init__(self, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise BenchError("redis-server is missing (scripts/ensure_system_packages.sh)")
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis.Redis(port=self.port, decode_responses=True)
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise BenchError("redis-server did not start") from None
                time.sleep(POLL)  # polling a starting server

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()


def crawl_cmd(web: Web, data: Path, pages: int, frontier: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "websift.api.cli", "crawl", *web.seeds(), "--data", str(data),
           "--allow-private", "--delay", "0", "--concurrency-per-host", str(CONCURRENCY),
           "--max-pages", str(pages), "--max-pages-per-host", str(pages), "--quiet"]
    return cmd + (["--frontier", frontier] if frontier else [])


def run_crawlers(cmds: list[list[str]]) -> float:
    """Start the crawlers together; wall seconds until the last one exits."""
    started = time.perf_counter()
    procs = [subprocess.Popen(c, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) for c in cmds]
    errors = [p.communicate()[1] for p in procs]
    seconds = time.perf_counter() - started
    for p, err in zip(procs, errors, strict=True):
        if p.returncode != 0:
            raise BenchError(f"a crawler failed ({p.returncode}):\n{err[-TAIL_CHARS:]}")
    return seconds


def fetched(shards: list[Path]) -> int:
    total = 0
    for shard in shards:
        with StoreReader.open(DataDir.open(shard).store_path) as store:
            total += store.status_counts().get("fetched", 0)
    return total


def info_figures(client: redis.Redis) -> tuple[int, int, int]:
    """(operations processed, EVALSHA runs, used memory)."""
    stats = client.info("stats")
    runs = int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))
    return int(stats["total_commands_processed"]), runs, int(client.info("memory")["used_memory"])


def run_redis(web: Web, run_dir: Path, processes: int, pages: int) -> Result:
    server = RedisProcess(run_dir / f"redis-{processes}")
    try:
        c0, k0, m0 = info_figures(server.client)
        shards = [run_dir / f"shard-{processes}-{i}" for i in range(processes)]
        each = math.ceil(pages / processes)
        seconds = run_crawlers([crawl_cmd(web, d, each, server.url) for d in shards])
        c1, k1, m1 = info_figures(server.client)
        ids = int(server.client.hget("{g}:lv", "nextid") or 0)
        in_opic = 0
        for value in server.client.hvals("{g}:wt"):
            in_opic += int(value.split()[0])
        return Result(f"redis x{processes}", processes, fetched(shards), seconds,
                      commands=c1 - c0, script_calls=k1 - k0,
                      memory=m1 - m0, url_ids=ids, opic_pages=in_opic)
    finally:
        server.stop()


def report(results: list[Result]) -> None:
    base = results[0]
    one = next((r for r in results if r.processes == 1 and r.label != "embedded"), None)
    print()
    print(f"{'run':<12}{'pages':>8}{'s':>8}{'pages/s':>9}{'x embedded':>11}{'x 1 proc':>9}"
          f"{'ops/page':>10}{'runs/page':>11}{'B/URL':>8}{'B/page':>8}{'100M URLs':>11}")
    for r in results:
        per_url = r.memory / r.url_ids if r.url_ids else 0.0
        per_page = r.memory / r.opic_pages if r.opic_pages else 0.0
        ratio_one = r.rate / one.rate if one is not None and one.rate else 0.0
        print(f"{r.label:<12}{r.pages:>8}{r.seconds:>8.1f}{r.rate:>9.1f}"
              f"{r.rate / base.rate if base.rate else 0.0:>11.2f}{ratio_one:>9.2f}"
              f"{(r.commands / r.pages if r.pages else 0.0):>10.1f}"
              f"{(r.script_calls / r.pages if r.pages else 0.0):>11.1f}"
              f"{per_url:>8.0f}{per_page:>8.0f}"
              f"{(per_url * PROJECTED_URLS / 2**30 if r.url_ids else 0.0):>9.1f}GB")
    figures = " ".join(
        f"{r.label.replace(' ', '')}_pages_per_second={r.rate:.1f}" for r in results)
    print(figures)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=number(int, low=1), default=PAGES,
                        help=f"pages of the generated web (default {PAGES})")
    parser.add_argument("--hosts", type=number(int, low=1, high=MAX_HOSTS), default=HOSTS,
                        help=f"hosts of the generated web (default {HOSTS})")
    parser.add_argument("--crawl-pages", type=number(int, low=2), default=CRAWL_PAGES,
                        help=f"pages fetched per run, over its processes (default {CRAWL_PAGES})")
    parser.add_argument("--processes", default=",".join(map(str, PROCESSES)),
                        help="crawler process counts on Redis, comma separated (default 1,2,4)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"the generator's seed ({SEED})")
    parser.add_argument("--root", type=Path, help="where the web is (re)generated (default: a "
                        "directory per parameter set under the temp dir, kept for reuse)")
    args = parser.parse_args()
    counts = [int(x) for x in args.processes.split(",") if x.strip()]
    params = WebParams(args.pages, args.hosts, args.seed)
    root = args.root or Path(tempfile.gettempdir()) / (
        f"websift-genweb-{args.pages}-{args.hosts}-{args.seed}")
    find_nginx()
    web = ensure_web(root, params, log=True)
    run_dir = Path(tempfile.mkdtemp(prefix="websift-bench-redis-"))
    results: list[Result] = []
    try:
        with Nginx(web, run_dir):
            print(f"embedded: 1 process, {args.crawl_pages} pages", flush=True)
            data = run_dir / "embedded"
            seconds = run_crawlers([crawl_cmd(web, data, args.crawl_pages, None)])
            results.append(Result("embedded", 1, fetched([data]), seconds))
            for p in counts:
                print(f"redis: {p} processes, {args.crawl_pages} pages in all", flush=True)
                results.append(run_redis(web, run_dir, p, args.crawl_pages))
    except BenchError as exc:
        print(f"bench_redis_frontier: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
