"""Whether two index directories hold the same segments, file for file and byte for byte.

    .venv/bin/python -m scripts.tools.same_index A/index B/index

A change to the index path that must leave the index as it was (a faster parse, a faster
analysis) is checked by building the same crawl with both trees and comparing: every file of
each live segment (postings, lexicon, stored documents and fragments, lengths, priors, meta)
and the templates.  A segment's files are deterministic for the same pages and settings (the
workers' order is the batches' order), so any difference is one.  Prints each differing file;
exit 0 when all are the same, 1 when some differ, 2 when a directory is not an index.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def differences(a: Path, b: Path) -> list[str]:
    """The files (segment/name, or a top-level name) that differ between indexes a and b."""
    segs = [[s["name"] for s in json.loads((d / "manifest.json").read_text())["segments"]]
            for d in (a, b)]
    out: list[str] = []
    if len(segs[0]) != len(segs[1]):
        out.append(f"manifest.json ({len(segs[0])} segments against {len(segs[1])})")
    for sa, sb in zip(*segs, strict=False):
        names = sorted({p.name for p in (a / sa).iterdir()} | {p.name for p in (b / sb).iterdir()})
        out.extend(f"{sa}/{n}" for n in names if _digest(a / sa / n) != _digest(b / sb / n))
    if _digest(a / "templates.json") != _digest(b / "templates.json"):
        out.append("templates.json")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    args = ap.parse_args(argv)
    for d in (args.a, args.b):
        if not (d / "manifest.json").is_file():
            print(f"error: {d} holds no index (no manifest.json)", file=sys.stderr)
            return 2
    diff = differences(args.a, args.b)
    for name in diff:
        print(f"differs: {name}")
    print("same" if not diff else f"{len(diff)} files differ")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
