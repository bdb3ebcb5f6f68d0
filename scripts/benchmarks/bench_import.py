"""Benchmark: ``websift import`` of the same WARC files into fresh data directories, CPU and wall.

Question: what does importing one page cost the writer (the one process that owns the store) and
the workers beside it, and does a run with workers store what a run without them stores?

Each configuration (this checkout with ``--workers N`` for each N given, and each ``--against``
checkout with its default) imports FILES into a fresh data directory in a child process importing
that checkout's websift; configurations alternate, ``--runs`` times, and the table shows medians:
wall seconds, the writer's CPU seconds (``time.process_time`` of the importing process), the
workers' (``RUSAGE_CHILDREN``, reaped when the import closes them), pages per wall second and the
writer's CPU milliseconds per page, with the 1-minute load average at each run's start.
``--compare`` then checks that the stores of the first run of each configuration hold the same
rows, table by table (:func:`store_rows`; the WARC locations and the run log differ by nature).

    .venv/bin/python -m scripts.benchmarks.bench_import FILE... [--workers 0 2] [--runs 3]
        [--records N] [--against /work/wt/main-base] [--compare] [--keep DIR]

``--records N``: import only the first N records of the files (written once, uncompressed, to a
scratch file), e.g. of the million-page corpus of ``bench_search_scale --prepare-only``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from websift.store.table_rows import table_rows

REPO = Path(__file__).resolve().parents[2]

# in the child: the import in-process, its CPU apart from its workers'
_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from websift.crawler.warc_import import import_warcs
root, workers, files = Path(sys.argv[1]), sys.argv[2], [Path(f) for f in sys.argv[3:]]
kwargs = {} if workers == "default" else {"workers": int(workers)}
wall = time.perf_counter()
summary = import_warcs(root, files, **kwargs)
wall = time.perf_counter() - wall
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "writer_cpu": time.process_time(),
                  "workers_cpu": kids.ru_utime + kids.ru_stime, "pages": summary["pages"]}))
"""

# columns whose values differ between two imports of the same files by nature
_VARYING = {"urls": {"warc_file", "warc_offset", "warc_length"}}
_SKIPPED_TABLES = {"crawls"}  # the run log: times, file names, seconds


def store_rows(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a crawl store (less the varying columns), sorted."""
    return table_rows(store, skip_tables=_SKIPPED_TABLES, skip_columns=_VARYING)


def differences(a: Path, b: Path) -> list[str]:
    """What differs between two crawl stores (empty: the same rows), one line per table."""
    ra, rb = store_rows(a), store_rows(b)
    lines = []
    for table in sorted(set(ra) | set(rb)):
        x, y = ra.get(table, []), rb.get(table, [])
        if x != y:
            first = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q),
                         min(len(x), len(y)))
            lines.append(f"{table}: {len(x)} against {len(y)} rows, first difference at row "
                         f"{first}: {x[first] if first < len(x) else None!r} / "
                         f"{y[first] if first < len(y) else None!r}")
    return lines


def first_records(files: list[Path], n: int, out: Path) -> Path:
    """The first ``n`` records of ``files`` (.warc or .warc.gz), uncompressed, in ``out``."""
    written = 0
    with open(out, "wb") as sink:
        for path in files:
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rb") as src:
                while written < n:
                    head = b""
                    while (line := src.readline()) not in (b"\r\n", b"\n", b""):
                        head += line
                    if not head:
                        break
                    length = next(int(h.split(b":", 1)[1]) for h in head.splitlines()
                                  if h.lower().startswith(b"content-length:"))
                    sink.write(head + b"\r\n" + src.read(length) + src.read(4))
                    written += 1
            if written >= n:
                break
    return out


def one_run(checkout: Path, workers: str, files: list[Path], data: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    load = os.getloadavg()[0]
    done = subprocess.run([sys.executable, "-c", _CHILD, str(data), workers, *map(str, files)],
                          cwd=checkout, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"import in {checkout} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["load"] = load
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--workers", nargs="+", default=["default"],
                        help="--workers values for this checkout ('default': not given)")
    parser.add_argument("--against", type=Path, action="append", default=[],
                        help="another checkout, run with its default")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, help="only the first N records of the files")
    parser.add_argument("--compare", action="store_true",
                        help="check the first run's stores hold the same rows")
    parser.add_argument("--keep", type=Path, help="keep the data directories here")
    parser.add_argument("--json", type=Path, help="write the medians here")
    args = parser.parse_args(argv)
    configs = [(f"this, --workers {w}", REPO, w) for w in args.workers]
    configs += [(f"{c}", c.resolve(), "default") for c in args.against]
    scratch = Path(tempfile.mkdtemp(prefix="bench-import-", dir=args.keep))
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in configs}
    files = [f.resolve() for f in args.files]
    try:
        if args.records is not None:
            files = [first_records(files, args.records, scratch / f"first-{args.records}.warc")]
        for r in range(args.runs):
            for n, (name, checkout, workers) in enumerate(configs):
                data = scratch / f"c{n}-r{r}"
                figures = one_run(checkout, workers, files, data)
                runs[name].append(figures)
                print(f"run {r + 1} {name}: {json.dumps(figures)}", flush=True)
                if r > 0 and args.keep is None:
                    shutil.rmtree(data)
        print(f"\n| {len(args.files)} file(s), medians of {args.runs} | wall s | writer CPU s | "
              "workers CPU s | pages/s (wall) | writer CPU ms/page | load (1 min) |")
        print("|---|---|---|---|---|---|---|")
        medians: dict[str, dict[str, float]] = {}
        for name, got in runs.items():
            m = {k: statistics.median(g[k] for g in got) for k in got[0]}
            medians[name] = m
            print(f"| {name} | {m['wall']:.1f} | {m['writer_cpu']:.1f} | {m['workers_cpu']:.1f} | "
                  f"{m['pages'] / m['wall']:.0f} | {1000 * m['writer_cpu'] / m['pages']:.2f} | "
                  f"{min(g['load'] for g in got):.1f}-{max(g['load'] for g in got):.1f} |")
        if args.json is not None:
            args.json.write_text(json.dumps(medians, indent=1))
        if args.compare:
            first = scratch / "c0-r0" / "crawl.sqlite3"
            for n, (name, _, _) in enumerate(configs[1:], 1):
                diff = differences(first, scratch / f"c{n}-r0" / "crawl.sqlite3")
                print(f"store of {configs[0][0]} against {name}: "
                      + ("the same rows in every table" if not diff else "DIFFERENT"))
                for line in diff:
                    print("  " + line)
                if diff:
                    return 1
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    started = time.time()
    code = main()
    print(f"({time.time() - started:.0f} s)", file=sys.stderr)
    sys.exit(code)
