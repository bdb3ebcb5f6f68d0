"""Relevance on a site websift was never tuned on: Debian's ``rust-doc`` (rustdoc's API pages and
mdBook's books), MRR@10 of queries made from its API pages.

    apt-get install -y rust-doc
    .venv/bin/python -m scripts.evaluation.eval_rustdoc --data D
    .venv/bin/python -m scripts.evaluation.eval_rustdoc --data D --row 'no title share:title_share=0'

``/usr/share/doc/rust-doc/html`` is served on loopback (with its own robots.txt) and crawled into
``D`` with ``websift crawl`` (40,000 pages a host: the crawl finds about 21,600), indexed and
ranked, unless ``D`` holds that crawl already.  The queries are a seeded random sample of the
fetched ``std`` item pages (``struct``, ``fn``, ``trait``, ``enum``, ``macro``): each queried by
its name (``Keys``) or, every other one, by its module and its name (``hash_map Keys``), the
item's page and its copies under ``core`` and ``alloc`` being the relevant ones.  Each query
runs through the API's search path with PageRank fused (``eval_ranking.runner``); the rows:
websift as configured, then each ``--row`` (BM25FSettings overrides, as ``eval_relevance``'s).
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
from pathlib import Path

from scripts.evaluation.eval_ranking import METRICS, row, runner, snapshot_of
from scripts.evaluation.eval_relevance import parse_rows, settings_with
from testkit.devset import Query, evaluate, result_path, serve_docs
from websift.core.datadir import DataDir
from websift.indexer.searcher import Searcher
from websift.ranking.fusion import FusionParams
from websift.ranking.ranks import Ranks
from websift.ranking.ranks import current_generation as ranks_generation
from websift.store.views import StoreReader

DOCS = Path("/usr/share/doc/rust-doc/html")
ITEM = re.compile(r"std/(?:(.+)/)?(struct|fn|trait|enum|macro)\.(\w+)\.html")
WEBSIFT = [sys.executable, "-m", "websift"]


def crawl(data_dir: Path) -> DataDir:
    """The rust-doc crawl in ``data_dir``: made (crawled, indexed, ranked) when absent."""
    if not (data_dir / "crawl.sqlite3").exists():
        if not DOCS.is_dir():
            raise SystemExit(f"{DOCS} is missing: apt-get install -y rust-doc")
        with serve_docs(DOCS, robots=(DOCS / "robots.txt").read_bytes()) as base:
            subprocess.run([*WEBSIFT, "crawl", base + "index.html", "--data", str(data_dir),
                            "--delay", "0", "--concurrency-per-host", "8", "--allow-private",
                            "--max-pages-per-host", "40000", "--max-depth", "50", "--quiet"],
                           check=True)
    data = DataDir.open(data_dir)
    if not (data.index_dir / "manifest.json").exists():
        subprocess.run([*WEBSIFT, "index", "--data", str(data_dir), "--quiet"], check=True)
    if ranks_generation(data) is None:
        subprocess.run([*WEBSIFT, "rank", "--data", str(data_dir)], check=True,
                       stdout=subprocess.DEVNULL)
    return data


def item_queries(data: DataDir, n: int, seed: int) -> list[Query]:
    """``n`` queries of the crawl's ``std`` item pages (module doc)."""
    with StoreReader.open(data.store_path) as store:
        paths = {result_path(p.url) for p in store.pages("fetched") if p.duplicate_of is None}
    items = sorted(p for p in paths if ITEM.fullmatch(p))
    if len(items) < n:
        raise SystemExit(f"the crawl holds {len(items)} std item pages, fewer than {n}")
    out = []
    for i, path in enumerate(random.Random(seed).sample(items, n)):
        m = ITEM.fullmatch(path)
        assert m is not None
        module, name = (m.group(1) or "std").split("/")[-1], m.group(3)
        copies = [path.replace("std/", lib, 1) for lib in ("core/", "alloc/")]
        relevant = frozenset([path, *(c for c in copies if c in paths)])
        out.append(Query(f"rs{i:03d}", f"{module} {name}" if i % 2 else name, relevant, "item"))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the crawl's data directory (made "
                    "when absent)")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--row", action="append", default=[], metavar="NAME:KEY=VALUE,...",
                    help="an extra row: BM25FSettings overrides")
    args = ap.parse_args(argv)
    rows = parse_rows(ap, args.row)
    data = crawl(args.data)
    queries = item_queries(data, args.queries, args.seed)
    searcher, ranks = Searcher.open(data), Ranks.open(data)
    fusion = FusionParams()
    print(f"rust-doc: {searcher.doc_count()} documents, {len(queries)} item queries (seed "
          f"{args.seed}), ranks generation {ranks.generation}\n")
    print("| ranking | " + " | ".join(METRICS) + " |")
    print("|---|" + "---|" * len(METRICS))
    print(row("websift, + PageRank", evaluate(runner(snapshot_of(searcher, ranks), fusion,
                                                     "pagerank"), queries)))
    for r in rows:
        other = Searcher(searcher.manifest, searcher.segments,
                         settings_with(searcher.settings, r.overrides))
        print(row(f"{r.name}, + PageRank",
                  evaluate(runner(snapshot_of(other, ranks), fusion, "pagerank"), queries)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
