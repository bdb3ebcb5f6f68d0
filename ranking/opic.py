"""Adaptive OPIC: on-line page importance (Abiteboul, Preda, Cobena, WWW 2003).

Pure code over numpy arrays, no I/O: the crawler's frontier drives it while fetching, the store
persists its arrays, and ``scripts/evaluation/opic_experiments.py`` replays the paper's section
4.2 with it.

The model (seed: opic-adaptive-online-page-importance.txt):

- Section 2.1, algorithm OPIC: every page i has cash ``C[i]`` and history ``H[i]``; reading page i
  adds ``C[i]`` to its history and to the clock ``G = |H|``, gives ``C[i]`` out in equal shares to
  its children, and sets ``C[i] = 0``.
- Section 1 ("On the Web"): every page also links to one *virtual page*, so each read sends one
  share to the virtual page; a page without out-links (dangling) gives all its cash to it.  The
  virtual page gives its cash back (section 3.3, "Focused crawling and pages discovery"): a
  ``focus_share`` of it to the pages of a focus, if any ("pages that are suspected to contain
  news wires receive some extra cash ... taken from the virtual page"), a ``discovery_share`` of
  the rest to pages not read yet ("when we want to do more discovery... to refresh more pages,
  we do the opposite"), what is left to every live page (refresh).
- Lemma 2.2: the total of all cash (pages plus virtual page) is constant; it is 1 here.
- Section 3.3, Interpolation window of size T: per page only ``H[i]`` (cash over a window T
  before its last read) and ``G[i]`` (the clock at that read) are kept; at a read,
  ``H[i] = H[i] * (T - (G - G[i])) / T + C[i]`` if ``G - G[i] < T``, else ``C[i] * T / (G - G[i])``.
- Section 3.3, "Expanding the graph": a new page starts with a default history, the importance
  of recently introduced pages (a running mean of the histories of pages at their first read).
- Section 3.1, page selection: Greedy (highest cash), Random, Cycle.

Importance of page i now: the interpolation applied at the current clock, divided by T, so the
estimates sum to about 1 over the pages that took part in the last window.

Two states implement it.  :class:`OpicState` pays the virtual page's cash out eagerly, to the
page sets the caller names (O(pages) per payout): the reference, and what
``scripts/evaluation/opic_experiments.py`` replays.  :class:`LazyOpicState` is what a crawl
runs: a payout is O(1), kept as a running *dividend level* per class (every live page, every
unread page, every focus page), and each page remembers the sum of the levels of its classes at
its last update; its cash is its stored base plus what the levels gained since
(:meth:`LazyOpicState.cash_of`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum

import numpy as np

from websift.ranking.errors import RankingError

# Defaults (named settings; crawler/settings.py exposes them to the crawl).
DEFAULT_WINDOW = 4.0  # T, in units of the clock G (G grows by ~2 per full Greedy round, sec. 3.1)
DEFAULT_DISCOVERY_SHARE = 0.5  # share of the virtual page's cash that goes to unread pages
DEFAULT_FOCUS_SHARE = 0.3  # share that goes to the pages of a focus (when a crawl has one)
DEFAULT_HISTORY_DECAY = 0.05  # weight of the newest first-read history in the running mean
TOTAL_CASH = 1.0


class Strategy(StrEnum):
    """Page selection strategies of section 3.1."""

    GREEDY = "greedy"
    RANDOM = "random"
    CYCLE = "cycle"


class OpicError(RankingError):
    """Invalid OPIC parameters (a share outside [0, 1], a window <= 0)."""


class Dividend(IntEnum):
    """The classes the virtual page pays (section 3.3): the index of each one's level."""

    REFRESH = 0  # every live page (known and not dead)
    DISCOVERY = 1  # every live page not read yet
    FOCUS = 2  # every live page of the focus


@dataclass(frozen=True)
class OpicParams:
    window: float = DEFAULT_WINDOW
    discovery_share: float = DEFAULT_DISCOVERY_SHARE
    history_decay: float = DEFAULT_HISTORY_DECAY
    focus_share: float = DEFAULT_FOCUS_SHARE

    def __post_init__(self) -> None:
        if not self.window > 0:
            raise OpicError(f"OPIC window must be > 0, not {self.window}")
        for name in ("discovery_share", "focus_share", "history_decay"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise OpicError(f"OPIC {name.replace('_', ' ')} must be in [0, 1], not {value}")


def payout_shares(
    total: float, params: OpicParams, unread: int, focus: int, live: int
) -> tuple[float, float, float]:
    """How the virtual page's ``total`` splits (section 3.3): (to unread pages, to focus pages,
    to every live page), given how many pages each class holds.

    The focus pages get ``focus_share`` of the total, the unread pages ``discovery_share`` of
    what the focus leaves (of all of it when there is no focus), every live page the rest.  A
    class with no page gets nothing (its share goes to every live page); with no live page
    nothing moves (all zero).  The three amounts sum to ``total``."""
    if live <= 0 or total <= 0:
        return 0.0, 0.0, 0.0
    to_focus = total * params.focus_share if focus > 0 else 0.0
    rest = total - to_focus
    to_unread = rest * params.discovery_share if unread > 0 else 0.0
    return to_unread, to_focus, rest - to_unread


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
    def _children(self, page: int, children: np.ndarray | list[int]) -> np.ndarray:
        """Distinct children without the page itself (self-links carry nothing); pages never
        seen are added."""
        if not (0 <= page < len(self.known)) or not self.known[page]:
            raise KeyError(f"page {page} was never added")
        kids = np.unique(np.asarray(children, dtype=np.int64))
        kids = kids[kids != page]
        if kids.size:
            self._grow(int(kids.max()) + 1)
            unknown = kids[~self.known[kids]]
            if unknown.size:
                self.add_pages(unknown)
        return kids

    def _step(self, page: int, kids: np.ndarray, c: float) -> None:
        """Section 2.1, one read of ``page`` holding cash ``c``: clock, Interpolation history,
        first-read default history, equal shares to ``kids`` and the virtual page."""
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

    def read(self, page: int, children: np.ndarray | list[int]) -> float:
        """Read ``page`` whose followed out-links are ``children``; returns the cash it moved.

        Children are de-duplicated and the page itself is dropped (self-links carry nothing).
        Each child and the virtual page get an equal share of the page's cash (sec. 2.1, 1).
        """
        kids = self._children(page, children)
        c = float(self.cash[page])
        self._step(page, kids, c)
        return c

    def distribute_virtual(
        self, unread: np.ndarray, everyone: np.ndarray, focus: np.ndarray | None = None
    ) -> float:
        """Give the virtual page's cash back: ``focus_share`` to ``focus`` pages,
        ``discovery_share`` of the rest to ``unread`` pages, what is left to ``everyone``
        (section 3.3, 'Focused crawling and pages discovery'); see :func:`payout_shares`.

        Returns the amount given.  With no unread (focus) pages their share goes to everyone;
        with no pages at all nothing moves.
        """
        unread = np.asarray(unread, dtype=np.int64)
        everyone = np.asarray(everyone, dtype=np.int64)
        focused = np.asarray([] if focus is None else focus, dtype=np.int64)
        total = self.virtual_cash
        if total <= 0 or (unread.size == 0 and everyone.size == 0):
            return 0.0
        if everyone.size == 0:  # callers that name unread pages only: all goes to them
            self.cash[unread] += total / unread.size
            self.virtual_cash = 0.0
            return total
        to_unread, to_focus, to_all = payout_shares(
            total, self.params, unread.size, focused.size, everyone.size
        )
        if unread.size:
            self.cash[unread] += to_unread / unread.size
        if focused.size:
            self.cash[focused] += to_focus / focused.size
        self.cash[everyone] += to_all / everyone.size
        self.virtual_cash = 0.0
        return total

    # -------------------------------------------------------------- estimates
    def cash_of(self, ids: np.ndarray) -> np.ndarray:
        """The cash of pages ``ids`` now (here: the ``cash`` array itself)."""
        return self.cash[np.asarray(ids, dtype=np.int64)]

    def total_cash(self) -> float:
        """Lemma 2.2: constant (1.0) at every step."""
        return float(self.cash.sum() + self.virtual_cash)

    def importance(self, ids: np.ndarray | None = None) -> np.ndarray:
        """Current importance estimates: interpolated history at the current clock over T."""
        if ids is None:
            ids = np.arange(len(self.cash))
        idx = np.asarray(ids, dtype=np.int64)
        est = interpolate_history(
            self.history[idx], self.cash_of(idx), self.clock - self.g_last[idx],
            self.params.window,
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
            return int(cand[int(np.argmax(self.cash_of(cand)))])
        if strategy is Strategy.RANDOM:
            gen = rng if rng is not None else np.random.default_rng()
            return int(cand[int(gen.integers(cand.size))])
        ahead = cand[cand >= cycle_position]
        return int(ahead.min() if ahead.size else cand.min())


class LazyOpicState(OpicState):
    """Adaptive OPIC whose virtual page pays out in O(1): running dividends per class.

    The three classes of :class:`Dividend` (every live page, every unread live page, every live
    focus page) each have a *level*: the cash one member has received from the virtual page
    since the crawl began.  A payout of ``x`` to a class of ``n`` pages is ``level += x / n``
    (:meth:`pay_virtual`).  ``cash[i]`` is page i's *base* cash and ``level[i]`` the sum of the
    levels of its classes when it was last updated, so its cash now is

        cash[i] + (sum of the levels of its classes) - level[i]        (:meth:`cash_of`)

    and a payout changes no page.  A page's pending dividends are *materialised* (moved into its
    base) whenever its classes change: at its read (it leaves the unread class), when it dies
    (it leaves every class), when it is revived; focus membership is fixed when it is added.  A
    child's share is added to its base: it needs no materialisation.  Dead pages (failed,
    disallowed) are in no class: they receive nothing, from the virtual page or from links.

    Lemma 2.2 holds for the cash so defined: base plus pending of every page plus the virtual
    page's cash is the constant, up to float rounding (one operation per payout and read).
    """

    def __init__(self, params: OpicParams | None = None, capacity: int = 1024) -> None:
        super().__init__(params, capacity)
        self.level = np.zeros(capacity, dtype=np.float64)
        self.dead = np.zeros(capacity, dtype=bool)
        self.focus = np.zeros(capacity, dtype=bool)
        self.levels = [0.0, 0.0, 0.0]  # by Dividend: cash one member received so far
        self.members = [0, 0, 0]  # by Dividend: pages in the class now

    def _grow(self, size: int) -> None:
        old = len(self.cash)
        super()._grow(size)
        new = len(self.cash)
        if new == old:
            return
        for name in ("level", "dead", "focus"):
            arr = getattr(self, name)
            grown = np.zeros(new, dtype=arr.dtype)
            grown[:old] = arr
            setattr(self, name, grown)

    # -------------------------------------------------------------- classes
    def class_total(self, unread: bool, focus: bool) -> float:
        """Sum of the levels of the classes of a live page (the same arithmetic, in the same
        order, as :meth:`class_totals` and the store's SQL, so a fresh page's pending is 0.0)."""
        lr, ld, lf = self.levels
        return lr + (ld if unread else 0.0) + (lf if focus else 0.0)

    def class_totals(self, ids: np.ndarray) -> np.ndarray:
        """:meth:`class_total` of pages ``ids`` (0 for dead pages)."""
        lr, ld, lf = self.levels
        unread = (self.reads[ids] == 0).astype(np.float64)
        focus = self.focus[ids].astype(np.float64)
        totals = lr + ld * unread + lf * focus
        return np.where(self.dead[ids], 0.0, totals)

    def _total_of(self, page: int) -> float:
        return self.class_total(self.reads[page] == 0, bool(self.focus[page]))

    def _join(self, page: int, sign: int) -> None:
        """Count a live page into (+1) or out of (-1) its classes."""
        self.members[Dividend.REFRESH] += sign
        if self.reads[page] == 0:
            self.members[Dividend.DISCOVERY] += sign
        if self.focus[page]:
            self.members[Dividend.FOCUS] += sign

    def materialise(self, page: int) -> None:
        """Move page's pending dividends into its base cash (its cash is unchanged)."""
        if self.dead[page]:
            return
        total = self._total_of(page)
        self.cash[page] += total - self.level[page]
        self.level[page] = total

    def materialise_all(self) -> None:
        """:meth:`materialise` every known page at once (vectorised)."""
        ids = np.flatnonzero(self.known & ~self.dead)
        totals = self.class_totals(ids)
        self.cash[ids] += totals - self.level[ids]
        self.level[ids] = totals

    def recount(self) -> None:
        """Class sizes from the arrays (after a bulk load)."""
        live = self.known & ~self.dead
        self.members = [
            int(live.sum()),
            int((live & (self.reads == 0)).sum()),
            int((live & self.focus).sum()),
        ]

    # -------------------------------------------------------------- pages
    def add_pages(self, ids: np.ndarray | list[int], focus: np.ndarray | None = None) -> None:
        """Add newly discovered pages (unread, live): no cash, the default history, clock now
        (sec. 3.3); ``focus`` marks the ones of the focus (for good)."""
        idx = np.asarray(ids, dtype=np.int64)
        if idx.size == 0:
            return
        self._grow(int(idx.max()) + 1)
        flags = np.zeros(idx.size, dtype=bool) if focus is None else np.asarray(focus, dtype=bool)
        fresh = ~self.known[idx]
        idx, flags = idx[fresh], flags[fresh]
        idx, first = np.unique(idx, return_index=True)
        flags = flags[first]
        if idx.size == 0:
            return
        self.known[idx] = True
        self.history[idx] = self.default_history
        self.g_last[idx] = self.clock
        self.focus[idx] = flags
        self.level[idx] = self.class_totals(idx)
        self.members[Dividend.REFRESH] += idx.size
        self.members[Dividend.DISCOVERY] += idx.size
        self.members[Dividend.FOCUS] += int(flags.sum())

    def add_page(self, page: int, focus: bool = False) -> bool:
        """:meth:`add_pages` for one page, without numpy temporaries (the crawler's hot path).
        Returns False when the page was known already."""
        if page >= len(self.known):
            self._grow(page + 1)
        if self.known[page]:
            return False
        self.known[page] = True
        self.history[page] = self.default_history
        self.g_last[page] = self.clock
        self.focus[page] = focus
        self.level[page] = self.class_total(True, focus)
        self._join(page, +1)
        return True

    def read(self, page: int, children: np.ndarray | list[int]) -> float:
        """Section 2.1 on the page's cash now (base plus pending dividends); dead children get
        nothing (their share goes to the other children and the virtual page)."""
        kids = self._children(page, children)
        if kids.size:
            kids = kids[~self.dead[kids]]
        self.materialise(page)
        first_read = self.reads[page] == 0
        c = float(self.cash[page])
        self._step(page, kids, c)
        if first_read and not self.dead[page]:
            self.members[Dividend.DISCOVERY] -= 1
        # pending 0 from here on (the read materialised the rest and emptied the base)
        self.level[page] = 0.0 if self.dead[page] else self._total_of(page)
        return c

    def kill(self, page: int) -> None:
        """The page failed for good: its cash goes to the virtual page, it leaves every class."""
        if self.dead[page] or not self.known[page]:
            return
        self.materialise(page)
        self._join(page, -1)
        self.virtual_cash += float(self.cash[page])
        self.cash[page] = 0.0
        self.level[page] = 0.0
        self.dead[page] = True

    def revive(self, page: int) -> None:
        """A dead page is live again (it joins its classes with no cash)."""
        if not self.dead[page]:
            return
        self.dead[page] = False
        self._join(page, +1)
        self.level[page] = self._total_of(page)

    def set_cash(self, page: int, amount: float) -> None:
        """Set a page's cash, taking the difference from the virtual page (so Lemma 2.2 holds;
        the virtual page's cash may go below 0).  For experiments and tests."""
        self.materialise(page)
        self.virtual_cash -= amount - float(self.cash[page])
        self.cash[page] = amount

    def grant(self, page: int, amount: float, advance_limit: float = 0.0) -> float:
        """Move ``amount`` of cash from the virtual page to a live page (section 3.3: pages
        "suspected to contain news ... receive some extra cash ... taken from the virtual
        page").  The virtual page may go below 0 by at most ``advance_limit`` (an advance its
        next payouts repay); the amount is cut to fit.  Lemma 2.2 holds.  Returns what moved."""
        if not (0 <= page < len(self.known)) or not self.known[page] or self.dead[page]:
            return 0.0
        amount = min(amount, self.virtual_cash + advance_limit)
        if not amount > 0:
            return 0.0
        self.virtual_cash -= amount
        self.cash[page] += amount  # base cash: the page's pending dividends are unchanged
        return amount

    # -------------------------------------------------------------- the virtual page
    def distribute_virtual(
        self, unread: np.ndarray, everyone: np.ndarray, focus: np.ndarray | None = None
    ) -> float:
        raise TypeError("LazyOpicState pays its classes: call pay_virtual()")

    def pay_virtual(self, discovery_share: float | None = None) -> float:
        """Give the virtual page's cash back to the classes (section 3.3; shares as
        :func:`payout_shares`), in O(1).  ``discovery_share`` overrides the parameter's (a
        refresh-only run gives unread pages nothing).  Returns the amount given."""
        params = self.params
        if discovery_share is not None and discovery_share != params.discovery_share:
            params = OpicParams(params.window, discovery_share, params.history_decay,
                                params.focus_share)
        live, unread, focus = self.members
        total = self.virtual_cash
        to_unread, to_focus, to_all = payout_shares(total, params, unread, focus, live)
        if live <= 0 or total <= 0:
            return 0.0
        if unread:
            self.levels[Dividend.DISCOVERY] += to_unread / unread
        if focus:
            self.levels[Dividend.FOCUS] += to_focus / focus
        self.levels[Dividend.REFRESH] += to_all / live
        self.virtual_cash = 0.0
        return total

    # -------------------------------------------------------------- estimates
    def pending(self, ids: np.ndarray) -> np.ndarray:
        """Dividends pages ``ids`` have not yet materialised."""
        idx = np.asarray(ids, dtype=np.int64)
        return np.where(self.dead[idx], 0.0, self.class_totals(idx) - self.level[idx])

    def cash_of(self, ids: np.ndarray) -> np.ndarray:
        idx = np.asarray(ids, dtype=np.int64)
        return self.cash[idx] + self.pending(idx)

    def cash_of_page(self, page: int) -> float:
        """:meth:`cash_of` one page, without numpy temporaries."""
        if self.dead[page] or not self.known[page]:
            return float(self.cash[page])
        return float(self.cash[page]) + (self._total_of(page) - float(self.level[page]))

    def total_cash(self) -> float:
        ids = np.flatnonzero(self.known)
        return float(self.cash_of(ids).sum() + self.virtual_cash)
