"""Query latency on a development manual: this tree against another tree, same machine, same run.

    .venv/bin/python -m scripts.benchmarks.bench_dev_latency --data DIR [--baseline TREE --baseline-data DIR]
        [--manual python] [--rounds 3] [--repeat 5]

``--data``: a data directory holding the manual's crawl, indexed by this tree (the one
``scripts/evaluation/eval_relevance.py --manual python --data DIR`` makes).  ``--baseline``:
another websift source tree (a ``git worktree`` of another commit) with ``--baseline-data``, the
same crawl indexed by that tree (an index is read only by the analyzer that built it).  Each round
runs
every tree once in a child process (``PYTHONPATH`` set to the tree), in alternation: it opens
the searcher, runs the manual's queries once to warm it, then times each query ``--repeat``
times and keeps its best CPU time (``time.process_time``: steadier than wall time on a shared
machine), ranking only (top 10, no snippets, no fragment links).  Printed: p50 and p99 per run,
then the median over the rounds and the ratio this tree / baseline.  Issue 12 asks for a p50
within 1.2x of the code when it was opened.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ROUNDS = 3
DEFAULT_REPEAT = 5
TOP_K = 10

_CHILD = r"""
import inspect, json, sys, time
from pathlib import Path
import numpy as np
from websift.core.datadir import DataDir
from websift.indexer.searcher import Searcher
data, queries, repeat, k = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
texts = [line.split("\t")[2] for line in queries.read_text().splitlines() if line.strip()]
s = Searcher.open(DataDir.open(data))
try:  # a tree whose Searcher.search takes one request object
    from websift.indexer.searcher import IndexQuery
    def search(q):
        s.search(IndexQuery(q, k=k, snippets=False, fragments=False))
except ImportError:  # an older tree: keyword arguments
    kw = {"snippets": False}
    if "fragments" in inspect.signature(s.search).parameters:
        kw["fragments"] = False
    def search(q):
        s.search(q, k=k, **kw)
for q in texts:
    search(q)
best = []
for q in texts:
    b = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        search(q)
        b = min(b, time.process_time() - t)
    best.append(b * 1000.0)
print(json.dumps({"p50": float(np.percentile(best, 50)), "p99": float(np.percentile(best, 99)),
                  "queries": len(best)}))
"""


def run_tree(tree: Path, data: Path, queries: Path, repeat: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(data), str(queries), str(repeat),
                          str(TOP_K)], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    from scripts.evaluation.eval_relevance import MANUALS

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the manual's crawl, indexed here")
    ap.add_argument("--baseline", type=Path, help="another websift source tree")
    ap.add_argument("--baseline-data", type=Path, help="the same crawl indexed by --baseline")
    ap.add_argument("--manual", choices=sorted(MANUALS), default="python")
    ap.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    ap.add_argument("--repeat", type=int, default=DEFAULT_REPEAT)
    args = ap.parse_args(argv)
    if (args.baseline is None) != (args.baseline_data is None):
        ap.error("--baseline and --baseline-data go together")
    queries = MANUALS[args.manual].queries
    trees = {"this tree": (ROOT, args.data)}
    if args.baseline is not None:
        trees["baseline"] = (args.baseline.resolve(), args.baseline_data)
    p50s: dict[str, list[float]] = {name: [] for name in trees}
    for r in range(args.rounds):
        for name, (tree, data) in trees.items():
            m = run_tree(tree, data, queries, args.repeat)
            p50s[name].append(m["p50"])
            print(f"round {r + 1}: {name}: p50 {m['p50']:.3f} ms, p99 {m['p99']:.3f} ms "
                  f"({m['queries']:.0f} queries, best CPU time of {args.repeat})", flush=True)
    med = {name: statistics.median(v) for name, v in p50s.items()}
    print("\nmedian p50: " + ", ".join(f"{n} {v:.3f} ms" for n, v in med.items()))
    if "baseline" in med:
        print(f"this tree / baseline: {med['this tree'] / med['baseline']:.2f}x "
              "(issue 12: at most 1.2x of the code when it was opened)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
