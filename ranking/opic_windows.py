"""The other window policies of Adaptive OPIC (section 3.3): Fixed Window and Variable Window.

:class:`ranking.opic.OpicState` moves the cash and keeps the *Interpolation* history, the policy
the crawler uses.  The policies here only keep a different history of the same reads, so an
experiment can feed every read of one OPIC run to several of them and compare their estimates
(``scripts/evaluation/opic_experiments.py``, the paper's Figures 4 and 6).  A *measure* is the pair
(C, G): the cash a page had when it was read and the clock G = |H| just after that read.

- Variable Window of k measures: "for every page i, we store the value of cash C_t[i] and the
  global value G_t for the last k times this page was crawled".  Importance of i now:
  (cash of the kept measures + current cash) / (G now - G of the read before the oldest kept
  measure), the clock time over which that cash was gathered.
- Fixed Window of time T: "we store ... for all times it was crawled since (now - T)".
  Importance: (cash of the measures in the window + current cash) / T.  The *Improved* Fixed
  Window keeps at least ``min_measures`` measures even when older than T (section 4.2: "forces
  each page to have a minimum number of measures"); when it falls back on them it divides by
  the time they span, as the Variable Window does.

Estimates are normalised to sum 1 over the pages asked for.  Plain Python per read (a deque of
measures per page); estimates are computed for all pages at once.
"""

from __future__ import annotations

from collections import deque

import numpy as np


class VariableWindow:
    """The last ``k`` measures of every page (section 3.3)."""

    def __init__(self, n: int, k: int) -> None:
        if k < 1:
            raise ValueError(f"a variable window keeps at least 1 measure, got {k}")
        self.k = k
        # k + 1 clock values: the oldest one is when the oldest kept cash started to gather
        self._cash: list[deque[float]] = [deque(maxlen=k) for _ in range(n)]
        self._clock: list[deque[float]] = [deque([0.0], maxlen=k + 1) for _ in range(n)]

    def record(self, page: int, cash: float, clock: float) -> None:
        self._cash[page].append(cash)
        self._clock[page].append(clock)

    def measures(self) -> float:
        """Average number of measures stored per page (the paper's Figure 5)."""
        return float(np.mean([len(c) for c in self._cash]))

    def estimate(self, current_cash: np.ndarray, clock: float) -> np.ndarray:
        n = len(self._cash)
        gathered = np.fromiter((sum(c) for c in self._cash), dtype=np.float64, count=n)
        since = np.fromiter((c[0] for c in self._clock), dtype=np.float64, count=n)
        span = np.maximum(clock - since, 1e-300)
        est = (gathered + current_cash[:n]) / span
        return est / est.sum()


class FixedWindow:
    """Measures of the last ``window`` units of clock (section 3.3), optionally at least
    ``min_measures`` of them (the Improved Fixed Window of section 4.2)."""

    def __init__(self, n: int, window: float, min_measures: int = 0) -> None:
        if window <= 0:
            raise ValueError(f"window must be positive, got {window}")
        self.window = window
        self.min_measures = min_measures
        self._measures: list[deque[tuple[float, float]]] = [deque() for _ in range(n)]
        self._before: list[float] = [0.0] * n  # clock of the read before the oldest kept one

    def record(self, page: int, cash: float, clock: float) -> None:
        kept = self._measures[page]
        kept.append((cash, clock))
        horizon = clock - self.window
        while len(kept) > self.min_measures and kept[0][1] <= horizon:
            self._before[page] = kept.popleft()[1]

    def measures(self) -> float:
        return float(np.mean([len(m) for m in self._measures]))

    def estimate(self, current_cash: np.ndarray, clock: float) -> np.ndarray:
        n = len(self._measures)
        horizon = clock - self.window
        est = np.empty(n, dtype=np.float64)
        for i, kept in enumerate(self._measures):
            inside = [c for c, g in kept if g > horizon]
            if len(inside) >= self.min_measures:
                est[i] = (sum(inside) + current_cash[i]) / self.window
            else:  # too few in the window: the kept measures over the time they span
                span = max(clock - self._before[i], 1e-300)
                est[i] = (sum(c for c, _ in kept) + current_cash[i]) / span
        return est / est.sum()
