"""The server's cyclic garbage collector: what a full collection walks, and its pauses timed.

A collection holds the GIL while it walks the objects of its generation and the younger ones;
a full one (generation 2) walks every object the collector tracks, and no search runs
meanwhile.  CPython runs one when the objects that reached generation 2 since the last have
grown by a quarter of those there.  A server under ``websift up`` swaps in a new index
generation about every second, and its caches take in and let go of entries all the time (a
list decoded for the new segment, a result, a stored text): those survive into generation 2,
so a full collection came every 20-30 s and walked the caches whole, 120,000-150,000
objects (the postings cache's lists, the result cache's hits), 30-250 ms each on the 2-core
machine under the crawl's load (docs/query-performance.md, "The garbage collector").  None of
them found garbage: the caches' entries and a snapshot's structures are freed by their
reference counts (tests/api/test_gc_policy.py: a retired searcher goes with the collector
off).

So :class:`HeapSettler` keeps what has lived through a swap out of the collector's reach: after
each swap (and, without one, at a check every ``SETTLE_SECONDS`` or once the young heap grew by
``SETTLE_GROWTH``) the reload thread collects what is not frozen yet, young and few, then
freezes what is left (``gc.freeze``), as ``freeze_imported`` (api/app.py) does for the imports.
A frozen object that its references let go of is still freed at once; what freezing costs is a
cycle among frozen objects that becomes garbage later (a request's exception caught in flight,
say): it is kept until the next reclaim, every ``RECLAIM_SECONDS``, which unfreezes everything
and runs one full collection.  core/gc_pauses.py times every collection (a ``gc.callbacks``
hook): ``/stats`` ``gc.pauses`` and ``/metrics`` ``websift_gc_pause_seconds``.
"""

from __future__ import annotations

import gc
import time
from typing import Any

SETTLE_SECONDS = 60.0  # without a swap, a check freezes what survived this long
# ... or sooner, once generation 1 has been collected this many times since the last full
# collection (``gc.get_count()[2]``; in CPython 3.11-3.13 one such collection per about 7,000
# tracked objects made and kept): a settle's collection then walks tens of thousands of young
# objects (about 10 ms), not the hundreds of thousands a cache takes in over a minute of a
# busy server without swaps (130 ms).
SETTLE_GROWTH = 3
RECLAIM_SECONDS = 3600.0  # every this long: unfreeze, one full collection, freeze again


class HeapSettler:
    """Freezes what outlived a swap (module docstring); called by the reload thread only.

    ``clock``: seconds, monotonic (a test's own clock)."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        now = clock()
        self._settled = now
        self._reclaimed = now
        self.settles = 0
        self.reclaims = 0

    def after_check(self, swapped: bool) -> None:
        """After a reload check: settle when it swapped, ``SETTLE_SECONDS`` passed or the
        young heap grew by ``SETTLE_GROWTH``; reclaim the frozen objects every
        ``RECLAIM_SECONDS``."""
        now = self._clock()
        if now - self._reclaimed >= RECLAIM_SECONDS:
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self._reclaimed = self._settled = now
            self.reclaims += 1
        elif swapped or now - self._settled >= SETTLE_SECONDS \
                or gc.get_count()[2] >= SETTLE_GROWTH:
            gc.collect()  # what is not frozen: what was made since the last settle
            gc.freeze()
            self._settled = now
            self.settles += 1

    def as_dict(self) -> dict[str, int]:
        return {"settles": self.settles, "reclaims": self.reclaims}
