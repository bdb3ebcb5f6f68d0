"""A ``site:`` filter's per-segment mask and one host-filtered query, beside the code before.

    .venv/bin/python -m scripts.benchmarks.bench_site_filter [--pages 30000 --hosts 300] \\
        [--repeat 50] [--procs 2] [--work DIR]

A generated web (testkit/genweb.py: ``--pages`` over ``--hosts`` hosts) is stored as if fetched
(``testkit.corpus.build_data_dir``) and indexed (kept under ``--work`` and reused).  Then, in
one process and interleaved, medians of ``--repeat`` runs of:

- the mask of one host of the index (``Searcher._host_mask``: the segment's hosts under the
  domain by binary search, ``SegmentReader.hosts_under``; its doc IDs by binary search,
  ``core.id_set.sorted_members``) against the peer, the code before: a loop over every host
  name of the segment and ``np.isin`` of the segment's doc IDs;
- the membership alone, ``sorted_members`` against ``np.isin``, on the segment and on 800,000
  doc IDs (every 300th asked);
- one ``word site:host`` query with the site cache off (its mask made at each query), with
  either mask; the hits are asserted identical, as are the masks.
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pyroaring import BitMap

from testkit.corpus import build_data_dir
from testkit.genweb import WebParams, ensure_web, host_address
from websift.core.datadir import DataDir
from websift.core.id_set import sorted_members
from websift.indexer.build import build_index
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.segment import SegmentReader

BIG = 800_000  # doc IDs of the large membership case


def make_data(work: Path, pages: int, hosts: int, procs: int) -> DataDir:
    """The generated web stored and indexed under ``work`` (reused when already there)."""
    root = work / f"site-{pages}-{hosts}"
    web = ensure_web(root / "web", WebParams(pages=pages, hosts=hosts, seed=1))
    if (root / "data" / "index" / "manifest.json").exists():
        return DataDir(root / "data")
    docs = {f"http://{host_address(h)}:{web.params.port}/p/{p.name}": p.read_text()
            for h in range(hosts) for p in sorted((web.host_dir(h) / "p").glob("*.html"))}
    data = build_data_dir(root / "data", docs)
    build_index(data, procs=procs)
    return data


def mask_before(seg: SegmentReader, hosts: tuple[str, ...]) -> np.ndarray:
    """The peer: the mask as the code before made it."""
    ids = BitMap()
    for h in seg.hosts():
        if any(h == s or h.endswith("." + s) for s in hosts):
            ids |= seg.host_docs(h)
    return np.isin(seg.doc_ids, np.asarray(ids.to_array(), dtype=np.int64))


def measure(data: DataDir, host: str, word: str, repeat: int) -> dict[str, float]:
    searcher = Searcher.open(data, site_cache_bytes=0)
    seg = max(searcher.segments, key=lambda s: len(s.doc_ids))
    ids = np.asarray(seg.host_docs(host).to_array(), dtype=np.int64)
    big = np.arange(1, BIG + 1, dtype=np.int64)
    asked = big[::300].copy()
    now = Searcher._host_mask
    query = IndexQuery(f"{word} site:{host}", k=10)
    times: dict[str, list[float]] = {}

    def timed(key: str, work: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        out = work()
        times.setdefault(key, []).append(time.perf_counter() - started)
        return out

    try:
        for _ in range(repeat):
            timed("isin", lambda: np.isin(seg.doc_ids, ids))
            timed("sorted", lambda: sorted_members(seg.doc_ids, ids))
            timed("isin_big", lambda: np.isin(big, asked))
            timed("sorted_big", lambda: sorted_members(big, asked))
            timed("mask_before", lambda: mask_before(seg, (host,)))
            timed("mask_now", lambda: now(seg, (host,)))
            Searcher._host_mask = staticmethod(mask_before)  # type: ignore[method-assign]
            before = timed("query_before", lambda: searcher.search(query))
            Searcher._host_mask = staticmethod(now)  # type: ignore[method-assign]
            after = timed("query_now", lambda: searcher.search(query))
            assert [(h.url, h.score) for h in before.hits] == [(h.url, h.score)
                                                               for h in after.hits]
    finally:
        Searcher._host_mask = staticmethod(now)  # type: ignore[method-assign]
    assert (mask_before(seg, (host,)) == now(seg, (host,))).all()
    out = {k: statistics.median(v) for k, v in times.items()}
    out.update(docs=float(len(seg.doc_ids)), host_docs=float(len(ids)),
               hits=float(len(after.hits)))
    searcher.close()
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=30000)
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--procs", type=int, default=2, help="indexing processes")
    parser.add_argument("--work", type=Path, default=None,
                        help="keep the web and its index here (reused); default: a temporary one")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        data = make_data(work, args.pages, args.hosts, args.procs)
        host = host_address(min(5, args.hosts - 1))
        page = next((work / f"site-{args.pages}-{args.hosts}" / "web").glob(
            f"hosts/{host}/p/*.html"))
        found = re.search(r"<title>\w+ (\w+)", page.read_text())
        word = found.group(1) if found else "the"
        f = measure(data, host, word, args.repeat)
    print(f"{int(f['docs'])} documents in the segment, site:{host} holds {int(f['host_docs'])}, "
          f"query '{word} site:{host}' ({int(f['hits'])} hits); medians of {args.repeat}")
    rows = [("the host mask", "mask_before", "mask_now"),
            ("membership, the segment", "isin", "sorted"),
            (f"membership, {BIG:,} IDs", "isin_big", "sorted_big"),
            ("one site: query, cache off", "query_before", "query_now")]
    for label, before, now in rows:
        print(f"{label:28s} before (peer) {f[before] * 1e3:8.3f} ms   now {f[now] * 1e3:8.3f} ms"
              f"   {f[before] / f[now]:6.1f}x")


if __name__ == "__main__":
    main()
