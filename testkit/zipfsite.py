"""A generated corpus for query benchmarks, apart from genweb's word and link model.

Pages of ``hosts`` hosts, ``pages_per_host`` each.  Words: pronounceable syllable words ranked
by a Zipf law of exponent ``s`` over a vocabulary of ``vocab`` words (rank 1 the most common);
document lengths log-normal (a few words to a few thousand); each host has a handful of
boilerplate phrases repeated on many of its pages, and every page may repeat phrases of its own
text.  No links (a query benchmark needs text only).  Deterministic for a seed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["qua", "shi", "tho", "xen"]


@dataclass(frozen=True)
class ZipfPage:
    host: str
    url: str
    title: str
    body: str


def vocabulary(size: int, seed: int) -> list[str]:
    """``size`` distinct words of 2-4 syllables, in Zipf rank order (a fixed draw for a seed)."""
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < size:
        n = int(rng.integers(2, 5))
        w = "".join(SYLLABLES[i] for i in rng.integers(len(SYLLABLES), size=n))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


class ZipfSite:
    """The corpus: ``pages()`` yields each page, host by host, in the same order each time."""

    def __init__(self, hosts: int = 150, pages_per_host: int = 1000, vocab: int = 50_000,
                 s: float = 1.07, seed: int = 1) -> None:
        self.hosts, self.pages_per_host, self.seed = hosts, pages_per_host, seed
        self.words = vocabulary(vocab, seed)
        p = 1.0 / np.arange(1, vocab + 1) ** s
        self.cdf = np.cumsum(p / p.sum())

    def _draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.minimum(np.searchsorted(self.cdf, rng.random(n)), len(self.words) - 1)

    def pages(self) -> Iterator[ZipfPage]:
        words = self.words
        for h in range(self.hosts):
            rng = np.random.default_rng((self.seed, h))
            host = f"{words[int(self._draw(rng, 1)[0]) + 40]}{h}.example"
            boiler = [" ".join(words[i] for i in self._draw(rng, int(rng.integers(3, 8))))
                      for _ in range(5)]
            for p in range(self.pages_per_host):
                n = int(min(max(rng.lognormal(5.3, 0.9), 8), 4000))
                ids = self._draw(rng, n)
                text = [words[i] for i in ids]
                for _ in range(int(rng.integers(0, 3))):  # a phrase of its own said again
                    if n > 20:
                        a = int(rng.integers(n - 6))
                        text.insert(int(rng.integers(n)), " ".join(text[a: a + int(rng.integers(2, 5))]))
                if rng.random() < 0.6:  # the host's boilerplate
                    text.append(boiler[int(rng.integers(len(boiler)))])
                title = " ".join(words[i] for i in self._draw(rng, int(rng.integers(2, 7))))
                yield ZipfPage(host, f"http://{host}/p/{p}", title, " ".join(text))
