"""What a new index generation's speller costs when a cut appends a segment: the server's
per-generation "did you mean" build (api/index_words.py, indexer/spelling.py ``Lexicon``).

    python -m scripts.benchmarks.bench_speller_cuts [--terms 300000] [--cuts 60] [--against CHECKOUT]

A generated index of ``--terms`` distinct terms (Zipf document frequencies over
``--base-parts`` segments) and ``--cuts`` cuts of ``--cut-pages`` pages each (each page's
words drawn by the same Zipf law, a few new to the index, its title's words counted as
surfaces), made as the speller's per-segment parts (``SegmentWords``) directly, with no index
on disk.  The lexicon of the base parts is merged once, then each cut's generation extends the
previous one (``Lexicon.extended``), as the server does after each of a follower's cuts; CPU
time (``time.process_time``) of each extension, p50 / mean / max.  At the end the last
generation's corrections of misspelt words are checked against a lexicon merged from every
part at once (they must be equal).  ``--against CHECKOUT`` runs the same over another
checkout first (a git worktree of an older commit).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import random
import statistics
import string
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from websift.indexer.analysis import Analyzer
from websift.indexer.settings import IndexSettings
from websift.indexer.spelling import Lexicon, SegmentWords

WORDS_A_PAGE = 120  # distinct terms a page holds
TITLE_WORDS = 6
NEW_TERMS_A_CUT = 200  # terms no earlier segment holds


def _vocabulary(n: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        length = min(14, max(3, int(rng.gauss(7, 2.5))))
        words.add("".join(rng.choices(string.ascii_lowercase, k=length)))
    return sorted(sorted(words), key=lambda _: rng.random())  # the Zipf rank: a random order


def _part(pages: int, vocab: list[str], weights: list[float], rng: random.Random,
          new: list[str]) -> SegmentWords:
    df: Counter[str] = Counter()
    surfaces: dict[str, Counter[str]] = {}
    for _ in range(pages):
        words = list(dict.fromkeys(rng.choices(vocab, cum_weights=weights, k=WORDS_A_PAGE)))
        df.update(words)
        for word in words[:TITLE_WORDS]:
            surfaces.setdefault(word, Counter())[word] += 1
    for term in new:
        df[term] += 2  # held by two pages of the cut: a candidate from now on
    return SegmentWords(dict(sorted(df.items())), surfaces)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    vocab = _vocabulary(args.terms + args.cuts * NEW_TERMS_A_CUT, rng)
    fresh = vocab[args.terms:]
    vocab = vocab[:args.terms]
    weights = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(vocab))))  # cumulative
    # the base: every term in some segment (a Zipf draw alone would leave the tail out)
    base: list[SegmentWords] = []
    chunk = -(-len(vocab) // args.base_parts)
    for i in range(args.base_parts):
        part = _part(args.base_pages, vocab, weights, rng, [])
        df = {**part.df, **{t: part.df.get(t, 0) + 1 for t in vocab[i * chunk:(i + 1) * chunk]}}
        base.append(SegmentWords(df, part.surfaces))
    cuts = [_part(args.cut_pages, vocab, weights, rng,
                  fresh[c * NEW_TERMS_A_CUT:(c + 1) * NEW_TERMS_A_CUT]) for c in range(args.cuts)]
    gc.collect()
    t = time.process_time()
    lexicon = Lexicon.of(base)
    whole_ms = (time.process_time() - t) * 1e3
    parts = list(base)
    times: list[float] = []
    served = [lexicon.speller]  # the previous generations' spellers stay alive, as when serving
    for cut in cuts:
        parts.append(cut)
        t = time.process_time()
        lexicon = lexicon.extended(parts)
        times.append((time.process_time() - t) * 1e3)
        served = [served[-1], lexicon.speller]
    analyzer = Analyzer.of(IndexSettings())
    fix_rng = random.Random(args.seed + 1)
    asked = []
    for word in fix_rng.sample(vocab[:2000], 200):
        i = fix_rng.randrange(len(word))
        asked.append(word[:i] + word[i + 1:] if len(word) > 4 else word + "q")
    kept = [lexicon.speller.nearest(w, analyzer) for w in asked]
    whole = Lexicon.of(parts).speller
    merged = [whole.nearest(w, analyzer) for w in asked]
    if kept != merged:
        raise SystemExit("the extended lexicon's corrections differ from a merged one's")
    return {"terms": len(lexicon.df), "cuts": len(times), "whole_ms": whole_ms,
            "p50": statistics.median(times), "mean": statistics.fmean(times), "max": max(times),
            "corrected": sum(k is not None for k in kept), "asked": len(asked)}


def report(rows: list[tuple[str, dict[str, Any]]]) -> None:
    print("\n| code | terms | whole merge CPU ms | a cut's generation CPU ms p50 / mean / max |"
          " corrected (same as merged) |")
    print("|---|---|---|---|---|")
    for name, f in rows:
        print(f"| {name} | {f['terms']:,} | {f['whole_ms']:.0f} | {f['p50']:.1f} / "
              f"{f['mean']:.1f} / {f['max']:.1f} | {f['corrected']} of {f['asked']} |")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--terms", type=int, default=300_000)
    ap.add_argument("--base-parts", type=int, default=8)
    ap.add_argument("--base-pages", type=int, default=2_000)
    ap.add_argument("--cuts", type=int, default=60)
    ap.add_argument("--cut-pages", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--against", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
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

    own = Path(__file__).resolve().parents[2]
    scratch = Path("/tmp") / f"bench_speller_cuts-{time.time_ns()}"
    scratch.mkdir()
    try:
        rows = figures_of(__file__, argv, [(f"{args.against}", args.against.resolve()),
                                           ("this checkout", own)], scratch)
    finally:
        scratch.rmdir()
    report(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
