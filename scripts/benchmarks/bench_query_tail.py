"""In-process query latency of websift beside tantivy on a Zipf corpus (testkit/zipfsite.py).

    .venv/bin/python -m scripts.benchmarks.bench_query_tail --pages 150000
    .venv/bin/python -m scripts.benchmarks.bench_query_tail --pages 30000 --profile phrase

1. **Corpus**: 150 hosts, ``--pages`` pages in all (testkit/zipfsite.py: a Zipf vocabulary,
   log-normal page lengths, repeated phrases), its own generator apart from genweb's.
2. **Indexes** (cached under ``--cache``, built once per size and seed): websift's segments
   written by indexer/segment_writer.py (``--segment-pages`` pages each, as an index build cuts
   them) and a tantivy index of title + body with its default tokenizer.
3. **Queries**: ``--queries`` drawn from page text: one word, two or three words, common words
   only, rare words, and phrases (10%).  Top 10, no snippets, no fragments, no deadline.
4. **Timing**: one warm-up pass, then ``--passes`` timed passes of each engine in turn; mean,
   p50 and p99 over every timed query, overall and per kind, and websift / tantivy (the mean
   is what a request costs on average: what decides requests per core).

``--pruned`` scores as on an index of a million pages: every query whose lists hold more than
``EXHAUSTIVE_FEW_POSTINGS`` postings takes the pruned path (indexer/topk.py), as two common words
or a phrase of them do there (``EXHAUSTIVE_MAX_POSTINGS`` lowered to ``EXHAUSTIVE_FEW_POSTINGS``
in this process).
``--deadline MS`` gives each websift query a deadline, as ``GET /search`` does.
``--fresh-queries`` turns the searcher's cache of analysed queries off (indexer/query_cache.py):
every pass repeats the same queries, so without it each is parsed once, in the warm-up.

``--cpu`` times each query's CPU (``time.process_time``) instead of its wall-clock time: on a
machine other jobs share, a query's wall time counts theirs too.  ``--against CHECKOUT`` also
times websift as another checkout has it (its own process, the same corpus, queries and
options; this script's options need not exist there) and prints both, and their ratio, side by
side: same-run before/after figures.

``--profile KIND`` runs cProfile over that kind's websift queries (``all``: every query) and
prints the functions by own time and by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from testkit.zipfsite import ZipfSite
from websift.core.checked import Format, read_json, write_json
from websift.core.errors import CheckedFileError

HOSTS = 150
TOP_K = 10
COMMON_TOP = 60  # the most frequent words: "common"
RARE_RANK = 5_000  # rank from which a word counts as rare
MIX = {"one word": 0.25, "two or three words": 0.3, "common words": 0.15, "rare words": 0.2,
       "phrase": 0.1}
BUILT = Format("websift-bench-query-tail", 1, "indexes built")


@dataclass(frozen=True)
class Query:
    kind: str
    text: str


def build(root: Path, pages: int, seed: int, segment_pages: int) -> None:
    """websift segments and a tantivy index of the corpus under ``root`` unless built."""
    try:
        read_json(root / "built.json", BUILT)
        return
    except CheckedFileError:
        pass  # not built yet (or damaged): build afresh
    import tantivy

    from websift.indexer.segment_writer import SegmentWriter

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    site = ZipfSite(hosts=HOSTS, pages_per_host=max(pages // HOSTS, 1), seed=seed)
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("title", stored=False)
    sb.add_text_field("body", stored=False)
    (root / "tantivy").mkdir()
    tv = tantivy.Index(sb.build(), path=str(root / "tantivy"))
    tw = tv.writer(heap_size=200 * 2**20, num_threads=1)
    t0 = time.perf_counter()
    writer, n_seg = None, 0
    for i, page in enumerate(site.pages()):
        if writer is None:
            writer = SegmentWriter(root / f"seg-{n_seg}", ram_bytes=256 << 20)
        writer.add_document(i + 1, host=page.host, url=page.url, title=page.title,
                            text=page.body, fields=[page.title, "", page.body, page.url])
        tw.add_document(tantivy.Document(title=page.title, body=page.body))
        if writer.doc_count >= segment_pages:
            writer.finish()
            writer, n_seg = None, n_seg + 1
        if (i + 1) % 10_000 == 0:
            print(f"  built {i + 1} pages, {time.perf_counter() - t0:.0f} s", flush=True)
    if writer is not None:
        writer.finish()
    tw.commit()
    tw.wait_merging_threads()
    write_json(root / "built.json", BUILT, {"pages": pages, "seed": seed})


def make_queries(root: Path, pages: int, seed: int, count: int) -> list[Query]:
    """``count`` queries drawn from the corpus's page text (a fixed draw for a seed)."""
    from websift.indexer.analysis import Analyzer

    site = ZipfSite(hosts=HOSTS, pages_per_host=max(pages // HOSTS, 1), seed=seed)
    analyzer = Analyzer()
    rank = {w: i for i, w in enumerate(site.words)}
    ok_word = {w for w in site.words[:RARE_RANK * 4] if analyzer.analyse_token(w)[0]}
    rng = np.random.default_rng(seed + 1)
    keep = set(rng.choice(site.hosts * site.pages_per_host, size=count * 3, replace=False).tolist())
    bodies = [p.body.split() for i, p in enumerate(site.pages()) if i in keep]
    kinds = list(MIX)
    shares = np.array([MIX[k] for k in kinds])
    out: list[Query] = []
    for ki in rng.choice(len(kinds), size=count, p=shares / shares.sum()).tolist():
        kind = kinds[ki]
        while True:
            words = bodies[int(rng.integers(len(bodies)))]
            good = [w for w in words if w in ok_word or (w in rank and rank[w] >= RARE_RANK)]
            if kind == "one word":
                pool, n = good, 1
            elif kind == "two or three words":
                pool, n = good, int(rng.integers(2, 4))
            elif kind == "common words":
                pool, n = sorted({w for w in good if rank[w] < COMMON_TOP}), int(rng.integers(2, 4))
            elif kind == "rare words":
                pool, n = sorted({w for w in good if rank[w] >= RARE_RANK}), int(rng.integers(1, 3))
            else:
                n = int(rng.integers(2, 4))
                spots = [i for i in range(len(words) - n + 1)
                         if all(w in ok_word for w in words[i: i + n])]
                if spots:
                    i = spots[int(rng.integers(len(spots)))]
                    out.append(Query(kind, '"' + " ".join(words[i: i + n]) + '"'))
                    break
                continue
            if len(set(pool)) >= n:
                picked = rng.choice(len(pool), n, replace=False)
                out.append(Query(kind, " ".join(pool[int(i)] for i in picked)))
                break
    return out


def engines(root: Path, deadline_ms: float | None = None) -> dict[str, Callable[[str], int]]:
    import tantivy

    from websift.indexer.manifest import Manifest
    from websift.indexer.searcher import IndexQuery, Searcher
    from websift.indexer.segment import SegmentReader

    segs = sorted(root.glob("seg-*"), key=lambda p: int(p.name.split("-")[1]))
    searcher = Searcher(Manifest(generation=1, last_seq=0), [SegmentReader(p) for p in segs])

    def websift(q: str) -> int:
        deadline = None if deadline_ms is None else time.monotonic() + deadline_ms / 1000.0
        return len(searcher.search(IndexQuery(q, k=TOP_K, snippets=False, fragments=False,
                                              deadline=deadline)).hits)

    index = tantivy.Index.open(str(root / "tantivy"))
    index.reload()
    tsearch = index.searcher()

    def tv(q: str) -> int:
        query, _errors = index.parse_query_lenient(q, ["title", "body"])
        return len(tsearch.search(query, TOP_K).hits)

    return {"websift": websift, "tantivy": tv}


def time_passes(run: Callable[[str], int], queries: Sequence[Query], passes: int,
                clock: Callable[[], float] = time.perf_counter) -> np.ndarray:
    """Milliseconds, shape (passes, queries), after one untimed pass."""
    for q in queries:
        run(q.text)
    out = np.empty((passes, len(queries)))
    for p in range(passes):
        for i, q in enumerate(queries):
            t0 = clock()
            run(q.text)
            out[p, i] = (clock() - t0) * 1000.0
    return out


def time_against(checkout: Path, argv: Sequence[str]) -> np.ndarray:
    """websift's times as ``checkout`` has it: this script run with that checkout's modules
    (``--only websift``, times written to a file), shape (passes, queries)."""
    import json
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "times.json"
        env = {**os.environ, "PYTHONPATH": str(checkout.resolve())}
        cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--only", "websift",
               "--times-out", str(out)]
        subprocess.run(cmd, env=env, cwd=checkout, check=True)
        return np.asarray(json.loads(out.read_text()), dtype=np.float64)


def report(times: dict[str, np.ndarray], queries: Sequence[Query]) -> None:
    kinds = np.array([q.kind for q in queries])
    groups = [("all", np.ones(len(queries), dtype=bool))] + [
        (k, kinds == k) for k in MIX]
    names = list(times)
    print(f"{'kind':<20} {'n':>4}" + "".join(f" {n + ' mean':>13} {'p50':>8} {'p99':>8}"
                                             for n in names)
          + (f" {'ratio mean':>11} {'p50':>6} {'p99':>6}" if len(names) >= 2 else ""))
    if len(names) >= 2:
        print(f"(ratio: {names[0]} / {names[1]})")
    for name, sel in groups:
        if not sel.any():
            continue
        # The mean decides requests per core (the CPU a request costs on average), p99 the tail.
        ps = [(float(times[n][:, sel].mean()), *np.percentile(times[n][:, sel].ravel(), [50, 99]))
              for n in names]
        line = f"{name:<20} {int(sel.sum()):>4}" + "".join(
            f" {p[0]:>11.2f}ms {p[1]:>6.2f}ms {p[2]:>6.1f}ms" for p in ps)
        if len(ps) >= 2:
            line += (f" {ps[0][0] / ps[1][0]:>10.1f}x {ps[0][1] / ps[1][1]:>5.1f}x"
                     f" {ps[0][2] / ps[1][2]:>5.1f}x")
        print(line)
    first = times[names[0]]
    worst = np.argsort(-np.median(first, axis=0))[:8]
    print(f"slowest {names[0]} queries (median ms, {' / '.join(names)}):")
    for i in worst:
        print("  " + " / ".join(f"{np.median(times[n][:, i]):7.1f}" for n in names)
              + f"  {queries[i].kind:<18} {queries[i].text}")


def profile(run: Callable[[str], int], queries: Sequence[Query], kind: str) -> None:
    chosen = [q for q in queries if kind in ("all", q.kind)]
    for q in chosen:
        run(q.text)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(3):
        for q in chosen:
            run(q.text)
    prof.disable()
    print(f"cProfile: {len(chosen)} queries of kind {kind!r}, 3 passes")
    stats = pstats.Stats(prof, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(30)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=150_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--segment-pages", type=int, default=50_000)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/websift-bench-query-tail"))
    ap.add_argument("--profile", metavar="KIND", choices=["all", *MIX])
    ap.add_argument("--only", choices=["websift", "tantivy"], help="time one engine only")
    ap.add_argument("--pruned", action="store_true",
                    help="prune every query past EXHAUSTIVE_FEW_POSTINGS, as at a million pages")
    ap.add_argument("--fresh-queries", action="store_true",
                    help="keep no query analysed (the searcher's query cache off)")
    ap.add_argument("--deadline", type=float, metavar="MS", help="a deadline per websift query")
    ap.add_argument("--cpu", action="store_true", help="time CPU, not wall-clock time")
    ap.add_argument("--against", type=Path, metavar="CHECKOUT",
                    help="also time websift as this checkout has it (its own process)")
    ap.add_argument("--times-out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.pages < HOSTS:
        ap.error(f"--pages must be at least {HOSTS}")
    root = args.cache / f"p{args.pages}-s{args.seed}-g{args.segment_pages}"
    t0 = time.perf_counter()
    build(root, args.pages, args.seed, args.segment_pages)
    print(f"indexes at {root} ({time.perf_counter() - t0:.0f} s)", flush=True)
    queries = make_queries(root, args.pages, args.seed, args.queries)
    from websift.indexer import searcher as searcher_module
    if args.pruned:
        searcher_module.EXHAUSTIVE_MAX_POSTINGS = searcher_module.EXHAUSTIVE_FEW_POSTINGS  # type: ignore[misc]
    if args.fresh_queries:  # no query kept analysed: each is parsed as if seen first
        searcher_module.QUERY_CACHE_ENTRIES = 0  # type: ignore[misc]
    runs = engines(root, args.deadline)
    if args.profile:
        profile(runs["websift"], queries, args.profile)
        return 0
    clock = time.process_time if args.cpu else time.perf_counter
    times = {name: time_passes(run, queries, args.passes, clock) for name, run in runs.items()
             if args.only in (None, name)}
    if args.times_out is not None:
        import json
        args.times_out.write_text(json.dumps(times["websift"].tolist()))
        return 0
    if args.against is not None:
        rest = list(argv if argv is not None else sys.argv[1:])
        i = rest.index("--against")
        times = {"websift": times["websift"],
                 "before": time_against(args.against, rest[:i] + rest[i + 2:]),
                 **{k: v for k, v in times.items() if k != "websift"}}
    print(f"{args.pages} pages, {len(queries)} queries, {args.passes} passes, top {TOP_K}, "
          "no snippets, warm")
    report(times, queries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
