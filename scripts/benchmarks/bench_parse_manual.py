"""CPU of the indexer's HTML parse of a manual's pages, this tree against another, same run.

    .venv/bin/python -m scripts.benchmarks.bench_parse_manual --baseline TREE
    .venv/bin/python -m scripts.benchmarks.bench_parse_manual --manual octave --files 200 --rounds 5

``parse_html(body, url, ..., structure=True, shown=False)``, as the index workers call it, on
the first ``--files`` HTML files of each manual's docs directory (scripts/evaluation/
eval_relevance.py ``MANUALS``, read from disk: no crawl), 3 passes in one child process
(the median pass's CPU time a page).  ``--baseline TREE`` runs the same child with
``PYTHONPATH=TREE`` (e.g. a worktree of main) after each of this tree's, ``--rounds`` times in
turn, and prints the medians and this tree / it: a same-run ratio, the figure to read on a
loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from scripts.evaluation.eval_relevance import MANUALS

ROOT = Path(__file__).resolve().parents[2]


def child(manual: str, files: int) -> tuple[float, str]:
    """The median of 3 passes' CPU microseconds a page, and the parser's file (the tree)."""
    from websift.indexer import parse
    from websift.indexer.parse import parse_html

    paths = sorted(Path(MANUALS[manual].docs).rglob("*.html"))[:files]
    bodies = [p.read_bytes() for p in paths]
    if not bodies:
        raise SystemExit(f"error: no HTML files under {MANUALS[manual].docs}")
    passes = []
    for _ in range(3):
        t0 = time.process_time()
        for body in bodies:
            parse_html(body, "http://docs.example/page.html", "text/html; charset=utf-8",
                       structure=True, shown=False)
        passes.append((time.process_time() - t0) / len(bodies) * 1e6)
    return statistics.median(passes), str(Path(parse.__file__).resolve())


def run(tree: Path, manual: str, files: int) -> float:
    # imported here, not in the child: a baseline tree's scripts/ may not have it
    from scripts.benchmarks.against import child_in_tree

    got = child_in_tree(__file__, tree, ["--manual", manual, "--files", str(files)], "parser")
    return float(got["us_per_page"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--manual", default="python,octave",
                    help=f"comma-separated: {', '.join(MANUALS)}")
    ap.add_argument("--files", type=int, default=400, help="HTML files of each manual")
    ap.add_argument("--rounds", type=int, default=3, help="child processes of each tree")
    ap.add_argument("--baseline", type=Path, metavar="TREE",
                    help="also run the parse from this source tree, alternating")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    names = [m.strip() for m in args.manual.split(",") if m.strip()]
    unknown = [m for m in names if m not in MANUALS]
    if unknown or not names:
        ap.error(f"unknown manual {', '.join(unknown)} (known: {', '.join(MANUALS)})")
    if args.child:
        us, parser = child(names[0], args.files)
        print(json.dumps({"us_per_page": us, "parser": parser}))
        return 0
    for name in names:
        ours: list[float] = []
        base: list[float] = []
        for _ in range(args.rounds):
            ours.append(run(ROOT, name, args.files))
            if args.baseline is not None:
                base.append(run(args.baseline.resolve(), name, args.files))
        line = (f"{name}: parse_html {statistics.median(ours):.0f} us of CPU a page "
                f"(median of {args.rounds} processes)")
        if base:
            b = statistics.median(base)
            line += (f"; {args.baseline} {b:.0f} us; this tree / it "
                     f"{statistics.median(ours) / b:.2f}x")
        print(line, flush=True)
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
