"""Ablation of websift's ranking on a development manual: text, anchors, PageRank, OPIC, topics.

    .venv/bin/python -m scripts.evaluation.eval_ranking                  # the Python manual
    .venv/bin/python -m scripts.evaluation.eval_ranking --manual octave  # the GNU Octave manual
    .venv/bin/python -m scripts.evaluation.eval_ranking --data D  # reuse (or make) a crawl in D
    .venv/bin/python -m scripts.evaluation.eval_ranking --row 'no prox:proximity_weight=0'

Crawls and indexes the manual (``--manual``, ``eval_relevance.MANUALS``) exactly as
``scripts/evaluation/eval_relevance.py`` does (its functions are imported, not copied), computes
the ranks (``ranking.rank_job.run_rank``), then runs the manual's queries through the API's own
search path (``api.retrieval.run_search``, what ``GET /search`` runs) and prints one table:

- BM25F without the anchor field; BM25F (with anchor text); + PageRank; + OPIC instead of PageRank;
  ``topic=auto`` when topics are defined;
- the ablation rows of ``eval_relevance.ABLATIONS`` and ``--row`` (BM25FSettings fields or
  ``WEBSIFT_*`` variables; see eval_relevance), each with PageRank fused as by default;
- a sweep of the fusion weight ``w`` and midpoint ``k`` (``final = BM25F + w * s/(s + k)``, s the
  static score normalised to mean 1), which is what the defaults in ranking/fusion.py rest on.

Metrics: MRR@10, nDCG@10, Recall@10, Success@1 (``eval_relevance.evaluate``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from scripts.evaluation.eval_relevance import (
    ABLATIONS,
    MANUALS,
    Query,
    Row,
    crawl_and_index,
    env_of,
    environment,
    evaluate,
    load_queries,
    parse_rows,
    reindexed_copy,
    searcher_for,
)
from websift.api.retrieval import SearchRequest, run_search
from websift.api.snapshot import RankView, Shared, Snapshot
from websift.core.datadir import DataDir
from websift.core.errors import WebsiftError
from websift.indexer.searcher import Searcher
from websift.ranking.fusion import DEFAULT_EXPONENT, DEFAULT_MIDPOINT, DEFAULT_WEIGHT, FusionParams
from websift.ranking.rank_job import run_rank
from websift.ranking.ranks import Ranks
from websift.ranking.ranks import current_generation as ranks_generation
from websift.ranking.topics import TopicSet, add_topic

ROOT = Path(__file__).resolve().parents[2]

K = 10
REFUSED = [0]  # queries the search path refused (no words left), counted and reported
WEIGHTS = (0.5, 1.0, 2.0, 4.0, 8.0)
MIDPOINTS = (0.5, 1.0, 2.0, 4.0)
METRICS = ("MRR@10", "nDCG@10", "Recall@10", "Success@1")


def snapshot_of(searcher: Searcher, ranks: Ranks | None) -> Snapshot:
    """The same kind of snapshot the server leases to its requests."""
    view = None if ranks is None else Shared(RankView.load(ranks), lambda _v: None)
    return Snapshot(Shared(searcher, lambda _s: None), view)


def runner(
    snap: Snapshot, fusion: FusionParams, static_score: str, topic: str | None = None
) -> Callable[[str], list[str]]:
    """query -> ranked URLs, through the API's search path."""

    def run(q: str) -> list[str]:
        req = SearchRequest(q=q, k=K, offset=0, topic=topic)
        try:
            return [h.hit.url for h in run_search(snap, req, fusion, static_score).hits]
        except WebsiftError:  # a query of symbols only: nothing to search for, finds nothing
            REFUSED[0] += 1
            return []

    return run


def row(name: str, m: dict[str, float], seconds: float | None = None) -> str:
    cells = " | ".join(f"{m[c]:.3f}" for c in METRICS)
    timing = "" if seconds is None else f" {seconds:.1f} s |"
    return f"| {name} | {cells} |{timing}"


def ablation(
    snap: Snapshot, no_anchor: Snapshot, fusion: FusionParams, queries: list[Query]
) -> None:
    print("| ranking | " + " | ".join(METRICS) + " | time |")
    print("|---|---|---|---|---|---|")
    variants: list[tuple[str, Snapshot, str, str | None]] = [
        ("BM25F, no anchor text", no_anchor, "none", None),
        ("BM25F + anchor text", snap, "none", None),
        (f"+ PageRank (w={fusion.weight:g}, k={fusion.midpoint:g})", snap, "pagerank", None),
        (f"+ OPIC instead of PageRank (w={fusion.weight:g}, k={fusion.midpoint:g})", snap,
         "opic", None),
    ]
    view = snap.rank_view
    if view is not None and view.topics:
        variants.append(("+ topic=auto (topic-sensitive PageRank)", snap, "pagerank", "auto"))
    for name, s, static, topic in variants:
        started = time.perf_counter()
        metrics = evaluate(runner(s, fusion, static, topic), queries)
        print(row(name, metrics, time.perf_counter() - started), flush=True)


def row_ablation(data: DataDir, ranks: Ranks, rows: list[Row], fusion: FusionParams,
                 queries: list[Query], *, manual: str) -> None:
    for r in rows:
        started = time.perf_counter()
        env = env_of(r.overrides)
        if not env:
            snap = snapshot_of(searcher_for(data, r), ranks)
            metrics = evaluate(runner(snap, fusion, "pagerank"), queries)
        else:
            # WEBSIFT_* variables are indexing settings (indexer/settings.py IndexSettings, read
            # by `websift index` and recorded in the segments, which the searcher analyses
            # queries by): the row is searched in a child process, on a copy indexed with them,
            # fused with this crawl's ranks (the copy keeps its URL IDs).
            with environment(env):
                copy = reindexed_copy(data, env)
                child = subprocess.run(
                    [sys.executable, "-m", "scripts.evaluation.eval_ranking", "--manual", manual,
                     "--row-child", str(copy.root), str(data.root),
                     str(fusion.weight), str(fusion.midpoint), str(fusion.exponent),
                     *r.overrides], check=False, capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT)})
            if child.returncode != 0:
                raise SystemExit(f"row {r.name!r} failed:\n{child.stderr}")
            metrics = json.loads(child.stdout.strip().splitlines()[-1])
        print(row(f"{r.name}, + PageRank", metrics, time.perf_counter() - started), flush=True)


def _row_child(args: list[str], queries: list[Query]) -> None:
    """COPY ORIGINAL W K A OVERRIDES...: one row's metrics as JSON (row_ablation)."""
    copy, original, w, k, a, *overrides = args
    ranks = Ranks.open(DataDir.open(Path(original)))
    snap = snapshot_of(searcher_for(DataDir.open(Path(copy)), Row("child", tuple(overrides))),
                       ranks)
    fusion = FusionParams(float(w), float(k), float(a))
    print(json.dumps(evaluate(runner(snap, fusion, "pagerank"), queries)))


def sweep(snap: Snapshot, static_score: str, queries: list[Query], exponent: float) -> None:
    print(f"\nSweep over w and k for {static_score} (a={exponent:g}): MRR@10 / nDCG@10")
    print("| w \\ k | " + " | ".join(f"{k:g}" for k in MIDPOINTS) + " |")
    print("|---|" + "---|" * len(MIDPOINTS))
    for w in WEIGHTS:
        cells = []
        for k in MIDPOINTS:
            m = evaluate(runner(snap, FusionParams(w, k, exponent), static_score), queries)
            cells.append(f"{m['MRR@10']:.3f} / {m['nDCG@10']:.3f}")
        print(f"| {w:g} | " + " | ".join(cells) + " |", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="data directory to crawl into or reuse")
    ap.add_argument("--no-sweep", action="store_true", help="only the ablation table")
    ap.add_argument("--weight", type=float, default=DEFAULT_WEIGHT)
    ap.add_argument("--midpoint", type=float, default=DEFAULT_MIDPOINT)
    ap.add_argument("--exponent", type=float, default=DEFAULT_EXPONENT)
    ap.add_argument(
        "--topic", action="append", default=[], metavar="NAME=REGEX",
        help="define a topic (pages whose URL matches REGEX) before evaluating, so the table "
        "gets a topic=auto row; repeatable (e.g. --topic capi=/c-api/ --topic lib=/library/)",
    )
    ap.add_argument("--manual", choices=sorted(MANUALS), default="python")
    ap.add_argument("--no-ablation", action="store_true", help="skip the ABLATIONS rows")
    ap.add_argument("--row", action="append", default=[], metavar="NAME:KEY=VALUE,...",
                    help="an extra ablation row (BM25FSettings fields or WEBSIFT_* variables)")
    ap.add_argument("--row-child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    manual = MANUALS[args.manual]
    if args.row_child:  # one WEBSIFT_* row, searched here (row_ablation)
        _row_child(args.row_child, load_queries(manual.queries))
        return 0
    extra = parse_rows(ap, args.row)

    tmp = None
    if args.data is None:
        tmp = tempfile.TemporaryDirectory(prefix="websift-eval-ranking-")
        args.data = Path(tmp.name) / "data"
    data: DataDir = crawl_and_index(args.data, manual=manual)
    if ranks_generation(data) is None:
        run_rank(data)
    for spec in args.topic:
        name, _, pattern = spec.partition("=")
        add_topic(data, TopicSet(name=name, patterns=(pattern,)))
    queries = load_queries(manual.queries)
    searcher = Searcher.open(data)
    ranks = Ranks.open(data)
    no_anchor_searcher = Searcher(
        searcher.manifest,
        searcher.segments,
        replace(searcher.settings, weights={**searcher.settings.weights, "anchor": 0.0}),
    )
    snap = snapshot_of(searcher, ranks)
    no_anchor = snapshot_of(no_anchor_searcher, ranks)
    fusion = FusionParams(args.weight, args.midpoint, args.exponent)
    print(f"{manual.name}: {searcher.doc_count()} documents, {len(queries)} queries, ranks generation "
          f"{ranks.generation}, topics: {', '.join(ranks.topic_names()) or 'none'}\n")
    ablation(snap, no_anchor, fusion, queries)
    row_ablation(data, ranks, ([] if args.no_ablation else list(ABLATIONS)) + extra, fusion,
                 queries, manual=manual.name)
    if not args.no_sweep:
        sweep(snap, "pagerank", queries, args.exponent)
        sweep(snap, "opic", queries, args.exponent)
    if REFUSED[0]:
        print(f"\n{REFUSED[0]} searches refused by the query parser (no words left): scored as "
              "finding nothing")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
