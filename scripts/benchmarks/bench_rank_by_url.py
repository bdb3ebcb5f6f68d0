"""Benchmark: ``websift rank --shard`` over a partitioned crawl's shards (stores numbering URLs
each their own way) and over their link exports, the Dask engine against the embedded one, in
the same run; and what a cluster's exchange turn writes per shard: a link export against a
copy of the whole store.

    .venv/bin/python -m scripts.benchmarks.bench_rank_by_url                  # 4 x 10,000 pages
    .venv/bin/python -m scripts.benchmarks.bench_rank_by_url --pages 5000 20000 --shards 2

``--shards`` stores are written as a partitioned crawl leaves them: each fetched the pages of
its own hosts (host h belongs to shard h mod shards), each page linking to ``--links`` pages
drawn among all (other shards' pages are in its store as discovered URLs only).  Then, for each
``--pages`` size, on the same stores:

- store copy: SQLite's online backup of every store (what the exchange wrote before link
  exports), bytes and seconds; link export: :func:`ranking.link_export.export_store` of every
  store (its own read of the links included), bytes and seconds;
- the exchange turn's export step (anchors left out) both ways: with a store copy (the rank
  digest, the backup, the digest of the copy) and with a link export (the links read once for
  the digest and the export: :func:`ranking.exchange.export_shard`);
- embedded: :func:`ranking.rank_by_url.run_rank_by_url` in this process, over the stores,
  then over the exports (timed with the reading, the join, the ranking and the writing);
- dask: :meth:`ranking.dask_engine.DaskEngine.run_by_url` on a LocalCluster of ``--workers``
  processes started beforehand (not timed), over the stores, then over the exports.

Each shard's PageRank vector must agree within L1 ``--accuracy`` (1e-9) between all four runs.
Then 1% of every shard's pages are fetched again with new links and every export written
again (incremental: the URL table, the new URLs' keys and one delta link file are added), and the embedded runs
repeated.  One line per size: ``pages=N export_vs_copy_bytes=B export_vs_copy_s=T
turn_export_vs_copy_s=U exports_vs_stores_embedded=E exports_vs_stores_dask=D
dask_vs_embedded=R delta_vs_export_bytes=I l1=L`` (ratios of the first figure over the second,
from the same run).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from websift.core.datadir import DataDir
from websift.ranking.dask_engine import DaskEngine, local_cluster
from websift.ranking.exchange import rank_digest
from websift.ranking.link_export import export_bytes, export_store, read_manifest, write_export
from websift.ranking.rank_by_url import run_rank_by_url
from websift.ranking.ranks import Ranks
from websift.store.crawl_store import CrawlStore
from websift.store.schema import Link
from websift.store.views import StoreReader

PAGES_PER_HOST = 100
BATCH = 5_000  # pages per transaction while building


def url_of(i: int) -> str:
    return f"http://site{i // PAGES_PER_HOST}.example/p/{i}"


def build_shards(root: Path, pages: int, shards: int, links: int, seed: int) -> list[DataDir]:
    rng = np.random.default_rng(seed)
    owner = (np.arange(pages) // PAGES_PER_HOST) % shards
    out = []
    for s in range(shards):
        data = DataDir.create(root / f"shard{s}")
        mine = rng.permutation(np.flatnonzero(owner == s))
        with CrawlStore.open(data.store_path) as store:
            for a in range(0, mine.size, BATCH):
                with store.transaction():
                    for i in mine[a : a + BATCH].tolist():
                        uid = store.add_url(url_of(i), depth=0 if i % 1000 == 0 else 1)[0]
                        found = [Link(store.add_url(url_of(int(t)), depth=2)[0], "", False)
                                 for t in rng.integers(0, pages, links)]
                        store.record_fetched(
                            uid, http_status=200, content_type="text/html", warc=None,
                            content_hash=hashlib.sha1(str(i).encode()).hexdigest(),
                            links=found)
        out.append(data)
    return out


def _copy_and_export(root: Path, shards: list[DataDir]) -> tuple[list[DataDir], dict[str, float]]:
    """Every shard's store copied (the exchange's former export) and link-exported; sizes and
    seconds of both."""
    figures = dict.fromkeys(("copy_bytes", "copy_s", "export_bytes", "export_s", "old_turn_s",
                             "new_turn_s"), 0.0)
    exports = []
    for s, data in enumerate(shards):
        copy = root / f"copy{s}.sqlite3"
        with StoreReader.open(data.store_path) as store:
            t = time.perf_counter()
            store.backup_to(copy)
            figures["copy_s"] += time.perf_counter() - t
            # the exchange's export step with a store copy: digest, backup, digest of the copy
            t = time.perf_counter()
            with store.snapshot():
                rank_digest(store)
            store.backup_to(root / "turn.sqlite3")
            with StoreReader.open(root / "turn.sqlite3") as snap:
                rank_digest(snap)
            figures["old_turn_s"] += time.perf_counter() - t
            (root / "turn.sqlite3").unlink()
            # ... and with a link export: the links read once for the digest and the export
            t = time.perf_counter()
            with store.snapshot():
                arrays = store.link_arrays(include_nofollow=False)
                write_export(store, root / f"turn{s}", links=arrays,
                             rank_digest=rank_digest(store, arrays))
            figures["new_turn_s"] += time.perf_counter() - t
            shutil.rmtree(root / f"turn{s}")
        figures["copy_bytes"] += copy.stat().st_size
        copy.unlink()
        t = time.perf_counter()
        export_store(data, root / f"export{s}")
        figures["export_s"] += time.perf_counter() - t
        figures["export_bytes"] += export_bytes(root / f"export{s}")
        exports.append(DataDir.open(root / f"export{s}"))
    return exports, figures


def _refetch(shards: list[DataDir], pages: int, links: int, share: float, seed: int) -> int:
    """``share`` of every shard's pages fetched again with new out-links; how many."""
    rng = np.random.default_rng(seed)
    changed = 0
    for s, data in enumerate(shards):
        mine = np.flatnonzero((np.arange(pages) // PAGES_PER_HOST) % len(shards) == s)
        pick = rng.choice(mine, size=max(1, int(mine.size * share)), replace=False)
        with CrawlStore.open(data.store_path) as store, store.transaction():
            for i in pick.tolist():
                uid = store.add_url(url_of(i), depth=1)[0]
                found = [Link(store.add_url(url_of(int(t)), depth=2)[0], "", False)
                         for t in rng.integers(0, pages, links)]
                store.record_fetched(uid, http_status=200, content_type="text/html",
                                     warc=None, content_hash=f"again-{uid}", links=found)
        changed += pick.size
    return changed


def _incremental(shards: list[DataDir], exports: list[DataDir], args: argparse.Namespace,
                 pages: int) -> dict[str, float]:
    """1% of the pages fetched again, then every export written again: the bytes of the files
    the new export added (the URL table, new URLs' keys, one delta link file) against the
    whole export's."""
    changed = _refetch(shards, pages, args.links, 0.01, seed=11)
    added = whole = 0
    t = time.perf_counter()
    for data, export in zip(shards, exports, strict=True):
        before = read_manifest(export.root)
        assert before is not None
        old = {f["file"] for f in [*before["files"].values(), *before["link_files"],
                                   *before["key_files"]]}
        body = export_store(data, export.root)
        new = [f for f in [*body["files"].values(), *body["link_files"], *body["key_files"]]
               if f["file"] not in old]
        new += [f["cover"] for f in body["link_files"]
                if "cover" in f and f["file"] not in old]
        added += sum(int(f["bytes"]) for f in new)
        whole += export_bytes(export.root)
    return {"changed": changed, "added_bytes": added, "export_bytes": whole,
            "seconds": time.perf_counter() - t}


def _timed(run: Callable[[list[DataDir]], object], dirs: list[DataDir]) -> tuple[float, list[Ranks]]:
    before = [Ranks.open(d).generation if (d.ranks_dir / "manifest.json").exists() else 0
              for d in dirs]
    t = time.perf_counter()
    run(dirs)
    seconds = time.perf_counter() - t
    after = [Ranks.open(d) for d in dirs]
    if any(r.generation <= g for g, r in zip(before, after, strict=True)):
        raise SystemExit("a run wrote no new generation")
    return seconds, after


def one_size(root: Path, pages: int, args: argparse.Namespace, cluster_address: str) -> str:
    t = time.perf_counter()
    shards = build_shards(root, pages, args.shards, args.links, seed=7)
    print(f"{args.shards} shards, {pages:,} pages, {pages * args.links:,} links "
          f"stored in {time.perf_counter() - t:.1f} s", flush=True)
    exports, f = _copy_and_export(root, shards)
    print(f"store copies: {f['copy_bytes'] / 1e6:.2f} MB in {f['copy_s']:.2f} s   "
          f"link exports: {f['export_bytes'] / 1e6:.2f} MB in {f['export_s']:.2f} s   "
          f"exchange export step: with a store copy {f['old_turn_s']:.2f} s, "
          f"with a link export {f['new_turn_s']:.2f} s", flush=True)
    engine = DaskEngine(scheduler=cluster_address)

    def dask(dirs: list[DataDir]) -> object:
        return engine.run_by_url(dirs, damping=0.85, tol=1e-10, dangling="teleport")

    runs = {"embedded stores": _timed(run_rank_by_url, shards),
            "embedded exports": _timed(run_rank_by_url, exports),
            "dask stores": _timed(dask, shards),
            "dask exports": _timed(dask, exports)}
    reference = runs["embedded stores"][1]
    l1 = max(float(np.abs(a.pagerank - b.pagerank).sum())
             for _, ranks in runs.values() for a, b in zip(reference, ranks, strict=True))
    print("   ".join(f"{name}: {s:.2f} s" for name, (s, _) in runs.items())
          + f"   PageRank L1 (worst): {l1:.1e}", flush=True)
    if l1 > args.accuracy:
        raise SystemExit(f"the runs differ by {l1:.1e} in L1 (> {args.accuracy:g})")
    inc = _incremental(shards, exports, args, pages)
    stores, _ = _timed(run_rank_by_url, shards)
    from_exports, after = _timed(run_rank_by_url, exports)
    l1_inc = max(float(np.abs(a.pagerank - b.pagerank).sum())
                 for a, b in zip([Ranks.open(d) for d in shards], after, strict=True))
    print(f"{inc['changed']} pages fetched again: exports written again in "
          f"{inc['seconds']:.2f} s, adding {inc['added_bytes'] / 1e6:.2f} MB (URL table, new keys, "
          f"delta link file) to {inc['export_bytes'] / 1e6:.2f} MB; embedded from stores "
          f"{stores:.2f} s, from exports {from_exports:.2f} s, PageRank L1 {l1_inc:.1e}",
          flush=True)
    if l1_inc > args.accuracy:
        raise SystemExit(f"incremental exports differ by {l1_inc:.1e} in L1")
    sec = {name: s for name, (s, _) in runs.items()}
    return (f"pages={pages} export_vs_copy_bytes={f['export_bytes'] / f['copy_bytes']:.3f} "
            f"export_vs_copy_s={f['export_s'] / f['copy_s']:.2f} "
            f"turn_export_vs_copy_s={f['new_turn_s'] / f['old_turn_s']:.2f} "
            f"exports_vs_stores_embedded={sec['embedded exports'] / sec['embedded stores']:.2f} "
            f"exports_vs_stores_dask={sec['dask exports'] / sec['dask stores']:.2f} "
            f"dask_vs_embedded={sec['dask stores'] / sec['embedded stores']:.2f} "
            f"delta_vs_export_bytes={inc['added_bytes'] / inc['export_bytes']:.3f} "
            f"l1={max(l1, l1_inc):.1e}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--pages", type=int, nargs="+", default=[40_000],
                    help="pages over all shards (one run per size)")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--links", type=int, default=10, help="links per page")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--accuracy", type=float, default=1e-9)
    args = ap.parse_args(argv)
    lines = []
    with local_cluster(args.workers) as cluster:
        for pages in args.pages:
            root = Path(tempfile.mkdtemp(prefix="bench-rank-by-url-"))
            try:
                lines.append(one_size(root, pages, args, cluster.scheduler_address))
            finally:
                shutil.rmtree(root, ignore_errors=True)
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
