"""Completions and "did you mean" at a million pages: the /suggest structure
(indexer/completion.py) and the speller (indexer/spelling.py) built over a generated index-sized
vocabulary, then timed call by call.

    python -m scripts.benchmarks.bench_suggest [--pages 1000000] [--words 1000000] [--calls 20000]

One title per page (3-8 words drawn from the vocabulary by a Zipf law) and ``--words`` distinct
words with Zipf document frequencies.  Prefixes are the first 1-12 characters of a title or
word picked in proportion to its weight (as people type frequent things more), so short prefixes
with huge ranges are common.  Prints p50/p90/p99 per call for completion, and beside it the
same ranges' top k by ``heapq.nlargest`` (the peer: a plain scan of the range); then the
speller's p50/p99 on words one edit from a vocabulary word.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import random
import string
import time
from bisect import bisect_left

import numpy as np

from websift.indexer.analysis import Analyzer
from websift.indexer.completion import Completer
from websift.indexer.spelling import Speller


def _vocabulary(n: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        length = min(14, max(3, int(rng.gauss(7, 2.5))))
        words.add("".join(rng.choices(string.ascii_lowercase, k=length)))
    return sorted(words)


def _pct(times: list[float]) -> str:
    a = np.array(times) * 1000.0
    return (f"p50 {np.percentile(a, 50):.3f} ms, p90 {np.percentile(a, 90):.3f} ms, "
            f"p99 {np.percentile(a, 99):.3f} ms, max {a.max():.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--words", type=int, default=1_000_000)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    vocab = _vocabulary(args.words, rng)
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    rng.shuffle(vocab)  # Zipf rank independent of spelling
    df = np.maximum(1, (args.pages / ranks) ** 0.9).astype(np.int64)
    head = vocab[: min(len(vocab), 50_000)]
    cum = np.cumsum(1.0 / ranks[: len(head)])
    picks = np.searchsorted(cum, np.random.default_rng(args.seed).random(args.pages * 6) * cum[-1])
    titles, at = [], 0
    for _ in range(args.pages):
        n = rng.randint(3, 8)
        titles.append(" ".join(head[int(i)] for i in picks[at : at + n]).capitalize())
        at += n
    words = dict(zip(vocab, df.tolist(), strict=True))
    made = time.perf_counter()
    completer = Completer.from_index(titles, words)
    built = time.perf_counter()
    print(f"generated {args.pages:,} titles and {len(words):,} words in {made - t0:.1f} s; "
          f"completer: {len(completer):,} keys built in {built - made:.1f} s")

    # The generated inputs are garbage now; a server holds the built structure for the life of
    # an index snapshot.  Collect once and freeze, so the timings below are the structure's and
    # not a full collection of the generator's millions of objects landing inside one call.
    del titles
    gc.collect()
    gc.freeze()
    keys, weights = completer.keys, completer.weights
    probs = weights / weights.sum()
    chosen = np.random.default_rng(args.seed + 1).choice(len(keys), size=args.calls, p=probs)
    prefixes = [keys[int(i)][: rng.randint(1, 12)] for i in chosen]
    ours: list[float] = []
    for p in prefixes:
        t = time.perf_counter()
        completer.complete(p, 8)
        ours.append(time.perf_counter() - t)
    peer: list[float] = []
    for p in prefixes:
        t = time.perf_counter()
        lo = bisect_left(keys, p)
        hi = bisect_left(keys, p + "\U0010ffff", lo)
        heapq.nlargest(8, range(lo, hi), key=weights.__getitem__)
        peer.append(time.perf_counter() - t)
    print(f"complete, {args.calls:,} prefixes of 1-12 characters: {_pct(ours)}")
    print(f"peer (bisect + heapq.nlargest over the range): {_pct(peer)}; "
          f"p99 ratio {np.percentile(peer, 99) / np.percentile(ours, 99):.1f}x")

    speller = Speller(words, {})
    en = Analyzer()
    typos = []
    for w in rng.sample(head[:5000], min(2000, len(head[:5000]))):
        i = rng.randrange(len(w) - 1)
        typos.append((w, w[:i] + w[i + 1] + w[i] + w[i + 2 :]))  # two letters swapped
    spelled: list[float] = []
    right = 0
    for word, typo in typos:
        t = time.perf_counter()
        got = speller.nearest(typo, en)
        spelled.append(time.perf_counter() - t)
        right += got == word
    print(f"speller, {len(typos):,} words with two letters swapped over {speller.size:,} "
          f"candidate words: {_pct(spelled)}; the word itself for {right / len(typos):.0%}")


if __name__ == "__main__":
    main()
