"""The searcher's site-mask cache is bounded: any number of distinct ``site:`` values (which
users choose) leave its size, and the process's memory, within a stated bound."""

from __future__ import annotations

import gc

import psutil
import pytest

from testkit.corpus import build_data_dir
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import QUERY_CACHE_ENTRIES, SITE_MASK_CACHE_BYTES

pytestmark = pytest.mark.slow  # a 10,000-site index built for the module

HOSTS, PER_HOST = 20, 100  # 2,000 documents: a site mask is 2,000 bools
DISTINCT_SITES = 10_000
CACHE_BOUND = 256 << 10  # bytes given to the searcher's site-mask cache here
RSS_GROWTH_BOUND = 4 << 20  # the stated bound: what 10,000 distinct filters may add to RSS


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> DataDir:
    pages = {
        f"http://h{h}.example/{i}.html": (
            f"<html><head><title>Page {h} {i}</title></head>"
            f"<body><p>garden note {i} of host {h}</p></body></html>")
        for h in range(HOSTS) for i in range(PER_HOST)
    }
    d = build_data_dir(tmp_path_factory.mktemp("sites") / "data", pages)
    build_index(d, procs=1)
    return d


def rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


def test_site_masks_are_cached_and_answer_as_uncached(data: DataDir) -> None:
    s = Searcher.open(data)
    cache = s.caches()["site_masks"]
    assert cache.max_size == SITE_MASK_CACHE_BYTES  # the default bound is the setting
    cold = s.search(IndexQuery("garden", site="h3.example", k=5))
    warm = s.search(IndexQuery("garden note site:h3.example", k=5))  # the operator, same key
    assert cold.total == warm.total == PER_HOST
    assert [h.doc_id for h in cold.hits] == [h.doc_id for h in s.search(IndexQuery("garden", k=5,
                                                                       site="h3.example")).hits]
    assert cache.hits >= 2 and len(cache) == 1
    assert s.search(IndexQuery("garden", site="nowhere.example")).total == 0


def test_ten_thousand_distinct_site_values_stay_within_the_bound(data: DataDir) -> None:
    s = Searcher.open(data, site_cache_bytes=CACHE_BOUND)
    cache = s.caches()["site_masks"]
    # Warm up: this cache full, and the searcher's cache of analysed queries too (each query
    # here is new to it, and it is bounded by entries, not by these site values), the
    # allocator at its steady state.
    warm = QUERY_CACHE_ENTRIES + 1000
    for i in range(warm):
        s.search(IndexQuery(f"site:warm{i}.example"))
    before = rss()
    for i in range(DISTINCT_SITES):
        if i % 2:  # the API's site parameter and the query operator share the cache
            s.search(IndexQuery("garden", site=f"x{i}.example"))
        else:
            s.search(IndexQuery(f"site:x{i}.example"))
        assert cache.size <= CACHE_BOUND
    grown = rss() - before
    stats = cache.stats()
    assert stats.misses == warm + DISTINCT_SITES and stats.evictions > DISTINCT_SITES
    # Kept unbounded, these entries would take this many bytes: the bound below would catch it.
    unbounded = DISTINCT_SITES * stats.size // stats.entries
    assert unbounded > 4 * RSS_GROWTH_BOUND
    assert grown < RSS_GROWTH_BOUND, f"RSS grew by {grown} bytes"
    # still answers right after all that churn
    assert s.search(IndexQuery("garden", site="h7.example")).total == PER_HOST
