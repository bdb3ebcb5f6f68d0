"""Indexing and query speed of websift against Whoosh and tantivy, same pages, same run.

    .venv/bin/python scripts/bench_index.py [--data D]     # the Python 3.11 manual, crawled
    .venv/bin/python scripts/bench_index.py --rust [--ram-mb 256] [--data D]

Default mode: crawls the served Python manual like scripts/eval_relevance.py (or reuses
``--data``), then times, on the same fetched pages:
* indexing: ``websift index`` from the crawl store (WARC read, lxml parse, anchors, barrels,
  inversion, postings) against Whoosh and tantivy, each timed from the same stored pages (their
  WARC read and lxml parse included, as ours is); wall and CPU seconds, peak RSS of the process;
* query latency over the 400 dev queries (after one warm-up pass, best of 3 runs per query):
  p50 and p99, websift with and without snippets, Whoosh, tantivy; and the ratios.

``--rust``: ingests /usr/share/doc/rust-doc/html (32k pages) from files into a data directory
with tests/indexer/corpus.py's ``ingest_files`` (each file stored through the real crawl store
and WARC writer as if fetched, links extracted with lxml), then runs ``websift index --ram-mb M``
in a child process and reports docs/s, the child's peak RSS against --ram-mb, and the index
size on disk against the text size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

RUST_DOCS = Path("/usr/share/doc/rust-doc/html")
WEBSIFT = str(ROOT / ".venv" / "bin" / "websift")


def run_child(cmd: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS bytes) of a child process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed with status {status}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def peer_child(which: str, data: Path) -> tuple[float, float, int]:
    code = (f"import sys; sys.path[:0]=[{str(ROOT)!r}, {str(ROOT / 'scripts')!r}]\n"
            "from crawler.datadir import DataDir\n"
            f"from peers import stored_pages, {which}\n"
            f"p = {which}(list(stored_pages(DataDir.open({str(data)!r}))))\n"
            "p.close()\n")
    return run_child([sys.executable, "-c", code])


def latencies(fn: Callable[[str], object], queries: list[str], repeats: int = 3) -> np.ndarray:
    """Milliseconds per query: the best of ``repeats`` runs of each (the machine is shared, so
    the minimum is the least disturbed measure), after one warm-up pass."""
    for q in queries:
        fn(q)
    out = []
    for q in queries:
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            fn(q)
            best = min(best, time.perf_counter() - t)
        out.append(best)
    return np.asarray(out) * 1000.0


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench_pydocs(data_dir: Path) -> None:
    from eval_relevance import crawl_and_index, load_queries
    from peers import TantivyPeer, WhooshPeer, stored_pages

    from indexer.searcher import Searcher

    data = crawl_and_index(data_dir)
    shutil.rmtree(data.index_dir)
    ours = run_child([WEBSIFT, "index", "--data", str(data_dir), "--quiet"])
    whoosh = peer_child("WhooshPeer", data_dir)
    tantivy = peer_child("TantivyPeer", data_dir)
    searcher = Searcher.open(data)
    print(f"pages: {searcher.doc_count()} documents in the websift index\n")
    print("| indexing | wall s | CPU s | peak RSS MB |")
    print("|---|---|---|---|")
    for name, (w, c, r) in (("websift index", ours), ("Whoosh (parse + index)", whoosh),
                            ("tantivy (parse + index)", tantivy)):
        print(f"| {name} | {w:.2f} | {c:.2f} | {r / 2**20:.0f} |")
    print(f"\nindexing speed-up vs Whoosh: wall {whoosh[0] / ours[0]:.1f}x, "
          f"CPU {whoosh[1] / ours[1]:.1f}x; vs tantivy: wall {tantivy[0] / ours[0]:.2f}x, "
          f"CPU {tantivy[1] / ours[1]:.2f}x\n")
    queries = [q.text for q in load_queries()]
    docs = list(stored_pages(data))
    wp, tp = WhooshPeer(docs), TantivyPeer(docs)
    rows = {
        "websift (top 10, no snippets)":
            latencies(lambda q: searcher.search(q, k=10, snippets=False), queries),
        "websift (top 10, with snippets)":
            latencies(lambda q: searcher.search(q, k=10), queries),
        "Whoosh (top 10)": latencies(wp.search, queries),
        "tantivy (top 10)": latencies(tp.search, queries),
    }
    print("| query latency | p50 ms | p99 ms |")
    print("|---|---|---|")
    for name, ms in rows.items():
        print(f"| {name} | {np.percentile(ms, 50):.3f} | {np.percentile(ms, 99):.3f} |")
    base = rows["websift (top 10, no snippets)"]
    for peer in ("Whoosh (top 10)", "tantivy (top 10)"):
        ms = rows[peer]
        print(f"\n{peer} / websift: p50 {np.percentile(ms, 50) / np.percentile(base, 50):.1f}x, "
              f"p99 {np.percentile(ms, 99) / np.percentile(base, 99):.1f}x", end="")
    print()
    wp.close()
    tp.close()


def bench_rust(data_dir: Path, ram_mb: int, limit: int | None) -> None:
    from crawler.datadir import DataDir
    from tests.indexer.corpus import ingest_files

    if not (data_dir / "crawl.sqlite3").exists():
        t = time.perf_counter()
        ingest_files(RUST_DOCS, "http://127.0.0.1:8222/", data_dir, limit=limit)
        print(f"ingested {RUST_DOCS} into {data_dir} in {time.perf_counter() - t:.0f}s")
    data = DataDir.open(data_dir)
    shutil.rmtree(data.index_dir, ignore_errors=True)
    wall, cpu, rss = run_child([WEBSIFT, "index", "--data", str(data_dir), "--quiet",
                                "--ram-mb", str(ram_mb)])
    manifest = json.loads((data.index_dir / "manifest.json").read_text())
    metas = [json.loads((data.index_dir / s["name"] / "meta.json").read_text())
             for s in manifest["segments"]]
    docs = sum(m["doc_count"] for m in metas)
    text = sum(m.get("text_bytes", 0) for m in metas)
    size = dir_size(data.index_dir)
    postings = sum(p.stat().st_size for p in data.index_dir.rglob("post_*.bin"))
    html = sum(p.stat().st_size for p in data.warc_dir.iterdir())
    print(f"documents: {docs} ({manifest['stats']})")
    print(f"index time: {wall:.1f}s wall, {cpu:.1f}s CPU -> {docs / wall:.0f} docs/s")
    print(f"peak RSS: {rss / 2**20:.0f} MB with --ram-mb {ram_mb}")
    print(f"index size: {size / 2**20:.1f} MB (postings {postings / 2**20:.1f} MB); "
          f"page text {text / 2**20:.1f} MB; WARC {html / 2**20:.1f} MB; "
          f"index/text = {size / max(text, 1):.2f}, postings/text = {postings / max(text, 1):.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path)
    ap.add_argument("--rust", action="store_true", help="the Rust docs scale run")
    ap.add_argument("--ram-mb", type=int, default=256)
    ap.add_argument("--limit", type=int, default=None, help="--rust: ingest at most N pages")
    args = ap.parse_args(argv)
    tmp = None
    if args.data is None:
        tmp = tempfile.TemporaryDirectory(prefix="websift-bench-")
        args.data = Path(tmp.name) / "data"
    if args.rust:
        bench_rust(args.data, args.ram_mb, args.limit)
    else:
        bench_pydocs(args.data)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
