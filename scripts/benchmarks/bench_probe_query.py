"""CPU time of bench_up's probe query (30 page-unique words ORed) and of one-word queries.

    .venv/bin/python -m scripts.benchmarks.bench_probe_query                  # 30,000 pages
    .venv/bin/python -m scripts.benchmarks.bench_probe_query --against ../main
    .venv/bin/python -m scripts.benchmarks.bench_probe_query --profile        # + cProfile

1. **Index** (cached under ``--cache``): ``--pages`` pages of testkit/zipfsite.py's corpus in
   segments of ``--segment-pages``, each page's body ending in a word of its own (``qx`` then
   letters, as bench_up's pages), written by indexer/segment_writer.py, named by a manifest.
2. **Queries**, through ``api.retrieval.rank_query`` on an in-process ``SnapshotHolder`` (what
   ``GET /search`` runs in its worker thread, the server's settings, snippets on): first
   ``--cold`` one-word queries on a fresh snapshot, each timed (the first queries a new server
   answers); then ``--probes`` probe queries ``w1 OR ... w30`` (``k=30``, the words of 30 pages
   drawn at random, found in no query before) and ``--words`` one-word queries of corpus words
   (``k=10``), each timed.  CPU time (``time.process_time``): mean, p50 and p99 per class.
   Then ``--reloads`` reloads (the same segments under a new manifest generation: the work is
   the caches' takeover, ``PostingStore.adopt``), each after 48 of the probe queries again,
   the reload thread's CPU time (``time.thread_time``) of each.
3. ``--against CHECKOUT``: the same over another checkout first (a child process importing its
   websift), on the same index; one table.  ``--profile``: cProfile of the probe queries.

CPU time, not wall time: the machine is shared, and its load moves wall time far more.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from scripts.benchmarks.bench_up import letters
from testkit.zipfsite import ZipfSite
from websift.api.retrieval import SearchRequest, rank_query
from websift.api.settings import Settings
from websift.api.snapshot import SnapshotHolder
from websift.core.checked import Format, read_json, write_json
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileError
from websift.indexer.manifest import (
    Manifest,
    SegmentEntry,
    describe_files,
    read_manifest,
    write_manifest,
)
from websift.indexer.segment_format import read_meta
from websift.indexer.segment_writer import SegmentWriter

STAGED = Format("websift-bench-probe", 1, "index built")
DEFAULT_CACHE = Path("/tmp/websift-bench-probe")
HOSTS = 150
RAM = 256 << 20
PROBE_WORDS = 30  # bench_up's PROBE_BATCH
PROBE_BURST = 48  # probe queries between two reloads (bench_up: up to 16 a second, a cut in 3-6 s)


def unique_word(page: int) -> str:
    return "qx" + letters(page)


def build(root: Path, pages: int, segment_pages: int, seed: int) -> DataDir:
    """The data directory under ``root`` holding the index (built once)."""
    key = {"pages": pages, "segment_pages": segment_pages, "seed": seed}
    try:
        if read_json(root / "built.json", STAGED).body == key:
            return DataDir(root / "data")
    except CheckedFileError:
        pass
    shutil.rmtree(root, ignore_errors=True)
    data = DataDir.create(root / "data")
    site = ZipfSite(hosts=HOSTS, pages_per_host=pages // HOSTS + 1, seed=seed)
    entries: list[SegmentEntry] = []
    writer: SegmentWriter | None = None
    t0 = time.perf_counter()
    for i, page in enumerate(site.pages()):
        if i == pages:
            break
        if i % segment_pages == 0:
            if writer is not None:
                writer.finish()
            name = f"seg-{i // segment_pages:06d}"
            writer = SegmentWriter(data.index_dir / name, ram_bytes=RAM)
        assert writer is not None
        body = f"{page.body} {unique_word(i)}"
        writer.add_document(i + 1, host=page.host, url=page.url, title=page.title, text=body,
                            fields=[page.title, "", body, page.url])
    if writer is not None:
        writer.finish()
    for path in sorted(data.index_dir.glob("seg-*")):
        entries.append(SegmentEntry(path.name, int(read_meta(path)["doc_count"]),
                                    describe_files(path)))
    write_manifest(data.index_dir, Manifest(1, 0, entries))
    print(f"index: {pages} pages in {len(entries)} segments, "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    write_json(root / "built.json", STAGED, key)
    return data


def timed(holder: SnapshotHolder, settings: Settings, reqs: list[SearchRequest]
          ) -> list[float]:
    """CPU ms of each request, as ``GET /search`` runs it (no result cache)."""
    out = []
    for req in reqs:
        with holder.lease() as snap:
            t0 = time.process_time()
            rank_query(snap, req, settings)
            out.append((time.process_time() - t0) * 1000.0)
    return out


def measure(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    data = build(args.cache / f"p{args.pages}-s{args.seed}", args.pages, args.segment_pages,
                 args.seed)
    rng = np.random.default_rng(args.seed + 7)
    site = ZipfSite(hosts=HOSTS, pages_per_host=1, seed=args.seed)
    words = [site.words[int(i)] for i in rng.integers(20, 5000, size=args.words + args.cold)]
    drawn = rng.choice(args.pages, size=args.probes * PROBE_WORDS, replace=False).tolist()
    probes = [" OR ".join(unique_word(p) for p in drawn[i: i + PROBE_WORDS])
              for i in range(0, len(drawn), PROBE_WORDS)]
    settings = Settings(data=data.root)
    holder = SnapshotHolder(data, reload_check_ms=60_000)
    try:
        cold = timed(holder, settings, [SearchRequest(q=w, k=10, offset=0)
                                        for w in words[:args.cold]])
        reqs = [SearchRequest(q=q, k=PROBE_WORDS, offset=0) for q in probes]
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
        probe = timed(holder, settings, reqs)
        if args.profile:
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        one = timed(holder, settings, [SearchRequest(q=w, k=10, offset=0)
                                       for w in words[args.cold:]])
        reloads = reload_cpu(holder, data, args.reloads, reqs[:PROBE_BURST])
    finally:
        holder.close()
    return {name: figures(xs) for name, xs in
            (("one word, fresh server", cold), ("probe: 30 unique words ORed", probe),
             ("one word", one), ("a reload after the probes (the reload's thread)", reloads))}


def reload_cpu(holder: SnapshotHolder, data: DataDir, n: int, burst: list[SearchRequest]
               ) -> list[float]:
    """CPU ms of each of ``n`` reloads (the same segments under a new generation: the
    caches' takeover, PostingStore.adopt, is all the work), each after ``burst`` probe
    queries (found again: the caches' recent end holds their lists, as up's server's does
    between cuts)."""
    out = []
    settings = Settings(data=data.root)
    for _ in range(n):
        timed(holder, settings, burst)
        manifest = read_manifest(data.index_dir)
        write_manifest(data.index_dir, replace(manifest, generation=manifest.generation + 1))
        t0 = time.thread_time()
        holder.refresh(force=True)
        out.append((time.thread_time() - t0) * 1000.0)
    return out


def figures(xs: list[float]) -> dict[str, float]:
    a = np.asarray(xs)
    return {"n": float(a.size), "mean": float(a.mean()), "p50": float(np.percentile(a, 50)),
            "p99": float(np.percentile(a, 99))}


def report(rows: list[tuple[str, dict[str, dict[str, float]]]]) -> None:
    print(f"\nCPU ms per query (load average {os.getloadavg()[0]:.1f})")
    head = "| queries | " + " | ".join(f"{name} mean / p50 / p99" for name, _ in rows) + " |"
    print(head)
    print("|---" * (len(rows) + 1) + "|")
    for cls in rows[0][1]:
        cells = [f"{f[cls]['mean']:.1f} / {f[cls]['p50']:.1f} / {f[cls]['p99']:.1f}"
                 for _, f in rows]
        print(f"| {cls} ({rows[0][1][cls]['n']:.0f}) | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=30_000)
    ap.add_argument("--segment-pages", type=int, default=5_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--words", type=int, default=300)
    ap.add_argument("--cold", type=int, default=20)
    ap.add_argument("--reloads", type=int, default=10)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--against", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.probes * PROBE_WORDS > args.pages:
        ap.error("--probes x 30 must be at most --pages (each page's word is asked once)")
    if args.against is None:
        result = measure(args)
        if args.json is not None:
            args.json.write_text(json.dumps(result))
        else:
            report([("this checkout", result)])
        return 0
    # Imported here, in the parent only: the child runs this file over the other checkout's
    # `scripts` package, which may predate scripts/benchmarks/against.py.
    from scripts.benchmarks.against import figures_of

    build(args.cache / f"p{args.pages}-s{args.seed}", args.pages, args.segment_pages, args.seed)
    own = Path(__file__).resolve().parents[2]
    rows = figures_of(__file__, argv, [(f"{args.against}", args.against.resolve()),
                                       ("this checkout", own)], args.cache)
    report(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
