"""CPU of a search's snippets on pages in several languages: reading a page's stored text
(indexer/snippet.py ``read_text``: decompression, the match view) and making its snippet, this
tree against another, same run.

    .venv/bin/python -m scripts.benchmarks.bench_snippet_text --baseline TREE
    .venv/bin/python -m scripts.benchmarks.bench_snippet_text --sites python,aptitude-fr

The pages' text is the body text of the first ``--files`` HTML files of each site's directory
(the installed Debian documentation, read from disk: no crawl), stored as the index stores it
(zlib).  One query of three words of the site's text is made into a snippet on each page.  Each
child process times 5 passes (the median pass's CPU time a page); ``--baseline TREE`` runs the
same child with ``PYTHONPATH=TREE`` (e.g. a worktree of main) after each of this tree's,
``--rounds`` times in turn, and prints the medians and this tree / it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITES = {
    "python": Path("/usr/share/doc/python3.11/html/library"),
    **{f"aptitude-{lang}": Path(f"/usr/share/doc/aptitude/html/{lang}")
       for lang in ("cs", "es", "fi", "fr", "it", "ja", "nl", "ru")},
}


def child(site: str, files: int) -> dict[str, object]:
    """Median CPU microseconds a page of 5 passes: ``read_text``, then ``make``."""
    from selectolax.lexbor import LexborHTMLParser

    from websift.indexer import snippet
    from websift.indexer.analysis import Analyzer
    from websift.indexer.snippet import SnippetMaker, read_text

    paths = sorted(SITES[site].glob("*.html"))[:files]
    texts = [t for p in paths if (body := LexborHTMLParser(p.read_bytes()).body) is not None
             and (t := body.text(separator=" ").strip())]
    if not texts:
        raise SystemExit(f"error: no HTML text under {SITES[site]} (is its package installed?)")
    blobs = [zlib.compress(t.encode("utf-8"), 6) for t in texts]
    words = re.findall(r"\w{5,}", " ".join(texts))[::97][:3]
    analyzer = Analyzer()
    maker = SnippetMaker(set(analyzer.terms(" ".join(words))), words, analyzer)
    reads, makes = [], []
    for _ in range(5):
        t0 = time.process_time()
        got = [read_text(b) for b in blobs]
        t1 = time.process_time()
        for g in got:
            maker.make(*g)
        t2 = time.process_time()
        reads.append((t1 - t0) / len(blobs) * 1e6)
        makes.append((t2 - t1) / len(blobs) * 1e6)
    return {"read_us": statistics.median(reads), "make_us": statistics.median(makes),
            "pages": len(blobs), "module": str(Path(snippet.__file__).resolve())}


def run(tree: Path, site: str, files: int) -> dict[str, float]:
    # imported here, not in the child: a baseline tree's scripts/ may not have it
    from scripts.benchmarks.against import child_in_tree

    got: dict[str, float] = child_in_tree(
        __file__, tree, ["--sites", site, "--files", str(files)], "module")
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sites", default="python,aptitude-fr,aptitude-cs,aptitude-ja",
                    help=f"comma-separated: {', '.join(SITES)}")
    ap.add_argument("--files", type=int, default=60, help="HTML files of each site")
    ap.add_argument("--rounds", type=int, default=3, help="child processes of each tree")
    ap.add_argument("--baseline", type=Path, metavar="TREE",
                    help="also run from this source tree, alternating")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    names = [s.strip() for s in args.sites.split(",") if s.strip()]
    unknown = [s for s in names if s not in SITES]
    if unknown or not names:
        ap.error(f"unknown site {', '.join(unknown)} (known: {', '.join(SITES)})")
    if args.child:
        print(json.dumps(child(names[0], args.files)))
        return 0
    print("| site | pages | read_text us a page | make us a page |"
          + (" baseline read / make | this tree / baseline, read |" if args.baseline else ""))
    print("|---|---|---|---|" + ("---|---|" if args.baseline else ""))
    for name in names:
        ours: list[dict[str, float]] = []
        base: list[dict[str, float]] = []
        for _ in range(args.rounds):
            ours.append(run(ROOT, name, args.files))
            if args.baseline is not None:
                base.append(run(args.baseline.resolve(), name, args.files))
        read = statistics.median(o["read_us"] for o in ours)
        make = statistics.median(o["make_us"] for o in ours)
        line = f"| {name} | {ours[0]['pages']:.0f} | {read:.0f} | {make:.0f} |"
        if base:
            b_read = statistics.median(b["read_us"] for b in base)
            b_make = statistics.median(b["make_us"] for b in base)
            line += f" {b_read:.0f} / {b_make:.0f} | {read / b_read:.2f}x |"
        print(line, flush=True)
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
