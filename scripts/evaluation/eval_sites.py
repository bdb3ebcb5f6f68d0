"""Site-level importance on a crawl of several manuals on several hosts, linked to each other.

    .venv/bin/python -m scripts.evaluation.eval_sites  # serve, crawl, index, rank, evaluate
    .venv/bin/python -m scripts.evaluation.eval_sites --data D  # reuse (or make) the crawl in D

Serves three Debian HTML manuals on three loopback hosts (three addresses, so three origins):
the Python 3.11 manual (/usr/share/doc/python3.11/html, with the eval robots.txt of
shared/eval/README.md) on 127.0.0.2, the GNU Octave manual (``octave-doc``:
/usr/share/doc/octave/octave.html) on 127.0.0.3 and the liboctave manual
(/usr/share/doc/octave/liboctave.html) on 127.0.0.4.  The serving wrapper injects a footer
before ``</body>`` of every HTML page linking to the other two manuals' main pages (nothing in
/usr/share is changed).  Crawls all three with ``websift crawl`` (politeness off), indexes,
ranks (PageRank over pages and over hosts), and runs the 400 Python development queries
(shared/eval/pydocs_queries.tsv) through the API's search path on the combined index:

- text only (no importance);
- + page rank (site mix 0: today's prior, PageRank times N);
- + page rank and host rank (``fusion.DEFAULT_SITE_MIX``);
- a sweep of the site mix b against the fusion weight w (flat region check).

A result counts only on the Python host (another manual's page with the same path is wrong).
The queries all target one host, so any signal that favours that host helps them: the sweep
also prints the Python host's share of the static score, to read the rows with that in mind.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from scripts.evaluation.eval_relevance import (
    QUERIES,
    ROBOTS,
    Query,
    evaluate,
    fetched_pages,
    load_queries,
    websift,
)
from websift.api.retrieval import SearchRequest, run_search
from websift.api.snapshot import RankView, Shared, Snapshot
from websift.core.datadir import DataDir
from websift.indexer.searcher import Searcher
from websift.ranking.fusion import (
    DEFAULT_EXPONENT,
    DEFAULT_MIDPOINT,
    DEFAULT_SITE_MIX,
    DEFAULT_WEIGHT,
    FusionParams,
)
from websift.ranking.ranks import Ranks
from websift.ranking.ranks import current_generation as ranks_generation
from websift.store.views import StoreReader

# (name, folder, loopback address, robots.txt): the Python manual first (the queries' host)
SITES = (
    ("python", Path("/usr/share/doc/python3.11/html"), "127.0.0.2", ROBOTS),
    ("octave", Path("/usr/share/doc/octave/octave.html"), "127.0.0.3", b"User-agent: *\n"),
    ("liboctave", Path("/usr/share/doc/octave/liboctave.html"), "127.0.0.4", b"User-agent: *\n"),
)
K = 10
MIXES = (0.0, 0.25, 0.5, 0.75, 1.0)
WEIGHTS = (1.0, 2.0, 4.0)
TOP_HOSTS = 8  # hosts shown in the host table
METRICS = ("MRR@10", "nDCG@10", "Recall@10", "Success@1")


class _SiteHandler(SimpleHTTPRequestHandler):
    """Serves a folder with its robots.txt; HTML pages get a footer of links to the others."""

    def __init__(self, *args: object, robots: bytes, footer: bytes, **kwargs: object) -> None:
        self.robots = robots
        self.footer = footer
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/robots.txt":
            self._send(self.robots, "text/plain")
            return
        local = Path(self.translate_path(path))
        if local.is_dir():
            local = local / "index.html"
        if local.suffix == ".html" and local.is_file():
            body = local.read_bytes()
            cut = body.lower().rfind(b"</body>")
            cut = len(body) if cut < 0 else cut
            self._send(body[:cut] + self.footer + body[cut:], "text/html; charset=utf-8")
            return
        super().do_GET()

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def serve_sites() -> Iterator[list[str]]:
    """Serve every manual of SITES on its own address; yields their base URLs, in order."""
    servers = [ThreadingHTTPServer((addr, 0), SimpleHTTPRequestHandler)
               for _, _, addr, _ in SITES]
    bases = [f"http://{addr}:{s.server_address[1]}/" for (_, _, addr, _), s
             in zip(SITES, servers, strict=True)]
    for i, ((_, folder, _, robots), server) in enumerate(zip(SITES, servers, strict=True)):
        links = " | ".join(f'<a href="{base}index.html">the {other} manual</a>'
                           for j, ((other, _, _, _), base) in enumerate(zip(SITES, bases,
                                                                           strict=True))
                           if j != i)
        footer = f'<div class="sites">Other manuals: {links}</div>'.encode()
        server.RequestHandlerClass = partial(
            _SiteHandler, directory=str(folder), robots=robots, footer=footer)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    try:
        yield bases
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


def crawl_index_rank(data_dir: Path, max_pages: int) -> DataDir:
    """Crawl the served manuals into ``data_dir`` unless it holds a crawl; index; rank."""
    if fetched_pages(data_dir) == 0:
        with serve_sites() as bases:
            started = time.perf_counter()
            websift("crawl", *(b + "index.html" for b in bases), "--data", str(data_dir),
                    "--delay", "0", "--concurrency-per-host", "8", "--allow-private",
                    "--max-pages", str(max_pages), "--max-depth", "50", "--quiet")
            print(f"crawl: {time.perf_counter() - started:.1f} s", flush=True)
    data = DataDir.open(data_dir)
    websift("index", "--data", str(data_dir), "--quiet")
    if ranks_generation(data) is None or "hosts" not in Ranks.open(data).manifest:
        websift("rank", "--data", str(data_dir), "--quiet")
    return data


def python_host(data: DataDir) -> str:
    """The origin the crawl gave the Python manual (the first seed's host)."""
    with StoreReader.open(data.store_path) as store:
        for origin in store.host_origins().values():
            if urlsplit(origin).hostname == SITES[0][2]:
                return origin
    raise SystemExit("the crawl holds no page of the Python manual")


def runner(snap: Snapshot, fusion: FusionParams, static: str,
           origin: str) -> Callable[[str], list[str]]:
    """query -> ranked result paths; a page of another host gets a path no judgement has."""

    def run(q: str) -> list[str]:
        req = SearchRequest(q=q, k=K, offset=0)
        out = []
        for h in run_search(snap, req, fusion, static).hits:
            url = h.hit.url
            out.append(url if url.startswith(origin) else "other-host:" + url)
        return out

    return run


def snapshot(searcher: Searcher, ranks: Ranks, mix: float) -> Snapshot:
    return Snapshot(Shared(searcher, lambda _s: None),
                    Shared(RankView.load(ranks, site_mix=mix), lambda _v: None))


def row(name: str, m: dict[str, float], seconds: float) -> str:
    return f"| {name} | " + " | ".join(f"{m[c]:.3f}" for c in METRICS) + f" | {seconds:.1f} s |"


def host_table(data: DataDir, ranks: Ranks) -> None:
    """Each host: pages, its pages' PageRank mass, its host rank, its share at each mix."""
    import numpy as np

    from websift.ranking.fusion import site_static
    from websift.ranking.host_graph import read_host_graph

    if ranks.host is None or ranks.hostrank is None:
        raise SystemExit("the ranks hold no host ranks: run 'websift rank' again")
    with StoreReader.open(data.store_path) as store:
        hosts = read_host_graph([store], len(ranks.host))
    g = hosts.graph
    weights = g.weights if g.weights is not None else np.ones(g.num_links)
    shown = sorted(range(hosts.hosts), key=lambda h: -float(ranks.hostrank[h]))[:TOP_HOSTS]
    print(f"host graph: {hosts.hosts} hosts, {g.num_links} host links; linking pages between "
          f"the {len(shown)} hosts of highest host rank: " + ", ".join(
              f"{hosts.origins[a]} -> {hosts.origins[int(b)]}: {w:g}"
              for a in shown for b, w in zip(g.successors(a),
                                              weights[g.indptr[a]:g.indptr[a + 1]], strict=True)
              if int(b) in shown))
    statics = {mix: site_static(ranks.pagerank, ranks.host, ranks.hostrank, mix) for mix in MIXES}
    print("\n| host | pages | PageRank mass | host rank | "
          + " | ".join(f"share b={m:g}" for m in MIXES) + " |")
    print("|---|---|---|---|" + "---|" * len(MIXES))
    held = float(np.count_nonzero(ranks.pagerank))
    for node in shown:
        origin = hosts.origins[node]
        mine = ranks.host == node
        shares = [float(statics[m][mine].sum()) / held for m in MIXES]
        print(f"| {origin} | {int(mine.sum())} | {float(ranks.pagerank[mine].sum()):.3f} | "
              f"{float(ranks.hostrank[node]):.3f} | "
              + " | ".join(f"{s:.3f}" for s in shares) + " |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="data directory to crawl into or reuse")
    ap.add_argument("--max-pages", type=int, default=6000)
    ap.add_argument("--queries", type=Path, default=next(
        (p for p in (QUERIES, Path("/work/shared/eval/pydocs_queries.tsv")) if p.is_file()),
        QUERIES), help="the Python development queries (default: shared/eval's)")
    ap.add_argument("--no-sweep", action="store_true", help="only the ablation table")
    args = ap.parse_args(argv)
    for name, folder, _, _ in SITES:
        if not (folder / "index.html").is_file():
            raise SystemExit(f"{folder} is missing: apt-get install -y "
                             f"{'python3.11-doc' if name == 'python' else 'octave-doc'}")
    tmp = None
    if args.data is None:
        tmp = tempfile.TemporaryDirectory(prefix="websift-eval-sites-")
        args.data = Path(tmp.name) / "data"
    data = crawl_index_rank(args.data, args.max_pages)
    queries: list[Query] = load_queries(args.queries)
    searcher = Searcher.open(data)
    ranks = Ranks.open(data)
    origin = python_host(data)
    print(f"{searcher.doc_count()} documents (pages of {len(SITES)} manuals, and URLs known by "
          f"anchor text), {len(queries)} Python "
          f"queries, ranks generation {ranks.generation}\n")
    host_table(data, ranks)
    fusion = FusionParams(DEFAULT_WEIGHT, DEFAULT_MIDPOINT, DEFAULT_EXPONENT)
    print(f"\n| ranking (w={fusion.weight:g}, k={fusion.midpoint:g}) | " + " | ".join(METRICS)
          + " | time |")
    print("|---|---|---|---|---|---|")
    variants = [("text only", 0.0, "none"), ("+ page rank (site mix 0)", 0.0, "pagerank"),
                (f"+ page rank + host rank (site mix {DEFAULT_SITE_MIX:g})", DEFAULT_SITE_MIX,
                 "pagerank")]
    for name, mix, static in variants:
        started = time.perf_counter()
        m = evaluate(runner(snapshot(searcher, ranks, mix), fusion, static, origin), queries)
        print(row(name, m, time.perf_counter() - started), flush=True)
    if not args.no_sweep:
        print("\nSweep: MRR@10 by site mix b (columns) and fusion weight w (rows), "
              f"k={fusion.midpoint:g}")
        print("| w \\ b | " + " | ".join(f"{b:g}" for b in MIXES) + " |")
        print("|---|" + "---|" * len(MIXES))
        for w in WEIGHTS:
            params = FusionParams(w, fusion.midpoint, fusion.exponent)
            cells = [evaluate(runner(snapshot(searcher, ranks, b), params, "pagerank", origin),
                              queries)["MRR@10"] for b in MIXES]
            print(f"| {w:g} | " + " | ".join(f"{c:.3f}" for c in cells) + " |", flush=True)
    searcher.close()
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
