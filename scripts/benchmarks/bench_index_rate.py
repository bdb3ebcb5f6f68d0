"""Indexing rate: ``websift index`` on a generated web, this tree against another, same run.

    .venv/bin/python -m scripts.benchmarks.bench_index_rate [--pages 20000] [--hosts 20] [--procs 2]
        [--ram-mb 256] [--baseline /path/to/other/websift/tree] [--rounds 2] [--work DIR]
    .venv/bin/python -m scripts.benchmarks.bench_index_rate --python-docs ...  # the Python 3.11 manual
    .venv/bin/python -m scripts.benchmarks.bench_index_rate --data DIR ...  # a data dir already there, e.g.
        # bench_search_scale.py's imported corpus: --data CACHE/d200000-h200-s11-g2/data

The corpus: ``testkit/genweb.py`` pages (Zipf words, power-law links, anchors = the target's
title) stored through the real crawl store and WARC writer as if fetched
(``testkit/corpus.py``), once, under ``--work`` (reused when it is there); or, with
``--python-docs``, the installed Python manual.  Each round runs ``websift index`` from scratch
in a child process with this tree's code and, with ``--baseline``, with the other tree's
(``PYTHONPATH`` set to it: a ``git worktree`` or ``git archive`` of another commit), in
alternation, and prints per run documents/s, CPU seconds (the run and its workers) and CPU
per document, peak memory (PSS summed over the run and its workers) and that peak less
``--ram-mb``, and the rate over the first and the last fifth of the pages (from the run's
progress lines: a rate that falls as the index grows shows there) and where the time went (the
run's "index: time:" line: page loop, workers analysing and idle, the main process waiting for
them, finishing); then the ratios of the best runs.  Wall figures on a busy machine are noise;
CPU per document is steadier.

With ``--baseline`` it also checks that both trees wrote the same segment: every file of each
run's segment is hashed (SHA-256) and the runs compared file by file ("segment files identical"
or the files that differ), so a change meant to make indexing faster is shown to leave its
output byte for byte as it was (a change of the index format is expected to differ).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from scripts.benchmarks.bench_index import run_child

ROOT = Path(__file__).resolve().parents[2]

PY_DOCS = Path("/usr/share/doc/python3.11/html")


def corpus(work: Path, pages: int, hosts: int, python_docs: bool) -> Path:
    from testkit.corpus import build_data_dir, ingest_files

    name = "python-docs" if python_docs else f"genweb-{pages}-{hosts}"
    data = work / name
    if (data / "crawl.sqlite3").exists():
        return data
    shutil.rmtree(data, ignore_errors=True)
    if python_docs:
        ingest_files(PY_DOCS, "http://127.0.0.1:8222/", data)
        return data
    from testkit.genweb import WebParams, ensure_web

    web = ensure_web(work / f"web-{pages}-{hosts}", WebParams(pages=pages, hosts=hosts, seed=1))
    files: dict[str, bytes] = {}
    for h in range(hosts):
        d = web.host_dir(h)
        for f in sorted(d.rglob("*.html")):
            files[f"{web.origin(h)}/{f.relative_to(d).as_posix()}"] = f.read_bytes()
    build_data_dir(data, files)
    return data


def run(tree: Path, data: Path, procs: int, ram_mb: int) -> dict[str, Any]:
    """One ``websift index --rebuild`` of ``data`` with ``tree``'s code, measured."""
    env_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(tree)
    cwd = Path.cwd()
    os.chdir(tree)  # ``python -m`` puts the working directory first on sys.path
    progress = data / "bench-progress.log"
    try:
        wall, cpu, peak = run_child([sys.executable, "-u", "-c", _TIMED, str(progress),
                                     "index", "--rebuild", "--data", str(data), "--procs",
                                     str(procs), "--ram-mb", str(ram_mb)])
    finally:
        os.chdir(cwd)
        if env_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = env_path
    manifest = json.loads((data / "index" / "manifest.json").read_text())
    docs = int(manifest["stats"]["live_docs"])
    segment = data / "index" / manifest["segments"][0]["name"]
    lines = progress.read_text().splitlines()
    first, last = part_rates(lines)
    stages = next((line.split("index: time: ", 1)[1] for line in lines if "index: time: " in line),
                  "")
    progress.unlink()
    return {"docs": docs, "wall": wall, "cpu": cpu, "peak_mb": peak / 2**20,
            "first": first, "last": last, "files": segment_digests(segment), "stages": stages}


def segment_digests(segment: Path) -> dict[str, str]:
    """File name -> SHA-256 of each file of a segment directory."""
    out = {}
    for f in sorted(segment.iterdir()):
        h = hashlib.sha256()
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        out[f.name] = h.hexdigest()
    return out


# The CLI in this process, each line it writes to stderr written to a file with the time it
# came (``say`` prints "N/M pages" every 1,000 pages).
_TIMED = """
import sys, time
from websift.api import cli
out = open(sys.argv[1], "w")
t0 = time.perf_counter()
class Lines:
    def write(self, s):
        for line in s.splitlines():
            if line.strip():
                out.write(f"{time.perf_counter() - t0:.3f} {line}\\n")
        return len(s)
    def flush(self):
        out.flush()
sys.stderr = sys.stdout = Lines()  # where the progress lines and the report go
sys.argv = ["websift", *sys.argv[2:]]
code = cli.main()
out.flush()  # not closed: the interpreter flushes sys.stderr once more on the way out
sys.exit(code)
"""

_PAGES = re.compile(r"^(\d+\.\d+) .*?(\d+) of (\d+) pages(?:,|$)")  # indexer/progress.py


def part_rates(lines: list[str], share: float = 0.2) -> tuple[float, float]:
    """Pages/s over the first and the last ``share`` of the pages, from timed progress lines
    (0, 0 when there are too few lines)."""
    points = [(float(m[1]), int(m[2]), int(m[3])) for line in lines
              if (m := _PAGES.match(line.strip()))]
    if len(points) < 3:
        return 0.0, 0.0
    total = points[0][2]
    head = [p for p in points if p[1] <= share * total]
    tail = [p for p in points if p[1] >= (1 - share) * total]
    def rate(ps: list[tuple[float, int, int]]) -> float:
        return (ps[-1][1] - ps[0][1]) / (ps[-1][0] - ps[0][0]) if len(ps) > 1 \
            and ps[-1][0] > ps[0][0] else 0.0
    return rate(head), rate(tail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=20_000)
    ap.add_argument("--hosts", type=int, default=20)
    ap.add_argument("--python-docs", action="store_true")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--ram-mb", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--baseline", type=Path, help="another websift source tree to compare")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "websift-rate")
    ap.add_argument("--data", type=Path, help="index this data directory (its index is rebuilt)")
    args = ap.parse_args(argv)
    data = args.data.resolve() if args.data else corpus(args.work.resolve(), args.pages,
                                                        args.hosts, args.python_docs)
    trees = {"websift (this tree)": ROOT}
    if args.baseline is not None:
        trees["baseline"] = args.baseline.resolve()
    best: dict[str, dict[str, Any]] = {}
    digests: dict[str, dict[str, str]] = {}
    for r in range(args.rounds):
        for name, tree in trees.items():
            m = run(tree, data, args.procs, args.ram_mb)
            digests.setdefault(name, m["files"])
            print(f"round {r + 1} {name}: {m['docs']:.0f} documents in {m['wall']:.1f} s = "
                  f"{m['docs'] / m['wall']:.0f} docs/s; CPU {m['cpu']:.1f} s "
                  f"({m['cpu'] / m['docs'] * 1e6:.0f} us/doc); peak {m['peak_mb']:.0f} MiB "
                  f"= --ram-mb {args.ram_mb} + {m['peak_mb'] - args.ram_mb:.0f} "
                  f"(--procs {args.procs}); pages/s over the first fifth {m['first']:.0f}, "
                  f"the last fifth {m['last']:.0f}; {m['stages']}", flush=True)
            if name not in best or m["wall"] < best[name]["wall"]:
                best[name] = m
    if "baseline" in best:
        a, b = best["websift (this tree)"], best["baseline"]
        print(f"best runs: docs/s {a['docs'] / a['wall']:.0f} vs {b['docs'] / b['wall']:.0f} "
              f"({b['wall'] / a['wall']:.2f}x); CPU per document {b['cpu'] / a['cpu']:.2f}x "
              f"less; peak memory {a['peak_mb']:.0f} vs {b['peak_mb']:.0f} MB")
        mine, theirs = digests["websift (this tree)"], digests["baseline"]
        differ = sorted(n for n in mine.keys() | theirs.keys() if mine.get(n) != theirs.get(n))
        print("segment files identical" if not differ else
              f"segment files differ: {', '.join(differ)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
