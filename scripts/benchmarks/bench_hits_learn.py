"""CPU of the hits of a crawled site's pages (learning their words), this tree against another.

    .venv/bin/python -m scripts.benchmarks.bench_hits_learn --data D --baseline TREE
    .venv/bin/python -m scripts.benchmarks.bench_hits_learn --manual octave --data D --rounds 5

The fields the index workers turn into hits (``BatchAnalyser._hits``'s documents and languages,
batch by batch) are recorded once from ``websift index --procs 1`` of the crawled manual in
``--data``/<manual> (scripts/evaluation/eval_relevance.py ``MANUALS``: crawled there first if
it is not; the index is built in a copy, the data directory is left as it was), then a child
process replays them through its tree's ``BatchAnalyser._hits`` twice with one fresh analyser:
the first pass learns every word (one worker's memo, as ``--procs 1``), the second finds all in
the memo.  Prints per tree the medians of ``--rounds`` children: the first pass's CPU, the
second's, and their difference (the learning), also per distinct
whitespace-separated chunk of the fields.
``--baseline TREE`` runs the same child with ``PYTHONPATH=TREE`` (e.g. a worktree of main) after
each of this tree's, and prints this tree / it: a same-run ratio, the figure to read on a
loaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def record(data_dir: Path, out: Path) -> tuple[int, int]:
    """Index a copy of ``data_dir`` in this process, writing each ``_hits`` call's documents
    and languages to ``out`` (JSON lines); the number of calls and of distinct
    whitespace-separated chunks in the fields."""
    from websift.api import cli
    from websift.indexer import docbatch
    from websift.indexer.folding import fold_text
    from websift.indexer.settings import MAX_FIELD_CHARS

    calls: list[str] = []
    chunks: set[str] = set()
    hits = docbatch.BatchAnalyser._hits

    def recorded(self: Any, docs: list[list[str | list[str]]], langs: list[str]) -> Any:
        calls.append(json.dumps({"docs": docs, "langs": langs}))
        for fields in docs:
            for value in fields:
                for text in [value[:MAX_FIELD_CHARS]] if isinstance(value, str) else value:
                    chunks.update(fold_text(text).split())
        return hits(self, docs, langs)

    with tempfile.TemporaryDirectory(prefix="bench-hits-") as tmp:
        copy = Path(tmp) / "data"
        shutil.copytree(data_dir, copy, ignore=shutil.ignore_patterns("index", "*.lock"))
        docbatch.BatchAnalyser._hits = recorded  # type: ignore[method-assign]
        try:
            code = cli.main(["index", "--quiet", "--procs", "1", "--data", str(copy)])
        finally:
            docbatch.BatchAnalyser._hits = hits  # type: ignore[method-assign]
        if code:
            raise SystemExit(f"error: websift index of {copy} exited {code}")
    out.write_text("\n".join(calls) + "\n")
    return len(calls), len(chunks)


def child(calls_path: Path) -> dict[str, Any]:
    """Both passes' CPU seconds, the chunks learned, and the hits module's file (the tree)."""
    from websift.indexer import hits
    from websift.indexer.docbatch import BatchAnalyser
    from websift.indexer.settings import DEFAULT_INDEX_SETTINGS

    calls = [json.loads(line) for line in calls_path.read_text().splitlines() if line]
    with tempfile.TemporaryDirectory(prefix="bench-hits-") as tmp:
        analyser = BatchAnalyser(Path(tmp), DEFAULT_INDEX_SETTINGS)
        passes = []
        for _ in range(2):
            t0 = time.process_time()
            for call in calls:
                analyser._hits(call["docs"], call["langs"])
            passes.append(time.process_time() - t0)
        analyser.close()
    return {"learn_pass": passes[0], "memo_pass": passes[1],
            "module": str(Path(hits.__file__).resolve())}


def run(tree: Path, calls: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{ROOT}"}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(calls)],
                          check=False, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"error: the child for {tree} failed:\n{done.stderr}")
    got: dict[str, Any] = json.loads(done.stdout)
    if not Path(got["module"]).is_relative_to(tree.resolve()):
        raise SystemExit(f"error: the child for {tree} imported {got['module']}")
    return got


def _line(label: str, got: list[dict[str, Any]], chunks: int) -> tuple[float, float]:
    first = statistics.median(g["learn_pass"] for g in got)
    learn = statistics.median(g["learn_pass"] - g["memo_pass"] for g in got)
    print(f"| {label} | {first:.2f} | {statistics.median(g['memo_pass'] for g in got):.2f} | "
          f"{learn:.2f} | {learn / chunks * 1e6:.1f} |")
    return first, learn


def main(argv: list[str] | None = None) -> int:
    from scripts.evaluation.eval_relevance import MANUALS, crawl_and_index

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--manual", default="python,octave",
                    help=f"comma-separated: {', '.join(MANUALS)}")
    ap.add_argument("--data", type=Path, help="crawl into or reuse D/<manual> (required)")
    ap.add_argument("--rounds", type=int, default=3, help="child processes of each tree")
    ap.add_argument("--baseline", type=Path, metavar="TREE",
                    help="also replay the hits with this source tree, alternating")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child)))
        return 0
    if args.data is None:
        ap.error("--data D is required")
    names = [m.strip() for m in args.manual.split(",") if m.strip()]
    unknown = [m for m in names if m not in MANUALS]
    if unknown or not names:
        ap.error(f"unknown manual {', '.join(unknown)} (known: {', '.join(MANUALS)})")
    for name in names:
        data_dir = args.data.resolve() / name
        if not (data_dir / "crawl.sqlite3").is_file():
            crawl_and_index(data_dir, manual=MANUALS[name])
        with tempfile.TemporaryDirectory(prefix="bench-hits-") as tmp:
            calls = Path(tmp) / "calls.jsonl"
            n_calls, chunks = record(data_dir, calls)
            ours: list[dict[str, Any]] = []
            base: list[dict[str, Any]] = []
            for _ in range(args.rounds):
                ours.append(run(ROOT, calls))
                if args.baseline is not None:
                    base.append(run(args.baseline.resolve(), calls))
        print(f"\n{name} manual: {n_calls} batches' hits, {chunks} distinct chunks; CPU s, "
              f"medians of {args.rounds} processes")
        print("| tree | learning pass | memo pass | learning | us a chunk |")
        print("|---|---|---|---|---|")
        first, learn = _line("this tree", ours, chunks)
        if base:
            b_first, b_learn = _line(str(args.baseline), base, chunks)
            print(f"this tree / {args.baseline}: learning pass {first / b_first:.2f}x, "
                  f"learning {learn / b_learn:.2f}x")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
