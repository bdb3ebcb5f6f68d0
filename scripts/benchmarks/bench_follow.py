"""``websift index --follow`` against a crawl store being written: how soon a committed page is
searchable, what a cut costs, and what merges write, with the log merge policy against the
policy it replaced (every segment merged into one past 8), same run.

    .venv/bin/python -m scripts.benchmarks.bench_follow [--pages 6000] [--batch 50]
        [--rate 200] [--refetch 0.1] [--interval 1] [--every 500] [--procs 2]
        [--sim-cuts 3000] [--work DIR]

A writer process stores ``--pages`` generated pages (Zipf words over a 20,000-word vocabulary,
through the real crawl store and WARC writer, testkit/corpus.py) in commits of ``--batch``
pages at about ``--rate`` pages/s; a ``--refetch`` share of each commit are earlier pages
fetched again with new words (each masks its old version).  Meanwhile indexer/follow.py
follows the store (``--interval``, ``--every``, ``--procs``) in this process.  Per policy it
prints: cuts, median and 90th percentile lag from a commit to the cut that publishes it
(searchable from then on: the server reloads within its reload check), median cut seconds,
the most segments at once, the bytes cuts and merges wrote, the final index size and the write
amplification (merge bytes / final index bytes).

Then the same two policies on ``--sim-cuts`` simulated cuts (the pure policy functions,
indexer/merge_policy.py, with cut sizes drawn like the measured ones): the asymptote the short
real run cannot reach.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from testkit.corpus import build_data_dir
from testkit.genweb import vocabulary
from websift.core.datadir import DataDir
from websift.indexer.follow import FollowStatus, follow, read_status
from websift.indexer.merge_policy import MergePolicy, SegmentSize, find_merges
from websift.store.views import StoreReader

HOST = "http://bench.example"
WORDS = vocabulary(20_000)
OLD = MergePolicy(merge_all_over=8)
NEW = MergePolicy()


def make_page(rng: np.random.Generator, i: int, version: int) -> str:
    """A page of Zipf words linking to the page after it (a chain, as a crawl's newest pages
    link to the ones it has just found; every changed link re-indexes its target)."""
    ranks = np.minimum(rng.zipf(1.2, size=300), len(WORDS)) - 1
    body = " ".join(WORDS[r] for r in ranks)
    title = f"page {i} v{version} {WORDS[int(rng.integers(len(WORDS)))]}"
    return (f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p>"
            f'<a href="{HOST}/p{i + 1}">next {WORDS[i % len(WORDS)]}</a></body></html>')


def writer(root: Path, args: argparse.Namespace, log: Path) -> None:
    """In its own process (as the crawl is): commit the pages; append "seq time" per commit
    to ``log`` (the store's seq after it, the wall-clock time)."""
    rng = np.random.default_rng(7)
    written = 0
    started = time.monotonic()
    data = DataDir.open(root)
    with StoreReader.open(data.store_path) as store, open(log, "a") as out:
        while written < args.pages:
            n = min(args.batch, args.pages - written)
            pages = {f"{HOST}/p{written + k}": make_page(rng, written + k, 0) for k in range(n)}
            for _ in range(int(n * args.refetch) if written else 0):
                old = int(rng.integers(written))
                pages[f"{HOST}/p{old}"] = make_page(rng, old, int(rng.integers(1, 1000)))
            build_data_dir(data.root, pages)
            out.write(f"{store.max_seq()} {time.time()}\n")
            out.flush()
            written += n
            ahead = started + written / args.rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)  # pacing the writer at --rate, not waiting for a condition
        out.write("done\n")


def measure(policy: MergePolicy, args: argparse.Namespace, work: Path, name: str
            ) -> dict[str, float]:
    root = work / name
    shutil.rmtree(root, ignore_errors=True)
    data = build_data_dir(root, {f"{HOST}/seed": make_page(np.random.default_rng(1), 0, 0)})
    log = root / "commits.log"
    log.touch()
    lags: list[float] = []
    cut_seconds: list[float] = []
    most = [0]
    stop = threading.Event()
    published = [0]

    def on_cut(_line: str) -> None:
        status = read_status(data)
        assert status is not None
        now = time.time()
        lines = log.read_text().splitlines()
        commits = [(int(a), float(b)) for a, b in (ln.split() for ln in lines if ln != "done")]
        for seq, at in commits[published[0]:]:
            if seq > status.last_seq:
                break
            lags.append(now - at)
            published[0] += 1
        cut_seconds.append(status.last_cut_seconds)
        most[0] = max(most[0], status.segments)
        if lines and lines[-1] == "done" and published[0] == len(commits):
            stop.set()

    proc = multiprocessing.get_context("fork").Process(target=writer, args=(root, args, log))
    proc.start()
    final: FollowStatus = follow(data, stop, interval=args.interval, every=args.every,
                                 procs=args.procs, policy=policy, on_cut=on_cut)
    proc.join()
    return {"cuts": final.cuts, "pages": final.pages,
            "lag_p50": statistics.median(lags), "lag_p90": float(np.percentile(lags, 90)),
            "cut_p50": statistics.median(cut_seconds), "segments_max": most[0],
            "segments_end": final.segments, "cut_mb": final.cut_bytes / 1e6,
            "merge_mb": final.merge_bytes / 1e6, "index_mb": final.index_bytes / 1e6,
            "wa": final.write_amplification}


def simulate(policy: MergePolicy, cuts: list[int], refetch: float) -> dict[str, float]:
    segs: list[list[float]] = []
    merged = 0.0
    most = 0
    for c in cuts:
        live = sum(s[1] for s in segs)
        masked = min(refetch * c, live)
        for s in segs:
            s[1] -= masked * s[1] / live
        segs.append([float(c), float(c)])
        while todo := find_merges([SegmentSize(int(s[0]), s[1] / s[0]) for s in segs], policy):
            for r in sorted(todo, key=lambda r: -r.start):
                out = sum(segs[i][1] for i in r)
                merged += out
                segs[r.start : r.stop] = [[out, out]]
        most = max(most, len(segs))
    final = sum(s[0] for s in segs)
    return {"wa": merged / final, "segments_max": most, "segments_end": len(segs),
            "index_gb": final / 1e9}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=6000)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--rate", type=float, default=200.0, help="pages/s the writer commits")
    ap.add_argument("--refetch", type=float, default=0.1)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--sim-cuts", type=int, default=3000)
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-follow-"))
    print(f"{args.pages} pages in commits of {args.batch} at ~{args.rate:g} pages/s, "
          f"{args.refetch:.0%} refetched; --interval {args.interval:g} --every {args.every} "
          f"--procs {args.procs}")
    real = {}
    for name, policy in (("log policy", NEW), ("merge all > 8", OLD)):
        real[name] = r = measure(policy, args, work, name.replace(" ", "-").replace(">", "gt"))
        print(f"  {name:14s} cuts {r['cuts']:.0f}, lag p50 {r['lag_p50']:.2f}s p90 "
              f"{r['lag_p90']:.2f}s, cut p50 {r['cut_p50']:.2f}s, segments max "
              f"{r['segments_max']:.0f} end {r['segments_end']:.0f}; cuts wrote "
              f"{r['cut_mb']:.1f} MB, merges {r['merge_mb']:.1f} MB, index {r['index_mb']:.1f} "
              f"MB; write amplification {r['wa']:.2f}", flush=True)
    mean_cut = real["log policy"]["cut_mb"] * 1e6 / max(real["log policy"]["cuts"], 1)
    rng = np.random.default_rng(3)
    cuts = [int(x) for x in rng.uniform(0.2, 1.8, size=args.sim_cuts) * mean_cut]
    levels = math.log(sum(cuts) / NEW.min_size, NEW.merge_factor)
    print(f"simulated: {args.sim_cuts} cuts of ~{mean_cut / 1e6:.2f} MB "
          f"(log_{NEW.merge_factor}(index / {NEW.min_size / 1e6:g} MB) = {levels:.1f})")
    for name, policy in (("log policy", NEW), ("merge all > 8", OLD)):
        s = simulate(policy, cuts, args.refetch)
        print(f"  {name:14s} write amplification {s['wa']:.1f}, segments max "
              f"{s['segments_max']:.0f} end {s['segments_end']:.0f}, index "
              f"{s['index_gb']:.2f} GB", flush=True)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
