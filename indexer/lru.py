"""A bounded least-recently-used cache, shared by the threads that search one snapshot.

The query side keeps two: decoded postings (and position keys) of recent terms, and the
lower-cased texts of recent pages for snippets.  Both are bounded by an estimate of their size
(bytes of numpy arrays, characters of text), never by a count of entries alone.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """``get``/``put`` under one lock; the least recently used entries leave first once the
    sizes (``size_of`` each value) add up past ``max_size``.  A value larger than the whole
    cache is not kept."""

    def __init__(self, max_size: int, size_of: Callable[[V], int]) -> None:
        self.max_size = max_size
        self.size = 0
        self.hits = 0
        self.misses = 0
        self._size_of = size_of
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.size = 0

    def get(self, key: K) -> tuple[bool, V | None]:
        """(found, value): a cached None is found."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return False, None
            self._items.move_to_end(key)
            self.hits += 1
            return True, item[0]

    def put(self, key: K, value: V) -> None:
        size = max(1, self._size_of(value))
        if size > self.max_size:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.size -= old[1]
            self._items[key] = (value, size)
            self.size += size
            while self.size > self.max_size:
                _, (_, gone) = self._items.popitem(last=False)
                self.size -= gone
