"""CPU per page: ``websift index`` (one run) against ``index --follow``'s cuts, same pages.

    .venv/bin/python -m scripts.benchmarks.bench_cut_cpu [--pages 6000] [--hosts 300]
        [--every 500] [--rounds 1] [--baseline /path/to/other/websift/tree] [--work DIR]

The corpus is bench_index_rate's generated web (``testkit/genweb.py`` pages stored through the
real crawl store and WARC writer; 300 hosts by default, as the crawl-scale web ``bench_up``
crawls).  Each tree (this one and, with ``--baseline``, the other, ``PYTHONPATH`` set to it)
runs in a child process, on a copy of the store without its index:

- ``batch``: ``build_index(procs=1)``, as ``websift index --rebuild --procs 1``;
- ``cuts``: the follower's cuts replayed: ``run_once`` with one running in-process
  ``AnalyserPool`` (``--procs 1``, as under ``websift up``) and the follower's arguments, every
  ``--every`` pages in store order, link targets left to a later lane, as
  indexer/follow.py cuts fetched pages.  The first cut takes its own pages only: on a finished
  store a first run would take every page they link to as well, which a live follower's first
  cut (early in the crawl) does not meet.

It prints the CPU seconds of each (``time.process_time`` of the child: analysis included, it
runs in that process) per document, and with ``--baseline`` whether both trees left the same
index, each way (scripts/tools/same_index.py).  CPU on a shared machine is noisy: compare the trees
within one invocation.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scripts.benchmarks.bench_index_rate import corpus

ROOT = Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, shutil, sys, time
from pathlib import Path
from websift.core.datadir import DataDir
from websift.indexer.anchors import anchor_boilerplate
from websift.indexer.build import build_index, open_manifest, run_once
from websift.indexer.follow_merges import OpenSegments
from websift.indexer.settings import DEFAULT_INDEX_SETTINGS, FOLLOW_RECENT_CHARS
from websift.indexer.workers import AnalyserPool
from websift.store.views import StoreReader

mode, src, dst, every = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst, ignore=shutil.ignore_patterns("index", "*.lock"))
data = DataDir.open(dst)
quiet = lambda _m: None
cpu0 = time.process_time()
cuts = docs = 0
if mode == "batch":
    build_index(data, procs=1)
    manifest = open_manifest(data.index_dir, quiet)
    docs = int(manifest.stats["live_docs"])
else:
    store = StoreReader.open(data.store_path)
    # the first cut: its own pages, not every page they link to (see the module doc)
    store.fetched_or_linked_ids = lambda snap: sorted(store.changed_ids(0, snap))
    scale, boiler = store.importance_scale(), anchor_boilerplate(store)
    segments, manifest = OpenSegments(), None
    with AnalyserPool(data.warc_dir, 1, {}, DEFAULT_INDEX_SETTINGS, quiet_signals=True,
                      recent_chars=FOLLOW_RECENT_CHARS) as pool:
        while (last := manifest.last_seq if manifest else 0) < store.max_seq():
            report = run_once(data, store, manifest, ram_mb=256, started=time.monotonic(),
                              say=quiet, counted=False, procs=1, pool=pool,
                              upto_seq=store.seq_of_change(last, every), prior_scale=scale,
                              boilerplate=boiler, merge=False, open_segment=segments,
                              link_targets=False)
            manifest = open_manifest(data.index_dir, quiet)
            segments.keep(manifest)
            cuts, docs = cuts + 1, docs + report.documents
    store.close()
print(json.dumps({"cpu": time.process_time() - cpu0, "docs": docs, "cuts": cuts}))
"""


def child(tree: Path, mode: str, data: Path, dest: Path, every: int) -> dict[str, float]:
    """One measured run of ``mode`` with ``tree``'s code, in a child process."""
    out = subprocess.run([sys.executable, "-c", _CHILD, mode, str(data), str(dest), str(every)],
                         cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                         check=True, capture_output=True, text=True)
    got: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=6000)
    ap.add_argument("--hosts", type=int, default=300)
    ap.add_argument("--every", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--baseline", type=Path, help="another websift source tree to compare")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "websift-cut-cpu")
    args = ap.parse_args(argv)
    work = args.work.resolve()
    data = corpus(work, args.pages, args.hosts, False)
    trees = {"this tree": ROOT}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    for r in range(args.rounds):
        for name, tree in trees.items():
            tag = "base" if name == "baseline" else "this"
            for mode in ("batch", "cuts"):
                m = child(tree, mode, data, work / f"run-{mode}-{tag}", args.every)
                what = (f"{m['cuts']:.0f} cuts of at most {args.every} pages" if mode == "cuts"
                        else "one run")
                print(f"round {r + 1} {name}: {mode} ({what}): {m['docs']:.0f} documents, "
                      f"CPU {m['cpu']:.1f} s = {m['cpu'] / m['docs'] * 1e3:.2f} ms/document",
                      flush=True)
    if args.baseline is not None:
        for mode in ("batch", "cuts"):
            same = subprocess.run([sys.executable, "-m", "scripts.tools.same_index",
                                   str(work / f"run-{mode}-this" / "index"),
                                   str(work / f"run-{mode}-base" / "index")],
                                  check=False, cwd=ROOT, capture_output=True, text=True)
            print(f"{mode}: the index of this tree against the baseline's:",
                  (same.stdout.strip() or same.stderr.strip()).splitlines()[-1])
    for tag in ("this", "base"):
        for mode in ("batch", "cuts"):
            shutil.rmtree(work / f"run-{mode}-{tag}", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
