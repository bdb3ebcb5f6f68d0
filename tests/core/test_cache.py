"""core/cache.py: bounded by count or by size, least recently used first, thread-safe, counted."""

from __future__ import annotations

import threading

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from websift.core.cache import Cache, CacheStats


def test_a_count_bound_drops_the_least_recently_used() -> None:
    cache: Cache[str, str] = Cache(2)
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") == "A"  # "a" is now the most recent
    cache.put("c", "C")  # 3 > 2: "b" goes, not "a"
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C"
    assert len(cache) == 2 and cache.size == 2
    assert cache.stats() == CacheStats(entries=2, size=2, max_size=2, hits=3, misses=1,
                                       evictions=1)


def test_a_size_bound_adds_up_the_values_and_refuses_a_value_larger_than_itself() -> None:
    cache: Cache[str, bytes] = Cache(10, len)
    cache.put("a", b"xxxx")
    cache.put("b", b"xxxx")
    assert cache.lookup("a") == (True, b"xxxx")  # "a" is now the most recent
    cache.put("c", b"xxxx")  # 12 > 10: "b" goes
    assert cache.lookup("b") == (False, None)
    assert cache.lookup("a")[0] and cache.lookup("c")[0]
    assert cache.size == 8
    cache.put("huge", b"x" * 11)  # larger than the cache: not kept, nothing evicted
    assert cache.lookup("huge") == (False, None) and len(cache) == 2
    cache.put("a", b"x")  # replacing an entry counts its new size only
    assert cache.size == 5 and cache.evictions == 1


def test_numpy_arrays_bounded_by_their_bytes() -> None:
    cache: Cache[int, np.ndarray] = Cache(1000, lambda a: a.nbytes)
    for i in range(100):
        cache.put(i, np.zeros(30, dtype=bool))  # 30 bytes each: 33 fit
        assert cache.size <= 1000
    assert len(cache) == 33 and cache.size == 990
    assert cache.get(66) is None and cache.get(67) is not None and cache.get(99) is not None


def test_a_cached_none_is_found_and_get_or_make_makes_once() -> None:
    cache: Cache[int, int | None] = Cache(5)
    cache.put(1, None)
    assert cache.lookup(1) == (True, None)
    made: list[int] = []

    def make() -> int | None:
        made.append(2)
        return None

    assert cache.get_or_make(2, make) is None
    assert cache.get_or_make(2, make) is None  # a cached None is not made again
    assert made == [2]


def test_size_zero_is_off_keeps_nothing_and_counts_nothing() -> None:
    cache: Cache[str, str] = Cache(0)
    cache.put("a", "A")
    assert cache.get("a") is None and len(cache) == 0
    assert cache.get_or_make("a", lambda: "made") == "made" and len(cache) == 0
    assert (cache.hits, cache.misses) == (0, 0)


def test_clear_forgets_the_entries_not_the_counters() -> None:
    cache: Cache[str, str] = Cache(4)
    cache.put("a", "A")
    assert cache.get("a") == "A" and cache.get("z") is None
    cache.clear()
    assert len(cache) == 0 and cache.size == 0 and cache.get("a") is None
    assert (cache.hits, cache.misses) == (1, 2)


def test_threads_sharing_a_cache_keep_its_bound_and_its_books() -> None:
    cache: Cache[int, int] = Cache(50, lambda v: 1 + v % 3)
    barrier = threading.Barrier(4)
    lookups = 3000

    def work(base: int) -> None:
        barrier.wait()  # all four hammer the lock at once
        for i in range(lookups):
            cache.put(base + i % 97, i)
            cache.get(base + (i * 7) % 97)

    threads = [threading.Thread(target=work, args=(b * 1000,)) for b in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = cache.stats()
    assert s.size <= 50 and s.entries == len(cache)
    assert s.size == sum(1 + v % 3 for v in (cache._items[k][0] for k in cache._items))
    assert s.hits + s.misses == 4 * lookups  # no lookup lost to a race
    assert s.hits > 0 and s.evictions > 0


def test_recent_lists_the_most_recent_entries_up_to_a_size_without_counting() -> None:
    cache: Cache[str, bytes] = Cache(100, len)
    for key in "abcd":
        cache.put(key, key.encode() * 4)
    assert cache.get("a") == b"aaaa"  # "a" is now the most recent
    before = cache.stats()
    assert cache.recent(8) == (["a", "d"], [(b"aaaa", 4), (b"dddd", 4)])
    assert cache.recent(9)[0] == ["a", "d", "c"]  # until the sizes reach it
    assert cache.recent(0) == ([], []) and len(cache.recent(1000)[0]) == 4
    assert cache.stats() == before  # not lookups


@given(st.lists(st.integers(1, 50), max_size=40), st.integers(-5, 600),
       st.none() | st.integers(0, 45))
def test_recent_stops_where_a_walk_from_the_recent_end_stops(
        sizes: list[int], size: int, count: int | None) -> None:
    cache: Cache[int, str] = Cache(10_000, len)
    for i, n in enumerate(sizes):
        cache.put(i, "x" * n)
    keys: list[int] = []
    items: list[tuple[str, int]] = []
    total = 0
    for i in reversed(range(len(sizes))):  # the reference: one entry at a time
        if total >= size or len(keys) == count:
            break
        keys.append(i)
        items.append(("x" * sizes[i], sizes[i]))
        total += sizes[i]
    assert cache.recent(size, count) == (keys, items)


def test_in_tells_whether_a_key_is_kept_without_counting_or_reordering() -> None:
    cache: Cache[str, str] = Cache(2)
    cache.put("a", "A")
    cache.put("b", "B")
    assert "a" in cache and "z" not in cache
    assert cache.hits == 0 and cache.misses == 0
    cache.put("c", "C")  # "a" is still the least recent: it goes
    assert "a" not in cache and "b" in cache and "c" in cache
