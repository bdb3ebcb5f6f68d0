"""The one bounded cache every websift memo uses: least recently used first, thread-safe, counted.

Question: may this process keep an answer it worked out, and how much of them?  Always a bounded
amount.  A cache is bounded either by a count of entries (``size_of`` not given: each entry
counts 1) or by an estimate of what its values hold (``size_of``: bytes of numpy arrays,
characters of text).  When a new entry pushes the total past ``max_size``, the least recently
used entries leave until it fits again; a value larger than the whole bound is not kept at all
(so one huge answer never flushes everything else).  ``max_size`` 0 (or less) turns the cache
off: nothing is kept and nothing is counted.

Whatever the keys are (a ``site:`` value, a host, a query), memory is bounded by ``max_size``:
that is why no memo in websift is a plain dict that callers can grow.

One lock per cache guards every call (a lookup moves the entry to the recent end, so reads
write too); values are computed *outside* the lock by the caller, so two threads may work out
the same value at once and the second ``put`` replaces the first, which is harmless for a memo
of a pure function.  ``hits``, ``misses`` and ``evictions`` count what happened; ``stats()``
takes a consistent snapshot of them.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_SECOND = operator.itemgetter(1)


@dataclass(frozen=True)
class CacheStats:
    entries: int
    size: int  # sum of the entries' sizes (their count when the cache is bounded by count)
    max_size: int
    hits: int
    misses: int
    evictions: int  # entries pushed out by newer ones (not those replaced or cleared)


class Cache(Generic[K, V]):
    """A bounded, thread-safe LRU map; see the module doc for the policy."""

    def __init__(self, max_size: int, size_of: Callable[[V], int] | None = None) -> None:
        self.max_size = max_size
        self.size = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._size_of = size_of
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is cached (not counted as a lookup; its place in the LRU order
        unchanged)."""
        with self._lock:
            return key in self._items

    def lookup(self, key: K) -> tuple[bool, V | None]:
        """(found, value); a cached None is found."""
        item = self._find(key)
        return (False, None) if item is None else (True, item[0])

    def get(self, key: K) -> V | None:
        """The cached value, or None (use :meth:`lookup` when None may be a value)."""
        return self.lookup(key)[1]

    def put(self, key: K, value: V, size: int | None = None) -> None:
        """Keep ``value`` as the most recent entry, evicting the least recent ones past the
        bound; a value larger than the whole bound is not kept (nothing is evicted for it).
        ``size``: the value's, when the caller knows it (else ``size_of`` tells)."""
        if self.max_size <= 0:
            return
        if size is None:
            size = 1 if self._size_of is None else max(1, int(self._size_of(value)))
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
                self.evictions += 1

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The cached value of ``key``, else ``make()`` (called without the lock), kept."""
        item = self._find(key)
        if item is not None:
            return item[0]
        value = make()
        self.put(key, value)
        return value

    def _find(self, key: K) -> tuple[V, int] | None:
        if self.max_size <= 0:
            return None
        with self._lock:
            item = self._items.get(key)
            if item is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item

    def entries(self) -> list[tuple[K, V, int]]:
        """Every (key, value, size), least recently used first (a copy: the cache may move
        on); not counted as lookups."""
        with self._lock:
            return [(k, v, size) for k, (v, size) in self._items.items()]

    def recent(self, size: int, count: int | None = None
               ) -> tuple[list[K], list[tuple[V, int]]]:
        """The most recently used entries, most recent first, until their sizes add up to
        ``size`` or there are ``count`` of them: their keys, and their (value, size) pairs as
        the cache holds them (a copy of that many only, as :meth:`entries`); not counted as
        lookups.  Two lists of objects the cache already holds, copied in C: no object is
        made per entry, so a reload walking thousands of them makes no work for the garbage
        collector (a tuple per entry, kept while the reload ran, made it collect the whole
        heap, tens of ms with the GIL held, every few reloads)."""
        if size <= 0 or count == 0:
            return [], []
        with self._lock:
            keys = list(itertools.islice(reversed(self._items),
                                         len(self._items) if count is None else count))
            items = list(map(self._items.__getitem__, keys))
        # each entry while the sizes before it add up to less than ``size``
        totals = list(itertools.accumulate(map(_SECOND, items)))
        keep = min(len(items), bisect.bisect_left(totals, size) + 1)
        return keys[:keep], items[:keep]

    def clear(self) -> None:
        """Forget every entry (the counters stay: they describe the cache's whole life)."""
        with self._lock:
            self._items.clear()
            self.size = 0

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(len(self._items), self.size, self.max_size, self.hits,
                              self.misses, self.evictions)


class ClearingMemo(dict[K, V]):
    """A memo of the pure function ``fn`` for lookups in C's speed (``map(memo.__getitem__,
    keys)``, ``filter``): a plain dict whose miss calls ``fn`` and keeps its answer, emptied
    whole when it holds ``max_size`` entries.  For the parse's per-token and per-tag
    questions, where :class:`Cache`'s lock and recency cost more than the answer; bounded all
    the same, and the same answers in every process."""

    __slots__ = ("fn", "max_size")

    def __init__(self, fn: Callable[[K], V], max_size: int) -> None:
        super().__init__()
        self.fn = fn
        self.max_size = max_size

    def __missing__(self, key: K) -> V:
        if len(self) >= self.max_size:
            self.clear()
        value = self[key] = self.fn(key)
        return value
