"""What removals and backups cost on a stored crawl, beside their peers measured in the same run.

    .venv/bin/python -m scripts.benchmarks.bench_removals [--pages 20000] [--repeat 5]

A data directory of ``--pages`` pages over 20 hosts is stored as if fetched
(``testkit.corpus.build_data_dir``) and indexed.  Then, medians of ``--repeat`` runs:

- the removal masks a server computes when the rules change (indexer/removal_masks.py), for one
  host rule and for one pattern rule, beside opening the index generation (``Searcher.open``:
  what a reload for a new generation costs anyway);
- ``websift backup`` of the directory (api/backup.py: SHA-256 of every byte, fsyncs, the SQLite
  online backup), beside ``shutil.copytree`` of the same directory.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from testkit.corpus import build_data_dir
from websift.api.backup import backup
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.removal_masks import removal_masks
from websift.indexer.searcher import Searcher
from websift.store.removals import Removal, RemovalRules

HOSTS = 20


def make_data(root: Path, pages: int) -> DataDir:
    html = ("<html><head><title>page {i}</title></head><body><p>word{a} text{b} page number {i}"
            "</p></body></html>")
    data = build_data_dir(root, {f"http://h{i % HOSTS}.example/p/{i}.html":
                                 html.format(i=i, a=i % 97, b=i % 13) for i in range(pages)})
    build_index(data, procs=1)
    return data


def median_seconds(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(data: DataDir, scratch: Path, repeat: int) -> dict[str, float]:
    searcher = Searcher.open(data)
    host = RemovalRules([Removal(1, "host", "h3.example", "cli", 0.0, "", True)])
    pattern = RemovalRules([Removal(2, "pattern", r"/p/\d*7\.html$", "cli", 0.0, "", True)])
    out = {
        "open": median_seconds(lambda: Searcher.open(data).close(), repeat),
        "host": median_seconds(lambda: removal_masks(searcher.segments, host), repeat),
        "pattern": median_seconds(lambda: removal_masks(searcher.segments, pattern), repeat),
    }
    searcher.close()
    runs = iter(range(repeat * 2))

    def copy() -> None:
        shutil.copytree(data.root, scratch / f"copy-{next(runs)}")

    def back_up() -> None:
        backup(data, scratch / f"backup-{next(runs)}")

    out["copytree"] = median_seconds(copy, repeat)
    out["backup"] = median_seconds(back_up, repeat)
    out["docs"] = float(Searcher.open(data).doc_count())
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        data = make_data(Path(tmp) / "data", args.pages)
        f = measure(data, Path(tmp), args.repeat)
    docs = int(f["docs"])
    print(f"{docs} documents, medians of {args.repeat}")
    print(f"open the index generation (peer)  {f['open'] * 1e3:8.1f} ms")
    print(f"removal masks, one host rule      {f['host'] * 1e3:8.1f} ms  "
          f"({f['host'] / f['open']:.2f}x the open)")
    print(f"removal masks, one pattern rule   {f['pattern'] * 1e3:8.1f} ms  "
          f"({f['pattern'] / f['open']:.2f}x the open, {f['pattern'] / docs * 1e6:.1f} us/doc)")
    print(f"shutil.copytree (peer)            {f['copytree'] * 1e3:8.1f} ms")
    print(f"websift backup                    {f['backup'] * 1e3:8.1f} ms  "
          f"({f['backup'] / f['copytree']:.2f}x copytree)")


if __name__ == "__main__":
    main()
