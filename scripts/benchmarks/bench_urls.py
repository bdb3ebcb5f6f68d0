"""URL canonicalisation throughput: websift and w3lib (Scrapy's) on the same links, same run.

The input is real links: every ``href`` of the Python documentation installed by the
``python3.11-doc`` package (/usr/share/doc/python3.11/html), each with the URL its page would
have on docs.python.org as its base, taken in page order and repeated until there are N
(default 100 000).  Two timings, each the median of ``--repeat`` passes, interleaved:

- absolute: ``canonicalize(url)`` against ``w3lib.url.canonicalize_url(url)`` on the links
  already resolved (urljoin outside the timing);
- links: ``canonicalize(href, base)`` against ``canonicalize_url(urljoin(base, href))``, which
  is what a crawler does for every link of every page.

Also prints how many distinct URLs each produces (the two differ in policy: w3lib sorts query
arguments and keeps default ports; websift keeps query order and drops default ports).

Run from the repository root:  .venv/bin/python -m scripts.benchmarks.bench_urls [-n 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import contextlib
import html
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

from w3lib.url import canonicalize_url  # installed with Scrapy; used here only, as the peer

from websift.crawler.urls import UrlError, canonicalize

DOCS = Path("/usr/share/doc/python3.11/html")
SITE = "https://docs.python.org/3.11/"
_HREF_RE = re.compile(r"""<a\s[^>]*?href\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)


def load_links(root: Path, count: int) -> list[tuple[str, str]]:
    """(href, base) pairs from every page under ``root``, repeated up to ``count``."""
    pairs: list[tuple[str, str]] = []
    for page in sorted(root.rglob("*.html")):
        base = SITE + page.relative_to(root).as_posix()
        text = page.read_text(encoding="utf-8", errors="replace")
        for m in _HREF_RE.finditer(text):
            href = m.group(1) if m.group(1) is not None else m.group(2)
            pairs.append((html.unescape(href), base))  # as an HTML parser hands it over
    if not pairs:
        sys.exit(f"no links found under {root}; install python3.11-doc")
    return [pairs[i % len(pairs)] for i in range(count)]


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000, help="number of links")
    parser.add_argument("--repeat", type=int, default=5, help="timed passes (median is shown)")
    parser.add_argument("--docs", type=Path, default=DOCS)
    args = parser.parse_args()

    links = load_links(args.docs, args.n)
    absolute = [urljoin(base, href) for href, base in links]
    n = len(links)

    def ws_links() -> None:
        for href, base in links:
            with contextlib.suppress(UrlError):  # mailto:, javascript: ... refused, as in a crawl
                canonicalize(href, base)

    def w3_links() -> None:
        for href, base in links:
            canonicalize_url(urljoin(base, href))

    def ws_abs() -> None:
        for url in absolute:
            with contextlib.suppress(UrlError):
                canonicalize(url)

    def w3_abs() -> None:
        for url in absolute:
            canonicalize_url(url)

    runs: dict[str, list[float]] = {k: [] for k in ("ws_abs", "w3_abs", "ws_links", "w3_links")}
    for _ in range(args.repeat):
        runs["ws_abs"].append(_time(ws_abs))
        runs["w3_abs"].append(_time(w3_abs))
        runs["ws_links"].append(_time(ws_links))
        runs["w3_links"].append(_time(w3_links))
    med = {k: statistics.median(v) for k, v in runs.items()}

    refused = 0
    ours: set[str] = set()
    for href, base in links:
        try:
            ours.add(canonicalize(href, base))
        except UrlError:
            refused += 1
    theirs = {canonicalize_url(u) for u in absolute}

    print(f"{n} links from {args.docs} ({len(set(absolute))} distinct raw URLs)")
    print(
        f"websift refuses {refused} (non-http schemes); distinct canonical URLs: "
        f"websift {len(ours)}, w3lib {len(theirs)}"
    )
    for label, ws, w3 in (
        ("absolute", "ws_abs", "w3_abs"),
        ("links (resolve+canonicalize)", "ws_links", "w3_links"),
    ):
        print(
            f"{label:30s} websift {n / med[ws]:>10,.0f} URLs/s   w3lib {n / med[w3]:>10,.0f} URLs/s"
            f"   websift/w3lib speed ratio {med[w3] / med[ws]:.2f}x"
        )


if __name__ == "__main__":
    main()
