"""A busy server without swaps: its query tail and its garbage collector's pauses.

    .venv/bin/python -m scripts.benchmarks.bench_serve_gc                      # 100,000 pages
    .venv/bin/python -m scripts.benchmarks.bench_serve_gc --against ../base --rounds 2

The index is bench_search_scale's (``--docs``, ``--cache``: its corpus and data directory,
indexed; run ``python -m scripts.benchmarks.bench_search_scale --docs N --no-api`` first).
For each checkout in turn (``--against`` ones first, then this one; ``--rounds`` times):

1. ``websift serve`` of that checkout over the index, without the result cache;
2. ``--warm`` distinct words of the corpus asked once each, as fast as answered (the caches
   fill: what a server that just started and is being asked does);
3. for ``--seconds``: one-word queries of those words one at a time, a pause of ``--every``
   between them, each timed; beside them a probe thread asks 30 words never asked before,
   ORed, a pause of ``--every`` between its queries (bench_up's probe: a cold load that keeps
   the caches taking in entries);
4. ``/stats`` ``gc``: the server's collections by generation and its settler's settles.

Printed per run: the timed queries' p50 / p99 / max, the slowest three (seconds since the
server was ready, wall ms, the server's own ``took_ms``) and the full collections (count,
longest, all).  A full collection holds the GIL, so a query that waits through one shows a
wall time far above its ``took_ms``.
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np

from scripts.benchmarks.bench_api import server_gc
from scripts.benchmarks.bench_search_scale import (
    DEFAULT_CACHE,
    DEFAULT_DOCS,
    DEFAULT_SEED,
    PAGES_PER_HOST,
    CorpusParams,
)
from scripts.benchmarks.bench_up import search
from testkit.serve_process import ServeProcess
from testkit.websift_process import REPO

WORDS_FROM_PAGES = 20_000  # the corpus's first pages the words are drawn from
WORDS_A_PAGE = 60  # the first words of each
PROBE_WORDS = 30


def corpus_words(text: Path, seed: int) -> list[str]:
    """Distinct words of the corpus's first pages (title and body), shuffled by ``seed``."""
    words: set[str] = set()
    with text.open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= WORDS_FROM_PAGES:
                break
            words.update(line.split("\t", 1)[-1].split()[:WORDS_A_PAGE])
    out = sorted(words)
    random.Random(seed).shuffle(out)
    return out


def ask(port: int, q: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(search(port, urlencode({"q": q, "k": 10}), timeout=60))
    return body


def one_run(data: Path, code: Path, words: list[str], args: argparse.Namespace
            ) -> dict[str, Any]:
    server = ServeProcess(data, code=code, env={"WEBSIFT_RESULT_CACHE_SIZE": "0"})
    try:
        server.wait_ready()
        ready = time.monotonic()
        warm = words[: args.warm]
        for w in warm:
            ask(server.port, w)
        stop = threading.Event()
        failures: list[Exception] = []

        def probe() -> None:
            i = args.warm
            try:
                while not stop.is_set() and i + PROBE_WORDS <= len(words):
                    ask(server.port, " OR ".join(words[i : i + PROBE_WORDS]))
                    i += PROBE_WORDS
                    stop.wait(args.every)  # the probe's pace, not a wait for a state
            except (OSError, ValueError) as exc:  # reported below, the run fails
                failures.append(exc)

        prober = threading.Thread(target=probe, name="probe")
        prober.start()
        timed: list[tuple[float, float, float]] = []
        end = time.monotonic() + args.seconds
        j = 0
        while time.monotonic() < end and not failures:
            t0 = time.monotonic()
            body = ask(server.port, warm[j % len(warm)])
            t1 = time.monotonic()
            timed.append((t0 - ready, (t1 - t0) * 1e3, float(body.get("took_ms", 0.0))))
            j += 1
            stop.wait(args.every)  # the measuring load's pace
        stop.set()
        prober.join(timeout=60)
        if failures:
            raise SystemExit(f"the probe failed: {failures[0]!r}")
        gc_figures = server_gc(f"http://127.0.0.1:{server.port}")
    finally:
        server.stop()
    wall = np.array([t[1] for t in timed])
    return {"queries": len(timed), "p50": float(np.percentile(wall, 50)),
            "p99": float(np.percentile(wall, 99)), "max": float(wall.max()),
            "slowest": sorted(timed, key=lambda t: -t[1])[:3], "gc": gc_figures}


def describe(name: str, r: dict[str, Any]) -> str:
    gc_figures = r["gc"] or {}
    full = (gc_figures.get("pauses") or {}).get("2")
    settles = (gc_figures.get("settler") or {}).get("settles")
    slow = ", ".join(f"{at:.0f} s: {w:.1f} ({took:.1f})" for at, w, took in r["slowest"])
    return (f"| {name} | {r['queries']} | {r['p50']:.1f} / {r['p99']:.1f} / {r['max']:.1f} | "
            f"{slow} | " + (f"{full['count']}, {full['longest_ms']:.1f}, "
                            f"{full['seconds'] * 1e3:.0f}" if full else "not reported")
            + f" | {settles if settles is not None else '-'} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=DEFAULT_DOCS // 10,
                    help="bench_search_scale's corpus of this many pages")
    ap.add_argument("--hosts", type=int, help=f"its hosts (default: docs / {PAGES_PER_HOST})")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--warm", type=int, default=3000, help="words asked once before timing")
    ap.add_argument("--seconds", type=float, default=90.0, help="how long queries are timed")
    ap.add_argument("--every", type=float, default=0.05,
                    help="seconds between two timed queries, and between two probe queries")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--against", type=Path, action="append", default=[], metavar="CHECKOUT",
                    help="another checkout of websift (a git worktree), run first each round")
    args = ap.parse_args(argv)
    params = CorpusParams(args.docs, args.hosts or max(1, args.docs // PAGES_PER_HOST),
                          args.seed)
    root = args.cache / params.key()
    data = root / "data"
    if not (data / "index").is_dir() or not (root / "text.tsv").exists():
        ap.error(f"no indexed corpus at {root}: run python -m "
                 f"scripts.benchmarks.bench_search_scale --docs {args.docs} --no-api first")
    words = corpus_words(root / "text.tsv", args.seed)
    if len(words) < args.warm + PROBE_WORDS:
        ap.error(f"the corpus gives {len(words)} words, fewer than --warm plus a probe")
    print(f"{root}: {len(words):,} words; warm {args.warm}, timed {args.seconds:g} s, "
          f"a query every {args.every:g} s beside a {PROBE_WORDS}-word probe", flush=True)
    checkouts = [(str(c), c.resolve()) for c in args.against] + [("this checkout", REPO)]
    rows = []
    for rnd in range(args.rounds):
        for name, code in checkouts:
            r = one_run(data, code, words, args)
            rows.append(describe(f"{name}, round {rnd + 1}", r))
            print(rows[-1], flush=True)
    print("\n| server | timed queries | p50 / p99 / max ms | slowest three (s after ready: "
          "wall ms (took_ms)) | full collections: count, longest ms, all ms | settles |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
