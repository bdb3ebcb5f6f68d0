"""What swapping in a new generation costs the server: a reload's wall and CPU time, by phase.

Question: when the index or the ranks change on disk, how long does the server work to serve
the new generation, and on what?  Input: each swap the snapshot holder makes (api/snapshot.py)
with its wall seconds, the CPU seconds of the thread that made it, and the seconds of each
phase of opening the index part (``Searcher.open_phases``, indexer/searcher.py: ``segments``
the manifest read and new segments opened, ``state`` the whole-index structures of the new
generation, ``caches`` the old generation's caches taken over).  Output: ``/stats``'
``reload_seconds`` and ``/metrics``' ``websift_snapshot_reload_*``.

Bounded: the wall times of the last RELOAD_TIMES_KEPT swaps give the median; the rest are
running totals.  One instance per holder, updated by the thread that swaps (the reload
thread), read by any request thread under one lock.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Mapping

import numpy as np

RELOAD_TIMES_KEPT = 512  # the recent swaps the median is taken over


class ReloadTimes:
    """Running figures of the swaps one holder made."""

    def __init__(self, kept: int = RELOAD_TIMES_KEPT) -> None:
        self._recent: deque[float] = deque(maxlen=kept)
        self._lock = threading.Lock()
        self.swaps = 0
        self.seconds = 0.0  # wall time of every swap, summed
        self.cpu_seconds = 0.0  # CPU time of the thread that swapped, summed
        self.max_seconds = 0.0
        self.last_seconds = 0.0
        self.phase_seconds: Counter[str] = Counter()  # wall time by phase, summed

    def add(self, seconds: float, cpu_seconds: float, phases: Mapping[str, float]) -> None:
        """One swap made in ``seconds`` (wall) and ``cpu_seconds``, ``phases`` of it."""
        with self._lock:
            self.swaps += 1
            self.seconds += seconds
            self.cpu_seconds += cpu_seconds
            self.max_seconds = max(self.max_seconds, seconds)
            self.last_seconds = seconds
            self._recent.append(seconds)
            self.phase_seconds.update(phases)

    def figures(self) -> dict[str, float]:
        """``count``, ``p50`` (of the recent swaps), ``max``, ``last``, ``total`` and
        ``cpu_total`` seconds, and each phase's total as ``<phase>_total``; 0 before any."""
        with self._lock:
            recent = list(self._recent)
            out = {"count": float(self.swaps),
                   "p50": float(np.median(recent)) if recent else 0.0,
                   "max": self.max_seconds, "last": self.last_seconds,
                   "total": self.seconds, "cpu_total": self.cpu_seconds}
            out.update({f"{k}_total": v for k, v in sorted(self.phase_seconds.items())})
        return out
