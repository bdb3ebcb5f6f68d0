"""Every collection of this process's cyclic garbage collector, timed by generation.

A collection holds the GIL while it walks the objects of its generation and the younger ones,
so its pauses are what a process's other threads wait through, and their sum is CPU the
collector took from the process's own work.  :func:`gc_pauses` installs one timer per process
(a ``gc.callbacks`` hook); the server shows it in ``/stats`` and ``/metrics``
(api/gc_policy.py), a crawl in its live figures (crawler/session.py).
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class GenerationPauses:
    """The collections of one generation: how many, their seconds in all, the longest."""

    count: int = 0
    seconds: float = 0.0
    longest: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {"count": self.count, "seconds": round(self.seconds, 6),
                "longest_ms": round(self.longest * 1000.0, 3)}


@dataclass(eq=False)
class GcPauses:
    """Every collection this process runs, timed by generation (``gc.callbacks``)."""

    generations: list[GenerationPauses] = field(
        default_factory=lambda: [GenerationPauses() for _ in range(3)])
    _started: float = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        # Runs inside the collector, GIL held: one clock read each side, no allocation to
        # speak of.  Collections do not nest, so one start time serves.
        if phase == "start":
            self._started = time.perf_counter()
            return
        took = time.perf_counter() - self._started
        gen = self.generations[min(int(info["generation"]), 2)]
        gen.count += 1
        gen.seconds += took
        gen.longest = max(gen.longest, took)

    def as_dict(self) -> dict[str, Any]:
        return {str(i): g.as_dict() for i, g in enumerate(self.generations)}


_PAUSES = GcPauses()
_PAUSES_LOCK = threading.Lock()


def gc_pauses() -> GcPauses:
    """This process's collection timer, installed in ``gc.callbacks`` on first use."""
    with _PAUSES_LOCK:
        if not any(hook is _PAUSES for hook in gc.callbacks):
            gc.callbacks.append(_PAUSES)
    return _PAUSES
