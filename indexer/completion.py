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
SHORT_PREFIX_CHARS = 3  # prefixes up to this long have their heaviest keys kept ready
KEPT = 10  # how many: the most /suggest returns
WIDE_RANGE = 512  # a prefix matching fewer keys is answered from the keys themselves
BLOCK = 256  # keys per block whose heaviest KEPT are kept for wider ranges


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
        # Each block's KEPT heaviest keys: a wide range is its two edges' keys and the kept
        # keys of the blocks between (a 25th of the range).
        n = len(self.keys)
        nb = (n + BLOCK - 1) // BLOCK
        padded = np.full(nb * BLOCK, -np.inf)
        padded[:n] = self.weights
        width = min(KEPT, BLOCK)
        part = np.argpartition(-padded.reshape(nb, BLOCK), width - 1, axis=1)[:, :width]
        self._block_top = part + (np.arange(nb) * BLOCK)[:, None]
        # The short prefixes match the widest ranges (one letter: a 26th of the keys): their
        # answers are computed once here, so no call scans more than WIDE_RANGE keys' weights
        # unless it asks for more than KEPT.
        self._ready: dict[str, list[int]] = {}
        for n in range(1, SHORT_PREFIX_CHARS + 1):
            for prefix in sorted({k[:n] for k in self.keys if len(k) >= n}):
                lo, hi = self._bounds(prefix)
                if hi - lo > WIDE_RANGE:
                    self._ready[prefix] = self._top(lo, hi, KEPT)

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

    def _bounds(self, prefix: str) -> tuple[int, int]:
        lo = bisect_left(self.keys, prefix)
        return lo, bisect_left(self.keys, prefix + "\U0010ffff", lo)

    def _range(self, prefix: str, k: int) -> list[int]:
        ready = self._ready.get(prefix)
        if ready is not None and k <= KEPT:
            return ready[:k]
        return self._top(*self._bounds(prefix), k)

    def _top(self, lo: int, hi: int, k: int) -> list[int]:
        if hi - lo <= k:
            idx = np.arange(lo, hi)
        elif hi - lo > WIDE_RANGE and k <= KEPT:
            b0, b1 = -(-lo // BLOCK), hi // BLOCK
            cand = np.concatenate([np.arange(lo, b0 * BLOCK), self._block_top[b0:b1].ravel(),
                                   np.arange(b1 * BLOCK, hi)])
            cand = cand[cand < len(self.keys)]
            idx = cand[np.argpartition(-self.weights[cand], k - 1)[:k]]
        else:
            part = np.argpartition(-self.weights[lo:hi], k - 1)[:k]
            idx = part + lo
        order = sorted(idx.tolist(), key=lambda i: (-self.weights[i], self.keys[i]))
        return order

    def complete(self, query: str, k: int = 8) -> list[str]:
        """Up to ``k`` completions of ``query``, heaviest first."""
        whole, words = self.candidates(query, k)
        return completions(query, k, whole, words)

    def candidates(self, query: str, n: int) -> tuple[list[Entry], list[Entry]]:
        """The heaviest ``n`` entries (key, shown, weight) whose key starts with the whole
        folded ``query``, and of a query of several words those of single words starting with
        its last word (heaviest first): what :func:`completions` chooses from.  Several
        indexes' candidates, their weights summed per key, complete as one index over them
        all would, as far as each gave enough of them (api/fanout.py)."""
        key = _key(query)
        if not key or n <= 0:
            return [], []
        head, _, last = key.rpartition(" ")
        whole = [self._entry(i) for i in self._range(key, n)]
        words = [self._entry(i) for i in self._range(last, n)
                 if " " not in self.keys[i]] if head else []
        return whole, words

    def _entry(self, i: int) -> Entry:
        return self.keys[i], self.shown[i], float(self.weights[i])


Entry = tuple[str, str, float]  # (folded key, what is shown, weight)


def completions(query: str, k: int, whole: list[Entry], words: list[Entry]) -> list[str]:
    """Up to ``k`` completions of ``query`` from :meth:`Completer.candidates`' lists: the
    keys that start with the whole query, then the query's words before its last with each
    word that completes the last (as typed), heaviest first in each list; no key twice and
    not the query itself."""
    key = _key(query)
    if not key or k <= 0:
        return []
    head = key.rpartition(" ")[0]
    typed = query.strip().rsplit(None, 1)[0] + " " if head else ""
    out: list[str] = []
    seen: set[str] = set()
    for text in [e[1] for e in whole] + [typed + e[1] for e in words]:
        folded = _key(text)
        if folded not in seen and folded != key:
            seen.add(folded)
            out.append(text)
        if len(out) == k:
            break
    return out


def summed(lists: Iterable[list[Entry]], n: int) -> list[Entry]:
    """Several indexes' candidate lists as one: each key's weights summed, shown as the
    heaviest part shows it, the heaviest ``n`` (ties by key), as the completer's order."""
    weight: dict[str, float] = {}
    shown: dict[str, tuple[float, str]] = {}
    for entries in lists:
        for key, text, w in entries:
            weight[key] = weight.get(key, 0.0) + w
            if key not in shown or w > shown[key][0]:
                shown[key] = (w, text)
    ranked = sorted(weight, key=lambda k: (-weight[k], k))[:n]
    return [(k, shown[k][1], weight[k]) for k in ranked]
