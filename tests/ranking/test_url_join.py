"""ranking/url_join.py: global IDs for the URLs of several stores, matched by fingerprint in
columns, numbered as a dict keyed by URL numbers them; 64-bit collisions kept apart.  And the
host edges the by-URL Dask job gathers from link chunks (ranking/rank_by_url.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.ranking.graph import build_graph
from websift.ranking.host_graph import host_links_of
from websift.ranking.rank_by_url import CrossHostPages
from websift.ranking.url_join import StoreKeys, fingerprints, join_keys, store_keys


def dict_join(stores: list[list[tuple[int, str]]]) -> tuple[list[np.ndarray], int]:
    """The join as a dict keyed by URL does it (the peer)."""
    ids: dict[str, int] = {}
    maps = []
    for rows in stores:
        m = np.full(max((r[0] for r in rows), default=0) + 1, -1, dtype=np.int64)
        for uid, url in rows:
            m[uid] = ids.setdefault(url, len(ids))
        maps.append(m)
    return maps, len(ids)


urls = st.sampled_from([f"http://h{i % 3}.example/{i}" for i in range(40)] + ["http://é.example/ü"])
store = st.lists(urls, max_size=30, unique=True).map(
    lambda us: [(3 * k + 1, u) for k, u in enumerate(us)])


@settings(max_examples=60, deadline=None)
@given(st.lists(store, min_size=1, max_size=4))
def test_join_numbers_urls_as_a_dict_does(stores: list[list[tuple[int, str]]]) -> None:
    keys = [store_keys(rows, max((r[0] for r in rows), default=0) + 1) for rows in stores]
    join = join_keys(keys)
    want, n = dict_join(stores)
    assert join.n == n
    for got, expected in zip(join.maps, want, strict=True):
        np.testing.assert_array_equal(got, expected)
    assert join.collisions_64 == 0


def test_urls_equal_in_64_bits_only_stay_apart() -> None:
    keys = np.array([[7, 1], [7, 2], [5, 9]], dtype=np.uint64)
    a = StoreKeys(np.array([1, 2], dtype=np.int64), keys[:2], 3)
    b = StoreKeys(np.array([4, 6], dtype=np.int64), keys[[1, 2]], 7)
    join = join_keys([a, b])
    assert join.n == 3 and join.collisions_64 == 1
    assert join.maps[0].tolist() == [-1, 0, 1]
    assert join.maps[1].tolist() == [-1, -1, -1, -1, 1, -1, 2]


def test_fingerprints_are_of_the_whole_url() -> None:
    fp = fingerprints(["http://a.example/x", "http://a.example/x", "http://a.example/x?"])
    assert fp.shape == (3, 2) and fp.dtype == np.uint64
    assert (fp[0] == fp[1]).all() and not (fp[0] == fp[2]).all()


def test_cross_host_pages_from_link_chunks_equal_the_page_graphs() -> None:
    """The Dask engine's host edges (gathered chunk by chunk from raw links: duplicates,
    self-links, links repeated in another chunk) equal those of the deduplicated page graph."""
    rng = np.random.default_rng(3)
    n = 300
    host_of = (np.arange(n) // 25).astype(np.int32)
    host_of[rng.random(n) < 0.05] = -1  # not a URL of any store
    src = rng.integers(0, n, 4000)
    dst = np.where(rng.random(4000) < 0.6, (src // 25) * 25 + rng.integers(0, 25, 4000),
                   rng.integers(0, n, 4000)) % n
    src = np.concatenate([src, src[:500]])  # the same links again, in a later chunk
    dst = np.concatenate([dst, dst[:500]])
    cross = CrossHostPages(host_of)
    for a in range(0, src.size, 777):
        cross.add(src[a : a + 777], dst[a : a + 777])
    got = cross.edges()
    want = host_links_of(build_graph(src, dst, n), host_of)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert got[0].size > 10 and got[2].max() > 1
