"""Query latency while new segments are cut and merged, beside the same index served idle.

    .venv/bin/python -m scripts.benchmarks.bench_reload                    # 30,000 pages
    .venv/bin/python -m scripts.benchmarks.bench_reload --pages 5000 --rounds 3     # a quick look
    .venv/bin/python -m scripts.benchmarks.bench_reload --profile          # + where a reload goes

1. **Index** (cached under ``--cache``): ``--pages`` pages of testkit/zipfsite.py's corpus
   written by indexer/segment_writer.py in segments of ``--segment-pages``; then, staged beside
   it, the cuts a following indexer would publish: each ``--cut-pages`` pages, half of them new
   pages, half new versions of pages already indexed (so each cut masks documents of the older
   segments, as a recrawl does), and after every ``--merge-every`` cuts one segment merging them
   (indexer/merge.py), as a live merge policy writes.  Staged ahead so that publishing one is a
   hard link and a manifest write: the figures are the server's, not the indexer's CPU.
2. **Serve**: an in-process ``SnapshotHolder`` (api/snapshot.py) with ``--reload-check-ms``,
   queried by ``--clients`` threads the way ``GET /search`` leases a snapshot
   (api/dependencies.py), each sending ``Searcher.search`` queries of
   scripts/benchmarks/bench_query_tail.py's mix (top 10 with snippets, as the API).
3. **Phases**, each ``--seconds`` long, after a warm-up as long: ``--rounds`` times idle (the
   generation last published alone), then swaps (a cut every ``--cut-seconds``, the merges
   among them), in turn, so that the machine's drift weighs on both alike.  p50 / p99 of each,
   the ratio of the swaps' to idle's, and the queries that were the first of their thread on a
   new generation (those that would pay cold caches).
4. ``--fill-terms N``: before the phases, N words of the index are decoded in every segment,
   so the caches hold as many lists as a server's that answered many distinct queries.
5. ``--against CHECKOUT``: the same phases over another checkout (a git worktree), run first
   in a child process importing its websift, on the same staged index and cuts; one table.
6. ``--profile``: one reload of a new cut, timed (``refresh`` alone, then the first query on the
   new generation) and cProfiled by cumulative time.
7. ``--switch-interval-ms MS``: the process's GIL switch interval (``sys.setswitchinterval``)
   for the phases, to see whether a shorter one lets the queries take the interpreter back
   from the reload thread sooner (docs/query-performance.md has the runs).

Figures from a shared machine are noisy: read the same-run ratios, never absolute times.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scripts.benchmarks.bench_query_tail import HOSTS, make_queries
from testkit.waiting import wait_for
from testkit.zipfsite import ZipfSite
from websift.api.snapshot import SnapshotHolder
from websift.core.checked import Format, read_json, write_json
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileError
from websift.indexer.liveness import live_masks
from websift.indexer.manifest import Manifest, SegmentEntry, describe_files, write_manifest
from websift.indexer.merge import merge_segments
from websift.indexer.searcher import IndexQuery
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_format import read_meta
from websift.indexer.segment_writer import SegmentWriter

STAGED = Format("websift-bench-reload", 1, "staged index and cuts")
DEFAULT_CACHE = Path("/tmp/websift-bench-reload")
RAM = 256 << 20
CATCH_UP_SECONDS = 120.0  # the most the server may take to take in the last generation


@dataclass
class Step:
    """One publish: the segments the manifest names after it (a cut, or a merge of cuts)."""

    kind: str  # "cut" or "merge"
    segments: list[str]


def _write(directory: Path, pages: list[tuple[int, object]]) -> None:
    writer = SegmentWriter(directory, ram_bytes=RAM)
    for url_id, page in sorted(pages, key=lambda x: x[0]):
        writer.add_document(url_id, host=page.host, url=page.url,  # type: ignore[attr-defined]
                            title=page.title, text=page.body,  # type: ignore[attr-defined]
                            fields=[page.title, "", page.body, page.url])  # type: ignore[attr-defined]
    writer.finish()


def stage(root: Path, args: argparse.Namespace) -> tuple[list[str], list[Step]]:
    """The base segments and the publish steps under ``root/segments`` (built once)."""
    key = {"pages": args.pages, "segment_pages": args.segment_pages, "cut_pages": args.cut_pages,
           "cuts": args.cuts, "merge_every": args.merge_every, "seed": args.seed}
    try:
        doc = read_json(root / "staged.json", STAGED).body
        if doc["key"] == key:
            return doc["base"], [Step(**s) for s in doc["steps"]]
    except CheckedFileError:
        pass
    shutil.rmtree(root, ignore_errors=True)
    segs = root / "segments"
    segs.mkdir(parents=True)
    extra = args.cuts * args.cut_pages // 2 + 1
    site = ZipfSite(hosts=HOSTS, pages_per_host=(args.pages + extra) // HOSTS + 1, seed=args.seed)
    every = list(enumerate(site.pages(), start=1))
    # Pages by host: base pages are each host's first ones, new pages its later ones.
    per_host = site.pages_per_host
    base_ids = [i for i, _ in every if (i - 1) % per_host < args.pages // HOSTS]
    new_ids = [i for i, _ in every if (i - 1) % per_host >= args.pages // HOSTS]
    page = dict(every)
    base: list[str] = []
    t0 = time.perf_counter()
    for n, lo in enumerate(range(0, len(base_ids), args.segment_pages)):
        name = f"seg-base-{n:03d}"
        _write(segs / name, [(i, page[i]) for i in base_ids[lo: lo + args.segment_pages]])
        base.append(name)
        print(f"  base segment {n}: {time.perf_counter() - t0:.0f} s", flush=True)
    rng = np.random.default_rng(args.seed)
    steps: list[Step] = []
    live = list(base)
    pending: list[str] = []
    half = args.cut_pages // 2
    for c in range(args.cuts):
        name = f"seg-cut-{c:03d}"
        again = rng.choice(base_ids, size=args.cut_pages - half, replace=False).tolist()
        fresh = new_ids[c * half: (c + 1) * half]
        _write(segs / name, [(i, page[i]) for i in again + fresh])
        live.append(name)
        pending.append(name)
        steps.append(Step("cut", list(live)))
        if len(pending) == args.merge_every:
            readers = [SegmentReader(segs / p) for p in pending]
            merged = f"seg-merge-{c:03d}"
            drops = readers[0].docs.copy()
            for r in readers:
                drops |= r.docs | r.drops
            merge_segments(readers, live_masks(readers), segs / merged, RAM, drops=drops)
            live = [s for s in live if s not in pending] + [merged]
            pending = []
            steps.append(Step("merge", list(live)))
    write_json(root / "staged.json", STAGED, {"key": key, "base": base,
                                              "steps": [asdict(s) for s in steps]})
    return base, steps


def pinned_averages(staged: Path, chain: list[list[str]]) -> dict[tuple[str, ...], dict[str, Any]]:
    """Per generation of ``chain`` (published in that order), the manifest stats a following
    indexer writes with it: the average field lengths it pins (indexer/scoring_lengths.py),
    computed here, before the phases, so that publishing stays a link and a write.  Empty for a
    checkout before pinned averages (``--against``)."""
    try:
        from websift.indexer import scoring_lengths
    except ImportError:
        return {}
    readers: dict[str, SegmentReader] = {}
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    previous: dict[str, Any] | None = None
    for names in chain:
        segs = [readers.setdefault(n, SegmentReader(staged / n)) for n in names]
        sums, live = scoring_lengths.live_length_sums(segs, live_masks(segs))
        previous = {scoring_lengths.STATS_KEY: scoring_lengths.averages_to_publish(
            sums, live, previous)}
        out[tuple(names)] = previous
    return out


class Publisher:
    """Publishes staged segments into a data directory's index: hard links, then the manifest
    (with the stats ``pins`` holds for that list of segments)."""

    def __init__(self, staged: Path, data: DataDir,
                 pins: dict[tuple[str, ...], dict[str, Any]] | None = None) -> None:
        self.staged, self.data = staged, data
        self.pins = pins or {}
        self.generation = 0
        self._files: dict[str, dict[str, list[int]]] = {}

    def publish(self, names: list[str]) -> None:
        entries = []
        for name in names:
            target = self.data.index_dir / name
            if not target.exists():
                shutil.copytree(self.staged / name, target, copy_function=os.link)
            if name not in self._files:
                self._files[name] = describe_files(target)
            doc_count = int(read_meta(target)["doc_count"])
            entries.append(SegmentEntry(name, doc_count, self._files[name]))
        self.generation += 1
        write_manifest(self.data.index_dir, Manifest(self.generation, 0, entries,
                                                     stats=dict(self.pins.get(tuple(names), {}))))


@dataclass
class Sample:
    phase: str
    seconds: float
    first_on_new: bool


def load(holder: SnapshotHolder, queries: list[str], clients: int, *, phase: list[str],
         stop: threading.Event, out: list[Sample]) -> list[threading.Thread]:
    """``clients`` threads querying through ``holder`` as GET /search does, until ``stop``."""
    lock = threading.Lock()

    def client(c: int) -> None:
        last = None
        i = c * 7919
        while not stop.is_set():
            q = queries[i % len(queries)]
            i += 1
            started = time.perf_counter()
            if holder.check_due():
                holder.refresh()
            with holder.lease() as snap:
                snap.searcher.value.search(IndexQuery(q, k=10))
                gen = snap.index_generation
            took = time.perf_counter() - started
            with lock:
                out.append(Sample(phase[0], took, last is not None and gen != last))
            last = gen

    threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(clients)]
    for t in threads:
        t.start()
    return threads


def served_generation(holder: SnapshotHolder) -> int:
    with holder.lease() as snap:
        return int(snap.index_generation)


def fill(holder: SnapshotHolder, n: int) -> None:
    """Decode ``n`` words of the index (every segment's list of each) through the served
    searcher, as a server that answered many distinct queries holds them (bench_up's probes
    search a word of their own each): its caches then hold about n * segments entries."""
    with holder.lease() as snap:
        searcher = snap.searcher.value
        words = sorted({w for seg in searcher.segments for w in seg.terms()})
        step = max(1, len(words) // n)
        postings = searcher.postings.query()
        for w in words[::step][:n]:
            postings.df(w)
        held = len(searcher.postings.decoded)
    print(f"caches filled: {n} words decoded, {held} lists cached", flush=True)


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, q)) if xs else float("nan")


def figures(samples: list[Sample], holder: SnapshotHolder, swap_seconds: float
            ) -> dict[str, float]:
    """p50 / p99 (ms) and counts of each phase, and what the swaps cost the holder."""
    by: dict[str, list[float]] = {}
    for s in samples:
        by.setdefault(s.phase, []).append(s.seconds)
    by["first"] = [s.seconds for s in samples if s.phase == "swaps" and s.first_on_new]
    out: dict[str, float] = {}
    for name in ("idle", "swaps", "first"):
        xs = by.get(name, [])
        out.update({f"{name}_n": float(len(xs)), f"{name}_p50": pct(xs, 50),
                    f"{name}_p99": pct(xs, 99)})
    out["reloads"] = float(holder.reloads)
    out["reload_failures"] = float(sum(holder.reload_failures.values()))
    out["reload_thread_cpu"] = holder.reload_cpu_seconds
    out["swap_seconds"] = swap_seconds
    times = getattr(holder, "reload_times", None)  # a checkout without it (--against)
    if times is not None:
        out.update({f"swap_{k}": v for k, v in times.figures().items()})
    return out


def report(f: dict[str, float]) -> None:
    rows = [("idle", "idle"), ("swaps", "swaps"),
            ("first query of a thread on a new generation", "first")]
    print("\n| phase | queries | p50 ms | p99 ms | p99 / idle p99 |\n|---|---|---|---|---|")
    for name, key in rows:
        print(f"| {name} | {f[key + '_n']:.0f} | {f[key + '_p50']:.1f} | {f[key + '_p99']:.1f} | "
              f"{f[key + '_p99'] / f['idle_p99']:.2f}x |")
    reloads, cpu = f["reloads"], f["reload_thread_cpu"]
    busy = 100 * cpu / max(f["swap_seconds"], 1e-9)
    print(f"\nreloads {reloads:.0f}, reload failures {f['reload_failures']:.0f}; the reload "
          f"thread's CPU {1000 * cpu / max(reloads, 1):.0f} ms a reload, {busy:.0f}% of one "
          "core over the swaps phases")
    if "swap_count" in f:
        n = max(f["swap_count"], 1.0)
        phases = ", ".join(f"{k.removeprefix('swap_').removesuffix('_total')} "
                           f"{1000 * v / n:.0f}" for k, v in f.items()
                           if k.endswith("_total") and k not in ("swap_total", "swap_cpu_total"))
        print(f"a swap: p50 {1000 * f['swap_p50']:.0f} ms, max {1000 * f['swap_max']:.0f} ms "
              f"wall, {1000 * f['swap_cpu_total'] / n:.0f} ms CPU; by phase, ms a swap: "
              f"{phases}")


def compare(rows: list[tuple[str, dict[str, float]]]) -> None:
    """One table of each checkout's run (--against), same staged index and cuts."""
    print("\n| checkout | idle p50 / p99 ms | swaps p50 / p99 ms | swaps p99 / idle p99 | "
          "first on a new generation p50 / p99 ms | reload thread CPU ms a reload |\n"
          "|---|---|---|---|---|---|")
    for name, f in rows:
        cpu = 1000 * f["reload_thread_cpu"] / max(f["reloads"], 1)
        print(f"| {name} | {f['idle_p50']:.1f} / {f['idle_p99']:.1f} | {f['swaps_p50']:.1f} / "
              f"{f['swaps_p99']:.1f} | {f['swaps_p99'] / f['idle_p99']:.2f}x | "
              f"{f['first_p50']:.1f} / {f['first_p99']:.1f} | {cpu:.0f} |")


def run_against(args: argparse.Namespace, argv: list[str]) -> int:
    """This script over each checkout in turn (the other first), each in a child process
    importing that checkout's websift; the index and cuts are staged once, here."""
    # Imported here, in the parent only: the child runs this file over the other checkout's
    # `scripts` package, which may predate scripts/benchmarks/against.py.
    from scripts.benchmarks.against import figures_of

    stage(args.cache / f"p{args.pages}-s{args.seed}", args)
    own = Path(__file__).resolve().parents[2]
    rows = figures_of(__file__, argv, [(f"--against {args.against}", args.against.resolve()),
                                       ("this checkout", own)], args.cache)
    compare(rows)
    return 0


def profile_one(holder: SnapshotHolder, publisher: Publisher, base: list[str], cut: list[str],
                query: str) -> None:
    """Time and cProfile one reload that adds a cut to ``base``, and the first query on it."""
    publisher.publish(base)
    holder.refresh(force=True)
    with holder.lease() as snap:
        snap.searcher.value.search(IndexQuery(query, k=10))
    publisher.publish(cut)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    snap = holder.refresh(force=True)
    t1 = time.perf_counter()
    with holder.lease() as snap:
        snap.searcher.value.search(IndexQuery(query, k=10))
    t2 = time.perf_counter()
    prof.disable()
    with holder.lease() as snap:
        snap.searcher.value.search(IndexQuery(query, k=10))
    t3 = time.perf_counter()
    print(f"\none reload: refresh {1000 * (t1 - t0):.1f} ms, first query {1000 * (t2 - t1):.1f} ms,"
          f" the same query again {1000 * (t3 - t2):.1f} ms (cProfiled: times include its cost)")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=30000)
    ap.add_argument("--segment-pages", type=int, default=5000)
    ap.add_argument("--cut-pages", type=int, default=200)
    ap.add_argument("--cuts", type=int, default=24, help="cuts staged (the swaps phase stops "
                    "when they run out)")
    ap.add_argument("--merge-every", type=int, default=4)
    ap.add_argument("--cut-seconds", type=float, default=2.0)
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each phase")
    ap.add_argument("--rounds", type=int, default=6, help="idle then swaps phases, in turn")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--reload-check-ms", type=int, default=500)
    ap.add_argument("--switch-interval-ms", type=float, default=sys.getswitchinterval() * 1e3,
                    help="this process's GIL switch interval (sys.setswitchinterval; "
                    "Python's own, 5, by default): how long a thread that wants the GIL "
                    "waits before the holder must let go")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--fill-terms", type=int, default=0, help="before the phases, decode "
                    "this many words of the index in every segment (a server that answered "
                    "many distinct queries: its caches hold that many lists per segment)")
    ap.add_argument("--profile", action="store_true", help="time and cProfile one reload")
    ap.add_argument("--against", type=Path, help="another checkout (a git worktree) measured "
                    "in the same run, on the same staged index and cuts")
    ap.add_argument("--json", type=Path, help=argparse.SUPPRESS)  # a child's figures (--against)
    args = ap.parse_args(argv)
    if args.against is not None:
        if not (args.against / "websift").is_dir():
            ap.error(f"--against {args.against}: not a websift checkout")
        return run_against(args, list(sys.argv[1:] if argv is None else argv))
    root = args.cache / f"p{args.pages}-s{args.seed}"
    t0 = time.perf_counter()
    base, steps = stage(root, args)
    print(f"staged {len(base)} base segments and {len(steps)} steps in "
          f"{time.perf_counter() - t0:.0f} s ({root})", flush=True)
    queries = [q.text for q in make_queries(root, args.pages, args.seed, args.queries)]
    serve = root / "serve"
    shutil.rmtree(serve, ignore_errors=True)
    data = DataDir.create(serve)
    publisher = Publisher(root / "segments", data,
                          pinned_averages(root / "segments", [base, *(s.segments for s in steps)]))
    publisher.publish(base)
    sys.setswitchinterval(args.switch_interval_ms / 1000.0)
    holder = SnapshotHolder(data, args.reload_check_ms)
    holder.start()
    if args.fill_terms:
        fill(holder, args.fill_terms)
    samples: list[Sample] = []
    phase = ["warm-up"]
    stop = threading.Event()
    threads = load(holder, queries, args.clients, phase=phase, stop=stop, out=samples)
    try:
        time.sleep(args.seconds)  # a fixed warm-up span, not a wait for a condition
        todo = iter(steps)
        for _ in range(args.rounds):  # idle and swaps in turn: the machine's drift hits both
            phase[0] = "idle"
            time.sleep(args.seconds)
            phase[0] = "swaps"
            ends = time.monotonic() + args.seconds
            while time.monotonic() < ends:
                step = next(todo, None)
                if step is None:
                    break
                publisher.publish(step.segments)
                time.sleep(args.cut_seconds)
        # the server takes in the last generation published before the figures are read (a
        # loaded machine can leave the last swaps pending past the phase): not timed
        phase[0] = "catch-up"
        wait_for(lambda: served_generation(holder) >= publisher.generation,
                 f"the server to take in generation {publisher.generation}", CATCH_UP_SECONDS)
    finally:
        stop.set()
        for t in threads:
            t.join()
    samples = [s for s in samples if s.phase not in ("warm-up", "catch-up")]
    print(f"\n{args.pages} pages, {len(base)} base segments of {args.segment_pages}, cuts of "
          f"{args.cut_pages} every {args.cut_seconds} s, merged by {args.merge_every}; "
          f"{args.clients} clients, reload check {args.reload_check_ms} ms, switch interval "
          f"{args.switch_interval_ms:g} ms, {os.cpu_count()} cores")
    got = figures(samples, holder, args.rounds * args.seconds)
    report(got)
    if args.json is not None:
        args.json.write_text(json.dumps(got))
    if args.profile:
        profile_one(holder, publisher, base, steps[0].segments, queries[0])
    holder.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
