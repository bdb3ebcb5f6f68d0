"""Adaptive OPIC: on-line page importance (Abiteboul, Preda, Cobena, WWW 2003).

Pure code over numpy arrays, no I/O: the crawler's frontier drives it while fetching, the store
persists its arrays, and ``scripts/opic_experiments.py`` replays the paper's section 4.2 with it.

The model (seed: opic-adaptive-online-page-importance.txt):

- Section 2.1, algorithm OPIC: every page i has cash ``C[i]`` and history ``H[i]``; reading page i
  adds ``C[i]`` to its history and to the clock ``G = |H|``, gives ``C[i]`` out in equal shares to
  its children, and sets ``C[i] = 0``.
- Section 1 ("On the Web"): every page also links to one *virtual page*, so each read sends one
  share to the virtual page; a page without out-links (dangling) gives all its cash to it.  The
  virtual page gives its cash back (section 3.3, "Focused crawling and pages discovery"): a
  ``discovery_share`` of it to pages not read yet, the rest to every known page.
- Lemma 2.2: the total of all cash (pages plus virtual page) is constant; it is 1 here.
- Section 3.3, Interpolation window of size T: per page only ``H[i]`` (cash over a window T
  before its last read) and ``G[i]`` (the clock at that read) are kept; at a read,
  ``H[i] = H[i] * (T - (G - G[i])) / T + C[i]`` if ``G - G[i] < T``, else ``C[i] * T / (G - G[i])``.
- Section 3.3, "Expanding the graph": a new page starts with a default history, the importance
  of recently introduced pages (a running mean of the histories of pages at their first read).
- Section 3.1, page selection: Greedy (highest cash), Random, Cycle.

Importance of page i now: the interpolation applied at the current clock, divided by T, so the
estimates sum to about 1 over the pages that took part in the last window.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

# Defaults (named settings; crawler/settings.py exposes them to the crawl).
DEFAULT_WINDOW = 4.0  # T, in units of the clock G (G grows by ~2 per full Greedy round, sec. 3.1)
DEFAULT_DISCOVERY_SHARE = 0.5  # share of the virtual page's cash that goes to unread pages
DEFAULT_HISTORY_DECAY = 0.05  # weight of the newest first-read history in the running mean
TOTAL_CASH = 1.0


class Strategy(StrEnum):
    """Page selection strategies of section 3.1."""

    GREEDY = "greedy"
    RANDOM = "random"
    CYCLE = "cycle"


@dataclass(frozen=True)
class OpicParams:
    window: float = DEFAULT_WINDOW
    discovery_share: float = DEFAULT_DISCOVERY_SHARE
    history_decay: float = DEFAULT_HISTORY_DECAY


def interpolate_history(
    history: np.ndarray | float, cash: np.ndarray | float, elapsed: np.ndarray | float, window: float
) -> np.ndarray:
    """The Interpolation window's history update (section 3.3, Figure 1), vectorised.

    ``history``: H[i] at the last read; ``cash``: C[i], gathered since; ``elapsed``: G - G[i].
    """
    h = np.asarray(history, dtype=np.float64)
    c = np.asarray(cash, dtype=np.float64)
    e = np.asarray(elapsed, dtype=np.float64)
    inside = e < window
    safe_e = np.where(e > 0, e, 1.0)
    return np.where(inside, h * (window - e) / window + c, c * window / safe_e)


class OpicState:
    """Adaptive OPIC with the Interpolation window over a growing set of integer page IDs.

    IDs are the crawl store's URL IDs (dense, from 1); arrays grow as pages are added.
    ``known[i]`` is true for every page added; ``reads[i]`` counts its reads.
    """

    def __init__(self, params: OpicParams | None = None, capacity: int = 1024) -> None:
        self.params = params or OpicParams()
        self.clock = 0.0  # G
        self.virtual_cash = TOTAL_CASH  # all cash starts on the virtual page
        self.default_history = 0.0  # running mean of histories at first read
        self.cash = np.zeros(capacity, dtype=np.float64)
        self.history = np.zeros(capacity, dtype=np.float64)
        self.g_last = np.zeros(capacity, dtype=np.float64)
        self.reads = np.zeros(capacity, dtype=np.int64)
        self.known = np.zeros(capacity, dtype=bool)

    # -------------------------------------------------------------- growth
    def _grow(self, size: int) -> None:
        old = len(self.cash)
        if size <= old:
            return
        new = max(size, 2 * old)
        for name in ("cash", "history", "g_last", "reads", "known"):
            arr = getattr(self, name)
            grown = np.zeros(new, dtype=arr.dtype)
            grown[:old] = arr
            setattr(self, name, grown)

    def add_pages(self, ids: np.ndarray | list[int]) -> None:
        """Add newly discovered pages: no cash, the default history, clock now (sec. 3.3)."""
        idx = np.asarray(ids, dtype=np.int64)
        if idx.size == 0:
            return
        self._grow(int(idx.max()) + 1)
        new = idx[~self.known[idx]]
        self.known[new] = True
        self.history[new] = self.default_history
        self.g_last[new] = self.clock

    # -------------------------------------------------------------- the algorithm
    def read(self, page: int, children: np.ndarray | list[int]) -> float:
        """Read ``page`` whose followed out-links are ``children``; returns the cash it moved.

        Children are de-duplicated and the page itself is dropped (self-links carry nothing).
        Each child and the virtual page get an equal share of the page's cash (sec. 2.1, 1).
        """
        if not (0 <= page < len(self.known)) or not self.known[page]:
            raise KeyError(f"page {page} was never added")
        kids = np.unique(np.asarray(children, dtype=np.int64))
        kids = kids[kids != page]
        if kids.size:
            self._grow(int(kids.max()) + 1)
            unknown = kids[~self.known[kids]]
            if unknown.size:
                self.add_pages(unknown)
        c = float(self.cash[page])
        self.clock += c
        elapsed = self.clock - self.g_last[page]
        first_read = self.reads[page] == 0
        self.history[page] = float(
            interpolate_history(self.history[page], c, elapsed, self.params.window)
        )
        self.g_last[page] = self.clock
        self.reads[page] += 1
        if first_read:
            w = self.params.history_decay
            self.default_history = (1 - w) * self.default_history + w * float(self.history[page])
        share = c / (kids.size + 1)
        if kids.size:
            self.cash[kids] += share
        # the virtual page takes its share plus the rounding remainder, so the total is exact
        self.virtual_cash += c - share * kids.size
        self.cash[page] = 0.0
        return c

    def distribute_virtual(self, unread: np.ndarray, everyone: np.ndarray) -> float:
        """Give the virtual page's cash back: ``discovery_share`` to ``unread`` pages, the rest
        to ``everyone`` (section 3.3, 'Focused crawling and pages discovery').

        Returns the amount given.  With no unread pages all goes to everyone; with no pages at
        all nothing moves.
        """
        unread = np.asarray(unread, dtype=np.int64)
        everyone = np.asarray(everyone, dtype=np.int64)
        total = self.virtual_cash
        if total <= 0 or (unread.size == 0 and everyone.size == 0):
            return 0.0
        to_unread = total * self.params.discovery_share if unread.size else 0.0
        if everyone.size == 0:
            to_unread = total
        to_all = total - to_unread
        if unread.size:
            self.cash[unread] += to_unread / unread.size
        if everyone.size:
            self.cash[everyone] += to_all / everyone.size
        self.virtual_cash = 0.0
        return total

    # -------------------------------------------------------------- estimates
    def total_cash(self) -> float:
        """Lemma 2.2: constant (1.0) at every step."""
        return float(self.cash.sum() + self.virtual_cash)

    def importance(self, ids: np.ndarray | None = None) -> np.ndarray:
        """Current importance estimates: interpolated history at the current clock over T."""
        if ids is None:
            ids = np.arange(len(self.cash))
        idx = np.asarray(ids, dtype=np.int64)
        est = interpolate_history(
            self.history[idx], self.cash[idx], self.clock - self.g_last[idx], self.params.window
        )
        return np.where(self.known[idx], est / self.params.window, 0.0)

    # -------------------------------------------------------------- selection (sec. 3.1)
    def select(
        self,
        candidates: np.ndarray,
        strategy: Strategy = Strategy.GREEDY,
        rng: np.random.Generator | None = None,
        cycle_position: int = 0,
    ) -> int:
        """Pick the next page among ``candidates`` (IDs politeness allows now).

        Greedy: highest cash (ties: lowest ID).  Random: uniform.  Cycle: the first candidate
        with ID >= ``cycle_position``, wrapping around (a fixed order over IDs).
        """
        cand = np.asarray(candidates, dtype=np.int64)
        if cand.size == 0:
            raise ValueError("no candidate pages")
        if strategy is Strategy.GREEDY:
            return int(cand[int(np.argmax(self.cash[cand]))])
        if strategy is Strategy.RANDOM:
            gen = rng if rng is not None else np.random.default_rng()
            return int(cand[int(gen.integers(cand.size))])
        ahead = cand[cand >= cycle_position]
        return int(ahead.min() if ahead.size else cand.min())
