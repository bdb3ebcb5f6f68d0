"""Prefix completions for the search box: titles and frequent words of the index.

The keys are folded (NFKC, case and diacritics folded, as queries are), sorted, with a weight
each: a title weighs how many pages carry it plus the document frequency of its first word's
term scaled down, a word its document frequency.  A prefix is two binary searches into the
sorted keys; the heaviest ``k`` of the range are taken with ``numpy.argpartition``, so a call
costs O(log n + range) in C, a few hundred microseconds even for a one-letter prefix over
millions of keys (scripts/benchmarks/bench_suggest.py).

The last word of a query of several words is completed and the words before it kept, beside
the titles that start with the whole query.  Built per index snapshot, memory only.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable

import numpy as np

from websift.indexer.folding import fold_term, fold_text

MAX_TITLE_CHARS = 120  # longer titles are not offered as completions
MIN_WORD_DF = 2  # a word in fewer documents is not offered
TITLE_WEIGHT = 4.0  # a title counts as this many documents holding a word


def _key(text: str) -> str:
    return " ".join(fold_term(w) for w in fold_text(text).split())


class Completer:
    """Sorted folded keys, what to show for each, and their weights."""

    def __init__(self, entries: Iterable[tuple[str, str, float]]) -> None:
        """``entries``: (key, shown, weight); the heaviest entry of a key is kept."""
        best: dict[str, tuple[float, str]] = {}
        for key, shown, weight in entries:
            if not key:
                continue
            old = best.get(key)
            if old is None or weight > old[0]:
                best[key] = (weight, shown)
        self.keys = sorted(best)
        self.shown = [best[k][1] for k in self.keys]
        self.weights = np.array([best[k][0] for k in self.keys], dtype=np.float64)

    @classmethod
    def from_index(cls, titles: Iterable[str], words: dict[str, int]) -> Completer:
        """From the pages' titles and words with their document frequencies (plain words only:
        the terms that read as typed, ``asyncio``, ``os.path``)."""
        counts = Counter(t.strip() for t in titles if t.strip())

        def entries() -> Iterable[tuple[str, str, float]]:
            for title, n in counts.items():
                if len(title) <= MAX_TITLE_CHARS:
                    yield _key(title), title, TITLE_WEIGHT * n
            for word, df in words.items():
                if df >= MIN_WORD_DF:
                    yield word, word, float(df)

        return cls(entries())

    def __len__(self) -> int:
        return len(self.keys)

    def _range(self, prefix: str, k: int) -> list[int]:
        lo = bisect_left(self.keys, prefix)
        hi = bisect_left(self.keys, prefix + "\U0010ffff", lo)
        if hi - lo <= k:
            idx = np.arange(lo, hi)
        else:
            part = np.argpartition(-self.weights[lo:hi], k - 1)[:k]
            idx = part + lo
        order = sorted(idx.tolist(), key=lambda i: (-self.weights[i], self.keys[i]))
        return order

    def complete(self, query: str, k: int = 8) -> list[str]:
        """Up to ``k`` completions of ``query``, heaviest first."""
        key = _key(query)
        if not key or k <= 0:
            return []
        out: list[str] = []
        seen: set[str] = set()
        head, _, last = key.rpartition(" ")
        typed = query.strip().rsplit(None, 1)[0] + " " if head else ""
        whole = [self.shown[i] for i in self._range(key, k)]
        words = [typed + self.shown[i] for i in self._range(last, k)
                 if " " not in self.keys[i]] if head else []
        for text in whole + words:
            folded = _key(text)
            if folded not in seen and folded != key:
                seen.add(folded)
                out.append(text)
            if len(out) == k:
                break
        return out
