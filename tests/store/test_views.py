"""StoreReader: the named reads of the indexer, ranking and the API, on a real SQLite store."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from websift.store.crawl_store import CrawlStore
from websift.store.schema import DISCOVERED, FETCHED, REDIRECT, Link
from websift.store.views import ID_CHUNK, PAGE_BATCH, StoreReader


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "crawl.sqlite3"


def _fetch(store: CrawlStore, uid: int, links: Sequence[Link] = (), **kw: Any) -> int:
    return store.record_fetched(uid, http_status=200, content_type="text/html",
                                warc=("f.warc.gz", uid * 10, 10), content_hash=f"h{uid}",
                                links=links, **kw)


@pytest.fixture
def many(path: Path) -> Iterator[list[int]]:
    """More URLs than one page batch and one ID chunk; every third one fetched."""
    n = max(PAGE_BATCH, ID_CHUNK) * 2 + 7
    with CrawlStore.open(path) as store, store.transaction():
        ids = [store.add_url(f"http://h{i % 3}.example/{i}", depth=i % 4)[0] for i in range(n)]
        for uid in ids[::3]:
            store.update_page(uid, status=FETCHED, importance=uid / 1000)
    yield ids


def test_reader_is_read_only_and_has_no_writes(path: Path, many: list[int]) -> None:
    with StoreReader.open(path) as reader:
        assert not hasattr(reader, "add_url") and not hasattr(reader, "transaction")
        # the connection itself refuses: the file is opened with mode=ro
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader._conn.execute("DELETE FROM urls")
        assert reader.url_count() == len(many)


def test_pages_stream_in_id_order_and_filter_by_status(path: Path, many: list[int]) -> None:
    with StoreReader.open(path) as reader:
        assert [p.id for p in reader.pages()] == sorted(many)
        fetched = [p.id for p in reader.pages(FETCHED)]
        assert fetched == sorted(many[::3])
        assert all(p.status == DISCOVERED for p in reader.pages(DISCOVERED))
        assert list(reader.pages("no_such_status")) == []


def test_pages_of_hosts_are_those_hosts_pages_of_a_status_in_id_order(
        path: Path, many: list[int]) -> None:
    with StoreReader.open(path) as reader:
        origins = reader.host_origins()
        wanted = [h for h, o in origins.items() if o != "http://h1.example"]
        assert len(wanted) == 2
        got = reader.pages_of_hosts([*wanted, *wanted, 10**9], FETCHED)
        assert [p.id for p in got] == [p.id for p in reader.pages(FETCHED)
                                       if p.host_id in wanted]
        assert got and all(p.status == FETCHED for p in got)
        discovered = reader.pages_of_hosts(wanted, DISCOVERED)
        assert discovered and [p.id for p in discovered] == [
            p.id for p in reader.pages(DISCOVERED) if p.host_id in wanted]
        assert reader.pages_of_hosts([], FETCHED) == []


def test_pages_by_ids_and_urls_of_span_chunks(path: Path, many: list[int]) -> None:
    wanted = [*reversed(many), many[0], 10**9]  # unordered, repeated, and one unknown ID
    with StoreReader.open(path) as reader:
        pages = reader.pages_by_ids(wanted)
        assert [p.id for p in pages] == sorted(many)
        assert reader.pages_by_ids([]) == []
        urls = reader.urls_of(iter(wanted))
        assert set(urls) == set(many)
        assert urls[many[5]] == "http://h2.example/5"
        assert dict(reader.urls()) == urls
        assert [uid for uid, _ in reader.urls()] == sorted(many)


def test_id_arrays_depth_and_importance(path: Path, many: list[int]) -> None:
    with StoreReader.open(path) as reader:
        np.testing.assert_array_equal(reader.url_ids(), np.asarray(sorted(many)))
        roots = reader.ids_at_depth(0)
        assert roots.tolist() == [uid for i, uid in enumerate(many) if i % 4 == 0]
        size = reader.max_url_id() + 1
        imp = reader.importance_by_id(size)
        assert imp.shape == (size,) and imp[0] == 0.0
        for uid in many:
            assert imp[uid] == pytest.approx(uid / 1000 if uid in many[::3] else 0.0)
        assert reader.status_counts() == {FETCHED: len(many[::3]),
                                          DISCOVERED: len(many) - len(many[::3])}


def test_what_changed_between_sequence_numbers(path: Path) -> None:
    with CrawlStore.open(path) as store:
        with store.transaction():
            a, b, c, d = (store.add_url(f"http://a.example/{x}")[0] for x in "abcd")
        s1 = _fetch(store, a, [Link(b, "bee", False)])
        s2 = _fetch(store, c, [Link(d, "dee", True)])
    with StoreReader.open(path) as reader:
        assert reader.max_seq() == s2
        # a full run: what was fetched up to s1, and every link target whatever its seq
        assert reader.fetched_or_linked_ids(s1) == [a, b, d]
        assert reader.fetched_or_linked_ids(s2) == [a, b, c, d]
        assert reader.changed_ids(s1, s2) == {c}
        assert reader.changed_ids(0, s2) == {a, c}
        assert reader.changed_link_targets(s1, s2) == {d}
        assert reader.changed_link_targets(s2, s2) == set()


def test_anchor_links_apply_the_store_side_rules_in_source_order(path: Path) -> None:
    with CrawlStore.open(path) as store:
        with store.transaction():
            t, r, s1, s2, dup = (store.add_url(f"http://a.example/{x}")[0]
                                 for x in ("t", "r", "s1", "s2", "dup"))
            store.update_page(r, status=REDIRECT, redirect_to=t)
            selfish = store.add_url("http://a.example/self")[0]
            store.update_page(selfish, status=REDIRECT, redirect_to=selfish)
        _fetch(store, s2, [Link(t, "second", False), Link(r, "via redirect", False)])
        _fetch(store, s1, [Link(t, "one", False), Link(t, "", False), Link(t, "nf", True),
                           Link(t, "two", False)])
        _fetch(store, t, [Link(t, "myself", False)])
        _fetch(store, dup, [Link(t, "copy", False)], duplicate_of=s1)
    with StoreReader.open(path) as reader:
        assert list(reader.redirects()) == [(r, t)]  # a redirect to itself is no alias
        got = list(reader.anchor_links([t, r]))
        # by source ID, then in the order the source held them; no empty, nofollow, self or
        # duplicate-source anchors
        assert got == [(s1, t, "one"), (s1, t, "two"), (s2, t, "second"), (s2, r, "via redirect")]
        assert list(reader.anchor_links([])) == []
        # links_to: the same rules but the source's, in the same order, duplicates' links too
        assert reader.links_to([t, r]) == [(s1, t, "one"), (s1, t, "two"), (s2, t, "second"),
                                           (s2, r, "via redirect"), (dup, t, "copy")]
        assert reader.links_to([]) == []
        host, is_dup = reader.url_hosts()
        assert len(host) == max(t, r, s1, s2, dup, selfish) + 1
        assert (host[[t, s1, dup]] >= 0).all() and host[0] == -1  # IDs start at 1
        assert host[s1] == host[dup]  # one host: a.example
        assert is_dup[dup] and not is_dup[[t, r, s1, s2]].any()
        assert reader.url_hosts_of([dup, s1, 10**9]) == {dup: (int(host[dup]), True),
                                                         s1: (int(host[s1]), False)}


def test_links_and_link_arrays(path: Path) -> None:
    with CrawlStore.open(path) as store:
        with store.transaction():
            a, b, c = (store.add_url(f"http://a.example/{x}")[0] for x in "abc")
        _fetch(store, a, [Link(b, "x", False), Link(c, "y", True), Link(b, "z", False)])
    with StoreReader.open(path) as reader:
        assert reader.out_links(a) == [(b, "x", False), (c, "y", True), (b, "z", False)]
        assert reader.in_links(c) == [(a, "y", True)]
        assert reader.out_links(a, 2) == [(b, "x", False), (c, "y", True)]
        assert reader.in_links(b, 1) == [(a, "x", False)]
        assert (reader.out_link_count(a), reader.in_link_count(b), reader.in_link_count(a)) == (
            3, 2, 0)
        assert reader.link_count() == 3
        src, dst = reader.link_arrays()
        assert src.dtype == np.int32 and list(zip(src.tolist(), dst.tolist(), strict=True)) == [
            (a, b), (a, b)]
        assert len(reader.link_arrays(include_nofollow=True)[0]) == 3


def test_refresh_schedule_orders_by_priority_then_age_then_id(path: Path) -> None:
    with CrawlStore.open(path) as store, store.transaction():
        ids = [store.add_url(f"http://a.example/{i}")[0] for i in range(5)]
        # priority = cash * (1 + w * change_count / max(fetch_count, 1)), w = 2 below
        rows = [(0.1, 2, 1, 50.0), (0.2, 1, 0, 40.0), (0.05, 1, 1, 30.0), (0.2, 1, 0, 10.0),
                (0.9, 1, 0, 0.0)]
        for uid, (cash, fetches, changes, when) in zip(ids, rows, strict=True):
            store.update_page(uid, status=FETCHED, cash=cash, fetch_count=fetches,
                              change_count=changes, fetched_at=when)
        store.update_page(ids[4], status=DISCOVERED)  # not fetched: never in the schedule
    with StoreReader.open(path) as reader:
        top = reader.refresh_schedule(3, change_weight=2.0)
        assert [r.id for r in top] == [ids[3], ids[1], ids[0]]  # three at 0.2: oldest first
        assert top[2].priority == pytest.approx(0.1 * (1 + 2 * 1 / 2))
        assert (top[0].fetch_count, top[0].change_count, top[0].fetched_at) == (1, 0, 10.0)
        assert len(reader.refresh_schedule(10, 2.0)) == 4


def test_check_integrity_and_last_crawl(path: Path) -> None:
    with CrawlStore.open(path) as store:
        assert store.last_crawl() is None
        cid = store.start_crawl("crawl")
        store.finish_crawl(cid, '{"pages": 3}')
    with StoreReader.open(path) as reader:
        assert reader.check_integrity() is None
        last = reader.last_crawl()
        assert last is not None and last[0] == "crawl" and last[3] == '{"pages": 3}'


def test_links_without_self_links_and_degrees(path: Path) -> None:
    with CrawlStore.open(path) as store:
        with store.transaction():
            a, b, c = (store.add_url(f"http://a.example/{x}")[0] for x in "abc")
        _fetch(store, a, [Link(a, "top", False), Link(b, "x", False), Link(b, "again", False),
                          Link(c, "y", True)])
        _fetch(store, b, [Link(a, "back", False), Link(b, "me", False)])
        _fetch(store, c, [Link(a, "home", True)])
    with StoreReader.open(path) as reader:
        assert reader.out_links(a, 2, skip_self=True) == [(b, "x", False), (b, "again", False)]
        assert reader.in_links(a, skip_self=True) == [(b, "back", False), (c, "home", True)]
        assert reader.in_links(a, 1) == [(a, "top", False)]
        # distinct other pages, nofollow left out; then the page's links to itself
        assert reader.link_degrees(a) == (1, 1, 1)
        assert reader.link_degrees(b) == (1, 1, 1)
        assert reader.link_degrees(c) == (0, 0, 0)
