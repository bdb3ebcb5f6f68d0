"""``websift index`` of a small site (about a thousand pages) against Whoosh, same pages, same run.

    .venv/bin/python -m scripts.benchmarks.bench_small_site  # the Python and Octave manuals
    .venv/bin/python -m scripts.benchmarks.bench_small_site --manual octave --runs 5 --data D

Each manual (scripts/evaluation/eval_relevance.py ``MANUALS``: the docs served on loopback and
crawled with ``websift crawl``, or the crawl already in ``--data``/<manual>) is indexed from
scratch ``--runs`` times by ``websift index --quiet`` exactly as a user runs it (the installed
CLI in a child process: interpreter start-up, imports, worker processes, the finishing passes,
all included), alternating with Whoosh in a child process on the same stored pages (the WARC read
and the same lxml text extraction included, as ours is: scripts/evaluation/peers.py).  Prints
the median wall and CPU seconds of each and the ratio websift / Whoosh (goal: at most 0.3x), and
the CLI's start-up alone (``websift index --help``) beside the interpreter's (``python -c pass``).
Nothing samples the children's memory (bench_index.py ``run_child(memory=False)``): on 2 cores
a sampler slows the 2-worker run and not the one-process peer.
Each tree's modules are compiled to bytecode first (``compileall``), as ``pip install`` compiles
an installed package and as Whoosh's are: where PYTHONDONTWRITEBYTECODE is set (this machine's
shell sets it), every run would otherwise compile websift's sources again, about 0.1 s of each
run's start-up that a user's installed websift does not pay.
``--baseline TREE`` also runs ``websift index`` from another source tree (``PYTHONPATH=TREE``,
e.g. a worktree of the previous main) in the same alternation, and prints this tree / it.
"""

from __future__ import annotations

import argparse
import compileall
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from scripts.benchmarks.bench_index import WEBSIFT, peer_child, run_child
from scripts.evaluation.eval_relevance import MANUALS, crawl_and_index


def _median(rows: list[tuple[float, float, int]], i: int) -> float:
    return statistics.median(r[i] for r in rows)


def bench_manual(name: str, data_dir: Path, runs: int, extra: list[str],
                 baseline: Path | None = None) -> None:
    data = crawl_and_index(data_dir, manual=MANUALS[name])
    ours: list[tuple[float, float, int]] = []
    whoosh: list[tuple[float, float, int]] = []
    base: list[tuple[float, float, int]] = []
    index = [WEBSIFT, "index", "--data", str(data_dir), "--quiet", *extra]
    for _ in range(runs):
        shutil.rmtree(data.index_dir)
        ours.append(run_child(index, memory=False))
        whoosh.append(peer_child("WhooshPeer", data_dir, memory=False))
        if baseline is not None:
            shutil.rmtree(data.index_dir)
            base.append(run_child(["env", f"PYTHONPATH={baseline}", *index], memory=False))
    manifest = json.loads((data.index_dir / "manifest.json").read_text())
    docs = sum(json.loads((data.index_dir / s["name"] / "meta.json").read_text())["doc_count"]
               for s in manifest["segments"])
    cmd = " ".join(["websift index --quiet", *extra])
    print(f"\n{name} manual ({docs} documents indexed), median of {runs} runs:")
    print("| | wall s | CPU s |")
    print("|---|---|---|")
    print(f"| `{cmd}` | {_median(ours, 0):.2f} | {_median(ours, 1):.2f} |")
    print(f"| Whoosh (lxml text + index) | {_median(whoosh, 0):.2f} | {_median(whoosh, 1):.2f} |")
    print(f"websift / Whoosh: wall {_median(ours, 0) / _median(whoosh, 0):.2f}x, "
          f"CPU {_median(ours, 1) / _median(whoosh, 1):.2f}x (goal: wall <= 0.3x)")
    if base:
        print(f"| `{cmd}` from {baseline} | {_median(base, 0):.2f} | {_median(base, 1):.2f} |")
        print(f"this tree / {baseline}: wall {_median(ours, 0) / _median(base, 0):.2f}x, "
              f"CPU {_median(ours, 1) / _median(base, 1):.2f}x")


def compile_tree(tree: Path) -> None:
    """The modules of the ``websift`` package in source tree ``tree`` compiled to
    ``__pycache__`` (as an installed package's are); PYTHONDONTWRITEBYTECODE stops writing them
    on import, not reading them.  The package's subpackages are links to the tree's top-level
    folders, which ``compileall`` does not follow: each is compiled where it is."""
    package = tree / "websift"
    dirs = [(package, 0)] + [(p.resolve(), 10) for p in sorted(package.iterdir())
                             if p.is_symlink() and p.is_dir()]
    for d, depth in dirs:
        if not compileall.compile_dir(str(d), maxlevels=depth, quiet=1):
            raise SystemExit(f"compiling the modules in {d} failed")


def startup(runs: int) -> None:
    cli = [run_child([WEBSIFT, "index", "--help"], memory=False) for _ in range(runs)]
    bare = [run_child([sys.executable, "-c", "pass"], memory=False) for _ in range(runs)]
    print(f"\nstart-up, median of {runs}: `websift index --help` {_median(cli, 0):.2f} s wall "
          f"({_median(cli, 1):.2f} s CPU); `python -c pass` {_median(bare, 0):.2f} s wall "
          f"({_median(bare, 1):.2f} s CPU)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--manual", default="python,octave",
                    help=f"comma-separated: {', '.join(MANUALS)}")
    ap.add_argument("--data", type=Path, help="crawl into or reuse D/<manual>")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each (the median shown)")
    ap.add_argument("--index-args", default="", metavar="ARGS",
                    help="extra `websift index` arguments, e.g. '--procs 2'")
    ap.add_argument("--baseline", type=Path, metavar="TREE",
                    help="also run `websift index` from this source tree (PYTHONPATH=TREE)")
    args = ap.parse_args(argv)
    names = [m.strip() for m in args.manual.split(",") if m.strip()]
    unknown = [m for m in names if m not in MANUALS]
    if unknown or not names:
        ap.error(f"unknown manual {', '.join(unknown)} (known: {', '.join(MANUALS)})")
    import websift

    for tree in [Path(websift.__file__).resolve().parent.parent,
                 *([args.baseline] if args.baseline is not None else [])]:
        compile_tree(tree)
    tmp = None
    if args.data is None:
        tmp = tempfile.TemporaryDirectory(prefix="websift-small-")
        args.data = Path(tmp.name)
    for name in names:
        bench_manual(name, args.data / name, args.runs, args.index_args.split(), args.baseline)
    startup(args.runs)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
