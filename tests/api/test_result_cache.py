"""api/result_cache.py: a bounded LRU; size 0 is off."""

from __future__ import annotations

from websift.api.result_cache import ResultCache


def test_least_recently_used_entry_goes_first() -> None:
    cache: ResultCache[str] = ResultCache(2)
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") == "A"  # a is now the most recent
    cache.put("c", "C")
    assert cache.get("b") is None and cache.get("a") == "A" and cache.get("c") == "C"
    assert len(cache) == 2 and cache.hits == 3 and cache.misses == 1


def test_size_zero_keeps_nothing() -> None:
    cache: ResultCache[str] = ResultCache(0)
    cache.put("a", "A")
    assert cache.get("a") is None and len(cache) == 0
