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

A cache may also judge what it lets in (``admit_by_frequency``), for values that cost in
proportion to their size and whose use is skewed (a word's decoded postings: a list of a common
word is tens of MB at a million pages, and the words of a query mix recur by how common they
are).  Plain LRU keeps the most recent entries, so a stream of lookups over more than the bound
(a query mix whose lists add up to several times the cache, replayed) finds almost nothing: each
entry is pushed out before it comes round again.  With admission, the cache counts how often
each key was asked for (hits and misses alike) and lets a new value in only if its key was
asked for more often than every entry that would leave to make room for it; otherwise the value
serves the caller and is not kept (``rejected`` counts these).  The counts are halved after
``FREQUENCY_SAMPLE`` lookups per entry held (at least ``FREQUENCY_SAMPLE_MIN`` keys' worth), and
keys whose count falls to 0 are forgotten, so a key's past popularity fades and the counts stay
bounded.  This is TinyLFU's admission (Einziger, Friedman and Manes, "TinyLFU: a highly efficient
cache admission policy", 2017) with exact counts in place of its sketch: the keys are few
(hundreds to thousands of lists), the values large.
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
# Admission by frequency: the counts are halved after this many lookups per entry held ...
FREQUENCY_SAMPLE = 16
FREQUENCY_SAMPLE_MIN = 64  # ... counting at least this many entries


@dataclass(frozen=True)
class CacheStats:
    entries: int
    size: int  # sum of the entries' sizes (their count when the cache is bounded by count)
    max_size: int
    hits: int
    misses: int
    evictions: int  # entries pushed out by newer ones (not those replaced or cleared)
    rejected: int = 0  # values not let in: asked for less often than those they would push out


class Cache(Generic[K, V]):
    """A bounded, thread-safe LRU map; see the module doc for the policy."""

    def __init__(self, max_size: int, size_of: Callable[[V], int] | None = None, *,
                 admit_by_frequency: bool = False,
                 frequency_key: Callable[[K], Hashable] | None = None) -> None:
        self.max_size = max_size
        self.size = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.rejected = 0
        self._size_of = size_of
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        # how often each key was asked for lately (admission by frequency; None: plain LRU),
        # counted under ``frequency_key(key)`` when given (what several keys share: a word's
        # lists in every segment)
        self._freq: dict[Hashable, int] | None = {} if admit_by_frequency else None
        self._freq_key = frequency_key
        self._asked = 0  # lookups since the counts were last halved

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
            elif (self._freq is not None and self.size + size > self.max_size
                  and not self._admits(key, self.size + size - self.max_size)):
                self.rejected += 1
                return
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

    def _count(self, key: K) -> None:
        """One more ask for ``key`` (the lock held); halve every count once enough were
        counted, forgetting the keys that reach 0."""
        freq = self._freq
        assert freq is not None
        fk = key if self._freq_key is None else self._freq_key(key)
        freq[fk] = freq.get(fk, 0) + 1
        self._asked += 1
        if self._asked >= FREQUENCY_SAMPLE * (len(self._items) + FREQUENCY_SAMPLE_MIN):
            self._asked = 0
            self._freq = {k: n >> 1 for k, n in freq.items() if n > 1}

    def _admits(self, key: K, room: int) -> bool:
        """Whether ``key`` was asked for more often than each of the least recent entries
        whose sizes add up to ``room`` (those a put of it would push out); the lock held."""
        freq = self._freq
        assert freq is not None
        fkey = self._freq_key or (lambda k: k)
        mine = freq.get(fkey(key), 0)
        freed = 0
        for other, (_, size) in self._items.items():
            if freq.get(fkey(other), 0) >= mine:
                return False
            freed += size
            if freed >= room:
                return True
        return True

    def _find(self, key: K) -> tuple[V, int] | None:
        if self.max_size <= 0:
            return None
        with self._lock:
            if self._freq is not None:
                self._count(key)
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

    def discard_if(self, gone: Callable[[K], bool]) -> int:
        """Forget the entries whose key ``gone`` says (not counted as evictions); how many.
        A walk of every key: for a cache of a few thousand entries (a reload dropping the
        lists of segments it no longer serves, which admission by frequency would otherwise
        keep at the least recent end, in the way of newcomers)."""
        with self._lock:
            dead = [k for k in self._items if gone(k)]
            for k in dead:
                self.size -= self._items.pop(k)[1]
            return len(dead)

    def clear(self) -> None:
        """Forget every entry (the counters stay: they describe the cache's whole life)."""
        with self._lock:
            self._items.clear()
            self.size = 0

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(len(self._items), self.size, self.max_size, self.hits,
                              self.misses, self.evictions, self.rejected)


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
