"""Benchmark: `websift crawl` against a plain Scrapy CrawlSpider and `wget -r`, in one run.

The Python 3.11 manual (/usr/share/doc/python3.11/html, from the python3.11-doc package) is
served on a loopback address with the robots.txt of shared/eval/README.md; each crawler fetches
the whole site with politeness off (no delay, 8 requests in flight per host for the two Scrapy
crawlers; wget fetches one at a time, it has no concurrency).  Each is run RUNS times; the table
shows medians of pages served, wall seconds, CPU milliseconds per page served (user + system of
the crawler and its children, from RUSAGE_CHILDREN), peak RSS (the process and its children,
sampled with psutil), and the ratios websift/CrawlSpider and websift/wget.  ``--against DIR``
adds websift of another checkout (``git worktree add DIR main``), run in turn with this one;
``--only-websift`` leaves the two peers out.

websift stores everything (WARC records, page rows, links, OPIC state, robots.txt); the
CrawlSpider stores nothing; wget writes the files.  The goal: websift no slower than the
CrawlSpider.

    .venv/bin/python -m scripts.benchmarks.bench_crawl [--runs 3] [--root DIR] [--against DIR]
        [--only-websift]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from testkit.testweb import StaticSite  # the test web's static site server

REPO = Path(__file__).resolve().parents[2]

DOC_ROOT = Path("/usr/share/doc/python3.11/html")
ADDRESS = "127.0.0.9"
ROBOTS = "User-agent: *\nDisallow: /genindex\nDisallow: /_sources/\n"
CONCURRENCY = 8
RUNS = 3
SAMPLE_EVERY = 0.05  # seconds between RSS samples


@dataclass
class Run:
    pages: int
    seconds: float
    peak_rss: int
    cpu: float = 0.0  # seconds, user + system, the crawler and its children


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


def measure(cmd: list[str], site: StaticSite, cwd: Path) -> Run:
    site.web.clear()
    cpu = _children_cpu()
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    child = psutil.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    peak = 0
    while child.poll() is None:
        try:
            peak = max(peak, _tree_rss(child))
        except psutil.NoSuchProcess:
            break
        time.sleep(SAMPLE_EVERY)
    seconds = time.perf_counter() - start
    err = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if child.returncode != 0 and not cmd[0].endswith("wget"):
        raise SystemExit(f"{cmd[:3]} failed ({child.returncode}):\n{err[-2000:]}")
    pages = sum(1 for e in site.web.entries() if e.path != "/robots.txt" and e.status == 200)
    return Run(pages, seconds, peak, _children_cpu() - cpu)


# ---------------------------------------------------------------------- the CrawlSpider peer
def run_crawlspider(urls: list[str], concurrency: int = CONCURRENCY, max_pages: int = 0,
                    restrict: bool = True) -> None:
    """A plain CrawlSpider, same politeness settings, nothing stored (runs in a child).

    ``restrict``: follow links only to the start URLs' hosts; ``max_pages``: stop after that
    many responses (Scrapy's CLOSESPIDER_PAGECOUNT, robots.txt included; 0: no limit).
    """
    from urllib.parse import urlsplit

    from scrapy.crawler import CrawlerProcess
    from scrapy.linkextractors import LinkExtractor
    from scrapy.spiders import CrawlSpider, Rule

    # Scrapy's domain match compares the netloc, port included
    netlocs = list(dict.fromkeys(urlsplit(u).netloc for u in urls)) if restrict else []

    class PlainSpider(CrawlSpider):
        name = "plain"
        start_urls = tuple(urls)
        rules = (Rule(LinkExtractor(allow_domains=netlocs), callback="parse_page", follow=True),)

        def parse_page(self, response: object) -> None:
            return None

    process = CrawlerProcess({
        "ROBOTSTXT_OBEY": True,
        "CONCURRENT_REQUESTS": 64,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "DOWNLOAD_DELAY": 0,
        "LOG_LEVEL": "ERROR",
        "TELNETCONSOLE_ENABLED": False,
        "DEPTH_LIMIT": 0,
        "CLOSESPIDER_PAGECOUNT": max_pages,
    })
    process.crawl(PlainSpider)
    process.start()


# ---------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--root", type=Path, default=DOC_ROOT)
    parser.add_argument("--crawlspider", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--against", type=Path, help="also websift of this checkout")
    parser.add_argument("--only-websift", action="store_true", help="no CrawlSpider, no wget")
    args = parser.parse_args()
    if args.crawlspider:
        run_crawlspider([args.crawlspider])
        return
    if not (args.root / "index.html").exists():
        raise SystemExit(f"{args.root} has no index.html (apt-get install python3.11-doc)")
    python = sys.executable
    work = Path(tempfile.mkdtemp(prefix="websift-bench-"))
    names = ["websift"] + (["websift (against)"] if args.against else [])
    names += [] if args.only_websift else ["CrawlSpider", "wget"]
    results: dict[str, list[Run]] = {name: [] for name in names}
    try:
        with StaticSite(args.root, ADDRESS, ROBOTS) as site:
            url = site.origin + "/"
            for i in range(args.runs):
                data = work / f"websift-{i}"
                def crawl(data: Path) -> list[str]:
                    return [python, "-m", "websift.api.cli", "crawl", url, "--data", str(data),
                            "--allow-private", "--delay", "0", "--concurrency-per-host",
                            str(CONCURRENCY), "--max-pages", "100000", "--quiet"]

                cmds = {
                    "websift": (crawl(data), REPO),
                    "websift (against)": (crawl(work / f"against-{i}"), args.against or REPO),
                    "CrawlSpider": ([python, "-m", "scripts.benchmarks.bench_crawl",
                                     "--crawlspider", url], REPO),
                    "wget": (["wget", "-r", "-l", "inf", "-q", "-e", "robots=on",
                              "-P", str(work / f"wget-{i}"), url], REPO),
                }
                for name in names:
                    cmd, cwd = cmds[name]
                    results[name].append(measure(cmd, site, cwd))
                    print(f"run {i + 1} {name}: {results[name][-1]}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = {
        name: Run(
            int(statistics.median(r.pages for r in runs)),
            statistics.median(r.seconds for r in runs),
            int(statistics.median(r.peak_rss for r in runs)),
            statistics.median(r.cpu for r in runs),
        )
        for name, runs in results.items()
    }
    print(f"{'crawler':<18} {'pages':>6} {'seconds':>8} {'pages/s':>8} {'CPU ms/page':>12} "
          f"{'peak RSS MiB':>13}   (load {os.getloadavg()[0]:.1f})")
    for name, r in med.items():
        print(f"{name:<18} {r.pages:>6} {r.seconds:>8.2f} {r.pages / r.seconds:>8.1f} "
              f"{1000 * r.cpu / max(1, r.pages):>12.2f} {r.peak_rss / 2**20:>13.1f}")
    ws = med["websift"]
    for peer in [n for n in ("websift (against)", "CrawlSpider", "wget") if n in med]:
        p = med[peer]
        print(f"websift/{peer}: time {ws.seconds / p.seconds:.2f}x, "
              f"peak RSS {ws.peak_rss / max(1, p.peak_rss):.2f}x, pages {ws.pages}/{p.pages}")
    print(json.dumps({k: vars(v) for k, v in med.items()}))


if __name__ == "__main__":
    main()
