"""Where a query's CPU goes on a ``bench_search_scale`` index: per query class, websift and
tantivy, and how much of websift's is decoding lists the postings cache could not keep.

    .venv/bin/python -m scripts.benchmarks.bench_scale_cpu                       # 1,000,000 pages
    .venv/bin/python -m scripts.benchmarks.bench_scale_cpu --postings-cache-mb 9000
    .venv/bin/python -m scripts.benchmarks.bench_scale_cpu --docs 50000 --passes 3

It runs on the corpus, data directory and tantivy index a ``bench_search_scale`` run left under
``--cache`` (that script builds them; this one only reads them).  The same queries as
``bench_search_scale`` (``--queries``, ``--seed``), each searched as ``GET /search`` searches
it (top 10, no snippets, the deadline setting, ``--prior`` as there), one untimed pass, then
``--passes`` timed passes.  Each query's CPU time (``time.process_time``: the machine is
shared, CPU time moves far less than wall time), mean / p50 / p99 per class and in all, and
per pass what the postings cache did: lists decoded from the segment files, their postings
and the occurrences decoded whole.  The mean is what decides requests per core: 150 requests/s
on 2 cores is a mean of about 13 ms.  ``--postings-cache-mb`` sets the cache
(``WEBSIFT_POSTINGS_CACHE_MB``) for this process: a bound larger than the mix's lists shows
what the queries cost once every list they read is at hand.  tantivy runs after websift in the
same process, the same queries, its CPU time measured the same way.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scripts.benchmarks.bench_search_scale import (
    DEFAULT_CACHE,
    DEFAULT_DOCS,
    DEFAULT_QUERIES,
    DEFAULT_SEED,
    PAGES_PER_HOST,
    TOP_K,
    CorpusParams,
    Query,
    TantivySearch,
    deadline_setting,
    make_queries,
    read_corpus,
    websift_prior,
)


def _table(rows: dict[str, list[float]]) -> list[str]:
    out = ["| class | n | mean | p50 | p99 |", "|---|---|---|---|---|"]
    every = [t for ts in rows.values() for t in ts]
    for name, ts in [*sorted(rows.items()), ("all", every)]:
        a = np.sort(np.array(ts))
        out.append(f"| {name} | {len(a)} | {a.mean():.1f} | {np.percentile(a, 50):.1f} | "
                   f"{np.percentile(a, 99):.1f} |")
    return out


def _memory() -> str:
    """This process's resident memory from /proc: anonymous (the heap, where decoded lists
    live; the segment files are mapped, file-backed), all of it, and its peak."""
    fields = dict(line.split(":", 1) for line in
                  Path("/proc/self/status").read_text().splitlines() if ":" in line)
    mib = {k: int(fields[k].split()[0]) / 1024 for k in ("RssAnon", "VmRSS", "VmHWM")
           if k in fields}
    return ", ".join(f"{k} {v:,.0f} MiB" for k, v in mib.items())


def _held(values: list[Any]) -> tuple[int, int]:
    """(bytes of the numpy arrays the cached values hold, each array counted once however
    many entries hold it, postings among them): what the cache really keeps, beside its
    own count (its entries' ``nbytes``)."""
    seen: dict[int, int] = {}
    postings = 0

    def walk(x: Any) -> None:
        if isinstance(x, np.ndarray):
            base = x if x.base is None or not isinstance(x.base, np.ndarray) else x.base
            seen[id(base)] = base.nbytes
        elif isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            for f in dataclasses.fields(x):
                walk(getattr(x, f.name))

    for v in values:
        walk(v)
        if getattr(v, "token", None) is not None:  # a list's postings, not occurrence keys
            postings += len(getattr(v, "all_docs", ()))
    return sum(seen.values()), postings


def _largest(entries: list[tuple[Any, Any, int]]) -> str:
    """What the longest cached list holds per posting, array by array (those made so far)."""
    lists = [(k, v) for k, v, _ in entries if getattr(v, "token", None) is not None]
    if not lists:
        return "no list"
    key, p = max(lists, key=lambda kv: len(kv[1].all_docs))
    n = len(p.docs)
    parts: dict[str, float] = {}
    seen: set[int] = set()
    for f in dataclasses.fields(p):
        value = getattr(p, f.name)
        arrays = [value] if isinstance(value, np.ndarray) else [
            a for a in (value if isinstance(value, tuple) else ()) if isinstance(a, np.ndarray)]
        size = sum(a.nbytes for a in arrays if id(a) not in seen)
        seen.update(id(a) for a in arrays)
        if size:
            parts[f.name] = size / max(n, 1)
    return (f"the longest list ({key[1]!r}, {n:,} postings) holds {sum(parts.values()):.1f} "
            f"bytes a posting: " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
            + f" (tfs {p.tfs.dtype})")


def _timed(search: Callable[[str], Any], queries: list[Query],
           each: list[tuple[float, Query]] | None = None) -> dict[str, list[float]]:
    """CPU ms per query by class; ``each`` gets (ms, query) of every query."""
    rows: dict[str, list[float]] = {}
    for q in queries:
        c0 = time.process_time()
        search(q.text)
        ms = (time.process_time() - c0) * 1e3
        rows.setdefault(q.cls, []).append(ms)
        if each is not None:
            each.append((ms, q))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=DEFAULT_DOCS)
    ap.add_argument("--hosts", type=int, help=f"hosts (default: docs / {PAGES_PER_HOST})")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--queries", type=int, default=DEFAULT_QUERIES)
    ap.add_argument("--passes", type=int, default=2, help="timed passes after the untimed one")
    ap.add_argument("--prior", choices=("none", "pagerank"), default="none")
    ap.add_argument("--postings-cache-mb", type=float,
                    help="the postings cache's bound for this process (default: the setting)")
    ap.add_argument("--no-tantivy", action="store_true")
    ap.add_argument("--slowest", type=int, default=0, metavar="N",
                    help="list the N queries of the last pass that took the most CPU")
    args = ap.parse_args(argv)
    if args.postings_cache_mb is not None:  # read when the settings module is first imported
        if "websift.indexer.settings" in sys.modules:
            ap.error("--postings-cache-mb: the settings were imported already")
        os.environ["WEBSIFT_POSTINGS_CACHE_MB"] = str(args.postings_cache_mb)
    from websift.core.datadir import DataDir
    from websift.indexer import segment
    from websift.indexer.searcher import IndexQuery, Searcher

    params = CorpusParams(args.docs, args.hosts or max(1, args.docs // PAGES_PER_HOST), args.seed)
    corpus = read_corpus(args.cache / params.key(), params)
    if corpus is None:
        ap.error(f"no corpus under {args.cache / params.key()}: run bench_search_scale "
                 f"--docs {args.docs} first")
    data = corpus.root / "data"
    queries = make_queries(corpus, args.queries, args.seed)
    searcher = Searcher.open(DataDir.open(data))
    store = searcher.postings
    prior, prior_bound, prior_key = websift_prior(data, args.prior)
    deadline = deadline_setting()
    budget = deadline[1] / 1000.0 if deadline else None

    decoded = [0, 0]  # postings, occurrences decoded from the segment files
    postings, positions = segment.SegmentReader.postings, segment.SegmentReader.positions

    def counted_postings(self: segment.SegmentReader, row: int) -> tuple[np.ndarray, np.ndarray]:
        got = postings(self, row)
        decoded[0] += len(got[0])
        return got

    def counted_positions(self: segment.SegmentReader, row: int, tfs: np.ndarray) -> np.ndarray:
        got = positions(self, row, tfs)
        decoded[1] += len(got)
        return got

    segment.SegmentReader.postings = counted_postings  # type: ignore[method-assign]
    segment.SegmentReader.positions = counted_positions  # type: ignore[method-assign]

    def ours(q: str) -> None:
        until = time.monotonic() + budget if budget is not None else None
        searcher.search(IndexQuery(q, k=TOP_K, snippets=False, fragments=False, prior=prior,
                                   prior_bound=prior_bound, prior_key=prior_key,
                                   deadline=until))

    cache = store.caches()["postings"]
    print(f"{params.docs:,} pages, {len(queries)} queries, prior {args.prior}, postings cache "
          f"{cache.max_size / 2**20:,.0f} MiB, load average {os.getloadavg()[0]:.1f}",
          flush=True)
    for q in queries:  # untimed
        ours(q.text)
    each: list[tuple[float, Query]] = []  # the last pass's queries and their CPU ms
    for p in range(args.passes):
        decoded[:] = [0, 0]
        lists0 = store.decodes
        each.clear()
        rows = _timed(ours, queries, each)
        print(f"\nwebsift, pass {p + 1}: {store.decodes - lists0:,} lists decoded "
              f"({decoded[0] / 1e6:,.0f}M postings, {decoded[1] / 1e6:,.0f}M occurrences); "
              f"postings cache {len(cache):,} entries, {cache.size / 2**20:,.0f} MiB; "
              f"load average {os.getloadavg()[0]:.1f}; CPU ms per query:")
        print("\n".join(_table(rows)), flush=True)
    if args.slowest:
        print(f"\nthe {args.slowest} slowest of the last pass (CPU ms, class, query):")
        for ms, q in sorted(each, key=lambda e: -e[0])[: args.slowest]:
            print(f"  {ms:7.1f}  {q.cls:<24} {q.text}")
    held, n_postings = _held([v for _, v, _ in cache.entries()])
    print(f"\npostings cache: {len(cache):,} entries, its count {cache.size / 2**20:,.0f} MiB; "
          f"arrays held {held / 2**20:,.0f} MiB (each once; {n_postings / 1e6:,.0f}M postings "
          f"in its lists); process {_memory()}", flush=True)
    print(_largest(cache.entries()), flush=True)
    if not args.no_tantivy:
        peer = TantivySearch(corpus.root / "tantivy")
        for q in queries:
            peer.search(q.text)
        rows = _timed(peer.search, queries)
        print("\ntantivy 0.27, one timed pass after one untimed; CPU ms per query:")
        print("\n".join(_table(rows)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
