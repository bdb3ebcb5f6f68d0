"""The analyzer's policies (issue 12, item 2) on the development manuals: relevance (overall and
per kind of query), index size, hits and indexing rate with each switched off and on.

    .venv/bin/python -m scripts.evaluation.eval_analyzer --data D  # the Python manual
    .venv/bin/python -m scripts.evaluation.eval_analyzer --manual python,octave --data D  # D/<name> each

For each row (analyzer 1, the engine before issue 12; technical terms only; stop words only;
analyzer 2 = both; analyzer 3 = operator terms too: every hit in every field, in the title,
headings and defs fields only, or there plus each operator's first hit per field elsewhere =
the default), the index of the manual's crawl is rebuilt (``websift index --rebuild``) in a
child process whose environment sets WEBSIFT_ANALYZER_TECHNICAL / _STOPS / _OPERATORS and
WEBSIFT_OPERATOR_FIELDS / _ELSEWHERE, and the child runs
the manual's queries (scripts/evaluation/eval_relevance.py) and a few technical queries by hand.
Prints MRR@10, nDCG@10, MRR@10 per kind of query, index bytes, hits and seconds (pages per second),
each with its ratio to the first row.  Deterministic apart from the seconds (noisy on a busy
machine).  The last row is the default, so the crawl is left indexed as websift indexes it.
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
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

_ALL_OFF = {"WEBSIFT_ANALYZER_TECHNICAL": "0", "WEBSIFT_ANALYZER_STOPS": "0",
            "WEBSIFT_ANALYZER_OPERATORS": "0"}
ROWS: tuple[tuple[str, dict[str, str]], ...] = (
    ("analyzer 1 (no technical terms, stop words dropped)", _ALL_OFF),
    ("technical terms only", {**_ALL_OFF, "WEBSIFT_ANALYZER_TECHNICAL": "1"}),
    ("stop words kept only", {**_ALL_OFF, "WEBSIFT_ANALYZER_STOPS": "1"}),
    ("analyzer 2 (technical terms, stop words)", {"WEBSIFT_ANALYZER_OPERATORS": "0"}),
    ("analyzer 3, every operator hit in every field", {"WEBSIFT_OPERATOR_FIELDS": "all"}),
    ("analyzer 3, operators in title/headings/defs only", {"WEBSIFT_OPERATOR_ELSEWHERE": "none"}),
    ("analyzer 3: title/headings/defs, first hit elsewhere (the default)", {}),
)
_SWITCHES = ("WEBSIFT_ANALYZER_TECHNICAL", "WEBSIFT_ANALYZER_STOPS", "WEBSIFT_ANALYZER_OPERATORS",
             "WEBSIFT_OPERATOR_FIELDS", "WEBSIFT_OPERATOR_ELSEWHERE")
HAND_QUERIES = ("%s", "--help", "**kwargs", "__init__", "if", "not in", "c++", "<=", "-m",
                "if statement", "str.format %s", "+", ".^", "{", "@ function handle")


def _queries_file(default: Path) -> Path:
    """shared/eval's queries beside the checkout, or beside the worktrees' folder."""
    return default if default.exists() else ROOT.parents[1] / "shared" / default.relative_to(
        ROOT.parent / "shared")


def _child(data_dir: Path, manual_name: str) -> dict[str, Any]:
    from scripts.evaluation.eval_relevance import MANUALS, evaluate, load_queries
    from websift.core.datadir import DataDir
    from websift.indexer.build import build_index
    from websift.indexer.errors import QueryError
    from websift.indexer.manifest import read_manifest
    from websift.indexer.searcher import IndexQuery, Searcher
    from websift.indexer.settings import IndexSettings

    manual = MANUALS[manual_name]
    data = DataDir.open(data_dir)
    started = time.perf_counter()
    # This child's WEBSIFT_* variables, read once as `websift index` reads them; the searcher
    # then analyses queries as the index records.
    report = build_index(data, rebuild=True, settings=IndexSettings.from_env())
    seconds = time.perf_counter() - started
    manifest = read_manifest(data.index_dir)
    size = sum(f.stat().st_size for s in manifest.segments
               for f in (data.index_dir / s.name).iterdir())
    searcher = Searcher.open(data)

    def run(q: str) -> list[str]:
        try:
            return [h.url for h in searcher.search(IndexQuery(q, k=10, snippets=False)).hits]
        except QueryError:
            return []  # refused (symbols alone before analyzer 3): finds nothing

    queries = load_queries(_queries_file(manual.queries))
    kinds = sorted({q.kind for q in queries})
    per_kind = {k: evaluate(run, [q for q in queries if q.kind == k])["MRR@10"] for k in kinds
                } if len(kinds) > 1 else {}
    hand: dict[str, list[str] | str] = {}
    for q in HAND_QUERIES:
        try:
            found = searcher.search(IndexQuery(q, k=3, snippets=False))
            hand[q] = [h.url.rsplit("/", 2)[-1] for h in found.hits]
        except QueryError as exc:
            hand[q] = f"error: {exc}"
    return {"metrics": evaluate(run, queries), "kinds": per_kind, "bytes": size,
            "seconds": seconds, "hits": report.hits, "docs": report.documents, "hand": hand}


def _table(manual: str, rows: list[tuple[str, dict[str, Any]]]) -> None:
    base = rows[0][1]
    kinds = list(base["kinds"])
    print(f"\n## {manual}\n")
    print("| analyzer | MRR@10 | nDCG@10 | " + "".join(f"{k} | " for k in kinds)
          + "index MB (ratio) | hits (ratio) | index s (ratio, noisy) | pages/s |")
    print("|---|---|---|" + "---|" * len(kinds) + "---|---|---|---|")
    for name, r in rows:
        m, kind = r["metrics"], r["kinds"]
        print(f"| {name} | {m['MRR@10']:.3f} | {m['nDCG@10']:.3f} | "
              + "".join(f"{kind[k]:.3f} | " for k in kinds)
              + f"{r['bytes'] / 1e6:.1f} ({r['bytes'] / base['bytes']:.2f}x) "
              f"| {r['hits']} ({r['hits'] / max(base['hits'], 1):.2f}x) "
              f"| {r['seconds']:.1f} ({r['seconds'] / base['seconds']:.2f}x) "
              f"| {r['docs'] / r['seconds']:.0f} |")
    print("\nTop 3 for technical queries (last path part of each URL):")
    for q in HAND_QUERIES:
        print(f"\n{q!r}")
        for name, r in rows:
            print(f"  {name}: {r['hand'][q]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="data directory to crawl into or reuse (with "
                    "several manuals: one subdirectory per manual)")
    ap.add_argument("--manual", default="python", help="python, octave or both: python,octave")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.data, args.child)))
        return 0
    from scripts.evaluation.eval_relevance import MANUALS, crawl_and_index, fetched_pages

    names = [m.strip() for m in args.manual.split(",") if m.strip()]
    unknown = [m for m in names if m not in MANUALS]
    if unknown:
        sys.exit(f"error: unknown manual {unknown[0]!r}; choose from {', '.join(MANUALS)}")
    tmp = None
    if args.data is None:
        tmp = tempfile.TemporaryDirectory(prefix="websift-eval-analyzer-")
        args.data = Path(tmp.name) / "data"
    for name in names:
        data_dir = args.data / name if len(names) > 1 else args.data
        if fetched_pages(data_dir) == 0:  # crawl once; each row rebuilds the index
            crawl_and_index(data_dir, manual=MANUALS[name])
        rows = []
        for row, overrides in ROWS:
            env = {k: v for k, v in os.environ.items() if k not in _SWITCHES}
            env.update(overrides, PYTHONPATH=str(ROOT))
            run = subprocess.run([sys.executable, "-m", "scripts.evaluation.eval_analyzer",
                                  "--child", name, "--data", str(data_dir)], check=False,
                                 env=env, capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"row {row!r} failed:\n{run.stderr}")
            rows.append((row, json.loads(run.stdout.strip().splitlines()[-1])))
            print(f"done: {name}: {row}", file=sys.stderr, flush=True)
        _table(name, rows)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
