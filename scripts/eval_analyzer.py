"""The analyzer's two policies (issue 12, item 2) on the Python 3.11 manual: relevance, index size
and indexing time with each switched off and on.

    .venv/bin/python scripts/eval_analyzer.py --data D   # crawl into D once (or reuse it)

For each row (both off = analyzer version 1, the engine before issue 12; technical terms only;
stop words only; both on = the default), the index of D is rebuilt (``websift index --rebuild``)
in a child process whose environment sets WEBSIFT_ANALYZER_TECHNICAL / WEBSIFT_ANALYZER_STOPS,
and the child runs the 400 queries of shared/eval/pydocs_queries.tsv (scripts/eval_relevance.py)
and a few technical queries by hand.  Prints MRR@10, nDCG@10, index bytes and seconds, each
with its ratio to the first row.  Deterministic apart from the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

ROWS = (("analyzer 1 (no technical terms, stop words dropped)", "0", "0"),
        ("technical terms only", "1", "0"),
        ("stop words kept only", "0", "1"),
        ("analyzer 2 (both: the default)", "1", "1"))
HAND_QUERIES = ("%s", "--help", "**kwargs", "__init__", "if", "not in", "c++", "<=", "-m",
                "if statement", "str.format %s")


def _queries_file(default: Path) -> Path:
    """shared/eval's queries beside the checkout, or beside the worktrees' folder."""
    return default if default.exists() else ROOT.parents[1] / "shared" / default.relative_to(
        ROOT.parent / "shared")


def _child(data_dir: Path) -> dict[str, object]:
    from eval_relevance import QUERIES, evaluate, load_queries

    from core.datadir import DataDir
    from indexer.build import build_index
    from indexer.errors import QueryError
    from indexer.manifest import read_manifest
    from indexer.searcher import Searcher

    data = DataDir.open(data_dir)
    started = time.perf_counter()
    report = build_index(data, rebuild=True)
    seconds = time.perf_counter() - started
    manifest = read_manifest(data.index_dir)
    size = sum(f.stat().st_size for s in manifest.segments
               for f in (data.index_dir / s.name).iterdir())
    searcher = Searcher.open(data)
    metrics = evaluate(lambda q: [h.url for h in searcher.search(q, k=10, snippets=False).hits],
                       load_queries(_queries_file(QUERIES)))
    hand: dict[str, list[str] | str] = {}
    for q in HAND_QUERIES:
        try:
            hand[q] = [h.url.rsplit("/", 2)[-1] for h in searcher.search(q, k=3,
                                                                         snippets=False).hits]
        except QueryError as exc:
            hand[q] = f"error: {exc}"
    return {"metrics": metrics, "bytes": size, "seconds": seconds, "hits": report.hits,
            "docs": report.documents, "hand": hand}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="data directory to crawl into or reuse")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.data)))
        return 0
    from eval_relevance import serve_docs, websift

    tmp = None
    if args.data is None:
        tmp = tempfile.TemporaryDirectory(prefix="websift-eval-analyzer-")
        args.data = Path(tmp.name) / "data"
    if not (args.data / "crawl.sqlite3").exists():  # crawl once; each row indexes it anew
        with serve_docs() as base:
            websift("crawl", base + "index.html", "--data", str(args.data), "--delay", "0",
                    "--concurrency-per-host", "8", "--allow-private", "--max-pages", "5000",
                    "--max-depth", "50", "--quiet")
    rows = []
    for name, technical, stops in ROWS:
        env = {**os.environ, "WEBSIFT_ANALYZER_TECHNICAL": technical,
               "WEBSIFT_ANALYZER_STOPS": stops, "PYTHONPATH": str(ROOT)}
        run = subprocess.run([sys.executable, __file__, "--child", "--data", str(args.data)],
                             check=False, env=env, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"row {name!r} failed:\n{run.stderr}")
        out = run.stdout
        rows.append((name, json.loads(out.strip().splitlines()[-1])))
        print(f"done: {name}", file=sys.stderr, flush=True)
    base = rows[0][1]
    print("| analyzer | MRR@10 | nDCG@10 | Success@1 | index MB (ratio) | hits (ratio) "
          "| index s (ratio, noisy) |")
    print("|---|---|---|---|---|---|---|")
    for name, r in rows:
        m = r["metrics"]
        print(f"| {name} | {m['MRR@10']:.3f} | {m['nDCG@10']:.3f} | {m['Success@1']:.3f} "
              f"| {r['bytes'] / 1e6:.1f} ({r['bytes'] / base['bytes']:.2f}x) "
              f"| {r['hits']} ({r['hits'] / max(base['hits'], 1):.2f}x) "
              f"| {r['seconds']:.1f} ({r['seconds'] / base['seconds']:.2f}x) |")
    print("\nTop 3 for technical queries (last path part of each URL):")
    for q in HAND_QUERIES:
        print(f"\n{q!r}")
        for name, r in rows:
            print(f"  {name}: {r['hand'][q]}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
