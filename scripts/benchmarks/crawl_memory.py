"""The crawler's memory on a 20,000-page site: peak RSS against a stated bound.

    .venv/bin/python -m scripts.benchmarks.crawl_memory  # 20,000 pages, bound 256 MB
    .venv/bin/python -m scripts.benchmarks.crawl_memory --pages 5000 --bound-mb 300

The site is generated on loopback (127.0.0.12) by the test web's ``TestWeb``, deterministically
and on the fly (nothing is held per page): page ``/p/i`` links to its eight children
``/p/8i+1 .. /p/8i+8`` (so every page is at most ~5 clicks from ``/``) and to a power-law number
of other pages (Pareto out-degree, mean ~10), chosen with probability falling as a power of their
number, so a few pages collect most in-links, as on the web.  Pages carry ~60 words of text.

``websift crawl --delay 0 --concurrency-per-host 8 --max-pages N --allow-private`` runs as a
child process; its RSS (with any children of its own) is sampled every 50 ms.  The script prints
the peak, the RSS at the end of the crawl, the pages fetched and the rate, states the bound
before the crawl, says whether it held, and exits 1 if not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from testkit.testweb import Answer, TestWeb, html, words
from websift.store.views import StoreReader

REPO = Path(__file__).resolve().parents[2]

ADDRESS = "127.0.0.12"
PAGES = 20_000
BOUND_MB = 256.0
CHILDREN = 8
PARETO_ALPHA = 1.2  # out-degree ~ Pareto(alpha): a heavy tail of pages with many links
TARGET_EXPONENT = 1.5  # page j is a link target with weight ~ (j + 1) ** -exponent
MAX_EXTRA_LINKS = 500
SAMPLE_EVERY = 0.05
SEED = 20_000


class PowerLawSite:
    """``/p/i`` for i < n, generated from i alone (the same bytes every time)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.web = TestWeb()
        site = self.web.add_site("gen", ADDRESS, "User-agent: *\nDisallow:\n")
        site.page("/", self._home)
        site.prefix("/p/", self._page)
        self.site = site
        # cumulative target weights: a page's random targets are drawn by bisection
        weights = [(j + 1) ** -TARGET_EXPONENT for j in range(n)]
        total = sum(weights)
        acc = 0.0
        self.cumulative = []
        for w in weights:
            acc += w / total
            self.cumulative.append(acc)

    def _target(self, rng: random.Random) -> int:
        import bisect

        return min(self.n - 1, bisect.bisect_left(self.cumulative, rng.random()))

    def links_of(self, i: int) -> list[int]:
        rng = random.Random(SEED * 1_000_003 + i)
        children = [c for c in range(CHILDREN * i + 1, CHILDREN * i + CHILDREN + 1) if c < self.n]
        extra = min(MAX_EXTRA_LINKS, int(rng.paretovariate(PARETO_ALPHA) * 2))
        return children + [self._target(rng) for _ in range(extra)]

    def _home(self, path: str, headers: dict[str, str], hit: int) -> Answer:
        return Answer(body=html("generated site", "<a href='/p/0'>start</a>"))

    def _page(self, path: str, headers: dict[str, str], hit: int) -> Answer:
        try:
            i = int(path.split("?", 1)[0].rsplit("/", 1)[1])
        except ValueError:
            return Answer(404, b"not found", content_type="text/plain")
        if not 0 <= i < self.n:
            return Answer(404, b"not found", content_type="text/plain")
        links = "".join(f"<a href='/p/{j}'>page {j}</a> " for j in self.links_of(i))
        return Answer(body=html(f"page {i}", f"<h1>page {i}</h1><p>{words(i)}</p><p>{links}</p>"))


def tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue  # a child that just ended has no memory to count
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=PAGES)
    parser.add_argument("--bound-mb", type=float, default=BOUND_MB)
    parser.add_argument("--data", type=Path, help="data directory (default: a temporary one)")
    args = parser.parse_args()

    gen = PowerLawSite(args.pages)
    tmp = tempfile.TemporaryDirectory(prefix="websift-mem-")
    data = args.data or Path(tmp.name) / "data"
    print(f"site: {args.pages} pages on {ADDRESS}; bound: crawler peak RSS <= {args.bound_mb:g} MB",
          flush=True)
    with gen.web:
        cmd = [sys.executable, "-m", "websift.api.cli", "crawl", gen.site.url("/"), "--data", str(data),
               "--delay", "0", "--concurrency-per-host", "8", "--max-pages", str(args.pages + 1),
               "--max-pages-per-host", str(args.pages + 1), "--allow-private", "--quiet"]
        t0 = time.perf_counter()
        with tempfile.TemporaryFile() as err:
            child = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err,
                                     env={**os.environ, "PYTHONPATH": str(REPO)})
            proc = psutil.Process(child.pid)
            peak = last = 0
            samples: list[tuple[float, int]] = []
            next_report = 10.0
            while True:
                try:
                    last = tree_rss(proc)
                except psutil.Error:
                    last = 0
                peak = max(peak, last)
                now = time.perf_counter() - t0
                samples.append((now, last))
                if now >= next_report:
                    served = sum(1 for e in gen.web.entries() if e.path.startswith("/p/"))
                    print(f"  {now:6.0f}s  RSS {last / 2**20:6.0f} MB  pages served {served}",
                          flush=True)
                    next_report += 10.0
                try:
                    child.wait(timeout=SAMPLE_EVERY)
                    break
                except subprocess.TimeoutExpired:
                    continue
            seconds = time.perf_counter() - t0
            err.seek(0)
            stderr = err.read().decode(errors="replace")
        if child.returncode != 0:
            print(stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"websift crawl failed ({child.returncode})")
        served = sum(1 for e in gen.web.entries() if e.path.startswith("/p/"))
    with StoreReader.open(data / "crawl.sqlite3") as store:
        last = store.last_crawl()
    if last is None or last[3] is None:
        raise SystemExit("the crawl recorded no summary")
    counts = json.loads(last[3])
    held = peak <= args.bound_mb * 2**20
    print(f"crawl: {counts['pages']} pages in {seconds:.0f} s ({counts['pages'] / seconds:.1f}/s), "
          f"{served} served; store {counts['store']}")
    print(f"crawler RSS: peak {peak / 2**20:.0f} MB, last sample {samples[-2][1] / 2**20:.0f} MB "
          f"(bound {args.bound_mb:g} MB: {'held' if held else 'EXCEEDED'})")
    tmp.cleanup()
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
