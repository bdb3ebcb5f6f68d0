"""A query-result cache: the answers to recent searches, keyed by everything that decides them.

Search engines cache results because query streams repeat (Baeza-Yates et al., "The impact of
caching on search engines", SIGIR 2007).  The key holds the index and ranks generations, so a
hot reload makes every older entry unreachable at once (they age out of the LRU); a topic change
is a new ranks generation too.  Entries are immutable ``Outcome`` objects shared by readers.

One instance per application (``app.state``), never module state; size 0 turns it off.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class ResultCache(Generic[V]):
    """A thread-safe LRU map of at most ``size`` entries; counts hits and misses."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        if self.size <= 0:
            return None
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Hashable, value: V) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
