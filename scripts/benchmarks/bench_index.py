"""Indexing and query speed of websift against Whoosh and tantivy, same pages, same run.

    .venv/bin/python -m scripts.benchmarks.bench_index [--data D]  # the Python 3.11 manual, crawled
    .venv/bin/python -m scripts.benchmarks.bench_index --rust [--ram-mb 256] [--data D]

Default mode: crawls the served Python manual like scripts/evaluation/eval_relevance.py (or reuses
``--data``), then times, on the same fetched pages:
* indexing: ``websift index`` from the crawl store (WARC read, lxml parse, anchors, barrels,
  inversion, postings) with 1 process and with 2 worker processes (``--procs``), against Whoosh
  (one process, and its multiprocessing writer ``procs=2``) and tantivy (its writer threads),
  each timed from the same stored pages (their WARC read and lxml parse included, as ours is);
  wall and CPU seconds (workers included), peak RSS of the process and its children, summed;
* query latency over the 400 dev queries (after one warm-up pass, best of 3 runs per query):
  p50 and p99, websift with and without snippets, Whoosh, tantivy; and the ratios.

``--rust``: ingests /usr/share/doc/rust-doc/html (32k pages) from files into a data directory
with testkit/corpus.py's ``ingest_files`` (each file stored through the real crawl store
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

ROOT = Path(__file__).resolve().parents[2]

RUST_DOCS = Path("/usr/share/doc/rust-doc/html")
WEBSIFT = str(ROOT / ".venv" / "bin" / "websift")
# How often run_child samples a child's memory: each sample makes the kernel walk the page tables
# of every process of the child.  On ``websift index`` of the Python manual (2 workers using both
# cores) sampling every 20 ms added 11-17% to the wall time, every 50 ms 6%, every 200 ms nothing
# measurable; the peak was within 3% of the finer samplings'.
MEMORY_SAMPLE_SECONDS = 0.2


def _descendants(pid: int) -> list[int]:
    """``pid`` and its descendants, from the kernel's per-thread ``children`` lists (a read of
    each process's own files, not a scan of every process on the machine as psutil's
    ``children(recursive=True)`` makes)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except OSError:
            continue  # it ended meanwhile: it holds no memory
    return out


def _pss(pid: int) -> int:
    """The proportional set size of process ``pid`` in bytes (0 when it has ended)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass  # ended meanwhile, or a kernel without smaps_rollup: counted by ru_maxrss
    return 0


def run_child(cmd: list[str], cwd: Path | None = None, *, memory: bool = True
              ) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS bytes) of a child process.

    CPU counts the child and every process it waited for (its workers).  With ``memory``, peak
    RSS is the largest sum over the child and all its descendants, sampled every
    MEMORY_SAMPLE_SECONDS, of each process's PSS (its resident pages, those it shares after fork
    divided among the sharers: a plain RSS sum would count the parent's pages once per
    worker); at least the largest process's own peak RSS.  Sampling perturbs a child that uses
    both cores (MEMORY_SAMPLE_SECONDS) and not a one-process peer, which leaves the sampler a
    core: a benchmark that reports no memory passes ``memory=False``, and nothing runs beside
    the child (peak RSS is then the largest process's own, ``ru_maxrss``)."""
    import threading

    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, cwd=cwd)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], sum(map(_pss, _descendants(proc.pid))))
            done.wait(MEMORY_SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    if memory:
        sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    if memory:
        sampler.join()
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed with status {status}")
    return wall, usage.ru_utime + usage.ru_stime, max(peak[0], usage.ru_maxrss * 1024)


def peer_child(which: str, data: Path, *, memory: bool = True) -> tuple[float, float, int]:
    """:func:`run_child` of peer ``which`` (scripts/evaluation/peers.py) indexing the pages
    stored in ``data``."""
    code = ("from websift.core.datadir import DataDir\n"
            f"from scripts.evaluation.peers import stored_pages, {which}\n"
            f"p = {which}(list(stored_pages(DataDir.open({str(data)!r}))))\n"
            "p.close()\n")
    return run_child([sys.executable, "-c", code], cwd=ROOT, memory=memory)


def whoosh_procs_child(data: Path, procs: int) -> tuple[float, float, int]:
    """Whoosh with its multiprocessing writer (``writer(procs=N)``); pages read and parsed
    in the parent, as WhooshPeer does."""
    code = ("import shutil, tempfile\n"
            "from websift.core.datadir import DataDir\n"
            "from scripts.evaluation.peers import stored_pages\n"
            "from whoosh import index\n"
            "from whoosh.analysis import StemmingAnalyzer\n"
            "from whoosh.fields import ID, TEXT, Schema\n"
            f"docs = list(stored_pages(DataDir.open({str(data)!r})))\n"
            "d = tempfile.mkdtemp(prefix='whoosh-')\n"
            "schema = Schema(url=ID(stored=True), title=TEXT(analyzer=StemmingAnalyzer()), "
            "body=TEXT(analyzer=StemmingAnalyzer()))\n"
            "ix = index.create_in(d, schema)\n"
            f"w = ix.writer(procs={procs})\n"
            "for x in docs: w.add_document(url=x.url, title=x.title, body=x.body)\n"
            "w.commit()\n"
            "shutil.rmtree(d)\n")
    return run_child([sys.executable, "-c", code], cwd=ROOT)


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
    from scripts.evaluation.eval_relevance import crawl_and_index, load_queries
    from scripts.evaluation.peers import TantivyPeer, WhooshPeer, stored_pages
    from websift.indexer.searcher import IndexQuery, Searcher

    data = crawl_and_index(data_dir)
    shutil.rmtree(data.index_dir)
    one = run_child([WEBSIFT, "index", "--data", str(data_dir), "--quiet", "--procs", "1"])
    shutil.rmtree(data.index_dir)
    ours = run_child([WEBSIFT, "index", "--data", str(data_dir), "--quiet", "--procs", "2"])
    whoosh = peer_child("WhooshPeer", data_dir)
    try:
        whoosh2: tuple[float, float, int] | None = whoosh_procs_child(data_dir, 2)
    except SystemExit as exc:  # report it, do not hide the other figures
        print(f"Whoosh procs=2 failed: {exc}")
        whoosh2 = None
    tantivy = peer_child("TantivyPeer", data_dir)
    searcher = Searcher.open(data)
    print(f"pages: {searcher.doc_count()} documents in the websift index\n")
    print("| indexing (WARC read + lxml parse included) | processes | wall s | CPU s "
          "| peak RSS MB (with children) |")
    print("|---|---|---|---|---|")
    rows = [("websift index --procs 1", "1", one), ("websift index --procs 2", "1 + 2 workers", ours),
            ("Whoosh (parse + index)", "1", whoosh)]
    if whoosh2 is not None:
        rows.append(("Whoosh writer(procs=2) (parse + index)", "1 + 2 workers", whoosh2))
    rows.append(("tantivy (parse + index)", "1, writer threads", tantivy))
    for name, procs, (w, c, r) in rows:
        print(f"| {name} | {procs} | {w:.2f} | {c:.2f} | {r / 2**20:.0f} |")
    print(f"\nindexing speed-up vs Whoosh (1 process): websift 1 process: wall "
          f"{whoosh[0] / one[0]:.1f}x, CPU {whoosh[1] / one[1]:.1f}x; websift 2 workers: wall "
          f"{whoosh[0] / ours[0]:.1f}x, CPU {whoosh[1] / ours[1]:.1f}x")
    if whoosh2 is not None:
        print(f"websift 2 workers vs Whoosh procs=2: wall {whoosh2[0] / ours[0]:.1f}x, "
              f"CPU {whoosh2[1] / ours[1]:.1f}x")
    print(f"vs tantivy: websift 2 workers wall {tantivy[0] / ours[0]:.2f}x, "
          f"CPU {tantivy[1] / ours[1]:.2f}x\n")
    queries = [q.text for q in load_queries()]
    docs = list(stored_pages(data))
    wp, tp = WhooshPeer(docs), TantivyPeer(docs)
    ranking_only = "websift (top 10, ranking only: no snippets, no fragment links)"
    rows = {
        ranking_only:
            latencies(lambda q: searcher.search(
                IndexQuery(q, k=10, snippets=False, fragments=False)), queries),
        "websift (top 10, with snippets and fragment links)":
            latencies(lambda q: searcher.search(IndexQuery(q, k=10)), queries),
        "Whoosh (top 10)": latencies(wp.search, queries),
        "tantivy (top 10)": latencies(tp.search, queries),
    }
    print("| query latency | p50 ms | p99 ms |")
    print("|---|---|---|")
    for name, ms in rows.items():
        print(f"| {name} | {np.percentile(ms, 50):.3f} | {np.percentile(ms, 99):.3f} |")
    base = rows[ranking_only]
    for peer in ("Whoosh (top 10)", "tantivy (top 10)"):
        ms = rows[peer]
        print(f"\n{peer} / websift: p50 {np.percentile(ms, 50) / np.percentile(base, 50):.1f}x, "
              f"p99 {np.percentile(ms, 99) / np.percentile(base, 99):.1f}x", end="")
    print()
    wp.close()
    tp.close()


def bench_rust(data_dir: Path, ram_mb: int, limit: int | None, procs: int) -> None:
    from testkit.corpus import ingest_files
    from websift.core.datadir import DataDir

    if not (data_dir / "crawl.sqlite3").exists():
        t = time.perf_counter()
        ingest_files(RUST_DOCS, "http://127.0.0.1:8222/", data_dir, limit=limit)
        print(f"ingested {RUST_DOCS} into {data_dir} in {time.perf_counter() - t:.0f}s")
    data = DataDir.open(data_dir)
    shutil.rmtree(data.index_dir, ignore_errors=True)
    wall, cpu, rss = run_child([WEBSIFT, "index", "--data", str(data_dir), "--quiet",
                                "--ram-mb", str(ram_mb), "--procs", str(procs)])
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
    print(f"peak RSS (the run and its {procs} workers, summed): {rss / 2**20:.0f} MB "
          f"with --ram-mb {ram_mb}")
    print(f"index size: {size / 2**20:.1f} MB (postings {postings / 2**20:.1f} MB); "
          f"page text {text / 2**20:.1f} MB; WARC {html / 2**20:.1f} MB; "
          f"index/text = {size / max(text, 1):.2f}, postings/text = {postings / max(text, 1):.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path)
    ap.add_argument("--rust", action="store_true", help="the Rust docs scale run")
    ap.add_argument("--ram-mb", type=int, default=256)
    ap.add_argument("--limit", type=int, default=None, help="--rust: ingest at most N pages")
    ap.add_argument("--procs", type=int, default=2, help="--rust: websift index --procs N")
    args = ap.parse_args(argv)
    tmp = None
    if args.data is None:
        tmp = tempfile.TemporaryDirectory(prefix="websift-bench-")
        args.data = Path(tmp.name) / "data"
    if args.rust:
        bench_rust(args.data, args.ram_mb, args.limit, args.procs)
    else:
        bench_pydocs(args.data)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
