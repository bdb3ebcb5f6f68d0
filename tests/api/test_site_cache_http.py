"""4,000 distinct ``site:`` values over HTTP, against the real app in a real server: the
searcher's site-mask cache and the result cache stay within their bounds, and so does the
server process's memory.

Before core/cache.py the searcher kept one mask array per segment for every ``site:`` value it
was ever asked, so a client could grow the server's memory without limit (here: ~34 MB for these
4,000 requests over 8,000 documents, against the 8 MiB bound below).
"""

from __future__ import annotations

import gc

import httpx
import psutil
import pytest

from testkit.corpus import build_data_dir
from tests.api.live import WAIT, live_server
from websift.core.datadir import DataDir
from websift.indexer import searcher
from websift.indexer.build import build_index

pytestmark = pytest.mark.slow  # a live server asked 5,200 requests

# 8,000 documents: one site mask is 8,000 bools, so 4,000 distinct values kept unbounded would
# take over 4x the RSS bound, with fewer requests than smaller masks would need
HOSTS, PER_HOST = 40, 200
DISTINCT_SITES = 4_000
SITE_CACHE_BYTES = 256 << 10  # the searcher's site-mask bound in this test
RESULT_CACHE_SIZE = 1024  # the API's default (api/settings.py)
RSS_GROWTH_BOUND = 8 << 20  # the stated bound: what 4,000 distinct site values may add


@pytest.fixture(scope="module")
def many_docs(tmp_path_factory: pytest.TempPathFactory) -> DataDir:
    pages = {
        f"http://h{h}.example/{i}.html": (
            f"<html><head><title>Note {h} {i}</title></head>"
            f"<body><p>garden note {i} of host {h}</p></body></html>")
        for h in range(HOSTS) for i in range(PER_HOST)
    }
    d = build_data_dir(tmp_path_factory.mktemp("sites-http") / "data", pages)
    build_index(d, procs=1)
    return d


def rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


def test_distinct_site_values_over_http_stay_within_the_bounds(
        many_docs: DataDir, monkeypatch: pytest.MonkeyPatch) -> None:
    # the searcher the server opens reads its bound from the indexer's settings
    monkeypatch.setattr(searcher, "SITE_MASK_CACHE_BYTES", SITE_CACHE_BYTES)
    with live_server(many_docs, result_cache_size=RESULT_CACHE_SIZE) as base, httpx.Client(base_url=base, timeout=WAIT) as http:

        def ask(i: int, prefix: str) -> None:
            # half through the site parameter, half through the query operator
            params = ({"q": "garden", "site": f"{prefix}{i}.example"} if i % 2 else
                      {"q": f"site:{prefix}{i}.example"})
            r = http.get("/search", params=params)
            assert r.status_code == 200, r.text
            assert r.json()["total"] == 0

        found = http.get("/search", params={"q": "garden", "site": "h3.example"}).json()
        assert found["total"] == PER_HOST
        for i in range(1200):  # warm up: both caches full, the allocator at its steady state
            ask(i, "warm")
        before = rss()
        for i in range(DISTINCT_SITES):
            ask(i, "x")
        grown = rss() - before
        stats = http.get("/stats").json()

    masks = stats["search_caches"]["site_masks"]
    assert masks["max_size"] == SITE_CACHE_BYTES and masks["size"] <= SITE_CACHE_BYTES
    assert masks["misses"] >= 1200 + DISTINCT_SITES and masks["evictions"] > DISTINCT_SITES
    results = stats["result_cache"]
    assert results["entries"] <= RESULT_CACHE_SIZE and results["evictions"] > DISTINCT_SITES
    # Kept unbounded, the masks alone would take this much: the RSS bound would catch it.
    assert DISTINCT_SITES * masks["size"] // masks["entries"] > 3 * RSS_GROWTH_BOUND
    assert grown < RSS_GROWTH_BOUND, f"RSS grew by {grown} bytes over {DISTINCT_SITES} requests"
