"""Relevance of websift's text ranking on the Python 3.11 manual, beside Whoosh and tantivy.

    .venv/bin/python scripts/eval_relevance.py            # serve, crawl, index, evaluate
    .venv/bin/python scripts/eval_relevance.py --data D   # reuse (or make) a crawl in D

Serves /usr/share/doc/python3.11/html on a loopback port with the robots.txt of
shared/eval/README.md, crawls it with ``websift crawl`` (politeness off), indexes it with
``websift index``, runs the 400 queries of shared/eval/pydocs_queries.tsv and prints MRR@10,
nDCG@10, Recall@10 and Success@1 for websift (text only, no link importance), Whoosh BM25F and
tantivy BM25 built in the same run on the same fetched pages, and an ablation of websift's
fields.  ``load_queries`` and ``evaluate`` are importable for other ablations.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from core.datadir import DataDir  # noqa: E402
from store.views import StoreReader  # noqa: E402

DOCS = Path("/usr/share/doc/python3.11/html")
QUERIES = ROOT.parent / "shared" / "eval" / "pydocs_queries.tsv"
ROBOTS = b"User-agent: *\nDisallow: /genindex\nDisallow: /_sources/\n"
K = 10


@dataclass(frozen=True)
class Query:
    qid: str
    text: str
    relevant: frozenset[str]


def load_queries(path: Path = QUERIES) -> list[Query]:
    out = []
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or parts[0] == "qid":
            continue
        out.append(Query(parts[0], parts[2], frozenset(parts[3].split())))
    return out


def result_path(url: str) -> str:
    """A result URL as the judgements spell pages: its path without the leading slash."""
    return urlsplit(url).path.lstrip("/") if "://" in url else url.lstrip("/")


def evaluate(run_fn: Callable[[str], list[str]], queries: list[Query] | None = None,
             k: int = K) -> dict[str, float]:
    """MRR@k, nDCG@k (binary gains), Recall@k and Success@1 of ``run_fn`` (query -> URLs)."""
    queries = queries if queries is not None else load_queries()
    mrr = ndcg = recall = s1 = 0.0
    for q in queries:
        ranked = [result_path(u) for u in run_fn(q.text)[:k]]
        gains = [1.0 if p in q.relevant else 0.0 for p in ranked]
        first = next((i for i, g in enumerate(gains) if g), None)
        mrr += 0.0 if first is None else 1.0 / (first + 1)
        s1 += 1.0 if gains and gains[0] else 0.0
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(q.relevant), k)))
        ndcg += dcg / ideal if ideal else 0.0
        recall += len(set(ranked) & q.relevant) / len(q.relevant) if q.relevant else 0.0
    n = max(len(queries), 1)
    return {"MRR@10": mrr / n, "nDCG@10": ndcg / n, "Recall@10": recall / n,
            "Success@1": s1 / n}


class _DocsHandler(SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/robots.txt":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(ROBOTS)))
            self.end_headers()
            self.wfile.write(ROBOTS)
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def serve_docs(root: Path = DOCS, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``root`` (with the eval robots.txt) on a loopback port; yields the base URL."""
    server = ThreadingHTTPServer((host, 0), partial(_DocsHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def websift(*args: str) -> None:
    subprocess.run([str(ROOT / ".venv" / "bin" / "websift"), *args], check=True)


def crawl_and_index(data_dir: Path, max_pages: int = 5000) -> DataDir:
    """Crawl the served manual into ``data_dir`` unless it already holds a crawl; index it."""
    store = data_dir / "crawl.sqlite3"
    fetched = 0
    if store.exists():
        with StoreReader.open(store) as s:
            fetched = s.status_counts().get("fetched", 0)
    if fetched == 0:
        with serve_docs() as base:
            websift("crawl", base + "index.html", "--data", str(data_dir), "--delay", "0",
                    "--concurrency-per-host", "8", "--allow-private", "--max-pages",
                    str(max_pages), "--max-depth", "50", "--quiet")
    websift("index", "--data", str(data_dir), "--quiet")
    return DataDir.open(data_dir)


def _row(name: str, m: dict[str, float]) -> str:
    return f"| {name} | " + " | ".join(f"{m[c]:.3f}" for c in
                                        ("MRR@10", "nDCG@10", "Recall@10", "Success@1")) + " |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="data directory to crawl into or reuse")
    ap.add_argument("--no-peers", action="store_true", help="skip Whoosh and tantivy")
    ap.add_argument("--no-ablation", action="store_true")
    args = ap.parse_args(argv)

    from peers import TantivyPeer, WhooshPeer, stored_pages

    from indexer.searcher import Searcher
    from indexer.settings import FIELDS

    tmp = None
    if args.data is None:
        tmp = tempfile.TemporaryDirectory(prefix="websift-eval-")
        args.data = Path(tmp.name) / "data"
    data = crawl_and_index(args.data)
    queries = load_queries()
    searcher = Searcher.open(data)
    print(f"websift index: {searcher.doc_count()} documents, {len(queries)} queries\n")
    print("| system | MRR@10 | nDCG@10 | Recall@10 | Success@1 |")
    print("|---|---|---|---|---|")

    def ours(s: Searcher) -> Callable[[str], list[str]]:
        return lambda q: [h.url for h in s.search(q, k=K, snippets=False).hits]

    print(_row("websift BM25F (all fields, anchors)", evaluate(ours(searcher), queries)),
          flush=True)
    if not args.no_peers:
        docs = list(stored_pages(data))
        for name, cls in (("Whoosh 2.7.4 BM25F title+body", WhooshPeer),
                          ("tantivy BM25 title+body", TantivyPeer)):
            peer = cls(docs)
            print(_row(name, evaluate(peer.search, queries)), flush=True)
            peer.close()
    if not args.no_ablation:
        base = searcher.settings
        variants: list[tuple[str, dict[str, float]]] = [
            ("websift without anchor field", {**base.weights, "anchor": 0.0}),
            ("websift title+body only", {f: (base.weights[f] if f in ("title", "body") else 0.0)
                                         for f in FIELDS}),
            ("websift title+body+anchor", {f: (base.weights[f] if f in ("title", "body", "anchor")
                                               else 0.0) for f in FIELDS})]
        variants += [(f"websift {f} field only", {g: (1.0 if g == f else 0.0) for g in FIELDS})
                     for f in FIELDS]
        s = Searcher(searcher.manifest, searcher.segments, replace(base, proximity_weight=0.0))
        print(_row("websift without proximity evidence", evaluate(ours(s), queries)), flush=True)
        for name, weights in variants:
            s = Searcher(searcher.manifest, searcher.segments, replace(base, weights=weights))
            print(_row(name, evaluate(ours(s), queries)), flush=True)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
