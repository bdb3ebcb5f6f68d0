"""The development set of the Python 3.11 manual, shared by the relevance test and the evaluation
scripts: the manual served on loopback with the eval robots.txt, its 400 queries, and the
metrics (MRR@10, nDCG@10, Recall@10, Success@1) of a search function over them.

The queries live in shared/eval beside the checkout; the manual is Debian's python3.11-doc.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from websift.indexer.errors import QueryError
from websift.indexer.searcher import IndexQuery, Searcher
from websift.store.views import StoreReader

ROOT = Path(__file__).resolve().parents[1]
DOCS = Path("/usr/share/doc/python3.11/html")
# shared/eval sits beside the main checkout (/work/shared beside /work/main); from a worktree
# deeper down (/work/wt/NAME) it is found by walking up.
QUERIES = next((p / "shared" / "eval" / "pydocs_queries.tsv" for p in ROOT.parents
                if (p / "shared" / "eval" / "pydocs_queries.tsv").is_file()),
               ROOT.parent / "shared" / "eval" / "pydocs_queries.tsv")
ROBOTS = b"User-agent: *\nDisallow: /genindex\nDisallow: /_sources/\n"
K = 10


@dataclass(frozen=True)
class Query:
    qid: str
    text: str
    relevant: frozenset[str]
    kind: str = ""  # the index the entry came from (octave: concept, function, operator...)


def load_queries(path: Path = QUERIES) -> list[Query]:
    """The queries of a development set file (``qid kind query relevant``, tab-separated)."""
    out = []
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or parts[0] == "qid":
            continue
        out.append(Query(parts[0], parts[2], frozenset(parts[3].split()), parts[1]))
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
    robots = ROBOTS

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/robots.txt":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(self.robots)))
            self.end_headers()
            self.wfile.write(self.robots)
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def serve_docs(root: Path = DOCS, host: str = "127.0.0.1", robots: bytes = ROBOTS
               ) -> Iterator[str]:
    """Serve ``root`` (with the eval robots.txt) on a loopback port; yields the base URL."""
    handler = type("DocsHandler", (_DocsHandler,), {"robots": robots})
    server = ThreadingHTTPServer((host, 0), partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def fetched_pages(data_dir: Path) -> int:
    """Pages the crawl in ``data_dir`` fetched (0 when there is no crawl yet)."""
    store = data_dir / "crawl.sqlite3"
    if not store.exists():
        return 0
    with StoreReader.open(store) as s:
        return int(s.status_counts().get("fetched", 0))


REFUSED: dict[str, int] = {}  # queries websift's parser refused (no words), per searcher name


def ours(s: Searcher, name: str = "websift") -> Callable[[str], list[str]]:
    """query -> URLs; a query the parser refuses (only symbols) finds nothing and is counted."""

    def run(q: str) -> list[str]:
        try:
            found = s.search(IndexQuery(q, k=K, snippets=False, fragments=False))
            return [h.url for h in found.hits]
        except QueryError:
            REFUSED[name] = REFUSED.get(name, 0) + 1
            return []

    return run
