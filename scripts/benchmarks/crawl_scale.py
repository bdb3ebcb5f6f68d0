"""Crawl at scale: does the crawler's cost per page stay flat as the frontier grows?

    .venv/bin/python -m scripts.benchmarks.crawl_scale  # 300,000 pages, 300 hosts, 60,000 fetched
    .venv/bin/python -m scripts.benchmarks.crawl_scale --pages 20000 --hosts 40 --crawl-pages 5000  # ~2 min

1. A static web is generated on disk by ``testkit/genweb.py`` (power-law links inside and across
   hosts, Zipf text, one robots.txt per host disallowing ``/private/``, which some pages link
   to), or reused when ``--root`` already holds the one of these parameters.
2. nginx (Debian's ``nginx-light``; ``scripts/ensure_system_packages.sh`` installs it) serves it
   from a config written to the run directory: one loopback address per host (127.0.1.1, ...),
   one port, every request logged with its end time ($msec), its duration, address, status and
   URI.  nginx runs as a child process (``daemon off``) and is stopped at the end.
3. ``websift crawl`` fetches ``--crawl-pages`` pages from the H home pages with no delay and 2
   requests in flight per host; then a plain Scrapy CrawlSpider (``bench_crawl.run_crawlspider``)
   does the same with the same concurrency, on the same web, in the same run (``--skip-peer``:
   not).  Each runs as a child whose RSS (with its children) is sampled every 0.1 s; its CPU
   time (user and system, with its children) is taken when it ends.

Everything about fetches is taken from nginx's log, the server's view, so both crawlers are
measured alike: the rate over the first and the last W pages (W = 10,000, or a sixth of the crawl
when smaller), from the first to the W-th fetch and from the W-th last to the last; pages per
second overall (pages / wall seconds of the process, start-up included); requests under the
disallowed prefix (must be 0); pages requested before their host's robots.txt was answered
(start = $msec - $request_time).  A crawler's requests are told apart by their User-Agent.
From the crawl store (read-only): the crawl's own summary with its garbage collections by
generation (its live figures' ``gc``); URLs known at the end; peak RSS / URLs known, and the RSS
growth from the first fetch to the peak / URLs known (the part that grows with the crawl).

Requests in flight per host are not judged here: nginx's $msec is the time of its event-loop
tick, so on a busy machine requests answered one after another share one millisecond and look
simultaneous.  tests/crawler/test_crawl_politeness.py checks that bar with exact server times.

Prints a table per crawler, a timeline of websift's crawl (rate, frontier, RSS by tenths), the
issue's bars with met / NOT met, and one last line of ``key=value`` figures for scripts.  Exit
status 1 when a bar is not met.  Webs are kept (``--root``, default a directory per parameter set
under the temp dir) for reuse; the run directory (nginx config and logs, websift's data) is
deleted unless ``--keep-run``.
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import json
import os
import pwd
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psutil

from testkit.genweb import DISALLOWED, MAX_HOSTS, Web, WebParams, ensure_web
from websift.core.arguments import number
from websift.core.datadir import DataDir
from websift.store.views import StoreReader

REPO = Path(__file__).resolve().parents[2]

PAGES = 300_000
HOSTS = 300
CRAWL_PAGES = 60_000
SEED = 1
CONCURRENCY = 2  # requests in flight per host, both crawlers (the setting)
WINDOW = 10_000  # pages in the first and the last rate window (capped at a sixth of the crawl)
SAMPLE_EVERY = 0.1  # seconds between RSS samples
READY_TIMEOUT = 15.0  # seconds nginx may take to answer
STOP_TIMEOUT = 10.0  # seconds nginx may take to stop gracefully
ROBOTS_SLACK = 0.002  # s: $msec and $request_time are rounded to ms each
TAIL_CHARS = 3000  # of a failed child's stderr, printed
WEBSIFT_AGENT = "websift/"  # User-Agent prefixes: whose line of the access log is whose
PEER_AGENT = "Scrapy/"

# The bars (issue 10, "Measure").
BAR_RATIO = 0.8  # rate over the last W pages / rate over the first W
BAR_RATE = 150.0  # pages/s overall
NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx")


class ScaleError(Exception):
    """A step of the measurement could not run (nginx, a crawler); the message says which."""


# ------------------------------------------------------------------------------ nginx
@dataclass(frozen=True)
class Hit:
    """One line of the access log."""

    end: float  # epoch seconds ($msec)
    start: float  # end - $request_time
    address: str
    status: int
    uri: str
    agent: str


LOG_FORMAT = '$msec $request_time $server_addr $status $request_uri "$http_user_agent"'


def find_nginx() -> str:
    found = shutil.which("nginx") or next(
        (c for c in NGINX_CANDIDATES if os.access(c, os.X_OK)), None)
    if found is None:
        raise ScaleError("nginx not found: run scripts/ensure_system_packages.sh "
                         "(it installs Debian's nginx-light)")
    return found


def nginx_conf(web: Web, run_dir: Path) -> str:
    """One server listening on every host's address; the document root is chosen by the
    address the request came in on, so one block serves all hosts."""
    listens = "\n".join(f"    listen {a}:{web.params.port};" for a in web.addresses())
    user = ""
    if os.geteuid() == 0:
        # A root master would run its workers as 'nobody', who may not read a web written under a
        # private temp dir; run them as the user who wrote it (a loopback-only test server).
        user = f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};"
    temp = run_dir / "nginx-temp"
    return f"""# written by scripts/benchmarks/crawl_scale.py
{user}
daemon off;
worker_processes 1;
pid {run_dir}/nginx.pid;
error_log {run_dir}/error.log warn;
worker_rlimit_nofile {web.params.hosts + 4096};
events {{ worker_connections {web.params.hosts + 2048}; }}
http {{
  types {{ text/html html; text/plain txt; }}
  default_type application/octet-stream;
  log_format scale '{LOG_FORMAT}';
  access_log {run_dir}/access.log scale;
  client_body_temp_path {temp}/body;
  proxy_temp_path {temp}/proxy;
  fastcgi_temp_path {temp}/fastcgi;
  uwsgi_temp_path {temp}/uwsgi;
  scgi_temp_path {temp}/scgi;
  sendfile on;
  keepalive_requests 100000;
  server_tokens off;
  server {{
{listens}
    root {web.root / "hosts"}/$server_addr;
    index index.html;
  }}
}}
"""


class Nginx:
    """nginx serving ``web`` as a child process, from a config in ``run_dir``."""

    def __init__(self, web: Web, run_dir: Path) -> None:
        self.web = web
        self.run_dir = run_dir
        self.conf = run_dir / "nginx.conf"
        self.access_log = run_dir / "access.log"
        self.error_log = run_dir / "error.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Nginx:
        binary = find_nginx()
        self._check_ports_free()
        (self.run_dir / "nginx-temp").mkdir(parents=True, exist_ok=True)
        self.conf.write_text(nginx_conf(self.web, self.run_dir))
        self.access_log.touch()
        self.proc = subprocess.Popen(
            [binary, "-p", str(self.run_dir), "-c", str(self.conf), "-e", str(self.error_log)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _check_ports_free(self) -> None:
        """Refuse to start when something listens on a host's address already: its answers
        would pass for ours (nginx only gives up on a busy port after seconds of retries)."""
        for address in self.web.addresses():
            with socket.socket() as probe:
                # as nginx does: a connection of an earlier run in TIME_WAIT is no listener
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind((address, self.web.params.port))
                except OSError as exc:
                    raise ScaleError(f"{address}:{self.web.params.port} is in use ({exc.strerror}"
                                     "; another crawl_scale run?)") from None

    def _wait_ready(self) -> None:
        """Until the first and the last host answer their robots.txt (or nginx exits)."""
        assert self.proc is not None
        deadline = time.monotonic() + READY_TIMEOUT
        pending = {self.web.seeds()[0], self.web.seeds()[-1]}
        last_error = ""
        while pending:
            for url in list(pending):
                try:
                    with urllib.request.urlopen(url + "robots.txt", timeout=1) as resp:
                        if resp.status == 200:
                            pending.discard(url)
                except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                    last_error = f"{url}robots.txt: {exc}"  # not listening yet: try again
            if not pending:
                break
            if time.monotonic() > deadline:
                raise ScaleError(f"nginx did not answer within {READY_TIMEOUT:g} s "
                                 f"({last_error}); its error log: {self._error_tail()}")
            try:
                self.proc.wait(timeout=0.05)  # doubles as the pause between attempts
            except subprocess.TimeoutExpired:
                continue
            raise ScaleError(f"nginx exited ({self.proc.returncode}): {self._error_tail()}")

    def _error_tail(self) -> str:
        try:
            lines = self.error_log.read_text(errors="replace").strip().splitlines()
        except FileNotFoundError:
            return "(no error log)"
        return lines[-1] if lines else "(error log empty)"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGQUIT)  # graceful: finish requests, then exit
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_size(self) -> int:
        return self.access_log.stat().st_size

    def hits(self, since: int, until: int | None = None) -> list[Hit]:
        """The log lines between two byte offsets (one crawler's requests), in end order."""
        with open(self.access_log, "rb") as fh:
            fh.seek(since)
            raw = fh.read() if until is None else fh.read(until - since)
        out = []
        for line in raw.decode(errors="replace").splitlines():
            end, took, address, status, uri, agent = line.split(" ", 5)
            out.append(Hit(float(end), float(end) - float(took), address, int(status), uri,
                           agent.strip('"')))
        out.sort(key=lambda h: h.end)
        return out


# ------------------------------------------------------------------------------ a crawler run
@dataclass
class Run:
    name: str
    wall: float
    returncode: int
    peak_rss: int
    rss: list[tuple[float, int]]  # (epoch, RSS bytes)
    progress: list[tuple[float, int, int]]  # (epoch, pages, queue) from the progress lines
    hits: list[Hit]  # this crawler's requests (by User-Agent)
    stderr_tail: str
    cpu: float  # seconds of CPU, user and system, of the crawler and its children


@dataclass(frozen=True)
class StoreFigures:
    urls: int  # URLs known: fetched, failed or waiting in the frontier
    status: dict[str, int]
    summary: dict[str, Any]  # the crawl's own summary (crawls.summary)


def tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            continue  # a child that just ended has no memory left to count
    return total


PROGRESS = re.compile(r"pages (\d+)\b.*?queue (\d+)")


def run_child(name: str, agent: str, cmd: list[str], server: Nginx) -> Run:
    """Run one crawler to its end, sampling its RSS and its progress lines; its requests are
    the log lines written since it started whose User-Agent starts with ``agent``."""
    since = server.log_size()
    progress: list[tuple[float, int, int]] = []
    tail: list[str] = []

    def read_stderr(stream: IO[bytes]) -> None:
        for raw in stream:
            line = raw.decode(errors="replace").rstrip()
            m = PROGRESS.search(line)
            if m:
                progress.append((time.time(), int(m.group(1)), int(m.group(2))))
            else:
                tail.append(line)
                del tail[:-200]

    t0 = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert child.stderr is not None
    reader = threading.Thread(target=read_stderr, args=(child.stderr,), daemon=True)
    reader.start()
    proc = psutil.Process(child.pid)
    rss: list[tuple[float, int]] = []
    while True:
        with contextlib.suppress(psutil.NoSuchProcess):  # exiting: wait() below returns
            rss.append((time.time(), tree_rss(proc)))
        try:
            child.wait(timeout=SAMPLE_EVERY)
            break
        except subprocess.TimeoutExpired:
            continue
    wall = time.perf_counter() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)  # the child's, now that it was waited
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    reader.join(timeout=5)
    hits = [h for h in server.hits(since) if h.agent.startswith(agent)]
    return Run(name, wall, child.returncode, max((r for _, r in rss), default=0), rss, progress,
               hits, "\n".join(tail)[-TAIL_CHARS:], cpu)


def websift_cmd(web: Web, data: Path, pages: int) -> list[str]:
    # The spider-trap limit per host is lifted to the crawl's size, so that a web of few hosts
    # does not end the crawl early; everything else is the command line a user types.
    return [sys.executable, "-m", "websift.api.cli", "crawl", *web.seeds(), "--data", str(data),
            "--allow-private", "--delay", "0", "--concurrency-per-host", str(CONCURRENCY),
            "--max-pages", str(pages), "--max-pages-per-host", str(pages)]


def peer_cmd(seeds_file: Path, pages: int) -> list[str]:
    return [sys.executable, "-m", "scripts.benchmarks.crawl_scale", "--peer-child", str(seeds_file),
            "--crawl-pages", str(pages)]


def run_peer_child(seeds_file: Path, pages: int) -> None:
    """The CrawlSpider, in this (child) process."""
    from scripts.benchmarks.bench_crawl import run_crawlspider

    seeds = seeds_file.read_text().split()
    # Every link of the generated web is on one of its hosts, so a domain restriction changes
    # nothing but would cost the peer a comparison with each of the H domains per link.  Scrapy
    # counts robots.txt answers as pages for CLOSESPIDER_PAGECOUNT, hence + one per host.
    run_crawlspider(seeds, concurrency=CONCURRENCY, max_pages=pages + len(seeds), restrict=False)


# ------------------------------------------------------------------------------ figures
@dataclass
class Figures:
    pages: int  # page fetches (every request but robots.txt)
    not_ok: int  # of which answered other than 200
    robots: int  # robots.txt requests
    window: int
    first_rate: float
    last_rate: float
    overall_rate: float
    disallowed: int
    before_robots: int


def window_rate(times: list[float]) -> float:
    span = times[-1] - times[0]
    return (len(times) - 1) / span if span > 0 else float("inf")


def figures(run: Run, window: int) -> Figures:
    robots_done: dict[str, float] = {}
    pages: list[Hit] = []
    for h in run.hits:
        if h.uri == "/robots.txt":
            robots_done.setdefault(h.address, h.end)
        else:
            pages.append(h)
    times = [h.end for h in pages]
    w = min(window, len(times))
    before = sum(1 for h in pages
                 if h.start + ROBOTS_SLACK < robots_done.get(h.address, float("inf")))
    return Figures(
        pages=len(pages),
        not_ok=sum(1 for h in pages if h.status != 200),
        robots=len(run.hits) - len(pages),
        window=w,
        first_rate=window_rate(times[:w]) if w > 1 else 0.0,
        last_rate=window_rate(times[-w:]) if w > 1 else 0.0,
        overall_rate=len(pages) / run.wall,
        disallowed=sum(1 for h in pages if h.uri.startswith(DISALLOWED)),
        before_robots=before,
    )


def store_figures(data: Path) -> StoreFigures:
    with StoreReader.open(DataDir(data).store_path) as store:
        last = store.last_crawl()
        summary = json.loads(last[3]) if last is not None and last[3] else {}
        return StoreFigures(store.url_count(), store.status_counts(), summary)


def rss_at_first_fetch(run: Run) -> int:
    """The crawler's RSS when its first page was answered: start-up done, frontier empty."""
    first = min((h.end for h in run.hits if h.uri != "/robots.txt"), default=None)
    if first is None:
        return 0
    return next((r for t, r in reversed(run.rss) if t <= first), 0)


def timeline(run: Run, tenths: int = 10) -> list[str]:
    """websift's crawl by tenths of its fetches: rate within each, frontier and RSS at its end."""
    times = sorted(h.end for h in run.hits if h.uri != "/robots.txt")
    if len(times) < tenths * 2:
        return []
    rows = [f"{'fetched':>8} {'seconds':>8} {'pages/s':>8} {'queue':>8} {'RSS MiB':>8}"]
    prev = 0
    for i in range(1, tenths + 1):
        idx = len(times) * i // tenths - 1
        rate = (idx - prev) / max(1e-9, times[idx] - times[prev])
        at = times[idx]
        queue = next((q for t, _, q in reversed(run.progress) if t <= at), None)
        mem = next((r for t, r in reversed(run.rss) if t <= at), 0)
        rows.append(f"{idx + 1:>8} {at - times[0]:>8.1f} {rate:>8.1f} "
                    f"{'-' if queue is None else queue:>8} {mem / 2**20:>8.0f}")
        prev = idx
    return rows


# ------------------------------------------------------------------------------ main
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=number(int, low=1), default=PAGES,
                        help=f"pages of the generated web (default {PAGES})")
    parser.add_argument("--hosts", type=number(int, low=1, high=MAX_HOSTS), default=HOSTS,
                        help=f"hosts of the generated web (default {HOSTS})")
    parser.add_argument("--crawl-pages", type=number(int, low=2), default=CRAWL_PAGES,
                        help=f"pages each crawler fetches (default {CRAWL_PAGES})")
    parser.add_argument("--seed", type=int, default=SEED, help=f"the generator's seed "
                        f"(default {SEED})")
    parser.add_argument("--root", type=Path,
                        help="where the web is (re)generated (default: a directory per "
                        "parameter set under the temp dir, kept for reuse)")
    parser.add_argument("--skip-peer", action="store_true", help="do not run the CrawlSpider")
    parser.add_argument("--keep-run", action="store_true",
                        help="keep the run directory (nginx config and logs, websift data)")
    parser.add_argument("--peer-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer_child is not None:
        run_peer_child(args.peer_child, args.crawl_pages)
        return 0
    if args.pages < args.hosts:
        parser.error(f"--pages ({args.pages}) must be at least --hosts ({args.hosts})")

    params = WebParams(args.pages, args.hosts, args.seed)
    root = args.root or Path(tempfile.gettempdir()) / (
        f"websift-genweb-{args.pages}-{args.hosts}-{args.seed}")
    find_nginx()  # before minutes of generation
    web = ensure_web(root, params, log=True)
    window = min(WINDOW, max(2, args.crawl_pages // 6))
    run_dir = Path(tempfile.mkdtemp(prefix="websift-crawl-scale-"))
    runs: list[Run] = []
    try:
        with Nginx(web, run_dir) as server:
            print(f"nginx: {args.hosts} hosts on {web.address(0)}..{web.address(args.hosts - 1)}"
                  f":{params.port}, log {server.access_log}", flush=True)
            data = run_dir / "websift-data"
            print(f"websift crawl: {args.crawl_pages} pages, no delay, {CONCURRENCY} per host",
                  flush=True)
            ws = run_child("websift", WEBSIFT_AGENT, websift_cmd(web, data, args.crawl_pages),
                           server)
            if ws.returncode != 0:
                raise ScaleError(f"websift crawl failed ({ws.returncode}):\n{ws.stderr_tail}")
            stored = store_figures(data)
            runs.append(ws)
            if not args.skip_peer:
                seeds_file = run_dir / "seeds.txt"
                seeds_file.write_text("\n".join(web.seeds()) + "\n")
                print(f"CrawlSpider: {args.crawl_pages} pages, same settings", flush=True)
                peer = run_child("CrawlSpider", PEER_AGENT, peer_cmd(seeds_file, args.crawl_pages),
                                 server)
                if peer.returncode != 0:
                    raise ScaleError(f"CrawlSpider failed ({peer.returncode}):\n"
                                     f"{peer.stderr_tail}")
                runs.append(peer)
    finally:
        if args.keep_run:
            print(f"run directory kept: {run_dir}")
        else:
            shutil.rmtree(run_dir)
    return report(web, runs, stored, window)


def report(web: Web, runs: list[Run], stored: StoreFigures, window: int) -> int:
    figs = {r.name: figures(r, window) for r in runs}
    ws, wf = runs[0], figs["websift"]
    urls = stored.urls
    per_url = ws.peak_rss / urls if urls else float("nan")
    growth = (ws.peak_rss - rss_at_first_fetch(ws)) / urls if urls else float("nan")
    print()
    print(f"web: {web.params.pages} pages on {web.params.hosts} hosts, {web.links} links, "
          f"{web.private_links} into {DISALLOWED}; rate windows of {window} pages")
    names = [r.name for r in runs]
    print(f"{'':<34}" + "".join(f"{n:>14}" for n in names))

    def row(label: str, values: list[str]) -> None:
        print(f"{label:<34}" + "".join(f"{v:>14}" for v in values))

    row("pages fetched (server log)", [str(figs[n].pages) for n in names])
    row("  answered other than 200", [str(figs[n].not_ok) for n in names])
    row("robots.txt requests", [str(figs[n].robots) for n in names])
    row("wall seconds", [f"{r.wall:.1f}" for r in runs])
    row("pages/s overall", [f"{figs[n].overall_rate:.1f}" for n in names])
    row("CPU seconds (user + system)", [f"{r.cpu:.1f}" for r in runs])
    row("  CPU ms a page", [f"{r.cpu * 1e3 / figs[r.name].pages:.2f}" if figs[r.name].pages
                            else "-" for r in runs])
    row(f"pages/s, first {window}", [f"{figs[n].first_rate:.1f}" for n in names])
    row(f"pages/s, last {window}", [f"{figs[n].last_rate:.1f}" for n in names])
    row("last / first", [f"{figs[n].last_rate / figs[n].first_rate:.2f}"
                         if figs[n].first_rate else "-" for n in names])
    row("peak RSS MiB (process tree)", [f"{r.peak_rss / 2**20:.0f}" for r in runs])
    row("URLs known at the end", [str(urls)] + ["-"] * (len(runs) - 1))
    row("peak RSS bytes per known URL", [f"{per_url:.0f}"] + ["-"] * (len(runs) - 1))
    row("  RSS growth per known URL", [f"{growth:.0f}"] + ["-"] * (len(runs) - 1))
    row("robots-disallowed fetches", [str(figs[n].disallowed) for n in names])
    row("pages before host's robots.txt", [str(figs[n].before_robots) for n in names])
    if stored.summary:
        print(f"websift's own summary: {stored.summary.get('pages')} pages, "
              f"{stored.summary.get('pages_per_second', 0):.1f}/s; store {stored.status}")
        collector = (stored.summary.get("live") or {}).get("gc") or {}
        pauses = collector.get("pauses") or {}
        if pauses:
            print("websift's garbage collections (generation: count, seconds, longest ms): "
                  + "; ".join(f"{g}: {p['count']}, {p['seconds']:.2f}, {p['longest_ms']:.1f}"
                              for g, p in sorted(pauses.items()))
                  + f"; thresholds {collector.get('threshold')}")
    lines = timeline(ws)
    if lines:
        print("\nwebsift by tenths of its fetches (rate within each tenth; queue and RSS at its end)")
        print("\n".join(lines))

    ratio = wf.last_rate / wf.first_rate if wf.first_rate else 0.0
    peer = figs.get("CrawlSpider")
    vs_peer = wf.overall_rate / peer.overall_rate if peer and peer.overall_rate else None
    bars = [
        (f"rate over the last {window} >= {BAR_RATIO}x the first", ratio >= BAR_RATIO),
        (f"overall >= {BAR_RATE:g} pages/s", wf.overall_rate >= BAR_RATE),
        ("zero robots-disallowed fetches", wf.disallowed == 0),
        ("no page before its host's robots.txt", wf.before_robots == 0),
    ]
    print()
    for text, ok in bars:
        print(f"bar: {text}: {'met' if ok else 'NOT met'}")
    if vs_peer is not None:
        print(f"websift / CrawlSpider pages/s: {vs_peer:.2f}")
    key = {
        "pages": web.params.pages, "hosts": web.params.hosts, "crawled": wf.pages,
        "window": window, "first_rate": f"{wf.first_rate:.1f}", "last_rate": f"{wf.last_rate:.1f}",
        "last_over_first": f"{ratio:.2f}", "pages_per_s": f"{wf.overall_rate:.1f}",
        "peer_pages_per_s": f"{peer.overall_rate:.1f}" if peer else "-",
        "websift_over_peer": f"{vs_peer:.2f}" if vs_peer is not None else "-",
        "peak_rss_mb": f"{ws.peak_rss / 2**20:.0f}", "urls_known": urls,
        "cpu_s": f"{ws.cpu:.1f}",
        "bytes_per_url": f"{per_url:.0f}", "growth_bytes_per_url": f"{growth:.0f}",
        "disallowed_fetches": wf.disallowed, "before_robots": wf.before_robots,
    }
    print(" ".join(f"{k}={v}" for k, v in key.items()))
    return 0 if all(ok for _, ok in bars) else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ScaleError as exc:
        print(f"crawl_scale: {exc}", file=sys.stderr)
        sys.exit(2)
